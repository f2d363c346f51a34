"""Reports: GET /v1/cycles/:id/report and GET /v1/objectives/:id/report (issue 11).

Progress per key-result type from its first check-in (the start) to its present value, the
objective and cycle means, rounding at the final figure only, the alignment tree, the filters,
status and staleness, and a fixed number of SQL statements per report whatever its size.
"""
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone

import pytest

from helpers import (
    KEY_RESULT_FIELDS,
    OBJECTIVE_FIELDS,
    assert_error,
    fetch,
    make_cycle,
    make_key_result,
    make_objective,
    make_team,
    make_user,
    statements_of,
)
from okr.store.reports import recent_values

UNKNOWN = "0b0e7f4a-3c1d-4e2f-8a9b-0c1d2e3f4a5b"
KR_EXTRAS = ["owner_id", "unit", "unit_position", "score", "weight", "progress_from", "start_value", "progress", "status", "stale", "last_checkin_at",
             "expected_progress", "pace_status", "initiatives_count", "initiatives_done"]
OBJECTIVE_EXTRAS = ["outcome", "score", "reflection", "carried_from_id", "visibility", "progress", "progress_from", "status", "key_results", "children"]
CYCLE_EXTRAS = {"starts_on": None, "ends_on": None, "state": "current", "closed_at": None, "closed_by": None}
NO_STATUSES = {"off_track": 0, "at_risk": 0, "no_update": 0, "on_track": 0, "done": 0}
# What a report's cycle adds to the cycle's own fields: an undated cycle has no elapsed fraction.
REPORT_CYCLE_EXTRAS = {**CYCLE_EXTRAS, "elapsed": None}


# --- helpers --------------------------------------------------------------------------------


def at(text, **delta):
    """An RFC 3339 timestamp delta away from text."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00")) + timedelta(**delta)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def checkin(client, key_result_id, value, **body):
    response = client.post(f"/v1/keyresults/{key_result_id}/checkins", json={"value": value, **body})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def cycle_report(client, cycle_id, **query):
    response = client.get(f"/v1/cycles/{cycle_id}/report", query_string=query)
    assert response.status_code == 200, response.get_json()
    assert response.mimetype == "application/json"
    return response.get_json()


def objective_report(client, objective_id):
    response = client.get(f"/v1/objectives/{objective_id}/report")
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert list(body) == ["objective", "hidden_objectives_count"] and body["hidden_objectives_count"] == 0
    return body["objective"]


def walk(nodes):
    """Every objective node of a tree, depth first."""
    for node in nodes:
        yield node
        yield from walk(node["children"])


def node_of(report, objective_id):
    return next(node for node in walk(report["objectives"]) if node["id"] == objective_id)


def kr_node(report, key_result_id):
    return next(kr for node in walk(report["objectives"]) for kr in node["key_results"]
                if kr["id"] == key_result_id)


def shape(nodes):
    """The tree as (name, [children]) pairs."""
    return [(node["name"], shape(node["children"])) for node in nodes]


def one_key_result_progress(client, objective_id, kind, start, values, low=None, high=None):
    """The reported progress of a new key result of kind started at start, then checked in at values."""
    kr = make_key_result(client, objective_id, kind, type=kind, current_value=start,
                         target_value_min=low, target_value_max=high)
    for value in values:
        checkin(client, kr["id"], value)
    report = cycle_report(client, fetch(client, f"/v1/objectives/{objective_id}")["cycle_id"])
    return kr_node(report, kr["id"])["progress"]


# --- progress of each type ------------------------------------------------------------------


@pytest.mark.parametrize("kind, low, high, start, values, expected", [
    # positive: (current - start) / (target - start), clamped
    ("positive", "100", None, "0", ["50"], "0.50"),
    ("positive", "100", None, "50", ["75"], "0.50"),            # from the start, not from 0
    ("positive", "100", None, "0", ["150"], "1.00"),            # clamped above
    ("positive", "100", None, "0", ["-10"], "0.00"),            # clamped below
    ("positive", "100", None, "20", ["90", "40"], "0.25"),      # the latest value counts: 20/80
    ("positive", "100", None, "0", [], "0.00"),                 # only the first check-in
    ("positive", "100", None, "100", [], "1.00"),               # start == target, reached
    ("positive", "100", None, "100", ["99"], "0.00"),           # start == target, not reached
    ("positive", "100", None, "100", ["101"], "1.00"),          # start == target, beyond
    # negative: (start - current) / (start - target), clamped
    ("negative", "40", None, "100", ["70"], "0.50"),
    ("negative", "40", None, "100", ["85"], "0.25"),
    ("negative", "40", None, "100", ["20"], "1.00"),            # clamped above
    ("negative", "40", None, "100", ["130"], "0.00"),           # clamped below
    ("negative", "40", None, "40", [], "1.00"),                 # start == target, reached
    ("negative", "40", None, "40", ["41"], "0.00"),             # start == target, not reached
    ("negative", "40", None, "40", ["39"], "1.00"),             # start == target, beyond
    # range: 1 inside [min, max], else 0
    ("range", "10", "20", "0", ["10"], "1.00"),
    ("range", "10", "20", "0", ["15"], "1.00"),
    ("range", "10", "20", "0", ["20"], "1.00"),
    ("range", "10", "20", "0", ["9.99"], "0.00"),
    ("range", "10", "20", "0", ["20.01"], "0.00"),
    ("range", "10", "20", "15", ["25"], "0.00"),
    # milestone: 1 once current >= 1
    ("milestone", "1", None, "0", [], "0.00"),
    ("milestone", "1", None, "0", ["0.99"], "0.00"),
    ("milestone", "1", None, "0", ["1"], "1.00"),
    ("milestone", "1", None, "0", ["3"], "1.00"),
    ("milestone", "1", None, "1", ["0"], "0.00"),
    # baseline: no progress
    ("baseline", None, None, "0", ["42"], None),
])
def test_key_result_progress_by_type(client, objective, kind, low, high, start, values, expected):
    assert one_key_result_progress(client, objective["id"], kind, start, values, low, high) == expected


def test_start_is_the_first_checkin_even_after_a_patch_of_current_value(client, objective):
    kr = make_key_result(client, objective["id"], current_value="20", target_value_min="100")
    response = client.patch(f"/v1/keyresults/{kr['id']}", json={"current_value": "60"})
    assert response.status_code == 200, response.get_json()
    node = kr_node(cycle_report(client, objective["cycle_id"]), kr["id"])
    assert node["start_value"] == "20.00"
    assert node["progress"] == "0.50"  # (60 - 20) / (100 - 20), not 60 / 100


def test_start_value_is_the_first_checkins_value(client, objective):
    kr = make_key_result(client, objective["id"], current_value="7.5", target_value_min="100")
    for value in ("10", "30", "55"):
        checkin(client, kr["id"], value)
    node = kr_node(cycle_report(client, objective["cycle_id"]), kr["id"])
    assert node["start_value"] == "7.50"
    assert node["current_value"] == "55.00"


# --- means --------------------------------------------------------------------------------


def add_kr(client, objective_id, name, start, current, target, kind="positive"):
    kr = make_key_result(client, objective_id, name, type=kind, current_value=start, target_value_min=target)
    if current != start:
        checkin(client, kr["id"], current)
    return kr


def test_objective_progress_is_the_plain_mean_of_its_key_results(client, cycle, objective):
    add_kr(client, objective["id"], "a", "0", "100", "100")   # 1
    add_kr(client, objective["id"], "b", "0", "0", "100")     # 0
    add_kr(client, objective["id"], "c", "0", "40", "80")     # 0.5
    add_kr(client, objective["id"], "d", "0", "20", "80")     # 0.25
    report = cycle_report(client, cycle["id"])
    assert node_of(report, objective["id"])["progress"] == "0.44"  # 1.75 / 4 = 0.4375


def test_baseline_is_left_out_of_the_objective_mean(client, cycle, objective):
    add_kr(client, objective["id"], "half", "0", "50", "100")
    base = make_key_result(client, objective["id"], "base", type="baseline", target_value_min=None)
    checkin(client, base["id"], "999")
    report = cycle_report(client, cycle["id"])
    assert kr_node(report, base["id"])["progress"] is None
    assert node_of(report, objective["id"])["progress"] == "0.50"  # not 0.25


def test_baseline_only_objective_has_null_progress_and_is_left_out_of_the_cycle_mean(client, cycle):
    only_base = make_objective(client, cycle["id"], "baseline only")
    make_key_result(client, only_base["id"], "base", type="baseline", target_value_min=None)
    full = make_objective(client, cycle["id"], "full")
    add_kr(client, full["id"], "done", "0", "100", "100")
    report = cycle_report(client, cycle["id"])
    assert node_of(report, only_base["id"])["progress"] is None
    assert report["progress"] == "1.00"  # not 0.50


def test_objective_without_key_results_has_null_progress_and_is_left_out(client, cycle):
    empty = make_objective(client, cycle["id"], "empty")
    other = make_objective(client, cycle["id"], "other")
    add_kr(client, other["id"], "quarter", "0", "25", "100")
    report = cycle_report(client, cycle["id"])
    assert node_of(report, empty["id"])["progress"] is None
    assert node_of(report, empty["id"])["key_results"] == []
    assert report["progress"] == "0.25"


def test_cycle_progress_is_the_mean_over_all_its_objectives_not_only_roots(client, cycle):
    root = make_objective(client, cycle["id"], "root")
    child = make_objective(client, cycle["id"], "child", parent_objective_id=root["id"])
    grandchild = make_objective(client, cycle["id"], "grandchild", parent_objective_id=child["id"])
    add_kr(client, root["id"], "r", "0", "100", "100")        # 1
    add_kr(client, child["id"], "c", "0", "0", "100")         # 0
    add_kr(client, grandchild["id"], "g1", "0", "100", "100")  # grandchild: (1 + 0) / 2
    add_kr(client, grandchild["id"], "g2", "0", "0", "100")
    report = cycle_report(client, cycle["id"])
    # an objective's progress is its own key results', never its children's
    assert node_of(report, root["id"])["progress"] == "1.00"
    assert node_of(report, child["id"])["progress"] == "0.00"
    assert node_of(report, grandchild["id"])["progress"] == "0.50"
    # (1 + 0 + 0.5) / 3 over objectives, not (1 + 0 + 1 + 0) / 4 over key results
    assert report["progress"] == "0.50"


def test_cycle_mean_weighs_objectives_not_key_results(client, cycle):
    a = make_objective(client, cycle["id"], "a")
    b = make_objective(client, cycle["id"], "b")
    add_kr(client, a["id"], "a1", "0", "100", "100")
    for name in ("b1", "b2", "b3"):
        add_kr(client, b["id"], name, "0", "0", "100")
    # objectives: (1 + 0) / 2; key results would give 1 / 4
    assert cycle_report(client, cycle["id"])["progress"] == "0.50"


def test_empty_cycle_report(client, cycle):
    report = cycle_report(client, cycle["id"])
    assert report == {"cycle": {**cycle, **REPORT_CYCLE_EXTRAS, "status_counts": NO_STATUSES}, "progress": None, "objectives_count": 0,
                      "key_results_count": 0, "hidden_objectives_count": 0, "objectives": []}


def test_cycle_of_objectives_without_progress_has_null_progress(client, cycle):
    bare = make_objective(client, cycle["id"], "bare")
    base = make_objective(client, cycle["id"], "base")
    make_key_result(client, base["id"], "b", type="baseline", target_value_min=None)
    report = cycle_report(client, cycle["id"])
    assert report["progress"] is None
    assert report["objectives_count"] == 2
    assert report["key_results_count"] == 1
    assert node_of(report, bare["id"])["progress"] is None


# --- rounding -------------------------------------------------------------------------------


@pytest.mark.parametrize("current, target, expected", [
    ("1", "3", "0.33"),
    ("2", "3", "0.67"),
    ("1", "8", "0.12"),      # 0.125: half to even, not up
    ("3", "8", "0.38"),      # 0.375
    ("5", "8", "0.62"),      # 0.625
    ("7", "8", "0.88"),      # 0.875
    ("15", "1000", "0.02"),  # 0.015 exactly; as a binary float it is below and would give 0.01
    ("5", "1000", "0.00"),   # 0.005
])
def test_key_result_figure_is_rounded_half_to_even(client, cycle, objective, current, target, expected):
    kr = add_kr(client, objective["id"], "kr", "0", current, target)
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["progress"] == expected


def test_three_thirds_make_a_third(client, cycle, objective):
    for name in ("a", "b", "c"):
        add_kr(client, objective["id"], name, "0", "1", "3")
    report = cycle_report(client, cycle["id"])
    assert node_of(report, objective["id"])["progress"] == "0.33"
    assert report["progress"] == "0.33"


def test_objective_mean_is_rounded_once_at_the_end(client, cycle, objective):
    # exact: (1/3 + 1/3 + 1) / 3 = 5/9 = 0.5555... -> 0.56; rounding each first: 1.66 / 3 -> 0.55
    add_kr(client, objective["id"], "third", "0", "1", "3")
    add_kr(client, objective["id"], "third again", "0", "1", "3")
    add_kr(client, objective["id"], "whole", "0", "3", "3")
    report = cycle_report(client, cycle["id"])
    assert node_of(report, objective["id"])["progress"] == "0.56"
    assert objective_report(client, objective["id"])["progress"] == "0.56"


def test_objective_mean_of_a_half_cent_rounds_to_even_exactly(client, cycle, objective):
    # (0.01 + 0.02) / 2 = 0.015 exactly -> 0.02; in binary floats it is 0.01499... -> 0.01
    add_kr(client, objective["id"], "one", "0", "1", "100")
    add_kr(client, objective["id"], "two", "0", "2", "100")
    assert node_of(cycle_report(client, cycle["id"]), objective["id"])["progress"] == "0.02"


def test_objective_mean_exactly_half_rounds_to_even(client, cycle, objective):
    add_kr(client, objective["id"], "none", "0", "0", "100")
    add_kr(client, objective["id"], "quarter", "0", "25", "100")
    # 0.125 -> 0.12 (half up would give 0.13)
    assert node_of(cycle_report(client, cycle["id"]), objective["id"])["progress"] == "0.12"


def test_cycle_mean_uses_exact_objective_progress(client, cycle):
    # objectives 1/3, 1/3 and 1: exact 5/9 -> 0.56; from the shown 0.33, 0.33, 1.00 -> 0.55
    for name, current in (("a", "1"), ("b", "1"), ("c", "3")):
        objective = make_objective(client, cycle["id"], name)
        add_kr(client, objective["id"], name, "0", current, "3")
    report = cycle_report(client, cycle["id"])
    assert [node["progress"] for node in report["objectives"]] == ["0.33", "0.33", "1.00"]
    assert report["progress"] == "0.56"


def test_cycle_mean_uses_exact_means_of_key_results(client, cycle):
    # objective a: (1/3 + 1/3 + 1) / 3 = 5/9 (shown 0.56), b: 1/9 (shown 0.11).
    # exact: (5/9 + 1/9) / 2 = 1/3 -> 0.33; from the shown figures (0.56 + 0.11) / 2 = 0.335 -> 0.34
    a = make_objective(client, cycle["id"], "a")
    for name, current in (("a1", "1"), ("a2", "1"), ("a3", "3")):
        add_kr(client, a["id"], name, "0", current, "3")
    b = make_objective(client, cycle["id"], "b")
    add_kr(client, b["id"], "b1", "0", "1", "9")
    report = cycle_report(client, cycle["id"])
    assert [node["progress"] for node in report["objectives"]] == ["0.56", "0.11"]
    assert report["progress"] == "0.33"


# --- shape ----------------------------------------------------------------------------------


def test_report_fields_in_order(client, runner, cycle):
    team = make_team(client, "Red")
    ada = make_user(runner)
    objective = make_objective(client, cycle["id"], "Grow", description="More", team_id=team["id"],
                               assignee_id=ada["id"], is_company=True)
    kr = make_key_result(client, objective["id"], "Reach", confidence="0.8", current_value="10",
                         target_value_min="110")
    response = client.get(f"/v1/cycles/{cycle['id']}/report")
    assert response.status_code == 200
    report = response.get_json()
    assert list(report) == ["cycle", "progress", "objectives_count", "key_results_count", "hidden_objectives_count",
                            "objectives"]
    assert report["cycle"] == {**fetch(client, f"/v1/cycles/{cycle['id']}"), **REPORT_CYCLE_EXTRAS,
                               "status_counts": {**NO_STATUSES, "no_update": 1}}
    assert list(report["cycle"]) == ["id", "name", "created_at", "starts_on", "ends_on", "state", "closed_at",
                                     "closed_by", "elapsed", "status_counts"]
    [node] = report["objectives"]
    stored = fetch(client, f"/v1/objectives/{objective['id']}")
    assert set(stored) == OBJECTIVE_FIELDS
    assert list(node) == list(stored) + OBJECTIVE_EXTRAS
    assert {key: node[key] for key in stored} == stored
    assert node["children"] == []
    [kr_json] = node["key_results"]
    stored_kr = fetch(client, f"/v1/keyresults/{kr['id']}")
    assert set(stored_kr) == KEY_RESULT_FIELDS
    assert list(kr_json) == list(stored_kr) + KR_EXTRAS
    assert {key: kr_json[key] for key in stored_kr} == stored_kr
    assert kr_json["start_value"] == "10.00"
    assert kr_json["progress"] == "0.00"
    assert kr_json["status"] == "no_update"  # no check-in since it was made
    assert kr_json["stale"] is False
    assert kr_json["last_checkin_at"] == stored_kr["created_at"]
    assert node["progress"] == "0.00"
    assert report["progress"] == "0.00"
    assert (report["objectives_count"], report["key_results_count"]) == (1, 1)


def test_objective_report_node_is_the_cycle_reports_node(client, cycle):
    parent = make_objective(client, cycle["id"], "parent")
    child = make_objective(client, cycle["id"], "child", parent_objective_id=parent["id"])
    add_kr(client, parent["id"], "p", "0", "30", "100")
    add_kr(client, child["id"], "c", "10", "30", "50")
    make_key_result(client, child["id"], "b", type="baseline", target_value_min=None)
    report = cycle_report(client, cycle["id"])
    assert objective_report(client, parent["id"]) == node_of(report, parent["id"])
    assert objective_report(client, child["id"]) == node_of(report, child["id"])


def test_key_results_in_creation_order(client, cycle, objective):
    names = ["zulu", "alpha", "mike", "bravo"]
    for name in names:
        make_key_result(client, objective["id"], name)
    node = node_of(cycle_report(client, cycle["id"]), objective["id"])
    assert [kr["name"] for kr in node["key_results"]] == names
    assert [kr["name"] for kr in objective_report(client, objective["id"])["key_results"]] == names


def test_counts_cover_every_objective_and_key_result_of_the_cycle(client, cycle):
    other = make_cycle(client, "Q2")
    root = make_objective(client, cycle["id"], "root")
    child = make_objective(client, cycle["id"], "child", parent_objective_id=root["id"])
    make_objective(client, cycle["id"], "bare")
    elsewhere = make_objective(client, other["id"], "elsewhere", parent_objective_id=child["id"])
    for objective_id, n in ((root["id"], 2), (child["id"], 3), (elsewhere["id"], 4)):
        for i in range(n):
            make_key_result(client, objective_id, f"kr{i}")
    make_key_result(client, child["id"], "base", type="baseline", target_value_min=None)
    report = cycle_report(client, cycle["id"])
    assert report["objectives_count"] == 3
    assert report["key_results_count"] == 6  # baselines count
    assert len(list(walk(report["objectives"]))) == 3
    other_report = cycle_report(client, other["id"])
    assert (other_report["objectives_count"], other_report["key_results_count"]) == (1, 4)


# --- the tree -------------------------------------------------------------------------------


def test_tree_roots_and_children_in_creation_order(client, cycle):
    c = cycle["id"]
    zeta = make_objective(client, c, "zeta")
    alpha = make_objective(client, c, "alpha")
    z2 = make_objective(client, c, "z-second", parent_objective_id=zeta["id"])
    make_objective(client, c, "z-first", parent_objective_id=zeta["id"])
    make_objective(client, c, "z-third", parent_objective_id=zeta["id"])
    make_objective(client, c, "a-only", parent_objective_id=alpha["id"])
    make_objective(client, c, "deep", parent_objective_id=z2["id"])
    make_objective(client, c, "middle")
    report = cycle_report(client, c)
    assert shape(report["objectives"]) == [
        ("zeta", [("z-second", [("deep", [])]), ("z-first", []), ("z-third", [])]),
        ("alpha", [("a-only", [])]),
        ("middle", []),
    ]
    assert report["objectives_count"] == 8


def test_child_created_before_its_parent_sits_under_it(client, cycle):
    c = cycle["id"]
    early = make_objective(client, c, "early child")
    make_objective(client, c, "sibling")
    late = make_objective(client, c, "late parent")
    response = client.patch(f"/v1/objectives/{early['id']}", json={"parent_objective_id": late["id"]})
    assert response.status_code == 200, response.get_json()
    report = cycle_report(client, c)
    assert shape(report["objectives"]) == [("sibling", []), ("late parent", [("early child", [])])]
    assert shape([objective_report(client, late["id"])]) == [("late parent", [("early child", [])])]


def test_children_keep_creation_order_not_alignment_order(client, cycle):
    c = cycle["id"]
    parent = make_objective(client, c, "parent")
    first = make_objective(client, c, "first")
    second = make_objective(client, c, "second", parent_objective_id=parent["id"])
    # aligned last, created first: still first among the children
    response = client.patch(f"/v1/objectives/{first['id']}", json={"parent_objective_id": parent["id"]})
    assert response.status_code == 200, response.get_json()
    report = cycle_report(client, c)
    assert shape(report["objectives"]) == [("parent", [("first", []), ("second", [])])]
    assert [node["id"] for node in objective_report(client, parent["id"])["children"]] == [
        first["id"], second["id"]]


@pytest.fixture
def across(client):
    """p (Q1) <- x (Q2) <- y (Q1) <- z (Q3); p also has q (Q1); s (Q2) stands alone."""
    q1, q2, q3 = make_cycle(client, "Q1"), make_cycle(client, "Q2"), make_cycle(client, "Q3")
    p = make_objective(client, q1["id"], "p")
    x = make_objective(client, q2["id"], "x", parent_objective_id=p["id"])
    q = make_objective(client, q1["id"], "q", parent_objective_id=p["id"])
    y = make_objective(client, q1["id"], "y", parent_objective_id=x["id"])
    z = make_objective(client, q3["id"], "z", parent_objective_id=y["id"])
    s = make_objective(client, q2["id"], "s")
    add_kr(client, p["id"], "p1", "0", "50", "100")
    add_kr(client, x["id"], "x1", "0", "100", "100")
    add_kr(client, z["id"], "z1", "0", "0", "100")
    return {"q1": q1, "q2": q2, "q3": q3, "p": p, "x": x, "q": q, "y": y, "z": z, "s": s}


def test_parent_in_another_cycle_makes_a_root_in_the_cycle_report(client, across):
    q1 = cycle_report(client, across["q1"]["id"])
    assert shape(q1["objectives"]) == [("p", [("q", [])]), ("y", [])]
    assert q1["objectives_count"] == 3
    assert q1["progress"] == "0.50"  # p alone has progress; x and z are other cycles'
    q2 = cycle_report(client, across["q2"]["id"])
    assert shape(q2["objectives"]) == [("x", []), ("s", [])]
    assert q2["progress"] == "1.00"
    q3 = cycle_report(client, across["q3"]["id"])
    assert shape(q3["objectives"]) == [("z", [])]
    assert q3["progress"] == "0.00"


def test_objective_report_has_descendants_whatever_their_cycle(client, across):
    p = objective_report(client, across["p"]["id"])
    assert shape([p]) == [("p", [("x", [("y", [("z", [])])]), ("q", [])])]
    assert p["progress"] == "0.50"  # its own key results only
    x = p["children"][0]
    assert x["cycle_id"] == across["q2"]["id"]
    assert x["progress"] == "1.00"
    assert [kr["name"] for kr in x["key_results"]] == ["x1"]
    assert x["children"][0]["children"][0]["progress"] == "0.00"
    assert shape([objective_report(client, across["x"]["id"])]) == [("x", [("y", [("z", [])])])]
    assert shape([objective_report(client, across["s"]["id"])]) == [("s", [])]


@pytest.mark.parametrize("objective_id", [UNKNOWN, "not-an-id"])
def test_unknown_objective_report_is_404(client, objective_id):
    assert_error(client.get(f"/v1/objectives/{objective_id}/report"), 404)


@pytest.mark.parametrize("cycle_id", [UNKNOWN, "not-an-id"])
def test_unknown_cycle_report_is_404(client, cycle_id):
    assert_error(client.get(f"/v1/cycles/{cycle_id}/report"), 404)


def test_unknown_cycle_report_is_404_with_a_filter_too(client):
    assert_error(client.get(f"/v1/cycles/{UNKNOWN}/report?team_id={UNKNOWN}"), 404)


def test_deleted_objectives_leave_the_report(client, cycle):
    keep = make_objective(client, cycle["id"], "keep")
    gone = make_objective(client, cycle["id"], "gone")
    add_kr(client, keep["id"], "k", "0", "100", "100")
    add_kr(client, gone["id"], "g", "0", "0", "100")
    assert cycle_report(client, cycle["id"])["progress"] == "0.50"
    assert client.delete(f"/v1/objectives/{gone['id']}").status_code == 200
    report = cycle_report(client, cycle["id"])
    assert (report["progress"], report["objectives_count"], report["key_results_count"]) == ("1.00", 1, 1)


# --- filters --------------------------------------------------------------------------------


@pytest.fixture
def world(client, alignment):
    o = alignment["o"]
    add_kr(client, o["root"]["id"], "r", "0", "100", "100")     # 1
    add_kr(client, o["child"]["id"], "c", "0", "0", "100")      # 0
    add_kr(client, o["mine"]["id"], "m", "0", "50", "100")      # 0.5
    make_key_result(client, o["mine"]["id"], "mb", type="baseline", target_value_min=None)
    mile = make_key_result(client, o["loose"]["id"], "l", type="milestone", target_value_min="1")
    checkin(client, mile["id"], "1")                            # 1
    return alignment


def names_in(report):
    return sorted(node["name"] for node in walk(report["objectives"]))


@pytest.mark.parametrize("query, names, objectives, key_results, progress", [
    ({}, ["child", "loose", "mine", "root"], 4, 5, "0.62"),      # 2.5 / 4 = 0.625
    ({"team_id": "red"}, ["mine", "root"], 2, 3, "0.75"),
    ({"team_id": "blue"}, ["child"], 1, 1, "0.00"),
    ({"assignee_id": "ada"}, ["child", "root"], 2, 2, "0.50"),
    ({"assignee_id": "bob"}, ["mine"], 1, 2, "0.50"),
    ({"team_id": "red", "assignee_id": "ada"}, ["root"], 1, 1, "1.00"),
    ({"team_id": "blue", "assignee_id": "bob"}, [], 0, 0, None),
])
def test_filters_choose_what_the_counts_and_progress_cover(client, world, query, names, objectives,
                                                          key_results, progress):
    query = {key: world[value] for key, value in query.items()}
    report = cycle_report(client, world["cycle"], **query)
    assert names_in(report) == names
    assert report["objectives_count"] == objectives
    assert report["key_results_count"] == key_results
    assert report["progress"] == progress


def test_filter_with_an_unknown_id_keeps_nothing(client, world):
    report = cycle_report(client, world["cycle"], team_id=UNKNOWN)
    assert (report["objectives"], report["objectives_count"], report["key_results_count"],
            report["progress"]) == ([], 0, 0, None)
    assert report["cycle"] == {**fetch(client, f"/v1/cycles/{world['cycle']}"), **REPORT_CYCLE_EXTRAS,
                               "status_counts": NO_STATUSES}


def test_filtered_tree_keeps_alignment_among_what_it_keeps(client, world):
    report = cycle_report(client, world["cycle"], team_id=world["red"])
    assert shape(report["objectives"]) == [("root", [("mine", [])])]


def test_filtered_child_whose_parent_is_filtered_out_is_a_root(client, world):
    report = cycle_report(client, world["cycle"], team_id=world["blue"])
    assert shape(report["objectives"]) == [("child", [])]


@pytest.mark.parametrize("name", ["team_id", "assignee_id"])
@pytest.mark.parametrize("value", ["red", UNKNOWN.upper(), "", UNKNOWN + "0"])
def test_malformed_filter_is_400_naming_it(client, cycle, name, value):
    assert_error(client.get(f"/v1/cycles/{cycle['id']}/report", query_string={name: value}), 400, name)


# --- status, staleness, check-in times ------------------------------------------------------


@pytest.mark.parametrize("confidence, expected", [
    ("1", "on_track"),
    ("0.70", "on_track"),
    ("0.7", "on_track"),
    ("0.699999", "at_risk"),
    ("0.69", "at_risk"),
    ("0.40", "at_risk"),
    ("0.399999", "off_track"),
    ("0.39", "off_track"),
    ("0", "off_track"),
])
def test_status_from_confidence(client, cycle, objective, confidence, expected):
    kr = make_key_result(client, objective["id"])
    checkin(client, kr["id"], "1", confidence=confidence)
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["status"] == expected


def test_status_follows_the_latest_checkins_confidence(client, cycle, objective):
    kr = make_key_result(client, objective["id"], confidence="0.10")
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["status"] == "no_update"
    checkin(client, kr["id"], "5", confidence="0.10")
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["status"] == "off_track"
    checkin(client, kr["id"], "5", confidence="0.70")
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["status"] == "on_track"
    checkin(client, kr["id"], "6", confidence="0.40")
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["status"] == "at_risk"


NOW = "2026-06-30T12:00:00Z"


@pytest.mark.parametrize("age, stale", [
    ({"days": 15}, True),
    ({"days": 14, "seconds": 1}, True),
    ({"days": 14}, False),
    ({"days": 13, "hours": 23}, False),
    ({}, False),
])
def test_stale_when_the_last_checkin_is_more_than_14_days_old(client, clock, age, stale):
    clock.now = at(NOW, days=-40)
    cycle = make_cycle(client)
    objective = make_objective(client, cycle["id"])
    kr = make_key_result(client, objective["id"])
    clock.now = at(NOW, **{key: -value for key, value in age.items()})
    checkin(client, kr["id"], "10")
    clock.now = NOW
    node = kr_node(cycle_report(client, cycle["id"]), kr["id"])
    assert node["stale"] is stale
    assert node["last_checkin_at"] == at(NOW, **{key: -value for key, value in age.items()})
    assert objective_report(client, objective["id"])["key_results"][0]["stale"] is stale


def test_staleness_is_measured_from_now(client, clock):
    """Check-ins 15 and 13 days before the real present, reported at the real present."""
    real_now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    clock.now = at(real_now, days=-30)
    cycle = make_cycle(client)
    objective = make_objective(client, cycle["id"])
    old = make_key_result(client, objective["id"], "old")
    fresh = make_key_result(client, objective["id"], "fresh")
    clock.now = at(real_now, days=-15)
    checkin(client, old["id"], "1")
    clock.now = at(real_now, days=-13)
    checkin(client, fresh["id"], "1")
    clock.now = real_now
    report = cycle_report(client, cycle["id"])
    assert kr_node(report, old["id"])["stale"] is True
    assert kr_node(report, fresh["id"])["stale"] is False


def test_a_new_key_results_first_checkin_is_its_creation(client, clock):
    clock.now = "2026-03-01T00:00:00Z"
    cycle = make_cycle(client)
    objective = make_objective(client, cycle["id"])
    kr = make_key_result(client, objective["id"], current_value="3")
    clock.now = "2026-03-20T00:00:00Z"  # 19 days later, no check-in since
    node = kr_node(cycle_report(client, cycle["id"]), kr["id"])
    assert node["last_checkin_at"] == "2026-03-01T00:00:00Z"
    assert node["start_value"] == "3.00"
    assert node["stale"] is True


def test_last_checkin_at_is_the_last_checkin_not_the_last_edit(client, clock):
    clock.now = "2026-03-01T00:00:00Z"
    cycle = make_cycle(client)
    objective = make_objective(client, cycle["id"])
    kr = make_key_result(client, objective["id"], current_value="0")
    clock.now = "2026-03-02T00:00:00Z"
    checkin(client, kr["id"], "10")
    clock.now = "2026-03-05T00:00:00Z"
    checkin(client, kr["id"], "20")
    clock.now = "2026-03-25T00:00:00Z"
    # a rename is no check-in: modified_at moves, last_checkin_at and staleness stay
    response = client.patch(f"/v1/keyresults/{kr['id']}", json={"name": "Renamed"})
    assert response.status_code == 200, response.get_json()
    node = kr_node(cycle_report(client, cycle["id"]), kr["id"])
    assert node["modified_at"] == "2026-03-25T00:00:00Z"
    assert node["last_checkin_at"] == "2026-03-05T00:00:00Z"
    assert node["start_value"] == "0.00"
    assert node["current_value"] == "20.00"
    assert node["stale"] is True


def test_a_patch_of_current_value_is_a_checkin(client, clock):
    clock.now = "2026-03-01T00:00:00Z"
    cycle = make_cycle(client)
    objective = make_objective(client, cycle["id"])
    kr = make_key_result(client, objective["id"], current_value="0")
    clock.now = "2026-03-25T00:00:00Z"
    response = client.patch(f"/v1/keyresults/{kr['id']}", json={"current_value": "30"})
    assert response.status_code == 200, response.get_json()
    node = kr_node(cycle_report(client, cycle["id"]), kr["id"])
    assert node["last_checkin_at"] == "2026-03-25T00:00:00Z"
    assert node["stale"] is False
    assert (node["start_value"], node["progress"]) == ("0.00", "0.30")


# --- a fixed number of statements -----------------------------------------------------------


@pytest.fixture
def small_and_big(client, runner):
    """A cycle of 2 objectives, and one of 30 objectives, 90 key results and 300-odd check-ins,
    with alignment chains that reach into a third cycle."""
    red = make_team(client, "Red")["id"]
    ada = make_user(runner)["id"]
    small, big, third = make_cycle(client, "small"), make_cycle(client, "big"), make_cycle(client, "third")
    a = make_objective(client, small["id"], "a", team_id=red, assignee_id=ada)
    b = make_objective(client, small["id"], "b", parent_objective_id=a["id"])
    add_kr(client, a["id"], "a1", "0", "10", "100")
    add_kr(client, b["id"], "b1", "0", "10", "100")
    kinds = [("positive", "100"), ("negative", "10"), ("range", "5"), ("milestone", "1"), ("baseline", None)]
    objectives = []
    for i in range(30):
        parent = objectives[(i - 1) // 2]["id"] if i else None  # a binary tree, 5 levels deep
        objectives.append(make_objective(client, big["id"], f"o{i}", parent_objective_id=parent,
                                         team_id=red if i % 2 else None, assignee_id=ada if i % 3 else None))
        for j in range(3):
            kind, low = kinds[(i + j) % len(kinds)]
            kr = make_key_result(client, objectives[-1]["id"], f"o{i}k{j}", type=kind, current_value="50",
                                 target_value_min=low, target_value_max="50" if kind == "range" else None)
            for n in range(3):
                checkin(client, kr["id"], str(40 + n * 7), confidence=f"0.{3 + n}")
    deeper = objectives[29]["id"]
    for i in range(5):
        deeper = make_objective(client, third["id"], f"t{i}", parent_objective_id=deeper)["id"]
    return {"small": small, "big": big, "a": a, "root": objectives[0], "red": red, "ada": ada}


def test_cycle_report_runs_a_fixed_number_of_statements(app, client, small_and_big):
    small = statements_of(app, client, f"/v1/cycles/{small_and_big['small']['id']}/report")
    big = statements_of(app, client, f"/v1/cycles/{small_and_big['big']['id']}/report")
    report = cycle_report(client, small_and_big["big"]["id"])
    assert (report["objectives_count"], report["key_results_count"]) == (30, 90)
    assert len(big) == len(small), (small, big)


def test_filtered_cycle_report_runs_a_fixed_number_of_statements(app, client, small_and_big):
    query = f"team_id={small_and_big['red']}&assignee_id={small_and_big['ada']}"
    small = statements_of(app, client, f"/v1/cycles/{small_and_big['small']['id']}/report?{query}")
    big = statements_of(app, client, f"/v1/cycles/{small_and_big['big']['id']}/report?{query}")
    assert cycle_report(client, small_and_big["big"]["id"], team_id=small_and_big["red"],
                        assignee_id=small_and_big["ada"])["objectives_count"] == 10
    assert len(big) == len(small), (small, big)


def test_objective_report_runs_a_fixed_number_of_statements(app, client, small_and_big):
    small = statements_of(app, client, f"/v1/objectives/{small_and_big['a']['id']}/report")
    big = statements_of(app, client, f"/v1/objectives/{small_and_big['root']['id']}/report")
    assert sum(1 for _ in walk([objective_report(client, small_and_big["root"]["id"])])) == 35
    assert len(big) == len(small), (small, big)


def test_recent_values_are_each_key_results_last_values_in_check_in_order(app, client):
    cycle = make_cycle(client)
    objective = make_objective(client, cycle["id"])
    first, second = (make_key_result(client, objective["id"], current_value="5") for _ in range(2))
    other_cycle = make_objective(client, make_cycle(client, "Q2")["id"])
    elsewhere = make_key_result(client, other_cycle["id"])
    # Interleaved, and not in the order of their values: the order shown is the order recorded.
    values = ["9.00", "-2.50", "70.00", "3.00", "12.25", "0.00"]
    for value, mirrored in zip(values, reversed(values)):
        checkin(client, first["id"], value)
        checkin(client, second["id"], mirrored)
        checkin(client, elsewhere["id"], "1")
    with app.app_context(), closing(sqlite3.connect(app.config["DATABASE"])) as db:
        assert recent_values(db, cycle["id"], 4) == {first["id"]: values[-4:], second["id"]: values[::-1][-4:]}
        assert recent_values(db, cycle["id"], 12)[first["id"]] == ["5.00", *values]
        # A history more than twice as long as what is asked: only its end.
        assert recent_values(db, cycle["id"], 3)[first["id"]] == values[-3:]
        assert recent_values(db, cycle["id"], 1) == {first["id"]: ["0.00"], second["id"]: ["9.00"]}


def checkin_steps(path, statements):
    """The query-plan steps, over the database at path, in which the statements read check-ins."""
    with closing(sqlite3.connect(path)) as db:
        return [row[3] for sql in statements if "checkins" in sql
                for row in db.execute("EXPLAIN QUERY PLAN " + sql) if row[3].startswith(("SEARCH c ", "SCAN c"))]


def test_reports_and_sparklines_read_the_checkin_history_from_its_index_alone(app, client, small_and_big):
    path, cycle = app.config["DATABASE"], small_and_big["big"]["id"]
    steps = checkin_steps(path, statements_of(app, client, f"/v1/cycles/{cycle}/report"))
    steps += checkin_steps(path, statements_of(app, client, f"/v1/objectives/{small_and_big['root']['id']}/report"))
    with closing(sqlite3.connect(path)) as db:
        sparklines = []
        db.set_trace_callback(sparklines.append)
        assert len(recent_values(db, cycle, 12)) == 90
    steps += checkin_steps(path, sparklines)
    assert len(steps) == 7, steps  # first value, last time and an update in each report; the sparklines' walk
    assert all(step.startswith("SEARCH c USING COVERING INDEX checkins_history ") for step in steps), steps


# --- over real HTTP -------------------------------------------------------------------------


@pytest.mark.slow
def test_report_over_real_http(client, live_server):
    cycle = make_cycle(client, "Q1")
    parent = make_objective(client, cycle["id"], "parent")
    child = make_objective(client, cycle["id"], "child", parent_objective_id=parent["id"])
    add_kr(client, parent["id"], "p", "0", "1", "3")
    add_kr(client, child["id"], "c", "0", "3", "3")
    response = live_server.get(f"/v1/cycles/{cycle['id']}/report")
    assert response.headers["Content-Type"].startswith("application/json")
    report = response.ok()
    assert report == cycle_report(client, cycle["id"])
    assert shape(report["objectives"]) == [("parent", [("child", [])])]
    assert report["progress"] == "0.67"  # (1/3 + 1) / 2
    assert live_server.get(f"/v1/objectives/{parent['id']}/report").ok() == {
        "objective": report["objectives"][0], "hidden_objectives_count": 0}
    assert live_server.get(f"/v1/cycles/{UNKNOWN}/report").status == 404


@pytest.mark.slow
def test_an_objective_moved_to_another_cycle_takes_its_key_results_along(client):
    q1, q2 = make_cycle(client, "Q1"), make_cycle(client, "Q2")
    parent = make_objective(client, q1["id"], "parent")
    moved = make_objective(client, q1["id"], "moved", parent_objective_id=parent["id"])
    make_objective(client, q1["id"], "stays", parent_objective_id=moved["id"])
    add_kr(client, moved["id"], "m", "0", "75", "100")
    response = client.patch(f"/v1/objectives/{moved['id']}", json={"cycle_id": q2["id"]})
    assert response.status_code == 200, response.get_json()
    first, second = cycle_report(client, q1["id"]), cycle_report(client, q2["id"])
    assert shape(first["objectives"]) == [("parent", []), ("stays", [])]
    assert (first["key_results_count"], first["progress"]) == (0, None)
    assert shape(second["objectives"]) == [("moved", [])]
    assert (second["key_results_count"], second["progress"]) == (1, "0.75")
    assert shape([objective_report(client, parent["id"])]) == [("parent", [("moved", [("stays", [])])])]


def test_an_objective_report_on_a_loop_written_behind_the_apis_back_starts_at_the_objective(app, client):
    import sqlite3
    from contextlib import closing
    cycle = make_cycle(client)
    first = make_objective(client, cycle["id"], name="A")
    second = make_objective(client, cycle["id"], name="B", parent_objective_id=first["id"])
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.execute("UPDATE objectives SET parent_objective_id = ? WHERE id = ?", (second["id"], first["id"]))
        db.commit()
    response = client.get(f"/v1/objectives/{first['id']}/report")
    assert response.status_code == 200
    top = response.get_json()["objective"]
    assert top["id"] == first["id"] and [child["id"] for child in top["children"]] == [second["id"]]
