"""GET /v1/cycles/:id/calibration: the confidence people gave at their check-ins against how their key results
ended, per owner and per team, checked against docs/api.md's worked example computed by hand."""
from datetime import datetime, timezone

from helpers import assert_error, fetch, make_key_result, make_objective, make_user
from okr.reports import calibration


def groups(answer, kind):
    return {group["name"]: group for group in answer[kind]}


def test_the_worked_example_gives_the_figures_computed_by_hand(client, worked_example):
    answer = fetch(client, f"/v1/cycles/{worked_example['cycle']}/calibration")
    assert (answer["closed"], answer["as_of"], answer["achieved_from"]) == (True, "2027-01-02T09:00:00Z", "0.70")
    owners = groups(answer, "owners")
    # Ada: signups achieved (0.80), churn not (0.30): (0.8-1)² + (0.9-1)² + (0.7-0)² + (0.8-0)² = 1.18, / 4 = 0.295,
    # half to even 0.30; over-confidence (-0.2 - 0.1 + 0.7 + 0.8) / 4 = 0.30.
    ada = owners["Ada Lovelace"]
    assert (ada["owner_id"], ada["key_results"], ada["checkins"]) == (worked_example["ada"], 2, 4)
    assert (ada["brier"], ada["over_confidence"]) == ("0.30", "0.30")
    # Bob scored his launch 0.50 at the close (its progress was 1.00): not achieved, (0.6 - 0)² = 0.36.
    bob = owners["Bob"]
    assert (bob["key_results"], bob["checkins"], bob["brier"], bob["over_confidence"]) == (1, 1, "0.36", "0.60")
    # Churn: 0.80 on 2026-12-10, in the last third (from 2026-12-01), and 0.30 at the close: called green, landed red.
    assert ada["called_green_landed_red"] == [{
        "id": worked_example["churn"], "name": "Churn", "objective_id": worked_example["growth"],
        "confidence": "0.80", "checked_in_at": "2026-12-10T10:00:00Z", "final_score": "0.30"}]
    assert bob["called_green_landed_red"] == []
    teams = groups(answer, "teams")
    assert [group["name"] for group in answer["teams"]] == ["Blue", "Red"]
    assert {key: teams["Red"][key] for key in ada if key not in ("owner_id", "name")} == \
        {key: ada[key] for key in ada if key not in ("owner_id", "name")}
    assert (teams["Blue"]["team_id"], teams["Blue"]["brier"]) == (worked_example["blue"], "0.36")


def test_the_retrospective_page_shows_the_same_calibration(app, client, worked_example):
    from okr.db import get_db
    from okr.progress import parse_timestamp
    from okr.reports import retrospective
    from okr.store import cycles
    alone = fetch(client, f"/v1/cycles/{worked_example['cycle']}/calibration")
    with app.test_request_context("/"):
        db = get_db()
        page = retrospective.retrospective_page(db, cycles.get(db, worked_example["cycle"]),
                                                parse_timestamp("2027-01-02T09:00:00Z"))
    assert page["calibration"] == {"owners": alone["owners"], "teams": alone["teams"]}
    assert "calibration" not in fetch(client, f"/v1/cycles/{worked_example['cycle']}/retrospective")


def test_one_team_s_calibration_keeps_only_its_objectives(client, worked_example):
    answer = fetch(client, f"/v1/cycles/{worked_example['cycle']}/calibration?team_id={worked_example['blue']}")
    assert answer["team"] == {"id": worked_example["blue"], "name": "Blue"}
    assert [group["name"] for group in answer["owners"]] == ["Bob"]
    assert [group["name"] for group in answer["teams"]] == ["Blue"]


def test_unknown_cycles_and_teams_are_404_and_a_bad_team_id_is_400(client, worked_example):
    cycle = worked_example["cycle"]
    for path in ("calibration", "retrospective"):
        assert_error(client.get(f"/v1/cycles/{cycle}/{path}?team_id=00000000-0000-4000-8000-000000000000"), 404)
        assert_error(client.get(f"/v1/cycles/00000000-0000-4000-8000-000000000000/{path}"), 404)
        assert_error(client.get(f"/v1/cycles/{cycle}/{path}?team_id=red"), 400, "team_id")


def test_an_open_cycle_is_calibrated_as_of_now_without_an_owner_or_team_last(client, runner, clock):
    clock.now = "2026-03-01T00:00:00Z"
    cycle = client.post("/v1/cycles", json={"name": "undated"}).get_json()["id"]
    ada = make_user(runner)["id"]
    mine = make_objective(client, cycle, "Mine")["id"]
    fields = {"type": "positive", "current_value": "0", "target_value_min": "10"}
    owned = make_key_result(client, mine, "Owned", owner_id=ada, **fields)["id"]
    nobody = make_key_result(client, mine, "Nobody's", **fields)["id"]
    make_key_result(client, mine, "Watched", type="baseline", current_value="3", target_value_min=None)  # left out
    # Without dates, the last third is of the time from the first check-in (03-01) to now (03-31): from 03-21.
    for key_result, day, value, confidence in ((owned, "03-10", "9", "0.3"), (nobody, "03-20", "1", "0.9"),
                                               (nobody, "03-22", "1", "0.7")):
        clock.now = f"2026-{day}T00:00:00Z"
        client.post(f"/v1/keyresults/{key_result}/checkins", json={"value": value, "confidence": confidence})
    clock.now = "2026-03-31T00:00:00Z"
    answer = fetch(client, f"/v1/cycles/{cycle}/calibration")
    assert (answer["closed"], answer["as_of"], answer["cycle"]["closed_at"]) == (False, "2026-03-31T00:00:00Z", None)
    assert [(g["owner_id"], g["name"]) for g in answer["owners"]] == [(ada, "Ada Lovelace"), (None, "No owner")]
    owned_group, nobody_group = answer["owners"]
    # Owned reached 0.90, achieved, at a confidence of 0.3: under-confident.
    assert (owned_group["brier"], owned_group["over_confidence"]) == ("0.49", "-0.70")
    # Nobody's ended at 0.10: 0.90 on 03-20 is before the last third, 0.70 on 03-22 in it.
    assert (nobody_group["key_results"], nobody_group["checkins"], nobody_group["brier"]) == (1, 2, "0.65")
    assert [(kr["name"], kr["confidence"], kr["checked_in_at"]) for kr in nobody_group["called_green_landed_red"]] \
        == [("Nobody's", "0.70", "2026-03-22T00:00:00Z")]
    assert [(g["team_id"], g["name"], g["key_results"]) for g in answer["teams"]] == [(None, "No team", 2)]


def test_an_owner_without_check_ins_has_no_figures(client, runner, cycle):
    ada = make_user(runner)["id"]
    mine = make_objective(client, cycle["id"], "Mine")["id"]
    make_key_result(client, mine, "Untouched", owner_id=ada)
    [group] = fetch(client, f"/v1/cycles/{cycle['id']}/calibration")["owners"]
    assert (group["key_results"], group["checkins"], group["brier"], group["over_confidence"]) == (1, 0, None, None)


def test_the_last_third_of_a_dated_cycle_starts_two_thirds_through_its_days():
    late = calibration.late_test("2026-10-01", "2026-12-31", None, None)
    assert not late("2026-11-30T23:59:59Z")  # day 60 of 91
    assert late("2026-12-01T00:00:00Z")  # day 61 of 91: 0.67
    undated = calibration.late_test(None, None, "2026-01-01T00:00:00Z",
                                    datetime(2026, 1, 4, tzinfo=timezone.utc))
    assert not undated("2026-01-02T23:59:59Z") and undated("2026-01-03T00:00:00Z")
    assert not calibration.late_test(None, None, None, None)("2026-01-03T00:00:00Z")  # no check-in at all


def test_means_are_rounded_once_half_to_even():
    entries = [({"id": "k", "name": "k", "objective_id": "o", "owner_id": None}, None, "0.00", ["0.5", "0"],
                ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"])]
    [group] = calibration.calibrate(entries, lambda created_at: False, {}, {})["owners"]
    assert (group["brier"], group["over_confidence"]) == ("0.12", "0.25")  # 0.125 rounds to the even 0.12
