"""What the assistants' tests share: people with each role, their tokens, a quarter's OKRs, and calls to the MCP
server, in process (the SDK's own client connected to the server object) or over /mcp (Flask's test client)."""
import contextvars
import json

import pytest

from okr.accounts import assistant_grants
from okr.assistants.in_process import Caller
from okr.db import transaction
from okr.store import users

from helpers import make_cycle, make_key_result, make_objective, run_coroutine
from mcp_calls import MCP_HEADERS, grant_of

@pytest.fixture
def person(app):
    """make(role, name, email): a user with that role, as a dict."""
    def make(role="editor", name="Ada Lovelace", email="ada@example.com"):
        with app.app_context(), transaction() as db:
            return dict(users.create(db, name, email, role))
    return make


@pytest.fixture
def token_for(app):
    """token_for(user, name, read_only, days): a personal token made as the account page makes one."""
    def make(user, name="Claude Desktop", read_only=False, days=30):
        with app.app_context(), transaction() as db:
            return assistant_grants.make_personal_token(db, user, name, read_only, days)
    return make


@pytest.fixture
def okrs(client):
    """A cycle with one objective and two key results: Signups (100 users) and Revenue ($ before, 60k)."""
    cycle = make_cycle(client, "Q3")
    objective = make_objective(client, cycle["id"], "Grow the business")
    signups = make_key_result(client, objective["id"], "Signups", target_value_min="100")
    revenue = make_key_result(client, objective["id"], "Revenue", target_value_min="60000")
    response = client.patch(f"/v1/keyresults/{revenue['id']}", json={"unit": "$", "unit_position": "before"})
    assert response.status_code == 200, response.get_json()
    return {"cycle": cycle, "objective": objective, "signups": signups, "revenue": revenue}


@pytest.fixture
def call(app):
    """call(user, tool, arguments, read_only=False, via=...): the tool's CallToolResult, through the SDK's own client
    connected to the server in this process."""
    from mcp import Client

    from okr.assistants import tools

    def run(user, tool, arguments=None, read_only=False, via="Test Assistant"):
        async def called():
            async with Client(tools.server) as client:
                return await client.call_tool(tool, arguments or {})

        def in_context():
            tools.CALLER.set(Caller(app, grant_of(user, read_only, via)))
            return run_coroutine(called)
        return contextvars.Context().run(in_context)
    return run


@pytest.fixture
def mcp_post(client):
    """mcp_post(token, method, params): POST one JSON-RPC request to /mcp; the response."""
    def post(token, method, params=None, headers=None, request_id=1):
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        sent = dict(MCP_HEADERS, **({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {}))
        return client.post("/mcp", data=json.dumps(message), content_type="application/json", headers=sent)
    return post
