"""okr export and okr import keep the activity feed: the okr-export file's events section, first in the file."""
import hashlib
import json
import sqlite3
from contextlib import closing
from datetime import datetime, timezone

import pytest

from okr import create_app
from okr.reports import activity
from okr.cli.example_company import create_demo
from okr.clock import new_id
from okr.db import transaction
from okr.store.schema import connect
from okr.store import comments, users
from okr.transfer import Refusal
from okr.transfer.importer import check_stored
from test_transfer import (data_part, export, exported, file_events, invoke, new_app, ok, post, previous_release,
                           refused_unchanged, seed, with_commands, write_json)

EVENT_COLUMNS = ("id, type, created_at, actor, person_id, resource_type, resource_id, parent_id, cycle_id, team_id, "
                 "data, changes")


@pytest.fixture
def app(app):
    return with_commands(app)


@pytest.fixture
def seeded(app, clock):
    """seed's database, and an objective since deleted: its events outlive it."""
    ids = seed(app, clock)
    client = app.test_client()
    gone = post(client, "/v1/objectives", {"name": "Short-lived", "cycle_id": ids["cycle"], "is_company": False,
                                           "is_personal": False})["id"]
    assert client.delete(f"/v1/objectives/{gone}").status_code in (200, 204)
    return {**ids, "gone": gone}


def events(app):
    """The database's events, in seq order, as stored (JSON as text)."""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute(f"SELECT {EVENT_COLUMNS} FROM events ORDER BY seq").fetchall()


def stored(app, sql, *parameters):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute(sql, parameters).fetchall()


# --- the round trip --------------------------------------------------------------------------------------


def test_every_event_comes_back_as_it_was_and_before_the_imports_own(app, seeded, tmp_path):
    history = events(app)
    types = {row[1] for row in history}
    assert {"objective.created", "objective.updated", "objective.deleted", "team.member_added",
            "checkin.created"} <= types
    assert any(row[11] is not None for row in history)  # changes of an update
    assert any(row[6] == seeded["gone"] for row in history)  # a deleted row's history
    data = exported(app, tmp_path)
    assert len(data["events"]) == len(history)
    first = data["events"][0]
    assert list(first) == list(EVENT_COLUMNS.split(", "))
    assert isinstance(first["actor"], dict) and isinstance(first["data"], dict)  # objects, not JSON strings
    updated = next(event for event in data["events"] if event["type"] == "objective.updated")
    assert updated["changes"]["parent_objective_id"] == [None, seeded["parent"]]

    target = new_app(tmp_path / "target.db")
    assert ok(invoke(target, "import", tmp_path / "all.json"))["events"] == len(history)
    after = events(target)
    # The same ids, fields and text, in the same order, then the import's one event: no row is said twice.
    assert after[:len(history)] == history
    assert [row[1] for row in after[len(history):]] == ["data.imported"]


def test_the_feed_answers_the_same_after_an_import(app, seeded, tmp_path):
    """What the feed reads (okr.store.events.event_json) is the same for every imported event."""
    from okr.store.events import event_json
    export(app, tmp_path / "all.json")
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "all.json"))

    def feed(application):
        with closing(sqlite3.connect(application.config["DATABASE"])) as db:
            db.row_factory = sqlite3.Row
            return [event_json(row) for row in db.execute("SELECT * FROM events ORDER BY seq")]

    original = feed(app)
    assert feed(target)[:len(original)] == original


def test_a_number_in_an_events_data_comes_back_as_it_was(app, seeded, tmp_path):
    """okr's own events hold no fractions, but JSON may: one read back as a Decimal is stored as written."""
    data = exported(app, tmp_path)
    data["events"][0]["data"]["ratio"] = 0.1
    data["events"][0]["data"]["tiny"] = 1e-05
    write_json(tmp_path / "numbers.json", data)
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "numbers.json"))
    text = stored(target, "SELECT data FROM events WHERE id = ?", data["events"][0]["id"])[0][0]
    assert text.endswith(',"ratio":0.1,"tiny":1e-05}')


def test_every_actor_okr_records_comes_back(app, seeded, tmp_path):
    """A person (signed in with a key, or not), a service key, the system."""
    data = exported(app, tmp_path)
    actors = [{"type": "user", "id": seeded["ada"], "name": "Ada Lovelace", "key": {"id": "okr_ci", "name": "ci"}},
              {"type": "user", "id": seeded["emile"], "name": "Émile Zola"},
              {"type": "key", "id": "okr_service", "name": "service"},
              {"type": "system", "id": None, "name": "open access"}]
    for event, actor in zip(data["events"], actors):
        event["actor"] = actor
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", write_json(tmp_path / "actors.json", data)))
    assert [json.loads(row[3]) for row in events(target)[:4]] == actors


# --- an import's own event ------------------------------------------------------------------------------


def test_an_import_records_one_event_of_its_own_with_the_counts_and_the_files_name(app, seeded, tmp_path):
    history = events(app)
    export(app, tmp_path / "all.json")
    target = new_app(tmp_path / "target.db")
    report = ok(invoke(target, "import", tmp_path / "all.json"))
    after = events(target)
    assert after[:len(history)] == history
    [(_, kind, _, actor, person, resource_type, resource_id, parent, cycle, team, data, changes)] = after[len(history):]
    assert (kind, resource_type, person, parent, cycle, team, changes) == (
        "data.imported", "data", None, None, None, None, None)
    assert json.loads(actor) == {"type": "system", "id": None, "name": "okr import"}
    # named by what it holds: every import of the same file has the same resource_id
    assert resource_id == hashlib.sha256((tmp_path / "all.json").read_bytes()).hexdigest()
    data = json.loads(data)
    assert data == {"file": "all.json", "sha256": resource_id, "merge": False, "counts": {
        name: {"added": count, "updated": 0, "unchanged": 0} for name, count in report.items()
        if isinstance(count, int)} | {"api_keys": {"left_out": 0}}}
    assert data["counts"]["events"]["added"] == len(history) and data["counts"]["objectives"]["added"] == 3


def test_the_feed_says_what_an_import_brought_in_one_line(app, seeded, tmp_path):
    history = len(events(app))
    export(app, tmp_path / "all.json")
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "all.json"))
    data = json.loads((tmp_path / "all.json").read_text(encoding="utf-8"))
    data["cycles"][0]["name"] = "2026 Q1, renamed"
    ok(invoke(target, "import", "--merge", write_json(tmp_path / "renamed.json", data)))
    db = connect(target.config["DATABASE"], 5000)
    try:
        entries, _ = activity.feed(db, limit=2)
        names = activity.names(db, entries)
        lines = [activity.text(activity.sentence(entry, names)) for entry in entries]
    finally:
        db.close()
    assert lines == [
        "The command “okr import” merged “renamed.json”: updated 1 cycle",
        f"The command “okr import” imported “all.json”: added {history} events, 3 people, 2 teams, 3 team members, "
        "2 cycles, 3 objectives, 6 key results, 9 check-ins",
    ]


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    """The demo company (12 people, 60 key results, 651 check-ins and every event of their making), with comments
    on every objective and key result, some edited, some deleted; three people off the weekly email, two linked
    to an identity provider."""
    path = tmp_path_factory.mktemp("busy") / "busy.db"
    create_demo(create_app, str(path), 7, datetime(2026, 3, 18, tzinfo=timezone.utc))
    app = with_commands(create_app({"TESTING": True, "DATABASE": path}))
    with app.app_context(), transaction() as db:
        people = [row["id"] for row in db.execute("SELECT id FROM users ORDER BY seq")]
        parents = [("objective", row["id"]) for row in db.execute("SELECT id FROM objectives ORDER BY seq")]
        parents += [("key_result", row["id"]) for row in db.execute("SELECT id FROM key_results ORDER BY seq")] * 2
        made = [comments.create(db, kind, parent, f"comment {number} «{kind}»", people[number % len(people)])
                for number, (kind, parent) in enumerate(parents)]
        for number, comment in enumerate(made):
            if number % 5 == 0:
                comments.update(db, comments.get(db, comment["id"]), comment["body"] + ", edited")
            elif number % 7 == 0:
                comments.delete(db, comments.get(db, comment["id"]))
        for person in people[3:6]:
            users.set_weekly_email(db, users.get(db, person), False)
        for number, person in enumerate(people[:2]):
            users.set_oidc_subject(db, users.get(db, person), "https://id.example.com", f"subject-{number}")
    return app


def test_export_import_export_of_a_busy_database_is_the_same_file_but_for_the_imports_one_event(busy, tmp_path):
    """The file holds nothing about the export itself (no time, no host): so the second export differs from the
    first by the import's data.imported event alone, and each round trip adds that one line, not a copy of
    every row's event."""
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    export(busy, first)
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", first))
    export(target, second)
    a, b = (json.loads(path.read_text(encoding="utf-8")) for path in (first, second))
    assert len(a["comments"]) == 124 and len(a["checkins"]) == 651 and len(a["events"]) > 1500
    assert b["events"][:-1] == a["events"]
    assert b["events"][-1]["type"] == "data.imported"
    assert {name: part for name, part in b.items() if name != "events"} == {
        name: part for name, part in a.items() if name != "events"}
    # and byte for byte, once that one line is taken out
    own = json.dumps(b["events"][-1], ensure_ascii=False)
    assert second.read_text(encoding="utf-8").replace(f",\n{own}\n]", "\n]", 1) == first.read_text(encoding="utf-8")


def test_a_merge_of_a_newer_export_adds_only_its_new_events_and_one_of_its_own(app, seeded, tmp_path, clock):
    export(app, tmp_path / "old.json")
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "old.json"))
    clock.now = "2026-02-01T09:00:00Z"  # the source goes on: a rename, a check-in, a comment
    client = app.test_client()
    assert client.patch(f"/v1/objectives/{seeded['parent']}", json={"name": "Delight every customer"}).status_code == 200
    post(client, f"/v1/keyresults/{seeded['key_results']['range']}/checkins", {"value": "2", "comment": "better"})
    post(client, f"/v1/objectives/{seeded['parent']}/comments", {"body": "Renamed: every customer."})
    export(app, tmp_path / "new.json")
    old, new = file_events(tmp_path / "old.json"), file_events(tmp_path / "new.json")
    assert new[:len(old)] == old
    newer = new[len(old):]
    assert [event["type"] for event in newer] == ["objective.updated", "key_result.updated", "checkin.created",
                                                  "comment.created"]
    before = events(target)
    result = ok(invoke(target, "import", "--merge", tmp_path / "new.json"))
    assert result["events"] == {"added": 4, "updated": 0, "unchanged": len(old)}
    after = events(target)
    assert after[:len(before)] == before
    assert [row[0] for row in after[len(before):-1]] == [event["id"] for event in newer]
    assert after[-1][1] == "data.imported"
    export(target, tmp_path / "again.json")
    assert data_part(tmp_path / "again.json") == data_part(tmp_path / "new.json")


# --- files without events ----------------------------------------------------------------------------


def test_a_version_1_file_and_a_version_2_file_without_events_import(app, seeded, tmp_path):
    data = exported(app, tmp_path)
    old = previous_release(data)
    assert "events" not in old and old["version"] == 1
    without = {name: records for name, records in data.items() if name != "events"}
    for name, content in (("old.json", old), ("without.json", without)):
        target = new_app(tmp_path / f"{name}.db")
        imported = ok(invoke(target, "import", write_json(tmp_path / name, content)))
        assert imported["events"] == 0 and imported["objectives"] == 3
        # no history, and the import's one event, which says what it brought
        [(kind, actor, data)] = stored(target, "SELECT type, actor, data FROM events")
        assert (kind, json.loads(actor)["name"]) == ("data.imported", "okr import")
        assert json.loads(data)["counts"]["objectives"] == {"added": 3, "updated": 0, "unchanged": 0}


def test_events_alone_leave_a_database_empty(app, seeded, tmp_path):
    export(app, tmp_path / "all.json")
    target = new_app(tmp_path / "target.db")
    client = target.test_client()
    team = post(client, "/v1/teams", {"name": "gone again"})["id"]
    assert client.delete(f"/v1/teams/{team}").status_code in (200, 204)
    assert [row[1] for row in events(target)] == ["team.created", "team.deleted"]
    assert ok(invoke(target, "import", tmp_path / "all.json"))["objectives"] == 3
    assert [row[1] for row in events(target)][:2] == ["team.created", "team.deleted"]


# --- refusals ----------------------------------------------------------------------------------------


def event_change(change):
    def apply(data):
        change(data["events"][3])
    return apply


def twice(data):
    data["events"][3]["id"] = data["events"][1]["id"]


EVENT_REFUSALS = {
    "id": (event_change(lambda e: e.update(id=e["id"].upper())), "events[3]: id: must be a lowercase UUID"),
    "id twice": (twice, "events[3]: id {id} appears twice in the file"),
    "type": (event_change(lambda e: e.update(type="Objective.Updated")),
             'events[3]: type: must be a resource and an action, such as objective.updated, not "Objective.Updated"'),
    "type without action": (event_change(lambda e: e.update(type="objective")), "events[3]: type: must be"),
    "created_at": (event_change(lambda e: e.update(created_at="2026-02-30T00:00:00Z")),
                   "events[3]: created_at: must be an RFC 3339 UTC time"),
    "actor type": (event_change(lambda e: e["actor"].update(type="robot")),
                   'events[3]: actor: type must be one of user, key, system, source, not "robot"'),
    "actor text": (event_change(lambda e: e.update(actor="okr import")), 'events[3]: actor: must be an object'),
    "actor field": (event_change(lambda e: e["actor"].update(email="x@example.com")),
                    "events[3]: actor: unknown field email"),
    "actor's key": (event_change(lambda e: e["actor"].update(type="user", key="ci")),
                    "events[3]: actor: key must be an object with id and name"),
    "data": (event_change(lambda e: e.update(data=[1, 2])), "events[3]: data: must be an object, not [1, 2]"),
    "changes": (event_change(lambda e: e.update(changes={"name": ["a"]})),
                "events[3]: changes: must be null or an object of [before, after] pairs"),
    "resource_id": (event_change(lambda e: e.update(resource_id="x" * 201)),
                    "events[3]: resource_id: must be text of up to 200 characters"),
    "resource_id null": (event_change(lambda e: e.update(resource_id=None)),
                         "events[3]: resource_id: must be text of up to 200 characters, not null"),
    "team_id": (event_change(lambda e: e.update(team_id=7)), "events[3]: team_id: must be null or text"),
    "resource_type": (event_change(lambda e: e.update(resource_type="Objective")), "events[3]: resource_type:"),
    "unknown field": (event_change(lambda e: e.update(seq=4)), "events[3]: unknown field seq"),
    "missing field": (event_change(lambda e: e.pop("changes")), "events[3]: missing field changes"),
    "number out of range": (event_change(lambda e: e["data"].update(big=1e308)),
                            "events[3]: data: holds a number out of range"),
}


@pytest.mark.parametrize("case", EVENT_REFUSALS)
@pytest.mark.parametrize("merge", [False, True], ids=["empty", "merge"])
def test_a_bad_event_is_refused_naming_its_place_with_nothing_imported(app, seeded, tmp_path, case, merge):
    change, problem = EVENT_REFUSALS[case]
    data = exported(app, tmp_path)
    change(data)
    text = json.dumps(data, ensure_ascii=False)
    if case == "number out of range":
        text = text.replace("1e+308", "1e999")  # which json.dumps cannot write
    (tmp_path / "bad.json").write_text(text, encoding="utf-8")
    target = app if merge else new_app(tmp_path / "target.db")
    line = refused_unchanged(target, "import", *(["--merge"] if merge else []), tmp_path / "bad.json")
    assert problem.format(id=data["events"][3]["id"]) in line, line


def test_events_after_the_data_are_refused(app, seeded, tmp_path):
    data = exported(app, tmp_path)
    moved = {name: records for name, records in data.items() if name != "events"}
    moved["events"] = data["events"]
    target = new_app(tmp_path / "target.db")
    line = refused_unchanged(target, "import", write_json(tmp_path / "late.json", moved))
    assert 'the section "events" comes after "initiatives"; the sections go in the order events, users, ' in line


# --- merge and webhooks ------------------------------------------------------------------------------


def test_a_merge_leaves_stored_events_alone_and_adds_the_new(app, seeded, tmp_path):
    before = events(app)
    data = exported(app, tmp_path)
    data["events"][0]["data"]["name"] = "rewritten history"
    data["events"][0]["actor"] = {"type": "system", "id": None, "name": "someone else"}
    added = {**data["events"][-1], "id": new_id(), "created_at": "2026-12-01T00:00:00Z"}
    data["events"].append(added)
    counts = ok(invoke(app, "import", "--merge", write_json(tmp_path / "merge.json", data)))
    assert counts["events"] == {"added": 1, "updated": 0, "unchanged": len(before)}
    after = events(app)
    assert after[:len(before)] == before
    assert after[len(before)][0] == added["id"]
    # then the merge's own one event, though it wrote no row: an import is on record whatever it changed
    assert [row[1] for row in after[len(before) + 1:]] == ["data.imported"]


def test_imported_events_go_to_no_webhook_and_the_imports_one_does(app, seeded, tmp_path):
    export(app, tmp_path / "all.json")
    target = new_app(tmp_path / "target.db")
    with closing(sqlite3.connect(target.config["DATABASE"], isolation_level=None)) as db:
        db.execute("INSERT INTO webhooks (id, url, secret, created_at) VALUES (?, 'https://hooks.example.com/okr', "
                   "'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', '2026-01-01T00:00:00Z')", (new_id(),))
        db.execute("INSERT INTO webhook_patterns (hook_seq, pattern) VALUES (1, '*')")
    ok(invoke(target, "import", tmp_path / "all.json"))
    queued = stored(target, "SELECT e.type FROM webhook_outbox o JOIN events e ON e.seq = o.event_seq")
    # the import is a change made now: the hook hears of it, once
    assert queued == [("data.imported",)]


# --- exporting: streaming, and what stays out ----------------------------------------------------------


def test_an_export_without_keys_holds_no_secret_even_in_the_events(app, seeded, tmp_path):
    assert app.test_cli_runner().invoke(args=["keys", "create", "--name", "ci"]).exit_code == 0
    export(app, tmp_path / "all.json")
    text = (tmp_path / "all.json").read_text(encoding="utf-8")
    [(credential, secret)] = stored(app, "SELECT credential, secret FROM api_keys")
    assert secret not in text
    # its key.created event names it, as the feed does, and nothing else does
    assert credential in text and credential not in data_part(tmp_path / "all.json")


# --- okr restore's check of a backup's events -------------------------------------------------------------


FIRST_EVENT = "WHERE seq = (SELECT min(seq) FROM events)"


@pytest.mark.parametrize("statement, problem", [
    ("UPDATE events SET data = '{\"a\": 1}' " + FIRST_EVENT,
     "events[0]: data is stored as '{\"a\": 1}', not as okr stores it ('{\"a\":1}')"),
    ("UPDATE events SET data = 'not json' " + FIRST_EVENT,
     "events[0]: data is not JSON text okr can read: 'not json'"),
    ("UPDATE events SET actor = '{\"type\":\"robot\",\"id\":null,\"name\":null}' " + FIRST_EVENT,
     'events[0]: actor: type must be one of user, key, system, source, not "robot"'),
    ("UPDATE events SET changes = 'NaN' " + FIRST_EVENT,
     "events[0]: changes is not JSON text okr can read"),
], ids=["spacing", "not json", "actor", "nan"])
def test_a_stored_event_not_as_okr_stores_it_is_refused(app, seeded, statement, problem):
    db = connect(app.config["DATABASE"], 5000)
    try:
        check_stored(db)  # okr's own events pass
        with db:
            db.execute(statement)
        with pytest.raises(Refusal) as refusal:
            check_stored(db)
        assert str(refusal.value).startswith(problem)
    finally:
        db.close()
