"""Check-ins, a key result's history: every write that moves a key result records one here."""
from ..db import new_id, utc_now
from ..errors import Invalid, NotFound


def record(db, key_result, value, confidence, now, comment=None, author_id=None):
    """Adds a check-in to a key result (its row, or what has its seq and id); returns the check-in as written."""
    checkin = {
        "id": new_id(), "key_result_id": key_result["id"], "value": value, "confidence": confidence,
        "comment": comment, "author_id": author_id, "created_at": now,
    }
    db.execute(
        """INSERT INTO checkins (id, key_result_seq, value, confidence, comment, author_id, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)""",
        (checkin["id"], key_result["seq"], value, confidence, comment, author_id, now),
    )
    return checkin


def check_in(db, key_result_id, value, confidence=None, comment=None, author_id=None):
    """Records a check-in and moves its key result to it; confidence None keeps the key result's.

    The API and the pages both record check-ins here. NotFound for an unknown key result, Invalid
    for an author who is not a user. The key result is not read first: its UPDATE returns what the
    check-in needs, one statement fewer on the busiest write.
    """
    if author_id is not None and db.execute("SELECT 1 FROM users WHERE id = ?", (author_id,)).fetchone() is None:
        raise Invalid({"author_id": "No user with this id exists."})
    now = utc_now()
    key_result = db.execute(
        """UPDATE key_results SET current_value = ?, confidence = coalesce(?, confidence), modified_at = ?,
               revision = revision + 1
           WHERE id = ? RETURNING seq, id, confidence""",
        (value, confidence, now, key_result_id),
    ).fetchone()
    if key_result is None:
        raise NotFound("key result")
    return record(db, key_result, value, key_result["confidence"], now, comment, author_id)
