"""Teams: /v1/teams."""
import uuid

import pytest

from helpers import (
    TEAM_FIELDS, TIMESTAMP, UUID4, assert_error, make_cycle, make_objective, make_team,
)

UNICODE_NAMES = [
    "Team 🚀🎯",                    # emoji outside the BMP
    "👩‍👩‍👧‍👦 family",                  # ZWJ sequence
    "צוות הפלטפורמה",               # Hebrew, right to left
    "فريق المنصة",                  # Arabic, right to left
    "\u202eevil\u202c",             # bidi override characters
    "Cafe\u0301 n\u0303",           # combining marks, not normalised
    "平台团队 チーム",                # CJK
    "  padded name\t",              # whitespace is kept, never trimmed
]
UNKNOWN_IDS = [
    str(uuid.uuid4()), str(uuid.uuid4()).upper(), "not-a-uuid", "0", "x" * 300, "%E2%98%83",
]


def get_team(client, team_id):
    response = client.get(f"/v1/teams/{team_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


# --- create ---------------------------------------------------------------------------


def test_create_returns_exactly_the_spec_fields(client, clock):
    clock.now = "2026-03-04T05:06:07Z"
    response = client.post("/v1/teams", json={"name": "Platform team"})
    assert response.status_code == 200
    team = response.get_json()
    assert set(team) == TEAM_FIELDS
    assert UUID4.fullmatch(team["id"])
    assert team["name"] == "Platform team"
    assert team["created_at"] == "2026-03-04T05:06:07Z"


def test_created_at_is_rfc3339_utc_to_the_second(client):
    assert TIMESTAMP.fullmatch(make_team(client)["created_at"])


def test_each_team_gets_a_new_id(client):
    assert make_team(client)["id"] != make_team(client)["id"]


def test_create_without_body_defaults_name_to_empty(client):
    response = client.post("/v1/teams")
    assert response.status_code == 200
    assert response.get_json()["name"] == ""


def test_create_with_empty_object_defaults_name_to_empty(client):
    response = client.post("/v1/teams", json={})
    assert response.status_code == 200
    assert response.get_json()["name"] == ""


def test_body_is_json_whatever_the_content_type(client):
    response = client.post("/v1/teams", data='{"name": "Growth"}', content_type="text/plain")
    assert response.status_code == 200
    assert response.get_json()["name"] == "Growth"


@pytest.mark.parametrize("body", ["[]", '"Platform"', "null", "{", '{"name": "a", "name": "b"}'])
def test_create_rejects_a_body_that_is_not_a_json_object(client, body):
    assert_error(client.post("/v1/teams", data=body, content_type="application/json"), 400)


def test_create_ignores_unknown_and_read_only_fields(client, clock):
    fake_id = str(uuid.uuid4())
    body = {"name": "Infra", "id": fake_id, "created_at": "2000-01-01T00:00:00Z",
            "modified_at": "2000-01-01T00:00:00Z", "objective_id": "x", "colour": "red"}
    response = client.post("/v1/teams", json=body)
    assert response.status_code == 200
    team = response.get_json()
    assert set(team) == TEAM_FIELDS
    assert team["id"] != fake_id
    assert team["created_at"] == clock.now
    assert_error(client.get(f"/v1/teams/{fake_id}"), 404)


# --- names ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a" * 200, "é" * 200, "🚀" * 200])
def test_name_of_200_characters_is_accepted(client, name):
    team = make_team(client, name)
    assert team["name"] == name
    assert get_team(client, team["id"])["name"] == name


@pytest.mark.parametrize("name", ["a" * 201, "🚀" * 201])
def test_name_of_201_characters_is_rejected_on_create(client, name):
    assert_error(client.post("/v1/teams", json={"name": name}), 400, "name")
    assert client.get("/v1/teams").get_json()["teams"] == []


def test_name_of_201_characters_is_rejected_on_update(client):
    team = make_team(client, "Platform")
    assert_error(client.post(f"/v1/teams/{team['id']}", json={"name": "a" * 201}), 400, "name")
    assert get_team(client, team["id"])["name"] == "Platform"


def test_update_accepts_a_200_character_name(client):
    team = make_team(client)
    response = client.post(f"/v1/teams/{team['id']}", json={"name": "b" * 200})
    assert response.status_code == 200
    assert response.get_json()["name"] == "b" * 200


@pytest.mark.parametrize("name", [5, 1.5, True, False, [], ["Platform"], {}, {"text": "Platform"}])
def test_non_string_name_is_rejected(client, name):
    assert_error(client.post("/v1/teams", json={"name": name}), 400, "name")
    team = make_team(client, "Platform")
    assert_error(client.post(f"/v1/teams/{team['id']}", json={"name": name}), 400, "name")
    assert get_team(client, team["id"])["name"] == "Platform"


def test_null_name_is_rejected_on_create(client):
    assert_error(client.post("/v1/teams", json={"name": None}), 400, "name")


def test_null_name_is_rejected_on_update(client):
    team = make_team(client, "Platform")
    assert_error(client.post(f"/v1/teams/{team['id']}", json={"name": None}), 400, "name")
    assert get_team(client, team["id"])["name"] == "Platform"


@pytest.mark.parametrize("name", ["\x00", "Platform\x00", "\x00Platform"])
def test_name_with_nul_is_rejected(client, name):
    assert_error(client.post("/v1/teams", json={"name": name}), 400, "name")
    team = make_team(client, "Platform")
    assert_error(client.post(f"/v1/teams/{team['id']}", json={"name": name}), 400, "name")
    assert get_team(client, team["id"])["name"] == "Platform"


@pytest.mark.parametrize("name", UNICODE_NAMES)
def test_unicode_name_round_trips_exactly(client, name):
    team = make_team(client, name)
    assert team["name"] == name
    assert get_team(client, team["id"])["name"] == name
    assert client.get("/v1/teams").get_json()["teams"][0]["name"] == name
    renamed = client.post(f"/v1/teams/{team['id']}", json={"name": name + "!"}).get_json()
    assert renamed["name"] == name + "!"


# --- get and update -------------------------------------------------------------------


def test_get_returns_the_created_team(client):
    team = make_team(client, "Design")
    assert get_team(client, team["id"]) == team


def test_update_renames(client):
    team = make_team(client, "Platform")
    response = client.post(f"/v1/teams/{team['id']}", json={"name": "Platform (revised)"})
    assert response.status_code == 200
    assert response.get_json() == {**team, "name": "Platform (revised)"}
    assert get_team(client, team["id"]) == {**team, "name": "Platform (revised)"}


@pytest.mark.parametrize("kwargs", [{}, {"json": {}}, {"json": {"title": "Growth"}}])
def test_update_requires_name(client, kwargs):
    team = make_team(client, "Platform")
    assert_error(client.post(f"/v1/teams/{team['id']}", **kwargs), 400, "name")
    assert get_team(client, team["id"])["name"] == "Platform"


def test_update_allows_empty_name(client):
    team = make_team(client, "Platform")
    response = client.post(f"/v1/teams/{team['id']}", json={"name": ""})
    assert response.status_code == 200
    assert response.get_json()["name"] == ""
    assert get_team(client, team["id"])["name"] == ""


def test_update_keeps_created_at(client, clock):
    clock.now = "2026-01-01T00:00:00Z"
    team = make_team(client)
    clock.now = "2026-06-30T12:00:00Z"
    updated = client.post(f"/v1/teams/{team['id']}", json={"name": "later"}).get_json()
    assert updated["created_at"] == "2026-01-01T00:00:00Z"
    assert get_team(client, team["id"])["created_at"] == "2026-01-01T00:00:00Z"


def test_update_ignores_read_only_fields_so_a_fetched_team_can_be_sent_back(client):
    team = make_team(client, "Platform")
    sent = {**team, "name": "Platform 2", "id": str(uuid.uuid4()),
            "created_at": "2000-01-01T00:00:00Z", "modified_at": "2000-01-01T00:00:00Z",
            "extra": [1, 2]}
    response = client.post(f"/v1/teams/{team['id']}", json=sent)
    assert response.status_code == 200
    assert response.get_json() == {**team, "name": "Platform 2"}


# --- unknown ids ----------------------------------------------------------------------


@pytest.mark.parametrize("team_id", UNKNOWN_IDS)
def test_unknown_or_malformed_id_is_404(client, team_id):
    make_team(client)
    assert_error(client.get(f"/v1/teams/{team_id}"), 404)
    assert_error(client.post(f"/v1/teams/{team_id}", json={"name": "x"}), 404)
    assert_error(client.delete(f"/v1/teams/{team_id}"), 404)


def test_uppercased_id_of_an_existing_team_is_404(client):
    team = make_team(client)
    assert_error(client.get(f"/v1/teams/{team['id'].upper()}"), 404)


# --- delete ---------------------------------------------------------------------------


def test_delete_returns_200_with_empty_body_then_404(client):
    team = make_team(client)
    response = client.delete(f"/v1/teams/{team['id']}")
    assert response.status_code == 200
    assert response.data == b""
    assert_error(client.get(f"/v1/teams/{team['id']}"), 404)
    assert_error(client.post(f"/v1/teams/{team['id']}", json={"name": "x"}), 404)
    assert_error(client.delete(f"/v1/teams/{team['id']}"), 404)


def test_delete_leaves_other_teams(client):
    doomed, kept = make_team(client, "doomed"), make_team(client, "kept")
    assert client.delete(f"/v1/teams/{doomed['id']}").status_code == 200
    assert client.get("/v1/teams").get_json() == {"next_page_token": None, "teams": [kept]}


def test_delete_leaves_its_objectives_with_team_id_null(client):
    cycle = make_cycle(client)
    doomed, kept = make_team(client, "doomed"), make_team(client, "kept")
    orphans = [make_objective(client, cycle["id"], name=n, team_id=doomed["id"]) for n in "ab"]
    other = make_objective(client, cycle["id"], name="other", team_id=kept["id"])

    assert client.delete(f"/v1/teams/{doomed['id']}").status_code == 200

    for objective in orphans:
        fetched = client.get(f"/v1/objectives/{objective['id']}").get_json()
        assert fetched["team_id"] is None
        assert {**fetched, "team_id": objective["team_id"], "modified_at": None} == {
            **objective, "modified_at": None}
    assert client.get(f"/v1/objectives/{other['id']}").get_json()["team_id"] == kept["id"]
    listed = client.get("/v1/objectives", query_string={"cycle_id": cycle["id"]}).get_json()
    assert [o["team_id"] for o in listed["objectives"]] == [None, None, kept["id"]]


def test_deleted_team_can_no_longer_be_assigned(client):
    cycle, team = make_cycle(client), make_team(client)
    assert client.delete(f"/v1/teams/{team['id']}").status_code == 200
    body = {"name": "o", "cycle_id": cycle["id"], "is_company": False, "is_personal": False,
            "team_id": team["id"]}
    assert_error(client.post("/v1/objectives", json=body), 400, "team_id")


# --- list -----------------------------------------------------------------------------


def test_list_is_empty_without_teams(client):
    response = client.get("/v1/teams")
    assert response.status_code == 200
    assert response.get_json() == {"next_page_token": None, "teams": []}


def test_list_returns_all_teams_in_creation_order(client):
    teams = [make_team(client, name) for name in ("b", "a", "c")]
    body = client.get("/v1/teams").get_json()
    assert body == {"next_page_token": None, "teams": teams}
    assert all(set(team) == TEAM_FIELDS for team in body["teams"])


def test_list_shows_renamed_team_in_its_original_place(client):
    first, second = make_team(client, "first"), make_team(client, "second")
    client.post(f"/v1/teams/{first['id']}", json={"name": "renamed"})
    names = [t["name"] for t in client.get("/v1/teams").get_json()["teams"]]
    assert names == ["renamed", "second"]
