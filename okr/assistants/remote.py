"""/mcp: the MCP server over Streamable HTTP, in the server's own process and worker threads, stateless, answering
in JSON; and the protected resource's metadata (RFC 9728) that tells an assistant where to sign in.

A POST /mcp carries a bearer token (okr.accounts.assistant_grants): without a live one it is a 401 whose
WWW-Authenticate names the metadata, as MCP's authorization spec asks. With one, the request's reading transaction
ends, and the SDK's Streamable HTTP transport serves the one exchange on an event loop of this thread's own: the
tools then run here, on this worker thread, and each of their calls into the API is a request (and a transaction)
of its own (okr.assistants.in_process). GET and DELETE /mcp are 405 at once: a stateless server opens no stream and
keeps no session. Host and Origin are checked by the pipeline's guards, as on every path.
"""
import asyncio
import contextvars
import json
from concurrent.futures import ThreadPoolExecutor

from flask import Blueprint, Response, current_app, g, request
from werkzeug.exceptions import MethodNotAllowed, Unauthorized

from .. import proxies
from ..accounts import access, assistant_grants, throttle
from ..db import finish_reading, get_db, own_write, reads_first
from .in_process import Caller

bp = Blueprint("assistants", __name__)

SCOPES = assistant_grants.SCOPES


class TokenRefused(Unauthorized):
    """A 401 with the WWW-Authenticate MCP clients read: where the resource's metadata is, and why the token was
    refused (RFC 6750's error)."""

    def __init__(self, description, error=None):
        super().__init__(description)
        self.error = error

    def get_headers(self, environ=None, scope=None):
        challenge = f'Bearer resource_metadata="{metadata_url()}"'
        if self.error:
            challenge += f', error="{self.error}", error_description="{self.description}"'
        return [*super().get_headers(environ, scope), ("WWW-Authenticate", challenge)]


def oauth():
    """okr.accounts.oauth_server, imported at the first request that needs it (Authlib with it)."""
    from ..accounts import oauth_server
    return oauth_server


def metadata_url():
    return proxies.service_root() + "/.well-known/oauth-protected-resource"


def bearer_token():
    """The request's bearer token, or None."""
    scheme, _, token = request.headers.get("Authorization", "").strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def authenticated_grant():
    """The grant the request's bearer token carries; TokenRefused (401) without one."""
    token = bearer_token()
    if token is None:
        raise TokenRefused("an assistant signs in: send Authorization: Bearer with its token")
    try:
        grant = assistant_grants.grant_for_token(get_db(), token)
    except assistant_grants.GrantRefused as refused:
        raise TokenRefused(str(refused), "invalid_token") from None
    if assistant_grants.needs_marking(grant):
        with own_write() as db:
            assistant_grants.mark_used(db, grant)
    return grant


@bp.post("/mcp")
@reads_first  # its own transaction only reads: the tools' calls write in theirs
def serve_mcp():
    """Serves one MCP exchange for the assistant whose token the request carries."""
    grant = authenticated_grant()
    finish_reading()  # no snapshot is held while the tools run: each of their calls has its own
    g.pop("db", None)
    caller = Caller(current_app._get_current_object(), grant, request.environ.get("HTTP_HOST", "localhost"),
                    request.remote_addr or "127.0.0.1", request.scheme)
    status, headers, body = exchange(caller, asgi_scope(), request.get_data())
    return Response(body, status=status, headers=headers)


@bp.route("/mcp", methods=["GET", "DELETE"])
def refuse_streams():
    """Refuses a stream or a session's end: this server is stateless and answers each POST in JSON."""
    raise MethodNotAllowed(valid_methods=["POST"], description="this server keeps no stream nor session: POST a "
                                                               "JSON-RPC message to /mcp")


@bp.get("/.well-known/oauth-protected-resource")
def show_resource_metadata():
    """Shows the protected resource's metadata (RFC 9728): /mcp, and the authorization server that signs people in."""
    root = proxies.service_root()
    return {"resource": root + "/mcp", "authorization_servers": [root], "scopes_supported": list(SCOPES),
            "bearer_methods_supported": ["header"], "resource_name": "OKRs"}


@bp.get("/.well-known/oauth-protected-resource/mcp")
def show_resource_metadata_of_mcp():
    """Shows the same metadata where RFC 9728 puts it for the resource /mcp (its path after the well-known name)."""
    return show_resource_metadata()


def asgi_scope():
    """The ASGI scope of the request being served, for the SDK's transport."""
    environ = request.environ
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in request.headers.items()]
    client = (request.remote_addr or "127.0.0.1", int(environ.get("REMOTE_PORT") or 0))
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
            "scheme": request.scheme, "path": "/mcp", "raw_path": b"/mcp", "root_path": "",
            "query_string": environ.get("QUERY_STRING", "").encode("latin-1"), "headers": headers,
            "server": (environ.get("SERVER_NAME", "localhost"), int(environ.get("SERVER_PORT") or 80)),
            "client": client}


def exchange(caller, scope, body):
    """(status, headers, body) of the SDK's answer to one request, served on an event loop of this thread's own, in
    a context of its own (the tools' calls into the API then have their own Flask contexts)."""
    def serve():
        from . import tools  # the SDK is imported at the first exchange, not at the server's start
        tools.CALLER.set(caller)
        return asyncio.run(served(tools.new_session_manager(), scope, body))
    context = contextvars.Context()
    if not runs_an_event_loop():
        return context.run(serve)
    # This thread already runs an event loop (the app inside an async server, or a test's sync Playwright), where
    # no other may run: the exchange gets a thread of its own.
    with ThreadPoolExecutor(1, thread_name_prefix="okr-mcp") as pool:
        return pool.submit(context.run, serve).result()


def runs_an_event_loop():
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def served(manager, scope, body):
    answer = {"status": 500, "headers": [], "body": []}
    delivered = asyncio.Event()

    async def receive():
        if delivered.is_set():  # the body is read once; later, the client is still there until the answer is sent
            await asyncio.Event().wait()
        delivered.set()
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            answer["body"].append(message.get("body", b""))

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return int(answer["status"]), answer["headers"], b"".join(answer["body"])


@bp.get("/.well-known/oauth-authorization-server")
def show_server_metadata():
    """Shows the authorization server's metadata (RFC 8414): where an assistant registers, signs in and gets tokens."""
    return oauth().metadata()


def oauth_error(status, error, description, headers=None):
    """An OAuth error as RFC 6749 5.2 (and RFC 7591 3.2.2) shape it: JSON, never stored by a cache."""
    body = json.dumps({"error": error, "error_description": description})
    return Response(body, status=status, content_type="application/json",
                    headers={"Cache-Control": "no-store", "Pragma": "no-cache", **(headers or {})})


def refused_client_request(names_resources=False):
    """The error for a request to /oauth/token or /oauth/revoke that Authlib is not to read, or None: HTTP Basic
    credentials that are no UTF-8; at the token endpoint, a resource (RFC 8707) other than this server's /mcp."""
    server = oauth()
    if server.unreadable_basic_credentials(request.headers.get("Authorization")):
        return oauth_error(401, "invalid_client", "the Basic credentials are not client_id:client_secret in UTF-8",
                           {"WWW-Authenticate": 'Basic realm="okr"'})
    if names_resources and server.foreign_resource(request.values.getlist("resource")) is not None:
        return oauth_error(400, "invalid_target", "the resource (RFC 8707) must be this server's /mcp")
    return None


@bp.post("/oauth/register")
def register_client():
    """Registers an assistant as an OAuth client (RFC 7591), without a credential, as MCP clients expect."""
    server = oauth()
    problem = server.registration_problem(request.get_json(silent=True))
    if problem is not None:
        return oauth_error(400, *problem)
    try:
        return server.server_of(current_app).create_endpoint_response("client_registration")
    except throttle.Throttled as held:
        return oauth_error(429, "temporarily_unavailable",
                           f"too many clients registered from this address: retry in {held.wait} s",
                           {"Retry-After": str(held.wait)})


@bp.post("/oauth/token")
def issue_token():
    """Gives an assistant its tokens for a code (with its PKCE verifier), or new ones for a refresh token."""
    return refused_client_request(names_resources=True) or oauth().server_of(current_app).create_token_response()


@bp.post("/oauth/revoke")
def revoke_token():
    """Ends an assistant's grant for its access or refresh token (RFC 7009)."""
    return refused_client_request() or oauth().server_of(current_app).create_endpoint_response("revocation")


@bp.after_request
def allow_other_origins(response):
    """The metadata and the OAuth endpoints answer pages of any origin (an assistant in a browser): they take no
    cookie, so another site's page gains nothing it could not get by itself."""
    if request.path in access.OPEN_TO_OTHER_ORIGINS:
        response.headers["Access-Control-Allow-Origin"] = "*"
        response.headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type, MCP-Protocol-Version"
        response.headers["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
    return response
