"""Who may do what, in one place: the API's signature check, the pages' sign-in and `okr serve` all ask here.

Auth is on, for /v1 and the pages alike, as soon as any API key has been created
(revoked ones included): before that the service is open, for a laptop on
loopback. A read-only key may read (GET, HEAD, OPTIONS) and nothing else.
"""
import hmac
import ipaddress
import secrets

from flask import current_app

from .db import READ_METHODS
from .store import keys

# Compared against when the credential is unknown, so timing does not tell.
UNKNOWN_KEY_SECRET = secrets.token_hex(32)


def auth_enabled(db):
    """True once any key was ever created; that never reverts, so the app remembers it."""
    if current_app.extensions.get("okr_auth_on"):
        return True
    on = keys.any_exists(db)
    if on:
        current_app.extensions["okr_auth_on"] = True
    return on


def live_key(db, credential):
    """The key with this credential that is not revoked, or None."""
    return keys.find_live(db, credential)


def secret_to_compare(key):
    """What a key's secret is compared with: its own, or a stand-in for an unknown key (the same time)."""
    return key["secret"] if key is not None else UNKNOWN_KEY_SECRET


def key_for_secret(db, credential, secret):
    """The live key whose credential and secret these are, or None; the comparison takes constant time."""
    key = live_key(db, credential)
    same = hmac.compare_digest(secret_to_compare(key).encode("utf-8"), secret.encode("utf-8"))
    return key if same and key is not None else None


def may_write(key, method):
    """Whether this key (None: auth is off) may make a request with this method."""
    return method in READ_METHODS or key is None or not key["read_only"]


def is_api_path(path):
    """Whether path is the API's: /v1 and everything under it, which signed requests reach."""
    return path == "/v1" or path.startswith("/v1/")


def answers_as_api(path):
    """Whether a path's answers are the API's (JSON, errors in the error shape, no session): /v1 and /healthz.
    Every other path is a page."""
    return is_api_path(path) or path == "/healthz"


def is_loopback(host):
    """Whether host names this machine (localhost, 127.0.0.0/8, ::1): open mode never leaves it."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
