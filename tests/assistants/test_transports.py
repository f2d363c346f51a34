"""The MCP SDK's own client over both transports: stdio (`okr mcp --as EMAIL` as a process of its own) and
Streamable HTTP against real waitress, in both of the SDK's ways to connect (the initialize handshake, and the
2026-07-28 protocol's request-by-request exchange); every change on the record via the client's name."""
import asyncio
import json
import subprocess
import sys

import pytest

from helpers import APP_PY, fetch, run_coroutine, served_in_thread

pytestmark = pytest.mark.slow  # each starts a process or a server


def edited(client, okrs):
    """The check-ins made on Signups after it was made (its first is its start)."""
    return [event for event in fetch(client, "/v1/events?type=checkin.created")["events"]
            if event["data"]["key_result_id"] == okrs["signups"]["id"]][1:]


def test_the_sdks_client_over_stdio_reads_and_checks_in_as_the_person(app, client, okrs, tmp_path):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp_types import Implementation

    made = subprocess.run([sys.executable, str(APP_PY), "--database", app.config["DATABASE"], "users", "add",
                           "--name", "Ada", "--email", "ada@example.com"], capture_output=True, text=True, check=True)
    ada = json.loads(made.stdout)
    server = StdioServerParameters(command=sys.executable, args=[str(APP_PY), "--database", app.config["DATABASE"],
                                                                 "mcp", "--as", "ada@example.com"], cwd=str(tmp_path))

    async def session():
        async with Client(server, client_info=Implementation(name="Claude Desktop", version="1.0")) as mcp:
            tools = (await mcp.list_tools()).tools
            checked = await mcp.call_tool("check_in", {"key_result_id": okrs["signups"]["id"], "value": "42"})
            refused = await mcp.call_tool("check_in", {"key_result_id": okrs["signups"]["id"], "value": "many"})
            return tools, checked, refused
    tools, checked, refused = run_coroutine(session)
    assert len(tools) == 15
    assert not checked.is_error and refused.is_error
    [event] = edited(client, okrs)
    assert event["actor"] == {"type": "user", "id": ada["id"], "name": "Ada", "via": "Claude Desktop"}


def test_an_unknown_person_or_a_deactivated_one_stops_okr_mcp_with_one_line(app, runner):
    for args in (["mcp", "--as", "nobody@example.com"],):
        result = subprocess.run([sys.executable, str(APP_PY), "--database", app.config["DATABASE"], *args],
                                capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
        assert result.returncode != 0
        assert result.stderr.strip().splitlines()[-1] == "okr: no user has the email nobody@example.com"
        assert result.stdout == ""


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_the_sdks_client_over_streamable_http_against_waitress(app, client, okrs, person, token_for, mode):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    token = token_for(person(), "ChatGPT")

    async def session(url):
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as mcp:
            names = {tool.name for tool in (await mcp.list_tools()).tools}
            checked = await mcp.call_tool("check_in", {"key_result_id": okrs["signups"]["id"], "value": "7",
                                                       "confidence": "90 %"})
            summary = await mcp.call_tool("cycle_summary", {"cycle_id": okrs["cycle"]["id"]})
            return names, checked, summary
    with served_in_thread(app) as served:
        names, checked, summary = run_coroutine(lambda: session(served.url + "/mcp"))
    assert len(names) == 15
    assert not checked.is_error and checked.structured_content["checkin"]["confidence"] == "0.90"
    assert "Q3" in summary.content[0].text
    [event] = edited(client, okrs)
    assert event["actor"]["via"] == "ChatGPT"


def test_without_a_token_the_sdks_client_is_refused_with_the_challenge_it_reads(app):
    from mcp import Client

    from helpers import HttpClient

    async def session(url):
        async with Client(url, mode="legacy") as mcp:
            await mcp.list_tools()
    with served_in_thread(app) as served:
        with pytest.raises(Exception):
            run_coroutine(lambda: session(served.url + "/mcp"))
        answer = HttpClient(f"127.0.0.1:{served.port}").post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                                               headers={"Content-Type": "application/json"})
    assert answer.status == 401
    headers = {name.lower(): value for name, value in answer.headers.items()}
    assert headers["www-authenticate"] == (
        f'Bearer resource_metadata="http://127.0.0.1:{served.port}/.well-known/oauth-protected-resource"')
