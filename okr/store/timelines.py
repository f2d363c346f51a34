"""The charts' reads: every check-in of a key result, of an objective's aligned tree or of a cycle, in one query
each, for okr.reports.timelines to replay day by day.

Each comes key result by key result in creation order, and each key result's check-ins in the order they were
made (the checkins_history index's order, so nothing is sorted): the first is its start value, and of several on
one day the last is how it stood that day.
"""
from .reports import DESCENDANTS, cycle_condition

# What a chart needs of each check-in: its key result (with its type and targets, today's: no history of them is
# kept) and its value and time.
COLUMNS = ("k.id AS key_result_id, k.objective_id, k.type, k.target_value_min, k.target_value_max, "
           "c.value, c.created_at")


def key_result_checkins(db, key_result_id):
    """A key result's check-ins as (created_at, value) pairs, in the order they were made."""
    return db.execute(
        "SELECT c.created_at, c.value FROM checkins c JOIN key_results k ON k.seq = c.key_result_seq "
        "WHERE k.id = ? ORDER BY c.seq", (key_result_id,)).fetchall()


def rows(db, sql, params):
    cursor = db.cursor()
    cursor.row_factory = None  # tuples: a big cycle has tens of thousands of check-ins
    return cursor.execute(sql, params).fetchall()


def objective_checkins(db, objective_id):
    """The check-ins of the key results of an objective and of everything aligned below it (any cycle), as tuples
    of COLUMNS."""
    return rows(db, DESCENDANTS + f"SELECT {COLUMNS} FROM key_results k "
                "JOIN checkins c ON c.key_result_seq = k.seq WHERE k.objective_id IN tree ORDER BY k.seq, c.seq",
                (objective_id,))


def cycle_checkins(db, cycle_id, team_id=None, assignee_id=None):
    """The check-ins of a cycle's key results (of one team's and/or assignee's objectives when given), as tuples
    of COLUMNS."""
    kept, params = cycle_condition(cycle_id, team_id, assignee_id)
    where = "k.cycle_id = ?"
    if len(params) > 1:
        where += f" AND k.objective_id IN (SELECT id FROM objectives WHERE {kept})"
    return rows(db, f"SELECT {COLUMNS} FROM key_results k JOIN checkins c ON c.key_result_seq = k.seq "
                f"WHERE {where} ORDER BY k.seq, c.seq", [cycle_id, *(params if len(params) > 1 else [])])
