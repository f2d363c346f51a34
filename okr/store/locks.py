"""The lock on a closed cycle: what every interface asks before changing anything in one.

A closed cycle takes no new objectives, key results, check-ins or comments, changes and deletes none of them, and
nothing moves in or out of it, until an admin reopens it. schema.sql's triggers refuse such a write from any
writer; asking here first lets the API refuse before it looks at If-Match, and words the refusal with the cycle.
"""
from ..errors import CycleClosed
from . import visibility


# The closed cycles, each with the name of who closed it.
CLOSED = """SELECT c.*, u.name AS closed_by_name FROM cycles c LEFT JOIN users u ON u.id = c.closed_by
            WHERE c.closed_at IS NOT NULL"""


def closed_cycle(db, cycle_id):
    """The cycle's row (with closed_by_name) when it is closed, else None."""
    return db.execute(CLOSED + " AND c.id = ?", (cycle_id,)).fetchone()


def require_open(db, *cycle_ids):
    """CycleClosed when any of these cycles (None ones left out) is closed."""
    for cycle_id in cycle_ids:
        if cycle_id is not None:
            closed = closed_cycle(db, cycle_id)
            if closed is not None:
                raise CycleClosed(closed)


# Each row's cycle, and the objective it belongs to (none for a cycle).
CYCLE_OF = {
    "cycles": "SELECT id, NULL FROM cycles WHERE id = ?",
    "objectives": "SELECT cycle_id, id FROM objectives WHERE id = ?",
    "key_results": "SELECT cycle_id, objective_id FROM key_results WHERE id = ?",
    "checkins": """SELECT k.cycle_id, k.objective_id FROM checkins c JOIN key_results k ON k.seq = c.key_result_seq
                   WHERE c.id = ?""",
    "comments": """SELECT coalesce(o.cycle_id, k.cycle_id), coalesce(c.objective_id, k.objective_id) FROM comments c
                   LEFT JOIN objectives o ON o.id = c.objective_id LEFT JOIN key_results k ON k.id = c.key_result_id
                   WHERE c.id = ?""",
    "initiatives": """SELECT k.cycle_id, k.objective_id FROM initiatives i JOIN key_results k ON k.id = i.key_result_id
                      WHERE i.id = ?""",
}


def cycle_of(db, table, row_id):
    """The id of the cycle a row of table (cycles, objectives, key_results, checkins, comments, initiatives) is in;
    None when there is no such row, or it belongs to an objective the viewer may not see (okr.store.visibility:
    then the caller's own lookup answers 404, as for no row, not 409)."""
    row = db.execute(CYCLE_OF[table], (row_id,)).fetchone()
    if row is None or row[1] is not None and not visibility.sees(db, visibility.viewer(), row[1]):
        return None
    return row[0]


def closed_cycles(db):
    """Every closed cycle's row (with closed_by_name), by id: what an import may not change."""
    return {row["id"]: row for row in db.execute(CLOSED)}
