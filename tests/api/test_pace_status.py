"""Status from pace and confidence in the reports: each key result's expected_progress and pace_status, each
objective's status, the cycle's elapsed and status_counts, in the JSON reports and the CSV, by the one clock."""
import csv
import io
import sqlite3
from contextlib import closing
from datetime import datetime, timezone

from helpers import fetch, make_key_result, make_objective
from okr.progress import STATUSES
from okr.reports import alignment

HALFWAY = "2026-11-15T12:00:00Z"  # half of the 90 days from 2026-10-01 to 2026-12-30


def dated_cycle(client, starts_on="2026-10-01", ends_on="2026-12-30"):
    response = client.post("/v1/cycles", json={"name": "Q4", "starts_on": starts_on, "ends_on": ends_on})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def checkin(client, key_result_id, value, confidence="0.90"):
    response = client.post(f"/v1/keyresults/{key_result_id}/checkins",
                           json={"value": value, "confidence": confidence})
    assert response.status_code == 200, response.get_json()


def counts(**some):
    return {name: some.get(name, 0) for name in STATUSES}


def key_results_of(report):
    found, stack = {}, list(report["objectives"])
    while stack:
        node = stack.pop()
        found.update({k["name"]: k for k in node["key_results"]})
        stack.extend(node["children"])
    return found


def csv_rows(client, cycle_id):
    response = client.get(f"/v1/cycles/{cycle_id}/report.csv")
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(response.get_data(as_text=True).lstrip("\ufeff"))))


def test_key_results_keep_pace_or_fall_behind_by_the_clock(client, clock):
    clock.now = "2026-10-01T09:00:00Z"
    cycle = dated_cycle(client)
    grow = make_objective(client, cycle["id"], "Grow")
    names = {}
    for name, kind, target in (("ahead", "positive", "100"), ("behind", "positive", "100"),
                               ("far behind", "positive", "100"), ("shipped", "milestone", "1"),
                               ("untouched", "positive", "100")):
        names[name] = make_key_result(client, grow["id"], name, type=kind, current_value="0", confidence="0.9",
                                      target_value_min=target)
    clock.now = HALFWAY
    checkin(client, names["ahead"]["id"], "40")        # 0.10 short of 0.50: on track
    checkin(client, names["behind"]["id"], "39")       # 0.11 short: at risk
    checkin(client, names["far behind"]["id"], "24")   # 0.26 short: off track
    checkin(client, names["shipped"]["id"], "1")
    report = fetch(client, f"/v1/cycles/{cycle['id']}/report")
    assert report["cycle"]["elapsed"] == "0.50"
    assert report["cycle"]["status_counts"] == counts(on_track=1, at_risk=1, off_track=1, done=1, no_update=1)
    shown = {name: (k["expected_progress"], k["pace_status"], k["status"])
             for name, k in key_results_of(report).items()}
    assert shown == {"ahead": ("0.50", "on_track", "on_track"), "behind": ("0.50", "at_risk", "at_risk"),
                     "far behind": ("0.50", "off_track", "off_track"), "shipped": ("0.50", "on_track", "done"),
                     "untouched": ("0.50", "off_track", "no_update")}
    assert report["objectives"][0]["status"] == "off_track"
    # The objective's report says the same of the same key results.
    objective = fetch(client, f"/v1/objectives/{grow['id']}/report")["objective"]
    assert objective["status"] == "off_track"
    assert {k["name"]: (k["expected_progress"], k["pace_status"], k["status"])
            for k in objective["key_results"]} == shown
    # The CSV: the new columns at the end, the old ones where they were.
    rows = csv_rows(client, cycle["id"])
    assert list(rows[0])[-7:-3] == ["expected_progress", "pace_status", "objective_status", "weight"]
    assert list(rows[0])[:20][15] == "status"
    assert {row["key_result"]: (row["expected_progress"], row["pace_status"], row["status"])
            for row in rows} == shown
    assert {row["objective_status"] for row in rows} == {"off_track"}


def test_the_same_progress_slips_as_the_quarter_goes_by(client, clock):
    clock.now = "2026-10-01T09:00:00Z"
    cycle = dated_cycle(client)
    kr = make_key_result(client, make_objective(client, cycle["id"])["id"], "Reach", current_value="0",
                         target_value_min="100", confidence="0.9")
    checkin(client, kr["id"], "40")
    seen = []
    for now in ("2026-09-01T00:00:00Z", "2026-10-01T00:00:00Z", HALFWAY, "2026-12-01T00:00:00Z",  # 61 of 90 days
                "2027-02-01T00:00:00Z"):
        clock.now = now
        report = fetch(client, f"/v1/cycles/{cycle['id']}/report")
        k = key_results_of(report)["Reach"]
        seen.append((report["cycle"]["elapsed"], k["expected_progress"], k["pace_status"], k["status"]))
    assert seen == [("0.00", "0.00", "on_track", "on_track"), ("0.00", "0.00", "on_track", "on_track"),
                    ("0.50", "0.50", "on_track", "on_track"), ("0.68", "0.68", "off_track", "off_track"),
                    ("1.00", "1.00", "off_track", "off_track")]


def test_without_both_dates_there_is_no_pace(client, clock):
    clock.now = HALFWAY
    cycle = dated_cycle(client, starts_on="2026-10-01", ends_on=None)
    kr = make_key_result(client, make_objective(client, cycle["id"])["id"], "Reach", current_value="0",
                         target_value_min="100", confidence="0.5")
    checkin(client, kr["id"], "1", confidence="0.5")
    report = fetch(client, f"/v1/cycles/{cycle['id']}/report")
    assert report["cycle"]["elapsed"] is None
    k = key_results_of(report)["Reach"]
    assert (k["expected_progress"], k["pace_status"], k["status"]) == (None, None, "at_risk")
    assert csv_rows(client, cycle["id"])[0]["expected_progress"] == ""


def test_a_range_is_done_only_once_its_cycle_has_ended(client, clock):
    clock.now = "2026-10-01T09:00:00Z"
    cycle = dated_cycle(client)
    objective = make_objective(client, cycle["id"])
    kr = make_key_result(client, objective["id"], "Band", type="range", current_value="2", target_value_min="1",
                         target_value_max="4", confidence="0.9")
    checkin(client, kr["id"], "3")
    statuses = []
    for now in (HALFWAY, "2026-12-30T23:00:00Z", "2026-12-31T00:00:00Z"):
        clock.now = now
        k = key_results_of(fetch(client, f"/v1/cycles/{cycle['id']}/report"))["Band"]
        statuses.append((k["pace_status"], k["status"]))
    assert statuses == [("on_track", "on_track"), ("on_track", "on_track"), ("on_track", "done")]
    objective_report = fetch(client, f"/v1/objectives/{objective['id']}/report")["objective"]
    assert objective_report["status"] == "done"


def test_an_objective_without_key_results_takes_its_childrens_worst(client, clock):
    clock.now = "2026-10-01T09:00:00Z"
    cycle = dated_cycle(client)
    top = make_objective(client, cycle["id"], "Top")
    done_child = make_objective(client, cycle["id"], "Shipped", parent_objective_id=top["id"])
    late_child = make_objective(client, cycle["id"], "Late", parent_objective_id=top["id"])
    empty = make_objective(client, cycle["id"], "Empty")
    shipped = make_key_result(client, done_child["id"], "ship", type="milestone", current_value="0",
                              target_value_min="1", confidence="0.9")
    late = make_key_result(client, late_child["id"], "late", current_value="0", target_value_min="100",
                           confidence="0.9")
    clock.now = HALFWAY
    checkin(client, shipped["id"], "1")
    checkin(client, late["id"], "35")  # 0.15 short: at risk
    report = fetch(client, f"/v1/cycles/{cycle['id']}/report")
    by_name = {node["name"]: node for node in report["objectives"]}
    assert by_name["Top"]["status"] == "at_risk"
    assert {child["name"]: child["status"] for child in by_name["Top"]["children"]} == {
        "Shipped": "done", "Late": "at_risk"}
    assert by_name["Empty"]["status"] is None
    checkin(client, late["id"], "100")
    report = fetch(client, f"/v1/cycles/{cycle['id']}/report")
    assert {node["name"]: node["status"] for node in report["objectives"]} == {"Top": "done", "Empty": None}
    assert report["cycle"]["status_counts"] == counts(done=2)


def test_the_report_as_of_a_moment_paces_by_that_moment(app, client, clock):
    clock.now = "2026-10-01T09:00:00Z"
    cycle = dated_cycle(client)
    kr = make_key_result(client, make_objective(client, cycle["id"])["id"], "Reach", current_value="0",
                         target_value_min="100", confidence="0.9")
    checkin(client, kr["id"], "40")
    clock.now = "2026-12-01T00:00:00Z"
    with app.app_context(), closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.row_factory = sqlite3.Row
        row = db.execute("SELECT * FROM cycles WHERE id = ?", (cycle["id"],)).fetchone()
        then = alignment.cycle_report_as_of(db, row, datetime(2026, 11, 15, 12, tzinfo=timezone.utc))
    k = then["objectives"][0]["key_results"][0]
    assert (then["cycle"]["elapsed"], k["expected_progress"], k["status"]) == ("0.50", "0.50", "on_track")
    assert fetch(client, f"/v1/cycles/{cycle['id']}/report")["objectives"][0]["key_results"][0][
        "status"] == "off_track"
