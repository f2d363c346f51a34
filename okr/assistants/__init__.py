"""AI assistants: the MCP server (okr.assistants.tools), over stdio (`okr mcp --as EMAIL`) and over Streamable HTTP
at /mcp, acting for one person with their rights; every change it makes is on the record as theirs, via it."""


def init_app(app):
    from . import remote  # the SDK and Authlib are imported at their first request (okr.assistants.remote)
    app.register_blueprint(remote.bp)
