"""The charts' reads: every check-in of a key result, of an objective's aligned tree or of a cycle, in one query
each (with one more for the key results they belong to), for okr.reports.timelines to replay day by day.

Each comes key result by key result in creation order, and each key result's check-ins in the order they were
made (the checkins_history index's order, so nothing is sorted): the first is its start value, and of several on
one day the last is how it stood that day.
"""
from .reports import DESCENDANTS, cycle_condition, qualified

# A key result as a chart replays it: its type, targets and weight are today's (no history of them is kept).
KEY_RESULT_COLUMNS = "k.seq, k.objective_id, k.type, k.target_value_min, k.target_value_max, k.weight"
# Its check-ins, read from the checkins_history index alone (k.seq, not k.id: nor is key_results' row visited).
CHECKIN_COLUMNS = "k.seq, c.value, c.created_at"


def key_result_checkins(db, key_result_id):
    """A key result's check-ins as (created_at, value, by_source) in the order they were made; by_source: a
    metric source wrote it (it has evidence)."""
    return db.execute(
        "SELECT c.created_at, c.value, EXISTS (SELECT 1 FROM evidence e WHERE e.checkin_seq = c.seq) "
        "FROM checkins c JOIN key_results k ON k.seq = c.key_result_seq "
        "WHERE k.id = ? ORDER BY c.seq", (key_result_id,)).fetchall()


def rows(db, sql, params):
    cursor = db.cursor()
    cursor.row_factory = None  # tuples: a big cycle has tens of thousands of check-ins
    return cursor.execute(sql, params).fetchall()


def objective_checkins(db, objective_id):
    """The key results of an objective and of everything aligned below it (any cycle), as tuples of
    KEY_RESULT_COLUMNS, and their check-ins, as tuples of CHECKIN_COLUMNS."""
    tree = DESCENDANTS + "SELECT {} FROM key_results k {} WHERE k.objective_id IN tree ORDER BY k.seq{}"
    return (rows(db, tree.format(KEY_RESULT_COLUMNS, "", ""), (objective_id,)),
            rows(db, tree.format(CHECKIN_COLUMNS, "JOIN checkins c ON c.key_result_seq = k.seq", ", c.seq"),
                 (objective_id,)))


def cycle_checkins(db, cycle_id, team_id=None, assignee_id=None):
    """The key results of a cycle (of one team's and/or assignee's objectives when given), as tuples of
    KEY_RESULT_COLUMNS, and their check-ins, as tuples of CHECKIN_COLUMNS."""
    kept, params = cycle_condition(cycle_id, team_id, assignee_id)
    where, params = ("k.cycle_id = ?", [cycle_id]) if len(params) == 1 else (
        f"k.cycle_id = ? AND k.objective_id IN (SELECT id FROM objectives WHERE {kept})", [cycle_id, *params])
    return (rows(db, f"SELECT {KEY_RESULT_COLUMNS} FROM key_results k WHERE {where}", params),
            rows(db, f"SELECT {CHECKIN_COLUMNS} FROM key_results k JOIN checkins c ON c.key_result_seq = k.seq "
                 f"WHERE {where} ORDER BY k.seq, c.seq", params))


def cycle_fingerprint(db, cycle_id):
    """What changes whenever a cycle's burn-up could: its check-ins (how many, the newest), its key results and
    objectives (how many, the newest, their edits), and the database file it is read from. Two index walks and
    a read of the key results' and objectives' rows, far cheaper than replaying the check-ins."""
    return db.execute(
        """SELECT (SELECT file FROM pragma_database_list WHERE name = 'main'),
                  (SELECT count(*) || ':' || ifnull(max(c.seq), 0) FROM key_results k
                   JOIN checkins c ON c.key_result_seq = k.seq WHERE k.cycle_id = :cycle),
                  (SELECT count(*) || ':' || ifnull(max(seq), 0) || ':' || ifnull(sum(revision), 0)
                   FROM key_results WHERE cycle_id = :cycle),
                  (SELECT count(*) || ':' || ifnull(max(seq), 0) || ':' || ifnull(sum(revision), 0)
                   FROM objectives WHERE cycle_id = :cycle)""", {"cycle": cycle_id}).fetchone()[:]


def cycle_checkins_by_objective(db, cycle_id, team_id=None, assignee_id=None):
    """Every check-in of a cycle's key results (of one team's and/or assignee's objectives when given), as
    (objective id, key result seq, type, target_value_min, target_value_max, weight, value, created_at) tuples: objective
    by objective, each one's key results in creation order and their check-ins in the order made, read from the
    cursor as it goes (the indexes' order: nothing is sorted or held)."""
    kept, params = cycle_condition(cycle_id, team_id, assignee_id)
    cursor = db.cursor()
    cursor.row_factory = None
    return cursor.execute(
        "SELECT k.objective_id, k.seq, k.type, k.target_value_min, k.target_value_max, k.weight, c.value, "
        "c.created_at "
        "FROM objectives o CROSS JOIN key_results k ON k.objective_id = o.id "
        "CROSS JOIN checkins c ON c.key_result_seq = k.seq "
        f"WHERE {qualified(kept, 'o')} ORDER BY o.seq, k.seq, c.seq", params)


def cycle_checkin_span(db, cycle_id, team_id=None, assignee_id=None):
    """The first and the last created_at of the check-ins of a cycle's key results (of one team's and/or
    assignee's objectives when given): (None, None) without any. A walk of the check-ins' index."""
    kept, params = cycle_condition(cycle_id, team_id, assignee_id)
    return tuple(db.execute(
        "SELECT min(c.created_at), max(c.created_at) FROM objectives o CROSS JOIN key_results k "
        "ON k.objective_id = o.id CROSS JOIN checkins c ON c.key_result_seq = k.seq "
        f"WHERE {qualified(kept, 'o')}", params).fetchone())
