"""Who may use the dashboard: logins with an API key's credential and secret, session cookies, CSRF tokens.

Once any API key exists, the pages need a session, opened at /login with a key's
credential and secret (compared as a signed request's would be). The session is
Flask's signed cookie, keyed with a secret generated once and kept in the
database, so that sessions survive a restart and every server on one database
honours them. It never opens /v1: the API keeps to signed requests.
"""
import hmac
import secrets
import sqlite3
import time
from datetime import timedelta

from flask import g, request, session
from flask.sessions import SecureCookieSessionInterface
from itsdangerous import URLSafeTimedSerializer

from ..api.auth import UNKNOWN_KEY_SECRET, auth_enabled
from ..db import DatabaseMissing, get_connection, transaction
from ..switches import switch

SESSION_HOURS = 12
SESSION_SECONDS = SESSION_HOURS * 3600


class DashboardSessions(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions, for the pages only, keyed with the database's own secret.

    The secret is read with each page's request, not kept: after a restore, every
    server on the file signs with the restored database's secret.
    """

    def open_session(self, app, request):
        # A null session elsewhere: the API never reads or sets the cookie, and
        # /healthz must answer even without a database.
        if not request.path.startswith(PAGE_PREFIXES) and request.path != "/":
            return None
        try:
            g.session_secret = signing_key()
        except (DatabaseMissing, sqlite3.Error):
            return None  # a page needing the session then says the database is unavailable
        return super().open_session(app, request)

    def get_cookie_path(self, app):
        """SESSION_COOKIE_PATH if the host set one, else the path the app is mounted at.

        Mounted under /okr, the cookie is Path=/okr: the browser sends it to this
        app's pages only, and two apps mounted on one host keep their own sessions.
        At the host's root it is / (APPLICATION_ROOT), as Flask would make it.
        """
        return app.config["SESSION_COOKIE_PATH"] or request.script_root or app.config["APPLICATION_ROOT"]

    def get_signing_serializer(self, app):
        secret = g.get("session_secret")
        if not secret:
            return None
        return URLSafeTimedSerializer(
            secret, salt=self.salt, serializer=self.serializer,
            signer_kwargs={"key_derivation": self.key_derivation, "digest_method": self.digest_method},
        )


PAGE_PREFIXES = ("/cycles/", "/keyresults/", "/login", "/logout")


def signing_key():
    """The session-signing secret in the database (made by init_db; made here if a restore lost it)."""
    row = get_connection().execute("SELECT value FROM web_secrets WHERE name = 'session'").fetchone()
    if row is not None:
        return row[0]
    with transaction() as db:  # the file exists: get_connection found it
        db.execute(
            "INSERT OR IGNORE INTO web_secrets (name, value) VALUES ('session', ?)", (secrets.token_hex(32),)
        )
        return db.execute("SELECT value FROM web_secrets WHERE name = 'session'").fetchone()[0]


class SessionUnavailable(Exception):
    """The session could not be opened because the database did not answer (busy, missing, unreadable)."""


def login_required():
    """True when API keys exist, so the pages need a session."""
    return auth_enabled(get_connection())


def find_key(credential):
    """The live (not revoked) API key with this credential, or None."""
    return get_connection().execute(
        "SELECT credential, secret, read_only FROM api_keys WHERE credential = ? AND revoked_at IS NULL",
        (credential,),
    ).fetchone()


def check_login(credential, secret):
    """The key whose credential and secret these are, or None; the comparison takes constant time."""
    key = find_key(credential)
    expected = key["secret"] if key is not None else UNKNOWN_KEY_SECRET
    if hmac.compare_digest(expected.encode("utf-8"), secret.encode("utf-8")) and key is not None:
        return key
    return None


def log_in(key):
    if g.get("session_secret") is None:
        raise SessionUnavailable()
    g.pop("session_key", None)
    session.clear()
    session.permanent = True
    session["credential"] = key["credential"]
    session["login_at"] = int(time.time())
    session["csrf"] = secrets.token_urlsafe(32)


def log_out():
    g.pop("session_key", None)
    session.clear()


def current_key():
    """The key of this request's live session, or None: none, expired, or its key revoked.

    Looked up once per request: the page check, the template and the form all ask.
    """
    if "session_key" not in g:
        g.session_key = live_key()
    return g.session_key


def live_key():
    credential, login_at = session.get("credential"), session.get("login_at")
    if not isinstance(credential, str) or not isinstance(login_at, int):
        return None
    if time.time() - login_at > SESSION_SECONDS:
        return None
    return find_key(credential)


def csrf_token():
    """This session's CSRF token, made on first use (also for an open dashboard, with no login)."""
    if g.get("session_secret") is None:
        raise SessionUnavailable()
    if not isinstance(session.get("csrf"), str):
        session.permanent = True
        session["csrf"] = secrets.token_urlsafe(32)
    return session["csrf"]


def csrf_ok():
    """Whether the form posted this session's CSRF token."""
    sent, kept = request.form.get("csrf_token", ""), session.get("csrf")
    return isinstance(kept, str) and hmac.compare_digest(sent.encode("utf-8"), kept.encode("utf-8"))


def init_app(app):
    app.session_interface = DashboardSessions()
    app.config.update(
        SESSION_COOKIE_NAME="okr_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=switch(app.config["SECURE_COOKIES"], "secure cookies"),
        PERMANENT_SESSION_LIFETIME=timedelta(hours=SESSION_HOURS),
        # The cookie's life counts from the login, not from the last page.
        SESSION_REFRESH_EACH_REQUEST=False,
    )
