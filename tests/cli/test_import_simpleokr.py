"""okr import-simpleokr end to end: a second instance of this service, with an API key, on real waitress on a
loopback port, is the source; the target's lists must then answer the same as the source's."""
import hashlib
import io
import json
import os
import sqlite3
import threading
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

import okr.clock

import okr.__main__ as program
from helpers import free_port, make_user, served_in_thread
from okr import create_app
from okr.transfer import from_simpleokr
from okr.cli.import_simpleokr import Progress
from okr.transfer.api_client import Client
from okr.db import init_db, transaction
from okr.store import closing as cycle_closing, users

KR_TYPES = {"positive": {"target_value_min": "500"}, "negative": {"target_value_min": "5", "current_value": "40"},
            "range": {"target_value_min": "1", "target_value_max": "4"}, "milestone": {}, "baseline": {}}


class FailAfter:
    """A WSGI wrapper: the app until `limit` requests have been answered, then 500s (None: never)."""

    def __init__(self, app):
        self.app, self.limit, self.count = app, None, 0
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            self.count += 1
            failing = self.limit is not None and self.count > self.limit
        if failing:
            start_response("500 Internal Server Error", [("Content-Type", "application/json")])
            return [b'{"code": 500, "message": "internal error"}']
        return self.app(environ, start_response)


class Source:
    def __init__(self, path):
        self.path = path
        self.app = create_app({"TESTING": True, "DATABASE": path})
        with self.app.app_context():
            init_db()
        self.runner = self.app.test_cli_runner()
        result = self.runner.invoke(args=["keys", "create", "--name", "export", "--json"])
        self.key = json.loads(result.output)
        self.wrapper = FailAfter(self.app)

    def client(self, url):
        return Client(url, self.key["credential"], self.key["secret"], timeout=(2, 20))

    def sql(self, statement, parameters=()):
        with closing(sqlite3.connect(self.path)) as db:
            db.execute(statement, parameters)
            db.commit()


@pytest.fixture
def source(tmp_path):
    source = Source(tmp_path / "source.db")
    with served_in_thread(source.wrapper) as served:
        source.url, source.stop = served.url, served.stop
        with source.client(served.url) as api:
            source.api = api
            yield source


def fill(source):
    """Users, teams, two cycles, objectives aligned both ways (a child listed before its parent, in its
    cycle and across cycles), every key result type, unicode names. Returns the ids worth naming."""
    api, runner = source.api, source.runner
    ada = make_user(runner, "Ada Lovelace", "ada@example.com")
    zoe = make_user(runner, "Zoë Ñúñez 🚀", "zoe@example.org")
    make_user(runner, "Émile Zola", "emile@example.fr")
    assert runner.invoke(args=["users", "deactivate", "emile@example.fr"]).exit_code == 0
    platform = api.create_team("Platform")
    omega = api.create_team("Ωmega — équipe")
    q1, q2 = api.create_cycle("2026 Q1"), api.create_cycle("2026 Q2 ✨")
    company = api.create_objective("Delight customers", q1["id"], is_company=True)
    team = api.create_objective("Faster support", q1["id"], team_id=platform["id"], assignee_id=ada["id"],
                                parent_objective_id=company["id"], description="Réponse en un jour")
    early = api.create_objective("Child listed first", q1["id"], team_id=omega["id"])
    late = api.create_objective("Parent listed later", q1["id"], is_personal=True, assignee_id=zoe["id"])
    api.patch_objective(early["id"], parent_objective_id=late["id"])
    across = api.create_objective("Aligned to next cycle", q1["id"])
    upper = api.create_objective("Next cycle's goal 日本", q2["id"])
    api.patch_objective(across["id"], parent_objective_id=upper["id"])
    key_results = {}
    for objective in (team, early, across, upper):
        for kind, fields in KR_TYPES.items():
            key_results[objective["id"], kind] = api.create_key_result(
                objective["id"], f"{kind} of {objective['name']}", kind, **fields)
    api.patch_key_result(key_results[team["id"], "positive"]["id"], current_value="120.5", confidence="0.8")
    return {"q1": q1, "q2": q2, "platform": platform, "early": early, "late": late,
            "kr": key_results[team["id"], "positive"], "ada": ada}


def lists(api, skip=()):
    """Every list the API gives, as JSON, whole."""
    everything = {"users": list(api.users()), "teams": list(api.teams()), "cycles": list(api.cycles())}
    for cycle in everything["cycles"]:
        everything[f"objectives {cycle['id']}"] = list(api.objectives(cycle["id"]))
        everything[f"keyresults {cycle['id']}"] = list(api.key_results(cycle["id"]))
        for objective in everything[f"objectives {cycle['id']}"]:
            everything[f"keyresults of {objective['id']}"] = list(api.objective_key_results(objective["id"]))
    return {name: [row for row in rows if row["id"] not in skip]
            for name, rows in everything.items() if name.split()[-1] not in skip}


@pytest.fixture
def target(live_server):
    with Client(f"http://{live_server.address}", timeout=(2, 20)) as api:
        yield api


def run(runner, source, *args, credential=True):
    extra = ["--credential", source.key["credential"], "--secret", source.key["secret"]] if credential else []
    return runner.invoke(args=["import-simpleokr", "--base-url", source.url, *extra, *args])


def report(result, status=0):
    assert result.exit_code == status, result.output
    assert result.stdout, result.output  # a failure before the report says why on stderr
    return json.loads(result.stdout)


def counts(result_json):
    return {name: result_json[name] for name in from_simpleokr.RESOURCES}


def database_bytes(app):
    with open(app.config["DATABASE"], "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def same(outcome, **numbers):
    """outcome's counts: every row `outcome`, `numbers` per resource."""
    return {name: {**dict.fromkeys(from_simpleokr.OUTCOMES, 0), outcome: numbers[name]} for name in from_simpleokr.RESOURCES}


SIZES = {"users": 3, "teams": 2, "cycles": 2, "objectives": 6, "key_results": 20}


def consistent(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("""SELECT count(*) FROM objectives o WHERE parent_objective_id IS NOT NULL
                             AND NOT EXISTS (SELECT 1 FROM objectives p WHERE p.id = o.parent_objective_id)""")\
            .fetchone()[0] == 0
        # every key result starts its history with its first check-in
        assert db.execute("""SELECT count(*) FROM key_results k WHERE NOT EXISTS
                             (SELECT 1 FROM checkins c WHERE c.key_result_seq = k.seq)""").fetchone()[0] == 0


# --- the round trip --------------------------------------------------------------------------------


@pytest.mark.slow
def test_import_makes_every_list_equal_then_again_changes_nothing_then_takes_exactly_the_changes(
        app, runner, source, target, clock):
    named = fill(source)
    first = report(run(runner, source, "--json"))
    assert counts(first) == same("created", **SIZES)
    assert first["complete"] and first["failed"] == [] and not first["dry_run"]
    assert lists(target) == lists(source.api)
    consistent(app)
    # the first check-in is the imported value, dated when the source set it
    assert [(c["value"], c["confidence"], c["created_at"]) for c in target.checkins(named["kr"]["id"])] == \
        [("120.50", "0.80", named["kr"]["created_at"])]
    before = database_bytes(app)

    again = report(run(runner, source, "--json"))
    assert counts(again) == same("unchanged", **SIZES)
    assert database_bytes(app) == before  # nothing rewritten

    etag = target.key_result(named["kr"]["id"]).etag
    clock.now = "2026-02-01T08:30:00Z"
    source.api.rename_cycle(named["q2"]["id"], "2026 Q2 — renamed")
    source.api.rename_team(named["platform"]["id"], "Plateforme")
    source.api.patch_objective(named["early"]["id"], name="Child, renamed", parent_objective_id=None)
    source.api.patch_key_result(named["kr"]["id"], current_value="300")
    changed = report(run(runner, source, "--json"))
    assert counts(changed) == {
        "users": {"created": 0, "updated": 0, "unchanged": 3, "failed": 0},
        "teams": {"created": 0, "updated": 1, "unchanged": 1, "failed": 0},
        "cycles": {"created": 0, "updated": 1, "unchanged": 1, "failed": 0},
        "objectives": {"created": 0, "updated": 1, "unchanged": 5, "failed": 0},
        "key_results": {"created": 0, "updated": 1, "unchanged": 19, "failed": 0},
    }
    assert {(u["resource"], u["id"]): u["fields"] for u in changed["updated"]} == {
        ("teams", named["platform"]["id"]): ["name"],
        ("cycles", named["q2"]["id"]): ["name"],
        ("objectives", named["early"]["id"]): ["name", "parent_objective_id", "modified_at"],
        ("key_results", named["kr"]["id"]): ["current_value", "modified_at"],
    }
    assert lists(target) == lists(source.api)
    assert target.key_result(named["kr"]["id"]).etag != etag  # the revision moved
    assert [c["value"] for c in target.checkins(named["kr"]["id"])] == ["120.50", "300.00"]
    consistent(app)


@pytest.mark.slow
def test_a_chain_of_children_each_listed_before_its_parent_goes_in_whole_in_order(
        app, runner, source, target, monkeypatch):
    monkeypatch.setattr(from_simpleokr, "OBJECTIVES_BATCH", 1)  # a transaction may end after any objective
    q1, q2 = source.api.create_cycle("one"), source.api.create_cycle("two")
    chain = [source.api.create_objective(f"level {n}", q1["id"]) for n in range(4)]
    chain += [source.api.create_objective(f"level {n}", q2["id"]) for n in range(4, 6)]
    alone = source.api.create_objective("alone", q2["id"])
    for child, parent in zip(chain, chain[1:]):
        source.api.patch_objective(child["id"], parent_objective_id=parent["id"])
    source.api.patch_objective(alone["id"], parent_objective_id=chain[0]["id"])
    done = report(run(runner, source, "--json"))
    assert done["objectives"]["created"] == 7
    assert lists(target) == lists(source.api)
    consistent(app)


@pytest.mark.slow
def test_a_new_row_at_the_source_is_added_and_local_rows_are_kept(app, runner, source, target):
    named = fill(source)
    report(run(runner, source, "--json"))
    local = target.request("POST", "/v1/cycles", {"name": "Only here"})
    source.api.create_key_result(named["late"]["id"], "Added later", "baseline")
    added = report(run(runner, source, "--json"))
    assert added["key_results"] == {"created": 1, "updated": 0, "unchanged": 20, "failed": 0}
    assert lists(target, skip={local["id"]}) == lists(source.api)
    assert target.cycle(local["id"])["name"] == "Only here"


@pytest.mark.slow
def test_the_text_report_and_plain_progress_lines(runner, source):
    fill(source)
    result = run(runner, source)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["created", "updated", "unchanged", "failed"]
    assert lines[1].split() == ["users", "3", "0", "0", "0"]
    assert lines[5].split() == ["key", "results", "20", "0", "0", "0"]
    assert "nothing is deleted" in lines[-1]
    assert "okr: cycle 2 of 2" in result.stderr and "\r" not in result.stderr
    assert "okr: reading users from http://127.0.0.1:" in result.stderr


def test_a_terminal_gets_a_bar_redrawn_in_place():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    progress = Progress(stream, "http://x")
    progress(stage="users")
    progress(stage="page", resource="users", rows=3)
    progress(stage="cycle", position=2, total=4)
    progress(stage="page", resource="objectives", rows=5)
    progress.done()
    text = stream.getvalue()
    assert "\n" not in text and "[######------------------] cycle 2/4" in text and "5 objectives" in text
    assert text.endswith("\r\033[K")


# --- dry run ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_dry_run_reports_the_counts_and_writes_nothing(app, runner, source, target):
    named = fill(source)
    before = database_bytes(app)
    dry = report(run(runner, source, "--dry-run", "--json"))
    assert dry["dry_run"] and counts(dry) == same("created", **SIZES)
    assert database_bytes(app) == before and lists(target)["users"] == []
    report(run(runner, source, "--json"))
    source.api.rename_team(named["platform"]["id"], "Renamed")
    before = database_bytes(app)
    dry = run(runner, source, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert f"would update team {named['platform']['id']}: name" in dry.stdout
    assert "dry run: nothing was written" in dry.stdout
    assert database_bytes(app) == before


@pytest.mark.slow
def test_a_dry_runs_copy_lives_beside_the_database_and_goes(app, runner, source, target, monkeypatch):
    """Not in a shared temporary folder: the copy holds every API key's secret."""
    import okr.store.scratch
    import okr.transfer.from_simpleokr

    fill(source)
    seen, real = [], okr.store.scratch.scratch_folder

    @contextmanager
    def watched(database, kind):
        with real(database, kind) as folder:
            yield folder
            seen.append((Path(folder), sorted(os.listdir(folder))))

    monkeypatch.setattr(okr.transfer.from_simpleokr, "scratch_folder", watched)
    report(run(runner, source, "--dry-run", "--json"))
    [(folder, contents)] = seen
    assert folder.parent == Path(app.config["DATABASE"]).parent and contents == ["copy.db"]
    assert not folder.exists()


# --- bad rows --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_bad_rows_are_reported_with_their_id_and_reason_and_the_others_import(app, runner, source, target):
    named = fill(source)
    bad_kr = named["kr"]["id"]
    source.sql("UPDATE key_results SET confidence = '2' WHERE id = ?", (bad_kr,))
    # a blank name (the API refuses it), with key results and a child objective waiting on it
    source.sql("UPDATE objectives SET name = '   ' WHERE id = ?", (named["late"]["id"],))
    source.sql("UPDATE users SET email = 'not an email' WHERE id = ?", (named["ada"]["id"],))
    result = run(runner, source, "--json")
    assert result.exit_code == 1 and "could not be imported (listed above)" in result.stderr
    done = json.loads(result.stdout)
    failed = {(f["resource"], f["id"]): f["reason"] for f in done["failed"]}
    assert failed[("key_results", bad_kr)].startswith("confidence:")
    assert failed[("objectives", named["late"]["id"])].startswith("name:")
    assert failed[("users", named["ada"]["id"])].startswith("email:")
    assert failed[("objectives", named["early"]["id"])] == \
        f"parent_objective_id {named['late']['id']}: that objective was not imported"
    # the objective assigned to the bad user, and the key results of the failed objectives
    faster = [o for o in source.api.objectives(named["q1"]["id"]) if o["name"] == "Faster support"][0]
    assert failed[("objectives", faster["id"])] == f"assignee_id {named['ada']['id']}: that user was not imported"
    waiting = [k["id"] for o in (named["early"], faster) for k in source.api.objective_key_results(o["id"])]
    for key_result in waiting:
        if key_result != bad_kr:
            assert failed[("key_results", key_result)].startswith("objective_id ")
    assert done["objectives"]["failed"] == 3 and done["objectives"]["created"] == 3
    assert done["key_results"]["failed"] == 10 and done["key_results"]["created"] == 10
    skip = {id_ for _, id_ in failed}
    assert lists(target, skip=skip) == lists(source.api, skip=skip)
    consistent(app)


@pytest.mark.slow
def test_an_email_that_is_another_users_here_under_the_email_rule_fails_that_user(app, runner, source):
    make_user(app.test_cli_runner(), "Someone else", "ADA@EXAMPLE.COM")
    named = fill(source)
    done = report(run(runner, source, "--json"), status=1)
    [failure] = [f for f in done["failed"] if f["resource"] == "users"]
    assert failure["id"] == named["ada"]["id"] and "ada@example.com" in failure["reason"]
    assert "ignoring the case of the letters A to Z" in failure["reason"]


# --- a source that stops ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("limit", [1, 3, 4, 5, 6])  # 7 requests in all
def test_a_source_that_fails_midway_leaves_whole_rows_and_a_rerun_finishes(app, runner, source, target, limit):
    fill(source)
    source.wrapper.limit, source.wrapper.count = limit, 0
    result = run(runner, source, "--json")
    assert result.exit_code == 1
    assert "500" in result.stderr and "Traceback" not in result.output
    consistent(app)
    source.wrapper.limit = None
    finished = report(run(runner, source, "--json"))
    assert finished["complete"]
    assert lists(target) == lists(source.api)
    consistent(app)


@pytest.mark.slow
def test_a_source_that_goes_away_midway(app, runner, source, target, monkeypatch):
    fill(source)
    real_get = from_simpleokr.Source.get

    def get(self, path, params):
        if self.requests == 6:
            source.stop()
        return real_get(self, path, params)

    monkeypatch.setattr(from_simpleokr.Source, "get", get)
    monkeypatch.setattr("okr.transfer.api_client.Client._sleep", staticmethod(lambda seconds: None))
    result = run(runner, source)
    assert result.exit_code == 1
    assert "cannot read http://127.0.0.1:" in result.stderr and "Traceback" not in result.output
    assert "run it again to finish" in result.stderr
    consistent(app)


# --- errors ----------------------------------------------------------------------------------------


def okr_line(capsys, tmp_path, *args):
    """The error line, after the progress lines (okr: using database…, okr: reading…)."""
    with pytest.raises(SystemExit) as exit_:
        program.main(["--database", str(tmp_path / "okr.db"), "import-simpleokr", *args])
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    errors = [line for line in lines if not line.startswith(("okr: using database", "okr: reading"))]
    assert exit_.value.code == 1 and len(errors) == 1 and errors[0] == lines[-1], captured
    assert errors[0].startswith("okr: ") and captured.out == "", captured
    return errors[0]


@pytest.mark.slow
def test_errors_are_one_okr_line(app, source, capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("OKR_CREDENTIAL", raising=False)
    monkeypatch.delenv("OKR_SECRET", raising=False)
    monkeypatch.setattr("okr.transfer.api_client.Client._sleep", staticmethod(lambda seconds: None))
    key = ["--credential", source.key["credential"], "--secret", source.key["secret"]]
    line = okr_line(capsys, tmp_path, "--base-url", f"http://127.0.0.1:{free_port()}", *key)
    assert "cannot read http://127.0.0.1:" in line and "could not connect" in line
    line = okr_line(capsys, tmp_path, "--base-url", source.url, "--credential", source.key["credential"],
                    "--secret", "wrong")
    assert "refused the credentials (401" in line
    line = okr_line(capsys, tmp_path, "--base-url", source.url)
    assert "refused the credentials (401" in line  # a source with keys, asked without one
    line = okr_line(capsys, tmp_path, "--base-url", source.url, "--credential", "c")
    assert "give both --credential and --secret" in line
    line = okr_line(capsys, tmp_path, "--base-url", "ftp://x", *key)
    assert line.startswith("okr: --base-url:")
    line = okr_line(capsys, tmp_path / "nowhere", "--base-url", source.url, *key)
    assert "no database at" in line

    def not_okr(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/html")])
        return [b"<html>hello</html>"]

    with served_in_thread(not_okr) as served:
        line = okr_line(capsys, tmp_path, "--base-url", served.url, *key)
    assert "does not answer like a Simple OKR API" in line

    def wrong_json(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b'{"items": []}']

    with served_in_thread(wrong_json) as served:
        line = okr_line(capsys, tmp_path, "--base-url", served.url + "/v1/", *key)
    assert "does not answer like a Simple OKR API: its answer has no 'users' list" in line


@pytest.mark.slow
def test_the_key_may_come_from_the_environment(app, runner, source, monkeypatch):
    fill(source)
    monkeypatch.setenv("OKR_CREDENTIAL", source.key["credential"])
    monkeypatch.setenv("OKR_SECRET", source.key["secret"])
    done = report(run(runner, source, "--json", credential=False))
    assert counts(done) == same("created", **SIZES)


def test_times_are_stored_in_utc_to_the_second():
    assert from_simpleokr.canonical_time("2026-01-02T03:04:05.678901Z") == "2026-01-02T03:04:05Z"
    assert from_simpleokr.canonical_time("2026-01-02T05:04:05+02:00") == "2026-01-02T03:04:05Z"
    assert from_simpleokr.canonical_time("yesterday") == "yesterday"
    record = from_simpleokr.as_record("teams", {"id": "5C0E8E8A-0000-4000-8000-000000000000", "name": "T",
                                           "created_at": "2026-01-02T03:04:05.5Z"})
    assert record == {"id": "5c0e8e8a-0000-4000-8000-000000000000", "name": "T",
                      "created_at": "2026-01-02T03:04:05Z", "revision": 0}


@pytest.mark.slow
def test_imported_users_are_editors_and_a_stored_users_role_stays(app, runner, source):
    # Simple OKR has no roles: a new user gets the default one, and a user already here keeps theirs.
    ada = make_user(source.runner, "Ada Lovelace", "ada@example.com")
    report(run(runner, source, "--json"))
    with app.app_context(), transaction() as db:
        assert users.get(db, ada["id"])["role"] == "editor"
        users.set_role(db, users.get(db, ada["id"]), "viewer")
    source.sql("UPDATE users SET name = 'Ada King' WHERE id = ?", (ada["id"],))
    changed = report(run(runner, source, "--json"))
    assert changed["users"] == {"created": 0, "updated": 1, "unchanged": 0, "failed": 0}
    assert changed["updated"] == [{"resource": "users", "id": ada["id"], "fields": ["name"]}]
    with app.app_context(), transaction(write=False) as db:
        assert tuple(db.execute("SELECT name, role FROM users").fetchone()) == ("Ada King", "viewer")


# --- a cycle closed here (issue 36): the source may not change anything inside it


@pytest.mark.slow
def test_a_change_inside_a_cycle_closed_here_stops_the_run_naming_it_before_anything_is_written(
        app, runner, source, capsys, tmp_path):
    named = fill(source)
    report(run(runner, source, "--json"))
    with app.app_context(), transaction() as db:
        cycle_closing.close(db, named["q1"]["id"], None, {"objectives": {}, "key_results": {}})
    # The source holds what the closed cycle holds: the run goes through, leaving it as it is.
    assert counts(report(run(runner, source, "--json"))) == same("unchanged", **SIZES)

    source.api.rename_team(named["platform"]["id"], "Plateforme")  # outside the cycle: nothing goes in either
    source.api.patch_objective(named["early"]["id"], name="Changed after closing")
    before = dumped(app)
    key = ["--credential", source.key["credential"], "--secret", source.key["secret"]]
    for dry_run in ([], ["--dry-run"]):
        line = okr_line(capsys, tmp_path, "--base-url", source.url, *key, *dry_run)
        assert line == (f'okr: cycle "2026 Q1" is closed; an admin must reopen it before this import (the source '
                        f'changes objective {named["early"]["id"]} in it): nothing imported')
    assert dumped(app) == before


def dumped(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return list(db.iterdump())


@pytest.mark.slow
def test_a_row_the_source_moved_out_of_a_cycle_closed_here_fails_alone_naming_it(app, runner, source, monkeypatch):
    named = fill(source)
    report(run(runner, source, "--json"))
    # Closed a while after the import: the close-out's own modified_at is no change the source makes.
    with monkeypatch.context() as later, app.app_context(), transaction() as db:
        later.setattr(okr.clock, "utc_now", lambda: "2099-01-01T00:00:00Z")
        cycle_closing.close(db, named["q1"]["id"], None, {"objectives": {}, "key_results": {}})
    source.api.patch_objective(named["late"]["id"], cycle_id=named["q2"]["id"])
    moved = report(run(runner, source, "--json"), status=1)
    closed = 'cycle "2026 Q1" is closed; an admin must reopen it before this import'
    reasons = {(row["resource"], row["id"]): row["reason"] for row in moved["failed"]}
    assert reasons[("objectives", named["late"]["id"])] == closed
    # What hangs on it (its child, the child's key results) fails with it; nothing else fails.
    assert reasons[("objectives", named["early"]["id"])].endswith("that objective was not imported")
    assert all(reason == closed or reason.endswith("that objective was not imported") for reason in reasons.values())
    assert moved["cycles"]["updated"] == 0
