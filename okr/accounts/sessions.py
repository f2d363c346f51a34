"""Who is signed in to the dashboard: sessions opened with an email and password or with an API key's
credential and secret (okr.accounts.sign_in checks them), kept server side so that signing out ends them (their
rows are okr.store.sessions'), their lifetimes, CSRF tokens, and the two guards every page passes (okr.pipeline
runs them).

Once sign-in is needed (okr.accounts.access: any API key or password exists), the pages need a session,
opened at /login. The session is Flask's signed cookie, keyed with a secret generated
once and kept in the database, so that sessions survive a restart and every server
on one database honours them. It never opens /v1: the API keeps to signed requests.

What a guard refuses is raised as this module's errors (NotAllowed, FormRefused, SessionUnavailable), which the
pages word (okr.web.errors).
"""
import hmac
import secrets
import sqlite3
import time
from datetime import timedelta

from flask import current_app, g, redirect, request, session, url_for
from flask.sessions import SecureCookieSessionInterface
from itsdangerous import BadSignature, URLSafeTimedSerializer

from .access import READ_METHODS
from ..db import DatabaseMissing, get_connection, get_db, transaction
from ..store import sessions as session_rows
from ..store import users, web_secrets
from . import access


def session_lifetimes(config):
    """(seconds of a session, seconds of a read-only key's session) of these settings (OKR_SESSION_HOURS and
    OKR_READ_ONLY_KEY_SESSION_DAYS: a wallboard's read-only key is not signed in again every morning)."""
    return config["SESSION_HOURS"] * 3600, config["READ_ONLY_KEY_SESSION_DAYS"] * 86400


# Pages anyone may open: signing in, signing out, choosing a password from an invitation or a reset link
# (and asking for one), a board link's wallboard, and the stylesheet and script.
OPEN_ENDPOINTS = frozenset({"web.show_login", "web.log_out", "web.show_invitation", "web.ask_password_reset",
                            "web.reset_password", "web.static",
                            # a board link's wallboard, which its secret URL opens (okr.web.board_pages)
                            "web.show_board_link",
                            # sign-in with an identity provider (okr.web.oidc_pages)
                            "web.start_oidc_sign_in", "web.finish_oidc_sign_in"})


class SessionUnavailable(Exception):
    """The session could not be opened because the database did not answer (busy, missing, unreadable)."""


class NotAllowed(Exception):
    """A page this session may not open, or a form it may not send; the message says why, for people."""


class FormRefused(Exception):
    """A form posted without this session's CSRF token: it expired, or did not come from this site's page."""


def is_page_path(path):
    """Whether a path needs a session: not the API's (it keeps to signatures, and /healthz must answer without
    a database), nor a static file."""
    return not access.answers_as_api(path) and not path.startswith("/static/")


class DashboardSessions(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions, for the pages only, keyed with the database's own secret.

    The secret is read with each page's request, not kept: after a restore, every
    server on the file signs with the restored database's secret.
    """

    def open_session(self, app, request):
        if not is_page_path(request.path):
            return None
        try:
            g.session_secret = signing_key()
        except (DatabaseMissing, sqlite3.Error):
            return None  # a page needing the session then says the database is unavailable
        serializer = self.get_signing_serializer(app)
        cookie = request.cookies.get(self.get_cookie_name(app))
        if serializer is None or not cookie:
            return self.session_class()
        try:
            # Flask's own would refuse a cookie as old as a session's lifetime: a read-only key's session lasts
            # longer (OKR_READ_ONLY_KEY_SESSION_DAYS), and live_actor ends every other one at OKR_SESSION_HOURS.
            return self.session_class(serializer.loads(cookie, max_age=session_lifetimes(app.config)[1]))
        except BadSignature:
            return self.session_class()

    def get_cookie_path(self, app):
        """SESSION_COOKIE_PATH if the host set one, else the path the app is mounted at.

        Mounted under /okr, the cookie is Path=/okr: the browser sends it to this
        app's pages only, and two apps mounted on one host keep their own sessions.
        At the host's root it is / (APPLICATION_ROOT), as Flask would make it.
        """
        return app.config["SESSION_COOKIE_PATH"] or request.script_root or app.config["APPLICATION_ROOT"]

    def get_expiration_time(self, app, session):
        """When the cookie ends: a read-only key's session's 30 days from now (the login), others' 12 hours."""
        expires = super().get_expiration_time(app, session)
        if expires is not None and session.get("long") is True:
            expires += timedelta(days=app.config["READ_ONLY_KEY_SESSION_DAYS"]) - app.permanent_session_lifetime
        return expires

    def get_signing_serializer(self, app):
        secret = g.get("session_secret")
        if not secret:
            return None
        return URLSafeTimedSerializer(
            secret, salt=self.salt, serializer=self.serializer,
            signer_kwargs={"key_derivation": self.key_derivation, "digest_method": self.digest_method},
        )


def signing_key():
    """The session-signing secret in the database (made by init_db; made here if a restore lost it)."""
    secret = web_secrets.read(get_connection(), web_secrets.SESSION)
    if secret is not None:
        return secret
    with transaction() as db:  # the file exists: get_connection found it
        return web_secrets.make(db, web_secrets.SESSION)


def login_required():
    """True when API keys or passwords exist, so the pages need a session."""
    return access.auth_enabled(get_connection())


def log_in(user_id=None, credential=None):
    """Opens a session for a user (signed in with a password) or an API key: a row of its own
    (okr.store.sessions) and the cookie's token. A session this browser had ends."""
    if g.get("session_secret") is None:
        raise SessionUnavailable()
    old_token = session.get("token")
    if isinstance(old_token, str):
        session_rows.end(get_db(), old_token)
    g.pop("session_actor", None)
    session.clear()
    session.permanent = True
    # Rows are kept for the longest session's life; each session ends at its own (live_actor).
    longest = timedelta(days=current_app.config["READ_ONLY_KEY_SESSION_DAYS"])
    session["token"] = session_rows.open_session(get_db(), longest, user_id, credential)
    session["login_at"] = int(time.time())
    session["csrf"] = secrets.token_urlsafe(32)
    if credential is not None:
        key = access.live_key(get_db(), credential)
        if key is not None and key["read_only"]:
            session["long"] = True  # only what the cookie's life says: live_actor goes by the actor


def mark_opened_via_provider():
    """Marks this browser's new session as opened by the identity provider, so that signing out offers to sign out
    of the provider too."""
    session["via"] = "oidc"


def opened_via_provider():
    """Whether the identity provider opened this browser's session."""
    return session.get("via") == "oidc"


def session_seconds(actor):
    """How long a session of this actor lasts from its login: 30 days for a read-only key, else 12 hours."""
    usual, read_only_key = session_lifetimes(current_app.config)
    return read_only_key if actor.credential is not None and actor.read_only else usual


def session_token():
    """This browser's session token, or None."""
    token = session.get("token")
    return token if isinstance(token, str) else None


def log_out():
    """Ends this browser's session for good: its row is marked ended, so a copy of the cookie opens nothing."""
    token = session.get("token")
    if isinstance(token, str):
        session_rows.end(get_db(), token)
    forget_session()


def forget_session():
    """Clears the cookie's session (for one that is already dead: nothing to end)."""
    g.pop("session_actor", None)
    session.clear()


def current_actor():
    """Who this request's live session is (an okr.accounts.access.Actor), or None: none, expired, ended, its key
    revoked, or its user deactivated.

    Looked up once per request: the page check, the template and the form all ask.
    """
    if "session_actor" not in g:
        g.session_actor = live_actor()
    return g.session_actor


def live_actor():
    token, login_at = session.get("token"), session.get("login_at")
    if not isinstance(token, str) or not isinstance(login_at, int):
        return None
    age = time.time() - login_at
    if age > session_lifetimes(current_app.config)[1]:
        return None
    db = get_connection()
    row = session_rows.live(db, token)
    if row is None:
        return None
    if row["credential"] is not None:
        key = access.live_key(db, row["credential"])
        actor = None if key is None else access.key_actor(key)
    else:
        user = users.find(db, row["user_id"])
        actor = None if user is None else access.user_actor(user)
    return None if actor is None or age > session_seconds(actor) else actor


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


def is_guarded_page():
    """Whether this request is for a dashboard view that needs the guards (not an unknown path: that is a 404)."""
    return request.blueprint == "web" and request.endpoint not in OPEN_ENDPOINTS


def require_session():
    """Guard: a page needs a live session once sign-in is needed, and a viewer's or a read-only key's session
    only reads."""
    if not is_guarded_page():
        return None
    if request.endpoint == "web.show_dashboard" and not access.wants_page():
        return None  # the JSON index at /, for API clients, is open like /healthz
    if not login_required():
        return None
    actor = current_actor()
    if actor is None:
        forget_session()
        return redirect(url_for("web.show_login", next=request.full_path.rstrip("?")), 303)
    g.actor = actor
    if request.endpoint in OWN_ACCOUNT_ENDPOINTS and access.may_change_own_account(actor):
        return None
    right = ADMIN_ENDPOINTS.get(request.endpoint)
    if right is not None and not RIGHT_RULES.get(right, access.may_manage_people)(actor):
        raise NotAllowed(access.refusal(actor, right))  # before the write check: it names what was refused
    if not access.may_write(actor, request.method):
        raise NotAllowed(access.refusal(actor, "editing"))
    if request.endpoint in EDITOR_ENDPOINTS and not access.may_write(actor, "POST"):
        # An edit form's GET too: a viewer is shown no form it could not send.
        raise NotAllowed(access.refusal(actor, "editing"))
    return None


# The endpoints of the account page's forms, which act on the signed-in person's own account
# (okr.accounts.access.may_change_own_account): a viewer may send them too.
OWN_ACCOUNT_ENDPOINTS = set()


# The endpoints of the views only some may open, each with the right a refusal names (okr.accounts.access.RIGHTS):
# admins (okr.accounts.access.may_manage_people), unless RIGHT_RULES names the right's own rule.
ADMIN_ENDPOINTS = {}


# The rights of ADMIN_ENDPOINTS that are not the People page's, each with the rule that grants it.
RIGHT_RULES = {"connections": access.may_manage_connections, "sources": access.may_see_sources}


# The endpoints of the edit pages (forms that create, change or delete), which only those who may write open.
EDITOR_ENDPOINTS = set()


def editors_only(view):
    """Marks a dashboard view as an edit page: viewers and read-only keys are refused it, its GET included."""
    EDITOR_ENDPOINTS.add(f"web.{view.__name__}")
    return view


def own_account(view):
    """Marks a dashboard view as one that acts on the signed-in person's own account, which every role may."""
    OWN_ACCOUNT_ENDPOINTS.add(f"web.{view.__name__}")
    return view


def people_managers_only(view):
    """Marks a dashboard view of the People page, which only admins may open (the guard above refuses the rest)."""
    ADMIN_ENDPOINTS[f"web.{view.__name__}"] = "people"
    return view


def webhook_managers_only(view):
    """Marks a dashboard view of the Webhooks pages, which only admins may open."""
    ADMIN_ENDPOINTS[f"web.{view.__name__}"] = "webhooks"
    return view


def connection_managers_only(view):
    """Marks a dashboard view of the Connections pages (metric sources), which only admins may open."""
    ADMIN_ENDPOINTS[f"web.{view.__name__}"] = "connections"
    return view


def source_editors_only(view):
    """Marks a dashboard view of a key result's source or its evidence, which viewers never open (a query can name
    the company's systems): refused with the sources right's words, its GET included."""
    ADMIN_ENDPOINTS[f"web.{view.__name__}"] = "sources"
    return view


def board_managers_only(view):
    """Marks a dashboard view of the Board links page, which only admins may open."""
    ADMIN_ENDPOINTS[f"web.{view.__name__}"] = "boards"
    return view


def reopeners_only(view):
    """Marks a dashboard view that reopens a closed cycle, which only admins may do."""
    ADMIN_ENDPOINTS[f"web.{view.__name__}"] = "reopening"
    return view


def require_csrf():
    """Guard: every form a page posts carries this session's CSRF token (signing in and out included)."""
    if request.blueprint == "web" and request.method not in READ_METHODS and not csrf_ok():
        raise FormRefused()


def init_app(app):
    app.session_interface = DashboardSessions()
    app.config.update(
        SESSION_COOKIE_NAME="okr_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=app.config["SECURE_COOKIES"],
        PERMANENT_SESSION_LIFETIME=timedelta(hours=app.config["SESSION_HOURS"]),
        # The cookie's life counts from the login, not from the last page.
        SESSION_REFRESH_EACH_REQUEST=False,
    )
