"""Check-ins: POST and GET /v1/keyresults/{id}/checkins, and the ones key-result writes record."""
import sqlite3
import uuid
from contextlib import closing

import pytest

import okr.db

from helpers import (
    TIMESTAMP,
    UUID4,
    assert_error,
    fetch_key_result,
    make_cycle,
    make_key_result,
    make_objective,
    make_user,
    token_of,
)

CHECKIN_FIELDS = ["id", "key_result_id", "value", "confidence", "comment", "author_id", "created_at"]
UNKNOWN_IDS = (str(uuid.uuid4()), "not-an-id")


@pytest.fixture
def key_result_fields():
    return {"current_value": "10", "confidence": "0.8"}


@pytest.fixture
def clock_after_making():
    """The key result is made at the clock's start, which it still shows when a test begins."""
    return "2026-01-01T00:00:00Z"


def post_checkin(client, key_result_id, headers=None, **body):
    return client.post(f"/v1/keyresults/{key_result_id}/checkins", json=body, headers=headers or {})


def checkin(client, key_result_id, **body):
    response = post_checkin(client, key_result_id, **body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def list_page(client, key_result_id, **query):
    response = client.get(f"/v1/keyresults/{key_result_id}/checkins", query_string=query)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert list(body) == ["next_page_token", "checkins"]
    return body


def all_checkins(client, key_result_id):
    return list_page(client, key_result_id, page_size=1000)["checkins"]


def checkin_owner(app, key_result_id):
    """How the checkins table names a key result: (column, value); read while the key result exists.
    (The design keys check-ins on key_results.id; the code keys them on key_results.seq.)"""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(checkins)")}
        if "key_result_id" in columns:
            return "key_result_id", key_result_id
        [seq] = db.execute("SELECT seq FROM key_results WHERE id = ?", (key_result_id,)).fetchone()
        return "key_result_seq", seq


def stored_checkin_count(app, owner=None):
    """The rows in checkins: all of them, or those of one key result (an owner from checkin_owner)."""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        if owner is None:
            return db.execute("SELECT count(*) FROM checkins").fetchone()[0]
        column, value = owner
        return db.execute(f"SELECT count(*) FROM checkins WHERE {column} = ?", (value,)).fetchone()[0]


# --- POST -----------------------------------------------------------------------------------


def test_post_answers_exactly_the_seven_fields_in_order(client, key_result, clock):
    clock.now = "2026-02-03T04:05:06Z"
    response = post_checkin(client, key_result["id"], value="42", confidence="0.7", comment="Going well")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert list(body) == CHECKIN_FIELDS
    assert UUID4.fullmatch(body["id"])
    assert body == {
        "id": body["id"],
        "key_result_id": key_result["id"],
        "value": "42.00",
        "confidence": "0.70",
        "comment": "Going well",
        "author_id": None,
        "created_at": "2026-02-03T04:05:06Z",
    }
    # the order on the wire too, not only in the parsed object
    text = response.get_data(as_text=True)
    positions = [text.index(f'"{field}"') for field in CHECKIN_FIELDS]
    assert positions == sorted(positions)


def test_post_sets_the_key_results_value_confidence_and_modified_at(client, key_result, clock):
    clock.now = "2026-02-03T04:05:06Z"
    checkin(client, key_result["id"], value="42", confidence="0.7")
    after = fetch_key_result(client, key_result["id"])
    assert (after["current_value"], after["confidence"]) == ("42.00", "0.70")
    assert after["modified_at"] == "2026-02-03T04:05:06Z"
    assert after["created_at"] == key_result["created_at"] == "2026-01-01T00:00:00Z"
    unchanged = ("name", "type", "objective_id", "target_value_min", "target_value_max")
    assert {k: after[k] for k in unchanged} == {k: key_result[k] for k in unchanged}


def test_each_checkin_gets_a_new_id(client, key_result):
    first = checkin(client, key_result["id"], value="1")
    second = checkin(client, key_result["id"], value="1")
    assert first["id"] != second["id"]


def test_confidence_defaults_to_the_key_results_present_confidence(client, key_result):
    assert key_result["confidence"] == "0.80"
    assert checkin(client, key_result["id"], value="11")["confidence"] == "0.80"
    checkin(client, key_result["id"], value="12", confidence="0.3")
    # the present confidence, not the one the key result was created with
    assert checkin(client, key_result["id"], value="13")["confidence"] == "0.30"
    assert fetch_key_result(client, key_result["id"])["confidence"] == "0.30"


def test_comment_and_author_are_stored(client, runner, key_result):
    user = make_user(runner)
    made = checkin(client, key_result["id"], value="5", comment="x" * 10_000, author_id=user["id"])
    assert (made["comment"], made["author_id"]) == ("x" * 10_000, user["id"])
    assert all_checkins(client, key_result["id"])[-1] == made


def test_comment_and_author_may_be_null(client, key_result):
    made = checkin(client, key_result["id"], value="5", comment=None, author_id=None)
    assert (made["comment"], made["author_id"]) == (None, None)


@pytest.mark.parametrize(("value", "expected"), [
    (12.5, "12.50"), ("12.5", "12.50"), ("0.5", "0.50"), (7, "7.00"), ("-3", "-3.00"),
    ("1e3", "1000.00"), ("0.125", "0.125"), ("1.500", "1.50"), ("0", "0.00"),
])
def test_value_is_canonicalised_like_other_decimals(client, key_result, value, expected):
    made = checkin(client, key_result["id"], value=value)
    assert made["value"] == expected
    assert fetch_key_result(client, key_result["id"])["current_value"] == expected
    assert all_checkins(client, key_result["id"])[-1]["value"] == expected


@pytest.mark.parametrize(("confidence", "expected"), [
    ("0.5", "0.50"), (0.5, "0.50"), (1, "1.00"), ("0", "0.00"), ("1.000", "1.00"), ("0.125", "0.125"),
])
def test_confidence_is_canonicalised_like_other_decimals(client, key_result, confidence, expected):
    made = checkin(client, key_result["id"], value="1", confidence=confidence)
    assert made["confidence"] == expected
    assert fetch_key_result(client, key_result["id"])["confidence"] == expected


# --- POST: bad input ------------------------------------------------------------------------


def assert_nothing_changed(client, key_result, checkins_before):
    assert fetch_key_result(client, key_result["id"]) == key_result
    assert all_checkins(client, key_result["id"]) == checkins_before


@pytest.mark.parametrize("value", [
    "abc", "", " 1", "1.0000001", "NaN", "Infinity", "1e15", "1,5", True, False, None, [1], {"v": 1},
])
def test_bad_value_is_400_naming_value(client, key_result, clock, value):
    before = all_checkins(client, key_result["id"])
    clock.now = "2026-05-05T00:00:00Z"
    assert_error(post_checkin(client, key_result["id"], value=value), 400, "value")
    assert_nothing_changed(client, key_result, before)


def test_missing_value_is_400_naming_value(client, key_result):
    before = all_checkins(client, key_result["id"])
    assert_error(post_checkin(client, key_result["id"], confidence="0.5"), 400, "value")
    assert_error(client.post(f"/v1/keyresults/{key_result['id']}/checkins", data=b""), 400, "value")
    assert_nothing_changed(client, key_result, before)


@pytest.mark.parametrize("confidence", ["-0.01", "1.01", "2", -1, 1.5, "abc", "", True, [0.5], {"c": 1}])
def test_bad_confidence_is_400_naming_confidence(client, key_result, clock, confidence):
    before = all_checkins(client, key_result["id"])
    clock.now = "2026-05-05T00:00:00Z"
    assert_error(post_checkin(client, key_result["id"], value="1", confidence=confidence), 400, "confidence")
    assert_nothing_changed(client, key_result, before)


@pytest.mark.parametrize("comment", [pytest.param("x" * 10_001, id="10001-chars"), 5, True, ["note"], {"text": "note"}])
def test_bad_comment_is_400_naming_comment(client, key_result, clock, comment):
    before = all_checkins(client, key_result["id"])
    clock.now = "2026-05-05T00:00:00Z"
    assert_error(post_checkin(client, key_result["id"], value="1", comment=comment), 400, "comment")
    assert_nothing_changed(client, key_result, before)


@pytest.mark.parametrize("author_id", [str(uuid.uuid4()), "not-a-user", 5, True, ["id"], {"id": "x"}])
def test_bad_author_is_400_naming_author_id_and_changes_nothing(client, runner, key_result, clock, author_id):
    make_user(runner)  # a user exists, but not this one
    before = all_checkins(client, key_result["id"])
    clock.now = "2026-05-05T00:00:00Z"
    response = post_checkin(client, key_result["id"], value="99", confidence="0.1", author_id=author_id)
    assert_error(response, 400, "author_id")
    # One request is one transaction: the key result keeps its value, confidence and modified_at.
    assert_nothing_changed(client, key_result, before)


def test_a_failed_checkin_leaves_no_row_behind(app, client, key_result, clock):
    clock.now = "2026-05-05T00:00:00Z"
    owner = checkin_owner(app, key_result["id"])
    count = stored_checkin_count(app, owner)
    assert_error(post_checkin(client, key_result["id"], value="99", author_id=str(uuid.uuid4())), 400, "author_id")
    assert stored_checkin_count(app, owner) == count == 1
    assert stored_checkin_count(app) == 1
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        row = db.execute("SELECT current_value, confidence, modified_at FROM key_results WHERE id = ?",
                         (key_result["id"],)).fetchone()
    assert row == ("10.00", "0.80", "2026-01-01T00:00:00Z")


def test_a_checkin_failing_after_its_writes_is_rolled_back(app, client, key_result, clock, monkeypatch):
    """One request is one transaction: a failure after the check-in and the key result were written
    leaves neither."""
    import okr.store.checkins
    before = all_checkins(client, key_result["id"])
    real_record = okr.store.checkins.record
    failed = []

    def record_then_fail(*args, **kwargs):
        real_record(*args, **kwargs)  # the view's last write: the key result is already moved
        db = okr.db.get_db()
        assert db.execute("SELECT count(*) FROM checkins").fetchone()[0] == 2
        assert db.execute("SELECT current_value FROM key_results WHERE id = ?",
                          (key_result["id"],)).fetchone()[0] == "99.00"
        failed.append(True)
        raise RuntimeError("injected failure after the writes")

    monkeypatch.setattr(okr.store.checkins, "record", record_then_fail)
    clock.now = "2026-05-05T00:00:00Z"
    assert_error(post_checkin(client, key_result["id"], value="99", confidence="0.1"), 500)
    assert failed, "the view never recorded the check-in through the store"
    monkeypatch.undo()
    assert_nothing_changed(client, key_result, before)
    assert stored_checkin_count(app) == 1


@pytest.mark.parametrize("key_result_id", UNKNOWN_IDS)
def test_post_to_an_unknown_key_result_is_404(client, key_result, key_result_id):
    assert post_checkin(client, key_result["id"], value="1").status_code == 200
    assert_error(post_checkin(client, key_result_id, value="1"), 404)
    assert len(all_checkins(client, key_result["id"])) == 2


@pytest.mark.parametrize("key_result_id", UNKNOWN_IDS)
def test_get_of_an_unknown_key_result_is_404(client, key_result, key_result_id):
    assert client.get(f"/v1/keyresults/{key_result['id']}/checkins").status_code == 200
    assert_error(client.get(f"/v1/keyresults/{key_result_id}/checkins"), 404)


def test_checkins_of_a_deleted_key_result_are_404(client, key_result):
    checkin(client, key_result["id"], value="1")
    assert client.delete(f"/v1/keyresults/{key_result['id']}").status_code == 200
    assert_error(client.get(f"/v1/keyresults/{key_result['id']}/checkins"), 404)
    assert_error(post_checkin(client, key_result["id"], value="1"), 404)


# --- If-Match -------------------------------------------------------------------------------


def test_post_honours_if_match_against_the_key_results_etag(client, key_result, clock):
    etag = client.get(f"/v1/keyresults/{key_result['id']}").headers.get("ETag")
    assert etag, "GET /v1/keyresults/{id} has no ETag"
    clock.now = "2026-02-01T00:00:00Z"
    assert post_checkin(client, key_result["id"], headers={"If-Match": etag}, value="20").status_code == 200
    changed = fetch_key_result(client, key_result["id"])
    before = all_checkins(client, key_result["id"])
    clock.now = "2026-03-01T00:00:00Z"
    assert_error(post_checkin(client, key_result["id"], headers={"If-Match": etag}, value="30"), 412)
    assert fetch_key_result(client, key_result["id"]) == changed
    assert all_checkins(client, key_result["id"]) == before
    assert post_checkin(client, key_result["id"], headers={"If-Match": "*"}, value="30").status_code == 200


# --- GET: listing and paging ----------------------------------------------------------------


def test_get_lists_in_creation_order(client, key_result, clock):
    made = []
    # timestamps and values run against creation order, so only creation order passes
    for n, when in enumerate(["2026-04-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-02-01T00:00:00Z"]):
        clock.now = when
        made.append(checkin(client, key_result["id"], value=str(30 - n)))
    listed = list_page(client, key_result["id"])
    assert listed["next_page_token"] is None
    first, *rest = listed["checkins"]
    assert rest == made
    assert all(list(c) == CHECKIN_FIELDS for c in listed["checkins"])
    assert first["value"] == "10.00"


def test_get_shows_only_that_key_results_checkins(client, objective, key_result):
    other = make_key_result(client, objective["id"], name="Other")
    mine = checkin(client, key_result["id"], value="1")
    theirs = checkin(client, other["id"], value="2")
    assert all_checkins(client, key_result["id"])[1:] == [mine]
    assert all_checkins(client, other["id"])[1:] == [theirs]


def test_get_pages_by_keyset(client, key_result):
    for n in range(6):
        checkin(client, key_result["id"], value=str(n))
    everything = all_checkins(client, key_result["id"])
    assert len(everything) == 7
    pages, token = [], None
    while True:
        query = {"page_size": 3, **({"page_token": token} if token else {})}
        body = list_page(client, key_result["id"], **query)
        pages.append(body["checkins"])
        token = body["next_page_token"]
        if token is None:
            break
        assert len(pages) < 10, "paging does not end"
    assert pages == [everything[0:3], everything[3:6], everything[6:7]]


def test_next_page_token_is_null_on_an_exactly_full_last_page(client, key_result):
    checkin(client, key_result["id"], value="1")
    first = list_page(client, key_result["id"], page_size=1)
    assert first["next_page_token"] is not None
    second = list_page(client, key_result["id"], page_size=1, page_token=first["next_page_token"])
    assert len(second["checkins"]) == 1
    assert second["next_page_token"] is None
    assert list_page(client, key_result["id"], page_size=2)["next_page_token"] is None


def test_paging_is_not_thrown_by_checkins_of_other_key_results(client, objective, key_result):
    other = make_key_result(client, objective["id"], name="Other")
    checkin(client, key_result["id"], value="1")
    first = list_page(client, key_result["id"], page_size=1)
    for n in range(3):
        checkin(client, other["id"], value=str(n))
    checkin(client, key_result["id"], value="2")
    second = list_page(client, key_result["id"], page_size=2, page_token=first["next_page_token"])
    assert [c["value"] for c in second["checkins"]] == ["1.00", "2.00"]
    assert second["next_page_token"] is None


@pytest.mark.parametrize("token", ["!!!", "ü", token_of("abc"), token_of("-1"), token_of("1.5")])
def test_bad_page_token_is_400(client, key_result, token):
    response = client.get(f"/v1/keyresults/{key_result['id']}/checkins", query_string={"page_token": token})
    assert_error(response, 400, "page_token")


@pytest.mark.parametrize("size", ["0", "-1", "abc", "1001", "1.5"])
def test_bad_page_size_is_400(client, key_result, size):
    response = client.get(f"/v1/keyresults/{key_result['id']}/checkins", query_string={"page_size": size})
    assert_error(response, 400, "page_size")


# --- check-ins that key-result writes record ------------------------------------------------


def test_creating_a_key_result_records_its_first_checkin(client, objective, clock):
    clock.now = "2026-06-07T08:09:10Z"
    made = make_key_result(client, objective["id"], current_value="12.5", confidence="0.9")
    [first] = all_checkins(client, made["id"])
    assert list(first) == CHECKIN_FIELDS
    assert UUID4.fullmatch(first["id"])
    assert first == {
        "id": first["id"],
        "key_result_id": made["id"],
        "value": "12.50",
        "confidence": "0.90",
        "comment": None,
        "author_id": None,
        "created_at": "2026-06-07T08:09:10Z",
    }


def test_a_key_result_with_defaults_records_them(client, objective):
    made = make_key_result(client, objective["id"], type="milestone", target_value_min=None)
    [first] = all_checkins(client, made["id"])
    assert (first["value"], first["confidence"]) == (made["current_value"], made["confidence"]) == ("0.00", "0.50")
    assert TIMESTAMP.fullmatch(first["created_at"])


def full_update(key_result, **changes):
    body = {k: key_result[k] for k in ("name", "type", "confidence", "current_value",
                                       "target_value_min", "target_value_max")}
    body.update(changes)
    return body


@pytest.mark.parametrize("changes", [
    {"current_value": "11"}, {"confidence": "0.25"}, {"current_value": "11", "confidence": "0.25"},
])
def test_post_update_that_changes_value_or_confidence_records_one(client, key_result, clock, changes):
    clock.now = "2026-07-01T00:00:00Z"
    response = client.post(f"/v1/keyresults/{key_result['id']}", json=full_update(key_result, **changes))
    assert response.status_code == 200, response.get_json()
    updated = response.get_json()
    checkins = all_checkins(client, key_result["id"])
    assert len(checkins) == 2
    assert checkins[1] == {
        "id": checkins[1]["id"],
        "key_result_id": key_result["id"],
        "value": updated["current_value"],
        "confidence": updated["confidence"],
        "comment": None,
        "author_id": None,
        "created_at": updated["modified_at"],
    }
    assert (checkins[1]["value"], checkins[1]["confidence"]) != ("10.00", "0.80")


@pytest.mark.parametrize("changes", [
    {"current_value": "11"}, {"confidence": "0.25"}, {"current_value": 11, "confidence": 0.25},
])
def test_patch_that_changes_value_or_confidence_records_one(client, key_result, clock, changes):
    clock.now = "2026-07-01T00:00:00Z"
    response = client.patch(f"/v1/keyresults/{key_result['id']}", json=changes)
    assert response.status_code == 200, response.get_json()
    updated = response.get_json()
    checkins = all_checkins(client, key_result["id"])
    assert len(checkins) == 2
    assert checkins[1] == {
        "id": checkins[1]["id"],
        "key_result_id": key_result["id"],
        "value": updated["current_value"],
        "confidence": updated["confidence"],
        "comment": None,
        "author_id": None,
        "created_at": "2026-07-01T00:00:00Z",
    }


def test_each_changing_update_records_one_more(client, key_result):
    client.patch(f"/v1/keyresults/{key_result['id']}", json={"current_value": "20"})
    client.patch(f"/v1/keyresults/{key_result['id']}", json={"confidence": "0.1"})
    client.post(f"/v1/keyresults/{key_result['id']}",
                json=full_update(fetch_key_result(client, key_result["id"]), current_value="30"))
    values = [(c["value"], c["confidence"]) for c in all_checkins(client, key_result["id"])]
    assert values == [("10.00", "0.80"), ("20.00", "0.80"), ("20.00", "0.10"), ("30.00", "0.10")]


@pytest.mark.parametrize("changes", [
    {"name": "Renamed"},
    {"current_value": "10.0"},
    {"current_value": 10, "confidence": "0.8"},
    {"confidence": "0.800", "name": "Renamed"},
    {"target_value_min": "200"},
    {},
])
def test_post_update_that_changes_neither_records_none(client, key_result, changes):
    response = client.post(f"/v1/keyresults/{key_result['id']}", json=full_update(key_result, **changes))
    assert response.status_code == 200, response.get_json()
    assert len(all_checkins(client, key_result["id"])) == 1


@pytest.mark.parametrize("changes", [
    {"name": "Renamed"},
    {"current_value": "10.0"},
    {"current_value": 10},
    {"confidence": "0.8", "current_value": "10.000"},
    {"target_value_min": "200"},
    {},
])
def test_patch_that_changes_neither_records_none(client, key_result, changes):
    response = client.patch(f"/v1/keyresults/{key_result['id']}", json=changes)
    assert response.status_code == 200, response.get_json()
    assert len(all_checkins(client, key_result["id"])) == 1


def test_stored_one_point_oh_oh_against_one_point_oh_records_none(client, objective):
    made = make_key_result(client, objective["id"], current_value="1", confidence="1")
    assert (made["current_value"], made["confidence"]) == ("1.00", "1.00")
    client.patch(f"/v1/keyresults/{made['id']}", json={"current_value": "1.0", "confidence": "1.0"})
    client.post(f"/v1/keyresults/{made['id']}", json=full_update(made, current_value="1.0", confidence="1.0"))
    assert len(all_checkins(client, made["id"])) == 1


def test_values_are_compared_as_decimals_not_as_text(app, client, key_result):
    """A value stored in another spelling (as an older release or a hand edit may leave it) is the
    same number as its canonical form: an update that keeps the number records no check-in."""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.execute("UPDATE key_results SET current_value = '10.0', confidence = '0.8' WHERE id = ?",
                   (key_result["id"],))
        db.commit()
    response = client.patch(f"/v1/keyresults/{key_result['id']}", json={"name": "Renamed"})
    assert response.status_code == 200, response.get_json()
    assert (response.get_json()["current_value"], response.get_json()["confidence"]) == ("10.00", "0.80")
    assert len(all_checkins(client, key_result["id"])) == 1


def test_a_failed_update_records_none(client, key_result):
    response = client.patch(f"/v1/keyresults/{key_result['id']}", json={"current_value": "5", "confidence": "7"})
    assert_error(response, 400, "confidence")
    assert len(all_checkins(client, key_result["id"])) == 1


# --- deletes --------------------------------------------------------------------------------


@pytest.fixture
def two_key_results(client, cycle, objective, key_result):
    """key_result with two check-ins of its own, and one of another objective in another cycle."""
    checkin(client, key_result["id"], value="11")
    checkin(client, key_result["id"], value="12")
    elsewhere = make_key_result(client, make_objective(client, make_cycle(client, "Q2")["id"])["id"])
    checkin(client, elsewhere["id"], value="3")
    return key_result, elsewhere


@pytest.mark.parametrize("deleting", ["keyresults", "objectives", "cycles"])
def test_deleting_a_key_result_its_objective_or_its_cycle_deletes_its_checkins(
        app, client, cycle, objective, two_key_results, deleting):
    key_result, elsewhere = two_key_results
    owner, other = checkin_owner(app, key_result["id"]), checkin_owner(app, elsewhere["id"])
    assert (stored_checkin_count(app, owner), stored_checkin_count(app, other)) == (3, 2)
    target = {"keyresults": key_result, "objectives": objective, "cycles": cycle}[deleting]
    assert client.delete(f"/v1/{deleting}/{target['id']}").status_code == 200
    assert stored_checkin_count(app, owner) == 0
    assert stored_checkin_count(app, other) == 2
    assert stored_checkin_count(app) == 2
    assert len(all_checkins(client, elsewhere["id"])) == 2


def test_a_deleted_author_leaves_the_checkin_without_one(app, client, runner, key_result):
    ada = make_user(runner)
    bob = make_user(runner, "Bob", "bob@example.com")
    by_ada = checkin(client, key_result["id"], value="20", comment="by Ada", author_id=ada["id"])
    by_bob = checkin(client, key_result["id"], value="21", comment="by Bob", author_id=bob["id"])
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("DELETE FROM users WHERE id = ?", (ada["id"],))
        db.commit()
    listed = all_checkins(client, key_result["id"])
    assert listed[1:] == [{**by_ada, "author_id": None}, by_bob]
    assert_error(post_checkin(client, key_result["id"], value="22", author_id=ada["id"]), 400, "author_id")


# --- end to end -----------------------------------------------------------------------------


@pytest.mark.slow
def test_checkins_end_to_end_over_real_http(live_server):
    cycle = live_server.post("/v1/cycles", {"name": "Q3"}).ok()
    objective = live_server.post("/v1/objectives", {"name": "Ship", "cycle_id": cycle["id"],
                                                    "is_company": False, "is_personal": False}).ok()
    key_result = live_server.post(f"/v1/objectives/{objective['id']}/keyresults",
                                  {"name": "Deploys", "type": "range", "target_value_min": "0",
                                   "target_value_max": "10", "current_value": "1"}).ok()
    path = f"/v1/keyresults/{key_result['id']}/checkins"
    first = live_server.post(path, {"value": 4, "confidence": "0.6", "comment": "four"})
    second = live_server.post(path, {"value": "7.5"})
    assert first.headers.get("Content-Type", "").startswith("application/json")
    first, second = first.ok(), second.ok()
    assert list(first) == CHECKIN_FIELDS
    assert (first["value"], first["confidence"], first["comment"]) == ("4.00", "0.60", "four")
    assert (second["value"], second["confidence"], second["comment"]) == ("7.50", "0.60", None)
    listing = live_server.get(path).ok()
    assert listing["next_page_token"] is None
    initial, *rest = listing["checkins"]
    assert (initial["value"], initial["confidence"]) == ("1.00", "0.50")
    assert rest == [first, second]
    after = live_server.get(f"/v1/keyresults/{key_result['id']}").ok()
    assert (after["current_value"], after["confidence"]) == ("7.50", "0.60")
    paged = live_server.get(f"{path}?page_size=2").ok()
    assert paged["checkins"] == listing["checkins"][:2]
    rest_page = live_server.get(f"{path}?page_size=2&page_token={paged['next_page_token']}").ok()
    assert rest_page == {"next_page_token": None, "checkins": [second]}
    assert live_server.get(f"/v1/keyresults/{uuid.uuid4()}/checkins").status == 404


def statements_steps(app, client, path, body):
    """How many SQLite virtual-machine steps (in thousands) POST path with body takes: work, counted, not timed."""
    steps = 0

    def count():
        nonlocal steps
        steps += 1

    connection = app.extensions["okr_connections"].db  # the test client's thread's, kept for the app's life
    connection.set_progress_handler(count, 1000)
    try:
        assert client.post(path, json=body).status_code == 200
    finally:
        connection.set_progress_handler(None, 0)
    return steps


@pytest.mark.slow
def test_a_checkin_and_a_key_result_update_cost_the_same_however_many_objectives_came_before(app, client, cycle):
    """Each looks its key result's objective up by id: none scans the objectives (a RETURNING clause once did,
    from the first objective to the key result's)."""
    def steps_of_writes():
        objective = make_objective(client, cycle["id"])
        key_result = make_key_result(client, objective["id"])
        checkin = f"/v1/keyresults/{key_result['id']}/checkins", {"value": "12"}
        update = f"/v1/keyresults/{key_result['id']}", {**{k: key_result[k] for k in (
            "name", "type", "target_value_min", "target_value_max", "confidence")}, "current_value": "13"}
        return [statements_steps(app, client, *checkin), statements_steps(app, client, *update)]

    first = steps_of_writes()
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.executemany(
            "INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, created_at, modified_at) "
            "VALUES (?, 'filler', 0, 0, ?, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
            [(str(uuid.uuid4()), cycle["id"]) for _ in range(20_000)])
    after_many = steps_of_writes()
    for steps_first, steps_after in zip(first, after_many):
        assert steps_after <= steps_first + 5, (first, after_many)
