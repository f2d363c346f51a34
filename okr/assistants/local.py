"""`okr mcp --as EMAIL`: the MCP server over stdio, on the machine that holds the database, for an assistant that
starts it (Claude Desktop, an IDE). It acts for the person the email names, with their role; their assistant's name
is the one the client gives as it connects. stdout carries MCP's messages only; the log goes to stderr."""
import asyncio

from ..accounts.assistant_grants import Grant
from .in_process import Caller


def serve_stdio(app, grant: Grant):
    """Serves MCP on stdin and stdout until the client closes them."""
    from . import tools  # the SDK, imported only here and at /mcp's first call
    tools.CALLER.set(Caller(app, grant))
    asyncio.run(tools.server.run_stdio_async())
