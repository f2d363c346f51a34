"""What cycles (/v1/cycles) and teams (/v1/teams) share: both are bare named resources.

Every test here runs once per resource through the parametrized `resource` fixture;
what only one of them does lives in test_cycles.py or test_teams.py.
"""
import uuid
from typing import Callable, NamedTuple

import pytest

from helpers import CYCLE_FIELDS, TEAM_FIELDS, TIMESTAMP, UUID4, assert_error, make_cycle, make_team


class Resource(NamedTuple):
    plural: str        # the path segment and the key of the list response
    fields: set
    make: Callable     # make(client, name=sample) -> the created record
    sample: str        # the make helper's default name
    other: str         # a second plausible name

    def url(self, resource_id=None):
        return f"/v1/{self.plural}" if resource_id is None else f"/v1/{self.plural}/{resource_id}"

    def get(self, client, resource_id):
        response = client.get(self.url(resource_id))
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    def listed(self, client):
        return client.get(self.url()).get_json()[self.plural]


RESOURCES = [
    Resource("cycles", CYCLE_FIELDS, make_cycle, sample="Q1", other="Q2"),
    Resource("teams", TEAM_FIELDS, make_team, sample="Platform", other="Growth"),
]
SAMPLES = [r.sample for r in RESOURCES]

UNICODE_NAMES = [
    "Q1 🚀🎯",                      # emoji outside the BMP
    "Team 🚀🎯",
    "👩‍👩‍👧‍👦 family",                  # ZWJ sequence
    "מחזור ראשון",                  # Hebrew, right to left
    "צוות הפלטפורמה",
    "الربع الأول",                  # Arabic, right to left
    "فريق المنصة",
    "\u202eevil\u202c",             # bidi override characters
    "Cafe\u0301 n\u0303",           # combining marks, not normalised
    "第一季度 目標",                  # CJK
    "平台团队 チーム",
    "  padded name\t",              # whitespace is kept, never trimmed
]
UNKNOWN_IDS = [
    str(uuid.uuid4()), str(uuid.uuid4()).upper(), "not-a-uuid", "0", "x" * 300, "%E2%98%83",
]


@pytest.fixture(params=RESOURCES, ids=[r.plural for r in RESOURCES])
def resource(request):
    return request.param


# --- create ---------------------------------------------------------------------------


def test_create_returns_exactly_the_spec_fields(client, clock, resource):
    clock.now = "2026-03-04T05:06:07Z"
    name = f"{resource.sample} 2026"
    response = client.post(resource.url(), json={"name": name})
    assert response.status_code == 200
    record = response.get_json()
    assert set(record) == resource.fields
    assert UUID4.fullmatch(record["id"])
    assert record["name"] == name
    assert record["created_at"] == "2026-03-04T05:06:07Z"


def test_created_at_is_rfc3339_utc_to_the_second(client, resource):
    assert TIMESTAMP.fullmatch(resource.make(client)["created_at"])


def test_each_record_gets_a_new_id(client, resource):
    assert resource.make(client)["id"] != resource.make(client)["id"]


def test_create_without_body_defaults_name_to_empty(client, resource):
    response = client.post(resource.url())
    assert response.status_code == 200
    assert response.get_json()["name"] == ""


def test_create_with_empty_object_defaults_name_to_empty(client, resource):
    response = client.post(resource.url(), json={})
    assert response.status_code == 200
    assert response.get_json()["name"] == ""


def test_body_is_json_whatever_the_content_type(client, resource):
    data = f'{{"name": "{resource.other}"}}'
    response = client.post(resource.url(), data=data, content_type="text/plain")
    assert response.status_code == 200
    assert response.get_json()["name"] == resource.other


@pytest.mark.parametrize(
    "body", ["[]", *(f'"{s}"' for s in SAMPLES), "null", "{", '{"name": "a", "name": "b"}'])
def test_create_rejects_a_body_that_is_not_a_json_object(client, resource, body):
    assert_error(client.post(resource.url(), data=body, content_type="application/json"), 400)


def test_create_ignores_unknown_and_read_only_fields(client, clock, resource):
    fake_id = str(uuid.uuid4())
    body = {"name": resource.other, "id": fake_id, "created_at": "2000-01-01T00:00:00Z",
            "modified_at": "2000-01-01T00:00:00Z", "objective_id": "x", "colour": "red"}
    response = client.post(resource.url(), json=body)
    assert response.status_code == 200
    record = response.get_json()
    assert set(record) == resource.fields
    assert record["id"] != fake_id
    assert record["created_at"] == clock.now
    assert_error(client.get(resource.url(fake_id)), 404)


# --- names ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a" * 200, "é" * 200, "🚀" * 200])
def test_name_of_200_characters_is_accepted(client, resource, name):
    record = resource.make(client, name)
    assert record["name"] == name
    assert resource.get(client, record["id"])["name"] == name


@pytest.mark.parametrize("name", ["a" * 201, "🚀" * 201])
def test_name_of_201_characters_is_rejected_on_create(client, resource, name):
    assert_error(client.post(resource.url(), json={"name": name}), 400, "name")
    assert resource.listed(client) == []


def test_name_of_201_characters_is_rejected_on_update(client, resource):
    record = resource.make(client, resource.sample)
    assert_error(client.post(resource.url(record["id"]), json={"name": "a" * 201}), 400, "name")
    assert resource.get(client, record["id"])["name"] == resource.sample


def test_update_accepts_a_200_character_name(client, resource):
    record = resource.make(client)
    response = client.post(resource.url(record["id"]), json={"name": "b" * 200})
    assert response.status_code == 200
    assert response.get_json()["name"] == "b" * 200


def assert_name_rejected_on_create_and_update(client, resource, name):
    assert_error(client.post(resource.url(), json={"name": name}), 400, "name")
    record = resource.make(client, resource.sample)
    assert_error(client.post(resource.url(record["id"]), json={"name": name}), 400, "name")
    assert resource.get(client, record["id"])["name"] == resource.sample


@pytest.mark.parametrize("name", [
    5, 1.5, True, False, [], *([s] for s in SAMPLES), {}, *({"text": s} for s in SAMPLES),
])
def test_non_string_name_is_rejected(client, resource, name):
    assert_name_rejected_on_create_and_update(client, resource, name)


def test_null_name_is_rejected_on_create(client, resource):
    assert_error(client.post(resource.url(), json={"name": None}), 400, "name")


def test_null_name_is_rejected_on_update(client, resource):
    record = resource.make(client, resource.sample)
    assert_error(client.post(resource.url(record["id"]), json={"name": None}), 400, "name")
    assert resource.get(client, record["id"])["name"] == resource.sample


@pytest.mark.parametrize(
    "name", ["\x00", *(f"{s}\x00" for s in SAMPLES), *(f"\x00{s}" for s in SAMPLES)])
def test_name_with_nul_is_rejected(client, resource, name):
    assert_name_rejected_on_create_and_update(client, resource, name)


@pytest.mark.parametrize("name", UNICODE_NAMES)
def test_unicode_name_round_trips_exactly(client, resource, name):
    record = resource.make(client, name)
    assert record["name"] == name
    assert resource.get(client, record["id"])["name"] == name
    assert resource.listed(client)[0]["name"] == name
    renamed = client.post(resource.url(record["id"]), json={"name": name + "!"}).get_json()
    assert renamed["name"] == name + "!"


# --- get and update -------------------------------------------------------------------


def test_get_returns_the_created_record(client, resource):
    record = resource.make(client, resource.other)
    assert resource.get(client, record["id"]) == record


def test_update_renames(client, resource):
    record = resource.make(client, resource.sample)
    revised = f"{resource.sample} (revised)"
    response = client.post(resource.url(record["id"]), json={"name": revised})
    assert response.status_code == 200
    assert response.get_json() == {**record, "name": revised}
    assert resource.get(client, record["id"]) == {**record, "name": revised}


@pytest.mark.parametrize(
    "kwargs", [{}, {"json": {}}, *({"json": {"title": r.other}} for r in RESOURCES)])
def test_update_requires_name(client, resource, kwargs):
    record = resource.make(client, resource.sample)
    assert_error(client.post(resource.url(record["id"]), **kwargs), 400, "name")
    assert resource.get(client, record["id"])["name"] == resource.sample


def test_update_allows_empty_name(client, resource):
    record = resource.make(client, resource.sample)
    response = client.post(resource.url(record["id"]), json={"name": ""})
    assert response.status_code == 200
    assert response.get_json()["name"] == ""
    assert resource.get(client, record["id"])["name"] == ""


def test_update_keeps_created_at(client, clock, resource):
    clock.now = "2026-01-01T00:00:00Z"
    record = resource.make(client)
    clock.now = "2026-06-30T12:00:00Z"
    updated = client.post(resource.url(record["id"]), json={"name": "later"}).get_json()
    assert updated["created_at"] == "2026-01-01T00:00:00Z"
    assert resource.get(client, record["id"])["created_at"] == "2026-01-01T00:00:00Z"


def test_update_ignores_read_only_fields_so_a_fetched_record_can_be_sent_back(client, resource):
    record = resource.make(client, resource.sample)
    renamed = f"{resource.sample} 2"
    sent = {**record, "name": renamed, "id": str(uuid.uuid4()),
            "created_at": "2000-01-01T00:00:00Z", "modified_at": "2000-01-01T00:00:00Z",
            "extra": [1, 2]}
    response = client.post(resource.url(record["id"]), json=sent)
    assert response.status_code == 200
    assert response.get_json() == {**record, "name": renamed}


# --- unknown ids ----------------------------------------------------------------------


@pytest.mark.parametrize("resource_id", UNKNOWN_IDS)
def test_unknown_or_malformed_id_is_404(client, resource, resource_id):
    resource.make(client)
    assert_error(client.get(resource.url(resource_id)), 404)
    assert_error(client.post(resource.url(resource_id), json={"name": "x"}), 404)
    assert_error(client.delete(resource.url(resource_id)), 404)


def test_uppercased_id_of_an_existing_record_is_404(client, resource):
    record = resource.make(client)
    assert_error(client.get(resource.url(record["id"].upper())), 404)


# --- delete ---------------------------------------------------------------------------


def test_delete_returns_200_with_empty_body_then_404(client, resource):
    record = resource.make(client)
    response = client.delete(resource.url(record["id"]))
    assert response.status_code == 200
    assert response.data == b""
    assert_error(client.get(resource.url(record["id"])), 404)
    assert_error(client.post(resource.url(record["id"]), json={"name": "x"}), 404)
    assert_error(client.delete(resource.url(record["id"])), 404)


def test_delete_leaves_other_records(client, resource):
    doomed, kept = resource.make(client, "doomed"), resource.make(client, "kept")
    assert client.delete(resource.url(doomed["id"])).status_code == 200
    body = client.get(resource.url()).get_json()
    assert body == {"next_page_token": None, resource.plural: [kept]}


# --- list -----------------------------------------------------------------------------


def test_list_is_empty_without_records(client, resource):
    response = client.get(resource.url())
    assert response.status_code == 200
    assert response.get_json() == {"next_page_token": None, resource.plural: []}


def test_list_returns_all_records_in_creation_order(client, resource):
    records = [resource.make(client, name) for name in ("b", "a", "c")]
    body = client.get(resource.url()).get_json()
    assert body == {"next_page_token": None, resource.plural: records}
    assert all(set(record) == resource.fields for record in body[resource.plural])


def test_list_shows_renamed_record_in_its_original_place(client, resource):
    first = resource.make(client, "first")
    resource.make(client, "second")
    client.post(resource.url(first["id"]), json={"name": "renamed"})
    names = [r["name"] for r in resource.listed(client)]
    assert names == ["renamed", "second"]
