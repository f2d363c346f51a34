"""Reports: a cycle's or an objective's alignment tree, with the progress and status of everything in it.

Built from a fixed number of queries whatever the size (no query per row), with
every figure from okr.progress. Knows SQL but not Flask: the API, the dashboard
and the exports all call it with an open connection.
"""
from datetime import timezone

from . import progress
from .records import cycle_details_json, key_result_details_json, objective_json

# Each key result with its start (the value of its first check-in), its last
# check-in's time and whether it had a check-in after its first (an update):
# three probes of checkins_history per key result, whatever its history's length.
# Every key result has a first check-in; the fallbacks only keep a row written
# behind the API's back from breaking a report.
KEY_RESULTS_WITH_HISTORY = """
SELECT k.*,
    coalesce((SELECT value FROM checkins c WHERE c.key_result_seq = k.seq ORDER BY c.seq LIMIT 1),
             k.current_value) AS start_value,
    coalesce((SELECT created_at FROM checkins c WHERE c.key_result_seq = k.seq ORDER BY c.seq DESC LIMIT 1),
             k.modified_at) AS last_checkin_at,
    EXISTS (SELECT 1 FROM checkins c WHERE c.key_result_seq = k.seq ORDER BY c.seq LIMIT 1 OFFSET 1) AS updated
FROM key_results k
WHERE {where}
ORDER BY k.seq
"""

# An objective and everything aligned below it, at any depth and in any cycle.
DESCENDANTS = """
WITH RECURSIVE tree(id) AS (
    SELECT ?
    UNION
    SELECT o.id FROM objectives o JOIN tree t ON o.parent_objective_id = t.id
)
"""


def cycle_condition(cycle_id, team_id=None, assignee_id=None):
    """The condition on objectives that a cycle report keeps, and its parameters."""
    conditions, params = ["cycle_id = ?"], [cycle_id]
    for column, value in (("team_id", team_id), ("assignee_id", assignee_id)):
        if value is not None:
            conditions.append(f"{column} = ?")
            params.append(value)
    return " AND ".join(conditions), params


def cycle_queries(cycle_id, team_id=None, assignee_id=None):
    """The SQL and parameters of a cycle report's objectives and of its key results, each in creation order."""
    kept, params = cycle_condition(cycle_id, team_id, assignee_id)
    objectives = f"SELECT * FROM objectives WHERE {kept} ORDER BY seq", params
    if len(params) == 1:
        return objectives, (KEY_RESULTS_WITH_HISTORY.format(where="k.cycle_id = ?"), params)
    where = f"k.cycle_id = ? AND k.objective_id IN (SELECT id FROM objectives WHERE {kept})"
    return objectives, (KEY_RESULTS_WITH_HISTORY.format(where=where), [cycle_id, *params])


def cycle_report(db, cycle, now, team_id=None, assignee_id=None):
    """The report of a cycle row, optionally of the objectives of one team and/or assignee.

    now is an aware datetime, for staleness and the cycle's state. A finished cycle's key results are never stale.
    """
    (objectives_sql, params), (key_results_sql, key_results_params) = cycle_queries(cycle["id"], team_id, assignee_id)
    objectives = dict_rows(db, objectives_sql, params)
    key_results = dict_rows(db, key_results_sql, key_results_params)
    shown = cycle_details_json(cycle, now.date())
    stale = never_stale if shown["state"] == "finished" else stale_by_time(now)
    roots, exact_by_objective = alignment_tree(objectives, key_results, stale)
    return {
        "cycle": shown,
        "progress": progress.mean_figure(exact_by_objective),
        "objectives_count": len(objectives),
        "key_results_count": len(key_results),
        "objectives": roots,
    }


# A key result as it stood at :as_of, from its check-ins up to then: its value and confidence then, its last
# check-in then, and whether it had been updated by then. Its type and targets are today's (no history of
# them is kept).
KEY_RESULTS_AS_OF = """
SELECT k.*,
    coalesce((SELECT value FROM checkins c WHERE c.key_result_seq = k.seq ORDER BY c.seq LIMIT 1),
             k.current_value) AS start_value,
    (SELECT value FROM checkins c WHERE c.key_result_seq = k.seq AND c.created_at <= :as_of
     ORDER BY c.seq DESC LIMIT 1) AS value_then,
    (SELECT confidence FROM checkins c WHERE c.key_result_seq = k.seq AND c.created_at <= :as_of
     ORDER BY c.seq DESC LIMIT 1) AS confidence_then,
    coalesce((SELECT created_at FROM checkins c WHERE c.key_result_seq = k.seq AND c.created_at <= :as_of
              ORDER BY c.seq DESC LIMIT 1), k.created_at) AS last_checkin_at,
    EXISTS (SELECT 1 FROM checkins c WHERE c.key_result_seq = k.seq AND c.created_at <= :as_of
            ORDER BY c.seq LIMIT 1 OFFSET 1) AS updated
FROM key_results k
WHERE k.cycle_id = :cycle AND k.created_at <= :as_of
    AND k.objective_id IN (SELECT id FROM objectives WHERE {kept})
ORDER BY k.seq
"""


def cycle_report_as_of(db, cycle, as_of, team_id=None):
    """cycle_report as it would have been at as_of (an aware datetime), from the check-ins made by then: the
    objectives and key results that existed then, each key result at its last value and confidence by then.
    Every figure by the same rules; "this week against last" compares it with cycle_report."""
    stamp = as_of.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    kept, params = "cycle_id = :cycle AND created_at <= :as_of", {"cycle": cycle["id"], "as_of": stamp}
    if team_id is not None:
        kept += " AND team_id = :team"
        params["team"] = team_id
    objectives = dict_rows(db, f"SELECT * FROM objectives WHERE {kept} ORDER BY seq", params)
    key_results = dict_rows(db, KEY_RESULTS_AS_OF.format(kept=kept), params)
    for row in key_results:
        if row["value_then"] is not None:  # else a row written behind the API's back: today's values
            row["current_value"], row["confidence"] = row["value_then"], row["confidence_then"]
    shown = cycle_details_json(cycle, as_of.date())
    stale = never_stale if shown["state"] == "finished" else stale_by_time(as_of)
    roots, exact_by_objective = alignment_tree(objectives, key_results, stale)
    return {
        "cycle": shown,
        "progress": progress.mean_figure(exact_by_objective),
        "objectives_count": len(objectives),
        "key_results_count": len(key_results),
        "objectives": roots,
    }


def current_cycles(db, today):
    """The cycle rows whose state is "current" today, newest first.

    SQLite narrows them by their ISO dates (text that sorts as dates); okr.progress.cycle_state decides.
    """
    day = today.isoformat()
    rows = db.execute(
        """SELECT * FROM cycles WHERE (starts_on IS NULL OR starts_on <= date(:day, '+1 day'))
           AND (ends_on IS NULL OR ends_on >= date(:day, '-1 day')) ORDER BY seq DESC""",
        {"day": day},
    ).fetchall()
    return [row for row in rows if progress.cycle_state(row["starts_on"], row["ends_on"], today) == "current"]


def flattened(nodes):
    """A report's objective nodes, parents before their children, in the report's order."""
    found, stack = [], list(reversed(nodes))
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(reversed(node["children"]))
    return found


def objective_report(db, objective_id, now):
    """The report of an objective with its aligned descendants, whatever their cycle; None if it is missing."""
    objectives = db.execute(
        DESCENDANTS + "SELECT * FROM objectives WHERE id IN tree ORDER BY seq", (objective_id,)
    ).fetchall()
    if not objectives:
        return None
    key_results = db.execute(
        DESCENDANTS + KEY_RESULTS_WITH_HISTORY.format(where="k.objective_id IN tree"), (objective_id,)
    ).fetchall()
    roots, _ = alignment_tree(objectives, key_results, stale_test(db, now), root_id=objective_id)
    return {"objective": roots[0]}


def key_result_report(db, key_result_id, now):
    """One key result's report entry (as in a cycle report), or None if it is missing."""
    row = db.execute(KEY_RESULTS_WITH_HISTORY.format(where="k.id = ?"), (key_result_id,)).fetchone()
    return None if row is None else key_result_node(row, stale_test(db, now))[0]


def never_stale(row):
    return False


def stale_by_time(now):
    by_time = progress.stale_test(now)
    return lambda row: by_time(row["last_checkin_at"])


def stale_test(db, now):
    """A key-result row's staleness, for key results of any cycle: never in a finished cycle."""
    today = now.date().isoformat()
    finished = {row[0] for row in db.execute("SELECT id FROM cycles WHERE ends_on < ?", (today,))}
    by_time = progress.stale_test(now)
    return lambda row: row["cycle_id"] not in finished and by_time(row["last_checkin_at"])


def recent_values(db, cycle_id, count):
    """{key result id: the values of its last `count` check-ins, oldest first} for a cycle, in one query.

    For each key result SQLite takes its last `count` check-ins from
    checkins_history, newest first, and joins their values into one string:
    4,000 rows reach Python for a cycle's sparklines rather than every
    check-in, the most of what they cost. (The join follows the order of the
    ORDER BY ... LIMIT subquery it reads, as SQLite runs it; a test holds it to
    that.) Stored values are decimals in plain notation, never holding the
    space that separates them.
    """
    cursor = db.cursor()
    cursor.row_factory = None
    cursor.execute(
        """SELECT k.id, (SELECT group_concat(value, ' ') FROM (
                            SELECT c.value FROM checkins c WHERE c.key_result_seq = k.seq
                            ORDER BY c.seq DESC LIMIT ?))
           FROM key_results k WHERE k.cycle_id = ?""",
        (count, cycle_id),
    )
    return {key_result_id: values.split(" ")[::-1] for key_result_id, values in cursor if values is not None}


def dict_rows(db, sql, params):
    """A query's rows as dicts: a report reads each row's columns by name a dozen times, which
    costs a sqlite3.Row a search of its columns every time."""
    cursor = db.cursor()
    cursor.row_factory = None
    cursor.execute(sql, params)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


def alignment_tree(objectives, key_results, stale, root_id=None):
    """The objectives' nodes as a forest, and each objective's exact progress.

    objectives and key_results come in creation order. An objective whose
    parent is not among them is a root; the others go in their parent's children.
    stale tells whether a key-result row is stale. root_id, when given, is a root
    whatever its parent (an objective report's top, even in a loop written behind the API's back).
    """
    nodes, exact_of = {}, {}
    for row in objectives:
        nodes[row["id"]] = {**objective_json(row), "progress": None, "progress_from": None, "key_results": [],
                            "children": []}
        exact_of[row["id"]] = []
    for row in key_results:
        node, exact = key_result_node(row, stale)
        nodes[row["objective_id"]]["key_results"].append(node)
        exact_of[row["objective_id"]].append(exact)
    roots = []
    for row in objectives:
        node = nodes[row["id"]]
        exact_of[row["id"]] = progress.mean(exact_of[row["id"]])
        parent = None if row["id"] == root_id else nodes.get(row["parent_objective_id"])
        (parent["children"] if parent is not None else roots).append(node)
    roll_up(roots, exact_of)
    return roots, list(exact_of.values())


def roll_up(roots, exact_of):
    """Gives each objective without key results of its own its aligned children's progress (okr.progress.rolled_up),
    children first; exact_of keeps each objective's own."""
    order, stack = [], list(roots)
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node["children"])
    rolled = {}
    for node in reversed(order):  # every child before its parent
        value, source = progress.rolled_up(
            exact_of[node["id"]], bool(node["key_results"]),
            [rolled[child["id"]] for child in node["children"] if child["cycle_id"] == node["cycle_id"]])
        rolled[node["id"]] = value
        node["progress"], node["progress_from"] = progress.figure(value), source


def key_result_node(row, stale):
    """A key result's report entry, and its exact progress (None for a baseline).

    stale tells whether the row (with its last_checkin_at and cycle_id) is stale."""
    exact = progress.key_result_progress(
        row["type"], row["start_value"], row["current_value"], row["target_value_min"], row["target_value_max"]
    )
    return {
        **key_result_details_json(row),
        "start_value": row["start_value"],
        "progress": progress.figure(exact),
        "status": progress.key_result_status(row["confidence"], row["updated"]),
        "stale": stale(row),
        "last_checkin_at": row["last_checkin_at"],
    }, exact
