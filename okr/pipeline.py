"""The request pipeline in one place: the guards that run before every view, in order, and how a failure is answered.

A guard returns None to let the request go on, or refuses it by returning a response or
raising. Every failure, a guard's or a view's, is answered by answer_failure: in the
contract's JSON error shape on /v1 and /healthz (and at / for an API client, which gets the
JSON index there), as a page in the dashboard's layout everywhere else.
"""
from flask import current_app, request
from werkzeug.exceptions import NotFound, RequestEntityTooLarge

from .api import auth
from .api import errors as api_errors
from .web import errors as page_errors
from .web import sessions


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


GUARDS = (
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
)


def answers_in_json():
    """Whether this request's failures answer in the JSON error shape rather than as a page."""
    path = request.path
    if path == "/":
        return not page_errors.wants_page()
    return auth.is_api_path(path) or path == "/healthz"


def answer_failure(error):
    """The one error handler: every exception a guard or a view raised, as JSON or as a page."""
    return api_errors.answer(error) if answers_in_json() else page_errors.answer(error)


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
    app.register_error_handler(Exception, answer_failure)
    app.after_request(answer_options_without_content)
