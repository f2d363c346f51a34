"""Checks Simple OKR's request signature (okr/rules/request_signature.py) on the API's requests.

Whether auth is on, and what a key may do, is okr.accounts.access's to say.
"""
import hmac
import re
from datetime import datetime, timedelta, timezone

from flask import g, request
from werkzeug.exceptions import Unauthorized

from ..accounts import access, assistant_grants
from ..db import get_connection, get_db
from ..rules.request_signature import SCHEME, sign

MAX_CLOCK_SKEW = timedelta(minutes=10)
RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})", re.ASCII
)
# The API's description is public, so that clients can be generated before a key is issued.
OPEN_PATHS = frozenset({"/v1/openapi.json"})


class Unauthenticated(Unauthorized):
    def get_headers(self, environ=None, scope=None):
        return [*super().get_headers(environ, scope), ("WWW-Authenticate", SCHEME)]


def parse_authorization(header):
    """The (credential, timestamp, signature) of an S1-HMAC-SHA256 header."""
    if not header:
        raise Unauthenticated(f"missing Authorization header; sign requests with {SCHEME} (okr auth-header prints one)")
    scheme, _, params = header.strip().partition(" ")
    if scheme.upper() != SCHEME:
        raise Unauthenticated(f"unsupported authorization scheme; use {SCHEME}")
    fields = {}
    for part in params.strip().split("&"):
        key, sep, value = part.partition("=")
        if not sep or key in fields:
            raise Unauthenticated("malformed Authorization header")
        fields[key] = value
    if set(fields) != {"Credential", "Timestamp", "Signature"} or not all(fields.values()):
        raise Unauthenticated("malformed Authorization header: need Credential, Timestamp and Signature")
    return fields["Credential"], fields["Timestamp"], fields["Signature"]


def check_timestamp(timestamp, now):
    if not RFC3339.fullmatch(timestamp):
        raise Unauthenticated("Timestamp is not an RFC 3339 time")
    try:
        moment = datetime.fromisoformat(timestamp.upper().replace("Z", "+00:00"))
    except ValueError:
        raise Unauthenticated("Timestamp is not an RFC 3339 time") from None
    if abs(now - moment) > MAX_CLOCK_SKEW:
        raise Unauthenticated(f"Timestamp is more than {MAX_CLOCK_SKEW.seconds // 60} minutes from the server's time")


def authenticate():
    """Rejects a /v1 request without a valid signature, or a write signed with a read-only key,
    before routing reads anything and before a write takes the write lock."""
    if not access.is_api_path(request.path) or request.path in OPEN_PATHS:
        return
    # A read checks the key inside its own snapshot (one snapshot, not two: the
    # dearer part of a small read); a write checks before it takes the write lock.
    db = get_db() if request.method in access.READ_METHODS else get_connection()
    grant = request.environ.get(assistant_grants.ENVIRON_KEY)
    if grant is not None:  # an assistant's tool call, made in this process (okr.assistants.in_process)
        try:  # read again at each call: a grant ends at once when disconnected, or its person changes
            grant = assistant_grants.still_valid(db, grant)
        except assistant_grants.GrantRefused as refused:
            raise Unauthenticated(str(refused)) from None
        g.actor = assistant_grants.actor_of(grant)
        access.require_write(g.actor, request.method, request.path)
        return
    if not access.auth_enabled(db):
        return
    credential, timestamp, signature = parse_authorization(request.headers.get("Authorization"))
    check_timestamp(timestamp, datetime.now(timezone.utc))
    key = access.live_key(db, credential)
    expected = sign(credential, access.secret_to_compare(key), timestamp)
    # Bytes, because compare_digest refuses non-ASCII str.
    if not hmac.compare_digest(expected.encode(), signature.lower().encode("utf-8")) or key is None:
        raise Unauthenticated("unknown or revoked credential, or wrong signature")
    actor = access.key_actor(key)
    if actor is None:
        raise Unauthenticated("this API key's user is deactivated")
    g.actor = actor
    access.require_write(actor, request.method, request.path)
