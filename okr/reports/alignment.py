"""Reports: a cycle's or an objective's alignment tree, with the progress and status of everything in it.

Built from a fixed number of queries (okr.store.reports) whatever the size (no query per row), with every
figure from okr.progress. Knows neither SQL nor Flask: the API, the dashboard and the exports all call it
with an open connection.
"""
from datetime import timezone

from .. import progress
from ..records import cycle_details_json, key_result_details_json, objective_details_json
from ..store import cycles as stored_cycles
from ..store import reports as report_rows
from ..store import visibility


def cycle_report(db, cycle, now, team_id=None, assignee_id=None):
    """The report of a cycle row, optionally of the objectives of one team and/or assignee.

    now is an aware datetime, for staleness and the cycle's state. A finished cycle's key results are never stale.
    """
    objectives, key_results = report_rows.cycle_rows(db, cycle["id"], team_id, assignee_id)
    return cycle_tree(cycle, now, objectives, key_results, visibility.hidden_around(db, cycle["id"]))


def cycle_report_as_of(db, cycle, as_of, team_id=None):
    """cycle_report as it would have been at as_of (an aware datetime), from the check-ins made by then: the
    objectives and key results that existed then, each key result at its last value and confidence by then.
    Every figure by the same rules; "this week against last" compares it with cycle_report."""
    stamp = as_of.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    objectives, key_results = report_rows.cycle_rows_as_of(db, cycle["id"], stamp, team_id)
    for row in key_results:
        if row["value_then"] is not None:  # else a row written behind the API's back: today's values
            row["current_value"], row["confidence"] = row["value_then"], row["confidence_then"]
    return cycle_tree(cycle, as_of, objectives, key_results, visibility.hidden_around(db, cycle["id"]))


def cycle_tree(cycle, moment, objectives, key_results, hidden=frozenset()):
    """A cycle's report from its rows, as at moment (an aware datetime): a finished cycle's key results are
    never stale. Its progress counts every objective; its tree, counts and statuses leave out those hidden (ids)."""
    shown = cycle_details_json(cycle, moment.date())
    stale = never_stale if shown["state"] == "finished" else stale_by_time(moment)
    pace = pace_test([cycle], moment.date())
    roots, exact_by_objective, statuses = alignment_tree(objectives, key_results, stale, pace, hidden=hidden)
    counts = progress.status_counts(statuses)
    hidden_count = sum(row["id"] in hidden for row in objectives) if hidden else 0
    return {
        "cycle": cycle_with_pace(shown, cycle, moment.date(), counts),
        "progress": progress.mean_figure(exact_by_objective),
        "objectives_count": len(objectives) - hidden_count,
        "key_results_count": len(statuses),
        "hidden_objectives_count": hidden_count,
        "objectives": roots,
    }


def current_cycles(db, today):
    """The cycle rows whose state is "current" today and that are open (a closed one takes no check-ins: Your
    week and the weekly emails leave it out), newest first.

    okr.store.cycles.around narrows them by their dates; okr.progress.cycle_state decides.
    """
    return [row for row in stored_cycles.around(db, today)
            if progress.cycle_state(row["starts_on"], row["ends_on"], today) == "current" and row["closed_at"] is None]


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
    objectives, key_results = report_rows.objective_tree(db, objective_id)
    if not objectives:
        return None
    hidden = visibility.hidden_ids(db)
    roots, _, _ = alignment_tree(objectives, key_results, stale_test(db, now), pace_in_any_cycle(db, now),
                                 root_id=objective_id, hidden=hidden)
    return {"objective": roots[0], "hidden_objectives_count": sum(row["id"] in hidden for row in objectives[1:])}


def key_result_report(db, key_result_id, now):
    """One key result's report entry (as in a cycle report), or None if it is missing."""
    row = report_rows.key_result_with_history(db, key_result_id)
    return None if row is None else key_result_node(row, stale_test(db, now), pace_in_any_cycle(db, now))[0]


def never_stale(row):
    return False


def stale_by_time(now):
    by_time = progress.stale_test(now)
    return lambda row: by_time(row["last_checkin_at"])


def stale_test(db, now):
    """A key-result row's staleness, for key results of any cycle: never in a finished cycle."""
    finished = stored_cycles.finished_ids(db, now.date())
    by_time = progress.stale_test(now)
    return lambda row: row["cycle_id"] not in finished and by_time(row["last_checkin_at"])


def cycle_with_pace(shown, cycle, today, counts):
    """A report's cycle: its details (shown), how much of it has gone by on today (elapsed, two decimals; None
    without both dates) and how many of the report's key results have each status (counts)."""
    elapsed = progress.elapsed(cycle["starts_on"], cycle["ends_on"], today)
    return {**shown, "elapsed": progress.figure(elapsed), "status_counts": counts}


def pace_test(cycles, today):
    """For a key-result row of one of these cycles (rows with id, starts_on, ends_on), on today (a date): its
    expected progress (the cycle's elapsed fraction, None without both dates) and whether its cycle has ended."""
    timing = {cycle["id"]: (progress.elapsed(cycle["starts_on"], cycle["ends_on"], today),
                            progress.cycle_state(cycle["starts_on"], cycle["ends_on"], today) == "finished")
              for cycle in cycles}
    return lambda row: timing.get(row["cycle_id"], (None, False))


def pace_in_any_cycle(db, now):
    """pace_test for key results of any cycle, at now (an aware datetime)."""
    return pace_test(stored_cycles.dates(db), now.date())


def alignment_tree(objectives, key_results, stale, pace, root_id=None, hidden=frozenset()):
    """The objectives' nodes as a forest, each objective's exact progress, and the status of every key result the
    viewer sees.

    objectives and key_results come in creation order. An objective whose
    parent is not among them is a root; the others go in their parent's children.
    stale tells whether a key-result row is stale; pace gives its expected progress (pace_test). root_id, when given, is a root
    whatever its parent (an objective report's top, even in a loop written behind the API's back).
    The objectives whose ids are in hidden count in every figure but are left out of the forest (pruned).
    """
    nodes, exact_of, weights_of, statuses = {}, {}, {}, []
    for row in objectives:
        nodes[row["id"]] = {**objective_details_json(visibility.shown_among(row, hidden)), "progress": None,
                            "progress_from": None, "status": None, "key_results": [], "children": []}
        exact_of[row["id"]], weights_of[row["id"]] = [], []
    for row in key_results:
        node, exact = key_result_node(row, stale, pace)
        if row["objective_id"] not in hidden:
            statuses.append(node["status"])
        nodes[row["objective_id"]]["key_results"].append(node)
        exact_of[row["objective_id"]].append(exact)
        weights_of[row["objective_id"]].append(row["weight"])
    roots = []
    for row in objectives:
        node = nodes[row["id"]]
        exact_of[row["id"]] = progress.mean(exact_of[row["id"]], weights_of[row["id"]])
        parent = None if row["id"] == root_id else nodes.get(row["parent_objective_id"])
        (parent["children"] if parent is not None else roots).append(node)
    roll_up(roots, exact_of)
    return pruned(roots, hidden) if hidden else roots, list(exact_of.values()), statuses


def pruned(roots, hidden):
    """The forest without the nodes whose ids are in hidden: a hidden node's children take its place, under its
    nearest ancestor the viewer sees (or as roots), their figures as they were."""
    kept, stack = [], [(roots, None)]
    while stack:
        nodes, into = stack.pop()
        for node in nodes:
            if node["id"] in hidden:
                stack.append((node["children"], into))
                continue
            children, node["children"] = node["children"], []
            (kept if into is None else into).append(node)
            stack.append((children, node["children"]))
    return kept


def roll_up(roots, exact_of):
    """Gives each objective without key results of its own its aligned children's progress (okr.progress.rolled_up),
    and each objective its status (okr.progress.objective_status), children first; exact_of keeps each objective's
    own progress."""
    order, stack = [], list(roots)
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node["children"])
    rolled = {}
    for node in reversed(order):  # every child before its parent
        kin = [child for child in node["children"] if child["cycle_id"] == node["cycle_id"]]
        value, source = progress.rolled_up(exact_of[node["id"]], bool(node["key_results"]),
                                           [rolled[child["id"]] for child in kin])
        rolled[node["id"]] = value
        node["progress"], node["progress_from"] = progress.figure(value), source
        node["status"] = progress.objective_status((k["status"] for k in node["key_results"]),
                                                   (child["status"] for child in kin))


def key_result_node(row, stale, pace):
    """A key result's report entry, and its exact progress (None for a baseline).

    stale tells whether the row (with its last_checkin_at and cycle_id) is stale; pace gives its expected progress
    and whether its cycle has ended (pace_test)."""
    kind = judged_kind(row)
    exact = key_result_exact(row)
    expected, ended = pace(row)
    # Initiatives are its updates too when they make its progress: it has had one once it has any.
    updated = row["updated"] or (row["progress_from"] == "initiatives" and row["initiatives_count"] > 0)
    return {
        **key_result_details_json(row),
        "start_value": row["start_value"],
        "progress": progress.figure(exact),
        "status": progress.key_result_status(row["confidence"], updated, kind, exact, expected, ended),
        "stale": stale(row),
        "last_checkin_at": row["last_checkin_at"],
        "expected_progress": progress.figure(expected),
        "pace_status": progress.pace_status(kind, exact, expected),
        "initiatives_count": row["initiatives_count"],
        "initiatives_done": row["initiatives_done"],
    }, exact


def judged_kind(row):
    """The kind the status rules judge a key result row by: its type, or "initiatives" (okr.progress's kind for the
    share of them done, which they judge as any kind but a range) when its progress is its initiatives'."""
    return row["type"] if row["progress_from"] == "measure" else "initiatives"


def key_result_exact(row):
    """A key result row's exact progress (okr.progress): its measure's, or the share of its initiatives done
    (the row's initiatives_done and initiatives_count) when its progress_from says so; as of the row's values."""
    if row["progress_from"] == "initiatives":
        return progress.initiatives_progress(row["initiatives_done"], row["initiatives_count"])
    return progress.key_result_progress(
        row["type"], row["start_value"], row["current_value"], row["target_value_min"], row["target_value_max"])
