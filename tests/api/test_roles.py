"""Roles over the API: a key made for a user acts with the user's role (okr/accounts/access.py).

A viewer reads everything and writes nothing; an editor (and an admin) writes; a read-only key only reads
whatever its user's role; a deactivated user's key is refused; a user's key signs check-ins as its user.
"""
import sqlite3
from contextlib import closing

import pytest

from helpers import assert_error, make_team, make_user, signed
from okr.accounts import access
from okr.api.openapi import ADMIN_ONLY, EDITOR_ONLY
from okr.db import transaction
from okr.store import users

PASSWORD_HASH = "$argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHQ$aGFzaA"  # a stand-in: nothing checks it here


@pytest.fixture
def world(client, runner, key_result, objective, cycle):
    """A cycle, an objective, a key result, a team with a member, and another user; made while auth is off."""
    team = make_team(client)
    member = make_user(runner, "Grace Hopper", "grace@example.com")
    assert client.put(f"/v1/teams/{team['id']}/members/{member['id']}").status_code == 200
    comment = client.post(f"/v1/objectives/{objective['id']}/comments", json={"body": "b"}).get_json()
    checkin = client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": "2"}).get_json()
    initiative = client.post(f"/v1/keyresults/{key_result['id']}/initiatives", json={"name": "i"}).get_json()
    return {"checkin_id": checkin["id"], "initiative_id": initiative["id"], "cycle_id": cycle["id"], "objective_id": objective["id"], "key_result_id": key_result["id"],
            "team_id": team["id"], "user_id": member["id"], "comment_id": comment["id"],
            "connection_id": "00000000-0000-4000-8000-000000000000"}


@pytest.fixture
def document(client):
    return client.get("/v1/openapi.json").get_json()


def operations(document, wanted):
    """(method, path template) of every documented /v1 operation whose method is in wanted."""
    return sorted((method.upper(), path) for path, item in document["paths"].items() if path.startswith("/v1/")
                  for method in item if method in wanted)


def concrete(path, world):
    """path with its {parameters} filled from world, and the query a list needs (a cycle_id, the search's q)."""
    filled = path.format(**world)
    queries = {"/v1/objectives": f"?cycle_id={world['cycle_id']}", "/v1/keyresults": f"?cycle_id={world['cycle_id']}",
               "/v1/search": "?q=o"}
    return filled + queries.get(path, "")


def dump(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return "\n".join(line for line in db.iterdump() if "api_keys" not in line)


# Bodies the writes would accept from an editor, so that a 403 is the role's doing and nothing else's.
def bodies(world):
    objective = {"name": "o", "cycle_id": world["cycle_id"], "is_company": False, "is_personal": False}
    key_result = {"name": "k", "type": "baseline"}
    return {
        "/v1/objectives": objective, "/v1/objectives/{objective_id}": objective,
        "/v1/objectives/{objective_id}/keyresults": key_result, "/v1/keyresults/{key_result_id}": key_result,
        "/v1/keyresults/{key_result_id}/checkins": {"value": "3"},
        "/v1/cycles": {"name": "c"}, "/v1/cycles/{cycle_id}": {"name": "c"},
        "/v1/teams": {"name": "t"}, "/v1/teams/{team_id}": {"name": "t"},
        "/v1/objectives/{objective_id}/comments": {"body": "c"},
        "/v1/keyresults/{key_result_id}/comments": {"body": "c"},
        "/v1/comments/{comment_id}": {"body": "c"},
        "/v1/checkins/{checkin_id}": {"value": "4"},
        "/v1/keyresults/{key_result_id}/initiatives": {"name": "i"},
        "/v1/initiatives/{initiative_id}": {"state": "done"},
    }


WRITES = {"post", "put", "patch", "delete"}


def test_a_viewer_reads_everything(app, client, make_person, world, document):
    viewer = make_person("viewer")
    reads = operations(document, {"get"})
    assert len(reads) >= 16
    for method, path in reads:
        response = client.get(concrete(path, world), headers=viewer.headers())
        if path in ADMIN_ONLY or path in EDITOR_ONLY:  # a source's query may name the company's systems
            assert response.status_code == 403, (path, response.get_json())
            assert response.get_json()["message"] == access.refusal(
                access.Actor(None, None, "viewer"), "connections" if path in ADMIN_ONLY else "sources")
        else:
            assert response.status_code == 200, (path, response.get_json())


def test_a_viewer_writes_nothing(app, client, make_person, world, document):
    viewer = make_person("viewer")
    before = dump(app)
    # but to their own inbox (marking it read), which tests/api/test_notifications.py holds
    writes = [(method, path) for method, path in operations(document, WRITES)
              if path not in access.OWN_API_WRITES]
    assert len(writes) >= 16
    body = bodies(world)
    for method, path in writes:
        response = client.open(concrete(path, world), method=method, json=body.get(path), headers=viewer.headers())
        answer = assert_error(response, 403)
        assert answer["message"] == ("a viewer may look but not change anything; an admin can make you an editor"), path
    assert dump(app) == before


def test_a_viewers_write_is_refused_before_its_body_is_read(client, make_person, world):
    viewer = make_person("viewer")
    response = client.post("/v1/cycles", data=b"{not json", headers=viewer.headers())
    assert_error(response, 403)


@pytest.mark.parametrize("role", ["editor", "admin"])
def test_an_editor_or_an_admin_writes(client, make_person, world, role):
    person = make_person(role)
    headers = person.headers()
    cycle = client.post("/v1/cycles", json={"name": "Q3"}, headers=headers)
    assert cycle.status_code == 200
    objective = client.post("/v1/objectives", headers=headers, json={
        "name": "o", "cycle_id": cycle.get_json()["id"], "is_company": False, "is_personal": False})
    assert objective.status_code == 200
    path = f"/v1/objectives/{objective.get_json()['id']}"
    assert client.patch(path, json={"description": "d"}, headers=headers).status_code == 200
    key_result = client.post(f"{path}/keyresults", json={"name": "k", "type": "baseline"}, headers=headers)
    assert key_result.status_code == 200
    checkin = client.post(f"/v1/keyresults/{key_result.get_json()['id']}/checkins", json={"value": "2"},
                          headers=headers)
    assert checkin.status_code == 200
    assert client.post(f"/v1/teams/{world['team_id']}", json={"name": "renamed"}, headers=headers).status_code == 200
    assert client.put(f"/v1/teams/{world['team_id']}/members/{person.id}", headers=headers).status_code == 200
    assert client.delete(path, headers=headers).status_code == 200


def test_a_service_key_writes_like_an_editor(client, world, key):
    assert client.post("/v1/cycles", json={"name": "Q3"}, headers=signed(key)).status_code == 200


def test_an_admins_read_only_key_stays_read_only(app, client, make_person, world):
    admin = make_person("admin", read_only=True)
    assert client.get("/v1/cycles", headers=admin.headers()).status_code == 200
    before = dump(app)
    for method, path, body in (("POST", "/v1/cycles", {"name": "x"}),
                               ("DELETE", f"/v1/cycles/{world['cycle_id']}", None),
                               ("PUT", f"/v1/teams/{world['team_id']}/members/{admin.id}", None)):
        body = assert_error(client.open(path, method=method, json=body, headers=admin.headers()), 403)
        assert body["message"] == "this API key is read-only"
    assert dump(app) == before


def set_active(app, user_id, active):
    with app.app_context(), transaction() as db:
        users.set_active(db, users.get(db, user_id), active)


def test_a_deactivated_users_key_is_401_from_the_next_request(app, client, make_person):
    make_person("admin")  # someone must stay admin
    editor = make_person("editor")
    assert client.get("/v1/cycles", headers=editor.headers()).status_code == 200
    set_active(app, editor.id, False)
    for response in (client.get("/v1/cycles", headers=editor.headers()),
                     client.post("/v1/cycles", json={"name": "x"}, headers=editor.headers())):
        body = assert_error(response, 401)
        assert response.headers["WWW-Authenticate"] == "S1-HMAC-SHA256"
        assert body["message"] == "this API key's user is deactivated"
    set_active(app, editor.id, True)
    assert client.get("/v1/cycles", headers=editor.headers()).status_code == 200


def test_a_deactivated_user_through_the_command_is_refused_too(client, runner, make_person):
    make_person("admin")
    viewer = make_person("viewer", email="vera@example.com")
    assert runner.invoke(args=["users", "deactivate", "vera@example.com"]).exit_code == 0
    assert_error(client.get("/v1/me", headers=viewer.headers()), 401)


def test_users_show_no_role_and_no_password(app, client, make_person):
    admin = make_person("admin", name="Ada Lovelace", email="ada@example.com")
    with app.app_context(), transaction() as db:
        users.set_password(db, users.get(db, admin.id), PASSWORD_HASH)
    listed = client.get("/v1/users", headers=admin.headers())
    one = client.get(f"/v1/users/{admin.id}", headers=admin.headers())
    assert listed.get_json()["users"] == [one.get_json()] == [admin.user]
    for text in (listed.get_data(as_text=True), one.get_data(as_text=True)):
        assert "role" not in text and "admin" not in text and "password" not in text and "argon2" not in text


# --- check-in authorship ------------------------------------------------------------------------------


def check_in(client, key_result_id, body, headers):
    return client.post(f"/v1/keyresults/{key_result_id}/checkins", json=body, headers=headers)


def history(client, key_result_id, headers):
    return client.get(f"/v1/keyresults/{key_result_id}/checkins", headers=headers).get_json()["checkins"]


def test_a_users_key_records_its_user_as_the_author(client, make_person, key_result):
    editor = make_person("editor")
    response = check_in(client, key_result["id"], {"value": "7"}, editor.headers())
    assert response.status_code == 200
    assert response.get_json()["author_id"] == editor.id
    assert history(client, key_result["id"], editor.headers())[-1]["author_id"] == editor.id


def test_a_users_key_may_name_its_own_user(client, make_person, key_result):
    editor = make_person("editor")
    response = check_in(client, key_result["id"], {"value": "7", "author_id": editor.id}, editor.headers())
    assert response.status_code == 200 and response.get_json()["author_id"] == editor.id


def test_a_users_key_naming_another_author_is_403(client, runner, make_person, key_result):
    other = make_user(runner, "Grace Hopper", "grace@example.com")
    editor = make_person("editor")
    before = history(client, key_result["id"], editor.headers())
    body = assert_error(check_in(client, key_result["id"], {"value": "7", "author_id": other["id"]},
                                 editor.headers()), 403)
    assert "author_id" in body["message"]
    assert history(client, key_result["id"], editor.headers()) == before
    stored = client.get(f"/v1/keyresults/{key_result['id']}", headers=editor.headers()).get_json()
    assert stored["current_value"] == "5.00"


def test_a_service_key_may_name_any_author_or_none(client, runner, key_result, key):
    other = make_user(runner, "Grace Hopper", "grace@example.com")
    named = check_in(client, key_result["id"], {"value": "7", "author_id": other["id"]}, signed(key))
    assert named.status_code == 200 and named.get_json()["author_id"] == other["id"]
    anonymous = check_in(client, key_result["id"], {"value": "8"}, signed(key))
    assert anonymous.status_code == 200 and anonymous.get_json()["author_id"] is None


def test_a_key_result_made_with_a_users_key_starts_with_its_check_in(client, make_person, objective):
    editor = make_person("editor")
    response = client.post(f"/v1/objectives/{objective['id']}/keyresults", headers=editor.headers(),
                           json={"name": "k", "type": "positive", "target_value_min": "10", "current_value": "2"})
    assert response.status_code == 200
    (first,) = history(client, response.get_json()["id"], editor.headers())
    assert (first["value"], first["author_id"]) == ("2.00", editor.id)


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_a_new_current_value_through_a_users_key_is_its_check_in(client, make_person, key_result, method):
    editor = make_person("editor")
    body = {**key_result, "current_value": "9"} if method == "POST" else {"current_value": "9"}
    response = client.open(f"/v1/keyresults/{key_result['id']}", method=method, json=body, headers=editor.headers())
    assert response.status_code == 200, response.get_json()
    last = history(client, key_result["id"], editor.headers())[-1]
    assert (last["value"], last["author_id"]) == ("9.00", editor.id)


def test_a_new_current_value_through_a_service_key_has_no_author(client, key_result, key):
    response = client.patch(f"/v1/keyresults/{key_result['id']}", json={"current_value": "9"}, headers=signed(key))
    assert response.status_code == 200
    last = history(client, key_result["id"], signed(key))[-1]
    assert (last["value"], last["author_id"]) == ("9.00", None)
