"""Sign-in for remote assistants: an OAuth 2.1 authorization server, Authlib's, as MCP's authorization spec asks.

An assistant given only this server's address reads the protected resource's metadata (okr.assistants.remote),
then this server's (RFC 8414), registers itself (RFC 7591: no credential needed, as MCP clients expect), and sends
the person to the consent page (okr.web.consent_pages), where they sign in as they always do and choose read
only or read and write. The code it gets back is good once, for ten minutes, and only with the PKCE verifier of
its challenge (S256 only). Its access token lasts an hour; its refresh token 30 days, and is replaced at each use
(the old one ends; presented again, it ends the whole grant, OAuth 2.1 4.3.1); a refresh asking for okr:read alone
makes the grant read only. Both are a grant of okr.accounts.assistant_grants, kept as SHA-256 digests, ended as
every grant ends (disconnected, or the person deactivated, given another role or a new password, or signed out
everywhere) or revoked here (RFC 7009).

What comes in is checked before Authlib reads it (registration_problem, same_redirect, foreign_resource,
unreadable_basic_credentials): a bad value is an OAuth error or the consent page's 400, never a 500.

Scopes: okr:read, and okr:write (reading and writing, as the person may). Authlib is imported with this module,
which the views import at their first request: a server no assistant signs in to never loads it.
"""
import base64
import binascii
import hashlib
import ipaddress
import json
import re
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc6749.errors import InvalidRequestError
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientMetadataClaims, ClientRegistrationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from flask import g

from .. import proxies
from ..db import get_db, own_write
from ..store import assistant_grants as stored_grants
from ..store import events, users
from ..store import oauth_clients as oauth
from . import access, assistant_grants, throttle

READ, WRITE, SCOPES = assistant_grants.READ_SCOPE, assistant_grants.WRITE_SCOPE, assistant_grants.SCOPES
CODE_LIFE = timedelta(minutes=10)
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")
GRANT_TYPES = ("authorization_code", "refresh_token")
# Registration is open, as MCP clients expect: ten clients an address per window of the sign-in throttle (its
# limit for one account), clients that never got a grant go after a day, and past this many never authorized, the
# oldest of them go.
UNUSED_CLIENT_LIFE = timedelta(days=1)
MOST_UNUSED_CLIENTS = 1000
MAX_REDIRECT_URIS = 10
MAX_REDIRECT_LENGTH = 2000
# What a redirect URI may hold: RFC 3986's characters but quotes, semicolons, commas and backslashes (its origin
# goes into the consent page's Content-Security-Policy), and no space: nothing outside ASCII either.
URI_CHARACTERS = re.compile(r"[A-Za-z0-9._~:/?#\[\]@!$&()*+=%-]+")
HOST_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
# A native app's own scheme (RFC 8252 7.1): a reversed domain name (com.example.app:/callback), or one word as
# editors use (cursor://..., vscode://...); never one that a browser acts on by itself.
PRIVATE_SCHEME = re.compile(r"[a-z][a-z0-9+.-]{0,39}")
REFUSED_SCHEMES = frozenset({"http", "https", "javascript", "data", "file", "vbscript", "about", "blob", "ftp", "ws",
                             "wss", "filesystem", "view-source", "mailto", "tel", "sms", "intent", "chrome"})
# RFC 7591's metadata as this server reads it: the strings, and the arrays of strings (anything else is refused
# before Authlib reads the body).
STRING_METADATA = ("client_name", "client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri", "scope",
                   "token_endpoint_auth_method", "software_id", "software_version", "software_statement")
LIST_METADATA = ("redirect_uris", "grant_types", "response_types", "contacts")


def digest(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_loopback_redirect(parts):
    return parts.scheme == "http" and parts.hostname in ("127.0.0.1", "::1", "localhost")


def is_host(host):
    """Whether host (as urllib's hostname gives it: lowercase, no brackets) is an IP address or a host name."""
    if "%" in host:  # an IPv6 zone names this machine's interface, no host
        return False
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    return len(host) <= 253 and all(HOST_LABEL.fullmatch(label) for label in host.removesuffix(".").split("."))


def authority(parts):
    """host[:port] of split parts, rebuilt from the parsed host and port (an IPv6 address in brackets)."""
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return host if parts.port is None else f"{host}:{parts.port}"


def redirect_problem(uri):
    """Why a client may not be sent back to uri, or None: https anywhere, http on loopback only (any port, RFC
    8252 7.3), or a native app's own scheme (RFC 8252 7.1); only URI_CHARACTERS, at most MAX_REDIRECT_LENGTH of
    them; a host name or IP address, and a port from 1 to 65535; never a fragment or user info."""
    if not isinstance(uri, str):
        return "must be a string"
    if len(uri) > MAX_REDIRECT_LENGTH:
        return f"must be at most {MAX_REDIRECT_LENGTH} characters long"
    if not URI_CHARACTERS.fullmatch(uri):
        return "must be ASCII, without spaces, quotes, semicolons, commas or backslashes"
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return "is not a URL (its host or its port)"
    if "#" in uri or "@" in parts.netloc:
        return "must have no fragment and no user name"
    if port == 0:
        return "must have a port from 1 to 65535"
    if parts.netloc or parts.scheme in ("http", "https"):
        if not parts.hostname or not is_host(parts.hostname) or parts.netloc.lower() != authority(parts):
            return "must name a host name or an IP address, maybe with a port"
    if parts.scheme == "https" or is_loopback_redirect(parts):
        return None
    if parts.scheme not in REFUSED_SCHEMES and PRIVATE_SCHEME.fullmatch(parts.scheme):
        return None
    return ("must be https, http on this machine's loopback, or an app's own scheme (com.example.app:/callback, "
            "cursor://...)")


def same_redirect(registered, given):
    """Whether given is a registered redirect URI: exactly, or, on loopback, but for its port (RFC 8252 7.3)."""
    if redirect_problem(given) is not None:
        return False
    if registered == given:
        return True
    try:
        a, b = urlsplit(registered), urlsplit(given)
    except ValueError:
        return False
    return (is_loopback_redirect(a) and is_loopback_redirect(b)
            and a._replace(netloc=a.hostname) == b._replace(netloc=b.hostname))


def form_action_source(uri):
    """The Content-Security-Policy source that lets a form go on to uri, built from its parsed parts only: its
    scheme, host and port for http(s), its scheme for an app's own; None when it is no redirect URI this server
    sends to (one registered before its checks were these)."""
    if redirect_problem(uri) is not None:
        return None
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https"):
        return f"{parts.scheme}://{authority(parts)}"
    return f"{parts.scheme}:"


def registration_problem(body):
    """(error, description) of RFC 7591 for a registration's body that this server refuses before Authlib reads
    it, or None: a JSON object, its metadata of the types RFC 7591 gives, 1 to MAX_REDIRECT_URIS redirect URIs
    this server sends to, an authentication method of AUTH_METHODS."""
    if not isinstance(body, dict):
        return "invalid_request", "send the client's metadata as a JSON object (Content-Type: application/json)"
    for name in STRING_METADATA:
        if name in body and not isinstance(body[name], str):
            return "invalid_client_metadata", f"{name} must be a string"
    for name in LIST_METADATA:
        if name in body and not (isinstance(body[name], list) and all(isinstance(item, str) for item in body[name])):
            return "invalid_client_metadata", f"{name} must be an array of strings"
    if "jwks" in body and not isinstance(body["jwks"], dict):
        return "invalid_client_metadata", "jwks must be an object"
    uris = body.get("redirect_uris") or []
    if not uris or len(uris) > MAX_REDIRECT_URIS:
        return "invalid_redirect_uri", f"give 1 to {MAX_REDIRECT_URIS} redirect_uris"
    for uri in uris:
        problem = redirect_problem(uri)
        if problem is not None:
            return "invalid_redirect_uri", f"redirect_uri {uri[:200]} {problem}"
    if body.get("token_endpoint_auth_method", "client_secret_basic") not in AUTH_METHODS:
        return "invalid_client_metadata", f"token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}"
    return None


def foreign_resource(values):
    """The first of a request's resource values (RFC 8707) that is not this server's /mcp, or None."""
    mine = resources()
    return next((value for value in values if value.rstrip("/") not in mine), None)


def unreadable_basic_credentials(header):
    """Whether an Authorization header is HTTP Basic whose credentials are no UTF-8 (Authlib would fail on them)."""
    scheme, _, credentials = (header or "").strip().partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        base64.b64decode(credentials.strip()).decode("utf-8")
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        return True
    return False


class Client:
    """A registered client (a row of oauth_clients), as Authlib asks of one."""

    def __init__(self, row):
        self.row = row
        self.client_id = row["client_id"]
        self.name = row["name"]
        self.redirect_uris = json.loads(row["redirect_uris"])
        self.metadata = json.loads(row["metadata"])

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        """The client's only redirect URI, when it has one this server sends to (one registered before its checks
        were these may not be)."""
        if len(self.redirect_uris) == 1 and redirect_problem(self.redirect_uris[0]) is None:
            return self.redirect_uris[0]
        return None

    def get_allowed_scope(self, scope):
        asked = [s for s in (scope or "").split() if s in SCOPES]
        return " ".join(asked) if asked else " ".join(SCOPES)

    def check_redirect_uri(self, redirect_uri):
        return any(same_redirect(registered, redirect_uri) for registered in self.redirect_uris)

    def check_client_secret(self, client_secret):
        stored = self.metadata.get("secret_sha256")
        return stored is not None and secrets.compare_digest(stored, digest(client_secret))

    def check_endpoint_auth_method(self, method, endpoint):
        return method == self.metadata.get("token_endpoint_auth_method", "none")

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type in GRANT_TYPES


class AuthorizationCode:
    """A stored authorization code, as Authlib asks of one."""

    def __init__(self, row):
        self.row = row
        self.code_challenge = row["code_challenge"]
        self.code_challenge_method = "S256"
        self.user_id = row["user_id"]

    def get_redirect_uri(self):
        return self.row["redirect_uri"]

    def get_scope(self):
        return self.row["scope"]


class StoredGrant:
    """A grant found by its refresh token, as Authlib asks of a token."""

    def __init__(self, row):
        self.row = row

    def check_client(self, client):
        return self.row["client_id"] == client.client_id

    def get_scope(self):
        return scope_of(self.row["read_only"])

    def is_expired(self):
        return False  # an ended grant is never found (grant_by_refresh_token)

    def is_revoked(self):
        return False


class S256Only(CodeChallenge):
    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]
    DEFAULT_CODE_CHALLENGE_METHOD = "S256"

    def validate_code_challenge(self, grant, redirect_uri):
        if not grant.request.payload.data.get("code_challenge"):
            raise InvalidRequestError("Missing 'code_challenge': PKCE with S256 is required")
        if grant.request.payload.data.get("code_challenge_method", "plain") != "S256":
            raise InvalidRequestError("Unsupported 'code_challenge_method': use S256")
        super().validate_code_challenge(grant, redirect_uri)


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(AUTH_METHODS)

    @staticmethod
    def validate_authorization_redirect_uri(request, client):
        """The request's redirect URI when it is one of the client's (same_redirect), or its only one; the error
        never repeats what was given (Authlib's would, and fail on a character it may not hold)."""
        given = request.payload.redirect_uri
        if given and not client.check_redirect_uri(given):
            raise InvalidRequestError("the redirect_uri is not one this client registered")
        return grants.AuthorizationCodeGrant.validate_authorization_redirect_uri(request, client)

    def save_authorization_code(self, code, request):
        scope = g.get("consented_scope") or request.payload.scope or READ
        oauth.save_code(get_db(), digest(code), request.client.row["seq"], request.user["id"],
                        request.payload.redirect_uri or request.client.get_default_redirect_uri(), scope,
                        request.payload.data["code_challenge"], request.payload.data.get("resource"),
                        assistant_grants.later(CODE_LIFE))

    def query_authorization_code(self, code, client):
        row = oauth.live_code(get_db(), digest(code), client.row["seq"], assistant_grants.now())
        return None if row is None else AuthorizationCode(row)

    def delete_authorization_code(self, authorization_code):
        oauth.delete_code(get_db(), authorization_code.row["code_hash"])

    def authenticate_user(self, authorization_code):
        user = users.find(get_db(), authorization_code.user_id)
        return dict(user) if user is not None and user["is_active"] else None


class RefreshTokenGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(AUTH_METHODS)
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token):
        row = grant_by_refresh_token(refresh_token)
        if row is None:
            end_grant_of_replaced(refresh_token)
            return None
        return StoredGrant(row)

    def authenticate_user(self, refresh_token):
        user = users.find(get_db(), refresh_token.row["user_id"])
        return dict(user) if user is not None and user["is_active"] else None

    def revoke_old_credential(self, refresh_token):
        pass  # save_token replaces both tokens of the grant in place


def grant_by_refresh_token(refresh_token):
    """The live grant a refresh token belongs to (with its client's client_id), or None."""
    if not refresh_token or not refresh_token.startswith(assistant_grants.REFRESH_TOKEN_PREFIX):
        return None
    row = oauth.grant_by_refresh_hash(get_db(), digest(refresh_token))
    if row is None or assistant_grants.refusal(row, row["refresh_expires_at"]) is not None:
        return None
    return row


def end_grant_of_replaced(refresh_token):
    """Ends the grant whose last refresh replaced this refresh token (OAuth 2.1 4.3.1): presented again, it is a
    copy, a thief's or the thief's victim's, and neither may go on. Written in a transaction of its own, which
    stays although the request then answers invalid_grant (and rolls its own back)."""
    if not refresh_token or not refresh_token.startswith(assistant_grants.REFRESH_TOKEN_PREFIX):
        return
    row = stored_grants.by_previous_refresh_token(get_db(), digest(refresh_token))
    if row is not None:
        with own_write() as db:
            stored_grants.delete(db, row["id"])


class ClientClaims(ClientMetadataClaims):
    """Authlib's checks of a client's metadata, but for its redirect URIs': registration_problem checked them
    before (Authlib's want a host, which an app's own scheme has none of: com.example.app:/callback)."""

    def validate_redirect_uris(self):
        pass


class Registration(ClientRegistrationEndpoint):
    """RFC 7591: open registration of public or confidential clients, with the redirect URIs this server takes
    (registration_problem has checked the body before)."""

    def __init__(self, server=None, claims_classes=None):
        super().__init__(server, [ClientClaims])

    def get_server_metadata(self):
        return metadata()

    def authenticate_token(self, request):
        return True  # MCP clients register without a credential

    def generate_client_secret(self, request):
        method = request.payload.data.get("token_endpoint_auth_method", "client_secret_basic")
        return None if method == "none" else secrets.token_urlsafe(32)

    def save_client(self, client_info, client_metadata, request):
        db = get_db()
        throttle.count_registration(db)
        method = client_metadata.get("token_endpoint_auth_method", "client_secret_basic")
        name = " ".join(str(client_metadata.get("client_name") or "").split())[:assistant_grants.MAX_NAME_LENGTH]
        kept = {"token_endpoint_auth_method": method,
                "grant_types": client_metadata.get("grant_types") or ["authorization_code"],
                "response_types": client_metadata.get("response_types") or ["code"]}
        if client_info.get("client_secret"):
            kept["secret_sha256"] = digest(client_info["client_secret"])
        oauth.forget_unused_clients(db, assistant_grants.later(-UNUSED_CLIENT_LIFE))
        # At the cap, the oldest clients never authorized make room: a flood of registrations cannot keep a new
        # client out, only push out those that waited longest without a person allowing them.
        oauth.forget_oldest_unauthorized_clients(db, MOST_UNUSED_CLIENTS - 1)
        oauth.save_client(db, client_info["client_id"], name or "an MCP client", client_metadata["redirect_uris"],
                          kept)
        client_metadata["token_endpoint_auth_method"] = method
        return client_metadata


class Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = list(AUTH_METHODS)

    def query_token(self, token_string, token_type_hint):
        row = oauth.grant_by_any_token_hash(get_db(), digest(token_string))
        return None if row is None else StoredGrant(row)

    def revoke_token(self, token, request):
        stored_grants.delete(get_db(), token.row["id"])


def generate_token(grant_type, client, user=None, scope=None, expires_in=None, include_refresh_token=True):
    """This server's tokens, with prefixes of their own (a leaked one is recognised)."""
    token = {"token_type": "Bearer", "access_token": assistant_grants.new_token(assistant_grants.ACCESS_TOKEN_PREFIX),
             "expires_in": int(assistant_grants.ACCESS_TOKEN_LIFE.total_seconds()), "scope": scope or READ}
    if include_refresh_token:
        token["refresh_token"] = assistant_grants.new_token(assistant_grants.REFRESH_TOKEN_PREFIX)
    return token


def scope_of(read_only):
    return READ if read_only else f"{READ} {WRITE}"


def save_token(token, request):
    """Keeps a grant's tokens as digests: a new grant for a code, the same grant's new tokens for a refresh, read
    only when the refresh asks for okr:read alone. The answer's scope is the grant's, as stored (a code exchanged
    by a person who has become a viewer reads only)."""
    db = get_db()
    expires = assistant_grants.later(assistant_grants.ACCESS_TOKEN_LIFE)
    refresh_expires = assistant_grants.later(assistant_grants.REFRESH_TOKEN_LIFE)
    if request.payload.grant_type == "refresh_token":
        row = request.refresh_token.row
        asked = (request.payload.scope or "").split()
        read_only = bool(row["read_only"]) or (bool(asked) and WRITE not in asked)
        stored_grants.renew(db, row["seq"], digest(token["access_token"]), expires, digest(token["refresh_token"]),
                            refresh_expires, read_only, row["refresh_hash"])
        token["scope"] = scope_of(read_only)
        return
    user, client = request.user, request.client
    read_only = WRITE not in (token.get("scope") or "").split() or user["role"] == "viewer"
    # The person who allowed it connects the assistant, though the client asks for the tokens.
    with events.acting_as(access.event_actor(access.user_actor(user))):
        stored_grants.create(db, user["id"], client.name, read_only, user["role"], digest(token["access_token"]),
                             expires, client_seq=client.row["seq"], refresh_hash=digest(token["refresh_token"]),
                             refresh_expires_at=refresh_expires)
    token["scope"] = scope_of(read_only)


def query_client(client_id):
    row = oauth.client(get_db(), client_id) if client_id else None
    return None if row is None else Client(row)


def metadata():
    """This authorization server's metadata (RFC 8414), its addresses from the public URL or the request's."""
    root = proxies.service_root()
    return {"issuer": root, "authorization_endpoint": root + "/oauth/authorize", "token_endpoint": root + "/oauth/token",
            "registration_endpoint": root + "/oauth/register", "revocation_endpoint": root + "/oauth/revoke",
            "scopes_supported": list(SCOPES), "response_types_supported": ["code"],
            "grant_types_supported": list(GRANT_TYPES), "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS)}


def resources():
    """What a token here may be asked for (RFC 8707's resource): this server's /mcp, or the server itself."""
    root = proxies.service_root()
    return {root + "/mcp", root}


def server_of(app):
    """The app's authorization server, made at its first use."""
    server = app.extensions.get("okr.oauth_server")
    if server is None:
        server = AuthorizationServer(app, query_client=query_client, save_token=save_token)
        server.register_token_generator("default", generate_token)
        server.register_grant(AuthorizationCodeGrant, [S256Only(required=True)])
        server.register_grant(RefreshTokenGrant)
        server.register_endpoint(Registration)
        server.register_endpoint(Revocation)
        server = app.extensions.setdefault("okr.oauth_server", server)
    return server
