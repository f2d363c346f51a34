"""Closing a cycle (issue 36): scores, outcomes and reflections through PATCH, POST /v1/cycles/:id/close giving
what nobody scored its suggestion, the lock on everything in a closed cycle (409 "cycle is closed", before any
If-Match), reopening by an admin only, and each step an event."""
import json
import sqlite3
from contextlib import closing

import pytest

from helpers import assert_error, fetch, make_cycle, make_key_result, make_objective, make_team
from okr.db import project_error, transaction
from okr.errors import CycleClosed
from okr.store import objectives as stored_objectives
from okr.store import webhooks

CLOSED = "cycle is closed"


@pytest.fixture
def key_result_fields():
    """From 30 to 100 customers."""
    return {"name": "Reach 100 customers", "type": "positive", "current_value": "30", "target_value_min": "100"}


@pytest.fixture
def key_result(key_result, client):
    """Checked in at 51: 21 of the 70 to go, a progress of 0.30."""
    assert client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": "51"}).status_code == 200
    return key_result


def close(client, cycle, headers=None):
    return client.post(f"/v1/cycles/{cycle['id']}/close", headers=headers)


def closed(client, cycle, headers=None):
    response = close(client, cycle, headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def events_of(app, pattern):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        rows = db.execute("SELECT type, resource_id, data, changes FROM events WHERE type GLOB ? ORDER BY seq",
                          (pattern,)).fetchall()
    return [(row[0], row[1], json.loads(row[2]), row[3] and json.loads(row[3])) for row in rows]


def test_scores_outcomes_and_reflections_go_through_patch_and_a_spec_post_keeps_them(client, objective, key_result):
    path = f"/v1/objectives/{objective['id']}"
    response = client.patch(path, json={"outcome": "partly_achieved", "score": "0.4",
                                        "reflection": "Worked: demos. Next: pricing."})
    assert response.status_code == 200, response.get_json()
    answer = response.get_json()
    assert (answer["outcome"], answer["score"], answer["reflection"]) == (
        "partly_achieved", "0.40", "Worked: demos. Next: pricing.")
    assert response.headers["ETag"] == client.get(path).headers["ETag"]
    assert "score" not in fetch(client, path)  # the spec's objective keeps its shape
    scored = client.patch(f"/v1/keyresults/{key_result['id']}", json={"score": "0.3"}).get_json()
    assert scored["score"] == "0.30"
    # The spec's full update names none of them: they stay.
    assert client.post(path, json={"name": "Grow more", "cycle_id": objective["cycle_id"]}).status_code == 200
    assert client.post(f"/v1/keyresults/{key_result['id']}", json={"name": "Reach", "type": "baseline"}).status_code == 200
    report = client.get(f"/v1/objectives/{objective['id']}/report").get_json()["objective"]
    assert (report["outcome"], report["score"], report["key_results"][0]["score"]) == (
        "partly_achieved", "0.40", "0.30")


@pytest.mark.parametrize("body, field", [({"score": "1.01"}, "score"), ({"score": "-0.1"}, "score"),
                                         ({"score": "high"}, "score"), ({"outcome": "won"}, "outcome"),
                                         ({"reflection": "x" * 10_001}, "reflection")])
def test_a_bad_score_or_outcome_is_refused_and_nothing_changes(client, objective, body, field):
    path = f"/v1/objectives/{objective['id']}"
    assert client.patch(path, json={"score": "0.5", "outcome": "missed"}).status_code == 200
    before = client.get(path).headers["ETag"]
    assert field in assert_error(client.patch(path, json=body), 400)["details"]
    assert client.get(path).headers["ETag"] == before
    report = client.get(f"/v1/objectives/{objective['id']}/report").get_json()["objective"]
    assert (report["score"], report["outcome"], report["reflection"]) == ("0.50", "missed", None)


def test_a_key_results_score_outside_0_to_1_is_refused(client, key_result):
    assert "score" in assert_error(client.patch(f"/v1/keyresults/{key_result['id']}", json={"score": "2"}),
                                   400)["details"]


def test_closing_gives_what_nobody_scored_its_suggestion_and_keeps_what_was(app, client, cycle, objective,
                                                                              key_result):
    other = make_objective(client, cycle["id"], name="Ship the app")
    done = make_key_result(client, other["id"], name="Ship", type="milestone", current_value="1",
                           target_value_min="1")
    client.patch(f"/v1/objectives/{other['id']}", json={"outcome": "dropped", "reflection": "Not now."})
    answer = closed(client, cycle)
    assert answer["closed_at"] is not None and answer["state"] == "current"
    assert list(answer)[-2:] == ["closed_at", "closed_by"]
    report = client.get(f"/v1/cycles/{cycle['id']}/report").get_json()
    assert (report["cycle"]["closed_at"], report["cycle"]["closed_by"]) == (answer["closed_at"], None)
    first, second = report["objectives"]
    # 30 of 100: a score of 0.30, partly achieved; the milestone done: 1.00, and its dropped outcome kept.
    assert (first["score"], first["outcome"], first["key_results"][0]["score"]) == ("0.30", "partly_achieved", "0.30")
    assert (second["score"], second["outcome"], second["reflection"]) == ("1.00", "dropped", "Not now.")
    assert second["key_results"][0]["score"] == "1.00"
    kinds = [event[0] for event in events_of(app, "*.scored")] + [event[0] for event in events_of(app, "cycle.*")]
    assert kinds.count("objective.scored") == 3 and kinds.count("key_result.scored") == 2
    assert kinds[-1] == "cycle.closed"
    assert done["id"] in {event[1] for event in events_of(app, "key_result.scored")}


def test_a_closed_cycle_is_locked_through_the_api_before_any_if_match(app, client, cycle, objective, key_result):
    comment = client.post(f"/v1/objectives/{objective['id']}/comments", json={"body": "Go"}).get_json()
    made = client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": "40"}).get_json()
    open_cycle = make_cycle(client, "Q2")
    outside = make_objective(client, open_cycle["id"], name="Elsewhere")
    closed(client, cycle)
    stale = {"If-Match": '"0123456789abcdef01234567"'}
    objective_path, key_result_path = f"/v1/objectives/{objective['id']}", f"/v1/keyresults/{key_result['id']}"
    refused = [
        client.post(f"{key_result_path}/checkins", json={"value": "50"}),
        client.post(f"{key_result_path}/checkins", json={"value": "50"}, headers=stale),
        client.patch(f"/v1/checkins/{made['id']}", json={"value": "45"}),
        client.delete(f"/v1/checkins/{made['id']}"),
        client.patch(objective_path, json={"name": "Renamed"}, headers=stale),
        client.post(objective_path, json={"name": "Renamed", "cycle_id": cycle["id"]}, headers=stale),
        client.patch(objective_path, json={"cycle_id": open_cycle["id"]}),  # moving out
        client.patch(f"/v1/objectives/{outside['id']}", json={"cycle_id": cycle["id"]}),  # moving in
        client.post("/v1/objectives", json={"name": "New", "cycle_id": cycle["id"], "is_company": False,
                                            "is_personal": False}),
        client.delete(objective_path, headers=stale),
        client.patch(key_result_path, json={"score": "0.9"}, headers=stale),
        client.delete(key_result_path),
        client.post(f"/v1/objectives/{objective['id']}/keyresults", json={"name": "More", "type": "baseline"}),
        client.post(f"/v1/objectives/{objective['id']}/comments", json={"body": "Late"}),
        client.post(f"{key_result_path}/comments", json={"body": "Late"}),
        client.patch(f"/v1/comments/{comment['id']}", json={"body": "Edited"}),
        client.delete(f"/v1/comments/{comment['id']}"),
        client.post(f"/v1/cycles/{cycle['id']}", json={"name": "Renamed"}, headers=stale),
        client.patch(f"/v1/cycles/{cycle['id']}", json={"ends_on": "2030-01-01"}),
        client.delete(f"/v1/cycles/{cycle['id']}"),
    ]
    for response in refused:
        assert assert_error(response, 409)["message"] == CLOSED
    assert fetch(client, key_result_path)["current_value"] == "40.00"
    assert fetch(client, objective_path)["name"] == objective["name"]
    assert fetch(client, f"/v1/objectives/{outside['id']}")["cycle_id"] == open_cycle["id"]
    assert fetch(client, f"/v1/comments/{comment['id']}")["body"] == "Go"
    # Reading stays open, and people or teams may still go: their references are cleared.
    assert client.get(f"/v1/cycles/{cycle['id']}/report").status_code == 200


def test_a_team_deleted_leaves_a_closed_cycles_objectives_without_it(client, cycle):
    team = make_team(client)
    objective = make_objective(client, cycle["id"], team_id=team["id"])
    closed(client, cycle)
    assert client.delete(f"/v1/teams/{team['id']}").status_code == 200
    assert fetch(client, f"/v1/objectives/{objective['id']}")["team_id"] is None


def test_the_databases_triggers_refuse_a_writer_that_skips_the_check(app, client, cycle, objective, key_result):
    closed(client, cycle)
    values = {**objective, "name": "Behind the API's back", "is_company": False, "is_personal": False}
    with app.app_context():
        with pytest.raises(sqlite3.IntegrityError) as raised, transaction() as db:
            stored_objectives.replace(db, objective["id"], values)
        with app.test_request_context():
            assert isinstance(project_error(raised.value), CycleClosed)
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        for statement in ("DELETE FROM checkins", "DELETE FROM key_results", "DELETE FROM objectives",
                          "UPDATE key_results SET current_value = '1.00'"):
            with pytest.raises(sqlite3.IntegrityError, match=CLOSED):
                db.execute(statement)


def test_closing_twice_an_upcoming_cycle_and_reopening_an_open_one_are_409(client, clock, cycle):
    clock.now = "2026-05-01T00:00:00Z"
    later = client.post("/v1/cycles", json={"name": "Q4", "starts_on": "2026-10-01"}).get_json()
    assert "upcoming" in assert_error(close(client, later), 409)["message"]
    assert assert_error(client.post(f"/v1/cycles/{cycle['id']}/reopen"), 409)["message"] == "cycle is not closed"
    closed(client, cycle)
    assert assert_error(close(client, cycle), 409)["message"] == "cycle is already closed"
    assert_error(client.post("/v1/cycles/00000000-0000-4000-8000-000000000000/close"), 404)


def test_an_editor_closes_only_an_admin_reopens_and_both_are_events(app, client, make_person, cycle, objective,
                                                                   key_result):
    editor, admin, viewer = make_person("editor"), make_person("admin"), make_person("viewer")
    assert_error(close(client, cycle, viewer.headers()), 403)
    answer = closed(client, cycle, editor.headers())
    assert answer["closed_by"] == editor.id
    path = f"/v1/cycles/{cycle['id']}/reopen"
    body = assert_error(client.post(path, headers=editor.headers()), 403)
    assert "Only an admin may reopen a closed cycle" in body["message"]
    reopened = client.post(path, headers=admin.headers())
    assert reopened.status_code == 200
    assert (reopened.get_json()["closed_at"], reopened.get_json()["closed_by"]) == (None, None)
    # Reopened, it takes changes again, and its scores stayed.
    assert client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": "50"},
                       headers=editor.headers()).status_code == 200
    report = client.get(f"/v1/cycles/{cycle['id']}/report", headers=viewer.headers()).get_json()
    assert report["objectives"][0]["score"] == "0.30"
    kinds = [(kind, data["closed_by"], changes) for kind, _, data, changes in events_of(app, "cycle.*")
             if kind in ("cycle.closed", "cycle.reopened")]
    assert kinds[0][:2] == ("cycle.closed", editor.id)
    assert kinds[1][0] == "cycle.reopened" and kinds[1][2]["closed_by"] == [editor.id, None]


def test_a_webhook_is_given_the_closing_the_scores_and_the_reopening(app, client, cycle, objective, key_result):
    with app.app_context(), transaction() as db:
        hook = webhooks.add(db, "https://hooks.example.com/okr", ["cycle.*", "*.scored"])
    closed(client, cycle)
    assert client.post(f"/v1/cycles/{cycle['id']}/reopen").status_code == 200
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        queued = db.execute("""SELECT e.type FROM webhook_outbox o JOIN events e ON e.seq = o.event_seq
                               WHERE o.hook_seq = ? ORDER BY e.seq""", (hook["seq"],)).fetchall()
    assert [row[0] for row in queued] == ["objective.scored", "key_result.scored", "cycle.closed", "cycle.reopened"]
