"""GET /v1/cycles/:id/retrospective: scores, outcomes and reflections, the biggest movers, what went from on track to
off track, what was carried over, as of the close (or now)."""
from helpers import fetch, make_key_result, make_objective, statements_of
from okr.db import transaction


def retrospective(client, cycle_id, query=""):
    return fetch(client, f"/v1/cycles/{cycle_id}/retrospective{query}")


def test_scores_outcomes_and_progress_at_the_start_and_the_close(client, worked_example):
    answer = retrospective(client, worked_example["cycle"])
    assert (answer["closed"], answer["as_of"], answer["team"]) == (True, "2027-01-02T09:00:00Z", None)
    assert answer["outcome_counts"] == {"achieved": 1, "partly_achieved": 1, "missed": 0, "dropped": 0,
                                        "carried_over": 0, "not_scored": 0}
    grow, ship = answer["objectives"]
    assert (grow["name"], grow["team_name"], grow["outcome"], grow["score"], grow["progress"]) == \
        ("Grow", "Red", "partly_achieved", "0.55", "0.55")
    launch = ship["key_results"][0]
    # Bob's own score stands; its progress at the close does not change it.
    assert (launch["owner_name"], launch["progress_at_start"], launch["progress_at_close"], launch["score"],
            launch["final_score"], launch["achieved"]) == ("Bob", "0.00", "1.00", "0.50", "0.50", False)


def test_the_movers_rose_most_and_fell_most_or_stayed_flat(client, cycle):
    objective = make_objective(client, cycle["id"])["id"]
    made = {}
    # positive from 0 to 10: each reaches its own value; "Band" starts inside its range and leaves it.
    for name, value in (("Six", "6"), ("Two", "2"), ("Ten", "10"), ("Four", "4"), ("Eight", "8"), ("One", "1"),
                        ("Flat", "0"), ("Still", "0")):
        made[name] = make_key_result(client, objective, name, type="positive", current_value="0",
                                     target_value_min="10")["id"]
        client.post(f"/v1/keyresults/{made[name]}/checkins", json={"value": value})
    band = make_key_result(client, objective, "Band", type="range", current_value="5", target_value_min="1",
                           target_value_max="9")["id"]
    client.post(f"/v1/keyresults/{band}/checkins", json={"value": "12"})
    make_key_result(client, objective, "Watched", type="baseline", current_value="3", target_value_min=None)
    movers = retrospective(client, cycle["id"])["movers"]
    assert [(m["name"], m["change"]) for m in movers["rose"]] == [
        ("Ten", "1.00"), ("Eight", "0.80"), ("Six", "0.60"), ("Four", "0.40"), ("Two", "0.20")]
    assert [(m["name"], m["progress_at_start"], m["progress_at_close"], m["change"]) for m in movers["fell"]] == [
        ("Band", "1.00", "0.00", "-1.00"), ("Flat", "0.00", "0.00", "0.00"), ("Still", "0.00", "0.00", "0.00")]


def test_a_key_result_that_went_from_on_track_to_off_track_says_since_when(client, worked_example):
    [went] = retrospective(client, worked_example["cycle"])["went_off_track"]
    # Churn: on track on 2026-11-01 (3 of 10, a third of the cycle gone), off track by pace from 2026-12-10 on.
    assert went == {"id": worked_example["churn"], "name": "Churn", "objective_id": worked_example["growth"],
                    "owner_id": worked_example["ada"], "off_track_since": "2026-12-10T10:00:00Z"}


def test_off_track_since_is_the_first_check_in_of_the_last_run(client, cycle, clock):
    objective = make_objective(client, cycle["id"])["id"]
    key_result = make_key_result(client, objective, "Wobbly")["id"]
    never = make_key_result(client, objective, "Never on track")["id"]
    for index, confidence in enumerate(("0.9", "0.1", "0.8", "0.2", "0.3")):
        clock.now = f"2026-02-0{index + 1}T00:00:00Z"
        client.post(f"/v1/keyresults/{key_result}/checkins", json={"value": "50", "confidence": confidence})
        client.post(f"/v1/keyresults/{never}/checkins", json={"value": "50", "confidence": "0.1"})
    [went] = retrospective(client, cycle["id"])["went_off_track"]
    assert (went["name"], went["off_track_since"]) == ("Wobbly", "2026-02-04T00:00:00Z")


def test_carried_over_objectives_and_their_copies(app, client, cycle, worked_example):
    growth = worked_example["growth"]
    with app.app_context(), transaction() as db:  # as the other cycle's carry-over picking sets it
        db.execute("UPDATE cycles SET closed_at = NULL WHERE id = ?", (worked_example["cycle"],))
        db.execute("UPDATE objectives SET outcome = 'carried_over', reflection = 'Not yet' WHERE id = ?", (growth,))
        db.execute("UPDATE cycles SET closed_at = '2027-01-02T09:00:00Z' WHERE id = ?", (worked_example["cycle"],))
    copy = make_objective(client, cycle["id"], "Grow, again")
    with app.app_context(), transaction() as db:
        db.execute("UPDATE objectives SET carried_from_id = ? WHERE id = ?", (growth, copy["id"]))
    answer = retrospective(client, worked_example["cycle"])
    assert answer["carried_over"] == {
        "objectives": [{"id": growth, "name": "Grow"}],
        "copies": [{"id": copy["id"], "name": "Grow, again", "cycle_id": cycle["id"], "cycle_name": cycle["name"],
                    "carried_from_id": growth}]}
    assert answer["objectives"][0]["reflection"] == "Not yet"
    assert answer["outcome_counts"]["carried_over"] == 1
    assert retrospective(client, worked_example["cycle"], f"?team_id={worked_example['blue']}")["carried_over"] == {
        "objectives": [], "copies": []}


def test_one_team_s_retrospective(client, worked_example):
    answer = retrospective(client, worked_example["cycle"], f"?team_id={worked_example['red']}")
    assert answer["team"] == {"id": worked_example["red"], "name": "Red"}
    assert [o["name"] for o in answer["objectives"]] == ["Grow"]
    assert [m["name"] for m in answer["movers"]["rose"]] == ["Signups", "Churn"]
    assert (answer["objectives_count"], answer["key_results_count"]) == (1, 2)


def test_an_open_cycle_is_as_of_now(client, cycle, key_result, clock):
    clock.now = "2030-05-01T00:00:00Z"
    client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": "8"})
    answer = retrospective(client, cycle["id"])
    assert (answer["closed"], answer["as_of"], answer["outcome_counts"]["not_scored"]) == (
        False, "2030-05-01T00:00:00Z", 1)
    assert answer["objectives"][0]["key_results"][0]["final_score"] == "0.60"  # its progress: from 5 to 8 of 10


def test_a_check_in_after_the_close_time_is_not_counted(app, client, worked_example):
    with app.app_context(), transaction() as db:  # reopened, as of its first close: the later check-ins stay out
        db.execute("UPDATE cycles SET closed_at = '2026-12-07T00:00:00Z' WHERE id = ?", (worked_example["cycle"],))
    answer = retrospective(client, worked_example["cycle"])
    churn = answer["objectives"][0]["key_results"][1]
    assert churn["progress_at_close"] == "0.30" and answer["went_off_track"] == []
    calibration = fetch(client, f"/v1/cycles/{worked_example['cycle']}/calibration")
    assert [g["checkins"] for g in calibration["owners"]] == [3, 0]


def test_the_queries_do_not_grow_with_the_key_results(app, client, cycle):
    objective = make_objective(client, cycle["id"])["id"]
    make_key_result(client, objective)
    path = f"/v1/cycles/{cycle['id']}/retrospective"
    few = len(statements_of(app, client, path))
    for number in range(10):
        key_result = make_key_result(client, objective, f"KR {number}")["id"]
        client.post(f"/v1/keyresults/{key_result}/checkins", json={"value": "7"})
    assert len(statements_of(app, client, path)) == few
