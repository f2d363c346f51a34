"""The activity feed: every change writes its event in its own transaction, whoever makes it and however."""
import json
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone

import pytest

from okr.store import events

from helpers import create_key, make_cycle, make_key_result, make_objective, make_team, make_user, signed


def every_row(app):
    """Every row of every table but SQLite's own, as stored: what a write may change."""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        tables = [name for (name,) in db.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite%'")]
        return {table: db.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall() for table in tables}


def event_types(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return [row[0] for row in db.execute("SELECT type FROM events ORDER BY seq")]


@pytest.fixture
def world(client):
    """A cycle, a team, an objective of it with a key result, a user, and a comment: one of each to change."""
    cycle = make_cycle(client)
    team = make_team(client)
    objective = make_objective(client, cycle["id"], team_id=team["id"])
    key_result = make_key_result(client, objective["id"])
    comment = client.post(f"/v1/objectives/{objective['id']}/comments", json={"body": "Looks good"}).get_json()
    return {"cycle": cycle, "team": team, "objective": objective, "key_result": key_result, "comment": comment}


def writes(world, user_id):
    """(method, path, body, the event types the write records): one of every write of the API."""
    c, t, o, k = (world[name]["id"] for name in ("cycle", "team", "objective", "key_result"))
    objective = {"name": "Renamed", "cycle_id": c, "is_company": False, "is_personal": False}
    key_result = {"name": "KR", "type": "positive", "current_value": "3", "target_value_min": "10",
                  "confidence": "0.5"}
    return [
        ("POST", "/v1/cycles", {"name": "Q2"}, ["cycle.created"]),
        ("POST", f"/v1/cycles/{c}", {"name": "Q1b"}, ["cycle.updated"]),
        ("PATCH", f"/v1/cycles/{c}", {"starts_on": "2026-01-01"}, ["cycle.updated"]),
        ("POST", "/v1/teams", {"name": "Ops"}, ["team.created"]),
        ("POST", f"/v1/teams/{t}", {"name": "Platform 2"}, ["team.updated"]),
        ("PUT", f"/v1/teams/{t}/members/{user_id}", None, ["team.member_added"]),
        ("POST", "/v1/objectives", {**objective, "name": "New"}, ["objective.created"]),
        ("POST", f"/v1/objectives/{o}", objective, ["objective.updated"]),
        ("PATCH", f"/v1/objectives/{o}", {"description": "Why"}, ["objective.updated"]),
        ("POST", f"/v1/objectives/{o}/keyresults", key_result, ["key_result.created", "checkin.created"]),
        ("POST", f"/v1/keyresults/{k}", {**key_result, "current_value": "4"},
         ["key_result.updated", "checkin.created"]),
        ("PATCH", f"/v1/keyresults/{k}", {"name": "Patched"}, ["key_result.updated"]),
        ("POST", f"/v1/keyresults/{k}/checkins", {"value": "5"}, ["key_result.updated", "checkin.created"]),
        ("POST", f"/v1/keyresults/{k}/comments", {"body": "Hm"}, ["comment.created"]),
        ("PATCH", f"/v1/comments/{world['comment']['id']}", {"body": "Hmm"}, ["comment.updated"]),
        ("DELETE", f"/v1/comments/{world['comment']['id']}", None, ["comment.deleted"]),
        ("DELETE", f"/v1/keyresults/{k}", None, ["key_result.deleted"]),
        ("DELETE", f"/v1/objectives/{o}", None, ["objective.deleted"]),
        ("DELETE", f"/v1/teams/{t}", None, ["team.deleted"]),
        ("DELETE", f"/v1/cycles/{c}", None, ["cycle.deleted"]),
    ]


def send(client, method, path, body):
    return client.open(path, method=method, json=body)


def test_every_write_of_the_api_records_its_events_and_only_them(app, client, runner, world):
    user = make_user(runner)
    for method, path, body, expected in writes(world, user["id"]):
        before = len(event_types(app))
        response = send(client, method, path, body)
        assert response.status_code == 200, (path, response.get_data(as_text=True))
        assert event_types(app)[before:] == expected, (method, path)


def test_an_update_names_what_changed_and_a_delete_keeps_what_was_deleted(client, world):
    o = world["objective"]
    client.patch(f"/v1/objectives/{o['id']}", json={"name": "Grow ARR"})
    client.delete(f"/v1/objectives/{o['id']}")
    found = client.get(f"/v1/events?resource_id={o['id']}").get_json()["events"]
    assert [event["type"] for event in found] == ["objective.created", "objective.updated", "objective.deleted"]
    assert found[1]["changes"]["name"] == [o["name"], "Grow ARR"]
    assert found[1]["data"]["name"] == "Grow ARR" and "changes" not in found[0]
    assert found[2]["data"] == {**o, "name": "Grow ARR", "modified_at": found[2]["data"]["modified_at"]}
    assert found[0]["resource"] == {"type": "objective", "id": o["id"]}


@pytest.fixture
def failing_after_write(monkeypatch):
    """Every event is recorded, and then the request fails: as if anything after the write went wrong."""
    real = events.record

    def record_then_fail(*args, **kwargs):
        real(*args, **kwargs)
        raise RuntimeError("injected after the write")

    monkeypatch.setattr(events, "record", record_then_fail)


@pytest.fixture
def failing_event(app):
    """The events table refuses every row: a change must then not be kept without its event."""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.execute("CREATE TRIGGER refuse_events BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'injected'); END")
        db.commit()


@pytest.mark.parametrize("failure", ["failing_after_write", "failing_event"])
def test_no_change_without_its_event_and_no_event_without_its_change(request, app, client, runner, world, failure):
    user = make_user(runner)
    cases = writes(world, user["id"])
    stored = every_row(app)
    request.getfixturevalue(failure)
    for method, path, body, _ in cases:
        response = send(client, method, path, body)
        assert response.status_code == 500, (method, path)
        assert every_row(app) == stored, (method, path)


def test_each_request_names_its_actor(app, client, runner, world):
    person = make_user(runner, "Grace Hopper", "grace@example.com")
    service = create_key(runner, "ci bot")
    own = json.loads(runner.invoke(args=["keys", "create", "--name", "grace's", "--user", "grace@example.com",
                                         "--json"]).output)
    client.post("/v1/teams", json={"name": "By the service key"}, headers=signed(service))
    client.post("/v1/teams", json={"name": "By Grace"}, headers=signed(own))
    found = client.get("/v1/events?type=team.created", headers=signed(service)).get_json()["events"]
    actors = {event["data"]["name"]: event["actor"] for event in found}
    assert actors["Platform"] == {"type": "system", "id": None, "name": "open access"}
    assert actors["By the service key"] == {"type": "key", "id": service["credential"], "name": "ci bot"}
    assert actors["By Grace"] == {"type": "user", "id": person["id"], "name": "Grace Hopper",
                                  "key": {"id": own["credential"], "name": "grace's"}}
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        assert db.execute("SELECT person_id FROM events WHERE type = 'team.created' ORDER BY seq").fetchall() == [
            (None,), (None,), (person["id"],)]


def test_a_command_is_the_system_named_as_the_command(app, runner):
    make_user(runner)
    runner.invoke(args=["users", "set-role", "ada@example.com", "viewer"])
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        rows = db.execute("SELECT type, actor, changes FROM events ORDER BY seq").fetchall()
    assert [(kind, json.loads(actor)["name"]) for kind, actor, _ in rows] == [
        ("user.created", "okr users add"), ("user.updated", "okr users set-role")]
    assert json.loads(rows[1][2]) == {"role": ["editor", "viewer"]}
    assert events.ACTOR.get() is events.SYSTEM  # the command's actor ends with it


def test_an_api_key_event_never_holds_its_secret(app, client, runner):
    key = create_key(runner, "ci")
    runner.invoke(args=["keys", "revoke", key["credential"]])
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        rows = db.execute("SELECT type, data, changes FROM events").fetchall()
    assert [row[0] for row in rows] == ["key.created", "key.updated"]
    assert all(key["secret"] not in (row[1] + (row[2] or "")) for row in rows)
    assert "revoked_at" in json.loads(rows[1][2])


def test_the_feed_lists_oldest_first_resumes_after_an_event_and_filters(client, world):
    everything = client.get("/v1/events").get_json()["events"]
    assert [event["type"] for event in everything] == [
        "cycle.created", "team.created", "objective.created", "key_result.created", "checkin.created",
        "comment.created"]
    after = client.get(f"/v1/events?after={everything[2]['id']}").get_json()["events"]
    assert after == everything[3:]
    page = client.get("/v1/events?page_size=2").get_json()
    assert page["events"] == everything[:2] and page["next_page_token"]
    rest = client.get(f"/v1/events?page_token={page['next_page_token']}").get_json()["events"]
    assert rest == everything[2:]
    assert [e["type"] for e in client.get("/v1/events?type=key_result.").get_json()["events"]] == [
        "key_result.created"]
    other = make_cycle(client, "Q9")
    in_cycle = client.get(f"/v1/events?cycle_id={world['cycle']['id']}").get_json()["events"]
    assert len(in_cycle) == 5 and all(event["data"].get("id") != other["id"] for event in in_cycle)


def test_bad_filters_are_400s_and_an_unknown_event_a_404(client, world):
    assert client.get("/v1/events?type=Objective").status_code == 400
    assert client.get("/v1/events?cycle_id=nope").status_code == 400
    assert client.get("/v1/events?after=00000000-0000-4000-8000-000000000000").status_code == 404


def test_viewers_read_the_feed(client, runner, world):
    make_user(runner, "Vic", "vic@example.com")
    runner.invoke(args=["users", "set-role", "vic@example.com", "viewer"])
    viewer = json.loads(runner.invoke(args=["keys", "create", "--name", "v", "--user", "vic@example.com",
                                            "--json"]).output)
    assert client.get("/v1/events", headers=signed(viewer)).status_code == 200
    assert client.get("/v1/events").status_code == 401  # auth is on now


# --- a page's size -------------------------------------------------------------------------------------------


def pages(client, path):
    """Every page of path, following next_page_token: [(the body's bytes, its events, its token)]."""
    found, token = [], None
    while True:
        response = client.get(path + (f"&page_token={token}" if token else ""))
        assert response.status_code == 200
        page = response.get_json()
        found.append((len(response.data), page["events"], page["next_page_token"]))
        token = page["next_page_token"]
        if token is None:
            return found


def test_a_page_of_large_events_ends_past_about_a_megabyte_with_a_token_for_the_rest(client):
    """Events carry whole resources and their changes: a thousand of them made a page of tens of MB, which a
    worker held several times over for each request."""
    objective = make_objective(client, make_cycle(client)["id"], description="x" * 10_000)
    for index in range(45):  # each event about 30 KB: the description, and its change before and after
        text = (f"{index:04d} " * 2_000)[:10_000]
        assert client.patch(f"/v1/objectives/{objective['id']}", json={"description": text}).status_code == 200
    big = pages(client, "/v1/events?type=objective.updated&page_size=1000")
    assert len(big) > 1
    for size, listed, token in big[:-1]:
        assert 2**20 <= size <= 2**20 + 64 * 1024 and 1 < len(listed) < 45 and token
    small = pages(client, "/v1/events?type=objective.updated&page_size=10")
    assert [len(listed) for _, listed, _ in small] == [10, 10, 10, 10, 5]  # under the bound: page_size rules
    everything = [event for _, listed, _ in big for event in listed]
    assert everything == [event for _, listed, _ in small for event in listed] and len(everything) == 45


def test_an_event_heavier_than_the_bound_still_comes_one_a_page(client, world, monkeypatch):
    monkeypatch.setattr(events, "PAGE_BYTES", 1)
    found = pages(client, "/v1/events?page_size=1000")
    assert [len(listed) for _, listed, _ in found] == [1] * 6 and found[-1][2] is None
    assert [listed[0]["type"] for _, listed, _ in found] == [
        "cycle.created", "team.created", "objective.created", "key_result.created", "checkin.created",
        "comment.created"]


def old_event(app, days):
    """Makes an event dated days ago; its seq."""
    moment = (datetime.now(timezone.utc) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        seq = events.record(db, "team", "created", "t", {"id": "t"})
        db.execute("UPDATE events SET created_at = ? WHERE seq = ?", (moment, seq))
        db.commit()
    return seq


def test_pruning_keeps_the_retention_period_and_what_a_webhook_still_waits_for(app):
    old, older = old_event(app, 401), old_event(app, 500)
    recent = old_event(app, 399)
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        assert events.prune(db, 400) == 2
        assert [row[0] for row in db.execute("SELECT seq FROM events")] == [recent]
        db.commit()
    assert old < older < recent
    kept = old_event(app, 450)
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.execute("INSERT INTO webhooks (id, url, secret, created_at) VALUES ('h', 'http://x', 's', 'now')")
        db.execute("INSERT INTO webhook_outbox (hook_seq, event_seq) VALUES (1, ?)", (kept,))
        assert events.prune(db, 400) == 0
        db.execute("DELETE FROM webhook_outbox")
        assert events.prune(db, 400) == 1
