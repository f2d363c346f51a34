"""Check-ins, a key result's history: every write that moves a key result records one here."""
from .. import clock
from ..clock import new_id
from ..errors import Invalid, NotFound
from ..records import checkin_json, key_result_details_json
from . import events


def with_team(db, row):
    """A key result's row (None stays None) with its objective's team_id, which the activity feed places it by.

    A query of its own: in a RETURNING clause, SQLite (3.40) runs a correlated subquery as a scan of every
    objective, which made each check-in cost milliseconds per thousand objectives.
    """
    if row is None:
        return None
    team = db.execute("SELECT team_id FROM objectives WHERE id = ?", (row["objective_id"],)).fetchone()
    return {**dict(row), "team_id": None if team is None else team[0]}


def record(db, key_result, value, confidence, now, comment=None, author_id=None):
    """Adds a check-in to a key result (its row, or what has its seq, id, cycle_id and team_id); returns the
    check-in as written."""
    checkin = {
        "id": new_id(), "key_result_id": key_result["id"], "value": value, "confidence": confidence,
        "comment": comment, "author_id": author_id, "created_at": now,
    }
    db.execute(
        """INSERT INTO checkins (id, key_result_seq, value, confidence, comment, author_id, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)""",
        (checkin["id"], key_result["seq"], value, confidence, comment, author_id, now),
    )
    events.record(db, "checkin", "created", checkin["id"], checkin_json(checkin), parent_id=key_result["id"],
                  cycle_id=key_result["cycle_id"], team_id=key_result["team_id"])
    return checkin


def check_in(db, key_result_id, value, confidence=None, comment=None, author_id=None):
    """Records a check-in and moves its key result to it; confidence None keeps the key result's.

    The API and the pages both record check-ins here. NotFound for an unknown key result, Invalid
    for an author who is not a user. The key result's change is an event of its own (key_result.updated),
    before the check-in's.
    """
    if author_id is not None and db.execute("SELECT 1 FROM users WHERE id = ?", (author_id,)).fetchone() is None:
        raise Invalid({"author_id": "No user with this id exists."})
    now = clock.utc_now()
    before = db.execute("SELECT * FROM key_results WHERE id = ?", (key_result_id,)).fetchone()
    if before is None:
        raise NotFound("key result")
    key_result = with_team(db, db.execute(
        """UPDATE key_results SET current_value = ?, confidence = coalesce(?, confidence), modified_at = ?,
               revision = revision + 1
           WHERE seq = ? RETURNING *""",
        (value, confidence, now, before["seq"]),
    ).fetchone())
    key_result_updated(db, before, key_result)
    return record(db, key_result, value, key_result["confidence"], now, comment, author_id)


def key_result_updated(db, before, row):
    """Records the event of a key result's update: row is it after (with its team_id), before its row before."""
    events.record(db, "key_result", "updated", row["id"], key_result_details_json(row),
                  before=key_result_details_json(before), parent_id=row["objective_id"], cycle_id=row["cycle_id"],
                  team_id=row["team_id"])


def page(db, after, limit, key_result):
    """A page of a key result's (its row) check-ins, oldest first. Check-ins point at their key result's seq;
    each row also names its id, as the API shows it."""
    return db.execute(
        "SELECT *, ? AS key_result_id FROM checkins WHERE key_result_seq = ? AND seq > ? ORDER BY seq LIMIT ?",
        (key_result["id"], key_result["seq"], after, limit)).fetchall()


def latest(db, key_result_id, limit):
    """Up to limit of a key result's check-ins, the newest first, each with its author's name as author_name
    (None for none, or one gone)."""
    return db.execute(
        """SELECT c.*, u.name AS author_name FROM checkins c
           JOIN key_results k ON k.seq = c.key_result_seq
           LEFT JOIN users u ON u.id = c.author_id
           WHERE k.id = ? ORDER BY c.seq DESC LIMIT ?""",
        (key_result_id, limit),
    ).fetchall()
