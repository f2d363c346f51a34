"""Users: read-only over HTTP at /v1/users; created and deactivated through the CLI."""
import uuid

import pytest

from helpers import TIMESTAMP, USER_FIELDS, UUID4, assert_error, make_user, set_active


def test_list_is_empty_without_users(client):
    response = client.get("/v1/users")
    assert response.status_code == 200
    assert response.get_json() == {"next_page_token": None, "users": []}


def test_list_shows_users_added_through_the_cli_in_creation_order(client, runner):
    users = [
        make_user(runner, "Grace Hopper", "grace@example.com"),
        make_user(runner, "Ada Lovelace", "ada@example.com"),
        make_user(runner, "Alan Turing", "alan@example.com"),
    ]
    response = client.get("/v1/users")
    assert response.status_code == 200
    assert response.get_json() == {"next_page_token": None, "users": users}


def test_user_has_exactly_the_spec_fields(client, runner, clock):
    clock.now = "2026-02-03T04:05:06Z"
    make_user(runner, "Ada Lovelace", "ada@example.com")
    (user,) = client.get("/v1/users").get_json()["users"]
    assert set(user) == USER_FIELDS
    assert UUID4.fullmatch(user["id"])
    assert user["name"] == "Ada Lovelace"
    assert user["email"] == "ada@example.com"
    assert user["is_active"] is True
    assert user["created_at"] == "2026-02-03T04:05:06Z"


def test_created_at_is_rfc3339_utc_to_the_second(client, runner):
    user = make_user(runner)
    assert TIMESTAMP.fullmatch(client.get(f"/v1/users/{user['id']}").get_json()["created_at"])


def test_get_returns_one_user(client, runner):
    make_user(runner, "Grace Hopper", "grace@example.com")
    user = make_user(runner, "Ada Lovelace", "ada@example.com")
    response = client.get(f"/v1/users/{user['id']}")
    assert response.status_code == 200
    assert response.get_json() == user
    assert set(response.get_json()) == USER_FIELDS


@pytest.mark.parametrize("name", ["Zoë Çelik", "李小龍", "محمد علي", "Ola 👋"])
def test_unicode_user_name_round_trips(client, runner, name):
    user = make_user(runner, name, "someone@example.com")
    assert client.get(f"/v1/users/{user['id']}").get_json()["name"] == name
    assert client.get("/v1/users").get_json()["users"][0]["name"] == name


@pytest.mark.parametrize("user_id", [str(uuid.uuid4()), "not-a-uuid", "0", "x" * 300])
def test_unknown_or_malformed_user_is_404(client, runner, user_id):
    make_user(runner)
    assert_error(client.get(f"/v1/users/{user_id}"), 404)


def test_uppercased_id_of_an_existing_user_is_404(client, runner):
    user = make_user(runner)
    assert_error(client.get(f"/v1/users/{user['id'].upper()}"), 404)


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_user_list_is_read_only_over_http(client, runner, method):
    make_user(runner)
    body = {"name": "Eve", "email": "eve@example.com"}
    response = getattr(client, method)("/v1/users", json=body)
    assert_error(response, 405)
    allowed = {m.strip() for m in response.headers["Allow"].split(",")}
    assert "GET" in allowed and method.upper() not in allowed
    assert len(client.get("/v1/users").get_json()["users"]) == 1


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_user_is_read_only_over_http(client, runner, method):
    user = make_user(runner)
    response = getattr(client, method)(f"/v1/users/{user['id']}", json={"name": "Eve"})
    assert_error(response, 405)
    allowed = {m.strip() for m in response.headers["Allow"].split(",")}
    assert "GET" in allowed and method.upper() not in allowed
    assert client.get(f"/v1/users/{user['id']}").get_json() == user


def test_deactivated_user_shows_is_active_false(client, runner):
    user = make_user(runner, "Ada Lovelace", "ada@example.com")
    other = make_user(runner, "Grace Hopper", "grace@example.com")
    set_active(runner, "ada@example.com", False)
    fetched = client.get(f"/v1/users/{user['id']}").get_json()
    assert fetched["is_active"] is False
    assert fetched == {**user, "is_active": False}
    listed = client.get("/v1/users").get_json()["users"]
    assert [u["is_active"] for u in listed] == [False, True]
    assert listed[1] == other


def test_reactivated_user_shows_is_active_true(client, runner):
    user = make_user(runner, "Ada Lovelace", "ada@example.com")
    set_active(runner, "ada@example.com", False)
    set_active(runner, "ada@example.com", True)
    assert client.get(f"/v1/users/{user['id']}").get_json()["is_active"] is True


def test_deactivated_user_stays_listed_in_place(client, runner):
    users = [make_user(runner, f"User {i}", f"user{i}@example.com") for i in range(3)]
    set_active(runner, "user1@example.com", False)
    listed = client.get("/v1/users").get_json()["users"]
    assert [u["id"] for u in listed] == [u["id"] for u in users]
