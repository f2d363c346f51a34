"""GET /v1/me: who signs the request (user, role, key), and null for all three while auth is off."""
import pytest

from helpers import assert_error, create_key, signed
from okr.db import transaction
from okr.store import users


def test_open_mode_answers_nobody(client):
    response = client.get("/v1/me")
    assert response.status_code == 200
    assert response.get_json() == {"user": None, "role": None, "key": None}


@pytest.mark.parametrize("role", ["admin", "editor", "viewer"])
def test_a_users_key_shows_its_user_role_and_key(client, make_person, role):
    person = make_person(role, name="Ada Lovelace", email="ada@example.com")
    response = client.get("/v1/me", headers=person.headers())
    assert response.status_code == 200
    assert response.get_json() == {
        "user": person.user,
        "role": role,
        "key": {"credential": person.key["credential"], "name": "Ada Lovelace's key", "read_only": False},
    }
    assert list(response.get_json()) == ["user", "role", "key"]


def test_the_user_is_as_get_users_gives_it(client, make_person):
    person = make_person("viewer")
    me = client.get("/v1/me", headers=person.headers()).get_json()
    assert me["user"] == client.get(f"/v1/users/{person.id}", headers=person.headers()).get_json()
    assert "role" not in me["user"] and "password_hash" not in me["user"]


def test_a_read_only_key_says_so(client, make_person):
    person = make_person("admin", read_only=True)
    me = client.get("/v1/me", headers=person.headers()).get_json()
    assert me["role"] == "admin" and me["key"]["read_only"] is True


def test_a_service_key_has_no_user_and_no_role(client, runner):
    key = create_key(runner, "ci", read_only=True)
    response = client.get("/v1/me", headers=signed(key))
    assert response.status_code == 200
    assert response.get_json() == {"user": None, "role": None,
                                    "key": {"credential": key["credential"], "name": "ci", "read_only": True}}


def test_once_auth_is_on_an_unsigned_request_is_401(client, key):
    body = assert_error(client.get("/v1/me"), 401)
    assert "Authorization" in body["message"]


def test_a_user_renamed_since_shows_the_new_name(app, client, make_person):
    person = make_person("editor")
    with app.app_context(), transaction() as db:
        users.update(db, users.get(db, person.id), "Renamed", "renamed@example.com")
    user = client.get("/v1/me", headers=person.headers()).get_json()["user"]
    assert (user["name"], user["email"]) == ("Renamed", "renamed@example.com")


def test_other_methods_are_405(client, make_person):
    person = make_person("admin")
    response = client.post("/v1/me", headers=person.headers())
    assert_error(response, 405)
    assert "GET" in response.headers["Allow"]
