"""Writes a key result's history: every view that moves a key result records a check-in here."""
from ..db import get_db, new_id


def record_checkin(key_result, value, confidence, now, comment=None, author_id=None):
    """Adds a check-in to a key result (its row); returns the check-in as written."""
    checkin = {
        "id": new_id(), "key_result_id": key_result["id"], "value": value, "confidence": confidence,
        "comment": comment, "author_id": author_id, "created_at": now,
    }
    get_db().execute(
        """INSERT INTO checkins (id, key_result_seq, value, confidence, comment, author_id, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)""",
        (checkin["id"], key_result["seq"], value, confidence, comment, author_id, now),
    )
    return checkin
