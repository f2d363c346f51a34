"""Turns every failure on /v1 and /healthz into the contract's {code, message, details} JSON body."""
from flask import current_app, jsonify
from marshmallow import ValidationError
from werkzeug.exceptions import HTTPException

from ..errors import Busy, Conflict, DatabaseTrouble, DatabaseUnusable, DiskFull, Invalid, NotFound
from ..rules.messages import flatten

# Short, stable summaries; werkzeug's default descriptions talk about browsers.
MESSAGES = {
    400: "bad request",
    401: "authentication required",
    404: "not found",
    405: "method not allowed",
}


def error_response(code, message, details=None, headers=None):
    body = {"code": code, "message": message}
    if details:
        body["details"] = details
    response = jsonify(body)
    response.status_code = code
    for name, value in headers or ():
        if name.lower() != "content-type":
            response.headers[name] = value
    return response


def answer(error):
    """The JSON error response for any exception a request raised."""
    if isinstance(error, HTTPException):
        return http_error(error)
    if isinstance(error, ValidationError):
        return error_response(400, "validation failed", flatten(error.messages))
    if isinstance(error, Invalid):
        return error_response(400, "validation failed", error.fields)
    if isinstance(error, NotFound):
        return error_response(404, str(error))
    if isinstance(error, Conflict):
        return error_response(409, str(error))
    if isinstance(error, DatabaseUnusable):
        return error_response(503, "the database is unusable", {"database": str(error)})
    if isinstance(error, DiskFull):
        return error_response(507, str(error))
    if isinstance(error, DatabaseTrouble):
        return error_response(503, str(error), headers=[("Retry-After", "1")])
    if isinstance(error, Busy):
        return error_response(503, str(error), headers=[("Retry-After", str(error.retry_after))])
    return unexpected(error)


def http_error(error):
    # abort(404, "objective not found") carries its own message; werkzeug's
    # class-level default descriptions are replaced by ours.
    if error.description and error.description != type(error).description:
        message = error.description
    elif error.code == 413:
        message = f"request body too large (limit {current_app.config['MAX_CONTENT_LENGTH']} bytes)"
    else:
        message = MESSAGES.get(error.code, error.name.lower())
    return error_response(error.code, message, headers=error.get_headers())


def unexpected(error):
    current_app.logger.exception("unhandled error")
    return error_response(500, "internal error")
