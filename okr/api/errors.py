"""Turns every failure into the contract's {code, message, details} JSON body."""
import sqlite3

from flask import current_app, jsonify
from marshmallow import ValidationError
from werkzeug.exceptions import HTTPException

from .. import db

# Short, stable summaries; werkzeug's default descriptions talk about browsers.
MESSAGES = {
    400: "bad request",
    401: "authentication required",
    404: "not found",
    405: "method not allowed",
}


def flatten(messages, prefix=""):
    """Turns marshmallow's nested message lists into {field: "text"}."""
    if isinstance(messages, (list, tuple)):
        if all(isinstance(m, str) for m in messages):
            return {prefix or "_body": " ".join(messages)}
        out = {}
        for index, item in enumerate(messages):
            out.update(flatten(item, f"{prefix}.{index}" if prefix else str(index)))
        return out
    if isinstance(messages, dict):
        out = {}
        for key, value in messages.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix or "_body": str(messages)}


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


def handle_http_exception(error):
    # abort(404, "objective not found") carries its own message; werkzeug's
    # class-level default descriptions are replaced by ours.
    if error.description and error.description != type(error).description:
        message = error.description
    elif error.code == 413:
        message = f"request body too large (limit {current_app.config['MAX_CONTENT_LENGTH']} bytes)"
    else:
        message = MESSAGES.get(error.code, error.name.lower())
    return error_response(error.code, message, headers=error.get_headers())


def handle_validation_error(error):
    return error_response(400, "validation failed", flatten(error.messages))


def handle_database_unusable(error):
    return error_response(503, "the database is unusable", {"database": str(error)})


def handle_unexpected(error):
    if isinstance(error, sqlite3.Error):
        db.forget_connection_after(error)
        code = db.primary_error_code(error)
        if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            # The busy timeout ran out: the client may simply retry.
            current_app.logger.warning("database busy: %s", error)
            return error_response(503, "database busy, retry shortly", headers=[("Retry-After", "1")])
        if code == sqlite3.SQLITE_FULL:
            current_app.logger.exception("the disk is full")
            return error_response(507, "the disk is full")
        if code == sqlite3.SQLITE_READONLY:
            # Retrying helps once an operator fixes the file: the connection is reopened.
            current_app.logger.exception("the database file is not writable")
            return error_response(503, "the database file is not writable", headers=[("Retry-After", "1")])
    current_app.logger.exception("unhandled error")
    return error_response(500, "internal error")


def init_app(app):
    app.register_error_handler(HTTPException, handle_http_exception)
    app.register_error_handler(ValidationError, handle_validation_error)
    app.register_error_handler(db.DatabaseUnusable, handle_database_unusable)
    app.register_error_handler(Exception, handle_unexpected)
