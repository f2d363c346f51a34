"""AI assistants: the MCP server (okr.assistants.tools), over stdio (`okr mcp --as EMAIL`) and over Streamable HTTP
at /mcp, acting for one person with their rights; every change it makes is on the record as theirs, via it."""


def init_app(app):
    from ..accounts import oauth_server
    from . import remote  # the SDK itself is imported at the first exchange (okr.assistants.remote)
    oauth_server.init_app(app)
    app.register_blueprint(remote.bp)
