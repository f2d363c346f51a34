"""The request pipeline in one place: the guards that run before every view, in order, and how a failure is answered.

A guard returns None to let the request go on, or refuses it by returning a response or
raising. Every failure, a guard's or a view's, is answered by answer_failure: in the
contract's JSON error shape on /v1 and /healthz (and at / for an API client, which gets the
JSON index there), as a page in the dashboard's layout everywhere else. A SQLite error is
answered as the project's own error okr.db makes of it (503 with Retry-After, 507 for a full disk).
The pipeline also decides which requests may write (request_writes), for the request's transaction.
"""
import ipaddress
from functools import lru_cache
from urllib.parse import urlsplit

from flask import current_app, g, request
from werkzeug.exceptions import Forbidden, HTTPException, NotFound, RequestEntityTooLarge

from . import db, proxies
from .accounts import sessions
from .accounts.access import (OPEN_TO_OTHER_ORIGINS, READ_METHODS, answers_as_api, event_actor, is_loopback,
                              viewer_limit, wants_page)
from .api import auth
from .api import errors as api_errors
from .web import errors as page_errors
from .store import events, visibility


class MisdirectedRequest(HTTPException):
    code = 421
    description = "this server does not answer for that host name"


def host_name(host):
    """The name or address of a Host header, without its port; "" when it has none."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    name = host.rpartition(":")[0] if host.count(":") == 1 else host
    return name.rstrip(".")  # okr.example.com. is the same name, fully qualified


def is_ip_address(name):
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def refuse_unknown_hosts():
    """421 for a Host that names neither this machine's loopback, nor an address, nor an allowed name.

    DNS rebinding makes a browser send a page's own name (attacker.example) to an address it now
    resolves to, this server's among them: only names the operator gave (--allowed-host) are served.
    An IP address is always taken: no rebinding reaches a server through a bare address.
    """
    # The header itself: request.host normalises it at a cost of microseconds a request. Without one
    # (HTTP/1.0), the address the server listens on.
    host = request.environ.get("HTTP_HOST") or request.environ.get("SERVER_NAME", "")
    if allowed_host(host, current_app.config["ALLOWED_HOSTS"]):
        return
    raise MisdirectedRequest(f"this server does not answer for {host_name(host) or 'an empty host'}; "
                             "start it with --allowed-host NAME to serve that name")


@lru_cache(maxsize=256)
def allowed_host(host, allowed_names):
    """Whether a Host header's name is served; cached, since a server sees a handful of them."""
    name = host_name(host)
    return is_loopback(name) or is_ip_address(name) or name in allowed_names


def refuse_cross_origin_writes():
    """403 for a write whose Origin names another origin: a page on another site posting here.

    Browsers send Origin with every cross-origin request and with same-origin writes; curl and
    scripts send none, and a request without Origin is left to the other guards.
    """
    if request.method in READ_METHODS or request.path in OPEN_TO_OTHER_ORIGINS:
        return
    origin = request.headers.get("Origin")
    if origin is None or proxies.is_public_origin(origin, current_app.config):
        return  # the public URL's origin is this server's, whatever Host a proxy sent (nginx's $host has no port)
    # Behind a trusted proxy, the host and scheme are the browser's (okr.proxies), and so is the scheme to match.
    scheme = request.environ.get("okr.proxy_scheme")
    try:
        parts = urlsplit(origin)
    except ValueError:  # such as http://[: no browser's, and no origin of this server
        parts = None
    if (parts is None or origin == "null" or host_and_port(parts.netloc) != host_and_port(request.host)
            or (scheme is not None and parts.scheme.lower() != scheme)):
        raise Forbidden(f"a request from the page of another origin ({origin}) may not change anything here")


def host_and_port(netloc):
    """A Host or an origin's address without a default port. The scheme is left out: behind a proxy that ends
    TLS, the browser's https://okr.example.com reaches this server as http, and is the same site (unless the
    proxy is trusted and says which scheme the browser used)."""
    netloc = netloc.lower()
    for default in (":80", ":443"):
        if netloc.endswith(default):
            return netloc[:-len(default)]
    return netloc


def refuse_large_bodies():
    """413 for any declared body over the limit, whether or not the view reads it."""
    # The environ test first: most requests carry no body, and request.content_length
    # goes through the headers object.
    if not request.environ.get("CONTENT_LENGTH"):
        return
    if (request.content_length or 0) > current_app.config["MAX_CONTENT_LENGTH"]:
        raise RequestEntityTooLarge()


def refuse_encoded_slashes():
    """404 for a path that spells a slash as %2F: the server decodes it, the route would not match."""
    raw = request.environ.get("REQUEST_URI") or request.environ.get("RAW_URI") or ""
    if "%2f" in raw.partition("?")[0].lower():
        raise NotFound()


def act_for_the_request():
    """Not a guard: every event this request's writes record names its actor (okr.store.events). While sign-in
    is off, a command's own requests (okr demo's) keep the actor it names."""
    actor = g.get("actor")
    if actor is not None or events.ACTOR.get() is events.SYSTEM:
        g.acting = events.ACTOR.set(event_actor(actor))
    # And every read sees what its person may see (okr.store.visibility).
    g.viewing = visibility.VIEWER.set(viewer_limit(actor))


def stop_acting(exception=None):
    if "acting" in g:
        events.ACTOR.reset(g.pop("acting"))
    if "viewing" in g:
        visibility.VIEWER.reset(g.pop("viewing"))


GUARDS = (
    # Any path: a Host this server was not told to answer for (DNS rebinding) is a 421.
    refuse_unknown_hosts,
    # Any path: a write from a page of another origin is a 403, keyed or not: in open mode any page the
    # operator visits could otherwise post to the API on loopback.
    refuse_cross_origin_writes,
    # /v1: a valid signature once any API key exists, and a read-only key only reads. First, so that
    # an unknown /v1 path is a 401 before it is a 404, and a refused write never waits for the write lock.
    auth.authenticate,
    # Any path: a declared body over MAX_CONTENT_LENGTH is a 413 before anything reads it.
    refuse_large_bodies,
    # Any path: %2F would route somewhere the client did not mean.
    refuse_encoded_slashes,
    # Pages: a live session once sign-in is needed (else to /login), and a read-only key's session only reads.
    sessions.require_session,
    # Pages: every form's POST carries its session's CSRF token; after the session, so that a signed-out
    # visitor is sent to sign in rather than told the form expired.
    sessions.require_csrf,
    # Every request that got this far: the activity feed's events name its actor.
    act_for_the_request,
)


def answers_in_json():
    """Whether this request's failures answer in the JSON error shape rather than as a page."""
    path = request.path
    if path == "/":
        return not wants_page()
    return answers_as_api(path)


def request_writes():
    """Whether this request may write: its connection then checks the file first, and its transaction takes the
    write lock up front (okr.db); a read gets a snapshot."""
    if request.method in READ_METHODS:
        return False
    # A view that reads a metric source over the network writes only after, in a transaction of its own (okr.db).
    return not getattr(current_app.view_functions.get(request.endpoint), "reads_first", False)


def answer_failure(error):
    """The one error handler: every exception a guard or a view raised, as JSON or as a page."""
    error = db.project_error(error)  # a busy, full or unwritable database, in the project's words
    return api_errors.answer(error) if answers_in_json() else page_errors.answer(error)


# Every page's policy: its own files only, never framed, forms posting only here.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; "
                               "object-src 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


def add_security_headers(response):
    """nosniff on every answer; on pages (every answer outside /v1 and /healthz), the page policy too."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    if not answers_as_api(request.path):
        for name, value in PAGE_HEADERS.items():  # a page may have chosen stricter (a board link: no Referer)
            response.headers.setdefault(name, value)
        if g.get("form_targets"):  # the sign-in page's button, whose POST goes on to the identity provider
            response.headers["Content-Security-Policy"] = PAGE_HEADERS["Content-Security-Policy"].replace(
                "form-action 'self'", "form-action 'self' " + " ".join(g.form_targets))
    return response


def answer_options_without_content(response):
    """OPTIONS answers 204 with its Allow header, and no body to label."""
    if request.method == "OPTIONS" and response.status_code == 200:
        response.status_code = 204
        response.set_data(b"")
        del response.headers["Content-Type"]
        del response.headers["Content-Length"]
    return response


def init_app(app):
    for guard in GUARDS:
        app.before_request(guard)
    app.teardown_request(stop_acting)
    app.register_error_handler(Exception, answer_failure)
    # After-request hooks run in the reverse order of registration: the headers go on last.
    app.after_request(add_security_headers)
    app.after_request(answer_options_without_content)
