"""Objectives: /v1/objectives, as the spec and CONTRACT.md describe them."""
import json

import pytest

import okr.api.objectives

from helpers import (
    OBJECTIVE_FIELDS,
    TIMESTAMP,
    UUID4,
    assert_error,
    make_cycle,
    make_key_result,
    make_objective,
    make_team,
    make_user,
)

MISSING_ID = "00000000-0000-4000-8000-000000000000"


def body_for(cycle_id, /, **fields):
    body = {"name": "Grow revenue", "cycle_id": cycle_id, "is_company": False, "is_personal": False}
    body.update(fields)
    return body


def create(client, body):
    return client.post("/v1/objectives", json=body)


def update(client, objective_id, body):
    return client.post(f"/v1/objectives/{objective_id}", json=body)


def fetch(client, objective_id):
    response = client.get(f"/v1/objectives/{objective_id}")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


# --- create and get ---------------------------------------------------------


def test_create_returns_exactly_the_spec_fields(client, cycle):
    response = create(client, body_for(cycle["id"], name="Win", description="Be first"))
    assert response.status_code == 200
    objective = response.get_json()
    assert set(objective) == OBJECTIVE_FIELDS
    assert UUID4.fullmatch(objective["id"])
    assert TIMESTAMP.fullmatch(objective["created_at"])
    assert objective["created_at"] == objective["modified_at"]
    assert objective == {
        "id": objective["id"],
        "name": "Win",
        "created_at": objective["created_at"],
        "modified_at": objective["modified_at"],
        "team_id": None,
        "assignee_id": None,
        "description": "Be first",
        "is_personal": False,
        "is_company": False,
        "parent_objective_id": None,
        "cycle_id": cycle["id"],
    }


def test_create_uses_the_current_time(client, clock, cycle):
    clock.now = "2026-03-04T05:06:07Z"
    objective = make_objective(client, cycle["id"])
    assert objective["created_at"] == objective["modified_at"] == "2026-03-04T05:06:07Z"


def test_get_returns_the_created_object(client, cycle):
    objective = make_objective(client, cycle["id"], is_company=True, description="d")
    assert fetch(client, objective["id"]) == objective


def test_each_create_gets_a_new_id(client, cycle):
    first = make_objective(client, cycle["id"])
    second = make_objective(client, cycle["id"])
    assert first["id"] != second["id"]


@pytest.mark.parametrize("flags", [
    {"is_company": True, "is_personal": False},
    {"is_company": False, "is_personal": True},
])
def test_create_stores_the_bools(client, cycle, flags):
    objective = make_objective(client, cycle["id"], **flags)
    assert {k: objective[k] for k in flags} == flags
    assert {k: fetch(client, objective["id"])[k] for k in flags} == flags


def test_existing_team_assignee_and_parent_are_accepted(client, runner, cycle):
    team = make_team(client)
    user = make_user(runner)
    parent = make_objective(client, cycle["id"], name="Parent")
    objective = make_objective(
        client, cycle["id"], team_id=team["id"], assignee_id=user["id"],
        parent_objective_id=parent["id"],
    )
    assert objective["team_id"] == team["id"]
    assert objective["assignee_id"] == user["id"]
    assert objective["parent_objective_id"] == parent["id"]
    assert fetch(client, objective["id"]) == objective


def test_parent_may_be_in_the_same_chain_on_create(client, cycle):
    a = make_objective(client, cycle["id"], name="A")
    b = make_objective(client, cycle["id"], name="B", parent_objective_id=a["id"])
    c = make_objective(client, cycle["id"], name="C", parent_objective_id=b["id"])
    assert c["parent_objective_id"] == b["id"]


# --- required fields and types on create ------------------------------------


@pytest.mark.parametrize("field", ["name", "cycle_id", "is_company", "is_personal"])
def test_create_requires_field(client, cycle, field):
    body = body_for(cycle["id"])
    del body[field]
    assert_error(create(client, body), 400, field)


def test_create_with_empty_body_names_every_required_field(client):
    response = client.post("/v1/objectives", data=b"")
    assert_error(response, 400, "name", "cycle_id", "is_company", "is_personal")


@pytest.mark.parametrize("field", ["is_company", "is_personal"])
@pytest.mark.parametrize("value", ["true", "false", 1, 0, None, [], {}])
def test_create_rejects_non_bool(client, cycle, field, value):
    assert_error(create(client, body_for(cycle["id"], **{field: value})), 400, field)


@pytest.mark.parametrize("field", ["name", "cycle_id"])
@pytest.mark.parametrize("value", [123, 1.5, True, None, ["x"], {"a": "b"}])
def test_create_rejects_non_string(client, cycle, field, value):
    assert_error(create(client, body_for(cycle["id"], **{field: value})), 400, field)


@pytest.mark.parametrize("field", ["description", "team_id", "assignee_id", "parent_objective_id"])
@pytest.mark.parametrize("value", [123, False, ["x"]])
def test_create_rejects_non_string_optional_field(client, cycle, field, value):
    assert_error(create(client, body_for(cycle["id"], **{field: value})), 400, field)


@pytest.mark.parametrize("name", ["", " ", "   \t\n ", "\u3000\u00a0"])
def test_create_rejects_blank_name(client, cycle, name):
    assert_error(create(client, body_for(cycle["id"], name=name)), 400, "name")


def test_name_of_500_characters_is_accepted(client, cycle):
    objective = make_objective(client, cycle["id"], name="n" * 500)
    assert fetch(client, objective["id"])["name"] == "n" * 500


def test_name_of_500_non_bmp_characters_is_accepted(client, cycle):
    objective = make_objective(client, cycle["id"], name="\U0001f600" * 500)
    assert fetch(client, objective["id"])["name"] == "\U0001f600" * 500


def test_name_of_501_characters_is_rejected(client, cycle):
    assert_error(create(client, body_for(cycle["id"], name="n" * 501)), 400, "name")


def test_name_is_stored_exactly_without_trimming(client, cycle):
    name = "  Grow  revenue \t"
    objective = make_objective(client, cycle["id"], name=name)
    assert objective["name"] == name
    assert fetch(client, objective["id"])["name"] == name


def test_unicode_comes_back_exactly(client, cycle):
    name = "Ca\u0301fe\u0301 \u00e9 \u4e2d\u6587 \U0001f680 \u200d"
    description = "line 1\nline 2\r\n\ttab \u202e rtl \U0001f9d1\u200d\U0001f4bb"
    objective = make_objective(client, cycle["id"], name=name, description=description)
    stored = fetch(client, objective["id"])
    assert (stored["name"], stored["description"]) == (name, description)


def test_description_of_10000_characters_is_accepted(client, cycle):
    objective = make_objective(client, cycle["id"], description="d" * 10_000)
    assert fetch(client, objective["id"])["description"] == "d" * 10_000


def test_description_of_10001_characters_is_rejected(client, cycle):
    response = create(client, body_for(cycle["id"], description="d" * 10_001))
    assert_error(response, 400, "description")


@pytest.mark.parametrize("field", ["name", "description"])
def test_nul_is_rejected(client, cycle, field):
    assert_error(create(client, body_for(cycle["id"], **{field: "a\x00b"})), 400, field)


def test_description_may_be_null(client, cycle):
    objective = make_objective(client, cycle["id"], description=None)
    assert objective["description"] is None


@pytest.mark.parametrize("field", ["team_id", "assignee_id", "parent_objective_id"])
def test_optional_references_may_be_null(client, cycle, field):
    objective = make_objective(client, cycle["id"], **{field: None})
    assert objective[field] is None


def test_company_and_personal_together_are_rejected_on_create(client, cycle):
    response = create(client, body_for(cycle["id"], is_company=True, is_personal=True))
    body = assert_error(response, 400)
    assert {"is_company", "is_personal"} & set(body.get("details", {})), body


def test_rejected_create_stores_nothing(client, cycle):
    create(client, body_for(cycle["id"], is_company=True, is_personal=True))
    create(client, body_for(cycle["id"], team_id=MISSING_ID))
    listing = client.get(f"/v1/objectives?cycle_id={cycle['id']}").get_json()
    assert listing["objectives"] == []


# --- references --------------------------------------------------------------


@pytest.mark.parametrize("field", ["cycle_id", "team_id", "assignee_id", "parent_objective_id"])
@pytest.mark.parametrize("value", [MISSING_ID, "not-a-uuid", "x" * 101])
def test_unknown_reference_is_rejected_on_create(client, cycle, field, value):
    assert_error(create(client, body_for(cycle["id"], **{field: value})), 400, field)


@pytest.mark.parametrize("field", ["cycle_id", "team_id", "assignee_id", "parent_objective_id"])
def test_unknown_reference_is_rejected_on_update(client, cycle, field):
    objective = make_objective(client, cycle["id"])
    response = update(client, objective["id"], body_for(cycle["id"], **{field: MISSING_ID}))
    assert_error(response, 400, field)


def test_every_unknown_reference_is_named(client):
    body = body_for(MISSING_ID, team_id=MISSING_ID, assignee_id=MISSING_ID,
                    parent_objective_id=MISSING_ID)
    response = create(client, body)
    assert_error(response, 400, "cycle_id", "team_id", "assignee_id", "parent_objective_id")


def test_references_to_other_kinds_of_resource_are_rejected(client, runner, cycle):
    # A team's id is not a user's id, and a cycle's id is not an objective's.
    team = make_team(client)
    user = make_user(runner)
    body = body_for(team["id"], team_id=user["id"], assignee_id=team["id"],
                    parent_objective_id=cycle["id"])
    assert_error(create(client, body), 400, "cycle_id", "team_id", "assignee_id",
                 "parent_objective_id")


def test_deleted_parent_cannot_be_referenced(client, cycle):
    parent = make_objective(client, cycle["id"])
    client.delete(f"/v1/objectives/{parent['id']}")
    response = create(client, body_for(cycle["id"], parent_objective_id=parent["id"]))
    assert_error(response, 400, "parent_objective_id")


# --- alignment loops ---------------------------------------------------------


def test_objective_cannot_be_its_own_parent(client, cycle):
    objective = make_objective(client, cycle["id"])
    response = update(client, objective["id"], body_for(cycle["id"], parent_objective_id=objective["id"]))
    assert_error(response, 400, "parent_objective_id")
    assert fetch(client, objective["id"])["parent_objective_id"] is None


def test_two_objective_loop_is_rejected(client, cycle):
    a = make_objective(client, cycle["id"], name="A")
    b = make_objective(client, cycle["id"], name="B", parent_objective_id=a["id"])
    response = update(client, a["id"], body_for(cycle["id"], name="A", parent_objective_id=b["id"]))
    assert_error(response, 400, "parent_objective_id")


def test_longer_loop_is_rejected(client, cycle):
    a = make_objective(client, cycle["id"], name="A")
    b = make_objective(client, cycle["id"], name="B", parent_objective_id=a["id"])
    c = make_objective(client, cycle["id"], name="C", parent_objective_id=b["id"])
    response = update(client, a["id"], body_for(cycle["id"], name="A", parent_objective_id=c["id"]))
    assert_error(response, 400, "parent_objective_id")
    assert fetch(client, a["id"])["parent_objective_id"] is None


def test_valid_reparenting_works(client, cycle):
    a = make_objective(client, cycle["id"], name="A")
    b = make_objective(client, cycle["id"], name="B", parent_objective_id=a["id"])
    c = make_objective(client, cycle["id"], name="C", parent_objective_id=b["id"])
    response = update(client, c["id"], body_for(cycle["id"], name="C", parent_objective_id=a["id"]))
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["parent_objective_id"] == a["id"]
    assert fetch(client, c["id"])["parent_objective_id"] == a["id"]


def test_reparenting_the_root_under_an_unrelated_objective_works(client, cycle):
    a = make_objective(client, cycle["id"], name="A")
    make_objective(client, cycle["id"], name="B", parent_objective_id=a["id"])
    other = make_objective(client, cycle["id"], name="Other")
    response = update(client, a["id"], body_for(cycle["id"], name="A", parent_objective_id=other["id"]))
    assert response.status_code == 200, response.get_json()
    assert fetch(client, a["id"])["parent_objective_id"] == other["id"]


def test_keeping_the_same_parent_on_update_works(client, cycle):
    a = make_objective(client, cycle["id"], name="A")
    b = make_objective(client, cycle["id"], name="B", parent_objective_id=a["id"])
    response = update(client, b["id"], body_for(cycle["id"], name="B2", parent_objective_id=a["id"]))
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["parent_objective_id"] == a["id"]


# --- update --------------------------------------------------------------------


def test_update_returns_and_stores_the_new_values(client, runner, cycle):
    team = make_team(client)
    user = make_user(runner)
    parent = make_objective(client, cycle["id"], name="Parent")
    objective = make_objective(client, cycle["id"])
    body = body_for(cycle["id"], name="New name", description="New", is_personal=True,
                    team_id=team["id"], assignee_id=user["id"], parent_objective_id=parent["id"])
    response = update(client, objective["id"], body)
    assert response.status_code == 200
    updated = response.get_json()
    assert set(updated) == OBJECTIVE_FIELDS
    assert updated["id"] == objective["id"]
    assert {k: updated[k] for k in body} == body
    assert fetch(client, objective["id"]) == updated


def test_update_is_a_full_replacement(client, runner, cycle):
    team = make_team(client)
    user = make_user(runner)
    parent = make_objective(client, cycle["id"], name="Parent")
    objective = make_objective(
        client, cycle["id"], is_company=True, description="Old", team_id=team["id"],
        assignee_id=user["id"], parent_objective_id=parent["id"],
    )
    response = update(client, objective["id"], {"name": "Only name", "cycle_id": cycle["id"]})
    assert response.status_code == 200, response.get_json()
    expected = {
        "name": "Only name", "cycle_id": cycle["id"], "is_company": False, "is_personal": False,
        "description": None, "team_id": None, "assignee_id": None, "parent_objective_id": None,
    }
    for got in (response.get_json(), fetch(client, objective["id"])):
        assert {k: got[k] for k in expected} == expected


def test_omitted_is_personal_becomes_false_on_update(client, cycle):
    objective = make_objective(client, cycle["id"], is_personal=True)
    response = update(client, objective["id"], {"name": "N", "cycle_id": cycle["id"]})
    assert response.status_code == 200, response.get_json()
    assert fetch(client, objective["id"])["is_personal"] is False


def test_update_can_swap_company_for_personal(client, cycle):
    objective = make_objective(client, cycle["id"], is_company=True)
    response = update(client, objective["id"], {"name": "N", "cycle_id": cycle["id"], "is_personal": True})
    assert response.status_code == 200, response.get_json()
    stored = fetch(client, objective["id"])
    assert (stored["is_company"], stored["is_personal"]) == (False, True)


@pytest.mark.parametrize("field", ["name", "cycle_id"])
def test_update_requires_field(client, cycle, field):
    objective = make_objective(client, cycle["id"])
    body = body_for(cycle["id"])
    del body[field]
    assert_error(update(client, objective["id"], body), 400, field)


def test_update_with_empty_body_names_name_and_cycle_id(client, cycle):
    objective = make_objective(client, cycle["id"])
    response = client.post(f"/v1/objectives/{objective['id']}", data=b"")
    assert_error(response, 400, "name", "cycle_id")


@pytest.mark.parametrize("field,value", [
    ("name", "   "), ("name", "n" * 501), ("name", 7), ("name", None), ("name", "a\x00"),
    ("cycle_id", None), ("cycle_id", 7), ("description", "d" * 10_001), ("description", "\x00"),
    ("is_company", "true"), ("is_company", None), ("is_company", 1), ("is_personal", 0),
])
def test_update_validates_like_create(client, cycle, field, value):
    objective = make_objective(client, cycle["id"])
    assert_error(update(client, objective["id"], body_for(cycle["id"], **{field: value})), 400, field)


def test_company_and_personal_together_are_rejected_on_update(client, cycle):
    objective = make_objective(client, cycle["id"], is_company=True)
    response = update(client, objective["id"], body_for(cycle["id"], is_company=True, is_personal=True))
    body = assert_error(response, 400)
    assert {"is_company", "is_personal"} & set(body.get("details", {})), body
    assert fetch(client, objective["id"])["is_personal"] is False


def test_update_can_move_the_objective_to_another_cycle(client, cycle):
    other = make_cycle(client, "Q2")
    objective = make_objective(client, cycle["id"])
    response = update(client, objective["id"], body_for(other["id"]))
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["cycle_id"] == other["id"]
    assert fetch(client, objective["id"])["cycle_id"] == other["id"]
    old = client.get(f"/v1/objectives?cycle_id={cycle['id']}").get_json()["objectives"]
    new = client.get(f"/v1/objectives?cycle_id={other['id']}").get_json()["objectives"]
    assert old == []
    assert [o["id"] for o in new] == [objective["id"]]


def test_moving_an_objective_takes_its_key_results_along(client, cycle):
    other = make_cycle(client, "Q2")
    objective = make_objective(client, cycle["id"])
    key_result = make_key_result(client, objective["id"])
    response = update(client, objective["id"], body_for(other["id"]))
    assert response.status_code == 200, response.get_json()
    old = client.get(f"/v1/keyresults?cycle_id={cycle['id']}").get_json()["keyresults"]
    new = client.get(f"/v1/keyresults?cycle_id={other['id']}").get_json()["keyresults"]
    assert old == []
    assert [k["id"] for k in new] == [key_result["id"]]


def test_update_keeps_created_at_and_moves_modified_at(client, clock, cycle):
    clock.now = "2026-01-01T00:00:00Z"
    objective = make_objective(client, cycle["id"])
    clock.now = "2026-02-03T04:05:06Z"
    response = update(client, objective["id"], body_for(cycle["id"], name="Renamed"))
    assert response.status_code == 200, response.get_json()
    updated = response.get_json()
    assert updated["created_at"] == "2026-01-01T00:00:00Z"
    assert updated["modified_at"] == "2026-02-03T04:05:06Z"
    assert fetch(client, objective["id"]) == updated


def test_unchanged_update_still_moves_modified_at(client, clock, cycle):
    clock.now = "2026-01-01T00:00:00Z"
    objective = make_objective(client, cycle["id"])
    clock.now = "2026-01-01T00:00:01Z"
    update(client, objective["id"], body_for(cycle["id"]))
    assert fetch(client, objective["id"])["modified_at"] == "2026-01-01T00:00:01Z"


def test_fetched_object_can_be_sent_back(client, clock, cycle):
    clock.now = "2026-01-01T00:00:00Z"
    objective = make_objective(client, cycle["id"], description="d", is_company=True)
    clock.now = "2026-01-02T00:00:00Z"
    sent = dict(fetch(client, objective["id"]), name="Changed")
    response = update(client, objective["id"], sent)
    assert response.status_code == 200, response.get_json()
    assert response.get_json() == dict(sent, modified_at="2026-01-02T00:00:00Z")


def test_read_only_and_unknown_fields_are_ignored_on_update(client, clock, cycle):
    clock.now = "2026-01-01T00:00:00Z"
    objective = make_objective(client, cycle["id"])
    clock.now = "2026-01-02T00:00:00Z"
    body = body_for(cycle["id"], name="Changed", id=MISSING_ID, created_at="1999-01-01T00:00:00Z",
                    modified_at="1999-01-01T00:00:00Z", colour="blue", key_results=[{"x": 1}])
    response = update(client, objective["id"], body)
    assert response.status_code == 200, response.get_json()
    updated = response.get_json()
    assert set(updated) == OBJECTIVE_FIELDS
    assert updated["id"] == objective["id"]
    assert updated["created_at"] == "2026-01-01T00:00:00Z"
    assert updated["modified_at"] == "2026-01-02T00:00:00Z"
    assert_error(client.get(f"/v1/objectives/{MISSING_ID}"), 404)


def test_read_only_and_unknown_fields_are_ignored_on_create(client, clock, cycle):
    clock.now = "2026-01-01T00:00:00Z"
    body = body_for(cycle["id"], id=MISSING_ID, created_at="1999-01-01T00:00:00Z",
                    modified_at="1999-01-01T00:00:00Z", objective_id=MISSING_ID, extra=True)
    response = create(client, body)
    assert response.status_code == 200, response.get_json()
    objective = response.get_json()
    assert set(objective) == OBJECTIVE_FIELDS
    assert objective["id"] != MISSING_ID
    assert objective["created_at"] == objective["modified_at"] == "2026-01-01T00:00:00Z"


def test_failed_update_leaves_the_objective_unchanged(client, clock, cycle):
    clock.now = "2026-01-01T00:00:00Z"
    objective = make_objective(client, cycle["id"], description="Old", is_company=True)
    clock.now = "2026-01-02T00:00:00Z"
    body = body_for(cycle["id"], name="New", description="New", team_id=MISSING_ID)
    assert_error(update(client, objective["id"], body), 400, "team_id")
    assert fetch(client, objective["id"]) == objective


def test_failed_loop_update_leaves_the_objective_unchanged(client, clock, cycle):
    clock.now = "2026-01-01T00:00:00Z"
    a = make_objective(client, cycle["id"], name="A")
    b = make_objective(client, cycle["id"], name="B", parent_objective_id=a["id"])
    clock.now = "2026-01-02T00:00:00Z"
    body = body_for(cycle["id"], name="A renamed", parent_objective_id=b["id"])
    assert_error(update(client, a["id"], body), 400, "parent_objective_id")
    assert fetch(client, a["id"]) == a


def fail_after_writing(*args):
    raise RuntimeError("injected failure after the write")


def test_update_failing_after_its_write_is_rolled_back(client, monkeypatch, cycle):
    objective = make_objective(client, cycle["id"])
    monkeypatch.setattr(okr.api.objectives, "objective_json", fail_after_writing)
    response = update(client, objective["id"], body_for(cycle["id"], name="Half done"))
    body = assert_error(response, 500)
    assert "Traceback" not in body["message"] and "injected" not in body["message"]
    monkeypatch.undo()
    assert fetch(client, objective["id"]) == objective


def test_create_failing_after_its_write_stores_nothing(client, monkeypatch, cycle):
    monkeypatch.setattr(okr.api.objectives, "objective_json", fail_after_writing)
    assert_error(create(client, body_for(cycle["id"])), 500)
    monkeypatch.undo()
    assert client.get(f"/v1/objectives?cycle_id={cycle['id']}").get_json()["objectives"] == []


def test_delete_failing_after_its_write_deletes_nothing(client, monkeypatch, cycle):
    objective = make_objective(client, cycle["id"])
    key_result = make_key_result(client, objective["id"])
    monkeypatch.setattr(okr.api.objectives, "deleted", fail_after_writing)
    assert_error(client.delete(f"/v1/objectives/{objective['id']}"), 500)
    monkeypatch.undo()
    assert fetch(client, objective["id"]) == objective
    assert client.get(f"/v1/keyresults/{key_result['id']}").status_code == 200


# --- request bodies ----------------------------------------------------------


def test_body_is_parsed_as_json_whatever_the_content_type(client, cycle):
    data = json.dumps(body_for(cycle["id"], name="Plain"))
    response = client.post("/v1/objectives", data=data, content_type="text/plain")
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["name"] == "Plain"


@pytest.mark.parametrize("data", [b"[]", b'"text"', b"42", b"null", b"{", b"{'name': 'x'}", b"\xff\xfe"])
def test_body_that_is_not_a_json_object_is_rejected(client, data):
    assert_error(client.post("/v1/objectives", data=data, content_type="application/json"), 400)


def test_body_that_is_not_a_json_object_is_rejected_on_update(client, cycle):
    objective = make_objective(client, cycle["id"])
    response = client.post(f"/v1/objectives/{objective['id']}", data=b"[]", content_type="application/json")
    assert_error(response, 400)
    assert fetch(client, objective["id"]) == objective


# --- list ----------------------------------------------------------------------


def test_list_requires_cycle_id(client):
    assert_error(client.get("/v1/objectives"), 400, "cycle_id")


def test_list_with_empty_cycle_id_is_rejected(client):
    assert_error(client.get("/v1/objectives?cycle_id="), 400, "cycle_id")


@pytest.mark.parametrize("cycle_id", [MISSING_ID, "not-a-uuid"])
def test_list_of_unknown_cycle_is_404(client, cycle_id):
    assert_error(client.get(f"/v1/objectives?cycle_id={cycle_id}"), 404)


def test_list_of_deleted_cycle_is_404(client, cycle):
    client.delete(f"/v1/cycles/{cycle['id']}")
    assert_error(client.get(f"/v1/objectives?cycle_id={cycle['id']}"), 404)


def test_list_of_empty_cycle(client, cycle):
    response = client.get(f"/v1/objectives?cycle_id={cycle['id']}")
    assert response.status_code == 200
    assert response.get_json() == {"next_page_token": None, "objectives": []}


def test_list_shows_only_that_cycles_objectives_in_creation_order(client, clock, cycle):
    other = make_cycle(client, "Q2")
    ours = []
    # Names and timestamps run against creation order, so only creation order passes.
    for index, name in enumerate(["delta", "alpha", "echo", "charlie", "bravo"]):
        clock.now = f"2026-01-0{9 - index}T00:00:00Z"
        ours.append(make_objective(client, cycle["id"], name=name))
        make_objective(client, other["id"], name=f"other {name}")
    response = client.get(f"/v1/objectives?cycle_id={cycle['id']}")
    assert response.status_code == 200
    assert response.get_json() == {"next_page_token": None, "objectives": ours}


def test_list_pages_through_the_cycle(client, cycle):
    made = [make_objective(client, cycle["id"], name=f"O{i}")["id"] for i in range(5)]
    seen, token, pages = [], None, 0
    while True:
        url = f"/v1/objectives?cycle_id={cycle['id']}&page_size=2"
        response = client.get(url + (f"&page_token={token}" if token else ""))
        assert response.status_code == 200, response.get_json()
        page = response.get_json()
        assert set(page) == {"next_page_token", "objectives"}
        seen += [o["id"] for o in page["objectives"]]
        pages += 1
        token = page["next_page_token"]
        if token is None:
            break
    assert seen == made
    assert pages == 3


def test_list_next_page_token_is_null_when_the_page_is_exactly_full(client, cycle):
    for i in range(2):
        make_objective(client, cycle["id"], name=f"O{i}")
    page = client.get(f"/v1/objectives?cycle_id={cycle['id']}&page_size=2").get_json()
    assert len(page["objectives"]) == 2
    assert page["next_page_token"] is None


@pytest.mark.parametrize("query,field", [
    ("page_token=%21%21%21", "page_token"), ("page_size=0", "page_size"),
    ("page_size=1001", "page_size"), ("page_size=abc", "page_size"),
])
def test_list_rejects_bad_paging_arguments(client, cycle, query, field):
    assert_error(client.get(f"/v1/objectives?cycle_id={cycle['id']}&{query}"), 400, field)


def test_list_reflects_updates_and_deletes(client, cycle):
    first = make_objective(client, cycle["id"], name="First")
    second = make_objective(client, cycle["id"], name="Second")
    update(client, first["id"], body_for(cycle["id"], name="First renamed"))
    client.delete(f"/v1/objectives/{second['id']}")
    listed = client.get(f"/v1/objectives?cycle_id={cycle['id']}").get_json()["objectives"]
    assert [o["name"] for o in listed] == ["First renamed"]
    assert listed[0] == fetch(client, first["id"])


# --- unknown objectives ------------------------------------------------------


@pytest.mark.parametrize("objective_id", [MISSING_ID, "not-a-uuid", "x" * 300])
def test_get_unknown_objective_is_404(client, objective_id):
    assert_error(client.get(f"/v1/objectives/{objective_id}"), 404)


@pytest.mark.parametrize("objective_id", [MISSING_ID, "not-a-uuid"])
def test_update_unknown_objective_is_404(client, cycle, objective_id):
    assert_error(update(client, objective_id, body_for(cycle["id"])), 404)


@pytest.mark.parametrize("objective_id", [MISSING_ID, "not-a-uuid"])
def test_delete_unknown_objective_is_404(client, objective_id):
    assert_error(client.delete(f"/v1/objectives/{objective_id}"), 404)


def test_update_of_unknown_objective_creates_nothing(client, cycle):
    update(client, MISSING_ID, body_for(cycle["id"]))
    assert_error(client.get(f"/v1/objectives/{MISSING_ID}"), 404)
    assert client.get(f"/v1/objectives?cycle_id={cycle['id']}").get_json()["objectives"] == []


def test_wrong_method_on_an_objective_is_405(client, cycle):
    objective = make_objective(client, cycle["id"])
    response = client.put(f"/v1/objectives/{objective['id']}", json=body_for(cycle["id"]))
    assert_error(response, 405)
    assert {"GET", "POST", "DELETE"} <= set(response.headers["Allow"].replace(" ", "").split(","))


# --- delete ------------------------------------------------------------------


def test_delete_returns_200_with_an_empty_body(client, cycle):
    objective = make_objective(client, cycle["id"])
    response = client.delete(f"/v1/objectives/{objective['id']}")
    assert response.status_code == 200
    assert response.get_data() == b""


def test_deleted_objective_is_gone(client, cycle):
    objective = make_objective(client, cycle["id"])
    client.delete(f"/v1/objectives/{objective['id']}")
    assert_error(client.get(f"/v1/objectives/{objective['id']}"), 404)
    assert_error(update(client, objective["id"], body_for(cycle["id"])), 404)
    assert client.get(f"/v1/objectives?cycle_id={cycle['id']}").get_json()["objectives"] == []


def test_delete_again_is_404(client, cycle):
    objective = make_objective(client, cycle["id"])
    assert client.delete(f"/v1/objectives/{objective['id']}").status_code == 200
    assert_error(client.delete(f"/v1/objectives/{objective['id']}"), 404)


def test_delete_removes_only_that_objective(client, cycle):
    doomed = make_objective(client, cycle["id"], name="Doomed")
    kept = make_objective(client, cycle["id"], name="Kept")
    client.delete(f"/v1/objectives/{doomed['id']}")
    assert fetch(client, kept["id"]) == kept


def test_delete_takes_the_key_results_with_it(client, cycle):
    objective = make_objective(client, cycle["id"])
    other = make_objective(client, cycle["id"], name="Other")
    doomed = [make_key_result(client, objective["id"], name=f"KR{i}") for i in range(2)]
    kept = make_key_result(client, other["id"])
    client.delete(f"/v1/objectives/{objective['id']}")
    for key_result in doomed:
        assert_error(client.get(f"/v1/keyresults/{key_result['id']}"), 404)
    assert client.get(f"/v1/keyresults/{kept['id']}").status_code == 200
    listed = client.get(f"/v1/keyresults?cycle_id={cycle['id']}").get_json()["keyresults"]
    assert [k["id"] for k in listed] == [kept["id"]]


def test_delete_leaves_children_without_a_parent(client, cycle):
    parent = make_objective(client, cycle["id"], name="Parent")
    child = make_objective(client, cycle["id"], name="Child", parent_objective_id=parent["id"])
    grandchild = make_objective(client, cycle["id"], name="Grandchild", parent_objective_id=child["id"])
    client.delete(f"/v1/objectives/{parent['id']}")
    assert fetch(client, child["id"]) == dict(child, parent_objective_id=None)
    assert fetch(client, grandchild["id"])["parent_objective_id"] == child["id"]


def test_deleting_a_team_leaves_its_objectives_without_a_team(client, cycle):
    team = make_team(client)
    objective = make_objective(client, cycle["id"], team_id=team["id"])
    assert client.delete(f"/v1/teams/{team['id']}").status_code == 200
    assert fetch(client, objective["id"]) == dict(objective, team_id=None)


def test_deleting_the_cycle_deletes_its_objectives_and_key_results(client, cycle):
    other = make_cycle(client, "Q2")
    parent = make_objective(client, cycle["id"], name="Parent")
    child = make_objective(client, cycle["id"], name="Child", parent_objective_id=parent["id"])
    key_result = make_key_result(client, child["id"])
    survivor = make_objective(client, other["id"], name="Survivor")
    survivor_kr = make_key_result(client, survivor["id"])
    assert client.delete(f"/v1/cycles/{cycle['id']}").status_code == 200
    for objective in (parent, child):
        assert_error(client.get(f"/v1/objectives/{objective['id']}"), 404)
    assert_error(client.get(f"/v1/keyresults/{key_result['id']}"), 404)
    assert fetch(client, survivor["id"]) == survivor
    assert client.get(f"/v1/keyresults/{survivor_kr['id']}").status_code == 200


def test_deleting_a_cycle_unlinks_children_in_other_cycles(client, cycle):
    other = make_cycle(client, "Q2")
    parent = make_objective(client, cycle["id"], name="Parent")
    child = make_objective(client, other["id"], name="Child", parent_objective_id=parent["id"])
    client.delete(f"/v1/cycles/{cycle['id']}")
    assert fetch(client, child["id"])["parent_objective_id"] is None
