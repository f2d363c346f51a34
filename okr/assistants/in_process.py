"""An assistant's calls into this service, made in this process: each tool asks the API (/v1) or a report, as the
person the grant acts for, so that rights, validation, events and webhooks are the API's own, and one call is one
transaction.

A call to /v1 runs the Flask app's WSGI callable on a request built here, with the grant in its environ
(okr.accounts.assistant_grants.ENVIRON_KEY); okr.api.auth reads it there, checks it again and names the actor. It
runs in a context of its own, whatever request it is made from (the /mcp request's, over HTTP), so that it has its
own request, `g` and transaction.
"""
import contextvars
import io
import json
import re
import sys
from urllib.parse import urlencode

from flask import Flask

from .. import db
from ..accounts import assistant_grants
from ..errors import NotFound
from ..store import visibility

# What an id may be in a path the tools build: the ids this service makes, and nothing that would route elsewhere.
ID = re.compile(r"[0-9A-Za-z-]{1,64}")


class CallFailed(Exception):
    """The API refused a call: status and its error body's message and details ({field: sentence})."""

    def __init__(self, status, message, details=None):
        super().__init__(message)
        self.status, self.message, self.details = status, message, details or {}

    def __str__(self):
        fields = "; ".join(f"{name}: {sentence}" for name, sentence in self.details.items())
        return f"{self.message} ({fields})" if fields else self.message


def checked_id(value, what):
    """An id as a path's segment; a refusal naming the argument for anything that is not one."""
    if not isinstance(value, str) or not ID.fullmatch(value):
        raise CallFailed(400, "invalid request", {what: "is not an id this service made"})
    return value


class Caller:
    """Calls for one grant, from one client: host, address and scheme are the outer request's over HTTP."""

    def __init__(self, app, grant, host="localhost", address="127.0.0.1", scheme="http"):
        self.app, self.grant, self.host, self.address, self.scheme = app, grant, host, address, scheme

    def named(self, via):
        """This caller, its grant named with the assistant (okr.accounts.assistant_grants.Grant.named)."""
        return Caller(self.app, self.grant.named(via), self.host, self.address, self.scheme)

    def environ(self, method, path, query=None, body=None):
        data = b"" if body is None else json.dumps(body).encode("utf-8")
        environ = {
            "REQUEST_METHOD": method, "SCRIPT_NAME": "", "PATH_INFO": path,
            "QUERY_STRING": urlencode({k: v for k, v in (query or {}).items() if v is not None}),
            "SERVER_NAME": "localhost", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": self.host, "REMOTE_ADDR": self.address, "HTTP_ACCEPT": "application/json",
            "wsgi.version": (1, 0), "wsgi.url_scheme": self.scheme, "wsgi.input": io.BytesIO(data),
            "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.run_once": False,
            assistant_grants.ENVIRON_KEY: self.grant,
        }
        if body is not None:
            environ["CONTENT_TYPE"] = "application/json"
            environ["CONTENT_LENGTH"] = str(len(data))
        return environ

    def call(self, method, path, query=None, body=None):
        """The API's JSON answer to one request; CallFailed with its message when it refuses."""
        answer = {}

        def start_response(status, headers, exc_info=None):
            answer["status"] = int(status.split(" ", 1)[0])

        environ = self.environ(method, path, query, body)
        # Flask.wsgi_app itself, not a middleware put before it: the request is already this server's own.
        chunks = contextvars.Context().run(Flask.wsgi_app, self.app, environ, start_response)
        try:
            data = b"".join(chunks)
        finally:
            if hasattr(chunks, "close"):
                chunks.close()
        parsed = json.loads(data) if data else None
        if answer["status"] >= 400:
            parsed = parsed if isinstance(parsed, dict) else {}
            raise CallFailed(answer["status"], parsed.get("message", "refused"), parsed.get("details"))
        return parsed

    def get(self, path, **query):
        return self.call("GET", path, query)

    def post(self, path, body):
        return self.call("POST", path, body=body)

    def patch(self, path, body):
        return self.call("PATCH", path, body=body)

    def read(self, reader):
        """reader(db, grant) in a reading transaction of its own on this thread's connection, the grant checked again
        first: for the read models no /v1 path serves (Your week), and for reads that would take several calls.
        The project's NotFound becomes the API's 404."""
        def run():
            with self.app.request_context(self.environ("GET", "/v1")):
                try:
                    connection = db.get_db()
                    grant = assistant_grants.still_valid(connection, self.grant)
                    # What the person may see, as the API's requests do (okr.pipeline).
                    with visibility.viewing_as(visibility.limit_of(grant.user_id, grant.role)):
                        return reader(connection, grant)
                except assistant_grants.GrantRefused as refused:
                    raise CallFailed(401, str(refused)) from None
                except NotFound as missing:
                    raise CallFailed(404, str(missing)) from None
        return contextvars.Context().run(run)
