"""The reports' reads: a cycle's or an objective's objectives and key results (each key result with its start,
its last check-in and whether it was updated), a cycle as it stood at a moment, and the sparklines' values.

A report is built from a fixed number of these queries whatever its size (no query per row) by okr.reports.alignment,
and written from the same rows as they stream by okr.reports.streaming: each read comes as a list (of dicts, or of
the connection's rows where the caller reads them so) or, for the streaming writer, as an iterator of dicts
read one row at a time from the cursor, never held whole.
"""
import json
import re

from . import visibility

# How many initiatives a key result has, and how many of them are done (one walk of the initiatives_of_key_result
# index each, at most 50 rows).
INITIATIVE_COUNTS = """(SELECT count(*) FROM initiatives i WHERE i.key_result_id = k.id) AS initiatives_count,
    (SELECT count(*) FROM initiatives i WHERE i.key_result_id = k.id AND i.state = 'done') AS initiatives_done"""
# The same as they stood at :as_of: those made by then, and of those the ones done now that were made done by then
# (one undone since cannot be told from one never done: no history of states is kept).
INITIATIVE_COUNTS_AS_OF = """(SELECT count(*) FROM initiatives i WHERE i.key_result_id = k.id AND i.created_at <= :as_of)
        AS initiatives_count,
    (SELECT count(*) FROM initiatives i WHERE i.key_result_id = k.id AND i.created_at <= :as_of AND i.state = 'done'
        AND i.done_at <= :as_of) AS initiatives_done"""

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
    EXISTS (SELECT 1 FROM checkins c WHERE c.key_result_seq = k.seq ORDER BY c.seq LIMIT 1 OFFSET 1) AS updated,
""" + INITIATIVE_COUNTS + """
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


def dict_rows(db, sql, params):
    """A query's rows as dicts: a report reads each row's columns by name a dozen times, which
    costs a sqlite3.Row a search of its columns every time."""
    cursor = db.cursor()
    cursor.row_factory = None
    cursor.execute(sql, params)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


def streamed_rows(db, sql, params):
    """A query's rows as dicts (as dict_rows), one at a time."""
    cursor = db.cursor()
    cursor.row_factory = None
    cursor.execute(sql, params)
    names = [column[0] for column in cursor.description]
    for row in cursor:
        yield dict(zip(names, row))


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


def cycle_rows(db, cycle_id, team_id=None, assignee_id=None):
    """A cycle report's objectives and key results (with their history), each a list of dicts in creation
    order; of one team's and/or assignee's objectives when given."""
    objectives, key_results = cycle_queries(cycle_id, team_id, assignee_id)
    return dict_rows(db, *objectives), dict_rows(db, *key_results)


def streamed_cycle_rows(db, cycle_id, team_id=None, assignee_id=None):
    """cycle_rows as two iterators of dicts, each read from its cursor as it is consumed (the objectives'
    first: the key results' query starts when their iterator is first read)."""
    objectives, key_results = cycle_queries(cycle_id, team_id, assignee_id)
    return streamed_rows(db, *objectives), streamed_rows(db, *key_results)


def cycle_objective_count(db, cycle_id, team_id=None, assignee_id=None):
    """How many objectives a cycle report would show: one walk of an index."""
    kept, params = cycle_condition(cycle_id, team_id, assignee_id)
    return db.execute(f"SELECT count(*) FROM objectives WHERE {kept}", params).fetchone()[0]


def objective_tree(db, objective_id):
    """The objective and its aligned descendants, whatever their cycle (the connection's rows, in creation
    order; none when it is missing), and their key results with their history."""
    objectives = db.execute(
        DESCENDANTS + "SELECT * FROM objectives WHERE id IN tree ORDER BY seq", (objective_id,)
    ).fetchall()
    if not objectives:
        return objectives, []
    key_results = db.execute(
        DESCENDANTS + KEY_RESULTS_WITH_HISTORY.format(where="k.objective_id IN tree"), (objective_id,)
    ).fetchall()
    return objectives, key_results


def streamed_objective_tree(db, objective_id):
    """objective_tree as two iterators of dicts, each read from its cursor as it is consumed."""
    return (streamed_rows(db, DESCENDANTS + "SELECT * FROM objectives WHERE id IN tree ORDER BY seq",
                          [objective_id]),
            streamed_rows(db, DESCENDANTS + KEY_RESULTS_WITH_HISTORY.format(where="k.objective_id IN tree"),
                          [objective_id]))


def descendant_count(db, objective_id):
    """How many objectives an objective report would show (0 when the objective is missing)."""
    return db.execute(DESCENDANTS + "SELECT count(*) FROM objectives WHERE id IN tree", (objective_id,)).fetchone()[0]


def key_result_with_history(db, key_result_id):
    """One key result's row with its history (as in a cycle report's), or None."""
    return db.execute(KEY_RESULTS_WITH_HISTORY.format(where="k.id = ?"), (key_result_id,)).fetchone()


# A key result as it stood at :as_of, from its check-ins up to then: its value and confidence then, its last
# check-in then, and whether it had been updated by then. Its type, targets and initiatives are today's (no history
# of them is kept).
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
            ORDER BY c.seq LIMIT 1 OFFSET 1) AS updated,
    """ + INITIATIVE_COUNTS_AS_OF + """
FROM key_results k
WHERE k.cycle_id = :cycle AND k.created_at <= :as_of
    AND k.objective_id IN (SELECT id FROM objectives WHERE {kept})
ORDER BY k.seq
"""


def cycle_rows_as_of(db, cycle_id, stamp, team_id=None):
    """A cycle's objectives and key results as they stood at stamp (a UTC timestamp as the rows have them),
    each a list of dicts in creation order: those that existed then, each key result with its value_then and
    confidence_then (None when it had no check-in by then); of one team's objectives when given."""
    kept, params = "cycle_id = :cycle AND created_at <= :as_of", {"cycle": cycle_id, "as_of": stamp}
    if team_id is not None:
        kept += " AND team_id = :team"
        params["team"] = team_id
    objectives = dict_rows(db, f"SELECT * FROM objectives WHERE {kept} ORDER BY seq", params)
    key_results = dict_rows(db, KEY_RESULTS_AS_OF.format(kept=kept), params)
    return objectives, key_results


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


# The report's own query (start value and last check-in), driven from the
# cycle's objectives in order: the unary + keeps SQLite from walking the key
# results by cycle, so it takes each objective's by key_results_by_objective,
# already in order. Nothing is sorted or held: rows stream.
SPREADSHEET_ROWS = f"""
SELECT h.*, o.name AS objective_name, o.team_id AS objective_team_id, t.name AS team_name,
    o.assignee_id AS objective_assignee_id, u.name AS assignee_name, w.name AS owner_name
FROM objectives o
CROSS JOIN ({KEY_RESULTS_WITH_HISTORY.format(where="+k.cycle_id = ?")}) h ON h.objective_id = o.id
LEFT JOIN teams t ON t.id = o.team_id
LEFT JOIN users u ON u.id = o.assignee_id
LEFT JOIN users w ON w.id = h.owner_id
WHERE o.cycle_id = ?
ORDER BY o.seq, h.seq
"""


def spreadsheet_rows(db, cycle_id):
    """Each key result of a cycle with its history (as a report's), objective by objective, with its objective's
    name, team and assignee (objective_name, objective_team_id, team_name, objective_assignee_id,
    assignee_name) and its owner's name (owner_name): a cycle's CSV, as a cursor read as it goes. Those of objectives
    the viewer may not see are left out."""
    seen, params = visibility.seeing("o")
    return db.execute(SPREADSHEET_ROWS.replace("WHERE o.cycle_id = ?", f"WHERE o.cycle_id = ? AND {seen}"),
                      (cycle_id, cycle_id, *params))


# The cycle page's reads (okr.reports.review): a page of top-level objectives, with everything aligned below
# them in the same report, and their sparklines' check-ins. A report's kept objectives are a cycle's (maybe of
# one team and/or assignee); a top one is one whose parent is not among them.
TOP_OBJECTIVES = """
SELECT o.seq, o.id FROM objectives o
WHERE {kept} AND o.seq > ? AND NOT EXISTS (SELECT 1 FROM objectives p WHERE p.id = o.parent_objective_id AND {parent})
ORDER BY o.seq LIMIT ?
"""


def qualified(condition, alias):
    """cycle_condition's condition on the objectives named alias."""
    return re.sub(r"\b(cycle_id|team_id|assignee_id)\b", alias + r".\1", condition)


def top_objectives(db, cycle_id, after, count, team_id=None, assignee_id=None):
    """(seq, id) of the first `count` top objectives of a cycle report after the seq `after`, in creation order:
    one walk of the cycle's objectives, each probing its parent."""
    kept, params = cycle_condition(cycle_id, team_id, assignee_id)
    mine, parent = qualified(kept, "o"), qualified(kept, "p")
    cursor = db.cursor()
    cursor.row_factory = None
    return cursor.execute(TOP_OBJECTIVES.format(kept=mine, parent=parent),
                          [*params, after, *params, count]).fetchall()


def top_objectives_before(db, cycle_id, before, count, team_id=None, assignee_id=None):
    """The seqs of up to `count` top objectives of a cycle report before the seq `before`, newest first: where
    the page before one starts."""
    kept, params = cycle_condition(cycle_id, team_id, assignee_id)
    mine, parent = qualified(kept, "o"), qualified(kept, "p")
    sql = TOP_OBJECTIVES.replace("o.seq > ?", "o.seq < ?").replace("ORDER BY o.seq", "ORDER BY o.seq DESC")
    return [row[0] for row in db.execute(sql.format(kept=mine, parent=parent), [*params, before, *params, count])]


def subtree_rows(db, cycle_id, top_ids, team_id=None, assignee_id=None):
    """The objectives of a cycle report at and below these top objectives (aligned children kept by the same
    condition), and their key results with their history: two lists of dicts in creation order."""
    kept, params = cycle_condition(cycle_id, team_id, assignee_id)
    tree = (f"WITH RECURSIVE tree(id) AS (SELECT value FROM json_each(?) UNION "
            f"SELECT o.id FROM objectives o JOIN tree t ON o.parent_objective_id = t.id WHERE {kept}) ")
    ids = json.dumps(list(top_ids))
    objectives = dict_rows(db, tree + "SELECT * FROM objectives WHERE id IN tree ORDER BY seq", [ids, *params])
    key_results = dict_rows(db, tree + KEY_RESULTS_WITH_HISTORY.format(where="k.objective_id IN tree"),
                            [ids, *params])
    return objectives, key_results


def objectives_rows(db, objective_ids):
    """These objectives and their key results with their history: two lists of dicts in creation order."""
    ids = json.dumps(list(objective_ids))
    chosen = "SELECT value FROM json_each(?)"
    return (dict_rows(db, f"SELECT * FROM objectives WHERE id IN ({chosen}) ORDER BY seq", [ids]),
            dict_rows(db, KEY_RESULTS_WITH_HISTORY.format(where=f"k.objective_id IN ({chosen})"), [ids]))


def recent_checkins(db, key_result_ids, count):
    """{key result id: [(created_at, value)] of its last `count` check-ins, oldest first} for these key results,
    in one query (as recent_values, with each check-in's time)."""
    cursor = db.cursor()
    cursor.row_factory = None
    cursor.execute(
        """SELECT k.id, (SELECT group_concat(created_at || ' ' || value, ' ') FROM (
                            SELECT c.created_at, c.value FROM checkins c WHERE c.key_result_seq = k.seq
                            ORDER BY c.seq DESC LIMIT ?))
           FROM key_results k WHERE k.id IN (SELECT value FROM json_each(?))""",
        (count, json.dumps(list(key_result_ids))),
    )
    found = {}
    for key_result_id, joined in cursor:
        if joined is not None:
            parts = joined.split(" ")
            found[key_result_id] = list(zip(parts[0::2], parts[1::2]))[::-1]
    return found


# A retrospective's reads (okr.reports.retrospective): a cycle's kept objectives and key results as they are, every
# check-in of those key results up to the close in one walk (key result by key result, oldest first), the names the
# pages show, and the objectives carried over from the kept ones into any cycle.
# Each key result with its history up to the close, joined into one string of "confidence value created_at"
# triples, oldest first (the join follows the ORDER BY subquery it reads, as recent_values relies on): Python
# gets 4,000 rows for 40,000 check-ins, which costs a third of reading them as rows. Without confidences (a
# retrospective's own read: only the calibration needs them all), "value created_at" pairs from the index alone,
# and the last confidence up to the close (confidence_then).
KEY_RESULTS_WITH_CHECKINS = """
SELECT k.*, (SELECT group_concat(confidence || ' ' || value || ' ' || created_at, ' ') FROM (
                 SELECT c.confidence, c.value, c.created_at FROM checkins c
                 WHERE c.key_result_seq = k.seq AND c.created_at <= :stamp ORDER BY c.seq)) AS history,
    """ + INITIATIVE_COUNTS + """
FROM key_results k
WHERE {where}
ORDER BY k.seq
"""
KEY_RESULTS_WITH_VALUES = """
SELECT k.*, (SELECT group_concat(value || ' ' || created_at, ' ') FROM (
                 SELECT c.value, c.created_at FROM checkins c
                 WHERE c.key_result_seq = k.seq AND c.created_at <= :stamp ORDER BY c.seq)) AS history,
    CASE WHEN (SELECT c.created_at FROM checkins c WHERE c.key_result_seq = k.seq ORDER BY c.seq DESC LIMIT 1)
              <= :stamp THEN k.confidence  -- its latest check-in's, read from the index alone
         ELSE (SELECT c.confidence FROM checkins c WHERE c.key_result_seq = k.seq AND c.created_at <= :stamp
               ORDER BY c.seq DESC LIMIT 1) END AS confidence_then,
    """ + INITIATIVE_COUNTS + """
FROM key_results k
WHERE {where}
ORDER BY k.seq
"""

CARRIED_COPIES = """
SELECT o.id, o.name, o.cycle_id, c.name AS cycle_name, o.carried_from_id
FROM objectives o JOIN cycles c ON c.id = o.cycle_id
WHERE o.carried_from_id IN (SELECT id FROM objectives WHERE {kept})
ORDER BY o.seq
"""


def retrospective_rows(db, cycle_id, stamp, team_id=None, confidences=True):
    """A retrospective's rows, each a list of dicts in creation order: the cycle's objectives (of one team when
    given); their key results, each with its check-ins made up to stamp (a UTC timestamp as stored) as history,
    "confidence value created_at" triples oldest first, space-separated (None without any; without confidences,
    "value created_at" pairs and the last confidence as confidence_then); and the objectives of any cycle carried
    over from the kept ones (with their cycle's name)."""
    kept, params = cycle_condition(cycle_id, team_id)
    where, key_params = "k.cycle_id = :cycle", {"cycle": cycle_id, "stamp": stamp}
    if team_id is not None:
        where += " AND k.objective_id IN (SELECT id FROM objectives WHERE cycle_id = :cycle AND team_id = :team)"
        key_params["team"] = team_id
    objectives = dict_rows(db, f"SELECT * FROM objectives WHERE {kept} ORDER BY seq", params)
    query = KEY_RESULTS_WITH_CHECKINS if confidences else KEY_RESULTS_WITH_VALUES
    key_results = dict_rows(db, query.format(where=where), key_params)
    copies = dict_rows(db, CARRIED_COPIES.format(kept=kept), params)
    return objectives, key_results, copies


def checkin_confidences(db, key_result_seqs, stamp):
    """{key result seq: the confidences of its check-ins up to stamp, oldest first, space-separated} for these key
    results, in one query."""
    cursor = db.cursor()
    cursor.row_factory = None
    cursor.execute(
        """SELECT k.value, (SELECT group_concat(confidence, ' ') FROM (
                               SELECT c.confidence FROM checkins c WHERE c.key_result_seq = k.value
                               AND c.created_at <= ? ORDER BY c.seq))
           FROM json_each(?) k""", (stamp, json.dumps(list(key_result_seqs))))
    return dict(cursor.fetchall())


def first_checkin_at(db, cycle_id):
    """When the first check-in of a cycle's key results was made (the earliest of their starting check-ins, one
    probe of the index each), or None."""
    return db.execute("SELECT min((SELECT c.created_at FROM checkins c WHERE c.key_result_seq = k.seq "
                      "ORDER BY c.seq LIMIT 1)) FROM key_results k WHERE k.cycle_id = ?", (cycle_id,)).fetchone()[0]


def names_in_cycle(db, cycle_id):
    """{user id: name} of the owners of a cycle's key results, and {team id: name} of every team."""
    cursor = db.cursor()
    cursor.row_factory = None
    owners = dict(cursor.execute("SELECT id, name FROM users WHERE id IN "
                                 "(SELECT owner_id FROM key_results WHERE cycle_id = ?)", (cycle_id,)))
    return owners, dict(cursor.execute("SELECT id, name FROM teams"))
