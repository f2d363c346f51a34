"""The inbox (issue 39): what a person is told of, written here by the store functions that make the change, in
its transaction; read, counted and marked read by the person alone.

A notification is never written for the acting person's own change (okr.store.events.acting_person), to an
inactive person, or to one who may not see the objective concerned (okr.store.visibility); reading filters by
sight again, so one about an objective that later became hidden is not shown while it is. Only ids are kept:
names and a comment's text are read with the notification. Each person takes some kinds by email too
(notification_email: mentions on unless switched off, the rest off unless switched on): such a notification is
written with mail 'due', and okr.outbound.notification_mail sends it after the commit.
"""
from .. import clock
from ..clock import new_id
from ..rules import mentions
from . import events, visibility

KINDS = ("mentioned", "commented", "changed", "source_failed", "checkin_due")
CHECKIN_DUE = "checkin_due"
# Whether a kind comes by email when the person has not chosen.
EMAIL_BY_DEFAULT = {"mentioned": True, "commented": False, "changed": False, "source_failed": False,
                    "checkin_due": False}
# Kinds nobody's action causes: written whoever acts.
SYSTEM_KINDS = frozenset({"source_failed", "checkin_due"})
# Actors whose changes notify nobody (of the other kinds): a command or open access (the system), a metric
# source reading its value.
SILENT_ACTORS = frozenset({"system", "source"})
_ACTING = object()

# The objective a notification concerns: its own, or its key result's.
CONCERNS = "coalesce(n.objective_id, k.objective_id)"
SHOWN = f"""
SELECT n.*, a.name AS actor_name, {CONCERNS} AS concerns_id, o.name AS objective_name, k.name AS key_result_name,
       c.body AS comment_body
FROM notifications n
LEFT JOIN users a ON a.id = n.actor_id
LEFT JOIN key_results k ON k.id = n.key_result_id
LEFT JOIN objectives o ON o.id = {CONCERNS}
LEFT JOIN comments c ON c.id = n.comment_id"""


def people(db):
    """Everyone a mention may name: (id, name, email) rows for okr.rules.mentions.find."""
    return [tuple(row) for row in db.execute("SELECT id, name, email FROM users ORDER BY seq")]


def mentioned(db, text, before=None):
    """okr.rules.mentions.find's Found for text; with before (the text it replaces), its person_ids are only the
    people text mentions and before did not."""
    everyone = people(db)
    found = mentions.find(text or "", everyone)
    if before:
        earlier = set(mentions.find(before, everyone).person_ids)
        found = found._replace(person_ids=[person for person in found.person_ids if person not in earlier])
    return found


def email_on(db, person_id, kind):
    row = db.execute("SELECT is_on FROM notification_email WHERE person_id = ? AND kind = ?",
                     (person_id, kind)).fetchone()
    return EMAIL_BY_DEFAULT[kind] if row is None else bool(row[0])


def email_choices(db, person_id):
    """{kind: whether it comes by email} for a person."""
    chosen = dict(db.execute("SELECT kind, is_on FROM notification_email WHERE person_id = ?", (person_id,)))
    return {kind: bool(chosen.get(kind, EMAIL_BY_DEFAULT[kind])) for kind in KINDS}


def set_email_choices(db, person_id, choices):
    """Keeps a person's email choices ({kind: bool}, kinds of KINDS)."""
    for kind, on in choices.items():
        db.execute("""INSERT INTO notification_email (person_id, kind, is_on) VALUES (?, ?, ?)
                      ON CONFLICT (person_id, kind) DO UPDATE SET is_on = excluded.is_on""",
                   (person_id, kind, int(bool(on))))


def concerned_objective(db, objective_id, key_result_id):
    if objective_id is not None or key_result_id is None:
        return objective_id
    row = db.execute("SELECT objective_id FROM key_results WHERE id = ?", (key_result_id,)).fetchone()
    return None if row is None else row[0]


def notify(db, kind, person_ids, objective_id=None, key_result_id=None, comment_id=None, actor_id=_ACTING):
    """Writes a notification of kind to each of person_ids (None and repeats are skipped) about an objective, or a
    key result, and maybe a comment, in the caller's transaction; never to the acting person (actor_id, by
    default okr.store.events.acting_person()), an inactive person or one who may not see the objective; nobody
    when a command, open access or a metric source acts (SILENT_ACTORS), but for SYSTEM_KINDS. Returns the ids of
    the people notified."""
    if kind not in SYSTEM_KINDS and events.ACTOR.get()["type"] in SILENT_ACTORS:
        return []
    if actor_id is _ACTING:
        actor_id = None if kind in SYSTEM_KINDS else events.acting_person()
    concerns = concerned_objective(db, objective_id, key_result_id)
    now = clock.utc_now()
    notified = []
    for person_id in dict.fromkeys(person_ids):
        if person_id is None or person_id == actor_id or person_id in notified:
            continue
        person = db.execute("SELECT is_active, role FROM users WHERE id = ?", (person_id,)).fetchone()
        if person is None or not person["is_active"]:
            continue
        if concerns is not None and not visibility.sees(db, visibility.limit_of(person_id, person["role"]),
                                                         concerns):
            continue
        db.execute(
            """INSERT INTO notifications (id, person_id, kind, actor_id, objective_id, key_result_id, comment_id,
                                          created_at, mail)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (new_id(), person_id, kind, actor_id, objective_id, key_result_id, comment_id, now,
             "due" if email_on(db, person_id, kind) else None))
        notified.append(person_id)
    return notified


def viewer_of(db, person_id):
    """The viewer a person is (okr.store.visibility.limit_of: None for an admin, who sees everything)."""
    row = db.execute("SELECT role FROM users WHERE id = ?", (person_id,)).fetchone()
    return visibility.limit_of(person_id, row[0] if row else None)


def sight(db, person_id):
    """(sql, params): true for a notification (n, k joined) whose objective person_id sees, or that has none."""
    sql, params = visibility.condition(CONCERNS, viewer_of(db, person_id))
    return f"({CONCERNS} IS NULL OR {sql})", tuple(params)


def page(db, person_id, before, limit, unread_only=False):
    """Up to limit of a person's notifications, newest first, older than the one whose seq is before (0: from the
    newest), that they may see now; unread_only leaves out those read."""
    seen, params = sight(db, person_id)
    unread = " AND n.read_at IS NULL" if unread_only else ""
    older = " AND n.seq < ?" if before else ""
    return db.execute(
        f"""{SHOWN} WHERE n.person_id = ?{unread}{older} AND {seen} ORDER BY n.seq DESC LIMIT ?""",
        (person_id, *((before,) if before else ()), *params, limit)).fetchall()


def count_unread(db, person_id):
    """How many of a person's notifications are unread (and about what they may see now)."""
    seen, params = sight(db, person_id)
    return db.execute(
        f"""SELECT count(*) FROM notifications n LEFT JOIN key_results k ON k.id = n.key_result_id
            WHERE n.person_id = ? AND n.read_at IS NULL AND {seen}""", (person_id, *params)).fetchone()[0]


def mark_read(db, person_id, ids=None):
    """Marks a person's unread notifications read: those of ids, or all (ids None); others' ids and unknown ones
    are passed over. Returns how many were marked."""
    now = clock.utc_now()
    # Only those they may see now: one about an objective hidden since is neither shown nor counted.
    seen, params = sight(db, person_id)
    visible = f"""seq IN (SELECT n.seq FROM notifications n LEFT JOIN key_results k ON k.id = n.key_result_id
                          WHERE n.person_id = ? AND n.read_at IS NULL AND {seen})"""
    if ids is None:
        return db.execute(f"UPDATE notifications SET read_at = ? WHERE {visible}", (now, person_id, *params)).rowcount
    marked = 0
    for notification_id in dict.fromkeys(ids):
        marked += db.execute(f"UPDATE notifications SET read_at = ? WHERE id = ? AND {visible}",
                             (now, notification_id, person_id, *params)).rowcount
    return marked


def due_mail(db, limit):
    """Up to limit notifications waiting for their email, oldest first, each with its person's name and email
    (notification rows as page answers, with person_name, person_email and person_active)."""
    return db.execute(
        f"""SELECT * FROM ({SHOWN} WHERE n.mail = 'due' ORDER BY n.seq LIMIT ?) AS due
            JOIN (SELECT id AS person_key, name AS person_name, email AS person_email, is_active AS person_active
                  FROM users) AS p ON p.person_key = due.person_id ORDER BY due.seq""", (limit,)).fetchall()


def claim_mail(db, seq):
    """True when this process now holds the notification's email: it was due, and is now marked sent, in a short
    write transaction of its own that other processes see before the email goes."""
    db.execute("BEGIN IMMEDIATE")
    try:
        claimed = db.execute("UPDATE notifications SET mail = 'sent' WHERE seq = ? AND mail = 'due'",
                             (seq,)).rowcount
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
    return claimed == 1
