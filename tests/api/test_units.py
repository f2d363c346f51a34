"""A key result's unit over the API: PATCH sets and clears it and answers it, a spec POST update never clears
it, the spec's GET does not show it, the reports and the CSV report carry it, and the OpenAPI document
describes it."""
import csv
import io
import re

import pytest

from helpers import fetch, make_key_result
from okr.api.openapi import UNIT_PATTERN

MERGE_PATCH = "application/merge-patch+json"


def patch(client, key_result_id, body):
    return client.patch(f"/v1/keyresults/{key_result_id}", json=body, headers={"Content-Type": MERGE_PATCH})


def patched(client, key_result_id, body):
    response = patch(client, key_result_id, body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


@pytest.mark.parametrize("body, unit, position", [
    ({"unit": "$", "unit_position": "before"}, "$", "before"),
    ({"unit": "ms", "unit_position": "after"}, "ms", "after"),
    ({"unit": "users"}, "users", "after"),  # a unit without a place goes after the number
    ({"unit": "  % ", "unit_position": ""}, "%", "after"),  # trimmed; "" is no place
    ({"unit": "twelve chars"}, "twelve chars", "after"),
    ({"unit": "EUR", "unit_position": None}, "EUR", "after"),
])
def test_patch_sets_the_unit_and_answers_it(client, key_result, body, unit, position):
    answer = patched(client, key_result["id"], body)
    assert (answer["unit"], answer["unit_position"]) == (unit, position)
    assert list(answer)[-6:] == ["owner_id", "unit", "unit_position", "score", "weight", "progress_from"]


@pytest.mark.parametrize("clearing", [{"unit": None}, {"unit": ""}, {"unit": "   "}])
def test_null_or_empty_clears_the_unit_and_its_place(client, key_result, clearing):
    patched(client, key_result["id"], {"unit": "$", "unit_position": "before"})
    answer = patched(client, key_result["id"], clearing)
    assert (answer["unit"], answer["unit_position"]) == (None, None)


def test_a_patch_of_other_fields_keeps_the_unit(client, key_result):
    patched(client, key_result["id"], {"unit": "$", "unit_position": "before"})
    answer = patched(client, key_result["id"], {"name": "Renamed", "current_value": "7"})
    assert (answer["name"], answer["unit"], answer["unit_position"]) == ("Renamed", "$", "before")
    # Moving the unit to the other side alone keeps the unit.
    assert patched(client, key_result["id"], {"unit_position": "after"})["unit"] == "$"


@pytest.mark.parametrize("body, field", [
    ({"unit": "thirteen char"}, "unit"),
    ({"unit": "m\ns"}, "unit"),
    ({"unit": "\x07"}, "unit"),
    ({"unit": 5}, "unit"),
    ({"unit": "$", "unit_position": "left"}, "unit_position"),
    ({"unit": "$", "unit_position": 1}, "unit_position"),
])
def test_a_bad_unit_is_refused_in_the_error_shape(client, key_result, body, field):
    response = patch(client, key_result["id"], body)
    assert response.status_code == 400
    error = response.get_json()
    assert set(error) == {"code", "message", "details"} and list(error["details"]) == [field]
    assert patched(client, key_result["id"], {})["unit"] is None  # nothing was changed


def test_a_spec_post_update_never_clears_the_unit_and_the_spec_get_does_not_show_it(client, key_result):
    patched(client, key_result["id"], {"unit": "$", "unit_position": "before"})
    for body in ({"name": "Full update", "type": "positive", "target_value_min": "200"},
                 {"name": "With a unit", "type": "positive", "target_value_min": "200", "unit": None,
                  "unit_position": "after"}):
        response = client.post(f"/v1/keyresults/{key_result['id']}", json=body)
        assert response.status_code == 200, response.get_json()
        assert "unit" not in response.get_json() and "unit_position" not in response.get_json()
    got = fetch(client, f"/v1/keyresults/{key_result['id']}")
    assert "unit" not in got and "unit_position" not in got
    assert patched(client, key_result["id"], {})["unit"] == "$"
    assert patched(client, key_result["id"], {})["unit_position"] == "before"


def report_node(client, cycle_id):
    [objective] = fetch(client, f"/v1/cycles/{cycle_id}/report")["objectives"]
    return objective["key_results"][0]


def test_the_reports_carry_the_unit(client, cycle, objective, key_result):
    assert (report_node(client, cycle["id"])["unit"], report_node(client, cycle["id"])["unit_position"]) == (
        None, None)
    patched(client, key_result["id"], {"unit": "ms"})
    node = report_node(client, cycle["id"])
    assert (node["unit"], node["unit_position"]) == ("ms", "after")
    [objective_node] = [fetch(client, f"/v1/objectives/{objective['id']}/report")["objective"]]
    assert objective_node["key_results"][0]["unit"] == "ms"


def test_the_csv_report_has_the_unit_columns_after_the_earlier_ones(client, cycle, objective, key_result):
    make_key_result(client, objective["id"], "No unit")
    patched(client, key_result["id"], {"unit": "=SUM(A1)", "unit_position": "before"})
    response = client.get(f"/v1/cycles/{cycle['id']}/report.csv")
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(response.get_data().decode("utf-8-sig"), newline="")))
    header = rows[0]
    at = header.index("unit")
    assert header[at - 2:at + 2] == ["owner_id", "owner", "unit", "unit_position"]  # the earlier columns keep their places
    by_id = {row[header.index("key_result_id")]: row for row in rows[1:]}
    assert by_id[key_result["id"]][at:at + 2] == ["'=SUM(A1)", "before"]  # free text, so never a formula
    [other] = [row for key, row in by_id.items() if key != key_result["id"]]
    assert other[at:at + 2] == ["", ""]


def test_the_openapi_document_describes_the_patch_and_report_fields(client):
    document = fetch(client, "/v1/openapi.json")
    schemas = document["components"]["schemas"]
    patch_body = schemas["KeyResultPatch"] if "KeyResultPatch" in schemas else next(
        schema for name, schema in schemas.items() if name.startswith("KeyResultPatch"))
    assert {"unit", "unit_position"} <= set(patch_body["properties"])
    assert patch_body["properties"]["unit_position"]["pattern"] == "^(before|after)?$"
    assert patch_body["properties"]["unit"]["pattern"] == UNIT_PATTERN
    for name in ("KeyResultDetailsPositive", "KeyResultNodePositive"):
        properties = schemas[name]["properties"]
        assert properties["unit"]["nullable"] and properties["unit_position"]["enum"] == ["before", "after", None]
        assert {"unit", "unit_position"} <= set(schemas[name]["required"])
    assert "unit" not in schemas["KeyResultPositive"]["properties"]  # the spec's key result has none


@pytest.mark.parametrize("unit", ["$", " $ ", "twelve chars", "thirteen char", "", "   ", "m\ns", "\t$", "\x85",
                                  " a\u00a0b ", "\u3000x\u3000", "x" * 12 + " ", "\u2000" * 20 + "x", "\u2028"])
def test_the_documents_unit_pattern_is_the_rule(client, key_result, unit):
    """What the document says a unit may be is what PATCH takes, so that generated clients and fuzzers agree."""
    documented = re.fullmatch(UNIT_PATTERN, unit) is not None
    assert documented == (patch(client, key_result["id"], {"unit": unit}).status_code == 200), unit
