"""The lock on a closed cycle: what every interface asks before changing anything in one.

A closed cycle takes no new objectives, key results, check-ins or comments, changes and deletes none of them, and
nothing moves in or out of it, until an admin reopens it. schema.sql's triggers refuse such a write from any
writer; asking here first lets the API refuse before it looks at If-Match, and words the refusal with the cycle.
"""
from ..errors import CycleClosed


def closed_cycle(db, cycle_id):
    """The cycle's row (with closed_by_name) when it is closed, else None."""
    return db.execute(
        """SELECT c.*, u.name AS closed_by_name FROM cycles c LEFT JOIN users u ON u.id = c.closed_by
           WHERE c.id = ? AND c.closed_at IS NOT NULL""", (cycle_id,)).fetchone()


def require_open(db, *cycle_ids):
    """CycleClosed when any of these cycles (None ones left out) is closed."""
    for cycle_id in cycle_ids:
        if cycle_id is not None:
            closed = closed_cycle(db, cycle_id)
            if closed is not None:
                raise CycleClosed(closed)


def require_open_key_result(db, key_result_id):
    """CycleClosed when the key result's cycle is closed (nothing when it does not exist)."""
    row = db.execute("SELECT cycle_id FROM key_results WHERE id = ?", (key_result_id,)).fetchone()
    if row is not None:
        require_open(db, row["cycle_id"])


def require_open_objective(db, objective_id):
    """CycleClosed when the objective's cycle is closed (nothing when it does not exist)."""
    row = db.execute("SELECT cycle_id FROM objectives WHERE id = ?", (objective_id,)).fetchone()
    if row is not None:
        require_open(db, row["cycle_id"])


def closed_cycles(db):
    """Every closed cycle's row (with closed_by_name), by id: what an import may not change."""
    return {row["id"]: row for row in db.execute(
        """SELECT c.*, u.name AS closed_by_name FROM cycles c LEFT JOIN users u ON u.id = c.closed_by
           WHERE c.closed_at IS NOT NULL""")}
