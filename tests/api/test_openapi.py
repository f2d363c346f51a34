"""The OpenAPI document at /v1/openapi.json."""
import itertools
import json
import random
import re
import sqlite3
from contextlib import closing
from decimal import Decimal
from pathlib import Path

import jsonschema_rs
import pytest
from marshmallow import ValidationError

from helpers import assert_error, create_key, make_team, make_user, signed
from okr.db import transaction
from okr.rules import body_schemas
from okr.store import keys
from okr.rules.fields import NOT_BLANK
from okr.api.openapi import ADMIN_ONLY, EDITOR_ONLY, PERSON_ONLY
from okr.api.paging import decode_token, encode_token
from okr.reports import quality
from okr.rules.ids import UUID_PATTERN

UUID = f"^{UUID_PATTERN}$"


@pytest.fixture
def document(client):
    response = client.get("/v1/openapi.json")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    return response.get_json()


# The dashboard's pages are HTML for people, not API; GET / is both, and documented as the JSON index.
API_ENDPOINTS_OF_THE_DASHBOARD = {"web.show_dashboard"}


def app_routes(app):
    """Every (path, method) the app serves as API, in OpenAPI's {param} spelling."""
    routes = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        if rule.endpoint.startswith("web.") and rule.endpoint not in API_ENDPOINTS_OF_THE_DASHBOARD:
            continue
        if rule.endpoint.startswith("assistants."):  # /mcp and its sign-in are MCP's and OAuth's: docs/assistants.md
            continue
        path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule)
        routes |= {(path, method.lower()) for method in rule.methods - {"HEAD", "OPTIONS"}}
    return routes


def documented_routes(document):
    return {(path, method) for path, item in document["paths"].items()
            for method in item if method in {"get", "post", "put", "patch", "delete"}}


def test_document_lists_exactly_the_routes_the_app_has(app, document):
    assert documented_routes(document) == app_routes(app)
    assert len(documented_routes(document)) == 76


def test_check_ins_and_reports_are_documented(document):
    assert ref_name(response_schema(document, "/v1/keyresults/{key_result_id}/checkins", "post")) == "Checkin"
    assert ref_name(response_schema(document, "/v1/keyresults/{key_result_id}/checkins", "get")) == "CheckinPage"
    assert ref_name(response_schema(document, "/v1/cycles/{cycle_id}/report", "get")) == "CycleReport"
    assert ref_name(response_schema(document, "/v1/objectives/{objective_id}/report", "get")) == "ObjectiveReport"
    names = {p["name"] for p in operation_of(document, "/v1/keyresults/{key_result_id}/checkins", "get")["parameters"]}
    assert names == {"page_token", "page_size"}
    parameters = {p["name"]: p for p in operation_of(document, "/v1/cycles/{cycle_id}/report", "get")["parameters"]}
    assert set(parameters) == {"team_id", "assignee_id"}
    assert all(p["schema"]["pattern"] == UUID and not p.get("required") for p in parameters.values())
    assert "parameters" not in operation_of(document, "/v1/objectives/{objective_id}/report", "get")


def test_report_nodes_are_recursive(document):
    node = component(document, "ObjectiveNode")
    assert node["properties"]["children"]["items"] == {"$ref": "#/components/schemas/ObjectiveNode"}
    assert node["properties"]["key_results"]["items"] == {"$ref": "#/components/schemas/KeyResultNode"}
    assert set(component(document, "Objective")["properties"]) < set(node["properties"])
    report = component(document, "CycleReport")
    assert report["properties"]["objectives"]["items"] == {"$ref": "#/components/schemas/ObjectiveNode"}
    assert component(document, "ObjectiveReport")["properties"]["objective"] == {
        "$ref": "#/components/schemas/ObjectiveNode"}


def test_document_is_openapi_3_with_the_signing_scheme(document):
    assert document["openapi"].startswith("3.")
    scheme = document["components"]["securitySchemes"]["S1-HMAC-SHA256"]
    assert (scheme["type"], scheme["in"], scheme["name"]) == ("apiKey", "header", "Authorization")
    assert document["security"] == [{"S1-HMAC-SHA256": []}]
    assert document["paths"]["/healthz"]["get"]["security"] == []
    assert document["paths"]["/v1/openapi.json"]["get"]["security"] == []


def test_index_is_documented_as_open_with_the_fields_it_returns(client, document):
    operation = operation_of(document, "/", "get")
    assert operation["security"] == []
    assert set(operation["responses"]) == {"200", "405", "413", "421"}
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    index = component(document, schema["$ref"].rsplit("/", 1)[1])
    body = client.get("/").get_json()
    assert set(index["properties"]) == set(index["required"]) == set(body)
    links = component(document, index["properties"]["links"]["$ref"].rsplit("/", 1)[1])
    assert set(links["properties"]) == set(links["required"]) == set(body["links"])


def test_document_is_served_without_auth_once_keys_exist(client, runner):
    assert runner.invoke(args=["keys", "create", "--name", "k"]).exit_code == 0
    assert client.get("/v1/openapi.json").status_code == 200
    assert_error(client.get("/v1/cycles"), 401)


def operations(document):
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method != "parameters":
                yield path, method, operation


def test_every_operation_documents_its_success_and_error_responses(document):
    for path, method, operation in operations(document):
        codes = set(operation["responses"])
        assert "200" in codes and "405" in codes, (path, method)
        touches_data = path.startswith("/v1/") and path != "/v1/openapi.json"
        assert ("401" in codes) == touches_data, (path, method)
        assert ("503" in codes) == (touches_data or path == "/healthz"), (path, method)
        assert "413" in codes and "421" in codes, (path, method)  # any path: body size, Host
        # reads too on the admins' connections and the editors' sources and evidence
        assert ("403" in codes) == (method != "get" or path in ADMIN_ONLY or path in EDITOR_ONLY
                                    or path in PERSON_ONLY), (path, method)  # a read-only key, or another site's page
        if "{" in path or any(p["name"] == "cycle_id" and p.get("required") for p in operation.get("parameters", [])):
            assert "404" in codes, (path, method)
        if "requestBody" in operation or any(p["in"] == "query" for p in operation.get("parameters", [])):
            assert "400" in codes, (path, method)
        for code in codes - {"200", "304"}:
            schema = operation["responses"][code]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ApiError"}
    assert operation_of(document, "/v1/cycles", "put") is None


def operation_of(document, path, method):
    return document["paths"].get(path, {}).get(method)


def response_schema(document, path, method, code="200"):
    return operation_of(document, path, method)["responses"][code]["content"]["application/json"]["schema"]


def ref_name(schema):
    return schema["$ref"].rsplit("/", 1)[1]


def test_401_and_405_document_their_headers(document):
    responses = operation_of(document, "/v1/cycles", "get")["responses"]
    assert "WWW-Authenticate" in responses["401"]["headers"]
    assert "Allow" in responses["405"]["headers"]
    assert "Retry-After" in responses["503"]["headers"]


LIST_FILTERS = {
    "/v1/objectives": {"team_id", "assignee_id", "parent_objective_id", "is_company", "is_personal"},
    "/v1/keyresults": {"type"},
}


def test_lists_document_paging_and_cycle_parameters(document):
    for path in ("/v1/objectives", "/v1/keyresults"):
        parameters = {p["name"]: p for p in operation_of(document, path, "get")["parameters"]}
        assert set(parameters) == {"cycle_id", "page_token", "page_size", *LIST_FILTERS[path]}
        assert parameters["cycle_id"]["required"] is True
        size = parameters["page_size"]["schema"]
        assert (size["type"], size["minimum"], size["maximum"]) == ("integer", 1, 1000)
    for path in ("/v1/cycles", "/v1/teams", "/v1/users"):
        names = {p["name"] for p in operation_of(document, path, "get")["parameters"]}
        assert names == {"page_token", "page_size"}
    names = {p["name"] for p in operation_of(document, "/v1/objectives/{objective_id}/keyresults", "get")["parameters"]}
    assert names == {"page_token", "page_size", "type"}


def test_list_filters_are_documented_with_their_schemas(document):
    def schema(path, name):
        parameters = {p["name"]: p for p in operation_of(document, path, "get")["parameters"]}
        assert not parameters[name].get("required")
        return parameters[name]["schema"]

    uuid = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
    for name in ("team_id", "assignee_id"):
        assert schema("/v1/objectives", name) == {"type": "string", "format": "uuid", "pattern": uuid}
    parent = schema("/v1/objectives", "parent_objective_id")
    assert parent["type"] == "string"
    assert re.fullmatch(parent["pattern"], "none")
    assert re.fullmatch(parent["pattern"], "0b0e7f4a-3c1d-4e2f-8a9b-0c1d2e3f4a5b")
    assert not re.search(parent["pattern"], "0B0E7F4A-3C1D-4E2F-8A9B-0C1D2E3F4A5B")
    for name in ("is_company", "is_personal"):
        assert schema("/v1/objectives", name) == {"type": "string", "enum": ["true", "false"]}
    types = ["milestone", "baseline", "range", "positive", "negative"]
    for path in ("/v1/keyresults", "/v1/objectives/{objective_id}/keyresults"):
        assert schema(path, "type") == {"type": "string", "enum": types}


def test_path_parameters_are_documented_as_lowercase_uuids(document):
    item = document["paths"]["/v1/objectives/{objective_id}/keyresults"]
    assert item["parameters"] == [{"in": "path", "name": "objective_id", "required": True,
                                   "description": "A lowercase UUID.",
                                   "schema": {"type": "string", "format": "uuid", "pattern": UUID}}]
    for path, item in document["paths"].items():
        names = re.findall(r"{([a-z_]+)}", path)
        assert [p["name"] for p in item.get("parameters", [])] == names, path
        assert all(p["schema"]["pattern"] == UUID and p["schema"]["format"] == "uuid"
                   for p in item.get("parameters", [])), path


def id_properties(document):
    """(component, property, schema) for every id and *_id property of every component."""
    for name, schema in document["components"]["schemas"].items():
        for prop, described in schema.get("properties", {}).items():
            if prop == "id" or prop.endswith("_id"):
                yield name, prop, described


def test_every_id_is_a_lowercase_uuid(document):
    found = {(name, prop) for name, prop, _ in id_properties(document)}
    # Requests, responses and the per-type variants alike.
    assert {("ObjectiveInput", "cycle_id"), ("ObjectivePatch", "parent_objective_id"),
            ("CheckinInput", "author_id"), ("Checkin", "key_result_id"), ("KeyResultRange", "objective_id"),
            ("ObjectiveNode", "team_id"), ("User", "id")} <= found
    for name, prop, described in id_properties(document):
        if name in ("EventActor", "EventResource"):
            continue  # an event may name an API key, by its credential
        assert described["pattern"] == UUID, (name, prop)
        assert described["format"] == "uuid", (name, prop)
    assert re.fullmatch(UUID[1:-1], "0b0e7f4a-3c1d-4e2f-8a9b-0c1d2e3f4a5b")
    assert not re.search(UUID, "0B0E7F4A-3C1D-4E2F-8A9B-0C1D2E3F4A5B")
    for path in ("/v1/objectives", "/v1/keyresults"):
        cycle = {p["name"]: p for p in operation_of(document, path, "get")["parameters"]}["cycle_id"]
        assert cycle["schema"] == {"type": "string", "format": "uuid", "pattern": UUID}


def token_patterns(document):
    """The page_token argument's patterns, and next_page_token's."""
    asked = {p["schema"]["pattern"] for _, _, operation in operations(document)
             for p in operation.get("parameters", []) if p["name"] == "page_token"}
    given = {schema["properties"]["next_page_token"]["pattern"]
             for name, schema in document["components"]["schemas"].items() if name.endswith("Page")}
    assert len(asked) == len(given) == 1
    return re.compile(asked.pop()), re.compile(given.pop())


def accepted(token):
    """Whether the service reads token as a page token (an empty one is the first page)."""
    try:
        return not token or decode_token(token) is not None
    except ValidationError:
        return False


TOKEN_CHARACTERS = "MNODTjzAEIQkw05gQa+/-_=% "


def test_page_token_pattern_admits_exactly_what_the_service_accepts(document):
    asked, given = token_patterns(document)
    for length in range(5):  # every string of up to 4 characters from those that matter, and some that do not
        for letters in itertools.product(TOKEN_CHARACTERS, repeat=length):
            token = "".join(letters)
            assert bool(asked.fullmatch(token)) == accepted(token), token
    chance = random.Random(0)
    for _ in range(20_000):  # longer tokens: real ones, cut, padded, stripped and spoilt
        token = encode_token(chance.randrange(10 ** chance.randrange(1, 21)))
        cut = chance.randrange(len(token) + 1)
        token = (token[:cut] + "".join(chance.choice(TOKEN_CHARACTERS) for _ in range(chance.randrange(3)))
                 + token[cut:] * chance.randrange(2))
        assert bool(asked.fullmatch(token)) == accepted(token), token
    # The unpadded and non-canonical forms the service reads, which it never writes.
    for token in ("Mg", "Mg=", "Mh==", "MjQ4=", "MTI"):
        assert asked.fullmatch(token) and not given.fullmatch(token)


def test_next_page_tokens_are_documented_as_the_service_writes_them(document):
    asked, given = token_patterns(document)
    for seq in (*range(0, 2000), 12345, 10**18, 2**63 - 1):
        token = encode_token(seq)
        assert given.fullmatch(token) and asked.fullmatch(token), token
    assert not given.fullmatch("")


def component(document, name):
    return document["components"]["schemas"][name]


def request_schema(document, path, method):
    (content,) = operation_of(document, path, method)["requestBody"]["content"].values()  # one media type each
    return component(document, ref_name(content["schema"]))


def variants(document, schema):
    """The object schemas a component stands for: its oneOf's, or itself."""
    return [component(document, ref_name(ref)) for ref in schema["oneOf"]] if "oneOf" in schema else [schema]


@pytest.mark.parametrize("path, method, schema", [
    ("/v1/objectives", "post", body_schemas.ObjectiveSchema),
    ("/v1/objectives/{objective_id}", "post", body_schemas.ObjectiveUpdateSchema),
    ("/v1/objectives/{objective_id}/keyresults", "post", body_schemas.KeyResultSchema),
    ("/v1/keyresults/{key_result_id}", "post", body_schemas.KeyResultUpdateSchema),
    ("/v1/keyresults/{key_result_id}/checkins", "post", body_schemas.CheckinSchema),
    ("/v1/objectives/{objective_id}/comments", "post", body_schemas.CommentSchema),
    ("/v1/keyresults/{key_result_id}/comments", "post", body_schemas.CommentSchema),
    ("/v1/cycles", "post", body_schemas.CycleSchema),
    ("/v1/teams/{team_id}", "post", body_schemas.GroupUpdateSchema),
    ("/v1/teams", "post", body_schemas.GroupSchema),
])
def test_request_bodies_come_from_the_marshmallow_schemas(document, path, method, schema):
    fields = schema._declared_fields
    for documented in variants(document, request_schema(document, path, method)):
        assert set(documented["properties"]) == set(fields)
        # A type may require a target on top of what every body requires.
        required = {name for name, f in fields.items() if f.required}
        assert required <= set(documented.get("required", [])) <= required | {"target_value_min", "target_value_max"}
        for name, field in fields.items():
            if getattr(field, "max_length", None):
                assert documented["properties"][name]["maxLength"] == field.max_length


TYPED = [("/v1/objectives/{objective_id}/keyresults", "post", "KeyResultInput"),
         ("/v1/keyresults/{key_result_id}", "post", "KeyResultReplacement")]


@pytest.mark.parametrize("path, method, name", TYPED)
def test_key_result_bodies_are_one_schema_per_type(document, path, method, name):
    body = request_schema(document, path, method)
    assert body is component(document, name)
    mapping = body["discriminator"]["mapping"]
    assert body["discriminator"]["propertyName"] == "type"
    assert set(mapping) == set(body_schemas.KEY_RESULT_TYPES)
    assert [ref["$ref"] for ref in body["oneOf"]] == list(mapping.values())
    for kind, ref in mapping.items():
        variant = component(document, ref.rsplit("/", 1)[1])
        assert variant["properties"]["type"]["enum"] == [kind]
        assert "type" in variant["required"]


def json_schema(node):
    """An OpenAPI 3.0 schema as JSON Schema draft 4: nullable becomes a null type."""
    if isinstance(node, list):
        return [json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: json_schema(value) for key, value in node.items() if key != "discriminator"}
    if node.pop("nullable", False):
        if "type" in node:
            node["type"] = [node["type"], "null"]
        else:
            node = {"anyOf": [node, {"type": "null"}]}
    return node


def validator(document, name):
    """A validator of component name, resolving the document's references."""
    return jsonschema_rs.Draft4Validator(
        {"components": json_schema(document["components"]), "$ref": f"#/components/schemas/{name}"})


TARGETS = [None, "5", 5, "1", "1.0", "10e-1", "0.1e1", 1, "7", "-3", "1e1"]


@pytest.mark.parametrize("path, method, name", TYPED)
def test_the_per_type_schemas_accept_what_the_service_accepts(document, path, method, name):
    # Every pair of targets, for every type: the document and targets_fit_type agree.
    schema = {"KeyResultInput": body_schemas.key_result_schema,
              "KeyResultReplacement": body_schemas.key_result_update_schema}[name]
    documented = validator(document, name)
    for kind in body_schemas.KEY_RESULT_TYPES:
        for low in TARGETS:
            for high in TARGETS:
                body = {"name": "k", "type": kind, "target_value_min": low, "target_value_max": high}
                try:
                    schema.load(body)
                    accepted = True
                except ValidationError:
                    accepted = False
                if accepted:  # else a fuzzer's invalid case would be accepted
                    assert documented.is_valid(body), body
                    continue
                # Beyond JSON Schema: a range's min <= max, and which power of ten an exponent form is.
                out_of_order = kind == "range" and None not in (low, high) and Decimal(str(low)) > Decimal(str(high))
                power_of_ten = kind == "milestone" and high is None and low == "1e1"
                assert documented.is_valid(body) == (out_of_order or power_of_ten), body
        # Absent targets are null ones.
        assert documented.is_valid({"name": "k", "type": kind}) == (kind in ("milestone", "baseline"))


def test_patch_bodies_stay_plain_objects(document):
    patch = request_schema(document, "/v1/keyresults/{key_result_id}", "patch")
    assert "oneOf" not in patch and "required" not in patch
    assert patch["properties"]["type"]["enum"] == list(body_schemas.KEY_RESULT_TYPES)


@pytest.mark.parametrize("path, update", [
    ("/v1/objectives/{objective_id}", body_schemas.ObjectiveEditSchema),
    ("/v1/keyresults/{key_result_id}", body_schemas.KeyResultEditSchema),
    ("/v1/cycles/{cycle_id}", body_schemas.CycleUpdateSchema),
    ("/v1/comments/{comment_id}", body_schemas.CommentSchema),
])
def test_patch_bodies_are_merge_patches_over_the_update_schemas(document, path, update):
    operation = operation_of(document, path, "patch")
    body = operation["requestBody"]
    assert set(body["content"]) == {"application/merge-patch+json"}  # declared once: one body type in a client
    assert "application/json" in body["description"]
    assert body["required"] is False
    assert "RFC 7396" in body["description"]
    documented = request_schema(document, path, "patch")
    fields = update._declared_fields
    assert set(documented["properties"]) == set(fields)
    assert "required" not in documented
    for name, field in fields.items():
        described = documented["properties"][name]
        assert described.get("nullable", False) == field.allow_none, name
        assert "default" not in described, name  # absent means unchanged
        if getattr(field, "max_length", None):
            assert described["maxLength"] == field.max_length
    answered = operation["responses"]["200"]
    if path == "/v1/comments/{comment_id}":  # no full update: it answers what GET does, with its ETag
        assert answered == operation_of(document, path, "get")["responses"]["200"]
        assert {"400", "401", "403", "404", "412", "507"} <= set(operation["responses"])
        return
    replaced = operation_of(document, path, "post")["responses"]["200"]
    # A PATCH answers what the spec's resource lacks too (the owner; the dates; the close-out), with the same ETag
    assert answered["headers"] == replaced["headers"]
    extended = answered["content"]["application/json"]["schema"]["$ref"]
    assert extended == replaced["content"]["application/json"]["schema"]["$ref"] + "Details"
    assert set(operation["responses"]) == set(operation_of(document, path, "post")["responses"])
    assert {"400", "401", "403", "404", "507"} <= set(operation["responses"])


def test_schema_changes_show_in_the_document(app, monkeypatch):
    # Drift is impossible: the document is built from the live schema objects.
    from okr.api import openapi
    monkeypatch.setattr(body_schemas.GroupSchema._declared_fields["name"], "max_length", 7)
    openapi.build_document.cache_clear()
    try:
        name = component(openapi.build_document("test"), "TeamInput")["properties"]["name"]
        assert name["maxLength"] == 7
    finally:
        openapi.build_document.cache_clear()


def test_request_bodies_are_required_only_where_a_field_is(document):
    assert operation_of(document, "/v1/objectives", "post")["requestBody"]["required"] is True
    assert operation_of(document, "/v1/cycles", "post")["requestBody"]["required"] is False


def test_decimals_are_documented_as_strings_or_numbers(document):
    confidence = component(document, "KeyResultInputPositive")["properties"]["confidence"]
    assert confidence["allOf"] == [{"$ref": "#/components/schemas/Fraction"}]
    string, number = component(document, "Fraction")["anyOf"]
    assert string["type"] == "string" and re.fullmatch(string["pattern"][1:-1], "1e3")
    assert (number["type"], number["minimum"], number["maximum"]) == ("number", 0, 1)
    assert "6 fractional digits" in confidence["description"]
    assert validator(document, "KeyResultInputPositive").is_valid(
        {"name": "k", "type": "positive", "target_value_min": "1e3", "confidence": 1})
    assert not validator(document, "KeyResultInputPositive").is_valid(
        {"name": "k", "type": "positive", "target_value_min": 5, "confidence": "1.5x"})


def test_every_decimal_of_a_request_is_one_of_three_named_schemas(document):
    """A generator makes a model of each inline anyOf, named for its field (KeyResultInputMilestoneConfidence):
    the decimals refer to Decimal, Fraction and MilestoneTarget instead."""
    refs = set()
    for name, schema in document["components"]["schemas"].items():
        for field, described in schema.get("properties", {}).items():
            assert "anyOf" not in described, (name, field)
            refs.update(branch["$ref"].rsplit("/", 1)[1] for branch in described.get("allOf", []))
    assert {"Decimal", "Fraction", "MilestoneTarget"} <= refs
    patch = component(document, "KeyResultPatch")["properties"]
    assert patch["target_value_min"]["nullable"] is True  # null stays beside the reference
    assert patch["current_value"]["allOf"] == [{"$ref": "#/components/schemas/Decimal"}]


def test_response_schemas_match_what_the_service_returns(client, document):
    cycle = client.post("/v1/cycles", json={"name": "Q1"}).get_json()
    objective = client.post("/v1/objectives", json={
        "name": "o", "cycle_id": cycle["id"], "is_company": False, "is_personal": False}).get_json()
    kr = client.post(f"/v1/objectives/{objective['id']}/keyresults", json={"name": "k", "type": "baseline"})
    for name, body in [("Cycle", cycle), ("Objective", objective), ("KeyResultBaseline", kr.get_json())]:
        properties = component(document, name)["properties"]
        assert set(properties) == set(body)
        assert set(component(document, name)["required"]) == set(body)
    error = component(document, "ApiError")
    assert set(error["required"]) == {"code", "message"} and "details" in error["properties"]


KEY_RESULTS = [
    {"name": "m", "type": "milestone"},
    {"name": "b", "type": "baseline", "current_value": "3"},
    {"name": "r", "type": "range", "target_value_min": "2", "target_value_max": 4},
    {"name": "p", "type": "positive", "target_value_min": "10"},
    {"name": "n", "type": "negative", "target_value_min": "-5.5"},
]


def test_answers_of_every_type_fit_exactly_their_schemas(client, runner, document):
    user = make_user(runner)
    cycle = client.post("/v1/cycles", json={"name": "Q1"}).get_json()
    top = client.post("/v1/objectives", json={
        "name": "o", "cycle_id": cycle["id"], "is_company": True, "is_personal": False}).get_json()
    child = client.post("/v1/objectives", json={
        "name": "c", "cycle_id": cycle["id"], "is_company": False, "is_personal": False,
        "parent_objective_id": top["id"]}).get_json()
    for body in KEY_RESULTS:
        kr = client.post(f"/v1/objectives/{child['id']}/keyresults", json=body).get_json()
        for name in ("KeyResult", f"KeyResult{body['type'].capitalize()}"):
            assert validator(document, name).is_valid(kr), (name, kr)
        others = [kind for kind in body_schemas.KEY_RESULT_TYPES if kind != body["type"]]
        assert not any(validator(document, f"KeyResult{kind.capitalize()}").is_valid(kr) for kind in others)
    checkin = client.post(f"/v1/keyresults/{kr['id']}/checkins",
                          json={"value": "-6", "comment": "better", "author_id": user["id"]}).get_json()
    answers = [
        ("Checkin", checkin),
        ("CheckinPage", client.get(f"/v1/keyresults/{kr['id']}/checkins?page_size=1").get_json()),
        ("KeyResultPage", client.get(f"/v1/keyresults?cycle_id={cycle['id']}").get_json()),
        ("CycleReport", client.get(f"/v1/cycles/{cycle['id']}/report").get_json()),
        ("ObjectiveReport", client.get(f"/v1/objectives/{top['id']}/report").get_json()),
    ]
    for name, answer in answers:
        assert validator(document, name).is_valid(answer), (name, answer)
    report = answers[-1][1]["objective"]
    assert len(report["children"][0]["key_results"]) == len(KEY_RESULTS)
    assert answers[1][1]["next_page_token"] is not None  # a token the pattern was checked on


def test_text_patterns_mean_what_the_service_enforces(document):
    name = request_schema(document, "/v1/objectives", "post")["properties"]["name"]
    pattern = re.compile(name["pattern"])
    assert pattern.search("Grow") and pattern.search(" x ")
    assert not pattern.search(" \t\u3000") and not pattern.search("a\x00b")


def test_blank_means_what_str_isspace_means():
    # The document's pattern and the validator share this class of characters.
    mismatches = [c for c in range(0x110000) if chr(c).isspace() != (NOT_BLANK.search(chr(c)) is None)]
    assert mismatches == []


def test_document_is_plain_json(client):
    raw = client.get("/v1/openapi.json").get_data(as_text=True)
    assert json.loads(raw)["info"]["title"] == "OKR service"


RESOURCES = ["/v1/objectives/{objective_id}", "/v1/keyresults/{key_result_id}", "/v1/cycles/{cycle_id}",
             "/v1/teams/{team_id}", "/v1/users/{user_id}", "/v1/comments/{comment_id}",
             "/v1/initiatives/{initiative_id}"]


def header_parameters(operation):
    return {p["name"] for p in operation.get("parameters", []) if p["in"] == "header"}


def test_conditional_requests_are_documented(document):
    conditional = set()
    for path in RESOURCES:
        get = operation_of(document, path, "get")
        assert header_parameters(get) == {"If-None-Match"}
        assert "ETag" in get["responses"]["200"]["headers"]
        assert "content" not in get["responses"]["304"] and "ETag" in get["responses"]["304"]["headers"]
        conditional.add((path, "get"))
        for method in ("post", "patch", "delete"):
            write = operation_of(document, path, method)
            if write is None:
                continue
            assert header_parameters(write) == {"If-Match"}, (path, method)
            assert "412" in write["responses"], (path, method)
            assert ("ETag" in write["responses"]["200"].get("headers", {})) == (method != "delete"), (path, method)
            conditional.add((path, method))
    checkin = operation_of(document, "/v1/keyresults/{key_result_id}/checkins", "post")
    assert header_parameters(checkin) == {"If-Match"} and "412" in checkin["responses"]
    assert "key result's new entity tag" in checkin["responses"]["200"]["headers"]["ETag"]["description"]
    conditional.add(("/v1/keyresults/{key_result_id}/checkins", "post"))
    assert len(conditional) == 23
    # Nothing else takes a precondition or answers 304 or 412.
    for path, method, operation in operations(document):
        if (path, method) not in conditional:
            assert not header_parameters(operation), (path, method)
            assert not {"304", "412"} & set(operation["responses"]), (path, method)


def test_etags_412_and_304_look_as_documented(client, document):
    # The documented header and shapes hold for what the service really answers.
    cycle = client.post("/v1/cycles", json={"name": "Q1"}).get_json()
    path = f"/v1/cycles/{cycle['id']}"
    get = operation_of(document, "/v1/cycles/{cycle_id}", "get")["responses"]
    tag = client.get(path).headers["ETag"]
    assert re.fullmatch(get["200"]["headers"]["ETag"]["schema"]["pattern"], tag)
    not_modified = client.get(path, headers={"If-None-Match": tag})
    assert not_modified.status_code == 304 and not_modified.get_data() == b""
    assert not_modified.headers["ETag"] == tag
    renamed = client.post(path, json={"name": "Q2"}, headers={"If-Match": tag})
    assert renamed.status_code == 200 and renamed.headers["ETag"] != tag
    stale = client.post(path, json={"name": "Q3"}, headers={"If-Match": tag})
    assert validator(document, "ApiError").is_valid(stale.get_json()) and stale.get_json()["code"] == 412
    assert_error(stale, 412)


# --- who signs, and a team's members ------------------------------------------------------------------


MEMBER = "/v1/teams/{team_id}/members/{user_id}"


def test_me_and_team_members_are_documented_with_their_statuses(document):
    me = operation_of(document, "/v1/me", "get")
    assert ref_name(response_schema(document, "/v1/me", "get")) == "Me"
    assert set(me["responses"]) == {"200", "401", "405", "413", "421", "503"}
    assert "parameters" not in me and "open mode" in me["description"]
    members = operation_of(document, "/v1/teams/{team_id}/members", "get")
    assert ref_name(response_schema(document, "/v1/teams/{team_id}/members", "get")) == "UserPage"
    assert {p["name"] for p in members["parameters"]} == {"page_token", "page_size"}
    assert set(members["responses"]) == {"200", "400", "401", "404", "405", "413", "421", "503"}
    put, delete = operation_of(document, MEMBER, "put"), operation_of(document, MEMBER, "delete")
    assert ref_name(response_schema(document, MEMBER, "put")) == "User"
    assert "content" not in delete["responses"]["200"] and "empty" in delete["responses"]["200"]["description"]
    for operation in (put, delete):
        assert "requestBody" not in operation and "parameters" not in operation
        assert set(operation["responses"]) == {"200", "401", "403", "404", "405", "413", "421", "503", "507"}
        assert "viewer" in operation["responses"]["403"]["description"]
    assert "Idempotent" in put["description"]
    assert [p["name"] for p in document["paths"][MEMBER]["parameters"]] == ["team_id", "user_id"]
    assert [p["name"] for p in document["paths"]["/v1/teams/{team_id}/members"]["parameters"]] == ["team_id"]


def test_me_is_nullable_where_the_service_answers_null(document):
    me = component(document, "Me")
    assert set(me["required"]) == {"user", "role", "key"}
    for name, ref in (("user", "User"), ("key", "SigningKey")):
        described = me["properties"][name]
        assert (described["allOf"], described["nullable"]) == ([{"$ref": f"#/components/schemas/{ref}"}], True)
        assert "anyOf" not in described
    assert me["properties"]["role"]["enum"] == ["admin", "editor", "viewer", None]
    assert set(component(document, "SigningKey")["properties"]) == {"credential", "name", "read_only"}
    # A nullable object takes null or the object, not any object (apispec's own anyOf would).
    valid = validator(document, "Me").is_valid
    assert valid({"user": None, "role": None, "key": None})
    assert not valid({"user": {"anything": 1}, "role": None, "key": None})


def test_check_in_authorship_is_documented(document):
    operation = operation_of(document, "/v1/keyresults/{key_result_id}/checkins", "post")
    assert "author_id" in operation["responses"]["403"]["description"]
    assert "service key" in operation["description"]


def test_the_sources_answers_fit_their_schemas(client, document, tmp_path, clock):
    metrics = tmp_path / "metrics.db"
    with closing(sqlite3.connect(metrics)) as db:
        db.execute("CREATE TABLE figures (value REAL)")
        db.execute("INSERT INTO figures VALUES (12.5)")
        db.commit()
    clock.now = "2026-01-01T09:00:00Z"
    cycle = client.post("/v1/cycles", json={"name": "Q1", "starts_on": "2026-01-01"}).get_json()
    objective = client.post("/v1/objectives", json={"name": "o", "cycle_id": cycle["id"], "is_company": False,
                                                    "is_personal": False}).get_json()
    kr = client.post(f"/v1/objectives/{objective['id']}/keyresults", json={"name": "k", "type": "baseline"}).get_json()
    connection = client.post("/v1/connections", json={"name": "Metrics", "kind": "sqlite", "address": str(metrics),
                                                      "secret": "s3cret"}).get_json()
    source = client.put(f"/v1/keyresults/{kr['id']}/source", json={
        "connection_id": connection["id"], "query": "SELECT value FROM figures"}).get_json()
    clock.now = "2026-01-03T09:00:00Z"
    tested = client.post(f"/v1/keyresults/{kr['id']}/source/test").get_json()
    failed_test = client.post(f"/v1/keyresults/{kr['id']}/source/test", json={"query": "SELECT x"}).get_json()
    run = client.post(f"/v1/keyresults/{kr['id']}/source/sync").get_json()
    filled = client.post(f"/v1/keyresults/{kr['id']}/source/fill", json={"step": "weekly"})
    answers = [
        ("Connection", connection), ("ConnectionPage", client.get("/v1/connections").get_json()),
        ("Source", source), ("SourceTest", tested), ("SourceTest", failed_test), ("SourceRun", run),
        ("Evidence", client.get(f"/v1/checkins/{run['checkin_id']}/evidence").get_json()),
        ("Recomputation", client.post(f"/v1/checkins/{run['checkin_id']}/recompute").get_json()),
    ]
    for name, answer in answers:
        assert validator(document, name).is_valid(answer), (name, answer)
    assert filled.status_code == 400  # the query reads only the present: the error shape, documented as 400
    assert connection["has_secret"] is True and "s3cret" not in json.dumps(answers)


def test_me_and_members_answer_as_documented(app, client, runner, document):
    assert validator(document, "Me").is_valid(client.get("/v1/me").get_json())  # open mode
    team = make_team(client)
    user = make_user(runner)
    added = client.put(f"/v1/teams/{team['id']}/members/{user['id']}").get_json()
    assert validator(document, "User").is_valid(added)
    assert validator(document, "UserPage").is_valid(client.get(f"/v1/teams/{team['id']}/members").get_json())
    key = create_key(runner)
    assert validator(document, "Me").is_valid(client.get("/v1/me", headers=signed(key)).get_json())
    with app.app_context(), transaction() as db:
        credential, secret = keys.create(db, "Ada's", False, user["id"])
    mine = client.get("/v1/me", headers=signed({"credential": credential, "secret": secret})).get_json()
    assert mine["user"] == user and validator(document, "Me").is_valid(mine)


# --- names a generated client reads (issue 34) ------------------------------------------------------------


API_MD = Path(__file__).resolve().parent.parent.parent / "docs" / "api.md"


def test_every_operation_has_a_short_camel_case_id_and_one_tag(document):
    ids = [operation["operationId"] for _, _, operation in operations(document)]
    assert len(ids) == len(set(ids)) == 76
    assert all(re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)*", name) and len(name) <= 25 for name in ids), ids
    tags = [tag["name"] for tag in document["tags"]]
    assert all(tag["description"] for tag in document["tags"])
    used = set()
    for path, method, operation in operations(document):
        assert len(operation["tags"]) == 1 and operation["tags"][0] in tags, (path, method)
        used.add(operation["tags"][0])
    assert used == set(tags)
    create = operation_of(document, "/v1/objectives/{objective_id}/keyresults", "post")
    assert (create["operationId"], create["tags"]) == ("createKeyResult", ["KeyResults"])
    assert operation_of(document, "/v1/objectives", "get")["operationId"] == "listObjectives"


def documented_operations():
    """docs/api.md's table of operations: {(path, method): (operationId, tag)}."""
    rows = re.findall(r"^\| `([a-zA-Z]+)` \| ([A-Z]+) \| `([^`]+)` \| ([A-Za-z]+) \|$", API_MD.read_text(),
                      re.MULTILINE)
    return {(path, method.lower()): (name, tag) for name, method, path, tag in rows}


def test_docs_name_each_operation_s_id_and_tag(document):
    described = {(path, method): (operation["operationId"], operation["tags"][0])
                 for path, method, operation in operations(document)}
    assert documented_operations() == described


def test_schemas_are_named_for_what_they_are(document):
    names = set(document["components"]["schemas"])
    assert not {name for name in names if name.endswith("Schema") or name.startswith("Group")}
    assert {"Cycle", "Team", "ObjectiveInput", "KeyResultInput", "KeyResultReplacement", "KeyResultPatch",
            "CheckinInput", "CommentInput", "CycleInput", "CyclePatch", "TeamInput", "Rename", "ApiError"} <= names
    # Names no generator has to change (TypeScript's Error and Index clash with its own).
    assert not names & {"Error", "Index"}
    for path, method, name in [("/v1/teams", "post", "TeamInput"), ("/v1/cycles/{cycle_id}", "post", "Rename"),
                               ("/v1/teams/{team_id}", "post", "Rename"), ("/v1/cycles", "post", "CycleInput")]:
        assert request_schema(document, path, method) is component(document, name)


def test_no_schema_says_null_with_an_enum(document):
    # openapi-generator's typescript-fetch crashes on "enum": [null]; a target that must be null says it so.
    assert '"enum": [null]' not in json.dumps(document)
    assert all(None not in node.get("enum", ()) or len(node["enum"]) > 1 for node in walk(document))
    must_be_null = component(document, "KeyResultInputPositive")["properties"]["target_value_max"]
    valid = jsonschema_rs.Draft4Validator(json_schema(must_be_null)).is_valid
    assert valid(None) and not any(valid(value) for value in ("", "1", "x" * 40, 1))


def walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def test_ids_are_uuids_in_paths_and_queries_as_in_answers(document):
    found = 0
    for path, method, operation in operations(document):
        parameters = [*document["paths"][path].get("parameters", []), *operation.get("parameters", [])]
        for parameter in parameters:
            if parameter["in"] == "path" or parameter["name"] in ("cycle_id", "team_id", "assignee_id", "after"):
                assert parameter["schema"]["format"] == "uuid", (path, method, parameter["name"])
                assert parameter["schema"]["pattern"] == UUID, (path, method, parameter["name"])
                found += 1
    assert found > 40
    assert component(document, "Objective")["properties"]["cycle_id"]["format"] == "uuid"


def test_create_answers_document_their_etag(document):
    creates = [("/v1/objectives", "post"), ("/v1/objectives/{objective_id}/keyresults", "post"),
               ("/v1/objectives/{objective_id}/comments", "post"), ("/v1/keyresults/{key_result_id}/comments", "post"),
               ("/v1/cycles", "post"), ("/v1/teams", "post"), ("/v1/keyresults/{key_result_id}/checkins", "post"),
               ("/v1/teams/{team_id}/members/{user_id}", "put")]
    for path, method in creates:
        header = operation_of(document, path, method)["responses"]["200"]["headers"]["ETag"]
        assert header["required"] is True and header["schema"]["pattern"] == '^"[0-9a-f]+"$', path


# --- search (issue 35) -----------------------------------------------------------------------------------------


QUERIES = ["a", " a ", "x" * 200, " \t" + "x" * 200 + "\n ", "a b", "\u00a0été\u2003", "%", "_", "x" * 199 + " y",
           "\x1ea\x1f", "\x1e\x1f", "", " ", "\t\n", "\u00a0\u2003", "x" * 201, " " + "x" * 201, "x" * 100 + " " * 101]


def test_search_is_documented_with_the_query_rule_the_service_keeps(document, client):
    operation = operation_of(document, "/v1/search", "get")
    assert (operation["operationId"], operation["tags"]) == ("search", ["Search"])
    assert ref_name(response_schema(document, "/v1/search", "get")) == "SearchPage"
    parameters = {p["name"]: p for p in operation["parameters"]}
    assert set(parameters) == {"q", "page_token", "page_size"}
    assert parameters["q"]["required"] is True
    assert {"400", "401"} <= set(operation["responses"])
    pattern = re.compile(parameters["q"]["schema"]["pattern"])  # Python's dialect, as schemathesis reads it
    documented = jsonschema_rs.Draft4Validator(parameters["q"]["schema"]).is_valid  # and ECMA-262's
    for query in QUERIES:
        answered = client.get("/v1/search", query_string={"q": query})
        assert answered.status_code in (200, 400)
        assert bool(pattern.search(query)) == documented(query) == (answered.status_code == 200), repr(query)
        if answered.status_code == 400:
            assert_error(answered, 400, "q")


def test_search_answers_fit_the_search_page_schema(document, client, cycle):
    objective = client.post("/v1/objectives", json={"name": "Find me", "cycle_id": cycle["id"], "is_company": False,
                                                    "is_personal": False}).get_json()
    client.post(f"/v1/objectives/{objective['id']}/keyresults", json={"name": "Find me too", "type": "baseline"})
    make_team(client, "Findings")
    make_user(client.application.test_cli_runner(), "Fina", "fina@example.com")
    answer = client.get("/v1/search", query_string={"q": "fin", "page_size": 3}).get_json()
    assert [result["type"] for result in answer["results"]] == ["objective", "key_result", "team"]
    assert validator(document, "SearchPage").is_valid(answer), answer
    last = client.get("/v1/search", query_string={"q": "fin", "page_token": answer["next_page_token"]}).get_json()
    assert [result["type"] for result in last["results"]] == ["user"] and last["next_page_token"] is None
    assert validator(document, "SearchPage").is_valid(last), last
    schema = component(document, "SearchResult")
    assert schema["properties"]["type"]["enum"] == ["objective", "key_result", "team", "user"]
    assert set(schema["required"]) == {"type", "id", "name", "cycle_id", "objective_id"}


def test_retrospective_and_calibration_answers_match_their_schemas(client, document, worked_example):
    path = f"/v1/cycles/{worked_example['cycle']}"
    for name, query in (("Retrospective", "retrospective"), ("Calibration", "calibration"),
                        ("Retrospective", f"retrospective?team_id={worked_example['red']}")):
        answer = client.get(f"{path}/{query}").get_json()
        assert validator(document, name).is_valid(answer), (name, answer)
    assert ref_name(response_schema(document, "/v1/cycles/{cycle_id}/retrospective", "get")) == "Retrospective"
    assert ref_name(response_schema(document, "/v1/cycles/{cycle_id}/calibration", "get")) == "Calibration"


def test_quality_checks_answers_match_their_schema(client, document, cycle, runner):
    ada = make_user(runner)
    objective = client.post("/v1/objectives", json={"name": "Grow", "cycle_id": cycle["id"], "is_company": False,
                                                    "is_personal": False}).get_json()
    for number in range(6):
        client.post(f"/v1/objectives/{objective['id']}/keyresults",
                    json={"name": f"Launch {number}", "type": "baseline", "owner_id": ada["id"]})
    client.post(f"/v1/objectives/{objective['id']}/keyresults", json={"name": "Nobody's", "type": "baseline"})
    answer = client.get(f"/v1/cycles/{cycle['id']}/checks").get_json()
    assert {check["code"] for check in answer["checks"]} == {
        "objective_without_owner", "too_many_key_results", "key_result_without_owner", "key_result_reads_as_task",
        "owner_over_focus"}
    assert validator(document, "CycleChecks").is_valid(answer), answer
    assert ref_name(response_schema(document, "/v1/cycles/{cycle_id}/checks", "get")) == "CycleChecks"
    assert component(document, "QualityCheck")["properties"]["code"]["enum"] == list(quality.CODES)
