"""Key results: created with their first check-in, replaced (a new value or confidence is a check-in), deleted."""
from decimal import Decimal
from functools import partial

from ..db import new_id, utc_now
from .checkins import record
from .common import deleted_or_missing, fetch

get = partial(fetch, "key_results", "key result")


def create(db, objective, values, author_id=None):
    """A new key result of an objective (its row) from a KeyResultSchema's values, with its first check-in:
    its starting value, by author_id (the person who made it, None when unknown)."""
    now = utc_now()
    row = db.execute(
        """INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence,
               current_value, target_value_min, target_value_max, created_at, modified_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *""",
        (new_id(), objective["id"], objective["cycle_id"], values["name"], values["type"],
         values["confidence"], values["current_value"], values["target_value_min"],
         values["target_value_max"], now, now),
    ).fetchone()
    record(db, row, row["current_value"], row["confidence"], now, author_id=author_id)
    return row


def replace(db, stored, values, author_id=None):
    """The stored key result (its row) with a KeyResultUpdateSchema's values; a new value or confidence is a
    check-in, by author_id."""
    now = utc_now()
    row = db.execute(
        """UPDATE key_results SET name = ?, type = ?, confidence = ?, current_value = ?,
               target_value_min = ?, target_value_max = ?, modified_at = ?, revision = revision + 1
           WHERE id = ? RETURNING *""",
        (values["name"], values["type"], values["confidence"], values["current_value"],
         values["target_value_min"], values["target_value_max"], now, stored["id"]),
    ).fetchone()
    if row is None:
        return get(db, stored["id"])
    if moved(stored, row):
        record(db, row, row["current_value"], row["confidence"], now, author_id=author_id)
    return row


def moved(before, after):
    """Whether the current value or the confidence changed, as numbers ("1.0" is "1.00")."""
    return any(Decimal(before[field]) != Decimal(after[field]) for field in ("current_value", "confidence"))


def delete(db, key_result_id):
    """Deletes a key result and its check-ins."""
    deleted_or_missing("key result", db.execute("DELETE FROM key_results WHERE id = ? RETURNING id",
                                                (key_result_id,)))
