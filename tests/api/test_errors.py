"""Every error, on every path, is {code, message, details?} JSON (contract: Errors, Validation)."""
import json
import logging
import sqlite3

import pytest

import okr.api.cycles
import okr.store.common
from helpers import assert_error, make_cycle, make_objective

MIB = 1024 * 1024


def nested_body(depth):
    """A JSON object whose nesting depth is `depth` (the object itself is level 1),
    the nesting sitting inside a field the service does not know."""
    assert depth >= 2
    inner = depth - 1
    return '{"name": "deep", "extra": ' + "[" * inner + "]" * inner + "}"


def post_raw(client, path, data, content_type="application/json"):
    return client.post(path, data=data, content_type=content_type)


# --- routing -----------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/v1/nothing", "/v1/cycles/x/y/z", "/v1", "/v1/", "/v1/cycles/"],
)
def test_unknown_route_is_json_404(client, path):
    assert_error(client.get(path), 404)


def test_unknown_route_with_post_is_json_404(client):
    assert_error(client.post("/v1/nothing", json={}), 404)


@pytest.mark.parametrize(
    "method, path, allowed",
    [
        ("put", "/v1/cycles", {"GET", "POST"}),
        ("delete", "/v1/cycles", {"GET", "POST"}),
        ("put", "/v1/cycles/{id}", {"GET", "POST", "PATCH", "DELETE"}),
        ("put", "/v1/keyresults/{id}", {"GET", "POST", "PATCH", "DELETE"}),
        ("delete", "/v1/users", {"GET"}),
        ("post", "/v1/users/{id}", {"GET"}),
        ("post", "/healthz", {"GET"}),
    ],
)
def test_wrong_method_is_405_with_allow_header(client, method, path, allowed):
    response = getattr(client, method)(path.format(id="0f8fad5b-d9cb-469f-a165-70867728950e"))
    assert_error(response, 405)
    allow = {m.strip() for m in response.headers["Allow"].split(",")}
    assert allowed <= allow
    assert method.upper() not in allow


# --- bodies that are not a JSON object ---------------------------------------


@pytest.mark.parametrize(
    "data",
    ['{"name": ', "{name: 1}", "{'name': 'x'}", '{"name": "x"} trailing', "not json", "\x00"],
)
def test_invalid_json_is_400(client, data):
    assert_error(post_raw(client, "/v1/cycles", data), 400)


@pytest.mark.parametrize("data", ["[]", '[{"name": "x"}]', '"name"', "1", "1.5", "true", "null"])
def test_body_that_is_not_an_object_is_400(client, data):
    assert_error(post_raw(client, "/v1/cycles", data), 400)


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "application/octet-stream", None],
)
def test_body_is_json_whatever_the_content_type(client, content_type):
    response = client.post("/v1/cycles", data=b'{"name": "Q3"}', content_type=content_type)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["name"] == "Q3"


def test_invalid_json_with_form_content_type_is_400(client):
    response = post_raw(client, "/v1/cycles", "name=Q3", "application/x-www-form-urlencoded")
    assert_error(response, 400)


@pytest.mark.parametrize("data", [None, b""])
def test_empty_body_counts_as_empty_object(client, data):
    response = client.post("/v1/cycles", data=data)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["name"] == ""


def test_empty_body_still_fails_required_fields(client):
    assert_error(client.post("/v1/objectives"), 400, "name", "cycle_id", "is_company", "is_personal")


# --- nesting -----------------------------------------------------------------


def test_body_nested_32_levels_is_accepted(client):
    response = post_raw(client, "/v1/cycles", nested_body(32))
    assert response.status_code == 200, response.get_data(as_text=True)


def test_body_nested_33_levels_is_400(client):
    assert_error(post_raw(client, "/v1/cycles", nested_body(33)), 400)


def test_deep_nesting_of_objects_is_400(client):
    body = '{"a": ' * 40 + "{}" + "}" * 40
    assert_error(post_raw(client, "/v1/cycles", body), 400)


def test_body_nested_100000_levels_is_400_not_500(client):
    assert_error(post_raw(client, "/v1/cycles", nested_body(100_000)), 400)


# --- size --------------------------------------------------------------------


def padded_body(size):
    """Valid JSON of exactly `size` bytes."""
    head, tail = '{"name": "big", "pad": "', '"}'
    return (head + "x" * (size - len(head) - len(tail)) + tail).encode()


def test_body_over_1_mib_is_413(client):
    body = padded_body(MIB + 1)
    assert len(body) == MIB + 1
    assert_error(post_raw(client, "/v1/cycles", body), 413)


def test_body_of_exactly_1_mib_is_accepted(client):
    body = padded_body(MIB)
    assert len(body) == MIB
    response = post_raw(client, "/v1/cycles", body)
    assert response.status_code == 200, response.get_data(as_text=True)[:300]


def test_huge_body_on_update_is_413(client):
    cycle = make_cycle(client)
    assert_error(post_raw(client, f"/v1/cycles/{cycle['id']}", padded_body(2 * MIB)), 413)


# --- text --------------------------------------------------------------------


@pytest.mark.parametrize(
    "data", [b'{"name": "\xff"}', b'{"name": "\xc3"}', b'{"name": "\xed\xa0\x80"}', b"\xfe\xff{}"]
)
def test_invalid_utf8_is_400(client, data):
    assert_error(post_raw(client, "/v1/cycles", data), 400)


@pytest.mark.parametrize(
    "data",
    [
        '{"name": "a", "name": "b"}',
        '{"name": "a", "extra": {"k": 1, "k": 2}}',
        '{"name": "a", "extra": [{"k": 1, "k": 1}]}',
    ],
)
def test_duplicate_keys_are_400(client, data):
    assert_error(post_raw(client, "/v1/cycles", data), 400)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_literals_are_400(client, literal):
    assert_error(post_raw(client, "/v1/cycles", '{"name": "a", "extra": %s}' % literal), 400)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_literal_in_decimal_field_is_400(client, literal):
    cycle = make_cycle(client)
    objective = make_objective(client, cycle["id"])
    data = '{"name": "k", "type": "positive", "target_value_min": %s}' % literal
    assert_error(post_raw(client, f"/v1/objectives/{objective['id']}/keyresults", data), 400)


def test_lone_surrogate_in_name_is_400_not_500(client):
    response = post_raw(client, "/v1/cycles", '{"name": "a\\ud800b"}')
    assert_error(response, 400, "name")


def test_lone_surrogate_in_objective_name_is_400(client):
    cycle = make_cycle(client)
    data = json.dumps(
        {"name": "x", "cycle_id": cycle["id"], "is_company": False, "is_personal": False}
    ).replace('"x"', '"\\udfff"')
    assert_error(post_raw(client, "/v1/objectives", data), 400, "name")


def test_lone_surrogate_in_unknown_field_is_not_500(client):
    response = post_raw(client, "/v1/cycles", '{"name": "a", "\\ud800": "\\udc00x"}')
    assert response.status_code in (200, 400)
    if response.status_code == 400:
        assert_error(response, 400)


# --- unexpected failures -----------------------------------------------------


SECRET = "SELECT password FROM secret_table WHERE id = 42"


def assert_internal_error(response):
    body = assert_error(response, 500)
    assert body["message"] == "internal error"
    assert "details" not in body
    text = response.get_data(as_text=True)
    for leak in ("Traceback", "SELECT", "secret_table", "File \"", ".py"):
        assert leak not in text


def test_unexpected_exception_is_500_internal_error(app, client, caplog):
    @app.get("/v1/boom")
    def boom():
        raise RuntimeError(SECRET)

    with caplog.at_level(logging.ERROR):
        response = client.get("/v1/boom")
    assert_internal_error(response)
    logged = [r for r in caplog.records if r.exc_info and r.exc_info[0] is RuntimeError]
    assert logged, "the traceback must be logged"
    assert SECRET in caplog.text and "Traceback" in caplog.text


def test_database_error_in_view_is_500_without_sql(client, monkeypatch, caplog):
    def broken():
        raise sqlite3.DatabaseError(SECRET)

    monkeypatch.setattr(okr.store.cycles, "new_id", broken)
    with caplog.at_level(logging.ERROR):
        response = client.post("/v1/cycles", json={"name": "Q1"})
    assert_internal_error(response)
    assert any(r.exc_info and r.exc_info[0] is sqlite3.DatabaseError for r in caplog.records)


def test_integrity_error_in_view_is_500_without_sql(client, monkeypatch, caplog):
    def broken(row):
        raise sqlite3.IntegrityError("UNIQUE constraint failed: secret_table.id")

    monkeypatch.setattr(okr.api.cycles, "cycle_json", broken)
    with caplog.at_level(logging.ERROR):
        response = client.post("/v1/cycles", json={"name": "Q1"})
    body = assert_error(response, 500)
    assert body["message"] == "internal error"
    assert "secret_table" not in response.get_data(as_text=True)


def test_service_keeps_working_after_a_500(app, client):
    @app.get("/v1/boom")
    def boom():
        raise RuntimeError("boom")

    assert_error(client.get("/v1/boom"), 500)
    assert client.get("/healthz").status_code == 200
    make_cycle(client)


# --- validation details ------------------------------------------------------


def test_validation_error_names_each_field_with_a_string(client):
    body = assert_error(
        client.post("/v1/objectives", json={"name": "   ", "is_company": "yes"}),
        400,
        "name",
        "cycle_id",
        "is_company",
        "is_personal",
    )
    assert body["details"]["name"]


def test_key_result_validation_names_the_field(client):
    cycle = make_cycle(client)
    objective = make_objective(client, cycle["id"])
    path = f"/v1/objectives/{objective['id']}/keyresults"
    assert_error(client.post(path, json={"name": "k", "type": "sideways"}), 400, "type")
    assert_error(
        client.post(path, json={"name": "k", "type": "positive", "target_value_min": "1", "confidence": "2"}),
        400,
        "confidence",
    )
    assert_error(client.post(path, json={"name": "k", "type": "baseline", "target_value_min": "1"}), 400,
                 "target_value_min")


def test_wrong_type_for_name_is_400_with_field(client):
    assert_error(client.post("/v1/cycles", json={"name": 5}), 400, "name")
    assert_error(client.post("/v1/teams", json={"name": ["x"]}), 400, "name")


def test_unknown_reference_names_the_field(client):
    cycle = make_cycle(client)
    body = {"name": "o", "cycle_id": cycle["id"], "is_company": False, "is_personal": False,
            "team_id": "0f8fad5b-d9cb-469f-a165-70867728950e"}
    assert_error(client.post("/v1/objectives", json=body), 400, "team_id")


def test_bad_query_argument_names_it(client):
    assert_error(client.get("/v1/cycles?page_size=0"), 400, "page_size")
    assert_error(client.get("/v1/cycles?page_token=!!!"), 400, "page_token")
    assert_error(client.get("/v1/objectives"), 400, "cycle_id")


def test_unknown_id_is_json_404(client):
    assert_error(client.get("/v1/cycles/not-a-uuid"), 404)
    assert_error(client.delete("/v1/objectives/0f8fad5b-d9cb-469f-a165-70867728950e"), 404)


# --- regressions found in review ---------------------------------------------------


@pytest.mark.parametrize("method, path", [("GET", "/v1/cycles"), ("DELETE", "/v1/cycles/nope"),
                                          ("POST", "/v1/objectives/nope")])
def test_any_declared_body_over_the_limit_is_413(client, method, path):
    response = client.open(path, method=method, data=b"x" * (1024 * 1024 + 1))
    assert_error(response, 413)


def test_doubled_slashes_are_unknown_paths_not_redirects(client):
    # Outside /v1 ("/cycles//x") the same 404 is a page: tests/web/test_error_pages.py.
    assert_error(client.get("/v1//cycles"), 404)
    assert_error(client.post("/v1//cycles", json={}), 404)


@pytest.mark.parametrize("raw", [b"\x0c", b"\x0b", b" \x0c ", b"\xa0"])
def test_a_body_of_non_json_whitespace_is_invalid_json_not_empty(client, raw):
    # Found by the fuzzer: str.strip() counts a form feed as whitespace, JSON does not.
    assert_error(client.post("/v1/cycles", data=raw), 400)


def test_only_a_body_of_no_bytes_counts_as_empty(client):
    assert client.post("/v1/cycles", data=b"").status_code == 200


@pytest.mark.parametrize("raw", [b" ", b"\r\n\t "])
def test_a_body_of_only_whitespace_is_not_json(client, raw):
    # Found by the fuzzer: the contract's "empty body" is no bytes; whitespace alone is not JSON.
    assert_error(client.post("/v1/cycles", data=raw), 400)
