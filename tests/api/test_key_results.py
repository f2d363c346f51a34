"""Key results: create, targets by type, full-replacement update, lists, delete."""
import uuid

import pytest

from helpers import (
    KEY_RESULT_FIELDS,
    TIMESTAMP,
    UUID4,
    assert_error,
    fetch_key_result,
    make_cycle,
    make_key_result,
    make_objective,
)

TYPES = ("milestone", "baseline", "range", "positive", "negative")
UNKNOWN_IDS = (str(uuid.uuid4()), "not-an-id")


def create(client, objective_id, **body):
    return client.post(f"/v1/objectives/{objective_id}/keyresults", json=body)


def update(client, key_result_id, **body):
    return client.post(f"/v1/keyresults/{key_result_id}", json=body)


def listed_ids(response):
    assert response.status_code == 200, response.get_json()
    return [key_result["id"] for key_result in response.get_json()["keyresults"]]


def cycle_list(client, cycle_id):
    return client.get("/v1/keyresults", query_string={"cycle_id": cycle_id})


def objective_list(client, objective_id):
    return client.get(f"/v1/objectives/{objective_id}/keyresults")


# --- create ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_create_returns_exactly_the_key_result_fields(client, objective, clock):
    clock.now = "2026-03-04T05:06:07Z"
    response = create(client, objective["id"], name="Ship it", type="positive",
                      target_value_min="10")
    assert response.status_code == 200
    body = response.get_json()
    assert set(body) == KEY_RESULT_FIELDS
    assert UUID4.fullmatch(body["id"])
    assert TIMESTAMP.fullmatch(body["created_at"])
    assert body["created_at"] == body["modified_at"] == "2026-03-04T05:06:07Z"
    assert body["objective_id"] == objective["id"]
    assert (body["name"], body["type"]) == ("Ship it", "positive")
    assert (body["target_value_min"], body["target_value_max"]) == ("10.00", None)
    assert fetch_key_result(client, body["id"]) == body


def test_each_create_gets_a_new_id(client, objective):
    first = make_key_result(client, objective["id"])
    second = make_key_result(client, objective["id"])
    assert first["id"] != second["id"]


@pytest.mark.parametrize("objective_id", UNKNOWN_IDS)
def test_create_under_unknown_objective_is_404(client, objective_id):
    response = create(client, objective_id, name="KR", type="baseline")
    assert_error(response, 404)


@pytest.mark.parametrize("field", ["name", "type"])
def test_create_requires_field(client, objective, field):
    body = {"name": "KR", "type": "baseline"}
    del body[field]
    assert_error(create(client, objective["id"], **body), 400, field)
    assert listed_ids(objective_list(client, objective["id"])) == []


def test_create_with_empty_body_names_name_and_type(client, objective):
    response = client.post(f"/v1/objectives/{objective['id']}/keyresults", data=b"")
    assert_error(response, 400, "name", "type")


@pytest.mark.parametrize("kind", ["", "Positive", "percent", "milestones", None, 1, ["range"]])
def test_create_rejects_type_outside_the_five(client, objective, kind):
    assert_error(create(client, objective["id"], name="KR", type=kind), 400, "type")


@pytest.mark.parametrize("name", ["", " ", " \t\n ", "a\x00b", "x" * 501, None, 5, ["KR"]])
def test_create_rejects_bad_name(client, objective, name):
    assert_error(create(client, objective["id"], name=name, type="baseline"), 400, "name")


@pytest.mark.parametrize("name", ["x" * 500, "  padded\t", "Ünïcødé ✓ 🚀"])
def test_create_stores_name_exactly(client, objective, name):
    key_result = make_key_result(client, objective["id"], name=name)
    assert fetch_key_result(client, key_result["id"])["name"] == name


def test_create_defaults_confidence_and_current_value(client, objective):
    key_result = make_key_result(client, objective["id"])
    assert key_result["confidence"] == "0.50"
    assert key_result["current_value"] == "0.00"


# --- target rules by type -------------------------------------------------------------------

VALID_TARGETS = [
    ("positive", {"target_value_min": "10"}, "10.00", None),
    ("positive", {"target_value_min": "10", "target_value_max": None}, "10.00", None),
    ("negative", {"target_value_min": "-5"}, "-5.00", None),
    ("negative", {"target_value_min": "3", "target_value_max": None}, "3.00", None),
    ("range", {"target_value_min": "1", "target_value_max": "5"}, "1.00", "5.00"),
    ("range", {"target_value_min": "3", "target_value_max": "3.0"}, "3.00", "3.00"),
    ("range", {"target_value_min": "9", "target_value_max": "10"}, "9.00", "10.00"),
    ("range", {"target_value_min": "-5", "target_value_max": "-1"}, "-5.00", "-1.00"),
    ("baseline", {}, None, None),
    ("baseline", {"target_value_min": None, "target_value_max": None}, None, None),
    ("milestone", {}, "1.00", None),
    ("milestone", {"target_value_min": "1"}, "1.00", None),
    ("milestone", {"target_value_min": 1}, "1.00", None),
    ("milestone", {"target_value_min": "1.000"}, "1.00", None),
    ("milestone", {"target_value_min": None, "target_value_max": None}, "1.00", None),
]

INVALID_TARGETS = [
    ("positive", {}, "target_value_min"),
    ("positive", {"target_value_min": None}, "target_value_min"),
    ("positive", {"target_value_min": "1", "target_value_max": "2"}, "target_value_max"),
    ("negative", {}, "target_value_min"),
    ("negative", {"target_value_min": None}, "target_value_min"),
    ("negative", {"target_value_min": "1", "target_value_max": "2"}, "target_value_max"),
    ("range", {}, "target_value_min"),
    ("range", {}, "target_value_max"),
    ("range", {"target_value_max": "5"}, "target_value_min"),
    ("range", {"target_value_min": "1"}, "target_value_max"),
    ("range", {"target_value_min": "1", "target_value_max": None}, "target_value_max"),
    ("baseline", {"target_value_min": "1"}, "target_value_min"),
    ("baseline", {"target_value_max": "1"}, "target_value_max"),
    ("baseline", {"target_value_min": "0"}, "target_value_min"),
    ("milestone", {"target_value_min": "2"}, "target_value_min"),
    ("milestone", {"target_value_min": 2}, "target_value_min"),
    ("milestone", {"target_value_min": "0"}, "target_value_min"),
    ("milestone", {"target_value_min": "1.000001"}, "target_value_min"),
    ("milestone", {"target_value_max": "1"}, "target_value_max"),
    ("milestone", {"target_value_min": "1", "target_value_max": "1"}, "target_value_max"),
]


@pytest.mark.parametrize("kind, targets, low, high", VALID_TARGETS)
def test_create_stores_targets_by_type(client, objective, kind, targets, low, high):
    response = create(client, objective["id"], name="KR", type=kind, **targets)
    assert response.status_code == 200, response.get_json()
    stored = fetch_key_result(client, response.get_json()["id"])
    assert (stored["target_value_min"], stored["target_value_max"]) == (low, high)


@pytest.mark.parametrize("kind, targets, field", INVALID_TARGETS)
def test_create_rejects_targets_the_type_forbids(client, objective, kind, targets, field):
    assert_error(create(client, objective["id"], name="KR", type=kind, **targets), 400, field)
    assert listed_ids(objective_list(client, objective["id"])) == []


def test_range_with_min_above_max_is_400(client, objective):
    response = create(client, objective["id"], name="KR", type="range",
                      target_value_min="10", target_value_max="9.99")
    body = assert_error(response, 400)
    assert {"target_value_min", "target_value_max"} & set(body.get("details", {})), body
    assert listed_ids(objective_list(client, objective["id"])) == []


# --- update ---------------------------------------------------------------------------------
# key_result (tests/conftest.py): positive, at 5 of a 10 target, confidence 0.9.


def test_update_is_a_full_replacement(client, key_result):
    response = update(client, key_result["id"], name="Renamed", type="baseline")
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert set(body) == KEY_RESULT_FIELDS
    assert body["name"] == "Renamed" and body["type"] == "baseline"
    assert body["confidence"] == "0.00"
    assert body["current_value"] == "0.00"
    assert body["target_value_min"] is None and body["target_value_max"] is None
    assert fetch_key_result(client, key_result["id"]) == body


def test_update_sets_every_sent_value(client, key_result):
    response = update(client, key_result["id"], name="New", type="negative", confidence="0.25",
                      current_value="7.5", target_value_min="2")
    body = response.get_json()
    assert (body["name"], body["type"], body["confidence"], body["current_value"],
            body["target_value_min"], body["target_value_max"]) == (
        "New", "negative", "0.25", "7.50", "2.00", None)


def test_positive_update_without_min_is_400(client, key_result):
    response = update(client, key_result["id"], name="Original", type="positive")
    assert_error(response, 400, "target_value_min")


def test_milestone_update_without_min_stores_one(client, key_result):
    response = update(client, key_result["id"], name="Original", type="milestone")
    assert response.status_code == 200, response.get_json()
    assert fetch_key_result(client, key_result["id"])["target_value_min"] == "1.00"
    assert fetch_key_result(client, key_result["id"])["target_value_max"] is None


@pytest.mark.parametrize("field", ["name", "type"])
def test_update_requires_field(client, key_result, field):
    body = {"name": "KR", "type": "positive", "target_value_min": "10"}
    del body[field]
    assert_error(update(client, key_result["id"], **body), 400, field)


def test_update_with_empty_body_names_name_and_type(client, key_result):
    response = client.post(f"/v1/keyresults/{key_result['id']}", data=b"")
    assert_error(response, 400, "name", "type")


@pytest.mark.parametrize("kind, targets, low, high", VALID_TARGETS)
def test_update_can_change_type_with_matching_targets(client, key_result, kind, targets, low,
                                                       high):
    response = update(client, key_result["id"], name="KR", type=kind, **targets)
    assert response.status_code == 200, response.get_json()
    stored = fetch_key_result(client, key_result["id"])
    assert (stored["type"], stored["target_value_min"], stored["target_value_max"]) == (
        kind, low, high)


@pytest.mark.parametrize("kind, targets, field", INVALID_TARGETS)
def test_update_rejects_targets_the_type_forbids(client, key_result, kind, targets, field):
    assert_error(update(client, key_result["id"], name="KR", type=kind, **targets), 400, field)
    assert fetch_key_result(client, key_result["id"]) == key_result


def test_update_ignores_read_only_fields(client, cycle, key_result):
    other = make_objective(client, cycle["id"], name="Other")
    body = dict(key_result, name="Renamed", objective_id=other["id"], id=str(uuid.uuid4()),
                created_at="2000-01-01T00:00:00Z", modified_at="2000-01-01T00:00:00Z")
    response = client.post(f"/v1/keyresults/{key_result['id']}", json=body)
    assert response.status_code == 200, response.get_json()
    updated = response.get_json()
    assert updated["name"] == "Renamed"
    assert updated["id"] == key_result["id"]
    assert updated["objective_id"] == key_result["objective_id"]
    assert updated["created_at"] == key_result["created_at"]
    assert updated["modified_at"] != "2000-01-01T00:00:00Z"
    assert listed_ids(objective_list(client, other["id"])) == []
    assert listed_ids(objective_list(client, key_result["objective_id"])) == [key_result["id"]]


def test_sending_back_a_fetched_key_result_changes_nothing_but_modified_at(client, key_result,
                                                                           clock):
    clock.now = "2030-01-01T00:00:00Z"
    response = client.post(f"/v1/keyresults/{key_result['id']}", json=key_result)
    assert response.status_code == 200, response.get_json()
    assert response.get_json() == dict(key_result, modified_at="2030-01-01T00:00:00Z")


def test_update_keeps_created_at_and_moves_modified_at(client, objective, clock):
    clock.now = "2026-01-01T00:00:00Z"
    key_result = make_key_result(client, objective["id"])
    for now in ("2026-02-02T12:34:56Z", "2026-03-03T00:00:01Z"):
        clock.now = now
        updated = update(client, key_result["id"], name="Again", type="baseline").get_json()
        assert updated["created_at"] == "2026-01-01T00:00:00Z"
        assert updated["modified_at"] == now
        assert fetch_key_result(client, key_result["id"]) == updated


@pytest.mark.parametrize("body", [
    {"type": "baseline"},
    {"name": "KR"},
    {"name": "   ", "type": "baseline"},
    {"name": "KR", "type": "baseline", "confidence": "1.5"},
    {"name": "KR", "type": "baseline", "current_value": "abc"},
    {"name": "KR", "type": "range", "target_value_min": "5", "target_value_max": "1"},
    {"name": "KR", "type": "baseline", "target_value_min": "1"},
    {"name": "KR", "type": "unknown"},
])
def test_failed_update_leaves_the_key_result_unchanged(client, key_result, clock, body):
    clock.now = "2031-01-01T00:00:00Z"
    assert_error(client.post(f"/v1/keyresults/{key_result['id']}", json=body), 400)
    assert fetch_key_result(client, key_result["id"]) == key_result


# --- lists ----------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "?cycle_id=", "?page_token=MQ"])
def test_cycle_list_requires_cycle_id(client, query):
    assert_error(client.get(f"/v1/keyresults{query}"), 400, "cycle_id")


@pytest.mark.parametrize("cycle_id", UNKNOWN_IDS)
def test_cycle_list_with_unknown_cycle_is_404(client, cycle_id):
    assert_error(cycle_list(client, cycle_id), 404)


def test_cycle_list_holds_that_cycles_key_results_in_creation_order(client):
    cycle_a, cycle_b = make_cycle(client, "A"), make_cycle(client, "B")
    first, second = make_objective(client, cycle_a["id"]), make_objective(client, cycle_a["id"])
    elsewhere = make_objective(client, cycle_b["id"])
    in_a, in_b = [], []
    for index, owner in enumerate([second, elsewhere, first, second, elsewhere, first, first,
                                   second, elsewhere, second]):
        created = make_key_result(client, owner["id"], name=f"kr {index}")
        (in_b if owner is elsewhere else in_a).append(created)
    response = cycle_list(client, cycle_a["id"])
    assert response.status_code == 200
    assert response.get_json() == {"next_page_token": None, "keyresults": in_a}
    assert listed_ids(cycle_list(client, cycle_b["id"])) == [kr["id"] for kr in in_b]


def test_cycle_list_of_a_cycle_without_key_results_is_empty(client, cycle, objective):
    response = cycle_list(client, cycle["id"])
    assert response.get_json() == {"next_page_token": None, "keyresults": []}


def test_key_results_follow_their_objective_to_a_new_cycle(client):
    cycle_a, cycle_b = make_cycle(client, "A"), make_cycle(client, "B")
    moving = make_objective(client, cycle_a["id"], name="Moving")
    staying = make_objective(client, cycle_a["id"], name="Staying")
    moved = make_key_result(client, moving["id"], name="moved")
    kept = make_key_result(client, staying["id"], name="kept")
    response = client.post(f"/v1/objectives/{moving['id']}",
                           json={"name": "Moving", "cycle_id": cycle_b["id"]})
    assert response.status_code == 200, response.get_json()
    assert listed_ids(cycle_list(client, cycle_a["id"])) == [kept["id"]]
    assert listed_ids(cycle_list(client, cycle_b["id"])) == [moved["id"]]
    assert fetch_key_result(client, moved["id"])["objective_id"] == moving["id"]


def test_objective_list_holds_only_that_objectives_key_results(client, cycle):
    mine, other = make_objective(client, cycle["id"]), make_objective(client, cycle["id"])
    expected = []
    for index in range(8):
        expected.append(make_key_result(client, mine["id"], name=f"mine {index}"))
        make_key_result(client, other["id"], name=f"other {index}")
    response = objective_list(client, mine["id"])
    assert response.status_code == 200
    assert response.get_json() == {"next_page_token": None, "keyresults": expected}


def test_objective_list_of_an_objective_without_key_results_is_empty(client, objective):
    response = objective_list(client, objective["id"])
    assert response.get_json() == {"next_page_token": None, "keyresults": []}


@pytest.mark.parametrize("objective_id", UNKNOWN_IDS)
def test_objective_list_with_unknown_objective_is_404(client, objective_id):
    assert_error(objective_list(client, objective_id), 404)


# --- unknown ids and delete -----------------------------------------------------------------


@pytest.mark.parametrize("key_result_id", UNKNOWN_IDS)
@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_unknown_key_result_is_404(client, objective, method, key_result_id):
    make_key_result(client, objective["id"])
    kwargs = {"json": {"name": "KR", "type": "baseline"}} if method == "post" else {}
    response = getattr(client, method)(f"/v1/keyresults/{key_result_id}", **kwargs)
    assert_error(response, 404)


def test_delete_returns_200_with_empty_body_then_404(client, cycle, objective):
    doomed = make_key_result(client, objective["id"], name="doomed")
    kept = make_key_result(client, objective["id"], name="kept")
    response = client.delete(f"/v1/keyresults/{doomed['id']}")
    assert response.status_code == 200
    assert response.get_data() == b""
    assert_error(client.get(f"/v1/keyresults/{doomed['id']}"), 404)
    assert_error(client.delete(f"/v1/keyresults/{doomed['id']}"), 404)
    assert_error(update(client, doomed["id"], name="KR", type="baseline"), 404)
    assert listed_ids(objective_list(client, objective["id"])) == [kept["id"]]
    assert listed_ids(cycle_list(client, cycle["id"])) == [kept["id"]]


def test_deleting_the_objective_deletes_its_key_results(client, cycle):
    doomed, other = make_objective(client, cycle["id"]), make_objective(client, cycle["id"])
    gone = [make_key_result(client, doomed["id"]) for _ in range(2)]
    kept = make_key_result(client, other["id"])
    assert client.delete(f"/v1/objectives/{doomed['id']}").status_code == 200
    for key_result in gone:
        assert_error(client.get(f"/v1/keyresults/{key_result['id']}"), 404)
    assert listed_ids(cycle_list(client, cycle["id"])) == [kept["id"]]
