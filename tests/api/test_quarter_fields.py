"""What a quarter needs beyond the spec's fields (issue 23): a cycle's dates and state, a key result's owner,
"no update yet" before a key result's first check-in, progress rolled up from aligned objectives, a cycle's CSV.

They are stored with the resources but never answered by, nor cleared by, the spec's endpoints: PATCH sets them,
the spec's creating POSTs take them when sent, the reports show them.
"""
import csv
import io
import sqlite3
from contextlib import closing

import pytest

from helpers import assert_error, fetch, make_cycle, make_key_result, make_objective, make_user

SPEC_CYCLE = ["id", "name", "created_at"]
SPEC_KEY_RESULT = ["id", "name", "created_at", "modified_at", "objective_id", "confidence", "type", "current_value",
                   "target_value_min", "target_value_max"]


def cycle_report(client, cycle_id):
    response = client.get(f"/v1/cycles/{cycle_id}/report")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def kr_node(report, key_result_id):
    stack = list(report["objectives"])
    while stack:
        node = stack.pop()
        stack.extend(node["children"])
        for kr in node["key_results"]:
            if kr["id"] == key_result_id:
                return kr
    raise AssertionError(f"{key_result_id} is not in the report")


def objective_node(report, objective_id):
    stack = list(report["objectives"])
    while stack:
        node = stack.pop()
        if node["id"] == objective_id:
            return node
        stack.extend(node["children"])
    raise AssertionError(f"{objective_id} is not in the report")


def checkin(client, key_result_id, value, **body):
    response = client.post(f"/v1/keyresults/{key_result_id}/checkins", json={"value": value, **body})
    assert response.status_code == 200, response.get_json()


# --- cycle dates and state -------------------------------------------------------------------------------


def test_a_cycle_created_with_dates_answers_as_the_spec_says_and_the_report_shows_them(client, clock):
    clock.now = "2027-01-01T00:00:00Z"
    response = client.post("/v1/cycles", json={"name": "Q4", "starts_on": "2026-10-01", "ends_on": "2026-12-31"})
    assert response.status_code == 200
    assert list(response.get_json()) == SPEC_CYCLE
    cycle = response.get_json()
    assert list(fetch(client, f"/v1/cycles/{cycle['id']}")) == SPEC_CYCLE
    assert cycle_report(client, cycle["id"])["cycle"] == {
        **cycle, "starts_on": "2026-10-01", "ends_on": "2026-12-31", "state": "finished", "closed_at": None,
        "closed_by": None, "elapsed": "1.00",
        "status_counts": {"off_track": 0, "at_risk": 0, "no_update": 0, "on_track": 0, "done": 0}}


@pytest.mark.slow
def test_the_spec_rename_keeps_the_dates(client):
    cycle = client.post("/v1/cycles", json={"name": "Q4", "starts_on": "2026-10-01"}).get_json()
    assert client.post(f"/v1/cycles/{cycle['id']}", json={"name": "Q4 2026"}).get_json()["name"] == "Q4 2026"
    shown = cycle_report(client, cycle["id"])["cycle"]
    assert (shown["name"], shown["starts_on"], shown["ends_on"]) == ("Q4 2026", "2026-10-01", None)


def test_patch_sets_and_clears_dates_and_answers_them_with_the_gets_etag(client, clock):
    clock.now = "2026-02-01T00:00:00Z"
    cycle = make_cycle(client)
    path = f"/v1/cycles/{cycle['id']}"
    response = client.patch(path, json={"starts_on": "2026-01-01", "ends_on": "2026-03-31"})
    assert response.status_code == 200
    assert response.get_json() == {**cycle, "starts_on": "2026-01-01", "ends_on": "2026-03-31", "state": "current",
                                   "closed_at": None, "closed_by": None}
    assert response.headers["ETag"] == client.get(path).headers["ETag"]
    cleared = client.patch(path, json={"starts_on": None}, headers={"If-Match": response.headers["ETag"]})
    assert cleared.status_code == 200
    assert (cleared.get_json()["starts_on"], cleared.get_json()["ends_on"]) == (None, "2026-03-31")
    # An old ETag is refused: someone changed the cycle since.
    assert_error(client.patch(path, json={"name": "x"}, headers={"If-Match": response.headers["ETag"]}), 412)


@pytest.mark.parametrize("body, field", [
    ({"starts_on": "2026-04-01", "ends_on": "2026-03-31"}, "ends_on"),
    ({"starts_on": "2026-02-30"}, "starts_on"),
    ({"ends_on": "31/03/2026"}, "ends_on"),
    ({"starts_on": "2026-1-1"}, "starts_on"),
    ({"ends_on": 20260331}, "ends_on"),
])
def test_a_date_that_is_not_one_or_an_end_before_the_start_is_refused(client, body, field):
    cycle = make_cycle(client)
    assert_error(client.patch(f"/v1/cycles/{cycle['id']}", json=body), 400, field)
    assert_error(client.post("/v1/cycles", json=body), 400, field)
    assert cycle_report(client, cycle["id"])["cycle"]["starts_on"] is None
    assert len(client.get("/v1/cycles").get_json()["cycles"]) == 1


def test_patching_one_date_is_checked_against_the_stored_other(client):
    cycle = client.post("/v1/cycles", json={"starts_on": "2026-04-01"}).get_json()
    assert_error(client.patch(f"/v1/cycles/{cycle['id']}", json={"ends_on": "2026-03-01"}), 400, "ends_on")


@pytest.mark.parametrize("starts_on, ends_on, state", [
    ("2026-01-02", None, "upcoming"),
    ("2026-01-01", "2026-01-01", "current"),  # both days count
    (None, "2025-12-31", "finished"),
    (None, None, "current"),
    ("2025-10-01", "2025-12-31", "finished"),
    ("2026-01-01", None, "current"),
])
def test_the_state_follows_todays_date(client, clock, starts_on, ends_on, state):
    clock.now = "2026-01-01T23:59:59Z"
    cycle = client.post("/v1/cycles", json={"starts_on": starts_on, "ends_on": ends_on}).get_json()
    assert cycle_report(client, cycle["id"])["cycle"]["state"] == state


def test_a_finished_cycles_key_results_are_never_stale(client, clock):
    clock.now = "2026-01-01T00:00:00Z"
    cycle = client.post("/v1/cycles", json={"starts_on": "2026-01-01", "ends_on": "2026-03-31"}).get_json()
    kr = make_key_result(client, make_objective(client, cycle["id"])["id"])
    clock.now = "2026-03-20T00:00:00Z"  # 78 days without a check-in, in the cycle: stale
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["stale"] is True
    clock.now = "2026-04-01T00:00:00Z"  # the cycle is over
    report = cycle_report(client, cycle["id"])
    assert report["cycle"]["state"] == "finished"
    assert kr_node(report, kr["id"])["stale"] is False
    assert client.get(f"/v1/objectives/{kr['objective_id']}/report").get_json()["objective"][
        "key_results"][0]["stale"] is False
    rows = list(csv.DictReader(io.StringIO(client.get(f"/v1/cycles/{cycle['id']}/report.csv").get_data(
        as_text=True).lstrip("\ufeff"))))
    assert [row["stale"] for row in rows] == ["false"]


# --- key-result owners -----------------------------------------------------------------------------------


def test_an_owner_is_taken_on_create_and_shown_by_reports_not_by_the_spec(client, runner, cycle):
    ada = make_user(runner)
    objective = make_objective(client, cycle["id"])
    response = client.post(f"/v1/objectives/{objective['id']}/keyresults",
                           json={"name": "Ship", "type": "milestone", "owner_id": ada["id"]})
    assert response.status_code == 200
    assert list(response.get_json()) == SPEC_KEY_RESULT
    kr = response.get_json()
    assert list(fetch(client, f"/v1/keyresults/{kr['id']}")) == SPEC_KEY_RESULT
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["owner_id"] == ada["id"]


def test_the_spec_update_leaves_the_owner_and_patch_changes_it(client, runner, cycle):
    ada, bob = make_user(runner), make_user(runner, "Bob", "bob@example.com")
    kr = make_key_result(client, make_objective(client, cycle["id"])["id"], owner_id=ada["id"])
    path = f"/v1/keyresults/{kr['id']}"
    replaced = client.post(path, json={"name": "Renamed", "type": "baseline", "owner_id": bob["id"]})
    assert replaced.status_code == 200 and "owner_id" not in replaced.get_json()
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["owner_id"] == ada["id"]
    patched = client.patch(path, json={"owner_id": bob["id"]})
    assert patched.get_json()["owner_id"] == bob["id"]
    assert client.patch(path, json={"name": "Again"}).get_json()["owner_id"] == bob["id"]  # absent: unchanged
    assert client.patch(path, json={"owner_id": None}).get_json()["owner_id"] is None


def test_an_owner_who_is_not_a_user_is_refused(client, cycle):
    objective = make_objective(client, cycle["id"])
    missing = "00000000-0000-4000-8000-000000000009"
    assert_error(client.post(f"/v1/objectives/{objective['id']}/keyresults",
                             json={"name": "Ship", "type": "milestone", "owner_id": missing}), 400, "owner_id")
    kr = make_key_result(client, objective["id"])
    assert_error(client.patch(f"/v1/keyresults/{kr['id']}", json={"owner_id": missing}), 400, "owner_id")
    assert client.get(f"/v1/objectives/{objective['id']}/keyresults").get_json()["keyresults"] == [kr]


def test_an_owners_key_results_stay_when_the_owner_goes(app, client, runner, cycle):
    ada = make_user(runner)
    kr = make_key_result(client, make_objective(client, cycle["id"])["id"], owner_id=ada["id"])
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("DELETE FROM users WHERE id = ?", (ada["id"],))
        db.commit()
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["owner_id"] is None


# --- "no update yet" -------------------------------------------------------------------------------------


def test_a_new_key_result_has_no_update_until_its_first_check_in(client, cycle):
    kr = make_key_result(client, make_objective(client, cycle["id"])["id"], confidence="0.10")
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["status"] == "no_update"
    checkin(client, kr["id"], "1")
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["status"] == "off_track"


def test_a_value_changed_by_patch_is_an_update(client, cycle):
    kr = make_key_result(client, make_objective(client, cycle["id"])["id"], confidence="0.90")
    client.patch(f"/v1/keyresults/{kr['id']}", json={"name": "Only the name"})
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["status"] == "no_update"
    client.patch(f"/v1/keyresults/{kr['id']}", json={"current_value": "2"})
    assert kr_node(cycle_report(client, cycle["id"]), kr["id"])["status"] == "on_track"


# --- roll-up ---------------------------------------------------------------------------------------------


def add_kr(client, objective_id, start, current, target):
    kr = make_key_result(client, objective_id, type="positive", current_value=start, target_value_min=target)
    if current != start:
        checkin(client, kr["id"], current)
    return kr


def test_an_objective_without_key_results_shows_its_aligned_childrens_progress(client, cycle):
    company = make_objective(client, cycle["id"], "Company", is_company=True)
    team_a = make_objective(client, cycle["id"], "A", parent_objective_id=company["id"])
    team_b = make_objective(client, cycle["id"], "B", parent_objective_id=company["id"])
    group = make_objective(client, cycle["id"], "Group", parent_objective_id=team_b["id"])  # no KRs: rolls up too
    leaf = make_objective(client, cycle["id"], "Leaf", parent_objective_id=group["id"])
    add_kr(client, team_a["id"], "0", "5", "10")   # 0.50
    add_kr(client, team_b["id"], "0", "10", "10")  # 1.00: B has key results, its progress stays theirs
    add_kr(client, leaf["id"], "0", "0", "10")     # 0.00
    report = cycle_report(client, cycle["id"])
    assert (objective_node(report, group["id"])["progress"], objective_node(report, group["id"])["progress_from"]) \
        == ("0.00", "children")
    assert (objective_node(report, team_b["id"])["progress"], objective_node(report, team_b["id"])["progress_from"]) \
        == ("1.00", "key_results")
    node = objective_node(report, company["id"])
    assert (node["progress"], node["progress_from"]) == ("0.75", "children")  # (0.50 + 1.00) / 2
    # The cycle's progress is the mean of the objectives' own, as before: a roll-up is not counted twice.
    assert report["progress"] == "0.50"  # (0.50 + 1.00 + 0.00) / 3
    objective_report = client.get(f"/v1/objectives/{company['id']}/report").get_json()["objective"]
    assert (objective_report["progress"], objective_report["progress_from"]) == ("0.75", "children")


def test_a_roll_up_counts_only_children_of_the_same_cycle(client, cycle):
    parent = make_objective(client, cycle["id"], "Year goal")
    other = make_cycle(client, "Q2")
    child = make_objective(client, other["id"], "Q2 part", parent_objective_id=parent["id"])
    add_kr(client, child["id"], "0", "10", "10")
    node = client.get(f"/v1/objectives/{parent['id']}/report").get_json()["objective"]
    assert (node["progress"], node["progress_from"]) == (None, None)
    assert node["children"][0]["progress"] == "1.00"


def test_an_objective_with_nothing_below_has_no_progress(client, cycle):
    objective = make_objective(client, cycle["id"])
    node = cycle_report(client, cycle["id"])["objectives"][0]
    assert (node["id"], node["progress"], node["progress_from"]) == (objective["id"], None, None)


# --- the cycle's CSV over the API ------------------------------------------------------------------------


def test_report_csv_is_the_file_okr_export_writes(app, client, runner, cycle, tmp_path):
    ada = make_user(runner)
    objective = make_objective(client, cycle["id"], "=Grow")
    make_key_result(client, objective["id"], "Ship", type="milestone", target_value_min=None, owner_id=ada["id"])
    response = client.get(f"/v1/cycles/{cycle['id']}/report.csv")
    assert response.status_code == 200
    assert response.mimetype == "text/csv"
    assert "attachment" in response.headers["Content-Disposition"]
    path = tmp_path / "cycle.csv"
    result = runner.invoke(args=["export", "--format", "csv", "--cycle", cycle["id"], str(path)])
    assert result.exit_code == 0, result.output
    assert response.get_data() == path.read_bytes()
    [row] = csv.DictReader(io.StringIO(response.get_data().decode("utf-8-sig")))
    assert (row["objective"], row["owner_id"], row["owner"], row["status"]) == (
        "'=Grow", ada["id"], "Ada Lovelace", "no_update")
    assert_error(client.get("/v1/cycles/00000000-0000-4000-8000-000000000009/report.csv"), 404)
