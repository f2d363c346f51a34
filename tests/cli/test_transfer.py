"""okr export and okr import: the okr-export JSON file round trip, its refusals, --merge, and the CSV of a cycle."""
import csv
import io
import json
import os
import sqlite3
import tracemalloc
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest

import helpers
import okr.transfer.importer
import okr.transfer.json_stream
from okr import create_app, transfer
from okr.accounts import throttle
from okr.cli.transfer import export_command, import_command
from okr.clock import new_id
from okr.db import init_db, transaction
from okr.rules.email_addresses import email_key
from okr.store.schema import connect
from okr.progress import parse_timestamp
from okr.store import invitations, sessions, users
from okr.store import keys as key_store

DATA = ["users", "teams", "team_members", "cycles", "objectives", "key_results", "checkins", "comments", "initiatives"]
SECTIONS = ["events", *DATA]


def with_commands(app):
    """The app's CLI with export and import, however okr.cli registers them."""
    app.cli.add_command(export_command)
    app.cli.add_command(import_command)
    return app


@pytest.fixture
def app(app):
    return with_commands(app)


def new_app(path):
    app = create_app({"TESTING": True, "DATABASE": path})
    with app.app_context():
        init_db()
    return with_commands(app)


def invoke(app, *args):
    return app.test_cli_runner().invoke(args=[str(arg) for arg in args])


def ok(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def refused(result):
    """The one line of a refusal (click's runner shows it as "Error: ..."; okr as "okr: ...")."""
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def refused_unchanged(app, *args):
    """The one line of the command's refusal, once it is checked that the app's database did not change."""
    before = dump(app.config["DATABASE"])
    line = refused(invoke(app, *args))
    assert dump(app.config["DATABASE"]) == before
    return line


def dump(path):
    """Everything the database holds, as SQL text, with its schema version."""
    with closing(sqlite3.connect(path)) as db:
        return "\n".join(db.iterdump()) + f"\nuser_version {db.execute('PRAGMA user_version').fetchone()[0]}"


def post(client, path, body):
    response = client.post(path, json=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def seed(app, clock):
    """A database with something of everything: unicode, all key-result types, a parent created after its
    child, check-ins with authors and comments, updated rows (revisions), an inactive user, the three roles
    (Ada an admin, Émile an editor, 李小龙 a viewer), team members."""
    client, runner = app.test_client(), app.test_cli_runner()
    ids = {}
    for name, email in (("Ada Lovelace", "ada@example.com"), ("Émile Zola", "Émile@example.org"),
                        ("李小龙", "lee@example.cn")):
        result = runner.invoke(args=["users", "add", "--name", name, "--email", email])
        assert result.exit_code == 0, result.output
        ids[email] = json.loads(result.output)["id"]
    assert runner.invoke(args=["users", "deactivate", "lee@example.cn"]).exit_code == 0
    ada, emile = ids["ada@example.com"], ids["Émile@example.org"]
    with app.app_context(), transaction() as db:
        users.set_role(db, users.get(db, ada), "admin")
        users.set_role(db, users.get(db, ids["lee@example.cn"]), "viewer")
    clock.now = "2026-01-05T09:00:00Z"
    team = post(client, "/v1/teams", {"name": "Plattform ✓"})["id"]
    other_team = post(client, "/v1/teams", {"name": "=cmd|' /C calc'!A0"})["id"]
    for team_id, user_id in ((team, emile), (other_team, ada), (team, ada)):
        assert client.put(f"/v1/teams/{team_id}/members/{user_id}").status_code == 200
    cycle = post(client, "/v1/cycles", {"name": "2026 Q1", "starts_on": "2026-01-01", "ends_on": "2026-03-31"})["id"]
    old_cycle = post(client, "/v1/cycles", {"name": ""})["id"]
    post(client, f"/v1/cycles/{old_cycle}", {"name": "2025 Q4"})  # revision 1
    clock.now = "2026-01-06T10:00:00Z"
    child = post(client, "/v1/objectives", {"name": "-Faster support", "cycle_id": cycle, "is_company": False,
                                            "is_personal": False, "team_id": team, "assignee_id": emile,
                                            "description": "Ligne 1\nligne 2 «ok»"})["id"]
    parent = post(client, "/v1/objectives", {"name": "Delight customers", "cycle_id": cycle, "is_company": True,
                                             "is_personal": False})["id"]
    clock.now = "2026-01-07T11:00:00Z"
    response = client.patch(f"/v1/objectives/{child}", json={"parent_objective_id": parent})
    assert response.status_code == 200
    personal = post(client, "/v1/objectives", {"name": "@me learn", "cycle_id": old_cycle, "is_company": False,
                                               "is_personal": True, "assignee_id": ada,
                                               "team_id": other_team})["id"]
    key_results = {}
    for kind, body in (("positive", {"current_value": "120", "target_value_min": "500"}),
                       ("negative", {"current_value": "40", "target_value_min": "-5"}),
                       ("range", {"current_value": "3", "target_value_min": "1", "target_value_max": "4.5"}),
                       ("milestone", {}), ("baseline", {"current_value": "17.125"})):
        key_results[kind] = post(client, f"/v1/objectives/{child}/keyresults",
                                 {"name": f"+{kind} ✓", "type": kind, "confidence": "0.7",
                                  "owner_id": emile if kind == "positive" else None, **body})["id"]
    key_results["personal"] = post(client, f"/v1/objectives/{personal}/keyresults",
                                   {"name": "Read\tbooks", "type": "positive", "target_value_min": "12"})["id"]
    clock.now = "2026-01-20T08:30:00Z"
    post(client, f"/v1/keyresults/{key_results['positive']}/checkins",
         {"value": "310", "confidence": "0.8", "comment": "new macros", "author_id": ada})
    post(client, f"/v1/keyresults/{key_results['negative']}/checkins",
         {"value": "-7.5", "confidence": "0.35", "comment": None, "author_id": emile})
    post(client, f"/v1/keyresults/{key_results['milestone']}/checkins", {"value": "1", "comment": "=1+1"})
    response = client.patch(f"/v1/keyresults/{key_results['range']}", json={"name": "Reply hours"})
    assert response.status_code == 200
    return {"cycle": cycle, "old_cycle": old_cycle, "team": team, "other_team": other_team, "child": child,
            "parent": parent, "personal": personal, "key_results": key_results, "ada": ada, "emile": emile,
            "lee": ids["lee@example.cn"]}


def add_keys(app):
    """Three API keys: read-write, read-only, revoked. The API then wants signed requests."""
    runner = app.test_cli_runner()
    for args in (["keys", "create", "--name", "ci"], ["keys", "create", "--name", "reader", "--read-only"],
                 ["keys", "create", "--name", "old"]):
        assert runner.invoke(args=args).exit_code == 0
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        credential = db.execute("SELECT credential FROM api_keys WHERE name = 'old'").fetchone()[0]
    assert runner.invoke(args=["keys", "revoke", credential]).exit_code == 0


@pytest.fixture
def seeded(app, clock):
    return seed(app, clock)


@pytest.fixture
def keyed(app, seeded):
    add_keys(app)
    return seeded


def export(app, path, *options):
    return ok(invoke(app, "export", *options, path))


def data_part(path):
    """An export's text from its first data section on: all but its events (which come first)."""
    text = path.read_text(encoding="utf-8")
    return text[text.index('\n"users": ['):]


def file_events(path):
    return json.loads(path.read_text(encoding="utf-8"))["events"]


def assert_same_but_the_imports_events(again, first):
    """again, exported from a database first was imported into, holds first's data byte for byte, and first's
    events followed by the one event of okr import (data.imported)."""
    assert data_part(again) == data_part(first)
    history, now = file_events(first), file_events(again)
    assert now[:len(history)] == history
    assert [(event["type"], event["actor"]["name"]) for event in now[len(history):]] == [
        ("data.imported", "okr import")]


def exported(app, tmp_path):
    """The app's whole export, written to tmp_path/all.json, as parsed JSON."""
    export(app, tmp_path / "all.json")
    return json.loads((tmp_path / "all.json").read_text(encoding="utf-8"))


# --- the round trip ------------------------------------------------------------------------------


def test_export_then_import_into_an_empty_database_then_export_gives_the_same_bytes(app, seeded, tmp_path):
    first = tmp_path / "first.json"
    counts = export(app, first)
    events = len(stored(app, "SELECT id FROM events"))
    assert events > 28
    assert counts == {"exported": str(first), "format": "okr-export", "version": 7, "events": events, "users": 3,
                      "teams": 2, "team_members": 3, "cycles": 2, "objectives": 3, "key_results": 6, "checkins": 9,
                      "comments": 0, "initiatives": 0}
    target = new_app(tmp_path / "target.db")
    imported = ok(invoke(target, "import", first))
    assert imported == {"imported": str(first), "events": events, "users": 3, "teams": 2, "team_members": 3,
                        "cycles": 2, "objectives": 3, "key_results": 6, "checkins": 9, "comments": 0,
                        "initiatives": 0, "never_in_the_file": imported["never_in_the_file"]}
    second = tmp_path / "second.json"
    export(target, second)
    # The data comes back byte for byte; the events too, followed by the import's own one.
    assert_same_but_the_imports_events(second, first)


def test_cycle_dates_and_owners_go_out_and_come_back_and_files_without_them_still_import(app, seeded, tmp_path):
    data = exported(app, tmp_path)
    [cycle] = [row for row in data["cycles"] if row["id"] == seeded["cycle"]]
    assert (cycle["starts_on"], cycle["ends_on"]) == ("2026-01-01", "2026-03-31")
    owners = {row["id"]: row["owner_id"] for row in data["key_results"]}
    assert owners[seeded["key_results"]["positive"]] == seeded["emile"]
    assert owners[seeded["key_results"]["negative"]] is None
    # A file of the release before has neither: it imports, with no dates and no owners.
    for row in data["cycles"]:
        del row["starts_on"], row["ends_on"]
    for row in data["key_results"]:
        del row["owner_id"]
    older = tmp_path / "older.json"
    older.write_text(json.dumps(data), encoding="utf-8")
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", older))
    report = target.test_client().get(f"/v1/cycles/{seeded['cycle']}/report").get_json()
    assert (report["cycle"]["starts_on"], report["cycle"]["state"]) == (None, "current")
    nodes, owners = list(report["objectives"]), set()
    while nodes:
        node = nodes.pop()
        nodes.extend(node["children"])
        owners.update(kr["owner_id"] for kr in node["key_results"])
    assert owners == {None}


def test_the_imported_database_answers_the_api_as_the_original(app, seeded, tmp_path):
    export(app, tmp_path / "all.json")
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "all.json"))
    source, copy = app.test_client(), target.test_client()
    for path in (f"/v1/cycles/{seeded['cycle']}/report", f"/v1/objectives?cycle_id={seeded['old_cycle']}",
                 f"/v1/keyresults?cycle_id={seeded['cycle']}", "/v1/users", "/v1/teams", "/v1/cycles",
                 f"/v1/keyresults/{seeded['key_results']['positive']}/checkins",
                 f"/v1/objectives/{seeded['child']}", f"/v1/teams/{seeded['team']}/members",
                 f"/v1/teams/{seeded['other_team']}/members"):
        a, b = source.get(path), copy.get(path)
        assert (a.status_code, a.get_json(), a.headers.get("ETag")) == (b.status_code, b.get_json(),
                                                                         b.headers.get("ETag")), path


def test_imported_rows_keep_the_schemas_rules(app, seeded, tmp_path):
    export(app, tmp_path / "all.json")
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "all.json"))
    with closing(sqlite3.connect(target.config["DATABASE"])) as db:
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM key_results k JOIN objectives o ON o.id = k.objective_id "
                          "WHERE k.cycle_id IS NOT o.cycle_id").fetchone()[0] == 0
        for email, key in db.execute("SELECT email, email_key FROM users"):
            assert key == email_key(email)
        revisions = dict(db.execute("SELECT id, revision FROM objectives"))
    assert revisions[seeded["child"]] == 1 and revisions[seeded["parent"]] == 0


def test_the_format_is_documented_and_ordered(app, seeded, tmp_path):
    export(app, tmp_path / "all.json")
    text = (tmp_path / "all.json").read_text(encoding="utf-8")
    data = json.loads(text)
    assert list(data) == ["format", "version", *SECTIONS]
    assert text.startswith('{"format": "okr-export", "version": 7,\n"events": [\n{"id": ')
    assert "李小龙" in text and "\\u" not in text  # UTF-8, not escapes
    for name in SECTIONS:
        for record in data[name]:
            assert list(record) == list(transfer.FIELDS[name]), name
        assert f"    {name} " in transfer.__doc__  # the docstring lists each section's fields
    # creation order: the child objective was created before its parent
    assert [o["id"] for o in data["objectives"]] == [seeded["child"], seeded["parent"], seeded["personal"]]
    negative = next(k for k in data["key_results"] if k["type"] == "negative")
    assert negative["target_value_min"] == "-5.00" and negative["current_value"] == "-7.50"
    checkin = next(c for c in data["checkins"] if c["comment"] == "new macros")
    assert checkin["author_id"] == seeded["ada"] and checkin["key_result_id"] == seeded["key_results"]["positive"]
    users = {u["email"]: u for u in data["users"]}
    assert users["lee@example.cn"]["is_active"] is False and users["Émile@example.org"]["name"] == "Émile Zola"


def test_an_other_layout_of_the_same_json_imports_the_same(app, seeded, tmp_path, monkeypatch):
    data = exported(app, tmp_path)
    (tmp_path / "pretty.json").write_text(json.dumps(data, indent=3), encoding="utf-8")
    monkeypatch.setattr(okr.transfer.json_stream, "CHUNK", 7)  # records cut anywhere between reads
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "pretty.json"))
    export(target, tmp_path / "again.json")
    assert_same_but_the_imports_events(tmp_path / "again.json", tmp_path / "all.json")


def test_rows_are_stored_in_file_order(app, seeded, tmp_path):
    data = exported(app, tmp_path)
    data["cycles"].reverse()
    data["objectives"].reverse()
    (tmp_path / "reordered.json").write_text(json.dumps(data), encoding="utf-8")
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "reordered.json"))
    client = target.test_client()
    assert [c["id"] for c in client.get("/v1/cycles").get_json()["cycles"]] == [c["id"] for c in data["cycles"]]
    listed = client.get(f"/v1/objectives?cycle_id={seeded['cycle']}").get_json()["objectives"]
    assert [o["id"] for o in listed] == [seeded["parent"], seeded["child"]]


# --- API keys ------------------------------------------------------------------------------------


def stored_keys(path):
    with closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT credential, secret, name, read_only, created_at, revoked_at, user_id FROM api_keys "
                          "ORDER BY seq").fetchall()


def test_api_keys_stay_out_unless_asked_for(app, keyed, tmp_path):
    keys = stored_keys(app.config["DATABASE"])
    export(app, tmp_path / "plain.json")
    text = (tmp_path / "plain.json").read_text(encoding="utf-8")
    assert "api_keys" not in json.loads(text)
    assert not any(secret in text for _, secret, *_ in keys)
    # A credential is no secret: the feed names a key by it (its key.created event), never elsewhere.
    assert not any(credential in data_part(tmp_path / "plain.json") for credential, *_ in keys)
    assert {e["resource_id"] for e in json.loads(text)["events"] if e["type"] == "key.created"} == {
        credential for credential, *_ in keys}

    counts = export(app, tmp_path / "keys.json", "--include-keys")
    assert counts["api_keys"] == 3
    data = json.loads((tmp_path / "keys.json").read_text(encoding="utf-8"))
    assert list(data)[-1] == "api_keys"
    assert [tuple(k.values()) for k in data["api_keys"]] == [
        (c, s, n, bool(r), at, revoked, user) for c, s, n, r, at, revoked, user in keys]
    assert [k["revoked_at"] is not None for k in data["api_keys"]] == [False, False, True]
    assert [k["read_only"] for k in data["api_keys"]] == [False, True, False]


def test_api_keys_come_back_with_the_import(app, keyed, tmp_path):
    export(app, tmp_path / "keys.json", "--include-keys")
    target = new_app(tmp_path / "target.db")
    assert ok(invoke(target, "import", "--include-keys", tmp_path / "keys.json"))["api_keys"] == 3
    assert stored_keys(target.config["DATABASE"]) == stored_keys(app.config["DATABASE"])
    export(target, tmp_path / "again.json", "--include-keys")
    assert_same_but_the_imports_events(tmp_path / "again.json", tmp_path / "keys.json")
    # the API now wants a signature, as the original does
    assert target.test_client().get("/v1/cycles").status_code == 401


def test_an_import_of_keys_into_a_database_with_the_same_key_is_refused(app, keyed, tmp_path):
    export(app, tmp_path / "keys.json", "--include-keys")
    target = new_app(tmp_path / "target.db")
    with closing(sqlite3.connect(target.config["DATABASE"])) as db, db:
        db.execute("INSERT INTO api_keys (credential, secret, name, created_at) "
                   "SELECT credential, 'other', name, created_at FROM api_keys WHERE 0")
        credential = stored_keys(app.config["DATABASE"])[1][0]
        db.execute("INSERT INTO api_keys (credential, secret, name, created_at) VALUES (?, 'x', 'x', 'now')",
                   (credential,))
    line = refused_unchanged(target, "import", "--include-keys", tmp_path / "keys.json")
    assert f"api_keys[1]: an API key with credential {credential} exists in the database" in line


# --- refusals ------------------------------------------------------------------------------------

NEW_CYCLE = {"id": "0f0f0f0f-0000-4000-8000-000000000001", "name": "added by the file",
             "created_at": "2026-02-01T00:00:00Z", "revision": 0}
MISSING = "deadbeef-0000-4000-8000-00000000dead"


def key_result(data, kind):
    return next(k for k in data["key_results"] if k["type"] == kind)


def break_it(change):
    """A change of the exported data, made after a valid new cycle is added (which must not be written)."""
    def apply(data):
        data["cycles"].append(dict(NEW_CYCLE))
        change(data)
    return apply


def set_field(section, field, value, pick=-1):
    return break_it(lambda data: data[section][pick].__setitem__(field, value))


RECORD_REFUSALS = {
    "objective to a missing cycle": (set_field("objectives", "cycle_id", MISSING, 1),
                                     f"objectives[1]: cycle_id {MISSING} does not exist"),
    "key result to a missing objective": (set_field("key_results", "objective_id", MISSING, 2),
                                          f"key_results[2]: objective_id {MISSING} does not exist"),
    "check-in to a missing key result": (set_field("checkins", "key_result_id", MISSING),
                                         f"checkins[8]: key_result_id {MISSING} does not exist"),
    "missing parent objective": (set_field("objectives", "parent_objective_id", MISSING, 0),
                                 f"objectives[0]: parent_objective_id {MISSING} does not exist"),
    "missing team": (set_field("objectives", "team_id", MISSING, 0), f"objectives[0]: team_id {MISSING}"),
    "missing assignee": (set_field("objectives", "assignee_id", MISSING, 2), f"objectives[2]: assignee_id {MISSING}"),
    "missing author": (set_field("checkins", "author_id", MISSING, 7), f"checkins[7]: author_id {MISSING}"),
    "bad decimal": (set_field("key_results", "current_value", "12,5", 0),
                    "key_results[0]: current_value: Not a valid decimal"),
    "too many digits": (set_field("checkins", "value", "1.0000001", 8), "checkins[8]: value: Has more than 6"),
    "confidence above 1": (set_field("key_results", "confidence", "1.01", 0),
                           "key_results[0]: confidence: Must be between 0 and 1"),
    "negative check-in confidence": (set_field("checkins", "confidence", "-0.1", 8),
                                     "checkins[8]: confidence: Must be between 0 and 1"),
    "unknown type": (set_field("key_results", "type", "percent", 0), "key_results[0]: type: Must be one of"),
    "range with min over max": (break_it(lambda data: key_result(data, "range").update(target_value_min="9")),
                                "key_results[2]: target_value_min: Must not be greater than target_value_max"),
    "positive without target": (break_it(lambda data: key_result(data, "positive").update(target_value_min=None)),
                                "key_results[0]: target_value_min: Required for a positive key result"),
    "baseline with a target": (break_it(lambda data: key_result(data, "baseline").update(target_value_min="3")),
                               "key_results[4]: target_value_min: Must be null for a baseline key result"),
    "company and personal": (set_field("objectives", "is_company", True, 2),
                             "objectives[2]: is_company: An objective cannot be both"),
    "bool as a number": (set_field("users", "is_active", 1, 0), "users[0]: is_active: Not a valid boolean"),
    "blank name": (set_field("objectives", "name", "  ", 1), "objectives[1]: name: Must not be empty"),
    "team name too long": (set_field("teams", "name", "x" * 201, 0), "teams[0]: name: Longer than maximum length"),
    "bad email": (set_field("users", "email", "not an email", 1), "users[1]: email: Not a valid email"),
    "emails one under folding": (set_field("users", "email", "ADA@EXAMPLE.COM", 2),
                                 "users[2]: email ADA@EXAMPLE.COM is the same as users[0]'s"),
    "an id twice": (break_it(lambda data: data["key_results"][3].update(id=data["key_results"][1]["id"])),
                    "key_results[3]: id "),
    "an id that is no UUID": (set_field("teams", "id", "Platform", 0), "teams[0]: id: must be a lowercase UUID"),
    "an upper-case id": (break_it(lambda data: data["cycles"][0].update(id=data["cycles"][0]["id"].upper())),
                         "cycles[0]: id: must be a lowercase UUID"),
    "a bad timestamp": (set_field("checkins", "created_at", "2026-02-30T00:00:00Z", 3),
                        "checkins[3]: created_at: must be an RFC 3339 UTC time"),
    "a negative revision": (set_field("objectives", "revision", -1, 0), "objectives[0]: revision: must be a whole"),
    "a missing field": (break_it(lambda data: data["key_results"][1].pop("modified_at")),
                        "key_results[1]: missing field modified_at"),
    "an unknown field": (set_field("objectives", "colour", "red", 0), "objectives[0]: unknown field colour"),
    "a record that is no object": (break_it(lambda data: data["teams"].append(["x"])), "teams[2]: not an object"),
    "an alignment loop": (break_it(lambda data: data["objectives"][1].update(
        parent_objective_id=data["objectives"][0]["id"])), "parent_objective_id makes the alignment a loop"),
    "its own parent": (break_it(lambda data: data["objectives"][2].update(
        parent_objective_id=data["objectives"][2]["id"])),
        "objectives[2]: parent_objective_id makes the alignment a loop"),
    "a section missing": (break_it(lambda data: data.pop("checkins")), 'it has no "checkins" section'),
    "an unknown section": (break_it(lambda data: data.update(notes=[])), 'unknown section "notes"'),
    "a newer version": (break_it(lambda data: data.update(version=8)),
                        "it is format version 8, newer than this okr reads (7)"),
    "another format": (break_it(lambda data: data.update(format="okr-backup")),
                       'it is not an okr-export file: its format is "okr-backup"'),
    "an unknown role": (set_field("users", "role", "owner", 1),
                        "users[1]: role: Must be one of: admin, editor, viewer."),
    "a role in capitals": (set_field("users", "role", "Admin", 0), "users[0]: role: Must be one of"),
    "a null role": (set_field("users", "role", None, 2), "users[2]: role: Field may not be null."),
    "team member of a missing team": (set_field("team_members", "team_id", MISSING, 0),
                                      f"team_members[0]: team_id {MISSING} does not exist: no team in the file or "
                                      "the database has that id"),
    "team member who is no user": (set_field("team_members", "user_id", MISSING, 2),
                                   f"team_members[2]: user_id {MISSING} does not exist: no user"),
    "team member without a user": (set_field("team_members", "user_id", None, 1),
                                   "team_members[1]: user_id: Field may not be null."),
    "a team member twice": (break_it(lambda data: data["team_members"].append(dict(data["team_members"][0]))),
                            "team_members[3]: user "),
    "a bad joining time": (set_field("team_members", "joined_at", "yesterday", 1),
                           "team_members[1]: joined_at: must be an RFC 3339 UTC time"),
    "a team member with a field too many": (set_field("team_members", "role", "lead", 0),
                                            "team_members[0]: unknown field role"),
    "team members out of order": (break_it(lambda data: data.update(team_members=data.pop("team_members"))),
                                  'the section "team_members" comes after "initiatives"'),
}


def write_json(path, data):
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def bad_file(app, tmp_path, case):
    """The app's export with one of RECORD_REFUSALS' changes, as tmp_path/bad.json; and the problem it makes."""
    change, problem = RECORD_REFUSALS[case]
    data = exported(app, tmp_path)
    change(data)
    return write_json(tmp_path / "bad.json", data), problem


@pytest.mark.parametrize("case", RECORD_REFUSALS)
def test_a_bad_file_is_refused_by_a_merge_with_the_database_unchanged(app, seeded, tmp_path, case):
    bad, problem = bad_file(app, tmp_path, case)
    line = refused_unchanged(app, "import", "--merge", bad)
    assert f"cannot import {bad}: nothing imported: " in line and problem in line, line


@pytest.mark.parametrize("case", ["objective to a missing cycle", "check-in to a missing key result",
                                  "a newer version", "bad decimal", "an alignment loop"])
def test_a_bad_file_is_refused_by_an_empty_database_which_stays_empty(app, seeded, tmp_path, case):
    bad, problem = bad_file(app, tmp_path, case)
    target = new_app(tmp_path / "target.db")
    assert problem in refused_unchanged(target, "import", bad)


def cut(path, fraction):
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * fraction)])
    return path


FILE_REFUSALS = {
    "truncated in a record": (lambda path: cut(path, 0.6), "the file is truncated"),
    "truncated between records": (lambda path: path.write_bytes(path.read_bytes().rsplit(b"\n]", 1)[0]),
                                  "the file is truncated"),
    "not JSON": (lambda path: path.write_text("name,email\nAda,ada@example.com\n"),
                 "it is not an okr-export file: it does not begin with {"),
    "broken JSON": (lambda path: path.write_bytes(path.read_bytes().replace(b'"revision": 0}', b'"revision": 0,}', 1)),
                    "it is not valid JSON: "),
    "empty": (lambda path: path.write_bytes(b""), "it is empty"),
    "other JSON": (lambda path: path.write_text('{"cycles": []}'), 'it does not begin with "format": "okr-export"'),
    "not UTF-8": (lambda path: path.write_bytes(path.read_bytes().replace("Émile".encode(), b"\xc9mile")),
                  "it is not UTF-8 text"),
    "NaN": (lambda path: path.write_bytes(path.read_bytes().replace(b'"revision": 0}', b'"revision": NaN}', 1)),
            "NaN is not allowed"),
    "a key twice": (lambda path: path.write_bytes(path.read_bytes().replace(b'"revision": 0}',
                                                                             b'"revision": 0, "revision": 0}', 1)),
                    "duplicate key"),
}


@pytest.mark.parametrize("case", FILE_REFUSALS)
def test_a_file_that_is_no_export_is_refused_with_the_database_unchanged(app, seeded, tmp_path, case):
    change, problem = FILE_REFUSALS[case]
    data = exported(app, tmp_path)
    data["cycles"].append(dict(NEW_CYCLE))
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "okr-export", "version": 2}, ensure_ascii=False)[:-1] + "".join(
        f',\n"{name}": [' + ",\n".join(json.dumps(r, ensure_ascii=False) for r in data[name]) + "\n]"
        for name in SECTIONS) + "\n}\n", encoding="utf-8")
    change(path)
    line = refused_unchanged(app, "import", "--merge", path)
    assert problem in line, line


def test_an_import_into_a_database_that_holds_data_is_refused_naming_what_it_holds(app, seeded, tmp_path):
    export(app, tmp_path / "all.json")
    target = new_app(tmp_path / "target.db")
    client = target.test_client()
    cycle = post(client, "/v1/cycles", {"name": "mine"})["id"]
    post(client, "/v1/objectives", {"name": "a", "cycle_id": cycle, "is_company": False, "is_personal": False})
    line = refused_unchanged(target, "import", tmp_path / "all.json")
    assert "the database is not empty: it holds 1 cycle, 1 objective; " in line and "--merge" in line


def test_api_keys_alone_leave_a_database_empty(app, seeded, tmp_path):
    export(app, tmp_path / "all.json")
    target = new_app(tmp_path / "target.db")
    assert invoke(target, "keys", "create", "--name", "admin").exit_code == 0
    assert ok(invoke(target, "import", tmp_path / "all.json"))["objectives"] == 3


@pytest.mark.parametrize("edit", [
    lambda text: text.replace("2026 Q1", "2026 Q2"),  # someone edits the file
    lambda text: text.replace('"revision": 0}', "}", 1),  # a field goes missing: values are not checked twice
], ids=["changed", "broken"])
def test_a_file_changed_between_the_check_and_the_writing_is_refused(app, seeded, tmp_path, monkeypatch, edit):
    export(app, tmp_path / "all.json")
    target = new_app(tmp_path / "target.db")
    real = okr.transfer.importer.records
    passes = []

    def records(path, hashes):
        passes.append(path)
        if len(passes) == 2:  # between the passes
            Path(path).write_text(edit(Path(path).read_text(encoding="utf-8")), encoding="utf-8")
        return real(path, hashes)

    monkeypatch.setattr(okr.transfer.importer, "records", records)
    assert "it changed while it was being imported" in refused_unchanged(target, "import", tmp_path / "all.json")


# --- merge ---------------------------------------------------------------------------------------


def test_merge_updates_what_changed_adds_what_is_new_and_leaves_the_rest(app, seeded, clock, tmp_path):
    data = exported(app, tmp_path)
    child = data["objectives"][0]
    child.update(name="Faster support desk", modified_at="2026-03-01T00:00:00Z", created_at="2020-01-01T00:00:00Z")
    positive = key_result(data, "positive")
    positive.update(current_value="400", confidence="0.90", revision=7)
    data["users"][2]["is_active"] = True
    data["cycles"].append(dict(NEW_CYCLE))
    new_objective = {"id": "0f0f0f0f-0000-4000-8000-000000000002", "name": "New", "description": None,
                     "is_company": False, "is_personal": False, "cycle_id": NEW_CYCLE["id"], "team_id": None,
                     "assignee_id": seeded["ada"], "parent_objective_id": child["id"],
                     "created_at": "2026-02-01T00:00:00Z", "modified_at": "2026-02-01T00:00:00Z", "revision": 0}
    data["objectives"].append(new_objective)
    new_key_result = {"id": "0f0f0f0f-0000-4000-8000-000000000003", "objective_id": new_objective["id"],
                      "name": "Ship it", "type": "milestone", "confidence": "0.5", "current_value": "0",
                      "target_value_min": None, "target_value_max": None, "created_at": "2026-02-01T00:00:00Z",
                      "modified_at": "2026-02-01T00:00:00Z", "revision": 0}
    data["key_results"].append(new_key_result)
    data["checkins"].append({"id": "0f0f0f0f-0000-4000-8000-000000000004", "key_result_id": new_key_result["id"],
                             "value": "0", "confidence": "0.5", "comment": None, "author_id": None,
                             "created_at": "2026-02-01T00:00:00Z"})
    data["checkins"].append({"id": "0f0f0f0f-0000-4000-8000-000000000005", "key_result_id": positive["id"],
                             "value": "400", "confidence": "0.9", "comment": "merged", "author_id": seeded["emile"],
                             "created_at": "2026-03-01T00:00:00Z"})
    data["checkins"][0]["comment"] = "edited"  # check-ins are never edited: left as stored
    merged = write_json(tmp_path / "merged.json", data)

    client = app.test_client()
    etag = client.get(f"/v1/objectives/{seeded['child']}").headers["ETag"]
    untouched = client.get(f"/v1/objectives/{seeded['parent']}").headers["ETag"]
    result = ok(invoke(app, "import", "--merge", merged))
    assert result["merged"] is True
    assert result["objectives"] == {"added": 1, "updated": 1, "unchanged": 2}
    assert result["key_results"] == {"added": 1, "updated": 1, "unchanged": 5}
    assert result["checkins"] == {"added": 2, "updated": 0, "unchanged": 9}
    assert result["cycles"] == {"added": 1, "updated": 0, "unchanged": 2}
    assert result["users"] == {"added": 0, "updated": 1, "unchanged": 2}
    assert "api_keys" not in result

    response = client.get(f"/v1/objectives/{seeded['child']}")
    body = response.get_json()
    assert body["name"] == "Faster support desk" and body["modified_at"] == "2026-03-01T00:00:00Z"
    assert body["created_at"] == "2026-01-06T10:00:00Z"  # created_at never changes
    assert response.headers["ETag"] != etag
    assert client.get(f"/v1/objectives/{seeded['parent']}").headers["ETag"] == untouched
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        revisions = dict(db.execute("SELECT id, revision FROM objectives"))
        assert revisions[seeded["child"]] == 2 and revisions[seeded["parent"]] == 0
        assert db.execute("SELECT revision, current_value FROM key_results WHERE id = ?",
                          (positive["id"],)).fetchone() == (7, "400.00")
        assert db.execute("SELECT cycle_id FROM key_results WHERE id = ?",
                          (new_key_result["id"],)).fetchone()[0] == NEW_CYCLE["id"]
        assert db.execute("SELECT count(*) FROM checkins WHERE comment = 'edited'").fetchone()[0] == 0
    # new rows come after the old ones, in file order
    cycles = client.get("/v1/cycles").get_json()["cycles"]
    assert [c["id"] for c in cycles] == [seeded["cycle"], seeded["old_cycle"], NEW_CYCLE["id"]]
    history = client.get(f"/v1/keyresults/{positive['id']}/checkins").get_json()["checkins"]
    assert [c["comment"] for c in history] == [None, "new macros", "merged"]
    assert client.get(f"/v1/keyresults/{new_key_result['id']}").get_json()["target_value_min"] == "1.00"

    again = ok(invoke(app, "import", "--merge", merged))  # a second merge changes nothing
    assert all(outcome["added"] == outcome["updated"] == 0 for outcome in again.values() if isinstance(outcome, dict))


def test_merge_updates_keys_by_credential_and_a_revoked_key_stays_revoked(app, keyed, tmp_path):
    export(app, tmp_path / "keys.json", "--include-keys")
    data = json.loads((tmp_path / "keys.json").read_text(encoding="utf-8"))
    data["api_keys"][2]["revoked_at"] = None
    data["api_keys"][0]["name"] = "ci, renamed"
    data["api_keys"].append({**data["api_keys"][1], "credential": "c" * 24, "name": "new"})
    result = ok(invoke(app, "import", "--merge", "--include-keys", write_json(tmp_path / "merged.json", data)))
    assert result["api_keys"] == {"added": 1, "updated": 1, "unchanged": 2}
    keys = stored_keys(app.config["DATABASE"])
    assert [(name, revoked is not None) for _, _, name, _, _, revoked, _ in keys] == [
        ("ci, renamed", False), ("reader", False), ("old", True), ("new", False)]


def test_without_include_keys_an_import_leaves_the_files_keys_out(app, keyed, tmp_path):
    export(app, tmp_path / "keys.json", "--include-keys")
    target = new_app(tmp_path / "target.db")
    result = ok(invoke(target, "import", tmp_path / "keys.json"))
    assert result["api_keys_left_out"] == 3 and "api_keys" not in result
    assert stored_keys(target.config["DATABASE"]) == []
    assert target.test_client().get("/v1/cycles").status_code == 200  # still keyless


def test_a_merge_without_include_keys_never_touches_the_databases_keys(app, keyed, tmp_path):
    """The attack: a file that rewrites a key's secret, un-revokes one or adds its own, merged without a flag."""
    export(app, tmp_path / "keys.json", "--include-keys")
    before = stored_keys(app.config["DATABASE"])
    data = json.loads((tmp_path / "keys.json").read_text(encoding="utf-8"))
    data["api_keys"][0]["secret"] = "attacker-knows-this-secret-" + "x" * 20
    data["api_keys"][1]["read_only"] = False
    data["api_keys"].append({**data["api_keys"][0], "credential": "a" * 24, "name": "attacker"})
    result = ok(invoke(app, "import", "--merge", write_json(tmp_path / "evil.json", data)))
    assert result["api_keys_left_out"] == 4
    assert stored_keys(app.config["DATABASE"]) == before


@pytest.mark.parametrize("secret", ["short", "x" * 31])
def test_a_key_with_a_secret_under_32_characters_is_refused(app, keyed, tmp_path, secret):
    export(app, tmp_path / "keys.json", "--include-keys")
    data = json.loads((tmp_path / "keys.json").read_text(encoding="utf-8"))
    data["api_keys"][1]["secret"] = secret
    target = new_app(tmp_path / "target.db")
    line = refused_unchanged(target, "import", "--include-keys", write_json(tmp_path / "weak.json", data))
    assert "api_keys[1]: secret:" in line


@pytest.mark.parametrize("kind", ["fifo", "stdin"])
def test_a_pipe_is_refused_up_front_without_taking_the_write_lock(app, seeded, tmp_path, kind):
    export(app, tmp_path / "all.json")
    target = new_app(tmp_path / "target.db")
    if kind == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
        writer = os.open(path, os.O_RDWR | os.O_NONBLOCK)  # someone is writing: opening it would not block
    else:
        read_end, writer = os.pipe()
        path = f"/proc/self/fd/{read_end}"
    try:
        line = refused(invoke(target, "import", path))
    finally:
        os.close(writer)
        if kind == "stdin":
            os.close(read_end)
    assert "not a regular file" in line and "save it to a file first" in line
    assert ok(invoke(target, "import", tmp_path / "all.json"))["objectives"] == 3  # nothing was held or written


def test_merge_moves_an_objective_with_its_key_results(app, seeded, tmp_path):
    data = exported(app, tmp_path)
    data["objectives"][0]["cycle_id"] = seeded["old_cycle"]
    data["key_results"] = []  # the key results the database has follow their objective
    data["checkins"] = []
    ok(invoke(app, "import", "--merge", write_json(tmp_path / "moved.json", data)))
    listed = app.test_client().get(f"/v1/keyresults?cycle_id={seeded['old_cycle']}").get_json()["keyresults"]
    assert len(listed) == 6


def test_merge_refuses_an_email_another_user_has(app, seeded, tmp_path):
    data = exported(app, tmp_path)
    data["users"] = [{**data["users"][0], "id": "0f0f0f0f-0000-4000-8000-000000000009", "email": "Ada@Example.com"}]
    line = refused_unchanged(app, "import", "--merge", write_json(tmp_path / "clash.json", data))
    assert f"users[0]: email Ada@Example.com belongs to another user in the database ({seeded['ada']})" in line


# --- CSV -----------------------------------------------------------------------------------------

CSV_HEADER = ["objective_id", "objective", "team_id", "team", "assignee_id", "assignee", "key_result_id",
              "key_result", "type", "start_value", "current_value", "target_value_min", "target_value_max",
              "progress", "confidence", "status", "stale", "last_checkin_at", "owner_id", "owner", "unit",
              "unit_position", "expected_progress", "pace_status", "objective_status", "weight",
              "progress_from", "initiatives_done", "initiatives_count"]  # the last nine appended later


def read_csv(path):
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # a BOM, for Excel
    return list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline="")))


def test_csv_of_a_cycle_has_one_row_per_key_result_with_the_reports_figures(app, seeded, tmp_path):
    path = tmp_path / "q1.csv"
    result = export(app, path, "--format", "csv", "--cycle", seeded["cycle"])
    assert result == {"exported": str(path), "format": "csv", "cycle": seeded["cycle"], "key_results": 5}
    rows = read_csv(path)
    assert rows[0] == CSV_HEADER
    rows = [dict(zip(CSV_HEADER, row)) for row in rows[1:]]
    report = app.test_client().get(f"/v1/cycles/{seeded['cycle']}/report").get_json()
    nodes = {}

    def walk(objectives):
        for objective in objectives:
            for node in objective["key_results"]:
                nodes[node["id"]] = (objective, node)
            walk(objective["children"])

    walk(report["objectives"])
    assert sorted(row["key_result_id"] for row in rows) == sorted(nodes)
    for row in rows:
        objective, node = nodes[row["key_result_id"]]
        assert row["objective_id"] == objective["id"]
        for column in ("type", "start_value", "current_value", "confidence", "status", "last_checkin_at"):
            assert row[column] == node[column], column
        for column in ("progress", "target_value_min", "target_value_max", "expected_progress", "pace_status"):
            assert row[column] == (node[column] or ""), column
        assert row["stale"] == str(node["stale"]).lower()
        assert row["objective_status"] == objective["status"]
    by_type = {row["type"]: row for row in rows}
    assert by_type["negative"]["target_value_min"] == "-5.00"  # a number, not escaped
    assert by_type["negative"]["current_value"] == "-7.50"
    assert by_type["baseline"]["progress"] == ""
    assert by_type["positive"]["objective"] == "'-Faster support"  # escaped text
    assert by_type["positive"]["key_result"] == "'+positive ✓"
    assert by_type["positive"]["team"] == "Plattform ✓" and by_type["positive"]["assignee"] == "Émile Zola"
    assert by_type["positive"]["progress"] == node_progress(nodes, by_type["positive"])


def node_progress(nodes, row):
    return nodes[row["key_result_id"]][1]["progress"]


def test_csv_escapes_text_a_spreadsheet_would_take_for_a_formula(app, seeded, tmp_path):
    path = tmp_path / "old.csv"
    export(app, path, "--format", "csv", "--cycle", seeded["old_cycle"])
    [header, row] = read_csv(path)
    row = dict(zip(header, row))
    assert row["objective"] == "'@me learn"
    assert row["team"] == "'=cmd|' /C calc'!A0"
    assert row["key_result"] == "Read\tbooks"  # a tab inside is harmless; only a leading one is escaped
    assert row["assignee"] == "Ada Lovelace"
    for text in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"):
        assert transfer.spreadsheet_text(text) == "'" + text
    for text in ("Ship it", "1-2", "a=b", ""):
        assert transfer.spreadsheet_text(text) == text


def test_csv_lists_objectives_in_order_with_their_key_results(app, seeded, tmp_path, clock):
    client = app.test_client()
    cycle = post(client, "/v1/cycles", {"name": "order"})["id"]
    first = post(client, "/v1/objectives", {"name": "first", "cycle_id": cycle, "is_company": False,
                                            "is_personal": False})["id"]
    second = post(client, "/v1/objectives", {"name": "second", "cycle_id": cycle, "is_company": False,
                                             "is_personal": False})["id"]
    for objective, name in ((second, "b1"), (first, "a1"), (second, "b2"), (first, "a2")):
        post(client, f"/v1/objectives/{objective}/keyresults", {"name": name, "type": "baseline"})
    export(app, tmp_path / "order.csv", "--format", "csv", "--cycle", cycle)
    assert [row[7] for row in read_csv(tmp_path / "order.csv")[1:]] == ["a1", "a2", "b1", "b2"]


def test_csv_of_an_empty_cycle_is_its_header(app, tmp_path):
    cycle = post(app.test_client(), "/v1/cycles", {"name": "empty"})["id"]
    export(app, tmp_path / "empty.csv", "--format", "csv", "--cycle", cycle)
    assert read_csv(tmp_path / "empty.csv") == [CSV_HEADER]


@pytest.mark.parametrize("args, problem", [
    (["--format", "csv"], "--format csv needs --cycle ID"),
    (["--cycle", MISSING], "--cycle goes with --format csv"),
    (["--format", "csv", "--cycle", MISSING], f"no cycle with id {MISSING}"),
    (["--format", "csv", "--cycle", MISSING, "--include-keys"], "--include-keys goes with the JSON export"),
])
def test_csv_options_that_do_not_fit_are_refused(app, tmp_path, args, problem):
    assert problem in refused(invoke(app, "export", *args, tmp_path / "out.csv"))
    assert not (tmp_path / "out.csv").exists()


# --- where the file goes -------------------------------------------------------------------------


def test_an_export_to_a_missing_folder_is_refused(app, tmp_path):
    target = tmp_path / "nowhere" / "all.json"
    line = refused(invoke(app, "export", target))
    assert line.endswith(f"cannot export to {target}: the folder {target.parent} does not exist")
    assert not target.parent.exists()


def test_an_export_never_replaces_a_file(app, tmp_path):
    (tmp_path / "all.json").write_text("keep me")
    assert "exists; export to a new file" in refused(invoke(app, "export", tmp_path / "all.json"))
    assert (tmp_path / "all.json").read_text() == "keep me"
    assert os.listdir(tmp_path) == [name for name in os.listdir(tmp_path) if not name.startswith(".okr-export")]


def test_the_export_file_is_private(app, seeded, tmp_path):
    export(app, tmp_path / "keys.json", "--include-keys")
    assert (tmp_path / "keys.json").stat().st_mode & 0o077 == 0
    assert [name for name in os.listdir(tmp_path) if name.startswith(".okr-export")] == []


# --- the program ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_program_exports_and_imports_and_refuses_in_one_okr_line(app, seeded, tmp_path):
    database = app.config["DATABASE"]
    done = helpers.run_okr("--database", database, "export", "all.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["objectives"] == 3
    assert helpers.run_okr("--database", "new.db", "init-db", cwd=tmp_path).returncode == 0
    done = helpers.run_okr("--database", "new.db", "import", "all.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert helpers.run_okr("--database", "new.db", "export", "again.json", cwd=tmp_path).returncode == 0
    assert_same_but_the_imports_events(tmp_path / "again.json", tmp_path / "all.json")

    done = helpers.run_okr("--database", "new.db", "import", "all.json", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines()[-1].startswith("okr: cannot import all.json: nothing imported: the database "
                                                   "is not empty: it holds 3 users, 2 teams, 3 team members, "
                                                   "2 cycles")
    cut(tmp_path / "all.json", 0.5)
    done = helpers.run_okr("--database", "new.db", "import", "--merge", "all.json", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith("okr: cannot import all.json: nothing imported: it ends early")
    done = helpers.run_okr("--database", "new.db", "export", "missing/all.json", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == "okr: cannot export to missing/all.json: the folder missing does not exist"


def test_values_the_api_would_take_are_stored_as_the_api_stores_them(app, seeded, tmp_path):
    data = exported(app, tmp_path)
    positive = key_result(data, "positive")
    positive.update(confidence=positive["confidence"] + "00")
    key_result(data, "milestone")["target_value_min"] = None  # a milestone's target is always 1.00
    data["checkins"][0]["value"] = "1.2e2"
    data["users"][1]["email"] = "E\u0301mile@example.org"  # decomposed: stored in NFC
    # a number, as the API takes one (in the key results: the events before them show 310.00 too)
    text = json.dumps(data, ensure_ascii=False)
    events, users, rest = text.partition('"users": [')
    text = events + users + rest.replace('"current_value": "310.00"', '"current_value": 310.0', 1)
    assert text.count("310.0,") == 1
    (tmp_path / "loose.json").write_text(text, encoding="utf-8")
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "loose.json"))
    export(target, tmp_path / "again.json")
    assert_same_but_the_imports_events(tmp_path / "again.json", tmp_path / "all.json")


# --- streaming -----------------------------------------------------------------------------------


def test_exports_stream_rather_than_hold_the_database_in_memory(app, tmp_path):
    """Python's own allocations while exporting stay far below the size of what is written (no timing)."""
    db = connect(app.config["DATABASE"], 5000)
    cycle, now = new_id(), "2026-01-01T00:00:00Z"
    with db:
        db.execute("BEGIN")
        db.execute("INSERT INTO cycles (id, name, created_at) VALUES (?, 'big', ?)", (cycle, now))
        objectives = [(new_id(), f"objective {i} " + "x" * 200, cycle, now, now) for i in range(3000)]
        db.executemany("INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, created_at, "
                       "modified_at) VALUES (?, ?, 0, 0, ?, ?, ?)", objectives)
        db.executemany("INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value, "
                       "target_value_min, created_at, modified_at) VALUES (?, ?, ?, 'kr', 'positive', '0.50', "
                       "'0.00', '10.00', ?, ?)", ((new_id(), o[0], cycle, now, now) for o in objectives
                                                  for _ in range(4)))
        db.execute("INSERT INTO checkins (id, key_result_seq, value, confidence, created_at) "
                   "SELECT id, seq, current_value, confidence, created_at FROM key_results")
        # and a feed: an event per key result, its data the row's JSON
        db.execute("INSERT INTO events (id, type, created_at, actor, resource_type, resource_id, parent_id, "
                   "cycle_id, data) SELECT id, 'key_result.created', created_at, "
                   "'{\"type\":\"system\",\"id\":null,\"name\":\"okr\"}', 'key_result', id, objective_id, "
                   "cycle_id, json_object('id', id, 'name', name, 'objective_id', objective_id, 'target_value_min', "
                   "target_value_min, 'created_at', created_at) FROM key_results")
    moment = parse_timestamp(now)
    for name, write in (("all.json", lambda f: transfer.export_json(db, f)),
                        ("big.csv", lambda f: transfer.export_csv(db, cycle, f, moment))):
        with open(os.devnull, "w", encoding="utf-8", newline="") as f:
            write(f)  # once first: what the first call loads and caches is no part of the streaming
        with open(tmp_path / name, "w", encoding="utf-8", newline="") as f:
            tracemalloc.start()
            write(f)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        size = (tmp_path / name).stat().st_size
        assert size > 2_000_000 and peak < size / 10, (name, size, peak)
    db.close()


# --- people: roles, team members, users' keys, and what is never exported ------------------------------


# What format 1 lacked of a record: a user's role (and what format 3 added: the weekly email and the provider
# link), an API key's user.
NOT_IN_VERSION_1 = ("role", "user_id", "weekly_email", "oidc_issuer", "oidc_subject")


def previous_release(data):
    """data as the release of format version 1 would have written it: no events, no role, no team members, no
    comments, no user_id of a key."""
    old = {"format": "okr-export", "version": 1}
    for name, records in data.items():
        if name in ("format", "version", "team_members", "events", "comments"):
            continue
        old[name] = [{field: value for field, value in record.items() if field not in NOT_IN_VERSION_1}
                     for record in records]
    return old


def stored(app, sql, *parameters):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute(sql, parameters).fetchall()


def roles(app):
    return dict(stored(app, "SELECT email, role FROM users"))


def test_users_have_their_role_and_teams_their_members(app, seeded, tmp_path):
    data = exported(app, tmp_path)
    assert {u["email"]: u["role"] for u in data["users"]} == {
        "ada@example.com": "admin", "Émile@example.org": "editor", "lee@example.cn": "viewer"}
    assert list(data["users"][0]) == ["id", "name", "email", "role", "is_active", "created_at", "revision",
                                      "weekly_email", "oidc_issuer", "oidc_subject"]
    assert data["team_members"] == [
        {"team_id": seeded["team"], "user_id": seeded["emile"], "joined_at": "2026-01-05T09:00:00Z"},
        {"team_id": seeded["other_team"], "user_id": seeded["ada"], "joined_at": "2026-01-05T09:00:00Z"},
        {"team_id": seeded["team"], "user_id": seeded["ada"], "joined_at": "2026-01-05T09:00:00Z"},
    ]
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "all.json"))
    assert roles(target) == roles(app)
    assert stored(target, "SELECT * FROM team_members") == stored(app, "SELECT * FROM team_members")


def test_a_file_of_the_previous_release_is_read_and_its_users_are_editors(app, keyed, tmp_path):
    export(app, tmp_path / "all.json", "--include-keys")
    old = previous_release(json.loads((tmp_path / "all.json").read_text(encoding="utf-8")))
    path = write_json(tmp_path / "old.json", old)
    assert "role" not in path.read_text(encoding="utf-8") and "user_id" not in path.read_text(encoding="utf-8")
    target = new_app(tmp_path / "target.db")
    imported = ok(invoke(target, "import", "--include-keys", path))
    assert imported["users"] == 3 and imported["team_members"] == 0 and imported["api_keys"] == 3
    assert set(roles(target).values()) == {"editor"}
    assert stored(target, "SELECT count(*) FROM api_keys WHERE user_id IS NULL") == [(3,)]
    export(target, tmp_path / "new.json")
    data = json.loads((tmp_path / "new.json").read_text(encoding="utf-8"))
    assert data["version"] == 7 and data["team_members"] == []
    assert [{k: v for k, v in u.items() if k not in NOT_IN_VERSION_1} for u in data["users"]] == old["users"]


def test_a_merge_of_the_previous_releases_file_leaves_roles_and_keys_users_alone(app, seeded, tmp_path):
    with app.app_context(), transaction() as db:
        credential, _ = key_store.create(db, "Ada's", False, seeded["ada"])
    export(app, tmp_path / "all.json", "--include-keys")
    old = previous_release(json.loads((tmp_path / "all.json").read_text(encoding="utf-8")))
    old["users"][2]["name"] = "Lee Jun-fan"
    old["users"].append({"id": "0f0f0f0f-0000-4000-8000-000000000009", "name": "New", "email": "new@example.com",
                         "is_active": True, "created_at": "2026-02-01T00:00:00Z", "revision": 0})
    old["api_keys"][-1]["name"] = "Ada's, renamed"
    result = ok(invoke(app, "import", "--merge", "--include-keys", write_json(tmp_path / "old.json", old)))
    assert result["users"] == {"added": 1, "updated": 1, "unchanged": 2}
    assert roles(app) == {"ada@example.com": "admin", "Émile@example.org": "editor", "lee@example.cn": "viewer",
                          "new@example.com": "editor"}
    assert stored(app, "SELECT name FROM users WHERE id = ?", seeded["lee"]) == [("Lee Jun-fan",)]
    assert stored(app, "SELECT name, user_id FROM api_keys WHERE credential = ?", credential) == [
        ("Ada's, renamed", seeded["ada"])]
    assert len(stored(app, "SELECT * FROM team_members")) == 3  # a file without the section removes none


def test_a_merge_adds_new_team_members_and_leaves_the_others(app, seeded, tmp_path):
    data = exported(app, tmp_path)
    data["team_members"][0]["joined_at"] = "2020-01-01T00:00:00Z"  # a stored member keeps when they joined
    data["team_members"].append({"team_id": seeded["other_team"], "user_id": seeded["emile"],
                                 "joined_at": "2026-03-01T00:00:00Z"})
    result = ok(invoke(app, "import", "--merge", write_json(tmp_path / "merged.json", data)))
    assert result["team_members"] == {"added": 1, "updated": 0, "unchanged": 3}
    assert stored(app, "SELECT team_id, user_id, joined_at FROM team_members ORDER BY seq") == [
        (seeded["team"], seeded["emile"], "2026-01-05T09:00:00Z"),
        (seeded["other_team"], seeded["ada"], "2026-01-05T09:00:00Z"),
        (seeded["team"], seeded["ada"], "2026-01-05T09:00:00Z"),
        (seeded["other_team"], seeded["emile"], "2026-03-01T00:00:00Z"),
    ]


def test_a_users_key_comes_back_acting_for_its_user(app, seeded, tmp_path):
    with app.app_context(), transaction() as db:
        credential, secret = key_store.create(db, "Ada's", True, seeded["ada"])
        key_store.create(db, "service", False)
    export(app, tmp_path / "keys.json", "--include-keys")
    data = json.loads((tmp_path / "keys.json").read_text(encoding="utf-8"))
    assert [(k["name"], k["user_id"]) for k in data["api_keys"]] == [("Ada's", seeded["ada"]), ("service", None)]
    assert list(data["api_keys"][0])[-1] == "user_id"
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", "--include-keys", tmp_path / "keys.json"))
    assert stored_keys(target.config["DATABASE"]) == stored_keys(app.config["DATABASE"])
    me = target.test_client().get("/v1/me", headers=helpers.signed({"credential": credential, "secret": secret}))
    assert me.get_json()["user"]["id"] == seeded["ada"] and me.get_json()["role"] == "admin"
    assert me.get_json()["key"]["read_only"] is True


def test_a_key_of_a_user_nowhere_is_refused(app, keyed, tmp_path):
    export(app, tmp_path / "keys.json", "--include-keys")
    data = json.loads((tmp_path / "keys.json").read_text(encoding="utf-8"))
    data["api_keys"][1]["user_id"] = MISSING
    line = refused_unchanged(app, "import", "--merge", "--include-keys", write_json(tmp_path / "bad.json", data))
    assert f"api_keys[1]: user_id {MISSING} does not exist: no user in the file or the database has that id" in line


PASSWORD_HASH = "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA"


def test_an_import_never_clears_a_password_and_none_is_exported(app, seeded, tmp_path):
    with app.app_context(), transaction() as db:
        users.set_password(db, users.get(db, seeded["ada"]), PASSWORD_HASH)
    data = exported(app, tmp_path)
    text = (tmp_path / "all.json").read_text(encoding="utf-8")
    assert "password" not in text and "argon2" not in text
    data["users"][0]["name"] = "Ada King"  # the user with the password is updated
    result = ok(invoke(app, "import", "--merge", write_json(tmp_path / "merged.json", data)))
    assert result["users"]["updated"] == 1
    assert stored(app, "SELECT name, password_hash FROM users WHERE id = ?", seeded["ada"]) == [
        ("Ada King", PASSWORD_HASH)]
    ok(invoke(app, "import", "--merge", write_json(tmp_path / "old.json", previous_release(data))))
    assert stored(app, "SELECT password_hash FROM users WHERE id = ?", seeded["ada"]) == [(PASSWORD_HASH,)]
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "merged.json"))
    assert stored(target, "SELECT count(*) FROM users WHERE password_hash IS NOT NULL") == [(0,)]


def test_invitations_sessions_and_sign_in_failures_are_never_exported(app, seeded, tmp_path):
    with app.app_context(), transaction() as db:
        user = users.get(db, seeded["emile"])
        invitation = invitations.create(db, user)
        session = sessions.open_session(db, timedelta(hours=12), user_id=user["id"])
        throttle.record(db, "203.0.113.9", "someone@example.com", 1_700_000_000)
    export(app, tmp_path / "all.json", "--include-keys")
    text = (tmp_path / "all.json").read_text(encoding="utf-8")
    for secret in (invitation, sessions.token_hash(invitation), session, sessions.token_hash(session),
                   "203.0.113.9", "someone@example.com"):
        assert secret not in text
    assert list(json.loads(text)) == ["format", "version", *SECTIONS, "api_keys"]


@pytest.mark.parametrize("change", [
    lambda user: user.update(role="editor"),
    lambda user: user.update(is_active=False),
], ids=["demoted", "deactivated"])
def test_a_merge_that_would_leave_no_active_admin_is_refused(app, seeded, tmp_path, change):
    data = exported(app, tmp_path)
    change(data["users"][0])  # Ada, the one admin
    line = refused_unchanged(app, "import", "--merge", write_json(tmp_path / "merged.json", data))
    assert "nothing imported: it would leave no active admin" in line


def test_a_merge_may_hand_the_admin_role_over(app, seeded, tmp_path):
    data = exported(app, tmp_path)
    data["users"][0]["role"], data["users"][1]["role"] = "editor", "admin"
    ok(invoke(app, "import", "--merge", write_json(tmp_path / "merged.json", data)))
    assert roles(app) == {"ada@example.com": "editor", "Émile@example.org": "admin", "lee@example.cn": "viewer"}
