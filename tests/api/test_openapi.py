"""The OpenAPI document at /v1/openapi.json."""
import json
import re

import pytest

from helpers import assert_error
from okr.api import schemas
from okr.api.fields import NOT_BLANK


@pytest.fixture
def document(client):
    response = client.get("/v1/openapi.json")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    return response.get_json()


def app_routes(app):
    """Every (path, method) the app serves, in OpenAPI's {param} spelling."""
    routes = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule)
        routes |= {(path, method.lower()) for method in rule.methods - {"HEAD", "OPTIONS"}}
    return routes


def documented_routes(document):
    return {(path, method) for path, item in document["paths"].items()
            for method in item if method in {"get", "post", "put", "patch", "delete"}}


def test_document_lists_exactly_the_routes_the_app_has(app, document):
    assert documented_routes(document) == app_routes(app)
    assert len(documented_routes(document)) == 28


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
    assert set(operation["responses"]) == {"200", "405", "413"}
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
        assert "413" in codes, (path, method)
        if "{" in path or any(p["name"] == "cycle_id" for p in operation.get("parameters", [])):
            assert "404" in codes, (path, method)
        if "requestBody" in operation or operation.get("parameters"):
            assert "400" in codes, (path, method)
        for code in codes - {"200"}:
            schema = operation["responses"][code]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/Error"}
    assert operation_of(document, "/v1/cycles", "put") is None


def operation_of(document, path, method):
    return document["paths"].get(path, {}).get(method)


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
        assert schema("/v1/objectives", name) == {"type": "string", "pattern": uuid}
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


def test_path_parameters_are_documented(document):
    item = document["paths"]["/v1/objectives/{objective_id}/keyresults"]
    assert item["parameters"] == [
        {"in": "path", "name": "objective_id", "required": True, "schema": {"type": "string"}}
    ]


def component(document, name):
    return document["components"]["schemas"][name]


def request_schema(document, path, method):
    ref = operation_of(document, path, method)["requestBody"]["content"]["application/json"]["schema"]
    return component(document, ref["$ref"].rsplit("/", 1)[1])


@pytest.mark.parametrize("path, method, schema", [
    ("/v1/objectives", "post", schemas.ObjectiveSchema),
    ("/v1/objectives/{objective_id}", "post", schemas.ObjectiveUpdateSchema),
    ("/v1/objectives/{objective_id}/keyresults", "post", schemas.KeyResultSchema),
    ("/v1/keyresults/{key_result_id}", "post", schemas.KeyResultUpdateSchema),
    ("/v1/cycles", "post", schemas.GroupSchema),
    ("/v1/teams/{team_id}", "post", schemas.GroupUpdateSchema),
])
def test_request_bodies_come_from_the_marshmallow_schemas(document, path, method, schema):
    documented = request_schema(document, path, method)
    fields = schema._declared_fields
    assert set(documented["properties"]) == set(fields)
    assert set(documented.get("required", [])) == {name for name, f in fields.items() if f.required}
    for name, field in fields.items():
        if getattr(field, "max_length", None):
            assert documented["properties"][name]["maxLength"] == field.max_length


@pytest.mark.parametrize("path, update", [
    ("/v1/objectives/{objective_id}", schemas.ObjectiveUpdateSchema),
    ("/v1/keyresults/{key_result_id}", schemas.KeyResultUpdateSchema),
])
def test_patch_bodies_are_merge_patches_over_the_update_schemas(document, path, update):
    operation = operation_of(document, path, "patch")
    body = operation["requestBody"]
    assert set(body["content"]) == {"application/merge-patch+json", "application/json"}
    assert body["content"]["application/merge-patch+json"] == body["content"]["application/json"]
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
    assert operation["responses"]["200"] == operation_of(document, path, "post")["responses"]["200"]
    assert {"400", "401", "403", "404", "507"} <= set(operation["responses"])


def test_schema_changes_show_in_the_document(app, monkeypatch):
    # Drift is impossible: the document is built from the live schema objects.
    from okr.api import openapi
    monkeypatch.setattr(schemas.GroupSchema._declared_fields["name"], "max_length", 7)
    openapi.build_document.cache_clear()
    try:
        name = component(openapi.build_document("test"), "GroupSchema")["properties"]["name"]
        assert name["maxLength"] == 7
    finally:
        openapi.build_document.cache_clear()


def test_request_bodies_are_required_only_where_a_field_is(document):
    assert operation_of(document, "/v1/objectives", "post")["requestBody"]["required"] is True
    assert operation_of(document, "/v1/cycles", "post")["requestBody"]["required"] is False


def test_decimals_are_documented_as_strings_or_numbers(document):
    confidence = request_schema(document, "/v1/objectives/{objective_id}/keyresults", "post")[
        "properties"]["confidence"]
    string, number = confidence["anyOf"]
    assert string["type"] == "string" and re.fullmatch(string["pattern"][1:-1], "1e3")
    assert (number["type"], number["minimum"], number["maximum"]) == ("number", 0, 1)
    assert "6 fractional digits" in confidence["description"]


def test_response_schemas_match_what_the_service_returns(client, document):
    cycle = client.post("/v1/cycles", json={"name": "Q1"}).get_json()
    objective = client.post("/v1/objectives", json={
        "name": "o", "cycle_id": cycle["id"], "is_company": False, "is_personal": False}).get_json()
    kr = client.post(f"/v1/objectives/{objective['id']}/keyresults", json={"name": "k", "type": "baseline"})
    for name, body in [("Cycle", cycle), ("Objective", objective), ("KeyResult", kr.get_json())]:
        properties = component(document, name)["properties"]
        assert set(properties) == set(body)
        assert set(component(document, name)["required"]) == set(body)
    error = component(document, "Error")
    assert set(error["required"]) == {"code", "message"} and "details" in error["properties"]


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
