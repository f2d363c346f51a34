"""/mcp over Flask's test client: a token or a 401 that names the resource's metadata, each way a token ends
refusing at once, GET answered 405 at once, Host and Origin checked as everywhere, the metadata itself, tokens
kept out of the database, the log and the events, a missing resource an MCP error, and expired grants out of the
list at once and out of the database at the hourly upkeep."""
import json
import logging
import sqlite3
import threading

import pytest

from okr.db import transaction
from okr.store import assistant_grants as stored_grants

from helpers import fetch, run_coroutine

CALL = {"name": "whoami", "arguments": {}}


def whoami(mcp_post, token, **headers):
    return mcp_post(token, "tools/call", CALL, headers=headers)


def assert_refused(response, why=None):
    assert response.status_code == 401, response.get_data(as_text=True)
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith('Bearer resource_metadata="http://localhost/.well-known/oauth-protected-resource"')
    if why is not None:
        assert 'error="invalid_token"' in challenge and why in challenge
        assert why in response.get_json()["message"]


def test_a_call_with_a_personal_token_acts_for_its_person_via_the_tokens_name(client, mcp_post, person, token_for,
                                                                              okrs):
    ada = person()
    token = token_for(ada, "Claude Desktop")
    response = mcp_post(token, "tools/call", {"name": "check_in", "arguments": {
        "key_result_id": okrs["signups"]["id"], "value": "42"}})
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    result = response.get_json()["result"]
    assert result["isError"] is False and result["structuredContent"]["checkin"]["value"] == "42.00"
    event = fetch(client, "/v1/events?type=checkin.created")["events"][-1]
    assert event["actor"] == {"type": "user", "id": ada["id"], "name": "Ada Lovelace", "via": "Claude Desktop"}


def test_initialize_and_the_lists_answer_in_json(mcp_post, person, token_for):
    token = token_for(person())
    response = mcp_post(token, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                              "clientInfo": {"name": "test", "version": "1"}})
    assert response.status_code == 200
    assert response.get_json()["result"]["serverInfo"]["name"] == "okr"
    assert {"tools", "resources", "prompts"} <= set(response.get_json()["result"]["capabilities"])
    tools = mcp_post(token, "tools/list").get_json()["result"]["tools"]
    assert len(tools) == 15


@pytest.mark.parametrize("authorization", [None, "Bearer", "Basic YTpi", "Bearer okr_pat_unknown", "Bearer x"])
def test_no_token_or_an_unknown_one_is_a_401_naming_the_metadata(client, authorization, person):
    person()
    headers = {"Accept": "application/json, text/event-stream"}
    if authorization:
        headers["Authorization"] = authorization
    response = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
    assert_refused(response)
    assert response.get_json()["code"] == 401


def test_an_expired_token_is_refused(clock, mcp_post, person, token_for):
    token = token_for(person(), days=30)
    assert whoami(mcp_post, token).status_code == 200
    clock.now = "2026-01-30T23:59:59Z"
    assert whoami(mcp_post, token).status_code == 200
    clock.now = "2026-01-31T00:00:00Z"
    assert_refused(whoami(mcp_post, token), "expired")


def test_a_disconnected_token_is_refused_at_once(app, mcp_post, person, token_for):
    ada = person()
    token = token_for(ada)
    assert whoami(mcp_post, token).status_code == 200
    with app.app_context(), transaction() as db:
        grant = stored_grants.listed(db, ada["id"])[0]
        stored_grants.delete(db, grant["id"], ada["id"])
    assert_refused(whoami(mcp_post, token), "unknown token")


def test_a_change_of_role_or_a_deactivation_ends_the_token_for_good(mcp_post, runner, person, token_for):
    token = token_for(person("editor"))
    assert runner.invoke(args=["users", "set-role", "ada@example.com", "viewer"]).exit_code == 0
    assert_refused(whoami(mcp_post, token), "unknown token")
    assert runner.invoke(args=["users", "set-role", "ada@example.com", "editor"]).exit_code == 0
    assert_refused(whoami(mcp_post, token), "unknown token")
    second = token_for(person("editor", "Bob", "bob@example.com"))
    assert runner.invoke(args=["users", "deactivate", "bob@example.com"]).exit_code == 0
    assert_refused(whoami(mcp_post, second), "unknown token")
    assert runner.invoke(args=["users", "activate", "bob@example.com"]).exit_code == 0
    assert_refused(whoami(mcp_post, second), "unknown token")


def test_a_read_only_tokens_write_is_a_tool_error_and_writes_nothing(client, mcp_post, person, token_for, okrs):
    token = token_for(person(), read_only=True)
    before = fetch(client, "/v1/events")["events"]
    response = mcp_post(token, "tools/call", {"name": "check_in", "arguments": {
        "key_result_id": okrs["signups"]["id"], "value": "42"}})
    result = response.get_json()["result"]
    assert result["isError"] is True and "read only" in result["content"][0]["text"]
    assert fetch(client, "/v1/events")["events"] == before


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_are_405_at_once(client, method, person, token_for):
    token = token_for(person())
    response = client.open("/mcp", method=method, headers={"Authorization": f"Bearer {token}",
                                                           "Accept": "text/event-stream"})
    assert response.status_code == 405
    assert response.headers["Allow"].replace(" ", "").split(",") == ["POST"] or "POST" in response.headers["Allow"]


def test_hosts_and_origins_are_checked_as_on_every_path(client, mcp_post, person, token_for):
    token = token_for(person())
    assert whoami(mcp_post, token, Host="attacker.example").status_code == 421
    assert whoami(mcp_post, token, Origin="http://attacker.example").status_code == 403
    assert whoami(mcp_post, token, Origin="http://localhost").status_code == 200


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"])
def test_the_protected_resources_metadata_names_mcp_and_this_server(app, client, path):
    metadata = client.get(path).get_json()
    assert metadata["resource"] == "http://localhost/mcp"
    assert metadata["authorization_servers"] == ["http://localhost"]
    assert metadata["bearer_methods_supported"] == ["header"]
    app.config["PUBLIC_URL"] = "https://okr.example.com"
    metadata = client.get(path, headers={"Host": "localhost"}).get_json()
    assert metadata["resource"] == "https://okr.example.com/mcp"


def test_tokens_are_kept_as_hashes_and_never_in_the_log_nor_the_events(app, client, mcp_post, person, token_for, okrs,
                                                                       caplog):
    ada = person()
    token = token_for(ada)
    caplog.set_level(logging.DEBUG)
    mcp_post(token, "tools/call", {"name": "check_in", "arguments": {"key_result_id": okrs["signups"]["id"],
                                                                      "value": "7"}})
    whoami(mcp_post, token + "x")
    whoami(mcp_post, token.replace("okr_pat_", "okr_at_"))
    assert token not in caplog.text and token[8:] not in caplog.text
    assert token[8:] not in json.dumps(fetch(client, "/v1/events"))
    with sqlite3.connect(app.config["DATABASE"]) as db:
        db.execute("PRAGMA wal_checkpoint(FULL)")
    with open(app.config["DATABASE"], "rb") as database:
        assert token[8:].encode() not in database.read()


def test_last_used_is_kept_at_most_once_a_minute(app, clock, mcp_post, person, token_for):
    ada = person()
    token = token_for(ada)

    def last_used():
        with app.app_context(), transaction(write=False) as db:
            return stored_grants.listed(db, ada["id"])[0]["last_used_at"]
    assert last_used() is None
    whoami(mcp_post, token)
    assert last_used() == "2026-01-01T00:00:00Z"
    clock.now = "2026-01-01T00:00:30Z"
    whoami(mcp_post, token)
    assert last_used() == "2026-01-01T00:00:00Z"
    clock.now = "2026-01-01T00:01:00Z"
    whoami(mcp_post, token)
    assert last_used() == "2026-01-01T00:01:00Z"


def test_mcp_serves_where_the_thread_already_runs_an_event_loop(mcp_post, person, token_for):
    """As inside an async server, or beside a test's sync Playwright: the exchange then gets a thread of its own."""
    token = token_for(person())

    async def inside_a_loop():
        return whoami(mcp_post, token)
    answer = run_coroutine(inside_a_loop)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert answer.get_json()["result"]["structuredContent"]["assistant"] == "Claude Desktop"


def test_reading_a_resource_that_is_not_there_is_an_mcp_error_without_a_traceback(caplog, mcp_post, person,
                                                                                   token_for):
    token = token_for(person())
    caplog.set_level(logging.INFO)
    answer = mcp_post(token, "resources/read", {"uri": "okr://keyresults/abcd"}).get_json()
    assert answer["error"]["code"] == -32602 and answer["error"]["message"] == "key result not found"
    assert [record.getMessage() for record in caplog.records if record.exc_info] == []


class OneRound(threading.Event):
    """A background job's stop that lets it work one round."""

    def wait(self, timeout=None):
        self.set()
        return True


def test_expired_grants_leave_the_list_at_once_and_the_database_at_the_hourly_upkeep(app, clock, person, token_for):
    from okr.server import background
    ada = person()
    token_for(ada, "Kept", days=90)
    token_for(ada, "Gone", days=30)
    clock.now = "2026-02-15T00:00:00Z"
    with app.app_context(), transaction(write=False) as db:
        assert [row["name"] for row in stored_grants.listed(db, ada["id"])] == ["Kept"]
    background.prune_events(app, OneRound())
    with sqlite3.connect(app.config["DATABASE"]) as db:
        assert db.execute("SELECT name FROM assistant_grants").fetchall() == [("Kept",)]
