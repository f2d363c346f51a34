"""A team's members: GET /v1/teams/:id/members, PUT and DELETE /v1/teams/:id/members/:user_id."""
import sqlite3
import uuid
from contextlib import closing

import pytest

from helpers import USER_FIELDS, assert_error, make_team, make_user, set_active, signed
from okr.api.paging import decode_token
from okr.store.schema import connect

UNKNOWN = str(uuid.uuid4())


@pytest.fixture
def team(client):
    return make_team(client, "Platform")


@pytest.fixture
def ada(runner):
    return make_user(runner, "Ada Lovelace", "ada@example.com")


@pytest.fixture
def bob(runner):
    return make_user(runner, "Bob Dylan", "bob@example.com")


def members_path(team):
    return f"/v1/teams/{team['id']}/members"


def add(client, team, user, **kwargs):
    response = client.put(f"{members_path(team)}/{user['id']}", **kwargs)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def members(client, team, query="", **kwargs):
    response = client.get(members_path(team) + query, **kwargs)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def stored_memberships(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT team_id, user_id FROM team_members ORDER BY seq").fetchall()


def test_a_new_team_has_no_members(client, team):
    assert members(client, team) == {"next_page_token": None, "users": []}


def test_put_adds_a_member_and_answers_the_user(client, team, ada):
    assert add(client, team, ada) == ada
    assert members(client, team) == {"next_page_token": None, "users": [ada]}


def test_members_show_the_users_fields_only(client, team, ada):
    add(client, team, ada)
    (member,) = members(client, team)["users"]
    assert set(member) == USER_FIELDS  # no role, no password, no joined_at


def test_put_is_idempotent(app, client, team, ada):
    first = client.put(f"{members_path(team)}/{ada['id']}")
    second = client.put(f"{members_path(team)}/{ada['id']}")
    assert (first.status_code, second.status_code) == (200, 200)
    assert first.get_data() == second.get_data()
    assert members(client, team)["users"] == [ada]
    assert stored_memberships(app) == [(team["id"], ada["id"])]


def test_members_are_listed_in_the_order_they_joined(client, team, ada, bob):
    add(client, team, bob)
    add(client, team, ada)  # Ada was created first, but joined second
    assert [u["id"] for u in members(client, team)["users"]] == [bob["id"], ada["id"]]


def test_members_of_other_teams_are_not_listed(client, team, ada, bob):
    other = make_team(client, "Growth")
    add(client, other, ada)
    add(client, team, bob)
    assert members(client, team)["users"] == [bob]
    assert members(client, other)["users"] == [ada]


def test_members_come_a_page_at_a_time_with_tokens_over_the_memberships(app, client, runner, team):
    people = [make_user(runner, f"User {n}", f"user{n}@example.com") for n in range(5)]
    other = make_team(client, "Growth")
    for person in reversed(people):  # the memberships' order is not the users'
        add(client, other, person)  # and other teams' memberships come in between
        add(client, team, person)
    seen, token, tokens = [], None, []
    while True:
        page = members(client, team, "?page_size=2" + (f"&page_token={token}" if token else ""))
        seen += page["users"]
        token = page["next_page_token"]
        if token is None:
            break
        tokens.append(token)
    assert seen == list(reversed(people))
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        team_seqs = [seq for (seq,) in db.execute("SELECT seq FROM team_members WHERE team_id = ? ORDER BY seq",
                                                  (team["id"],))]
    assert [decode_token(t) for t in tokens] == [team_seqs[1], team_seqs[3]]


def test_a_full_last_page_has_a_null_token(client, team, ada, bob):
    add(client, team, ada)
    add(client, team, bob)
    assert members(client, team, "?page_size=2")["next_page_token"] is None


@pytest.mark.parametrize("query", ["?page_size=0", "?page_size=x", "?page_token=%21%21"])
def test_bad_paging_arguments_are_400(client, team, query):
    assert_error(client.get(members_path(team) + query), 400)


def test_inactive_members_are_listed(client, runner, team, ada):
    add(client, team, ada)
    set_active(runner, "ada@example.com", False)
    assert members(client, team)["users"][0]["is_active"] is False


@pytest.mark.parametrize("team_id", [UNKNOWN, "not-a-uuid"])
def test_an_unknown_team_is_404(client, ada, team_id):
    assert_error(client.get(f"/v1/teams/{team_id}/members"), 404)
    assert_error(client.put(f"/v1/teams/{team_id}/members/{ada['id']}"), 404)
    assert_error(client.delete(f"/v1/teams/{team_id}/members/{ada['id']}"), 404)


@pytest.mark.parametrize("user_id", [UNKNOWN, "not-a-uuid"])
def test_an_unknown_user_is_404(app, client, team, user_id):
    assert_error(client.put(f"{members_path(team)}/{user_id}"), 404)
    assert_error(client.delete(f"{members_path(team)}/{user_id}"), 404)
    assert stored_memberships(app) == []


def test_delete_removes_a_member_with_an_empty_200(client, team, ada, bob):
    add(client, team, ada)
    add(client, team, bob)
    response = client.delete(f"{members_path(team)}/{ada['id']}")
    assert response.status_code == 200
    assert response.get_data() == b"" and "Content-Type" not in response.headers
    assert members(client, team)["users"] == [bob]


def test_deleting_again_or_a_non_member_is_404(client, team, ada, bob):
    add(client, team, ada)
    assert client.delete(f"{members_path(team)}/{ada['id']}").status_code == 200
    assert_error(client.delete(f"{members_path(team)}/{ada['id']}"), 404)
    assert_error(client.delete(f"{members_path(team)}/{bob['id']}"), 404)


def test_a_member_of_another_team_is_not_removed_from_it(client, team, ada):
    other = make_team(client, "Growth")
    add(client, other, ada)
    assert_error(client.delete(f"{members_path(team)}/{ada['id']}"), 404)
    assert members(client, other)["users"] == [ada]


def test_a_user_who_left_may_join_again_and_comes_last(client, team, ada, bob):
    add(client, team, ada)
    add(client, team, bob)
    client.delete(f"{members_path(team)}/{ada['id']}")
    add(client, team, ada)
    assert [u["id"] for u in members(client, team)["users"]] == [bob["id"], ada["id"]]


def test_deleting_a_team_removes_its_memberships(app, client, team, ada, bob):
    other = make_team(client, "Growth")
    add(client, team, ada)
    add(client, team, bob)
    add(client, other, ada)
    assert client.delete(f"/v1/teams/{team['id']}").status_code == 200
    assert stored_memberships(app) == [(other["id"], ada["id"])]
    assert_error(client.get(members_path(team)), 404)
    assert members(client, other)["users"] == [ada]


def test_deleting_a_user_removes_their_memberships(app, client, team, ada, bob):
    # No command or endpoint deletes a user today: the foreign key's cascade is what is tested.
    add(client, team, ada)
    add(client, team, bob)
    db = connect(app.config["DATABASE"], 5000)
    try:
        db.execute("DELETE FROM users WHERE id = ?", (ada["id"],))
        db.commit()
    finally:
        db.close()
    assert stored_memberships(app) == [(team["id"], bob["id"])]


def test_other_methods_are_405_with_allow(client, team, ada):
    response = client.post(members_path(team), json={})
    assert_error(response, 405)
    assert set(response.headers["Allow"].replace(" ", "").split(",")) >= {"GET"}
    response = client.post(f"{members_path(team)}/{ada['id']}", json={})
    assert_error(response, 405)
    assert {"PUT", "DELETE"} <= set(response.headers["Allow"].replace(" ", "").split(","))


# --- who may change memberships -----------------------------------------------------------------------


@pytest.mark.parametrize("role", ["editor", "admin"])
def test_an_editor_or_an_admin_changes_memberships(client, make_person, team, role):
    person = make_person(role)
    assert add(client, team, person.user, headers=person.headers()) == person.user
    response = client.delete(f"{members_path(team)}/{person.id}", headers=person.headers())
    assert response.status_code == 200


def test_a_service_key_changes_memberships(client, team, ada, key):
    assert add(client, team, ada, headers=signed(key)) == ada
    assert client.delete(f"{members_path(team)}/{ada['id']}", headers=signed(key)).status_code == 200


def test_a_viewer_lists_members_but_changes_none(app, client, make_person, team):
    editor, viewer = make_person("editor"), make_person("viewer")
    add(client, team, editor.user, headers=editor.headers())
    assert members(client, team, headers=viewer.headers())["users"] == [editor.user]
    body = assert_error(client.put(f"{members_path(team)}/{viewer.id}", headers=viewer.headers()), 403)
    assert "viewer" in body["message"]
    assert_error(client.delete(f"{members_path(team)}/{editor.id}", headers=viewer.headers()), 403)
    assert stored_memberships(app) == [(team["id"], editor.id)]


def test_a_read_only_key_changes_no_membership(app, client, make_person, team):
    admin = make_person("admin", read_only=True)
    body = assert_error(client.put(f"{members_path(team)}/{admin.id}", headers=admin.headers()), 403)
    assert "read-only" in body["message"]
    assert stored_memberships(app) == []
