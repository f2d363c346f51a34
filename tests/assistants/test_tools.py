"""The MCP server's tools, resources and prompts, called through the SDK's own client in this process: what each
answers, values as people write them, a viewer's and a read-only assistant's writes refused, bad arguments refused
with the API's own message and nothing written, and every change on the record as the person's, via the
assistant."""
import contextvars
import json

import pytest

from okr.assistants.in_process import Caller

from helpers import fetch, fetch_key_result, run_coroutine
from mcp_calls import grant_of, text_of

READING = {"whoami", "my_week", "list_cycles", "cycle_summary", "quality_checks", "get_objective", "get_key_result",
           "search", "activity"}
WRITING = {"check_in", "comment", "create_objective", "create_key_result", "update_objective", "update_key_result"}


def session(app, user, steps, read_only=False):
    """steps(client) run with the SDK's client connected in process, acting for user."""
    from mcp import Client

    from okr.assistants import tools

    async def run():
        async with Client(tools.server) as client:
            return await steps(client)

    def in_context():
        tools.CALLER.set(Caller(app, grant_of(user, read_only)))
        return run_coroutine(run)
    return contextvars.Context().run(in_context)


def checkins_of(client, key_result_id):
    return fetch(client, f"/v1/keyresults/{key_result_id}/checkins")["checkins"]


def test_every_tool_is_listed_with_a_schema_a_description_and_its_hints(app, person):
    ada = person()

    async def listed(client):
        return (await client.list_tools()).tools
    tools = {tool.name: tool for tool in session(app, ada, listed)}
    assert set(tools) == READING | WRITING
    for name, tool in tools.items():
        assert tool.description and len(tool.description) < 300, name
        assert tool.input_schema["type"] == "object"
        assert "ctx" not in tool.input_schema.get("properties", {}), name
        assert tool.annotations.read_only_hint is (name in READING), name
        assert tool.annotations.open_world_hint is False
    assert tools["update_key_result"].annotations.destructive_hint is True
    assert tools["check_in"].annotations.destructive_hint is False
    assert set(tools["check_in"].input_schema["required"]) == {"key_result_id", "value"}


def test_whoami_names_the_person_their_role_and_the_assistant(call, person):
    result = call(person("viewer"), "whoami", via="Claude Desktop")
    assert not result.is_error
    assert "Ada Lovelace" in text_of(result) and "viewer" in text_of(result) and "Claude Desktop" in text_of(result)
    assert result.structured_content["may_write"] is False
    assert result.structured_content["user"]["email"] == "ada@example.com"


def test_a_check_in_takes_values_as_people_write_them_and_is_on_the_record_via_the_assistant(call, client, person,
                                                                                            okrs):
    ada = person()
    result = call(ada, "check_in", {"key_result_id": okrs["revenue"]["id"], "value": "$42,000", "confidence": "80 %",
                                    "comment": "Two big deals closed"}, via="Claude Desktop")
    assert not result.is_error, text_of(result)
    assert "$42,000" in text_of(result)
    latest = checkins_of(client, okrs["revenue"]["id"])[-1]
    assert (latest["value"], latest["confidence"], latest["comment"], latest["author_id"]) == (
        "42000.00", "0.80", "Two big deals closed", ada["id"])
    event = fetch(client, "/v1/events?type=checkin.created")["events"][-1]
    assert event["actor"] == {"type": "user", "id": ada["id"], "name": "Ada Lovelace", "via": "Claude Desktop"}
    feed = call(ada, "activity", {"cycle_id": okrs["cycle"]["id"]})
    assert "Ada Lovelace (via Claude Desktop) checked in $42,000" in text_of(feed)
    result = call(ada, "check_in", {"key_result_id": okrs["signups"]["id"], "value": "60k"})
    assert checkins_of(client, okrs["signups"]["id"])[-1]["value"] == "60000.00"


def test_a_model_may_send_values_as_json_numbers(call, client, person, okrs):
    ada = person()
    result = call(ada, "check_in", {"key_result_id": okrs["signups"]["id"], "value": 42, "confidence": 0.85})
    assert not result.is_error, text_of(result)
    latest = checkins_of(client, okrs["signups"]["id"])[-1]
    assert (latest["value"], latest["confidence"]) == ("42.00", "0.85")
    made = call(ada, "create_key_result", {"objective_id": okrs["objective"]["id"], "name": "Latency", "type": "negative",
                                           "target": 120.5, "start": 300})
    assert not made.is_error, text_of(made)
    assert fetch_key_result(client, made.structured_content["key_result"]["id"])["target_value_min"] == "120.50"


@pytest.mark.parametrize("arguments, field", [
    ({"value": "lots"}, "value"),
    ({"value": "12", "confidence": "150 %"}, "confidence"),
    ({"value": "1e999"}, "value"),
    ({"value": "12", "comment": "x" * 10001}, "comment"),
])
def test_a_bad_check_in_is_a_tool_error_naming_the_field_and_writes_nothing(call, client, person, okrs, arguments,
                                                                          field):
    before = checkins_of(client, okrs["signups"]["id"])
    result = call(person(), "check_in", {"key_result_id": okrs["signups"]["id"], **arguments})
    assert result.is_error
    assert field in text_of(result)
    assert checkins_of(client, okrs["signups"]["id"]) == before


WRITES = [
    ("check_in", lambda o: {"key_result_id": o["signups"]["id"], "value": "5"}),
    ("comment", lambda o: {"key_result_id": o["signups"]["id"], "body": "Nice"}),
    ("create_objective", lambda o: {"name": "New", "cycle_id": o["cycle"]["id"]}),
    ("create_key_result", lambda o: {"objective_id": o["objective"]["id"], "name": "X", "type": "milestone"}),
    ("update_objective", lambda o: {"objective_id": o["objective"]["id"], "name": "Renamed"}),
    ("update_key_result", lambda o: {"key_result_id": o["signups"]["id"], "target": "200"}),
]


@pytest.mark.parametrize("tool, arguments", WRITES, ids=[name for name, _ in WRITES])
@pytest.mark.parametrize("role, read_only, refusal", [
    ("viewer", False, "a viewer may look but not change anything"),
    ("editor", True, "connected to read only"),
])
def test_every_write_is_refused_to_a_viewers_and_a_read_only_assistant_and_writes_nothing(
        call, client, person, okrs, tool, arguments, role, read_only, refusal):
    someone = person(role)
    events_before = fetch(client, "/v1/events")["events"]
    result = call(someone, tool, arguments(okrs), read_only=read_only)
    assert result.is_error
    assert refusal in text_of(result)
    assert fetch(client, "/v1/events")["events"] == events_before


@pytest.mark.parametrize("tool, arguments", WRITES, ids=[name for name, _ in WRITES])
def test_every_write_works_for_an_editors_assistant(call, client, person, okrs, tool, arguments):
    editor = person("editor")
    events_before = len(fetch(client, "/v1/events")["events"])
    result = call(editor, tool, arguments(okrs))
    assert not result.is_error, text_of(result)
    events = fetch(client, "/v1/events")["events"][events_before:]
    assert events and all(event["actor"].get("via") == "Test Assistant" for event in events)


def test_get_key_result_has_progress_the_newest_check_ins_first_and_comments(call, client, person, okrs):
    ada = person()
    for value in ("10", "20", "30"):
        call(ada, "check_in", {"key_result_id": okrs["signups"]["id"], "value": value})
    call(ada, "comment", {"key_result_id": okrs["signups"]["id"], "body": "Campaign starts Monday"})
    result = call(ada, "get_key_result", {"key_result_id": okrs["signups"]["id"]})
    facts = result.structured_content
    assert facts["key_result"]["progress"] == fetch(
        client, f"/v1/objectives/{okrs['objective']['id']}/report")["objective"]["key_results"][0]["progress"]
    assert [c["value"] for c in facts["checkins"]][:3] == ["30.00", "20.00", "10.00"]
    assert facts["comments"][0]["body"] == "Campaign starts Monday"
    assert "Campaign starts Monday" in text_of(result) and "progress 30%" in text_of(result)


def test_cycle_summary_counts_by_status_and_says_what_is_behind_and_why(call, client, person, okrs):
    ada = person()
    call(ada, "check_in", {"key_result_id": okrs["signups"]["id"], "value": "10", "confidence": "20 %"})
    call(ada, "check_in", {"key_result_id": okrs["revenue"]["id"], "value": "$60,000"})
    result = call(ada, "cycle_summary", {"cycle_id": okrs["cycle"]["id"]})
    report = fetch(client, f"/v1/cycles/{okrs['cycle']['id']}/report")
    statuses = [kr["status"] for kr in report["objectives"][0]["key_results"]]
    assert result.structured_content["status_counts"] == {s: statuses.count(s) for s in statuses}
    behind = [kr["name"] for kr in result.structured_content["behind"]]
    assert behind == [kr["name"] for kr in report["objectives"][0]["key_results"]
                      if kr["status"] in ("off_track", "at_risk")]
    assert "Signups" in behind and "confidence 20%" in text_of(result)


def test_update_key_result_changes_only_what_it_is_given_and_null_clears(call, client, person, okrs):
    ada = person()
    client.patch(f"/v1/keyresults/{okrs['revenue']['id']}", json={"owner_id": ada["id"]})
    result = call(ada, "update_key_result", {"key_result_id": okrs["revenue"]["id"], "target": "$80k"})
    assert not result.is_error, text_of(result)
    report = fetch(client, f"/v1/objectives/{okrs['objective']['id']}/report")["objective"]
    revenue = next(kr for kr in report["key_results"] if kr["id"] == okrs["revenue"]["id"])
    assert (revenue["target_value_min"], revenue["name"], revenue["owner_id"], revenue["unit"]) == (
        "80000.00", "Revenue", ada["id"], "$")
    call(ada, "update_key_result", {"key_result_id": okrs["revenue"]["id"], "owner_id": None})
    report = fetch(client, f"/v1/objectives/{okrs['objective']['id']}/report")["objective"]
    assert next(kr for kr in report["key_results"] if kr["id"] == okrs["revenue"]["id"])["owner_id"] is None


def test_update_objective_keeps_what_is_left_out(call, client, person, okrs):
    ada = person()
    call(ada, "update_objective", {"objective_id": okrs["objective"]["id"], "description": "Why it matters"})
    objective = fetch(client, f"/v1/objectives/{okrs['objective']['id']}")
    assert (objective["name"], objective["description"]) == ("Grow the business", "Why it matters")
    call(ada, "update_objective", {"objective_id": okrs["objective"]["id"], "description": None})
    assert fetch(client, f"/v1/objectives/{okrs['objective']['id']}")["description"] is None


def test_create_tools_take_figures_as_people_write_them_and_refuse_with_the_apis_message(call, client, person, okrs):
    ada = person()
    made = call(ada, "create_key_result", {"objective_id": okrs["objective"]["id"], "name": "ARR", "type": "positive",
                                           "target": "1.5M"})
    assert fetch_key_result(client, made.structured_content["key_result"]["id"])["target_value_min"] == "1500000.00"
    refused = call(ada, "create_key_result", {"objective_id": okrs["objective"]["id"], "name": "Band",
                                              "type": "range", "target": "10"})
    assert refused.is_error and "target_value_max" in text_of(refused)
    refused = call(ada, "create_objective", {"name": "Orphan", "cycle_id": "6f1c1b0e-0000-4000-8000-000000000000"})
    assert refused.is_error and "cycle_id" in text_of(refused)


@pytest.mark.parametrize("value", ["../users", "a/b", "x" * 65, "", "%2e%2e"])
def test_an_id_that_is_no_id_is_refused_before_any_path_is_built(call, person, value):
    result = call(person(), "get_key_result", {"key_result_id": value})
    assert result.is_error
    assert "key_result_id" in text_of(result)


def test_an_unknown_id_is_the_apis_not_found(call, person):
    result = call(person(), "get_objective", {"objective_id": "6f1c1b0e-0000-4000-8000-000000000000"})
    assert result.is_error and "not found" in text_of(result)


def test_search_list_cycles_and_activity_read_what_the_api_and_the_feed_hold(call, person, okrs):
    ada = person()
    found = call(ada, "search", {"query": "Signu"}).structured_content["results"]
    assert [(r["type"], r["id"]) for r in found] == [("key_result", okrs["signups"]["id"])]
    cycles = call(ada, "list_cycles").structured_content["cycles"]
    assert [c["id"] for c in cycles] == [okrs["cycle"]["id"]]
    feed = call(ada, "activity", {"cycle_id": okrs["cycle"]["id"], "limit": 2}).structured_content["events"]
    assert len(feed) == 2 and "Revenue" in feed[0]["text"]


def test_my_week_lists_the_key_results_the_person_owns_those_waiting_for_a_check_in_first(call, client, person):
    ada = person()
    cycle = client.post("/v1/cycles", json={"name": "Now", "starts_on": "2000-01-01", "ends_on": "2999-12-31"}).get_json()
    objective = client.post("/v1/objectives", json={"name": "Ship", "cycle_id": cycle["id"], "is_company": False,
                                                    "is_personal": False}).get_json()
    fresh = client.post(f"/v1/objectives/{objective['id']}/keyresults", json={
        "name": "Fresh", "type": "positive", "target_value_min": "10", "owner_id": ada["id"]}).get_json()
    waiting = client.post(f"/v1/objectives/{objective['id']}/keyresults", json={
        "name": "Waiting", "type": "positive", "target_value_min": "10", "owner_id": ada["id"]}).get_json()
    client.post(f"/v1/objectives/{objective['id']}/keyresults", json={
        "name": "Someone else's", "type": "positive", "target_value_min": "10"})
    call(ada, "check_in", {"key_result_id": fresh["id"], "value": "3"})
    week = call(ada, "my_week")
    names = [kr["name"] for kr in week.structured_content["key_results"]]
    assert names == ["Waiting", "Fresh"]
    assert week.structured_content["key_results"][0]["needs_update"] is True
    assert "needs a check-in: Waiting" in text_of(week)


def test_a_deactivated_persons_assistant_is_refused(app, call, runner, person, okrs):
    ada = person()
    assert runner.invoke(args=["users", "deactivate", "ada@example.com"]).exit_code == 0
    result = call(ada, "get_key_result", {"key_result_id": okrs["signups"]["id"]})
    assert result.is_error and "deactivated" in text_of(result)


def test_resources_and_prompts(app, person, okrs):
    ada = person()

    async def steps(client):
        templates = (await client.list_resource_templates()).resource_templates
        listed = (await client.list_resources()).resources
        cycle = await client.read_resource(f"okr://cycles/{okrs['cycle']['id']}")
        key_result = await client.read_resource(f"okr://keyresults/{okrs['signups']['id']}")
        prompts = (await client.list_prompts()).prompts
        review = await client.get_prompt("prepare_quarter_review", {"cycle_id": okrs["cycle"]["id"]})
        current = await client.get_prompt("prepare_quarter_review", {})  # no cycle: the current one's, no error
        return templates, listed, cycle, key_result, prompts, review, current
    templates, listed, cycle, key_result, prompts, review, current = session(app, ada, steps)
    assert {t.uri_template for t in templates} == {"okr://cycles/{cycle_id}", "okr://objectives/{objective_id}",
                                                  "okr://keyresults/{key_result_id}"}
    assert [str(r.uri) for r in listed] == ["okr://cycles"]
    assert json.loads(cycle.contents[0].text)["cycle"]["id"] == okrs["cycle"]["id"]
    assert json.loads(key_result.contents[0].text)["key_result"]["id"] == okrs["signups"]["id"]
    assert {p.name for p in prompts} == {"weekly_check_in", "prepare_quarter_review"}
    assert okrs["cycle"]["id"] in review.messages[0].content.text
    assert "the current cycle (list_cycles finds it)" in current.messages[0].content.text


def test_quality_checks_are_the_apis_findings_with_their_ids(call, client, person, okrs):
    viewer = person("viewer")
    result = call(viewer, "quality_checks", {"cycle_id": okrs["cycle"]["id"]})
    assert not result.is_error, text_of(result)
    answer = fetch(client, f"/v1/cycles/{okrs['cycle']['id']}/checks")
    assert result.structured_content == answer and answer["count"] == 3
    lines = text_of(result).splitlines()
    assert lines[0] == "3 things to fix in this cycle:"
    signups = next(check for check in answer["checks"] if check["key_result_id"] == okrs["signups"]["id"])
    assert (f"- warning: {signups['message']} [key result id {okrs['signups']['id']}, objective id "
            f"{okrs['objective']['id']}]") in lines
    made = client.post("/v1/cycles", json={"name": "Empty"}).get_json()
    assert text_of(call(viewer, "quality_checks", {"cycle_id": made["id"]})) == (
        "No issues found: every quality check passes in this cycle.")
    missing = call(viewer, "quality_checks", {"cycle_id": "00000000-0000-4000-8000-000000000000"})
    assert missing.is_error and "cycle" in text_of(missing)
