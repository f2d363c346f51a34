"""Initiatives over the API: the work under a key result (/v1/keyresults/:id/initiatives, /v1/initiatives/:id),
its bounds and refusals, its events and webhooks, a closed cycle's lock, a key result that takes its progress from
the share of them done, and where they show: the reports, the CSV, the activity feed and okr export."""
import csv
import io
import json
import sqlite3
from contextlib import closing

import pytest

from helpers import assert_error, fetch, make_key_result, make_objective, make_user
from okr.store.initiatives import MAX_PER_KEY_RESULT

MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}


def add(client, key_result_id, **body):
    response = client.post(f"/v1/keyresults/{key_result_id}/initiatives", json={"name": "Ship it", **body})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def patch(client, initiative_id, body, **headers):
    return client.patch(f"/v1/initiatives/{initiative_id}", json=body, headers={**MERGE_PATCH, **headers})


def count(app, sql, *params):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute(sql, params).fetchone()[0]


def stored_events(app, kind):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT type, resource_id, parent_id, cycle_id, data FROM events WHERE resource_type = ? "
                          "ORDER BY seq", (kind,)).fetchall()


def test_an_initiative_is_made_read_listed_changed_and_deleted(app, client, runner, cycle, key_result):
    owner = make_user(runner)
    made = add(client, key_result["id"], owner_id=owner["id"], due_on="2026-12-15",
               link="https://tracker.example.com/PROJ-12")
    assert list(made) == ["id", "key_result_id", "name", "owner_id", "state", "due_on", "link", "created_at",
                          "modified_at"]
    assert (made["key_result_id"], made["state"], made["owner_id"], made["due_on"]) == (
        key_result["id"], "planned", owner["id"], "2026-12-15")
    response = client.get(f"/v1/initiatives/{made['id']}")
    assert response.get_json() == made and response.headers["ETag"]
    second = add(client, key_result["id"], name="Write the docs")
    assert (second["owner_id"], second["due_on"], second["link"]) == (None, None, None)
    listed = fetch(client, f"/v1/keyresults/{key_result['id']}/initiatives?page_size=1")
    assert [i["id"] for i in listed["initiatives"]] == [made["id"]] and listed["next_page_token"]
    rest = fetch(client, f"/v1/keyresults/{key_result['id']}/initiatives?page_token={listed['next_page_token']}")
    assert [i["id"] for i in rest["initiatives"]] == [second["id"]]
    changed = patch(client, made["id"], {"state": "done", "link": None})
    assert changed.status_code == 200
    assert {k: changed.get_json()[k] for k in ("state", "link", "name", "owner_id")} == {
        "state": "done", "link": None, "name": "Ship it", "owner_id": owner["id"]}
    stale = patch(client, made["id"], {"state": "blocked"}, **{"If-Match": response.headers["ETag"]})
    assert_error(stale, 412)
    assert client.delete(f"/v1/initiatives/{made['id']}").status_code == 200
    assert_error(client.get(f"/v1/initiatives/{made['id']}"), 404)
    events = stored_events(app, "initiative")
    assert [e[0] for e in events] == ["initiative.created", "initiative.created", "initiative.updated",
                                      "initiative.deleted"]
    assert {(e[2], e[3]) for e in events} == {(key_result["id"], cycle["id"])}
    assert json.loads(events[2][4])["state"] == "done"


@pytest.mark.parametrize("body, field", [
    ({"name": ""}, "name"),
    ({"name": "   "}, "name"),
    ({"name": "x" * 501}, "name"),
    ({"state": "finished"}, "state"),
    ({"due_on": "15/12/2026"}, "due_on"),
    ({"due_on": "2026-02-30"}, "due_on"),
    ({"link": "javascript:alert(1)"}, "link"),
    ({"link": "JavaScript://%0aalert(1)"}, "link"),
    ({"link": "data:text/html,hi"}, "link"),
    ({"link": "ftp://files.example.com/a"}, "link"),
    ({"link": "/relative/path"}, "link"),
    ({"link": "https:///no-host"}, "link"),
    ({"link": "https://a.example/with space"}, "link"),
    ({"link": "https://a.example/\x07"}, "link"),
    ({"link": " https://a.example/"}, "link"),
    ({"link": "https://a.example/" + "x" * 1990}, "link"),
    ({"owner_id": "00000000-0000-4000-8000-000000000000"}, "owner_id"),
    ({"colour": "red"}, None),
])
def test_bad_fields_are_refused_naming_the_field_and_nothing_is_written(app, client, key_result, body, field):
    before = count(app, "SELECT count(*) FROM events")
    response = client.post(f"/v1/keyresults/{key_result['id']}/initiatives", json={"name": "Ship it", **body})
    if field is None:  # unknown fields are left aside, as everywhere in the API
        assert response.status_code == 200
        return
    answer = assert_error(response, 400)
    assert field in json.dumps(answer)
    assert count(app, "SELECT count(*) FROM initiatives") == 0
    assert count(app, "SELECT count(*) FROM events") == before


def test_a_link_of_2000_characters_is_taken(client, key_result):
    link = "https://a.example/" + "x" * (2000 - len("https://a.example/"))
    assert add(client, key_result["id"], link=link)["link"] == link


def test_a_viewer_cannot_own_an_initiative(client, runner, key_result):
    viewer = make_user(runner, "Vi Ewer", "vi@example.com")
    assert runner.invoke(args=["users", "set-role", "vi@example.com", "viewer"]).exit_code == 0
    answer = assert_error(client.post(f"/v1/keyresults/{key_result['id']}/initiatives",
                                      json={"name": "Ship it", "owner_id": viewer["id"]}), 400)
    assert "owner_id" in answer["details"]


def test_a_key_result_holds_at_most_50_initiatives(app, client, key_result):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.executemany("INSERT INTO initiatives (id, key_result_id, name, created_at, modified_at) "
                       "VALUES (lower(hex(randomblob(16))), ?, ?, '2026-11-01T00:00:00Z', '2026-11-01T00:00:00Z')",
                       [(key_result["id"], f"i{n}") for n in range(MAX_PER_KEY_RESULT - 1)])
    add(client, key_result["id"], name="the fiftieth")
    answer = assert_error(client.post(f"/v1/keyresults/{key_result['id']}/initiatives", json={"name": "one more"}), 400)
    assert "at most 50" in answer["details"]["key_result_id"]
    assert count(app, "SELECT count(*) FROM initiatives") == MAX_PER_KEY_RESULT


def test_done_at_is_when_it_was_last_made_done(app, client, clock, key_result):
    def done_at(initiative_id):
        return count(app, "SELECT done_at FROM initiatives WHERE id = ?", initiative_id)

    clock.now = "2026-03-01T09:00:00Z"
    made = add(client, key_result["id"])
    born_done = add(client, key_result["id"], name="Already", state="done")
    assert (done_at(made["id"]), done_at(born_done["id"])) == (None, "2026-03-01T09:00:00Z")
    clock.now = "2026-03-05T09:00:00Z"
    patch(client, made["id"], {"state": "done"})
    clock.now = "2026-03-07T09:00:00Z"
    patch(client, made["id"], {"name": "Renamed, still done"})
    assert done_at(made["id"]) == "2026-03-05T09:00:00Z"
    patch(client, made["id"], {"state": "blocked"})
    assert done_at(made["id"]) is None


def test_unknown_key_results_and_initiatives_are_404(client):
    missing = "00000000-0000-4000-8000-000000000000"
    assert_error(client.post(f"/v1/keyresults/{missing}/initiatives", json={"name": "x"}), 404)
    assert_error(client.get(f"/v1/keyresults/{missing}/initiatives"), 404)
    for method in ("GET", "PATCH", "DELETE"):
        assert_error(client.open(f"/v1/initiatives/{missing}", method=method, json={}), 404)


def test_a_closed_cycle_keeps_its_initiatives(app, client, cycle, key_result):
    made = add(client, key_result["id"])
    assert client.post(f"/v1/cycles/{cycle['id']}/close").status_code == 200
    assert_error(client.post(f"/v1/keyresults/{key_result['id']}/initiatives", json={"name": "late"}), 409)
    assert_error(patch(client, made["id"], {"state": "done"}), 409)
    assert_error(client.delete(f"/v1/initiatives/{made['id']}"), 409)
    assert fetch(client, f"/v1/initiatives/{made['id']}")["state"] == "planned"
    with pytest.raises(sqlite3.IntegrityError, match="cycle is closed"):  # the lock holds below the API too
        with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
            db.execute("UPDATE initiatives SET state = 'done'")


def test_deleting_a_key_result_deletes_its_initiatives(app, client, key_result):
    add(client, key_result["id"])
    assert client.delete(f"/v1/keyresults/{key_result['id']}").status_code == 200
    assert count(app, "SELECT count(*) FROM initiatives") == 0


def set_source(client, key_result_id, source):
    response = client.patch(f"/v1/keyresults/{key_result_id}", json={"progress_from": source}, headers=MERGE_PATCH)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_a_key_result_may_take_its_progress_from_its_initiatives(client, cycle, objective, key_result):
    measured = fetch(client, f"/v1/objectives/{objective['id']}/report")["objective"]["key_results"][0]["progress"]
    assert set_source(client, key_result["id"], "initiatives")["progress_from"] == "initiatives"
    node = fetch(client, f"/v1/objectives/{objective['id']}/report")["objective"]["key_results"][0]
    assert (node["progress"], node["initiatives_done"], node["initiatives_count"]) == ("0.00", 0, 0)
    made = [add(client, key_result["id"], name=f"step {n}") for n in range(4)]
    patch(client, made[0]["id"], {"state": "done"})
    node = fetch(client, f"/v1/objectives/{objective['id']}/report")["objective"]["key_results"][0]
    assert (node["progress"], node["initiatives_done"], node["initiatives_count"]) == ("0.25", 1, 4)
    assert fetch(client, f"/v1/cycles/{cycle['id']}/report")["progress"] == "0.25"
    for initiative in made[1:]:
        patch(client, initiative["id"], {"state": "done"})
    node = fetch(client, f"/v1/objectives/{objective['id']}/report")["objective"]["key_results"][0]
    assert (node["progress"], node["status"]) == ("1.00", "done")
    # The spec's full update keeps where its progress comes from; PATCH moves it back to its measure.
    stored = fetch(client, f"/v1/keyresults/{key_result['id']}")
    kept = {k: stored[k] for k in ("type", "current_value", "target_value_min", "confidence")}
    assert client.post(f"/v1/keyresults/{key_result['id']}", json={**kept, "name": "Renamed"}).status_code == 200
    node = fetch(client, f"/v1/objectives/{objective['id']}/report")["objective"]["key_results"][0]
    assert (node["name"], node["progress_from"], node["progress"]) == ("Renamed", "initiatives", "1.00")
    assert set_source(client, key_result["id"], "measure")["progress_from"] == "measure"
    node = fetch(client, f"/v1/objectives/{objective['id']}/report")["objective"]["key_results"][0]
    assert node["progress"] == measured != "1.00" and node["initiatives_done"] == 4
    assert_error(client.patch(f"/v1/keyresults/{key_result['id']}", json={"progress_from": "tickets"},
                              headers=MERGE_PATCH), 400)


def test_the_csv_report_counts_each_key_results_initiatives(client, cycle, key_result):
    set_source(client, key_result["id"], "initiatives")
    first = add(client, key_result["id"])
    add(client, key_result["id"], name="second")
    patch(client, first["id"], {"state": "done"})
    text = client.get(f"/v1/cycles/{cycle['id']}/report.csv").get_data(as_text=True).lstrip("\ufeff")
    [row] = list(csv.DictReader(io.StringIO(text)))
    assert (row["progress_from"], row["initiatives_done"], row["initiatives_count"], row["progress"]) == (
        "initiatives", "1", "2", "0.50")


def test_the_activity_feed_says_what_happened_to_an_initiative(client, key_result):
    made = add(client, key_result["id"], name="Ship it")
    patch(client, made["id"], {"state": "done"})
    page = client.get("/activity").get_data(as_text=True)
    assert "added initiative “Ship it” to key result" in page
    assert "changed initiative “Ship it”: state planned → done of key result" in page
    history = client.get(f"/keyresults/{key_result['id']}").get_data(as_text=True)
    assert "added initiative “Ship it”" in history


def test_a_webhook_gets_the_initiatives_events(app, client, runner, key_result):
    result = runner.invoke(args=["webhooks", "add", "https://hooks.example.com/okr", "--events", "initiative.*",
                                 "--json"])
    assert result.exit_code == 0, result.output
    made = add(client, key_result["id"])
    patch(client, made["id"], {"state": "in_progress"})
    make_key_result(client, key_result["objective_id"], "Not one")  # another kind of event: not for this hook
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        waiting = db.execute("SELECT e.type FROM webhook_outbox o JOIN events e ON e.seq = o.event_seq "
                             "ORDER BY o.seq").fetchall()
    assert waiting == [("initiative.created",), ("initiative.updated",)]


def test_initiatives_go_out_and_come_back_with_okr_export(app, client, runner, key_result, tmp_path):
    made = add(client, key_result["id"], due_on="2026-12-15", link="https://tracker.example.com/PROJ-12")
    set_source(client, key_result["id"], "initiatives")
    path = tmp_path / "all.json"
    assert runner.invoke(args=["export", str(path)]).exit_code == 0
    data = json.loads(path.read_text(encoding="utf-8"))
    [record] = data["initiatives"]
    assert record == {**{k: made[k] for k in ("id", "key_result_id", "name", "owner_id", "state", "due_on", "link",
                                              "created_at", "modified_at")}, "done_at": None, "revision": 0}
    assert [k["progress_from"] for k in data["key_results"]] == ["initiatives"]
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.execute("DELETE FROM initiatives")
    assert runner.invoke(args=["import", "--merge", str(path)]).exit_code == 0
    assert fetch(client, f"/v1/initiatives/{made['id']}")["link"] == made["link"]
    data["initiatives"][0]["link"] = "javascript:alert(1)"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    result = runner.invoke(args=["import", "--merge", str(bad)])
    assert result.exit_code != 0 and "initiatives[0]: link: Must be a web address" in result.output


def test_the_charts_replay_a_key_results_initiatives(app, client, clock, cycle, objective, key_result):
    """The burn-ups (the cycle's, in memory and streamed, and the objective's) draw a key result whose progress is
    its initiatives' from when each was made and made done, and end on the report's figure."""
    from datetime import date

    from okr.db import get_db
    from okr.progress import parse_timestamp
    from okr.reports import alignment, timelines
    from okr.store import cycles

    clock.now = "2026-03-02T09:00:00Z"
    set_source(client, key_result["id"], "initiatives")
    first = add(client, key_result["id"], name="one")
    add(client, key_result["id"], name="two")
    clock.now = "2026-03-04T09:00:00Z"
    patch(client, first["id"], {"state": "done"})
    clock.now = "2026-03-06T09:00:00Z"
    third = add(client, key_result["id"], name="three")
    clock.now = "2026-03-08T09:00:00Z"
    patch(client, third["id"], {"state": "done"})
    client.patch(f"/v1/cycles/{cycle['id']}", json={"starts_on": "2026-03-01", "ends_on": "2026-03-10"},
                 headers=MERGE_PATCH)
    today = date(2026, 3, 9)
    with app.test_request_context():
        db = get_db()
        stored = cycles.get(db, cycle["id"])
        line = dict((day.isoformat(), figure) for day, figure, _ in
                    timelines.cycle_progress_now(db, stored, today)["points"])
        streamed = timelines.points_figures(db, cycle["id"], ["2026-03-03", "2026-03-05", "2026-03-07", "2026-03-09"])
        node = alignment.objective_report(db, objective["id"], parse_timestamp("2026-03-09T09:00:00Z"))["objective"]
        own = dict((day.isoformat(), figure) for day, figure, _ in
                   timelines.objective_progress(db, node, today, "2026-03-01", "2026-03-10")["points"])
    expected = {"2026-03-03": "0.00", "2026-03-05": "0.50", "2026-03-07": "0.33", "2026-03-09": "0.67"}
    assert {day: line[day] for day in expected} == expected
    assert {day: own[day] for day in expected} == expected
    assert streamed == list(expected.values())
    assert node["progress"] == "0.67"
    # The review page's figures follow an initiative's change at once (their cache keys on the initiatives too).
    assert "<strong>67% done</strong>" in client.get(f"/cycles/{cycle['id']}").get_data(as_text=True)
    patch(client, add(client, key_result["id"], name="four")["id"], {"state": "done"})
    assert fetch(client, f"/v1/cycles/{cycle['id']}/report")["progress"] == "0.75"
    assert "<strong>75% done</strong>" in client.get(f"/cycles/{cycle['id']}").get_data(as_text=True)


def test_a_key_result_from_initiatives_is_updated_once_it_has_one(client, objective, key_result):
    set_source(client, key_result["id"], "initiatives")
    node = fetch(client, f"/v1/objectives/{objective['id']}/report")["objective"]["key_results"][0]
    assert node["status"] == "no_update"
    patch(client, add(client, key_result["id"])["id"], {"state": "done"})
    add(client, key_result["id"], name="second")
    node = fetch(client, f"/v1/objectives/{objective['id']}/report")["objective"]["key_results"][0]
    assert (node["progress"], node["status"]) != ("0.50", "no_update") and node["progress"] == "0.50"


@pytest.mark.parametrize("state, done_at", [("done", None), ("planned", "2026-03-01T09:00:00Z")])
def test_an_imported_initiatives_state_and_done_at_must_agree(app, client, runner, key_result, tmp_path, state,
                                                              done_at):
    add(client, key_result["id"])
    path = tmp_path / "all.json"
    assert runner.invoke(args=["export", str(path)]).exit_code == 0
    data = json.loads(path.read_text(encoding="utf-8"))
    data["initiatives"][0].update(state=state, done_at=done_at)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    result = runner.invoke(args=["import", "--merge", str(bad)])
    assert result.exit_code != 0 and "initiatives[0]: done_at: must be set exactly when state is done" in result.output


def test_a_report_as_of_a_past_moment_counts_the_initiatives_of_then(app, client, clock, cycle, key_result):
    """The week-ago report (okr.reports.alignment.cycle_report_as_of: the digest's progress a week ago) counts the
    initiatives made by then, and done by then of those done now; not today's."""
    from okr.progress import parse_timestamp
    from okr.reports import alignment

    clock.now = "2026-03-01T09:00:00Z"
    first = add(client, key_result["id"])
    clock.now = "2026-03-05T09:00:00Z"
    add(client, key_result["id"], name="Later")
    patch(client, first["id"], {"state": "done"})

    def counted(moment):
        with closing(sqlite3.connect(app.config["DATABASE"])) as db:
            db.row_factory = sqlite3.Row
            stored = db.execute("SELECT * FROM cycles WHERE id = ?", (cycle["id"],)).fetchone()
            report = alignment.cycle_report_as_of(db, stored, parse_timestamp(moment))
        [node] = report["objectives"]
        [entry] = [k for k in node["key_results"] if k["id"] == key_result["id"]]
        return entry["initiatives_done"], entry["initiatives_count"]

    assert counted("2026-03-03T09:00:00Z") == (0, 1)
    assert counted("2026-03-06T09:00:00Z") == (1, 2)
