"""Issue 39: who may see an objective (okr.store.visibility), where tests/test_visibility_matrix.py does not look:
PATCH's visibility and the spec's answers, each way of seeing apart (assignee, key result owner, creator, team
member, admin, a read-only admin key, a service key, sign-in off), the events of restricted and deleted objectives,
the upgrade to schema 17, the streamed reports against the ones built in memory, okr export and import, a board
link, the chat and weekly digests, and a person's own API key."""
import json
import re
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

import helpers
from helpers import OBJECTIVE_FIELDS, assert_error
from okr import create_app
from okr.cli.transfer import export_command, import_command
from okr.db import init_db, transaction
from okr.outbound import chat_digest, weekly_emails
from okr.store import board_links, users, webhooks
from okr.store.schema import SCHEMA_VERSION, connect
from okr.store.visibility import hidden_ids, hidden_of, sees

VISIBILITIES = ("everyone", "team", "private")
HTML = {"Accept": "text/html"}
KR = {"type": "positive", "current_value": "2", "target_value_min": "10", "confidence": "0.8"}


def call(client, who, method, path, body=None):
    """A request signed with who's key (a Person of the cast)."""
    return client.open(path, method=method, headers=who.headers(), **({} if body is None else {"json": body}))


def ok(answer):
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return answer.get_json()


def new_objective(client, who, cycle_id, name, **fields):
    return ok(call(client, who, "POST", "/v1/objectives", {"name": name, "cycle_id": cycle_id, "is_company": False,
                                                          "is_personal": False, **fields}))


def restrict(client, who, objective_id, visibility):
    answer = ok(call(client, who, "PATCH", f"/v1/objectives/{objective_id}", {"visibility": visibility}))
    assert answer["visibility"] == visibility
    return answer


def stored_visibility(app, objective_id):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT visibility FROM objectives WHERE id = ?", (objective_id,)).fetchone()[0]


@pytest.fixture
def quarter(client, cast):
    """A cycle, made by the service key."""
    return ok(call(client, cast.service, "POST", "/v1/cycles", {"name": "Q3"}))["id"]


# --- 1. PATCH visibility; the spec's answers ----------------------------------------------------------------------


def test_patch_takes_each_visibility_and_answers_it(app, client, cast, quarter):
    target = new_objective(client, cast.creator, quarter, "Target", team_id=cast.red)["id"]
    for value in ("private", "team", "everyone", "team"):
        answer = call(client, cast.creator, "PATCH", f"/v1/objectives/{target}", {"visibility": value})
        assert ok(answer)["visibility"] == value
        assert stored_visibility(app, target) == value
    # A PATCH that leaves it out keeps it, and says so.
    assert ok(call(client, cast.creator, "PATCH", f"/v1/objectives/{target}", {"name": "Renamed"}))["visibility"] \
        == "team"


@pytest.mark.parametrize("bad", ["public", "", "Everyone", " team", None, 1, ["team"]])
def test_patch_refuses_a_visibility_it_does_not_know(app, client, cast, quarter, bad):
    target = new_objective(client, cast.creator, quarter, "Target")["id"]
    restrict(client, cast.creator, target, "private")
    answer = call(client, cast.creator, "PATCH", f"/v1/objectives/{target}", {"visibility": bad})
    assert_error(answer, 400, "visibility")
    assert stored_visibility(app, target) == "private"


def test_the_specs_get_does_not_show_visibility(client, cast, quarter):
    target = new_objective(client, cast.creator, quarter, "Target", team_id=cast.red)["id"]
    patched = restrict(client, cast.creator, target, "team")
    answer = call(client, cast.creator, "GET", f"/v1/objectives/{target}")
    assert set(ok(answer)) == OBJECTIVE_FIELDS
    # The spec's bytes: the PATCH's answer without what the spec's objective has not, in the spec's order.
    assert answer.get_data(as_text=True) == call(client, cast.service, "GET", f"/v1/objectives/{target}") \
        .get_data(as_text=True)
    assert ok(answer) == {name: value for name, value in patched.items() if name in OBJECTIVE_FIELDS}
    assert "visibility" not in answer.get_data(as_text=True)


@pytest.mark.parametrize("visibility", ["team", "private"])
def test_the_specs_update_keeps_the_visibility(app, client, cast, quarter, visibility):
    target = new_objective(client, cast.creator, quarter, "Target", team_id=cast.red)["id"]
    restrict(client, cast.creator, target, visibility)
    answer = call(client, cast.creator, "POST", f"/v1/objectives/{target}", {
        "name": "Replaced", "cycle_id": quarter, "team_id": cast.red, "is_company": False, "is_personal": False})
    assert set(ok(answer)) == OBJECTIVE_FIELDS and ok(answer)["name"] == "Replaced"
    assert stored_visibility(app, target) == visibility
    assert ok(call(client, cast.creator, "PATCH", f"/v1/objectives/{target}", {}))["visibility"] == visibility
    assert call(client, cast.outsider, "GET", f"/v1/objectives/{target}").status_code == 404


# --- 2. Who sees --------------------------------------------------------------------------------------------------

SEES = {
    "team": {"creator", "assignee", "kr_owner", "member", "admin", "read_only_admin", "service"},
    "private": {"creator", "assignee", "kr_owner", "admin", "read_only_admin", "service"},
}


def target_of(client, cast, quarter):
    """An objective of team red made by the creator, assigned to the assignee, with a key result of the
    kr_owner's."""
    target = new_objective(client, cast.creator, quarter, "Target", team_id=cast.red,
                           assignee_id=cast.assignee.id)["id"]
    ok(call(client, cast.creator, "POST", f"/v1/objectives/{target}/keyresults",
            {"name": "Measure", "owner_id": cast.kr_owner.id, **KR}))
    return target


@pytest.mark.parametrize("visibility", ["team", "private"])
def test_each_way_of_seeing(client, cast, quarter, visibility):
    target = target_of(client, cast, quarter)
    restrict(client, cast.creator, target, visibility)
    statuses = {name: call(client, someone, "GET", f"/v1/objectives/{target}").status_code
                for name, someone in cast.people.items()}
    assert statuses == {name: 200 if name in SEES[visibility] else 404 for name in cast.people}


def test_everyone_sees_an_objective_for_everyone(client, cast, quarter):
    target = target_of(client, cast, quarter)
    restrict(client, cast.creator, target, "private")
    restrict(client, cast.creator, target, "everyone")
    assert {call(client, someone, "GET", f"/v1/objectives/{target}").status_code
            for someone in cast.people.values()} == {200}


def test_a_change_of_assignee_or_owner_moves_the_sight(client, cast, quarter):
    """The rule is the objective's people now, not when it was restricted."""
    target = target_of(client, cast, quarter)
    restrict(client, cast.creator, target, "private")
    ok(call(client, cast.creator, "PATCH", f"/v1/objectives/{target}", {"assignee_id": cast.outsider.id}))
    assert call(client, cast.outsider, "GET", f"/v1/objectives/{target}").status_code == 200
    assert call(client, cast.assignee, "GET", f"/v1/objectives/{target}").status_code == 404


def test_with_sign_in_off_everything_is_seen(app, client):
    """Open mode (no key, no password): the unsigned requests see a private objective assigned to someone."""
    with app.app_context(), transaction() as db:
        ada = users.create(db, "Ada", "ada@example.com", "editor")["id"]
    cycle = helpers.make_cycle(client)["id"]
    target = helpers.make_objective(client, cycle, "Private", assignee_id=ada)["id"]
    assert ok(client.patch(f"/v1/objectives/{target}", json={"visibility": "private"}))["visibility"] == "private"
    assert ok(client.get(f"/v1/objectives/{target}"))["id"] == target
    assert [row["id"] for row in ok(client.get(f"/v1/objectives?cycle_id={cycle}"))["objectives"]] == [target]
    assert ok(client.get(f"/v1/cycles/{cycle}/report"))["hidden_objectives_count"] == 0


def test_who_may_not_see_finds_an_objective_without_assignee_or_creator_hidden(app, client, cast, quarter):
    """okr.store.visibility's sets of hidden objectives (reports, digests, boards) agree with its test of one
    (GET's 404) for an objective whose assignee and creator are unknown (NULL): made by a service key, unassigned."""
    target = new_objective(client, cast.service, quarter, "Nobody's")["id"]
    restrict(client, cast.service, target, "private")
    assert call(client, cast.outsider, "GET", f"/v1/objectives/{target}").status_code == 404
    with app.app_context(), transaction() as db:
        assert sees(db, cast.outsider.id, target) is False
        assert hidden_ids(db, quarter, cast.outsider.id) == {target}
        assert hidden_of(db, [target], cast.outsider.id) == {target}


# --- 9. A person's own API key ------------------------------------------------------------------------------------


def test_an_editors_own_key_sees_as_the_editor_not_as_a_service_key(client, cast, quarter):
    target = target_of(client, cast, quarter)
    plain = new_objective(client, cast.service, quarter, "Plain")["id"]
    restrict(client, cast.creator, target, "private")
    for someone, seen in ((cast.outsider, False), (cast.assignee, True), (cast.service, True)):
        listed = ok(call(client, someone, "GET", f"/v1/objectives?cycle_id={quarter}"))
        ids = [row["id"] for row in listed["objectives"]]
        report = ok(call(client, someone, "GET", f"/v1/cycles/{quarter}/report"))
        assert call(client, someone, "GET", f"/v1/objectives/{target}").status_code == (200 if seen else 404)
        assert ids == ([target, plain] if seen else [plain])
        assert (report["objectives_count"], report["hidden_objectives_count"]) == ((2, 0) if seen else (1, 1))


# --- 3. Events ----------------------------------------------------------------------------------------------------


def events_seen(client, someone):
    """[(type, resource id)] of every event /v1/events shows someone, oldest first."""
    answer = ok(call(client, someone, "GET", "/v1/events?page_size=100"))
    assert answer["next_page_token"] is None
    return [(event["type"], event["resource"]["id"]) for event in answer["events"]]


def with_everything(client, cast, quarter):
    """The target (by the creator, team red) with a key result, a check-in, a comment on each and an initiative;
    and a plain objective of the service key's. Their ids."""
    ids = {"target": target_of(client, cast, quarter), "plain": new_objective(client, cast.service, quarter,
                                                                              "Plain")["id"]}
    kr = ok(call(client, cast.creator, "GET", f"/v1/cycles/{quarter}/report"))["objectives"]
    ids["kr"] = next(node for node in kr if node["id"] == ids["target"])["key_results"][0]["id"]
    who = cast.creator
    ids["checkin"] = ok(call(client, who, "POST", f"/v1/keyresults/{ids['kr']}/checkins", {"value": "4"}))["id"]
    ids["comment"] = ok(call(client, who, "POST", f"/v1/objectives/{ids['target']}/comments", {"body": "Hi"}))["id"]
    ids["kr_comment"] = ok(call(client, who, "POST", f"/v1/keyresults/{ids['kr']}/comments", {"body": "Ho"}))["id"]
    ids["initiative"] = ok(call(client, who, "POST", f"/v1/keyresults/{ids['kr']}/initiatives",
                                {"name": "Work"}))["id"]
    return ids


OWN = ("target", "kr", "checkin", "comment", "kr_comment", "initiative")


def of_target(seen, ids):
    """The events seen of the target and what hangs under it, by kind of resource, oldest first."""
    return {kind: [event for event, resource in seen if resource == ids[kind]] for kind in OWN}


EVERY_EVENT = {"target": ["objective.created"], "kr": ["key_result.created", "key_result.updated"],
               "checkin": ["checkin.created"], "comment": ["comment.created"], "kr_comment": ["comment.created"],
               "initiative": ["initiative.created"]}
NO_EVENT = {kind: [] for kind in OWN}


@pytest.mark.parametrize("visibility", ["team", "private"])
def test_restricting_hides_the_events_written_before(client, cast, quarter, visibility):
    ids = with_everything(client, cast, quarter)
    restrict(client, cast.creator, ids["target"], visibility)
    outsider, admin = events_seen(client, cast.outsider), events_seen(client, cast.admin)
    assert of_target(outsider, ids) == NO_EVENT
    assert ("objective.created", ids["plain"]) in outsider  # the other objective's are seen
    expected = {**EVERY_EVENT, "target": ["objective.created", "objective.updated"]}
    assert of_target(admin, ids) == expected
    assert of_target(events_seen(client, cast.kr_owner), ids) == expected
    member = of_target(events_seen(client, cast.member), ids)
    assert member == (expected if visibility == "team" else NO_EVENT)
    # Seen again by all once it is everyone's again.
    restrict(client, cast.creator, ids["target"], "everyone")
    assert of_target(events_seen(client, cast.outsider), ids) == {
        **expected, "target": ["objective.created", "objective.updated", "objective.updated"]}


def deleted_events(kind):
    """What the admin sees of the target's events once it is deleted (kind: objective or cycle)."""
    updated = ["objective.created", "objective.updated"]
    return {**EVERY_EVENT, "target": updated + ["objective.deleted"] if kind == "objective" else updated}


@pytest.mark.parametrize("kind", ["objective", "cycle"])
def test_deleting_an_objective_for_everyone_leaves_its_events_to_everyone(client, cast, quarter, kind):
    ids = with_everything(client, cast, quarter)
    restrict(client, cast.creator, ids["target"], "private")
    restrict(client, cast.creator, ids["target"], "everyone")
    path = f"/v1/objectives/{ids['target']}" if kind == "objective" else f"/v1/cycles/{quarter}"
    assert call(client, cast.service, "DELETE", path).status_code in (200, 204)
    for someone in (cast.outsider, cast.admin, cast.creator):
        expected = deleted_events(kind)
        expected["target"] = ["objective.created", "objective.updated", "objective.updated"] + (
            ["objective.deleted"] if kind == "objective" else [])
        assert of_target(events_seen(client, someone), ids) == expected, someone.user["name"]


@pytest.mark.parametrize("kind", ["objective", "cycle"])
def test_deleting_a_private_objective_keeps_its_events_hidden(client, cast, quarter, kind):
    ids = with_everything(client, cast, quarter)
    restrict(client, cast.creator, ids["target"], "private")
    path = f"/v1/objectives/{ids['target']}" if kind == "objective" else f"/v1/cycles/{quarter}"
    assert call(client, cast.service, "DELETE", path).status_code in (200, 204)
    assert of_target(events_seen(client, cast.outsider), ids) == NO_EVENT
    assert of_target(events_seen(client, cast.member), ids) == NO_EVENT
    assert of_target(events_seen(client, cast.admin), ids) == deleted_events(kind)
    assert of_target(events_seen(client, cast.service), ids) == deleted_events(kind)


# --- 4. The upgrade from schema 16 --------------------------------------------------------------------------------

# schema.sql of the last release of schema version 16 (git show 76c02f4:schema.sql)
SCHEMA_V16 = helpers.REPO / "tests" / "fixtures" / "schema_v16.sql"
NOW = "2026-05-01T00:00:00Z"
# (event id, type, resource_type, resource_id, parent_id, data): the events of a version 16 database, and the
# objective each belongs to after the upgrade. o1 and o2 exist, o9 (and its key result k9) was deleted.
V16_EVENTS = (
    ("e1", "cycle.created", "cycle", "c1", None, {"id": "c1"}, None),
    ("e2", "objective.created", "objective", "o1", None, {"id": "o1"}, "o1"),
    ("e3", "key_result.created", "key_result", "k1", "o1", {"id": "k1", "objective_id": "o1"}, "o1"),
    ("e4", "key_result.scored", "key_result", "k1", None, {"id": "k1", "score": "0.5"}, "o1"),
    ("e5", "checkin.created", "checkin", "h1", "k1", {"id": "h1"}, "o1"),
    ("e6", "checkin.deleted", "checkin", "h2", None, {"id": "h2", "key_result_id": "k1"}, "o1"),
    ("e7", "comment.created", "comment", "m1", "o2", {"id": "m1", "objective_id": "o2", "key_result_id": None},
     "o2"),
    ("e8", "comment.created", "comment", "m2", "k1", {"id": "m2", "objective_id": None, "key_result_id": "k1"},
     "o1"),
    ("e9", "initiative.created", "initiative", "i1", "k1", {"id": "i1", "key_result_id": "k1"}, "o1"),
    ("e10", "objective.created", "objective", "o9", None, {"id": "o9"}, None),
    ("e11", "key_result.created", "key_result", "k9", "o9", {"id": "k9", "objective_id": "o9"}, None),
    ("e12", "checkin.created", "checkin", "h9", "k9", {"id": "h9"}, None),
    ("e13", "objective.deleted", "objective", "o9", None, {"id": "o9"}, None),
    ("e14", "team.created", "team", "t1", None, {"id": "t1"}, None),
)


def make_v16_database(path):
    with closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA_V16.read_text(encoding="utf-8"))
        db.execute("PRAGMA user_version = 16")
        db.execute("INSERT INTO teams (id, name, created_at) VALUES ('t1', 'Red', ?)", (NOW,))
        db.execute("INSERT INTO cycles (id, name, created_at) VALUES ('c1', 'Q1', ?)", (NOW,))
        db.executemany("INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, created_at, modified_at)"
                       " VALUES (?, ?, 0, 0, 'c1', ?, ?)", [("o1", "Grow", NOW, NOW), ("o2", "Ship", NOW, NOW)])
        db.execute("INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value, "
                   "target_value_min, created_at, modified_at) VALUES ('k1', 'o1', 'c1', 'Reach', 'positive', "
                   "'0.50', '3.00', '10.00', ?, ?)", (NOW, NOW))
        db.execute("INSERT INTO checkins (id, key_result_seq, value, confidence, created_at) "
                   "VALUES ('h1', 1, '3.00', '0.50', ?)", (NOW,))
        db.executemany("INSERT INTO comments (id, objective_id, key_result_id, body, created_at, modified_at) "
                       "VALUES (?, ?, ?, 'Hi', ?, ?)", [("m1", "o2", None, NOW, NOW), ("m2", None, "k1", NOW, NOW)])
        db.execute("INSERT INTO initiatives (id, key_result_id, name, created_at, modified_at) "
                   "VALUES ('i1', 'k1', 'Work', ?, ?)", (NOW, NOW))
        db.executemany(
            "INSERT INTO events (id, type, created_at, actor, resource_type, resource_id, parent_id, data) "
            "VALUES (?, ?, ?, '{\"type\":\"system\"}', ?, ?, ?, ?)",
            [(event_id, kind, NOW, resource_type, resource_id, parent, json.dumps(data))
             for event_id, kind, resource_type, resource_id, parent, data, _ in V16_EVENTS])
        db.commit()


def test_the_v16_fixture_is_the_schema_of_the_release_before_visibility():
    text = SCHEMA_V16.read_text(encoding="utf-8")
    assert "initiatives" in text and "created_by" in text and "visibility" not in text


def app_on(path):
    """An app on the database at path, made or brought up to today's schema as serving it would."""
    opened = create_app({"TESTING": True, "DATABASE": path})
    with opened.app_context():
        init_db()
    return opened


def test_a_version_16_database_gets_every_objective_for_everyone_and_each_event_its_objective(tmp_path):
    path = tmp_path / "v16.db"
    make_v16_database(path)
    migrated = app_on(path)
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 17
        assert db.execute("SELECT id, visibility FROM objectives ORDER BY seq").fetchall() == [
            ("o1", "everyone"), ("o2", "everyone")]
        assert db.execute("SELECT id, objective_id FROM events ORDER BY seq").fetchall() == [
            (event[0], event[-1]) for event in V16_EVENTS]
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        assert db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name = "
                          "'events_of_deleted_objective'").fetchall() == [("events_of_deleted_objective",)]
        with pytest.raises(sqlite3.IntegrityError):  # the new column's CHECK, as a new database's
            db.execute("UPDATE objectives SET visibility = 'public' WHERE id = 'o1'")
    # The placed events hide with their objective: restricted, then deleted, o1's stay in the store as they were.
    client = migrated.test_client()
    assert ok(client.patch("/v1/objectives/o1", json={"visibility": "private"}))["visibility"] == "private"
    assert client.delete("/v1/objectives/o1").status_code in (200, 204)
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT count(*) FROM events WHERE objective_id = 'o1'").fetchone()[0] == 9


# --- 5. Reports: streamed and in memory, for a reader who sees part of the tree ----------------------------------


def both_ways(app, client, who, path):
    """(streamed, in memory) answers of path for who: their bytes, which must be the same."""
    answers = []
    for threshold in (0, 10**9):
        app.config["BIG_REPORT_OBJECTIVES"] = threshold
        answer = call(client, who, "GET", path)
        answers.append((answer.status_code, answer.get_data()))
        answer.close()
    app.config["BIG_REPORT_OBJECTIVES"] = 10**9
    assert answers[0] == answers[1], f"{path} for {who.user['name'] if who.user else 'service'}: streamed " \
                                     f"{answers[0][1][:300]!r}, in memory {answers[1][1][:300]!r}"
    return answers[0][0], json.loads(answers[0][1]) if answers[0][0] == 200 else None


def tree_of(nodes):
    """{id: [child ids]} of a report's forest, with None for its roots."""
    shape = {None: [node["id"] for node in nodes]}
    stack = list(nodes)
    while stack:
        node = stack.pop()
        shape[node["id"]] = [child["id"] for child in node["children"]]
        stack.extend(node["children"])
    return shape


def every_node(nodes):
    stack, found = list(nodes), []
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node["children"])
    return found


@pytest.fixture(params=["unassigned", "assigned"])
def forest(request, client, cast, quarter):
    """root (everyone) > hidden (private, the creator's) > lifted (everyone) > reds (team red); blues (team blue) >
    orphan (everyone); each with a key result, the hidden ones' off track. The member sees root, lifted, reds and
    orphan. Made by the creator, assigned to no one or (assigned) to the creator."""
    assignee = cast.creator.id if request.param == "assigned" else None
    ids = {}
    made = (("root", None, None, "everyone", "0.9"), ("hidden", "root", None, "private", "0.1"),
            ("lifted", "hidden", None, "everyone", "0.9"), ("reds", "lifted", cast.red, "team", "0.5"),
            ("blues", None, cast.blue, "team", "0.1"), ("orphan", "blues", None, "everyone", "0.9"))
    for name, parent, team, visibility, confidence in made:
        ids[name] = new_objective(client, cast.creator, quarter, name.title(), team_id=team,
                                  parent_objective_id=ids.get(parent), assignee_id=assignee)["id"]
        for n in range(2 if name in ("hidden", "reds") else 1):
            ok(call(client, cast.creator, "POST", f"/v1/objectives/{ids[name]}/keyresults",
                    {"name": f"{name} {n}", **KR, "current_value": str(3 + 2 * n), "confidence": confidence}))
        if visibility != "everyone":
            restrict(client, cast.creator, ids[name], visibility)
    return ids


def test_the_streamed_cycle_report_is_the_in_memory_one_for_a_reader_who_sees_part(app, client, cast, quarter,
                                                                                    forest):
    path = f"/v1/cycles/{quarter}/report"
    _, theirs = both_ways(app, client, cast.member, path)
    _, admins = both_ways(app, client, cast.admin, path)
    f = forest
    assert tree_of(theirs["objectives"]) == {None: [f["root"], f["orphan"]], f["root"]: [f["lifted"]],
                                             f["lifted"]: [f["reds"]], f["reds"]: [], f["orphan"]: []}
    assert tree_of(admins["objectives"]) == {None: [f["root"], f["blues"]], f["root"]: [f["hidden"]],
                                             f["hidden"]: [f["lifted"]], f["lifted"]: [f["reds"]], f["reds"]: [],
                                             f["blues"]: [f["orphan"]], f["orphan"]: []}
    # The figures count every objective: the cycle's, and each objective's the member sees, as the admin's.
    assert theirs["progress"] == admins["progress"]
    admin_nodes = {node["id"]: node for node in every_node(admins["objectives"])}
    for node in every_node(theirs["objectives"]):
        assert (node["progress"], node["status"]) == (admin_nodes[node["id"]]["progress"],
                                                      admin_nodes[node["id"]]["status"]), node["name"]
    # A lifted node names no parent the member may not see.
    lifted = next(node for node in every_node(theirs["objectives"]) if node["id"] == f["lifted"])
    assert lifted["parent_objective_id"] is None
    assert admin_nodes[f["lifted"]]["parent_objective_id"] == f["hidden"]
    # Counts are of what each sees.
    for report, objectives, hidden in ((theirs, 4, 2), (admins, 6, 0)):
        seen = [kr["status"] for node in every_node(report["objectives"]) for kr in node["key_results"]]
        counts = {status: seen.count(status) for status in set(seen)}
        assert (report["objectives_count"], report["key_results_count"], report["hidden_objectives_count"]) == (
            objectives, len(seen), hidden)
        assert {status: n for status, n in report["cycle"]["status_counts"].items() if n} == counts
    assert (theirs["key_results_count"], admins["key_results_count"]) == (5, 8)


def test_the_streamed_objective_report_is_the_in_memory_one_for_a_reader_who_sees_part(app, client, cast, forest):
    f = forest
    _, theirs = both_ways(app, client, cast.member, f"/v1/objectives/{f['root']}/report")
    _, admins = both_ways(app, client, cast.admin, f"/v1/objectives/{f['root']}/report")
    assert tree_of([theirs["objective"]]) == {None: [f["root"]], f["root"]: [f["lifted"]], f["lifted"]: [f["reds"]],
                                              f["reds"]: []}
    assert tree_of([admins["objective"]])[f["root"]] == [f["hidden"]]
    assert theirs["objective"]["progress"] == admins["objective"]["progress"]
    assert (theirs["hidden_objectives_count"], admins["hidden_objectives_count"]) == (1, 0)
    # A hidden objective's report is not found, either way; the outsider's of blues' child shows it alone.
    assert both_ways(app, client, cast.member, f"/v1/objectives/{f['hidden']}/report")[0] == 404
    assert both_ways(app, client, cast.outsider, f"/v1/objectives/{f['reds']}/report")[0] == 404
    _, orphan = both_ways(app, client, cast.outsider, f"/v1/objectives/{f['orphan']}/report")
    assert orphan["objective"]["parent_objective_id"] is None and orphan["hidden_objectives_count"] == 0


# --- 6. okr export and okr import ---------------------------------------------------------------------------------


def run(app, *args):
    app.cli.add_command(export_command)
    app.cli.add_command(import_command)
    result = app.test_cli_runner().invoke(args=[str(arg) for arg in args])
    assert result.exit_code == 0, result.output
    return result


def visibilities(path):
    with closing(sqlite3.connect(path)) as db:
        return dict(db.execute("SELECT name, visibility FROM objectives"))


@pytest.fixture
def exported(app, client, cast, quarter, tmp_path):
    """Three objectives, one at each visibility, exported: the file's path."""
    for visibility in VISIBILITIES:
        target = new_objective(client, cast.creator, quarter, visibility.title(), team_id=cast.red)["id"]
        if visibility != "everyone":
            restrict(client, cast.creator, target, visibility)
    path = tmp_path / "export.json"
    run(app, "export", path)
    return path


def imported(new_database, tmp_path, path):
    target = app_on(new_database(tmp_path / "target.db"))
    run(target, "import", path)
    return target.config["DATABASE"]


def test_export_carries_visibility_and_import_brings_it_back(app, exported, new_database, tmp_path):
    data = json.loads(exported.read_text(encoding="utf-8"))
    assert (data["format"], data["version"]) == ("okr-export", 7)
    assert {row["name"]: row["visibility"] for row in data["objectives"]} == {
        "Everyone": "everyone", "Team": "team", "Private": "private"}
    assert visibilities(imported(new_database, tmp_path, exported)) == {
        "Everyone": "everyone", "Team": "team", "Private": "private"}
    # The events come back placed under their objectives, as they were.
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        before = db.execute("SELECT id, objective_id FROM events WHERE objective_id IS NOT NULL").fetchall()
    with closing(sqlite3.connect(tmp_path / "target.db")) as db:
        after = dict(db.execute("SELECT id, objective_id FROM events"))
    assert before and all(after[event_id] == objective_id for event_id, objective_id in before)


def test_a_version_6_file_imports_with_every_objective_for_everyone(exported, new_database, tmp_path):
    data = json.loads(exported.read_text(encoding="utf-8"))
    data["version"] = 6
    for row in data["objectives"]:
        del row["visibility"]
    older = tmp_path / "v6.json"
    older.write_text(json.dumps(data), encoding="utf-8")
    assert visibilities(imported(new_database, tmp_path, older)) == {
        "Everyone": "everyone", "Team": "everyone", "Private": "everyone"}


# --- 7. A board link ----------------------------------------------------------------------------------------------


def signed_in(app, someone):
    """A page client of its own, signed in with someone's API key (the login page's key form)."""
    pages = app.test_client()
    page = pages.get("/login", headers=HTML).get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    answer = pages.post("/login", data={"csrf_token": csrf, "credential": someone.key["credential"],
                                        "secret": someone.key["secret"], "next": "/"})
    assert answer.status_code == 303, answer.get_data(as_text=True)
    return pages


@pytest.mark.parametrize("assigned", [False, True])
def test_a_board_link_shows_only_what_everyone_may_see(app, client, cast, quarter, assigned):
    names = {}
    for visibility in VISIBILITIES:
        names[visibility] = f"Board-{visibility}-objective"
        target = new_objective(client, cast.creator, quarter, names[visibility], team_id=cast.red,
                               assignee_id=cast.admin.id if assigned else None)["id"]
        ok(call(client, cast.creator, "POST", f"/v1/objectives/{target}/keyresults",
                {"name": f"Board-{visibility}-kr", **KR, "confidence": "0.1"}))
        if visibility != "everyone":
            restrict(client, cast.creator, target, visibility)
    with app.app_context(), transaction() as db:
        _, token = board_links.create(db, quarter, "Wallboard")
    for who, pages in (("anonymous", app.test_client()), ("admin", signed_in(app, cast.admin)),
                       ("member", signed_in(app, cast.member))):
        text = "".join(pages.get(f"/boards/{token}{query}", headers=HTML).get_data(as_text=True)
                       for query in ("", "?page=2&hold=1"))
        assert names["everyone"] in text and "Board-everyone-kr" in text, who
        shown = [name for name in (names["team"], names["private"], "Board-team-kr", "Board-private-kr")
                 if name in text]
        assert shown == [], f"{who} sees {shown} through the board link"
    # The admin's own board of the cycle shows all three.
    own = signed_in(app, cast.admin).get(f"/cycles/{quarter}/board?page=2&hold=1", headers=HTML)
    assert all(name in own.get_data(as_text=True) for name in names.values())


# --- 8. The chat digest and the weekly emails ---------------------------------------------------------------------


@pytest.fixture(params=["unassigned", "assigned"])
def red_week(request, client, cast, quarter):
    """Team red's objectives at each visibility, made by the creator with a key result each, assigned to no one or
    (assigned) to the creator: the member has no part in them. {visibility: name}."""
    assignee = cast.creator.id if request.param == "assigned" else None
    names = {}
    for visibility in VISIBILITIES:
        names[visibility] = f"Red-{visibility}-objective"
        target = new_objective(client, cast.creator, quarter, names[visibility], team_id=cast.red,
                               assignee_id=assignee)["id"]
        ok(call(client, cast.creator, "POST", f"/v1/objectives/{target}/keyresults", {"name": "Measure", **KR}))
        if visibility != "everyone":
            restrict(client, cast.creator, target, visibility)
    return names


def test_the_chat_digest_names_only_objectives_for_everyone(app, cast, red_week):
    now = datetime.now(UTC)
    with app.app_context(), transaction() as db:
        webhooks.add(db, "http://192.0.2.1/chat", format="slack", allow_private=True)
    with closing(connect(app.config["DATABASE"], 5000)) as db:
        work = chat_digest.planned(db, now, weekly_emails.week_of(now, ZoneInfo("UTC")), None)
    named = {digest["team"]["name"]: [row["name"] for row in digest["objectives"]] for _, digest in work}
    assert named == {"Red": [red_week["everyone"]]}
    text = "".join(json.dumps(weekly_emails.digest_slack_message(digest)) for _, digest in work)
    assert red_week["team"] not in text and red_week["private"] not in text


def test_a_members_weekly_digest_names_their_teams_objective_not_a_private_one(app, cast, red_week):
    now = datetime.now(UTC)
    with closing(connect(app.config["DATABASE"], 5000)) as db:
        emails = weekly_emails.plan(db, now, None)
    digests = {email.person["id"]: email for email in emails if email.kind == "digest"}
    member = digests[cast.member.id].body
    assert red_week["everyone"] in member and red_week["team"] in member
    assert red_week["private"] not in member
    other = digests.get(cast.other_member.id)
    assert other is None or all(name not in other.body for name in red_week.values())


def test_closing_a_cycle_scores_the_objectives_its_closer_may_not_see_as_for_anyone(app, client, cast, quarter):
    """The close gives every objective not scored its suggested score, whoever closes: one the closer may not see
    gets it too, as when an admin closes."""
    target = target_of(client, cast, quarter)
    ok(call(client, cast.creator, "PATCH", f"/v1/objectives/{target}", {"visibility": "private"}))
    ok(call(client, cast.outsider, "POST", f"/v1/cycles/{quarter}/close"))
    scored = ok(call(client, cast.admin, "GET", f"/v1/objectives/{target}/report"))["objective"]
    assert scored["score"] is not None and scored["outcome"] is not None, scored


# --- what a review of the whole change found ------------------------------------------------------------------


@pytest.fixture
def hidden_parent(client, cast, quarter):
    """A private objective (the creator's) and a plain one everyone sees, aligned under it after it was made: the
    feed holds the plain one's update naming the hidden parent."""
    secret = new_objective(client, cast.creator, quarter, "Secret-Parent-Name")["id"]
    ok(call(client, cast.creator, "PATCH", f"/v1/objectives/{secret}", {"visibility": "private"}))
    plain = new_objective(client, cast.creator, quarter, "Plain")["id"]
    ok(call(client, cast.creator, "PATCH", f"/v1/objectives/{plain}", {"parent_objective_id": secret}))
    return secret, plain


def test_the_feed_names_no_hidden_parent_and_drops_an_update_that_changed_only_it(app, client, cast, hidden_parent):
    from okr.db import get_db
    from okr.reports import activity
    from okr.store import visibility
    secret, plain = hidden_parent
    with app.test_request_context(), visibility.viewing_as(cast.outsider.id):
        entries, _ = activity.feed(get_db())
        history, _ = activity.history(get_db(), "objective", plain)
        for shown in (entries, history):
            names = activity.names(get_db(), shown)
            text = json.dumps(shown) + json.dumps([activity.sentence(e, names) for e in shown], default=str)
            assert secret not in text and "Secret-Parent-Name" not in text
    assert not [e for e in entries if e["type"] == "objective.updated" and e["resource"]["id"] == plain]
    events = ok(call(client, cast.outsider, "GET", "/v1/events?page_size=100"))["events"]
    assert secret not in json.dumps(events)
    assert not [e for e in events if e["type"] == "objective.updated" and e["resource"]["id"] == plain]


def test_the_list_filtered_by_a_hidden_parent_is_empty_as_for_an_unknown_one(client, cast, quarter, hidden_parent):
    secret, _ = hidden_parent
    listed = ok(call(client, cast.outsider, "GET", f"/v1/objectives?cycle_id={quarter}&parent_objective_id={secret}"))
    assert listed["objectives"] == []
    assert len(ok(call(client, cast.creator, "GET",
                       f"/v1/objectives?cycle_id={quarter}&parent_objective_id={secret}"))["objectives"]) == 1


def test_naming_a_hidden_parent_is_refused_even_the_stored_one(client, cast, hidden_parent):
    secret, plain = hidden_parent
    answer = call(client, cast.outsider, "PATCH", f"/v1/objectives/{plain}", {"parent_objective_id": secret})
    assert answer.status_code == 400 and answer.get_json()["details"] == {
        "parent_objective_id": "No objective with this id exists."}
    # leaving it out keeps it
    ok(call(client, cast.outsider, "PATCH", f"/v1/objectives/{plain}", {"name": "Plainer"}))
    assert ok(call(client, cast.admin, "GET", f"/v1/objectives/{plain}"))["parent_objective_id"] == secret


def test_a_closed_cycle_answers_404_not_409_for_what_one_may_not_see(client, cast, quarter):
    target = target_of(client, cast, quarter)
    [kr] = ok(call(client, cast.admin, "GET", f"/v1/objectives/{target}/keyresults"))["keyresults"]
    ok(call(client, cast.creator, "PATCH", f"/v1/objectives/{target}", {"visibility": "private"}))
    ok(call(client, cast.admin, "POST", f"/v1/cycles/{quarter}/close"))
    assert call(client, cast.outsider, "POST", f"/v1/keyresults/{kr['id']}/checkins", {"value": "3"}
                ).status_code == 404
    assert call(client, cast.kr_owner, "POST", f"/v1/keyresults/{kr['id']}/checkins", {"value": "3"}
                ).status_code == 409


def test_an_initiative_one_owns_under_a_hidden_objective_is_not_in_their_week(app, client, cast, quarter):
    from okr.db import get_db
    from okr.store import initiatives, visibility
    target = target_of(client, cast, quarter)
    [kr] = ok(call(client, cast.admin, "GET", f"/v1/objectives/{target}/keyresults"))["keyresults"]
    ok(call(client, cast.creator, "POST", f"/v1/keyresults/{kr['id']}/initiatives",
            {"name": "Hidden work", "owner_id": cast.outsider.id}))
    with app.test_request_context(), visibility.viewing_as(cast.outsider.id):
        assert len(initiatives.owned_open(get_db(), cast.outsider.id, [quarter])) == 1
    ok(call(client, cast.creator, "PATCH", f"/v1/objectives/{target}", {"visibility": "private"}))
    with app.test_request_context(), visibility.viewing_as(cast.outsider.id):
        assert initiatives.owned_open(get_db(), cast.outsider.id, [quarter]) == []


def test_marking_all_read_counts_only_what_one_may_see(client, cast, quarter):
    target = target_of(client, cast, quarter)
    ok(call(client, cast.creator, "POST", f"/v1/objectives/{target}/comments", {"body": "@Outsider look"}))
    ok(call(client, cast.creator, "PATCH", f"/v1/objectives/{target}", {"visibility": "private"}))
    assert ok(call(client, cast.outsider, "POST", "/v1/me/notifications/read", {"all": True}))["marked"] == 0
