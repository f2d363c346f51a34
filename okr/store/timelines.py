"""The charts' reads: every check-in of a key result, of an objective's aligned tree or of a cycle, in one query
each (with one more for the key results they belong to), for okr.reports.timelines to replay day by day.

Each comes key result by key result in creation order, and each key result's check-ins in the order they were
made (the checkins_history index's order, so nothing is sorted): the first is its start value, and of several on
one day the last is how it stood that day.
"""
from .reports import DESCENDANTS, cycle_condition, qualified

# A key result as a chart replays it: its type, targets and weight are today's (no history of them is kept); one
# whose progress is its initiatives' is of kind "initiatives" (okr.progress.key_result_progress).
KIND = "CASE WHEN k.progress_from = 'initiatives' THEN 'initiatives' ELSE k.type END"
KEY_RESULT_COLUMNS = f"k.seq, k.objective_id, {KIND}, k.target_value_min, k.target_value_max, k.weight"
# Its check-ins, read from the checkins_history index alone (k.seq, not k.id: nor is key_results' row visited).
CHECKIN_COLUMNS = "k.seq, c.value, c.created_at"

# A key result whose progress is its initiatives' is replayed from them instead of its check-ins: "0/0" when it
# was made, then "done/count" after each initiative was made and each was last made done (its done_at), in the
# order they happened (an initiative made done and then undone is not done in the past: done_at keeps only the
# last time). {where} keeps the key results (alias k) and takes its parameters three times.
INITIATIVE_MARKS = """
SELECT k.seq AS seq, k.created_at AS at, 0 AS added, 0 AS done, 0 AS mark FROM key_results k
WHERE ({where}) AND k.progress_from = 'initiatives'
UNION ALL
SELECT k.seq, i.created_at, 1, 0, 2 * i.seq FROM key_results k JOIN initiatives i ON i.key_result_id = k.id
WHERE ({where}) AND k.progress_from = 'initiatives'
UNION ALL
SELECT k.seq, i.done_at, 0, 1, 2 * i.seq + 1 FROM key_results k JOIN initiatives i ON i.key_result_id = k.id
WHERE ({where}) AND k.progress_from = 'initiatives' AND i.done_at IS NOT NULL"""
INITIATIVE_SERIES = f"""
SELECT seq, sum(done) OVER w || '/' || sum(added) OVER w AS value, at AS created_at, mark AS n
FROM ({INITIATIVE_MARKS}) WINDOW w AS (PARTITION BY seq ORDER BY at, mark ROWS UNBOUNDED PRECEDING)"""
# Whether any of the key results {where} keeps takes its progress from its initiatives (one probe of an index).
ANY_FROM_INITIATIVES = "SELECT EXISTS (SELECT 1 FROM key_results k WHERE ({where}) AND k.progress_from = 'initiatives')"


def checkin_rows(db, where, params, prefix="", prefix_params=()):
    """The check-ins (CHECKIN_COLUMNS) of the key results where (a condition on k, with its params) keeps, key result
    by key result in creation order, each one's in the order made; those whose progress is their initiatives'
    replayed from them (INITIATIVE_SERIES) instead. prefix: SQL before the query (a WITH its where uses), with
    prefix_params."""
    measured = (f"SELECT {CHECKIN_COLUMNS} FROM key_results k JOIN checkins c ON c.key_result_seq = k.seq "
                f"WHERE {where}")
    if not db.execute(prefix + ANY_FROM_INITIATIVES.format(where=where), [*prefix_params, *params]).fetchone()[0]:
        # the index's order: nothing sorted
        return rows(db, f"{prefix}{measured} ORDER BY k.seq, c.seq", [*prefix_params, *params])
    series = INITIATIVE_SERIES.format(where=where)
    sql = (f"{prefix}SELECT seq, value, created_at FROM ("
           f"SELECT k.seq AS seq, c.value AS value, c.created_at AS created_at, c.seq AS n FROM key_results k "
           f"JOIN checkins c ON c.key_result_seq = k.seq WHERE ({where}) AND k.progress_from = 'measure' "
           f"UNION ALL {series}) ORDER BY seq, created_at, n")
    return rows(db, sql, [*prefix_params, *params, *params, *params, *params])


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
            checkin_rows(db, "k.objective_id IN tree", [], prefix=DESCENDANTS, prefix_params=[objective_id]))


def cycle_checkins(db, cycle_id, team_id=None, assignee_id=None):
    """The key results of a cycle (of one team's and/or assignee's objectives when given), as tuples of
    KEY_RESULT_COLUMNS, and their check-ins, as tuples of CHECKIN_COLUMNS."""
    kept, params = cycle_condition(cycle_id, team_id, assignee_id)
    where, params = ("k.cycle_id = ?", [cycle_id]) if len(params) == 1 else (
        f"k.cycle_id = ? AND k.objective_id IN (SELECT id FROM objectives WHERE {kept})", [cycle_id, *params])
    return (rows(db, f"SELECT {KEY_RESULT_COLUMNS} FROM key_results k WHERE {where}", params),
            checkin_rows(db, where, params))


def cycle_fingerprint(db, cycle_id):
    """What changes whenever a cycle's burn-up could: its check-ins (how many, the newest), its key results,
    objectives and initiatives (how many, the newest, their edits), and the database file it is read from. Index
    walks and a read of the key results', objectives' and initiatives' rows, far cheaper than replaying the
    check-ins."""
    return db.execute(
        """SELECT (SELECT file FROM pragma_database_list WHERE name = 'main'),
                  (SELECT count(*) || ':' || ifnull(max(c.seq), 0) FROM key_results k
                   JOIN checkins c ON c.key_result_seq = k.seq WHERE k.cycle_id = :cycle),
                  (SELECT count(*) || ':' || ifnull(max(seq), 0) || ':' || ifnull(sum(revision), 0)
                   FROM key_results WHERE cycle_id = :cycle),
                  (SELECT count(*) || ':' || ifnull(max(seq), 0) || ':' || ifnull(sum(revision), 0)
                   FROM objectives WHERE cycle_id = :cycle),
                  (SELECT count(*) || ':' || ifnull(max(i.seq), 0) || ':' || ifnull(sum(i.revision), 0)
                   FROM key_results k JOIN initiatives i ON i.key_result_id = k.id
                   WHERE k.cycle_id = :cycle)""", {"cycle": cycle_id}).fetchone()[:]


def cycle_checkins_by_objective(db, cycle_id, team_id=None, assignee_id=None):
    """Every check-in of a cycle's key results (of one team's and/or assignee's objectives when given), as
    (objective id, key result seq, type, target_value_min, target_value_max, weight, value, created_at) tuples: objective
    by objective, each one's key results in creation order and their check-ins in the order made, read from the
    cursor as it goes (the indexes' order: nothing is sorted or held)."""
    kept, params = cycle_condition(cycle_id, team_id, assignee_id)
    cursor = db.cursor()
    cursor.row_factory = None
    where = f"k.objective_id IN (SELECT id FROM objectives WHERE {kept})"
    if not db.execute(ANY_FROM_INITIATIVES.format(where=where), params).fetchone()[0]:
        return cursor.execute(
            "SELECT k.objective_id, k.seq, k.type, k.target_value_min, k.target_value_max, k.weight, c.value, "
            "c.created_at "
            "FROM objectives o CROSS JOIN key_results k ON k.objective_id = o.id "
            "CROSS JOIN checkins c ON c.key_result_seq = k.seq "
            f"WHERE {qualified(kept, 'o')} ORDER BY o.seq, k.seq, c.seq", params)
    # Some replay their initiatives (INITIATIVE_SERIES): the two kinds of rows are merged, and so sorted.
    return cursor.execute(
        f"SELECT k.objective_id, k.seq, {KIND}, k.target_value_min, k.target_value_max, k.weight, h.value, "
        "h.created_at FROM ("
        "SELECT c.key_result_seq AS seq, c.value AS value, c.created_at AS created_at, c.seq AS n FROM checkins c "
        f"WHERE c.key_result_seq IN (SELECT k.seq FROM key_results k WHERE {where} AND k.progress_from = 'measure') "
        f"UNION ALL {INITIATIVE_SERIES.format(where=where)}) h "
        "JOIN key_results k ON k.seq = h.seq JOIN objectives o ON o.id = k.objective_id "
        "ORDER BY o.seq, k.seq, h.created_at, h.n", [*params, *params, *params, *params])


def cycle_checkin_span(db, cycle_id, team_id=None, assignee_id=None):
    """The first and the last created_at of the check-ins of a cycle's key results (of one team's and/or
    assignee's objectives when given): (None, None) without any. A walk of the check-ins' index."""
    kept, params = cycle_condition(cycle_id, team_id, assignee_id)
    return tuple(db.execute(
        "SELECT min(c.created_at), max(c.created_at) FROM objectives o CROSS JOIN key_results k "
        "ON k.objective_id = o.id CROSS JOIN checkins c ON c.key_result_seq = k.seq "
        f"WHERE {qualified(kept, 'o')}", params).fetchone())
