"""Outbound webhooks: the hooks (added, listed, removed, enabled, disabled), their outbox and delivery log.

okr.store.events puts each event in the outbox of every hook whose patterns match, in the event's own
transaction; the deliverer (okr.outbound.webhook_queue) reads a hook's outbox in order and acknowledges what was
delivered here, a batch per short transaction. A hook's secret is shown when it is added and never again
by the commands or the pages; `okr export` leaves webhooks out.

These are settings, not resources of the API: their changes record no event (an event about a hook would
go to the hooks themselves).
"""
import re

from .. import clock
from ..clock import new_id
from ..errors import Invalid, NotFound
from ..rules.webhook_receivers import new_secret, url_problem

FORMATS = ("events", "slack")
DEFAULT_PATTERNS = ("*",)
# An event type (objective.updated) or a GLOB over them: objective.*, *, checkin.created.
PATTERN = re.compile(r"[a-z0-9_.*?\[\]-]{1,100}")
MAX_PATTERNS = 50
KEPT_ATTEMPTS = 100  # the delivery log keeps each hook's last attempts


def patterns_from(text):
    """The patterns of --events "objective.*,checkin.created" (or a list of them), checked."""
    items = text.split(",") if isinstance(text, str) else list(text)
    patterns = []
    for item in (item.strip() for item in items):
        if not item:
            continue
        if not PATTERN.fullmatch(item):
            raise Invalid({"events": f"{item!r} is not an event pattern: use event types such as objective.updated, "
                                     "or GLOB patterns such as objective.* or *"})
        if item not in patterns:
            patterns.append(item)
    if len(patterns) > MAX_PATTERNS:
        raise Invalid({"events": f"at most {MAX_PATTERNS} patterns"})
    return patterns


def add(db, url, patterns=None, format="events", allow_private=False):
    """Adds a hook; its row as a dict with its patterns (a list). The caller checks the URL's addresses
    (okr.outbound.webhook_request.check_destination) before: DNS is no business of a write transaction."""
    problem = url_problem(url)
    if problem:
        raise Invalid({"url": problem})
    if format not in FORMATS:
        raise Invalid({"format": "choose events or slack"})
    patterns = patterns_from(patterns or ())
    if format == "slack" and patterns:
        raise Invalid({"events": "a slack hook receives the weekly digest, not events: leave --events out"})
    if format == "events" and not patterns:
        patterns = list(DEFAULT_PATTERNS)
    row = db.execute(
        """INSERT INTO webhooks (id, url, secret, format, allow_private, created_at) VALUES (?, ?, ?, ?, ?, ?)
           RETURNING *""", (new_id(), url, new_secret(), format, int(bool(allow_private)), clock.utc_now())).fetchone()
    db.executemany("INSERT INTO webhook_patterns (hook_seq, pattern) VALUES (?, ?)",
                   [(row["seq"], pattern) for pattern in patterns])
    return {**dict(row), "patterns": patterns}


def get(db, hook_id):
    """The hook with this id; NotFound("webhook") for none."""
    row = db.execute("SELECT * FROM webhooks WHERE id = ?", (hook_id,)).fetchone()
    if row is None:
        raise NotFound("webhook")
    return row


def patterns_of(db, hook_seq):
    return [row[0] for row in db.execute("SELECT pattern FROM webhook_patterns WHERE hook_seq = ? ORDER BY rowid",
                                         (hook_seq,))]


def all_hooks(db):
    """Every hook in the order added, each a dict with its patterns and how many events wait (pending)."""
    hooks = []
    for row in db.execute(
            """SELECT w.*, (SELECT count(*) FROM webhook_outbox o WHERE o.hook_seq = w.seq) AS pending
               FROM webhooks w ORDER BY w.seq""").fetchall():
        hooks.append({**dict(row), "patterns": patterns_of(db, row["seq"])})
    return hooks


def pending(db, hook_seq):
    """How many events wait in the hook's outbox."""
    return db.execute("SELECT count(*) FROM webhook_outbox WHERE hook_seq = ?", (hook_seq,)).fetchone()[0]


def pending_by_id(db, hook_id):
    """How many events wait in the outbox of the hook with this id (0 for none)."""
    return db.execute("SELECT count(*) FROM webhook_outbox o JOIN webhooks w ON w.seq = o.hook_seq "
                      "WHERE w.id = ?", (hook_id,)).fetchone()[0]


def active_chat_hooks(db):
    """The active hooks of format slack, which the weekly digest is posted to, in the order added."""
    return db.execute("SELECT * FROM webhooks WHERE format = 'slack' AND is_active = 1 ORDER BY seq").fetchall()


def public(hook):
    """A hook as the commands print it (--json) and the pages show it: never its secret."""
    return {"id": hook["id"], "url": hook["url"], "format": hook["format"], "events": hook.get("patterns", []),
            "allow_private": bool(hook["allow_private"]), "is_active": bool(hook["is_active"]),
            "disabled_reason": hook["disabled_reason"], "created_at": hook["created_at"],
            "pending": hook.get("pending", 0)}


def remove(db, hook_id):
    """Removes a hook, with its waiting events and its log."""
    hook = get(db, hook_id)
    db.execute("DELETE FROM webhooks WHERE seq = ?", (hook["seq"],))


def enable(db, hook_id):
    """Makes a hook active again; its waiting events go out from the first undelivered one, at once."""
    hook = get(db, hook_id)
    db.execute("UPDATE webhooks SET is_active = 1, disabled_reason = NULL WHERE seq = ?", (hook["seq"],))
    db.execute("UPDATE webhook_outbox SET attempts = 0, next_attempt_at = 0 WHERE hook_seq = ?", (hook["seq"],))
    return get(db, hook_id)


def disable(db, hook_seq, reason):
    """Stops a hook's deliveries until it is enabled; its events keep waiting in the outbox."""
    db.execute("UPDATE webhooks SET is_active = 0, disabled_reason = ? WHERE seq = ?", (reason, hook_seq))


def deliveries(db, hook_id, limit=KEPT_ATTEMPTS):
    """The hook's last attempts, newest first: event_id, event_type, attempted_at, status, error."""
    hook = get(db, hook_id)
    return db.execute(
        """SELECT event_id, event_type, attempted_at, status, error FROM webhook_deliveries
           WHERE hook_seq = ? ORDER BY seq DESC LIMIT ?""", (hook["seq"], limit)).fetchall()


def log_attempts(db, hook_seq, attempts):
    """Logs attempts, each (event_id, event_type, attempted_at, status, error), keeping the last 100."""
    # Nothing for a hook removed meanwhile (its attempt was under way).
    db.executemany("""INSERT INTO webhook_deliveries (hook_seq, event_id, event_type, attempted_at, status, error)
                      SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM webhooks WHERE seq = ?)""",
                   [(hook_seq, *attempt, hook_seq) for attempt in attempts])
    db.execute("""DELETE FROM webhook_deliveries WHERE hook_seq = ? AND seq <= (
                      SELECT seq FROM webhook_deliveries WHERE hook_seq = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)""",
               (hook_seq, hook_seq, KEPT_ATTEMPTS))


# --- the outbox, for the deliverer -------------------------------------------------------------------------


def hooks_with_work(db, now):
    """The seqs of the active hooks whose first waiting event is due at now (Unix seconds)."""
    return [row[0] for row in db.execute(
        """SELECT w.seq FROM webhooks w WHERE w.is_active = 1 AND (SELECT o.next_attempt_at FROM webhook_outbox o
               WHERE o.hook_seq = w.seq ORDER BY o.seq LIMIT 1) <= ? ORDER BY w.seq""", (now,))]


def active_hook(db, hook_seq):
    """The hook if it is still there and active, else None."""
    return db.execute("SELECT * FROM webhooks WHERE seq = ? AND is_active = 1", (hook_seq,)).fetchone()


def head(db, hook_seq, limit):
    """The first `limit` events waiting for a hook, in order: outbox_seq, attempts, next_attempt_at and the
    event's columns (its id NULL if it is gone)."""
    return db.execute(
        """SELECT o.seq AS outbox_seq, o.attempts, o.next_attempt_at, e.*
           FROM webhook_outbox o LEFT JOIN events e ON e.seq = o.event_seq
           WHERE o.hook_seq = ? ORDER BY o.seq LIMIT ?""", (hook_seq, limit)).fetchall()


def acknowledge(db, hook_seq, delivered):
    """Takes delivered events out of a hook's outbox and logs them: each (outbox_seq, event_id, event_type,
    attempted_at, status)."""
    db.executemany("DELETE FROM webhook_outbox WHERE seq = ?", [(item[0],) for item in delivered])
    logged = [(event_id, event_type, attempted_at, status, None)
              for _, event_id, event_type, attempted_at, status in delivered if event_id]
    log_attempts(db, hook_seq, logged[-KEPT_ATTEMPTS:])  # only the last are kept


def postpone(db, outbox_seq, attempts, next_attempt_at):
    """Records a failed attempt of a waiting event: tried again at next_attempt_at (Unix seconds)."""
    db.execute("UPDATE webhook_outbox SET attempts = ?, next_attempt_at = ? WHERE seq = ?",
               (attempts, next_attempt_at, outbox_seq))
