"""What the assistants' tests share beyond their fixtures (tests/assistants/conftest.py): the headers of a JSON-RPC
POST to /mcp, a grant for a person, and a tool result's text."""
from okr.accounts import assistant_grants

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def grant_of(user, read_only=False, via="Test Assistant"):
    return assistant_grants.Grant(user["id"], user["name"], user["role"], read_only or user["role"] == "viewer", via)


def text_of(result):
    """A tool result's text."""
    return "\n".join(block.text for block in result.content)
