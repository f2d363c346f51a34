"""Delivery cycles: /v1/cycles."""
import uuid

import pytest

from helpers import (
    CYCLE_FIELDS, TIMESTAMP, UUID4, assert_error, make_cycle, make_key_result, make_objective,
)

UNICODE_NAMES = [
    "Q1 🚀🎯",                      # emoji outside the BMP
    "👩‍👩‍👧‍👦 family",                  # ZWJ sequence
    "מחזור ראשון",                  # Hebrew, right to left
    "الربع الأول",                  # Arabic, right to left
    "\u202eevil\u202c",             # bidi override characters
    "Cafe\u0301 n\u0303",           # combining marks, not normalised
    "第一季度 目標",                  # CJK
    "  padded name\t",              # whitespace is kept, never trimmed
]
UNKNOWN_IDS = [
    str(uuid.uuid4()), str(uuid.uuid4()).upper(), "not-a-uuid", "0", "x" * 300, "%E2%98%83",
]


def get_cycle(client, cycle_id):
    response = client.get(f"/v1/cycles/{cycle_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


# --- create ---------------------------------------------------------------------------


def test_create_returns_exactly_the_spec_fields(client, clock):
    clock.now = "2026-03-04T05:06:07Z"
    response = client.post("/v1/cycles", json={"name": "Q1 2026"})
    assert response.status_code == 200
    cycle = response.get_json()
    assert set(cycle) == CYCLE_FIELDS
    assert UUID4.fullmatch(cycle["id"])
    assert cycle["name"] == "Q1 2026"
    assert cycle["created_at"] == "2026-03-04T05:06:07Z"


def test_created_at_is_rfc3339_utc_to_the_second(client):
    assert TIMESTAMP.fullmatch(make_cycle(client)["created_at"])


def test_each_cycle_gets_a_new_id(client):
    assert make_cycle(client)["id"] != make_cycle(client)["id"]


def test_create_without_body_defaults_name_to_empty(client):
    response = client.post("/v1/cycles")
    assert response.status_code == 200
    assert response.get_json()["name"] == ""


def test_create_with_empty_object_defaults_name_to_empty(client):
    response = client.post("/v1/cycles", json={})
    assert response.status_code == 200
    assert response.get_json()["name"] == ""


def test_body_is_json_whatever_the_content_type(client):
    response = client.post("/v1/cycles", data='{"name": "Q2"}', content_type="text/plain")
    assert response.status_code == 200
    assert response.get_json()["name"] == "Q2"


@pytest.mark.parametrize("body", ["[]", '"Q1"', "null", "{", '{"name": "a", "name": "b"}'])
def test_create_rejects_a_body_that_is_not_a_json_object(client, body):
    assert_error(client.post("/v1/cycles", data=body, content_type="application/json"), 400)


def test_create_ignores_unknown_and_read_only_fields(client, clock):
    fake_id = str(uuid.uuid4())
    body = {"name": "Q3", "id": fake_id, "created_at": "2000-01-01T00:00:00Z",
            "modified_at": "2000-01-01T00:00:00Z", "objective_id": "x", "colour": "red"}
    response = client.post("/v1/cycles", json=body)
    assert response.status_code == 200
    cycle = response.get_json()
    assert set(cycle) == CYCLE_FIELDS
    assert cycle["id"] != fake_id
    assert cycle["created_at"] == clock.now
    assert_error(client.get(f"/v1/cycles/{fake_id}"), 404)


# --- names ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a" * 200, "é" * 200, "🚀" * 200])
def test_name_of_200_characters_is_accepted(client, name):
    cycle = make_cycle(client, name)
    assert cycle["name"] == name
    assert get_cycle(client, cycle["id"])["name"] == name


@pytest.mark.parametrize("name", ["a" * 201, "🚀" * 201])
def test_name_of_201_characters_is_rejected_on_create(client, name):
    assert_error(client.post("/v1/cycles", json={"name": name}), 400, "name")
    assert client.get("/v1/cycles").get_json()["cycles"] == []


def test_name_of_201_characters_is_rejected_on_update(client):
    cycle = make_cycle(client, "Q1")
    assert_error(client.post(f"/v1/cycles/{cycle['id']}", json={"name": "a" * 201}), 400, "name")
    assert get_cycle(client, cycle["id"])["name"] == "Q1"


def test_update_accepts_a_200_character_name(client):
    cycle = make_cycle(client)
    response = client.post(f"/v1/cycles/{cycle['id']}", json={"name": "b" * 200})
    assert response.status_code == 200
    assert response.get_json()["name"] == "b" * 200


@pytest.mark.parametrize("name", [5, 1.5, True, False, [], ["Q1"], {}, {"text": "Q1"}])
def test_non_string_name_is_rejected(client, name):
    assert_error(client.post("/v1/cycles", json={"name": name}), 400, "name")
    cycle = make_cycle(client, "Q1")
    assert_error(client.post(f"/v1/cycles/{cycle['id']}", json={"name": name}), 400, "name")
    assert get_cycle(client, cycle["id"])["name"] == "Q1"


def test_null_name_is_rejected_on_create(client):
    assert_error(client.post("/v1/cycles", json={"name": None}), 400, "name")


def test_null_name_is_rejected_on_update(client):
    cycle = make_cycle(client, "Q1")
    assert_error(client.post(f"/v1/cycles/{cycle['id']}", json={"name": None}), 400, "name")
    assert get_cycle(client, cycle["id"])["name"] == "Q1"


@pytest.mark.parametrize("name", ["\x00", "Q1\x00", "\x00Q1"])
def test_name_with_nul_is_rejected(client, name):
    assert_error(client.post("/v1/cycles", json={"name": name}), 400, "name")
    cycle = make_cycle(client, "Q1")
    assert_error(client.post(f"/v1/cycles/{cycle['id']}", json={"name": name}), 400, "name")
    assert get_cycle(client, cycle["id"])["name"] == "Q1"


@pytest.mark.parametrize("name", UNICODE_NAMES)
def test_unicode_name_round_trips_exactly(client, name):
    cycle = make_cycle(client, name)
    assert cycle["name"] == name
    assert get_cycle(client, cycle["id"])["name"] == name
    assert client.get("/v1/cycles").get_json()["cycles"][0]["name"] == name
    renamed = client.post(f"/v1/cycles/{cycle['id']}", json={"name": name + "!"}).get_json()
    assert renamed["name"] == name + "!"


# --- get and update -------------------------------------------------------------------


def test_get_returns_the_created_cycle(client):
    cycle = make_cycle(client, "Q4")
    assert get_cycle(client, cycle["id"]) == cycle


def test_update_renames(client):
    cycle = make_cycle(client, "Q1")
    response = client.post(f"/v1/cycles/{cycle['id']}", json={"name": "Q1 (revised)"})
    assert response.status_code == 200
    assert response.get_json() == {**cycle, "name": "Q1 (revised)"}
    assert get_cycle(client, cycle["id"]) == {**cycle, "name": "Q1 (revised)"}


@pytest.mark.parametrize("kwargs", [{}, {"json": {}}, {"json": {"title": "Q2"}}])
def test_update_requires_name(client, kwargs):
    cycle = make_cycle(client, "Q1")
    assert_error(client.post(f"/v1/cycles/{cycle['id']}", **kwargs), 400, "name")
    assert get_cycle(client, cycle["id"])["name"] == "Q1"


def test_update_allows_empty_name(client):
    cycle = make_cycle(client, "Q1")
    response = client.post(f"/v1/cycles/{cycle['id']}", json={"name": ""})
    assert response.status_code == 200
    assert response.get_json()["name"] == ""
    assert get_cycle(client, cycle["id"])["name"] == ""


def test_update_keeps_created_at(client, clock):
    clock.now = "2026-01-01T00:00:00Z"
    cycle = make_cycle(client)
    clock.now = "2026-06-30T12:00:00Z"
    updated = client.post(f"/v1/cycles/{cycle['id']}", json={"name": "later"}).get_json()
    assert updated["created_at"] == "2026-01-01T00:00:00Z"
    assert get_cycle(client, cycle["id"])["created_at"] == "2026-01-01T00:00:00Z"


def test_update_ignores_read_only_fields_so_a_fetched_cycle_can_be_sent_back(client):
    cycle = make_cycle(client, "Q1")
    sent = {**cycle, "name": "Q1b", "id": str(uuid.uuid4()),
            "created_at": "2000-01-01T00:00:00Z", "modified_at": "2000-01-01T00:00:00Z",
            "extra": [1, 2]}
    response = client.post(f"/v1/cycles/{cycle['id']}", json=sent)
    assert response.status_code == 200
    assert response.get_json() == {**cycle, "name": "Q1b"}


# --- unknown ids ----------------------------------------------------------------------


@pytest.mark.parametrize("cycle_id", UNKNOWN_IDS)
def test_unknown_or_malformed_id_is_404(client, cycle_id):
    make_cycle(client)
    assert_error(client.get(f"/v1/cycles/{cycle_id}"), 404)
    assert_error(client.post(f"/v1/cycles/{cycle_id}", json={"name": "x"}), 404)
    assert_error(client.delete(f"/v1/cycles/{cycle_id}"), 404)


def test_uppercased_id_of_an_existing_cycle_is_404(client):
    cycle = make_cycle(client)
    assert_error(client.get(f"/v1/cycles/{cycle['id'].upper()}"), 404)


# --- delete ---------------------------------------------------------------------------


def test_delete_returns_200_with_empty_body_then_404(client):
    cycle = make_cycle(client)
    response = client.delete(f"/v1/cycles/{cycle['id']}")
    assert response.status_code == 200
    assert response.data == b""
    assert_error(client.get(f"/v1/cycles/{cycle['id']}"), 404)
    assert_error(client.post(f"/v1/cycles/{cycle['id']}", json={"name": "x"}), 404)
    assert_error(client.delete(f"/v1/cycles/{cycle['id']}"), 404)


def test_delete_leaves_other_cycles(client):
    doomed, kept = make_cycle(client, "doomed"), make_cycle(client, "kept")
    assert client.delete(f"/v1/cycles/{doomed['id']}").status_code == 200
    assert client.get("/v1/cycles").get_json() == {"next_page_token": None, "cycles": [kept]}


def test_delete_removes_its_objectives_and_their_key_results(client):
    doomed, kept = make_cycle(client, "doomed"), make_cycle(client, "kept")
    objectives = [make_objective(client, doomed["id"], name=f"o{i}") for i in range(2)]
    key_results = [make_key_result(client, o["id"]) for o in objectives]
    other = make_objective(client, kept["id"])
    other_key_result = make_key_result(client, other["id"])

    assert client.delete(f"/v1/cycles/{doomed['id']}").status_code == 200

    for objective in objectives:
        assert_error(client.get(f"/v1/objectives/{objective['id']}"), 404)
        assert_error(client.get(f"/v1/objectives/{objective['id']}/keyresults"), 404)
    for key_result in key_results:
        assert_error(client.get(f"/v1/keyresults/{key_result['id']}"), 404)
    assert_error(client.get("/v1/objectives", query_string={"cycle_id": doomed["id"]}), 404)
    assert client.get(f"/v1/objectives/{other['id']}").get_json() == other
    assert client.get(f"/v1/keyresults/{other_key_result['id']}").get_json() == other_key_result
    listed = client.get("/v1/keyresults", query_string={"cycle_id": kept["id"]}).get_json()
    assert listed == {"next_page_token": None, "keyresults": [other_key_result]}


def test_delete_keeps_children_in_other_cycles_without_their_parent(client):
    doomed, kept = make_cycle(client, "doomed"), make_cycle(client, "kept")
    parent = make_objective(client, doomed["id"], name="parent")
    child = make_objective(client, kept["id"], name="child", parent_objective_id=parent["id"])
    assert client.delete(f"/v1/cycles/{doomed['id']}").status_code == 200
    assert client.get(f"/v1/objectives/{child['id']}").get_json()["parent_objective_id"] is None


# --- list -----------------------------------------------------------------------------


def test_list_is_empty_without_cycles(client):
    response = client.get("/v1/cycles")
    assert response.status_code == 200
    assert response.get_json() == {"next_page_token": None, "cycles": []}


def test_list_returns_all_cycles_in_creation_order(client):
    cycles = [make_cycle(client, name) for name in ("b", "a", "c")]
    body = client.get("/v1/cycles").get_json()
    assert body == {"next_page_token": None, "cycles": cycles}
    assert all(set(cycle) == CYCLE_FIELDS for cycle in body["cycles"])


def test_list_shows_renamed_cycle_in_its_original_place(client):
    first, second = make_cycle(client, "first"), make_cycle(client, "second")
    client.post(f"/v1/cycles/{first['id']}", json={"name": "renamed"})
    names = [c["name"] for c in client.get("/v1/cycles").get_json()["cycles"]]
    assert names == ["renamed", "second"]
