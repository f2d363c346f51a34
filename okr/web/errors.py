"""Every failure outside /v1 and /healthz as a page in the dashboard's layout, with a way back."""
from flask import current_app, make_response, render_template
from marshmallow import ValidationError
from werkzeug.exceptions import HTTPException

from ..accounts.password_links import INVITATION, LinkNotValid
from ..accounts.sessions import FormRefused, NotAllowed, SessionUnavailable
from ..accounts.sign_in import SignInsBusy
from ..accounts.throttle import Throttled
from ..errors import Busy, Conflict, CycleClosed, DatabaseTrouble, DatabaseUnusable, DiskFull, Invalid, NotFound
from ..rules.messages import flatten
from ..store.invitations import VALID_FOR as INVITATION_LIFE
from .wording import closed_note


class PageError(HTTPException):
    """An error shown as a page: its status, a heading and a sentence."""

    def __init__(self, code, title, message, headers=()):
        super().__init__(message)
        self.code, self.title, self.headers = code, title, tuple(headers)


# What okr.accounts refuses, said for people: a heading and a sentence.
FORM_REFUSED = ("Form not accepted", "This form has expired or did not come from this page. Go back, reload the page "
                                     "and submit it again.")
INVITATION_NOT_VALID = ("Invitation not valid",
                        f"This invitation link is unknown, used or past its {INVITATION_LIFE.days} days. Ask an admin "
                        "for a new one.")
RESET_NOT_VALID = ("Reset link not valid",
                   "This password reset link is unknown, used or past its hour. Ask for a new one on the sign-in "
                   "page.")

# Werkzeug's own errors, said for people: a heading and a sentence per status.
HTTP_PAGES = {
    400: ("Bad request", "The server could not understand this request."),
    401: ("Sign-in needed", "This page needs you to sign in."),
    403: ("Not allowed", "You may not do this."),
    404: ("Page not found", "There is no page at this address. The link may be mistyped, or what it showed was "
                            "deleted."),
    405: ("Not possible here", "This address does not take that kind of request."),
    413: ("Too much sent", "What the form sent is larger than the server accepts."),
    429: ("Too many tries", "Wait a little, then try again."),
}


def page(code, title, message, headers=()):
    try:
        html = render_template("message.html", title=title, message=message)
    except Exception:  # the layout asks the database who is signed in, and the database may be what failed
        current_app.logger.exception("the error page could not be drawn in the layout")
        html = render_template("bare-message.html", title=title, message=message)
    response = make_response(html, code)
    for name, value in headers:
        if name.lower() != "content-type":
            response.headers[name] = value
    return response


def answer(error):
    """The error page for any exception a page's request raised."""
    if isinstance(error, PageError):
        return page(error.code, error.title, error.description, error.headers)
    if isinstance(error, HTTPException):
        title, message = HTTP_PAGES.get(error.code, (error.name, "The server could not answer this request."))
        if error.description and error.description != type(error).description:
            message = error.description
        return page(error.code, title, message, error.get_headers())
    if isinstance(error, NotFound):
        return page(404, f"No such {error.resource}", f"This {error.resource} does not exist; it may have been "
                                                      "deleted.")
    if isinstance(error, (Invalid, ValidationError)):
        fields = error.fields if isinstance(error, Invalid) else flatten(error.messages)
        return page(400, "Not saved", " ".join(f"{field}: {text}" for field, text in fields.items()))
    if isinstance(error, CycleClosed):
        return page(409, "This cycle is closed", closed_note(error.cycle) if error.cycle is not None else
                    "Nothing in a closed cycle can be changed, checked in or commented on until an admin reopens "
                    "it.")
    if isinstance(error, Conflict):
        return page(409, "Not saved", str(error))
    if isinstance(error, SessionUnavailable):
        return unavailable()
    if isinstance(error, NotAllowed):
        return page(403, "Not allowed", str(error))
    if isinstance(error, FormRefused):
        return page(400, *FORM_REFUSED)
    if isinstance(error, Throttled):
        minutes = -(-error.wait // 60)
        return page(429, "Too many tries", f"Too many failed sign-ins from your address. Try again in {minutes} "
                    f"minute{'s' if minutes != 1 else ''}.", [("Retry-After", str(error.wait))])
    if isinstance(error, SignInsBusy):
        return page(503, "Try again in a moment", "Many sign-ins are being checked just now. Try again in a few "
                    "seconds.", [("Retry-After", str(error.retry_after))])
    if isinstance(error, LinkNotValid):
        return page(404, *(INVITATION_NOT_VALID if error.kind == INVITATION else RESET_NOT_VALID))
    if isinstance(error, Busy):
        return page(503, "Try again in a moment", "Other big reports are being prepared just now; this one will be "
                    "ready to start in a few seconds.", [("Retry-After", str(error.retry_after))])
    if isinstance(error, DatabaseUnusable):
        return page(503, "Try again in a moment", "The database cannot be used just now; the server's log says why.",
                    [("Retry-After", "1")])
    if isinstance(error, DiskFull):
        return page(507, "Not saved", "The server's disk is full: nothing was changed. Tell whoever runs it.")
    if isinstance(error, DatabaseTrouble):
        return unavailable()
    current_app.logger.exception("unhandled error")
    return page(500, "Something went wrong", "The server could not show this page; nothing was changed. Try again "
                                             "in a moment; if it keeps happening, the server's log says why.")


def unavailable():
    return page(503, "Try again in a moment", "The database did not answer, so this page cannot be shown just now.",
                [("Retry-After", "1")])
