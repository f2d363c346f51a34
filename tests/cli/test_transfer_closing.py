"""What format 5 of okr-export adds (issue 36): cycles' closing, objectives' close-out and carried-from links, key
results' scores, out and back in; a closed cycle imported stays closed; and okr import --merge refuses any change
inside a cycle closed in the database, with one line naming it and nothing written."""
import re
import sqlite3
from contextlib import closing as closed_after

import pytest

from okr import clock as okr_clock
from okr.db import transaction
from okr.progress import parse_timestamp
from okr.reports import closing as closing_report
from okr.store import closing, cycles
from okr.transfer.importer import check_stored
from okr.transfer.rows import Refusal
import helpers
from test_transfer import (assert_same_but_the_imports_events, dump, export, exported, invoke, new_app, ok,
                           refused_unchanged, seed, stored, with_commands, write_json)


@pytest.fixture
def app(app):
    return with_commands(app)


def close(app, cycle_id, person_id):
    with app.app_context(), transaction() as db:
        cycle = cycles.get(db, cycle_id)
        now = parse_timestamp(okr_clock.utc_now())
        closing.close(db, cycle_id, person_id, closing_report.suggestions(closing_report.close_out(db, cycle, now)))


@pytest.fixture
def scored(app, clock):
    """The seeded database with 2026 Q1 scored (an objective's outcome, score and reflection, a key result's
    score), copied to 2026 Q2 (its objectives carried from Q1's), then closed by Ada."""
    ids = seed(app, clock)
    client = app.test_client()
    clock.now = "2026-03-30T16:00:00Z"
    assert client.patch(f"/v1/objectives/{ids['child']}", json={
        "outcome": "partly_achieved", "score": "0.55", "reflection": "Hired late.\nNext: «earlier»."}).status_code == 200
    assert client.patch(f"/v1/keyresults/{ids['key_results']['positive']}", json={"score": "0.6"}).status_code == 200
    with app.app_context(), transaction() as db:
        q2 = cycles.copy(db, ids["cycle"], {"name": "2026 Q2", "starts_on": "2026-04-01", "ends_on": "2026-06-30"},
                         objective_ids={ids["child"]})
    clock.now = "2026-03-31T17:00:00Z"
    close(app, ids["cycle"], ids["ada"])
    return {**ids, "q2": q2["id"]}


def test_every_new_field_goes_out_and_comes_back_and_a_closed_cycle_stays_closed(app, scored, tmp_path):
    data = exported(app, tmp_path)
    assert data["version"] == 7
    [q1] = [c for c in data["cycles"] if c["id"] == scored["cycle"]]
    assert list(q1)[-2:] == ["closed_at", "closed_by"]
    assert (q1["closed_at"], q1["closed_by"]) == ("2026-03-31T17:00:00Z", scored["ada"])
    assert all(c["closed_at"] is None and c["closed_by"] is None for c in data["cycles"] if c is not q1)
    objectives = {o["id"]: o for o in data["objectives"]}
    assert list(objectives[scored["child"]])[-6:-2] == ["outcome", "score", "reflection", "carried_from_id"]
    assert [objectives[scored["child"]][f] for f in ("outcome", "score", "reflection")] == [
        "partly_achieved", "0.55", "Hired late.\nNext: «earlier»."]
    [carried] = [o for o in data["objectives"] if o["cycle_id"] == scored["q2"]]
    assert carried["carried_from_id"] == scored["child"]
    positive = next(k for k in data["key_results"] if k["id"] == scored["key_results"]["positive"])
    assert list(positive)[-3:] == ["score", "weight", "progress_from"] and positive["score"] == "0.60"

    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "all.json"))
    export(target, tmp_path / "again.json")
    assert_same_but_the_imports_events(tmp_path / "again.json", tmp_path / "all.json")
    # Locked there too: the API refuses a change inside it.
    response = target.test_client().patch(f"/v1/objectives/{scored['parent']}", json={"name": "Changed"})
    assert response.status_code == 409
    assert stored(target, "SELECT closed_at, closed_by FROM cycles WHERE id = ?", scored["cycle"]) == [
        ("2026-03-31T17:00:00Z", scored["ada"])]


def test_a_file_of_format_4_imports_with_the_new_fields_null_and_a_merge_keeps_them(app, scored, tmp_path):
    data = exported(app, tmp_path)
    new_fields = {"cycles": ("closed_at", "closed_by"), "objectives": ("outcome", "score", "reflection",
                                                                      "carried_from_id"), "key_results": ("score",)}
    old = {**data, "version": 4, **{name: [{k: v for k, v in record.items() if k not in fields}
                                           for record in data[name]] for name, fields in new_fields.items()}}
    path = write_json(tmp_path / "v4.json", old)
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", path))
    assert stored(target, "SELECT count(*) FROM cycles WHERE closed_at IS NOT NULL OR closed_by IS NOT NULL") == [(0,)]
    assert stored(target, """SELECT count(*) FROM objectives WHERE outcome IS NOT NULL OR score IS NOT NULL
                             OR reflection IS NOT NULL OR carried_from_id IS NOT NULL""") == [(0,)]
    assert stored(target, "SELECT count(*) FROM key_results WHERE score IS NOT NULL") == [(0,)]
    # Into the database it came from, it changes nothing: what it lacks stays as stored, the closed cycle closed.
    merged = ok(invoke(app, "import", "--merge", path))
    assert all(merged[name]["added"] == merged[name]["updated"] == 0 for name in ("cycles", "objectives",
                                                                                   "key_results"))
    assert stored(app, "SELECT closed_by FROM cycles WHERE id = ?", scored["cycle"]) == [(scored["ada"],)]


@pytest.mark.parametrize("change, problem", [
    (lambda d, ids: d["objectives"][0].update(outcome="won"), "objectives[0]: outcome: Must be one of: achieved"),
    (lambda d, ids: d["objectives"][0].update(score="1.5"), "objectives[0]: score:"),
    (lambda d, ids: d["key_results"][0].update(score="-0.1"), "key_results[0]: score:"),
    (lambda d, ids: d["objectives"][0].update(reflection="x" * 10_001), "objectives[0]: reflection:"),
    (lambda d, ids: d["cycles"][1].update(closed_at="yesterday"), "cycles[1]: closed_at: must be an RFC 3339"),
    (lambda d, ids: d["cycles"][1].update(closed_by=ids["ada"]), "cycles[1]: closed_by: given without closed_at"),
    (lambda d, ids: d["cycles"][0].update(closed_by="ADA"), "cycles[0]: closed_by: must be a lowercase UUID"),
    (lambda d, ids: d["cycles"][1].update(closed_at="2026-03-31T17:00:00Z", closed_by=ids["unknown"]),
     "cycles[1]: closed_by {unknown} does not exist: no user in the file has that id"),
    (lambda d, ids: d["objectives"][0].update(carried_from_id=ids["unknown"]),
     "objectives[0]: carried_from_id {unknown} does not exist: no objective in the file has that id"),
    (lambda d, ids: d["objectives"][0].update(carried_from_id=d["objectives"][0]["id"]),
     "objectives[0]: carried_from_id: must be another objective's id, not its own"),
])
def test_a_bad_closing_field_is_refused_with_nothing_imported(app, scored, tmp_path, change, problem):
    data = exported(app, tmp_path)
    ids = {**scored, "unknown": "0b6e9a53-8a3e-4c4b-9a8e-3d2f1c0b9a87"}
    change(data, ids)
    target = new_app(tmp_path / "target.db")
    line = refused_unchanged(target, "import", write_json(tmp_path / "bad.json", data))
    assert line.startswith("okr: cannot import bad.json: nothing imported: ") or line.startswith("Error: "), line
    assert problem.format(**ids) in line, line


def test_a_carried_from_objective_further_down_the_file_is_found(app, scored, tmp_path):
    data = exported(app, tmp_path)
    data["objectives"][0]["carried_from_id"] = data["objectives"][-1]["id"]
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", write_json(tmp_path / "forward.json", data)))
    assert stored(target, "SELECT carried_from_id FROM objectives WHERE id = ?", data["objectives"][0]["id"]) == [
        (data["objectives"][-1]["id"],)]


# --- a change inside a cycle closed in the database: refused, naming it ----------------------------------

CLOSED = 'cycle "2026 Q1" is closed; an admin must reopen it before this import'


def in_q1(data, ids, section):
    if section == "objectives":
        return [o for o in data["objectives"] if o["cycle_id"] == ids["cycle"]]
    objectives = {o["id"] for o in in_q1(data, ids, "objectives")}
    return [k for k in data["key_results"] if k["objective_id"] in objectives]


def first_index(data, section, record):
    return data[section].index(record)


CHANGES = {
    "an objective renamed": ("objectives", lambda d, ids: in_q1(d, ids, "objectives")[0].update(name="Renamed")),
    # No trigger watches an assignee (a deleted person's SET NULL must stay possible): the import's own check does.
    "an objective's assignee": ("objectives", lambda d, ids: in_q1(d, ids, "objectives")[0].update(
        assignee_id=ids["ada"])),
    "an objective added": ("objectives", lambda d, ids: d["objectives"].append(
        {**in_q1(d, ids, "objectives")[0], "id": "5e0b3c52-1d7e-4f3a-9b1e-6c7d8e9f0a1b", "parent_objective_id": None,
         "carried_from_id": None})),
    "an objective moved out": ("objectives", lambda d, ids: in_q1(d, ids, "objectives")[0].update(
        cycle_id=ids["old_cycle"])),
    "an objective moved in": ("objectives", lambda d, ids: next(
        o for o in d["objectives"] if o["id"] == ids["personal"]).update(cycle_id=ids["cycle"])),
    "a key result's owner": ("key_results", lambda d, ids: in_q1(d, ids, "key_results")[1].update(
        owner_id=ids["ada"])),
    "a key result's score": ("key_results", lambda d, ids: in_q1(d, ids, "key_results")[0].update(score="0.99")),
    "a check-in added": ("checkins", lambda d, ids: d["checkins"].append(
        {**d["checkins"][0], "id": "7a1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d", "value": "499.00"})),
    "a comment added": ("comments", lambda d, ids: d["comments"].append(
        {"id": "8b2d3e4f-5061-4b7c-9d8e-0f1a2b3c4d5e", "objective_id": ids["child"], "key_result_id": None,
         "author_id": None, "body": "Late news", "created_at": "2026-04-02T09:00:00Z",
         "modified_at": "2026-04-02T09:00:00Z", "revision": 0})),
    "the cycle renamed": ("cycles", lambda d, ids: next(c for c in d["cycles"] if c["id"] == ids["cycle"]).update(
        name="2026 Q1 (late)")),
    "the cycle reopened by the file": ("cycles", lambda d, ids: next(
        c for c in d["cycles"] if c["id"] == ids["cycle"]).update(closed_at=None, closed_by=None)),
}


@pytest.mark.parametrize("case", CHANGES)
def test_a_merge_that_changes_anything_inside_a_closed_cycle_is_refused_naming_it(app, scored, tmp_path, case):
    section, change = CHANGES[case]
    data = exported(app, tmp_path)
    change(data, scored)
    line = refused_unchanged(app, "import", "--merge", write_json(tmp_path / "change.json", data))
    assert re.fullmatch(rf"Error: cannot import \S*change\.json: nothing imported: {section}\[\d+\]: {re.escape(CLOSED)}",
                        line), line


def test_a_merge_of_what_the_database_holds_is_no_change_and_goes_in(app, scored, tmp_path):
    data = exported(app, tmp_path)
    # A change outside the closed cycle goes in beside it.
    next(o for o in data["objectives"] if o["cycle_id"] == scored["q2"]).update(name="Faster support, again")
    merged = ok(invoke(app, "import", "--merge", write_json(tmp_path / "same.json", data)))
    assert merged["objectives"] == {"added": 0, "updated": 1, "unchanged": len(data["objectives"]) - 1}
    assert merged["cycles"] == {"added": 0, "updated": 0, "unchanged": len(data["cycles"])}


def test_a_merge_closes_an_open_cycle_the_file_has_closed_after_writing_inside_it(app, scored, tmp_path):
    data = exported(app, tmp_path)
    q2 = next(c for c in data["cycles"] if c["id"] == scored["q2"])
    q2.update(closed_at="2026-06-30T18:00:00Z", closed_by=scored["emile"])
    next(o for o in data["objectives"] if o["cycle_id"] == scored["q2"]).update(outcome="achieved", score="0.90")
    merged = ok(invoke(app, "import", "--merge", write_json(tmp_path / "closed.json", data)))
    assert merged["cycles"]["updated"] == 1 and merged["objectives"]["updated"] == 1
    assert stored(app, "SELECT closed_at, closed_by FROM cycles WHERE id = ?", scored["q2"]) == [
        ("2026-06-30T18:00:00Z", scored["emile"])]
    assert stored(app, "SELECT outcome, score FROM objectives WHERE cycle_id = ?", scored["q2"]) == [
        ("achieved", "0.90")]


@pytest.mark.slow
def test_the_okr_command_says_it_in_one_okr_line_and_fails(app, scored, tmp_path):
    data = exported(app, tmp_path)
    in_q1(data, scored, "objectives")[0].update(name="Renamed")
    write_json(tmp_path / "change.json", data)
    before = dump(app.config["DATABASE"])
    done = helpers.run_okr("--database", app.config["DATABASE"], "import", "--merge", "change.json", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("okr: cannot import change.json: nothing imported: objectives[")
    assert done.stderr.splitlines()[-1].endswith(CLOSED)
    assert dump(app.config["DATABASE"]) == before


def test_a_backup_holding_a_closed_cycle_passes_the_restores_check_and_a_bad_closing_does_not(app, scored):
    with app.app_context(), transaction(write=False) as db:
        check_stored(db)  # what okr restore checks a backup with, row by row as okr import checks a file
    with closed_after(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.execute("UPDATE cycles SET closed_by = 'someone' WHERE id = ?", (scored["cycle"],))
    with app.app_context(), transaction(write=False) as db, pytest.raises(Refusal, match="closed_by: must be a "
                                                                          "lowercase UUID"):
        check_stored(db)
