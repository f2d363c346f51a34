"""The weekly messages' claims (weekly_mail): one row per (kind, recipient, week), taken before a reminder, a
digest or a chat message is sent, so that one process alone sends it however many run; given up when the
sending fails, so that a later round sends it.

A claim is its own short write transaction: the other processes must see it before the message goes out.

Also the weekly mail's reads (okr.outbound.weekly_emails builds the messages): who is reminded of which key results, a team's
check-ins of the week, and who gets which team's digest.
"""
import json

from .. import clock
from . import visibility
from .reports import KEY_RESULTS_WITH_HISTORY


def claim(db, kind, recipient, week):
    """True when this process now holds the claim; False when another took it first."""
    db.execute("BEGIN IMMEDIATE")
    try:
        inserted = db.execute("INSERT OR IGNORE INTO weekly_mail (kind, recipient, week, sent_at) VALUES (?, ?, ?, ?)",
                              (kind, recipient, week, clock.utc_now())).rowcount
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
    return inserted == 1


def note(db, kind, recipient, week):
    """Records, inside the caller's write transaction, that a message of kind went to recipient in the week."""
    db.execute("INSERT OR IGNORE INTO weekly_mail (kind, recipient, week, sent_at) VALUES (?, ?, ?, ?)",
               (kind, recipient, week, clock.utc_now()))


def release(db, kind, recipient, week):
    """Gives up a claim whose message was not sent, inside the caller's write transaction."""
    db.execute("DELETE FROM weekly_mail WHERE kind = ? AND recipient = ? AND week = ?", (kind, recipient, week))


def claimed(db, week):
    """{(kind, recipient)} of the weekly messages claimed (sent, or being sent) in the week."""
    return {(row["kind"], row["recipient"]) for row in
            db.execute("SELECT kind, recipient FROM weekly_mail WHERE week = ?", (week,))}


def recipients(db, kind, week):
    """{recipient} of the messages of one kind claimed in the week."""
    return {row[0] for row in db.execute("SELECT recipient FROM weekly_mail WHERE kind = ? AND week = ?",
                                         (kind, week))}


# --- what the messages say ----------------------------------------------------------------------------

# Every key result of the given cycles with its history (the reports' query), its objective's name and
# assignee: the reminders' one query.
CYCLE_KEY_RESULTS = f"""
SELECT h.*, o.name AS objective_name, o.assignee_id
FROM ({KEY_RESULTS_WITH_HISTORY.format(where="k.cycle_id IN (SELECT value FROM json_each(:cycles))")}) h
JOIN objectives o ON o.id = h.objective_id
"""


def cycle_key_results(db, cycle_ids):
    """Every key result of these cycles with its history (as a report's), its objective's name
    (objective_name) and assignee (assignee_id), in creation order: a cursor, read as it goes."""
    return db.execute(CYCLE_KEY_RESULTS, {"cycles": json.dumps(list(cycle_ids))})


def reminded(db, user_ids):
    """The rows of these users who are active and take weekly emails, in the order they were added."""
    return db.execute("SELECT * FROM users WHERE id IN (SELECT value FROM json_each(?)) AND is_active"
                      " AND weekly_email = 1 ORDER BY seq", (json.dumps(list(user_ids)),)).fetchall()


# A team's check-ins of the week on its objectives' key results in the given cycles, a key result's first
# (the value it was made with) left out, oldest first.
WEEK_CHECKINS = """
SELECT c.value, c.confidence, c.comment, c.created_at, k.id AS key_result_id, k.name AS key_result_name,
       o.name AS objective_name, u.name AS author_name, k.unit, k.unit_position
FROM objectives o
JOIN key_results k ON k.objective_id = o.id
JOIN checkins c ON c.key_result_seq = k.seq
LEFT JOIN users u ON u.id = c.author_id
WHERE o.team_id = :team AND o.cycle_id IN (SELECT value FROM json_each(:cycles)) AND {seen}
    AND c.created_at > :since AND c.created_at <= :now
    AND c.seq > (SELECT min(first.seq) FROM checkins first WHERE first.key_result_seq = k.seq)
ORDER BY c.created_at, c.seq
LIMIT :limit
"""


def team_checkins(db, team_id, cycle_ids, since, now, limit):
    """Up to limit of the team's check-ins made after since and up to now (UTC timestamps as stored) on its
    objectives' key results in these cycles, a key result's first left out, oldest first: value, confidence,
    comment, created_at, key_result_id, key_result_name, objective_name, author_name, and the key result's unit
    and unit_position (a cursor); those the viewer may see."""
    seen, params = visibility.seeing("o")
    return db.execute(WEEK_CHECKINS.format(seen=seen.replace("?", ":viewer")),
                      {"team": team_id, "cycles": json.dumps(list(cycle_ids)), "since": since, "now": now,
                       "limit": limit, "viewer": params[0] if params else None})


def digest_readers(db):
    """Every membership of an active user who takes weekly emails: team_id, team_name and the user's row, by
    user (in the order they were added), then by team name."""
    return db.execute(
        """SELECT t.id AS team_id, t.name AS team_name, u.* FROM team_members m
            JOIN teams t ON t.id = m.team_id JOIN users u ON u.id = m.user_id
            WHERE u.is_active AND u.weekly_email = 1 ORDER BY u.seq, t.name, t.seq""").fetchall()
