"""Quality checks on OKRs (okr/reports/quality.py, docs/quality.md): each rule at its boundaries, through
GET /v1/cycles/:id/checks, its shape, its 404, who may read it, and its fixed number of queries."""
import pytest

from helpers import assert_error, make_cycle, make_key_result, make_objective, make_team, make_user, signed, \
    statements_of
from okr.reports import quality


@pytest.fixture
def team(client):
    return make_team(client)


@pytest.fixture
def owner(runner):
    return make_user(runner, "Grace Hopper", "grace@example.com")


def checks_of(client, cycle_id):
    response = client.get(f"/v1/cycles/{cycle_id}/checks")
    assert response.status_code == 200, response.get_json()
    return response.get_json()["checks"]


def codes(found, code=None):
    """The codes of the findings (only those with code, when given: their subjects' ids instead)."""
    if code is None:
        return [f["code"] for f in found]
    return [f["key_result_id"] or f["objective_id"] or f["user_id"] for f in found if f["code"] == code]


def owned_objective(client, cycle_id, team, name="Grow revenue", **fields):
    """An objective with a team, so that only the rule under test speaks."""
    return make_objective(client, cycle_id, name, team_id=team["id"], **fields)


def owned_key_results(client, objective_id, owner, count, **fields):
    return [make_key_result(client, objective_id, f"Reach {n} customers", owner_id=owner["id"], **fields)
            for n in range(count)]


@pytest.mark.parametrize("count, code", [(0, "too_few_key_results"), (1, "too_few_key_results"), (2, None),
                                         (5, None), (6, "too_many_key_results")])
def test_an_objective_has_two_to_five_key_results(client, cycle, team, runner, count, code):
    objective = owned_objective(client, cycle["id"], team)
    for number in range(count):  # a different owner each, so that no one's focus speaks
        person = make_user(runner, f"Person {number}", f"p{number}@example.com")
        make_key_result(client, objective["id"], f"Reach {number} customers", owner_id=person["id"])
    found = checks_of(client, cycle["id"])
    assert codes(found) == ([code] if code else [])
    if code:
        words = {0: "no key results", 1: "1 key result", 6: "6 key results"}[count]
        assert found[0]["message"].startswith(f"“Grow revenue” has {words}; an objective has 2 to 5")
        assert (found[0]["objective_id"], found[0]["objective_name"]) == (objective["id"], "Grow revenue")
        assert found[0]["key_result_id"] is found[0]["user_id"] is None


def test_an_objective_without_key_results_that_rolls_up_aligned_ones_is_not_short(client, cycle, team, owner):
    parent = owned_objective(client, cycle["id"], team, "Be the best")
    child = owned_objective(client, cycle["id"], team, "Grow revenue", parent_objective_id=parent["id"])
    owned_key_results(client, child["id"], owner, 2)
    assert checks_of(client, cycle["id"]) == []
    lone = owned_objective(client, cycle["id"], team, "Alone")
    assert codes(checks_of(client, cycle["id"]), "too_few_key_results") == [lone["id"]]


def test_each_key_result_has_an_owner(client, cycle, team, owner):
    objective = owned_objective(client, cycle["id"], team)
    owned_key_results(client, objective["id"], owner, 1)
    nobodys = make_key_result(client, objective["id"], "Reach 9 customers")
    [found] = checks_of(client, cycle["id"])
    assert (found["code"], found["severity"], found["key_result_id"], found["key_result_name"]) == (
        "key_result_without_owner", "warning", nobodys["id"], "Reach 9 customers")
    assert found["objective_id"] == objective["id"]  # a key result's finding names its objective too
    assert found["message"] == "“Reach 9 customers” has no owner: choose who updates it."


@pytest.mark.parametrize("name, verb", [
    ("Launch the Android app", "launch"), ("launch", "launch"), ("MIGRATE every tenant", "migrate"),
    ("  Ship v2 to all customers", "ship"), ("Set   up billing alerts", "set up"), ("Roll out SSO", "roll out"),
    ("Write: the onboarding guide", "write"),
    ("Launches per week above 3", None), ("Relaunch rate below 5 %", None), ("Write-offs below 2 %", None),
    ("Grow signups ahead of the launch", None), ("Launched products: 3", None), ("Setup time under 5 minutes", None),
    ("Builder's satisfaction above 80 %", None), ("Reach 100 customers", None),
])
def test_a_name_reads_as_a_task_when_it_starts_with_a_tasks_verb(name, verb):
    assert quality.task_verb(name) == verb


def test_a_key_result_that_reads_as_a_task_is_suggested_as_an_initiative(client, cycle, team, owner):
    objective = owned_objective(client, cycle["id"], team)
    owned_key_results(client, objective["id"], owner, 1)
    task = make_key_result(client, objective["id"], "Launch the Android app", type="milestone", target_value_min=None,
                           owner_id=owner["id"])
    [found] = checks_of(client, cycle["id"])
    assert (found["code"], found["severity"], found["key_result_id"]) == (
        "key_result_reads_as_task", "suggestion", task["id"])
    assert "reads like a task (it starts with “launch”): consider making it an initiative" in found["message"]


@pytest.fixture
def january(client, team, owner):
    """A cycle of 2026-01-01 to 2026-01-31 (30 days: its first third ends on 2026-01-11) with a baseline and a
    positive key result, and an undated cycle with a baseline."""
    made = client.post("/v1/cycles", json={"name": "January", "starts_on": "2026-01-01", "ends_on": "2026-01-31"})
    assert made.status_code == 200, made.get_json()
    dated = made.get_json()
    objective = owned_objective(client, dated["id"], team)
    baseline = make_key_result(client, objective["id"], "Weekly active users", type="baseline",
                               target_value_min=None, owner_id=owner["id"])
    owned_key_results(client, objective["id"], owner, 1)
    undated = make_cycle(client, "Someday")
    other = owned_objective(client, undated["id"], team)
    make_key_result(client, other["id"], "Net promoter score", type="baseline", target_value_min=None,
                    owner_id=owner["id"])
    owned_key_results(client, other["id"], owner, 1)
    return {"dated": dated["id"], "undated": undated["id"], "baseline": baseline["id"]}


@pytest.mark.parametrize("today, flagged", [("2026-01-01", False), ("2026-01-11", False), ("2026-01-12", True),
                                            ("2026-03-01", True)])
def test_a_baseline_is_flagged_after_the_first_third_of_its_cycle(client, january, clock, today, flagged):
    clock.now = f"{today}T12:00:00Z"
    found = checks_of(client, january["dated"])
    assert codes(found, "baseline_after_first_third") == ([january["baseline"]] if flagged else [])
    if flagged:
        assert found[0]["message"] == ("“Weekly active users” is a baseline with no target, and a third of the cycle "
                                       "has gone by: set a target.")
    assert checks_of(client, january["undated"]) == []  # an undated cycle never flags


def test_no_one_owns_more_than_five_key_results_in_a_cycle(client, cycle, team, owner, runner):
    first, second = (owned_objective(client, cycle["id"], team, name) for name in ("Grow", "Keep"))
    owned_key_results(client, first["id"], owner, 3)
    owned_key_results(client, second["id"], owner, 2)
    assert checks_of(client, cycle["id"]) == []  # 5 across two objectives: within focus
    owned_key_results(client, second["id"], owner, 1)
    [found] = checks_of(client, cycle["id"])
    assert (found["code"], found["user_id"], found["user_name"], found["objective_id"], found["key_result_id"]) == (
        "owner_over_focus", owner["id"], "Grace Hopper", None, None)
    assert found["message"] == ("Grace Hopper owns 6 key results in this cycle; more than 5 spreads focus thin.")
    elsewhere = make_cycle(client, "Next")  # another cycle's key results are another focus
    owned_key_results(client, owned_objective(client, elsewhere["id"], team)["id"], owner, 2)
    assert checks_of(client, elsewhere["id"]) == []


@pytest.mark.parametrize("fields, flagged", [({}, True), ({"team": True}, False), ({"assignee": True}, False)])
def test_an_objective_has_a_team_or_an_assignee(client, cycle, team, owner, fields, flagged):
    objective = make_objective(client, cycle["id"], "Grow revenue", team_id=team["id"] if fields.get("team") else None,
                               assignee_id=owner["id"] if fields.get("assignee") else None)
    owned_key_results(client, objective["id"], owner, 2)
    found = checks_of(client, cycle["id"])
    assert codes(found, "objective_without_owner") == ([objective["id"]] if flagged else [])
    if flagged:
        assert found[0]["message"] == "“Grow revenue” has neither a team nor an owner: give it one."


def test_the_answer_lists_each_objectives_findings_then_its_key_results_then_people(client, cycle, runner):
    ada = make_user(runner, "Ada Lovelace", "ada@example.com")
    bob = make_user(runner, "Bob", "bob@example.com")
    first = make_objective(client, cycle["id"], "First")
    task = make_key_result(client, first["id"], "Ship it", type="milestone", target_value_min=None)
    second = make_objective(client, cycle["id"], "Second", assignee_id=ada["id"])
    owned_key_results(client, second["id"], ada, 6)
    for name, count in (("Third", 4), ("Fourth", 3)):  # Bob owns 7 across the cycle, Ada 6: the most first
        owned_key_results(client, make_objective(client, cycle["id"], name, assignee_id=bob["id"])["id"], bob, count)
    answer = client.get(f"/v1/cycles/{cycle['id']}/checks").get_json()
    assert set(answer) == {"cycle_id", "checks", "count"}
    assert answer["cycle_id"] == cycle["id"] and answer["count"] == len(answer["checks"])
    assert [(f["code"], f["objective_id"], f["key_result_id"], f["user_id"]) for f in answer["checks"]] == [
        ("objective_without_owner", first["id"], None, None),
        ("too_few_key_results", first["id"], None, None),
        ("key_result_without_owner", first["id"], task["id"], None),
        ("key_result_reads_as_task", first["id"], task["id"], None),
        ("too_many_key_results", second["id"], None, None),
        ("owner_over_focus", None, None, bob["id"]),
        ("owner_over_focus", None, None, ada["id"]),
    ]
    for found in answer["checks"]:
        assert set(found) == {"code", "severity", "objective_id", "objective_name", "key_result_id",
                              "key_result_name", "user_id", "user_name", "message"}
        assert found["code"] in quality.CODES and found["severity"] in quality.SEVERITIES


def test_an_empty_cycle_has_nothing_to_fix(client, cycle):
    assert client.get(f"/v1/cycles/{cycle['id']}/checks").get_json() == {"cycle_id": cycle["id"], "checks": [],
                                                                          "count": 0}


def test_an_unknown_cycle_is_a_404_in_the_error_shape(client):
    assert_error(client.get("/v1/cycles/00000000-0000-4000-8000-000000000000/checks"), 404)
    assert_error(client.get("/v1/cycles/not-an-id/checks"), 404)


def test_a_viewer_and_a_read_only_key_read_the_checks_and_nobody_unsigned(client, cycle, objective, make_person):
    for person in (make_person("viewer"), make_person("editor", read_only=True), make_person("admin")):
        answer = client.get(f"/v1/cycles/{cycle['id']}/checks", headers=person.headers())
        assert answer.status_code == 200, answer.get_json()
        assert answer.get_json()["count"] == 2
    assert_error(client.get(f"/v1/cycles/{cycle['id']}/checks"), 401)


def test_a_cycle_of_any_size_is_checked_in_the_same_few_queries(app, client, cycle, team, owner):
    path = f"/v1/cycles/{cycle['id']}/checks"

    def queries():
        return [s for s in statements_of(app, client, path) if s.lstrip().upper().startswith(("SELECT", "WITH"))]
    small = queries()
    for number in range(30):
        objective = owned_objective(client, cycle["id"], team, f"Objective {number}")
        make_key_result(client, objective["id"], "Launch it", type="milestone", target_value_min=None)
    assert len(queries()) == len(small) <= 4
    assert client.get(path).get_json()["count"] == 30 * 3
