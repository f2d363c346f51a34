"""PATCH /v1/objectives/:id and /v1/keyresults/:id: a JSON Merge Patch (RFC 7396) over the stored
resource, whose merged result is validated like a full update (contract: Errors, the PATCH sentence)."""
import json

import pytest

import okr.api.key_results
import okr.api.objectives
from helpers import assert_error, make_cycle, make_key_result, make_objective, make_team, make_user
from helpers import fetch, statements_of

MISSING_ID = "00000000-0000-4000-8000-000000000000"
MERGE_PATCH = "application/merge-patch+json"


def patch(client, path, body, content_type=MERGE_PATCH):
    return client.patch(path, data=json.dumps(body), content_type=content_type)


# What a PATCH answers beyond the spec's GET: a key result's owner, unit, score and weight, an objective's close-out
# and who may see it.
DETAILS = {"/v1/keyresults/": ("owner_id", "unit", "unit_position", "score", "weight", "progress_from"),
           "/v1/objectives/": ("outcome", "score", "reflection", "carried_from_id", "visibility")}

NO_CLOSE_OUT = {"outcome": None, "score": None, "reflection": None, "carried_from_id": None, "visibility": "everyone"}


def patched(client, path, body):
    """The 200 answer to a patch, checked against what GET gives afterwards (and its ETag against GET's): a key
    result's answer has its owner, unit and score too, an objective's its close-out, which the spec's GET does not
    show."""
    response = patch(client, path, body)
    assert response.status_code == 200, response.get_json()
    assert response.mimetype == "application/json"
    answer = response.get_json()
    details = DETAILS["/v1/keyresults/" if path.startswith("/v1/keyresults/") else "/v1/objectives/"]
    assert list(answer)[-len(details):] == list(details)
    answer = {name: value for name, value in answer.items() if name not in details}
    assert answer == fetch(client, path)
    assert response.headers["ETag"] == client.get(path).headers["ETag"]
    return answer


@pytest.fixture
def objective_fields():
    """A personal objective with a description: a patch has fields to keep, clear and swap."""
    return {"name": "Grow", "description": "Old", "is_personal": True}


@pytest.fixture
def clock_after_making():
    """Made on 2026-01-01, patched on 2026-02-02: modified_at shows that a patch wrote."""
    return "2026-02-02T00:00:00Z"


def objective_path(objective):
    return f"/v1/objectives/{objective['id']}"


def key_result_path(key_result):
    return f"/v1/keyresults/{key_result['id']}"


# --- objectives: fields present change, fields absent stay --------------------------------


@pytest.mark.parametrize("field, value", [
    ("name", "Grow faster"),
    ("name", " spaced and \u00e9t\u00e9 "),
    ("description", "New words"),
    ("description", ""),
    ("is_personal", False),
])
def test_objective_patch_changes_only_the_field_sent(client, objective, field, value):
    updated = patched(client, objective_path(objective), {field: value})
    assert updated == dict(objective, **{field: value}, modified_at="2026-02-02T00:00:00Z")


def test_objective_patch_sets_each_reference(client, runner, cycle, objective):
    other_cycle = make_cycle(client, "Q2")
    team = make_team(client)
    user = make_user(runner)
    parent = make_objective(client, cycle["id"], name="Parent")
    for field, value in [("team_id", team["id"]), ("assignee_id", user["id"]),
                         ("parent_objective_id", parent["id"]), ("cycle_id", other_cycle["id"])]:
        before = fetch(client, objective_path(objective))
        updated = patched(client, objective_path(objective), {field: value})
        assert updated == dict(before, **{field: value}, modified_at="2026-02-02T00:00:00Z")


def test_objective_patch_can_swap_personal_for_company_in_one_patch(client, objective):
    updated = patched(client, objective_path(objective), {"is_company": True, "is_personal": False})
    assert (updated["is_company"], updated["is_personal"]) == (True, False)


def test_moving_an_objective_by_patch_takes_its_key_results_along(client, cycle, objective):
    key_result = make_key_result(client, objective["id"])
    other_cycle = make_cycle(client, "Q2")
    patched(client, objective_path(objective), {"cycle_id": other_cycle["id"]})
    listed = client.get("/v1/keyresults", query_string={"cycle_id": other_cycle["id"]}).get_json()
    assert [item["id"] for item in listed["keyresults"]] == [key_result["id"]]


def test_empty_patch_changes_nothing_but_modified_at(client, objective):
    for data in (b"{}", b""):
        response = client.patch(objective_path(objective), data=data, content_type=MERGE_PATCH)
        assert response.status_code == 200, response.get_json()
        assert response.get_json() == dict(objective, modified_at="2026-02-02T00:00:00Z", **NO_CLOSE_OUT)


def test_patch_keeps_created_at_and_moves_modified_at(client, clock, objective):
    for now in ("2026-03-03T12:34:56Z", "2026-04-04T00:00:01Z"):
        clock.now = now
        updated = patched(client, objective_path(objective), {"name": now})
        assert (updated["created_at"], updated["modified_at"]) == ("2026-01-01T00:00:00Z", now)


def test_objective_patch_ignores_read_only_and_unknown_fields(client, objective):
    body = {"id": MISSING_ID, "created_at": "2000-01-01T00:00:00Z", "modified_at": "2000-01-01T00:00:00Z",
            "objective_id": MISSING_ID, "colour": "red", "name": "Renamed"}
    updated = patched(client, objective_path(objective), body)
    assert updated == dict(objective, name="Renamed", modified_at="2026-02-02T00:00:00Z")


def test_sending_back_a_fetched_objective_as_a_patch_changes_nothing_but_modified_at(client, objective):
    assert patched(client, objective_path(objective), objective) == dict(
        objective, modified_at="2026-02-02T00:00:00Z")


# --- objectives: null -----------------------------------------------------------------------


@pytest.mark.parametrize("field", ["description", "team_id", "assignee_id", "parent_objective_id"])
def test_null_clears_a_nullable_objective_field(client, runner, cycle, field):
    values = {"description": "Words", "team_id": make_team(client)["id"],
              "assignee_id": make_user(runner)["id"],
              "parent_objective_id": make_objective(client, cycle["id"], name="Parent")["id"]}
    objective = make_objective(client, cycle["id"], **values)
    updated = patched(client, objective_path(objective), {field: None})
    assert updated[field] is None
    assert {k: updated[k] for k in values if k != field} == {k: v for k, v in values.items() if k != field}


@pytest.mark.parametrize("field", ["name", "cycle_id", "is_company", "is_personal"])
def test_null_is_refused_for_a_non_nullable_objective_field(client, objective, field):
    assert_error(patch(client, objective_path(objective), {field: None}), 400, field)
    assert fetch(client, objective_path(objective)) == objective


# --- objectives: the merged result is validated like a full update ------------------------


@pytest.mark.parametrize("body, field", [
    ({"name": ""}, "name"),
    ({"name": " \t\u3000"}, "name"),
    ({"name": "x" * 501}, "name"),
    ({"name": 7}, "name"),
    ({"description": "a\x00b"}, "description"),
    ({"description": "x" * 10_001}, "description"),
    ({"is_company": "yes"}, "is_company"),
    ({"is_personal": 1}, "is_personal"),
    ({"team_id": 3}, "team_id"),
])
def test_objective_patch_validates_each_field_like_an_update(client, objective, body, field):
    assert_error(patch(client, objective_path(objective), body), 400, field)
    assert fetch(client, objective_path(objective)) == objective


def test_company_and_personal_rule_applies_to_the_merged_objective(client, objective):
    # Stored: personal. Patching company alone would make it both.
    assert_error(patch(client, objective_path(objective), {"is_company": True}), 400, "is_company", "is_personal")
    assert fetch(client, objective_path(objective)) == objective


@pytest.mark.parametrize("field", ["cycle_id", "team_id", "assignee_id", "parent_objective_id"])
def test_objective_patch_with_an_unknown_reference_is_400_naming_it(client, objective, field):
    assert_error(patch(client, objective_path(objective), {field: MISSING_ID}), 400, field)
    assert fetch(client, objective_path(objective)) == objective


def test_objective_patch_cannot_make_the_objective_its_own_parent(client, objective):
    response = patch(client, objective_path(objective), {"parent_objective_id": objective["id"]})
    assert_error(response, 400, "parent_objective_id")
    assert fetch(client, objective_path(objective)) == objective


def test_objective_patch_cannot_close_an_alignment_loop(client, cycle, objective):
    child = make_objective(client, cycle["id"], name="Child", parent_objective_id=objective["id"])
    grandchild = make_objective(client, cycle["id"], name="Grandchild", parent_objective_id=child["id"])
    response = patch(client, objective_path(objective), {"parent_objective_id": grandchild["id"], "name": "Loop"})
    assert_error(response, 400, "parent_objective_id")
    assert fetch(client, objective_path(objective)) == objective


def test_objective_patch_keeps_a_stored_parent_without_a_loop_error(client, cycle):
    parent = make_objective(client, cycle["id"], name="Parent")
    child = make_objective(client, cycle["id"], name="Child", parent_objective_id=parent["id"])
    assert patched(client, objective_path(child), {"name": "Still a child"})["parent_objective_id"] == parent["id"]


# --- key results: fields present change, fields absent stay -------------------------------


@pytest.mark.parametrize("field, value, stored", [
    ("name", "Reach more", "Reach more"),
    ("confidence", "0.25", "0.25"),
    ("confidence", 1, "1.00"),
    ("confidence", 0, "0.00"),
    ("current_value", 7.5, "7.50"),
    ("current_value", "-1e3", "-1000.00"),
    ("target_value_min", "12.125", "12.125"),
])
def test_key_result_patch_changes_only_the_field_sent(client, key_result, field, value, stored):
    updated = patched(client, key_result_path(key_result), {field: value})
    assert updated == dict(key_result, **{field: stored}, modified_at="2026-02-02T00:00:00Z")


def test_absent_decimals_keep_their_value_where_a_full_update_zeroes_them(client, key_result):
    updated = patched(client, key_result_path(key_result), {"name": "Renamed"})
    assert (updated["confidence"], updated["current_value"]) == ("0.90", "5.00")


def test_key_result_patch_ignores_read_only_and_unknown_fields(client, cycle, key_result):
    other = make_objective(client, cycle["id"], name="Other")
    body = {"id": MISSING_ID, "objective_id": other["id"], "created_at": "2000-01-01T00:00:00Z",
            "modified_at": "2000-01-01T00:00:00Z", "colour": "red", "name": "Renamed"}
    updated = patched(client, key_result_path(key_result), body)
    assert updated == dict(key_result, name="Renamed", modified_at="2026-02-02T00:00:00Z")


def test_sending_back_a_fetched_key_result_as_a_patch_changes_nothing_but_modified_at(client, key_result):
    assert patched(client, key_result_path(key_result), key_result) == dict(
        key_result, modified_at="2026-02-02T00:00:00Z")


# --- key results: targets after a type change ---------------------------------------------


@pytest.mark.parametrize("body, low, high", [
    ({"type": "negative"}, "10.00", None),
    ({"type": "range", "target_value_max": "20"}, "10.00", "20.00"),
    ({"type": "range", "target_value_min": 1, "target_value_max": 2}, "1.00", "2.00"),
    ({"type": "baseline", "target_value_min": None}, None, None),
    ({"type": "milestone", "target_value_min": None}, "1.00", None),
    ({"type": "milestone", "target_value_min": "1"}, "1.00", None),
])
def test_type_change_keeps_or_takes_the_targets_it_needs(client, key_result, body, low, high):
    updated = patched(client, key_result_path(key_result), body)
    assert (updated["type"], updated["target_value_min"], updated["target_value_max"]) == (body["type"], low, high)


@pytest.mark.parametrize("body, field", [
    ({"type": "range"}, "target_value_max"),  # the stored max is null
    ({"type": "baseline"}, "target_value_min"),  # the stored min is 10
    ({"type": "milestone"}, "target_value_min"),  # 10 is not 1
    ({"type": "range", "target_value_max": "5"}, "target_value_min"),  # stored min 10 > 5
    ({"target_value_max": "20"}, "target_value_max"),  # a positive key result takes no max
    ({"target_value_min": None}, "target_value_min"),  # a positive key result needs a min
    ({"type": "sideways"}, "type"),
])
def test_merged_targets_must_fit_the_type(client, key_result, body, field):
    assert_error(patch(client, key_result_path(key_result), body), 400, field)
    assert fetch(client, key_result_path(key_result)) == key_result


def test_null_clears_a_range_max_when_the_type_leaves_range(client, cycle):
    owner = make_objective(client, cycle["id"])
    key_result = make_key_result(client, owner["id"], type="range", target_value_min="1", target_value_max="9")
    assert_error(patch(client, key_result_path(key_result), {"type": "positive"}), 400, "target_value_max")
    updated = patched(client, key_result_path(key_result), {"type": "positive", "target_value_max": None})
    assert (updated["target_value_min"], updated["target_value_max"]) == ("1.00", None)


def test_patching_only_the_min_of_a_range_checks_it_against_the_stored_max(client, cycle):
    owner = make_objective(client, cycle["id"])
    key_result = make_key_result(client, owner["id"], type="range", target_value_min="1", target_value_max="9")
    assert_error(patch(client, key_result_path(key_result), {"target_value_min": "10"}), 400, "target_value_min")
    assert patched(client, key_result_path(key_result), {"target_value_min": "9"})["target_value_min"] == "9.00"


# --- key results: null and bad values ---------------------------------------------------------


@pytest.mark.parametrize("field", ["name", "type", "confidence", "current_value"])
def test_null_is_refused_for_a_non_nullable_key_result_field(client, key_result, field):
    assert_error(patch(client, key_result_path(key_result), {field: None}), 400, field)
    assert fetch(client, key_result_path(key_result)) == key_result


@pytest.mark.parametrize("body, field", [
    ({"name": "   "}, "name"),
    ({"confidence": "1.5"}, "confidence"),
    ({"confidence": -0.1}, "confidence"),
    ({"confidence": True}, "confidence"),
    ({"current_value": "abc"}, "current_value"),
    ({"current_value": "0.1234567"}, "current_value"),
    ({"current_value": "1e15"}, "current_value"),
    ({"target_value_min": ""}, "target_value_min"),
])
def test_key_result_patch_validates_each_field_like_an_update(client, key_result, body, field):
    assert_error(patch(client, key_result_path(key_result), body), 400, field)
    assert fetch(client, key_result_path(key_result)) == key_result


# --- both: unknown ids, bodies, content types, one transaction ----------------------------


@pytest.mark.parametrize("path", ["/v1/objectives", "/v1/keyresults"])
@pytest.mark.parametrize("resource_id", [MISSING_ID, "not-an-id"])
def test_patch_of_an_unknown_id_is_404(client, path, resource_id):
    assert_error(patch(client, f"{path}/{resource_id}", {"name": "x"}), 404)
    assert_error(patch(client, f"{path}/{resource_id}", {"name": None}), 404)


@pytest.mark.parametrize("data", [b"[]", b'"text"', b"42", b"null", b"{", b'{"name": "a", "name": "b"}', b"\xff\xfe"])
def test_body_that_is_not_a_json_object_is_400(client, objective, key_result, data):
    for path, stored in ((objective_path(objective), objective), (key_result_path(key_result), key_result)):
        assert_error(client.patch(path, data=data, content_type=MERGE_PATCH), 400)
        assert fetch(client, path) == stored


@pytest.mark.parametrize("content_type", [MERGE_PATCH, "application/json", None, "text/plain"])
def test_body_is_read_as_json_whatever_the_content_type(client, objective, key_result, content_type):
    headers = {} if content_type is None else {"Content-Type": content_type}
    for path in (objective_path(objective), key_result_path(key_result)):
        response = client.patch(path, data=json.dumps({"name": f"Sent as {content_type}"}), headers=headers)
        assert response.status_code == 200, response.get_json()
        assert response.get_json()["name"] == f"Sent as {content_type}"


@pytest.mark.parametrize("path", ["/v1/objectives/{id}", "/v1/keyresults/{id}"])
def test_allow_lists_patch(client, path):
    path = path.format(id=MISSING_ID)
    for response in (client.put(path, json={}), client.options(path)):
        assert {"GET", "POST", "PATCH", "DELETE"} <= {m.strip() for m in response.headers["Allow"].split(",")}


def test_post_stays_a_full_replacement(client, key_result, objective):
    replaced = client.post(key_result_path(key_result), json={"name": "Replaced", "type": "baseline"}).get_json()
    assert (replaced["confidence"], replaced["current_value"]) == ("0.00", "0.00")
    replaced = client.post(objective_path(objective), json={"name": "Replaced", "cycle_id": objective["cycle_id"]})
    assert (replaced.get_json()["description"], replaced.get_json()["is_personal"]) == (None, False)


@pytest.mark.parametrize("module, to_json, path_of, fixture", [
    (okr.api.objectives, "objective_json", objective_path, "objective"),
    (okr.api.key_results, "key_result_json", key_result_path, "key_result"),
])
def test_patch_failing_after_its_write_is_rolled_back(request, client, monkeypatch, module, to_json, path_of,
                                                      fixture):
    stored = request.getfixturevalue(fixture)
    real, calls = getattr(module, to_json), []

    def fail_on_the_written_row(row):
        calls.append(row)
        if len(calls) == 1:  # the stored row, as the base the patch is merged over
            return real(row)
        raise RuntimeError("injected failure after the write")

    monkeypatch.setattr(module, to_json, fail_on_the_written_row)
    assert_error(patch(client, path_of(stored), {"name": "Half done"}), 500)
    assert len(calls) == 2
    monkeypatch.undo()
    assert fetch(client, path_of(stored)) == stored


@pytest.mark.parametrize("fixture, path_of, table", [
    ("objective", objective_path, "objectives"),
    ("key_result", key_result_path, "key_results"),
])
def test_patch_reads_merges_and_writes_in_one_write_transaction(request, app, client, fixture, path_of, table):
    stored = request.getfixturevalue(fixture)
    statements = [" ".join(sql.split())
                  for sql in statements_of(app, client, lambda: patch(client, path_of(stored), {"name": "Once"}))]
    begin = statements.index("BEGIN IMMEDIATE")
    read = next(i for i, s in enumerate(statements) if s.startswith(f"SELECT * FROM {table} WHERE id ="))
    write = next(i for i, s in enumerate(statements) if s.startswith(f"UPDATE {table} SET"))
    commit = statements.index("COMMIT")
    assert begin < read < write < commit
    assert [s for s in statements if s.startswith("BEGIN")] == ["BEGIN IMMEDIATE"]


# --- over real HTTP ---------------------------------------------------------------------------


@pytest.mark.slow
def test_patch_end_to_end_over_waitress(live_server):
    http = live_server
    cycle = http.post("/v1/cycles", {"name": "Q1"}).ok()
    objective = http.post("/v1/objectives", {"name": "Grow", "cycle_id": cycle["id"], "is_company": True,
                                             "is_personal": False, "description": "Words"}).ok()
    path = f"/v1/objectives/{objective['id']}"
    for headers in ({"Content-Type": MERGE_PATCH}, {"Content-Type": "application/json"}, {}):
        updated = http.request("PATCH", path, {"description": None}, headers=headers).ok()
        assert updated["description"] is None and updated["is_company"] is True and updated["name"] == "Grow"
    assert {**http.get(path).ok(), **NO_CLOSE_OUT} == updated

    refused = http.request("PATCH", path, {"is_personal": True}, headers={"Content-Type": MERGE_PATCH})
    assert refused.status == 400 and "is_personal" in refused.json()["details"]
    assert http.request("PATCH", f"/v1/objectives/{MISSING_ID}", {"name": "x"}).status == 404

    key_result = http.post(f"{path}/keyresults", {"name": "Reach", "type": "positive", "target_value_min": "10",
                                                  "confidence": "0.8"}).ok()
    kr_path = f"/v1/keyresults/{key_result['id']}"
    updated = http.request("PATCH", kr_path, {"type": "range", "target_value_max": 20, "current_value": "3"}).ok()
    assert (updated["type"], updated["target_value_min"], updated["target_value_max"], updated["current_value"],
            updated["confidence"]) == ("range", "10.00", "20.00", "3.00", "0.80")
    # a PATCH answers the owner and unit too
    assert {**http.get(kr_path).ok(), "owner_id": None, "unit": None, "unit_position": None, "score": None,
            "weight": 1, "progress_from": "measure"} == updated
    refused = http.request("PATCH", kr_path, {"type": None})
    assert refused.status == 400 and refused.json()["details"].keys() == {"type"}
    assert http.request("PATCH", kr_path, raw=b"[]").status == 400
    # a PATCH answers the owner and unit too
    assert {**http.get(kr_path).ok(), "owner_id": None, "unit": None, "unit_position": None, "score": None,
            "weight": 1, "progress_from": "measure"} == updated
