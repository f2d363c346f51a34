"""A small client for this service's API, which is Simple OKR's: signed requests, paged lists, retries.

    with Client("http://127.0.0.1:8080", credential, secret) as okr:
        for objective in okr.objectives(cycle_id=cycle_id):
            print(objective["name"])

Standard library only, one keep-alive connection per client (shared under a lock). Answers are
parsed JSON, decimals left as the API's strings; single objects come as `Resource` (a dict with
the response's `etag`). Every failure raises `ApiError`.

Retries: connection failures before a request was sent, for any request; a dropped connection
after it was sent, and 429/503 answers (waiting `Retry-After`, capped), only for idempotent
requests: GET, DELETE, PATCH and POST-replace of /v1/<resource>/<id>, never a create. (So a
DELETE retried after a dropped connection may answer 404 when the first one went through.)
"""
import email.utils
import http.client
import json
import random
import re
import select
import socket
import ssl
import threading
import time
import urllib.parse
from datetime import datetime, timezone
from decimal import Decimal

from ..rules.request_signature import authorization_header

__all__ = ["ApiError", "Client", "Resource", "authorization_header"]

RETRY_STATUSES = frozenset({429, 503})
# POST to exactly /v1/<collection>/<id> replaces the object whole: repeating it changes nothing more.
REPLACE_PATH = re.compile(r"/v1/[a-z]+/[^/]+")


class ApiError(Exception):
    """A failed call: an error answer (status, and the body's code, message and details),
    or no answer at all (status None; __cause__ holds the network error)."""

    def __init__(self, status, message, code=None, details=None, headers=None, body=b""):
        super().__init__(status, message)
        self.status = status
        self.code = code if code is not None else status
        self.message = message
        self.details = details or {}
        self.headers = headers or {}
        self.body = body

    def __str__(self):
        text = f"{self.status or 'no answer'}: {self.message}"
        if self.details:
            text += " (" + "; ".join(f"{field}: {why}" for field, why in self.details.items()) + ")"
        return text


class Resource(dict):
    """One object as the API answered it, with that answer's ETag (None when it sent none)."""

    def __init__(self, data, etag=None):
        super().__init__(data)
        self.etag = etag


class _NotSent(Exception):
    """The request never left: safe to retry whatever it was."""


class _MaybeSent(Exception):
    """The connection failed once the request was (perhaps partly) sent."""

    def __init__(self, cause, reused):
        super().__init__(cause)
        self.cause, self.reused = cause, reused


class Client:
    """A client of one server. `timeout` is seconds, or (connect, read) seconds, per request;
    `retries` is how many times a retryable failure is tried again. For a server you do not trust,
    `max_answer_bytes` caps an answer's size and `deadline` (seconds) the whole of one exchange, however
    slowly the server sends: past either the call fails with ApiError, status None."""

    def __init__(self, base_url, credential=None, secret=None, timeout=(5.0, 30.0),
                 retries=3, backoff=0.5, max_wait=30.0, max_answer_bytes=None, deadline=None):
        if (credential is None) != (secret is None):
            raise ValueError("give both credential and secret, or neither")
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http:// or https:// URL, not {base_url!r}")
        self.base_url = base_url
        self.credential, self.secret = credential, secret
        self.connect_timeout, self.read_timeout = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        self.retries, self.backoff, self.max_wait = retries, backoff, max_wait
        self.max_answer_bytes, self.deadline = max_answer_bytes, deadline
        self._scheme, self._host, self._port = parts.scheme, parts.hostname, parts.port
        self._netloc, self._prefix = parts.netloc, parts.path.rstrip("/")
        self._connection = None
        self._lock = threading.Lock()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self):
        """Closes the kept-alive connection; the next call opens another."""
        with self._lock:
            self._drop()

    # --- users (managed by the admin; the API only reads them)

    def users(self, page_size=None):
        return self._list("/v1/users", "users", page_size=page_size)

    def user(self, user_id):
        return self._get_one(f"/v1/users/{_quote(user_id)}")

    # --- teams and cycles

    def teams(self, page_size=None):
        return self._list("/v1/teams", "teams", page_size=page_size)

    def team(self, team_id):
        return self._get_one(f"/v1/teams/{_quote(team_id)}")

    def create_team(self, name=""):
        return self._call("POST", "/v1/teams", {"name": name})

    def rename_team(self, team_id, name, if_match=None):
        return self._call("POST", f"/v1/teams/{_quote(team_id)}", {"name": name}, if_match=if_match)

    def delete_team(self, team_id, if_match=None):
        """Deletes a team; its objectives keep existing without one."""
        self._call("DELETE", f"/v1/teams/{_quote(team_id)}", if_match=if_match)

    def cycles(self, page_size=None):
        return self._list("/v1/cycles", "cycles", page_size=page_size)

    def cycle(self, cycle_id):
        return self._get_one(f"/v1/cycles/{_quote(cycle_id)}")

    def create_cycle(self, name=""):
        return self._call("POST", "/v1/cycles", {"name": name})

    def rename_cycle(self, cycle_id, name, if_match=None):
        return self._call("POST", f"/v1/cycles/{_quote(cycle_id)}", {"name": name}, if_match=if_match)

    def delete_cycle(self, cycle_id, if_match=None):
        """Deletes a cycle with its objectives, their key results and check-ins."""
        self._call("DELETE", f"/v1/cycles/{_quote(cycle_id)}", if_match=if_match)

    # --- objectives

    def objectives(self, cycle_id, *, team_id=None, assignee_id=None, parent_objective_id=None,
                   is_company=None, is_personal=None, page_size=None):
        """A cycle's objectives; parent_objective_id="none" keeps those without a parent."""
        return self._list("/v1/objectives", "objectives", cycle_id=cycle_id, team_id=team_id,
                          assignee_id=assignee_id, parent_objective_id=parent_objective_id,
                          is_company=is_company, is_personal=is_personal, page_size=page_size)

    def objective(self, objective_id):
        return self._get_one(f"/v1/objectives/{_quote(objective_id)}")

    def create_objective(self, name, cycle_id, is_company=False, is_personal=False, **fields):
        body = {"name": name, "cycle_id": cycle_id, "is_company": is_company, "is_personal": is_personal, **fields}
        return self._call("POST", "/v1/objectives", body)

    def replace_objective(self, objective_id, objective, if_match=None):
        """Replaces an objective whole: a field left out takes its zero value (team, parent dropped)."""
        return self._call("POST", f"/v1/objectives/{_quote(objective_id)}", objective, if_match=if_match)

    def patch_objective(self, objective_id, if_match=None, **changes):
        """Changes only the fields named (JSON Merge Patch); None clears a nullable one."""
        return self._call("PATCH", f"/v1/objectives/{_quote(objective_id)}", changes, if_match=if_match)

    def delete_objective(self, objective_id, if_match=None):
        """Deletes an objective and its key results; its children lose their parent."""
        self._call("DELETE", f"/v1/objectives/{_quote(objective_id)}", if_match=if_match)

    # --- key results

    def key_results(self, cycle_id, *, type=None, page_size=None):
        """The key results of a cycle's objectives, maybe of one type."""
        return self._list("/v1/keyresults", "keyresults", cycle_id=cycle_id, type=type, page_size=page_size)

    def objective_key_results(self, objective_id, *, type=None, page_size=None):
        return self._list(f"/v1/objectives/{_quote(objective_id)}/keyresults", "keyresults",
                          type=type, page_size=page_size)

    def key_result(self, key_result_id):
        return self._get_one(f"/v1/keyresults/{_quote(key_result_id)}")

    def create_key_result(self, objective_id, name, type, **fields):
        body = {"name": name, "type": type, **fields}
        return self._call("POST", f"/v1/objectives/{_quote(objective_id)}/keyresults", body)

    def replace_key_result(self, key_result_id, key_result, if_match=None):
        """Replaces a key result whole: omitted decimals become "0.00", omitted targets null."""
        return self._call("POST", f"/v1/keyresults/{_quote(key_result_id)}", key_result, if_match=if_match)

    def patch_key_result(self, key_result_id, if_match=None, **changes):
        """Changes only the fields named (JSON Merge Patch); None clears a target."""
        return self._call("PATCH", f"/v1/keyresults/{_quote(key_result_id)}", changes, if_match=if_match)

    def delete_key_result(self, key_result_id, if_match=None):
        self._call("DELETE", f"/v1/keyresults/{_quote(key_result_id)}", if_match=if_match)

    # --- check-ins and reports

    def checkins(self, key_result_id, page_size=None):
        """A key result's check-ins, oldest first."""
        return self._list(f"/v1/keyresults/{_quote(key_result_id)}/checkins", "checkins", page_size=page_size)

    def check_in(self, key_result_id, value, confidence=None, comment=None, author_id=None, if_match=None):
        """Records a check-in, which becomes the key result's current value (and confidence, if given)."""
        body = {"value": value, "confidence": confidence, "comment": comment, "author_id": author_id}
        body = {name: given for name, given in body.items() if given is not None}
        return self._call("POST", f"/v1/keyresults/{_quote(key_result_id)}/checkins", body, if_match=if_match)

    def cycle_report(self, cycle_id, team_id=None, assignee_id=None):
        """A cycle's alignment tree with progress and status, maybe narrowed to a team or assignee."""
        return self._call("GET", f"/v1/cycles/{_quote(cycle_id)}/report",
                          params={"team_id": team_id, "assignee_id": assignee_id})

    def objective_report(self, objective_id):
        """An objective and everything aligned below it, with progress."""
        return self._call("GET", f"/v1/objectives/{_quote(objective_id)}/report")

    def health(self):
        """GET /healthz: {"status": "ok"} (open without a key)."""
        return self._call("GET", "/healthz")

    # --- the plumbing

    def request(self, method, path, body=None, params=None, headers=None):
        """Any call: path from the API's root ("/v1/..."); the parsed answer, or None for an empty one."""
        return self._call(method, path, body, params=params, headers=headers)

    def _get_one(self, path):
        return self._call("GET", path)

    def _list(self, path, key, **params):
        """Fetches the first page now (so a bad argument raises here), then pages on as iterated."""
        page = self._call("GET", path, params=params)
        return self._pages(path, key, params, page)

    def _pages(self, path, key, params, page):
        while True:
            yield from page[key]
            if not page.get("next_page_token"):
                return
            page = self._call("GET", path, params={**params, "page_token": page["next_page_token"]})

    def _call(self, method, path, body=None, params=None, if_match=None, headers=None):
        target = self._prefix + path
        query = {name: _query_value(value) for name, value in (params or {}).items() if value is not None}
        if query:
            target += "?" + urllib.parse.urlencode(query)
        headers = {"Accept": "application/json", "User-Agent": "okr-client", **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, default=_decimal_text).encode()
            headers["Content-Type"] = "application/merge-patch+json" if method == "PATCH" else "application/json"
        if if_match is not None:
            headers["If-Match"] = if_match
        idempotent = method != "POST" or bool(REPLACE_PATH.fullmatch(path))
        status, reason, response_headers, payload = self._send(method, target, data, headers, idempotent)
        return _result(status, reason, response_headers, payload)

    def _send(self, method, target, data, headers, idempotent):
        """One answer, trying again as the retry rules allow."""
        attempt, retried_stale = 0, False
        while True:
            if self.credential is not None:
                headers["Authorization"] = authorization_header(self.credential, self.secret)
            try:
                status, reason, response_headers, payload = self._exchange(method, target, data, headers)
            except _NotSent as failure:
                cause, why = failure.__cause__, "could not connect"
            except _MaybeSent as failure:
                cause = failure.cause
                if isinstance(cause, AnswerTooLarge):
                    raise ApiError(None, f"the answer to {method} {target} is larger than "
                                         f"{self.max_answer_bytes:,} bytes") from cause
                if isinstance(cause, DeadlinePassed):
                    raise ApiError(None, f"no whole answer within {self.deadline:g} s to {method} {target}") from cause
                if isinstance(cause, TimeoutError):
                    raise ApiError(None, f"no answer within {self.read_timeout} s to {method} {target}") from cause
                if not idempotent:
                    raise ApiError(None, f"the connection failed after {method} {target} was sent; "
                                         "it may have been applied (not retried)") from cause
                if failure.reused and not retried_stale:
                    retried_stale = True  # a kept-alive connection the server had closed: once more, at once
                    continue
                why = "the connection failed"
            else:
                if status not in RETRY_STATUSES or not idempotent or attempt >= self.retries:
                    return status, reason, response_headers, payload
                self._sleep(self._wait(attempt, response_headers.get("retry-after")))
                attempt += 1
                continue
            if attempt >= self.retries:
                raise ApiError(None, f"{why}: {method} {target} on {self._netloc} "
                                     f"({attempt + 1} attempts): {cause}") from cause
            self._sleep(self._wait(attempt, None))
            attempt += 1

    def _wait(self, attempt, retry_after):
        """Seconds to wait before the next try: Retry-After when given, else backoff with jitter; capped."""
        seconds = _retry_after_seconds(retry_after)
        if seconds is None:
            step = self.backoff * 2 ** attempt
            seconds = step / 2 + random.uniform(0, step / 2)
        return min(max(seconds, 0.0), self.max_wait)

    _sleep = staticmethod(time.sleep)

    def _exchange(self, method, target, data, headers):
        """One request and its answer, read whole, on the kept-alive connection."""
        with self._lock:
            connection, reused = self._connection, True
            if connection is not None and _dropped(connection.sock):
                self._drop()
                connection = None
            if connection is None:
                connection, reused = self._new_connection(), False
            # The watchdog cuts the connection at the deadline: a server sending a byte now and then (in
            # the TLS handshake too) never lets a read time out, but cannot outlast this.
            watchdog, response = _Watchdog(connection, self.deadline), None
            try:
                if not reused:
                    self._open(connection, watchdog)
                connection.request(method, target, body=data, headers=headers)
                response = connection.getresponse()
                payload = self._read_answer(response)
                if watchdog.fired:  # an answer read to a close the watchdog made is cut short
                    raise DeadlinePassed()
            except (OSError, http.client.HTTPException) as error:
                self._drop(response)
                raise _MaybeSent(DeadlinePassed() if watchdog.fired else error, reused) from error
            except BaseException:
                self._drop(response)  # e.g. a header http.client refuses: the connection's state is unknown
                raise
            finally:
                watchdog.cancel()
            if response.will_close:
                self._drop()
            return response.status, response.reason, {k.lower(): v for k, v in response.getheaders()}, payload

    def _read_answer(self, response):
        """The answer's body, refused as soon as it is known to pass max_answer_bytes."""
        limit = self.max_answer_bytes
        if limit is None:
            return response.read()
        declared = response.getheader("Content-Length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise AnswerTooLarge()
        chunks, size = [], 0
        while chunk := response.read1(65536):
            size += len(chunk)
            if size > limit:
                raise AnswerTooLarge()
            chunks.append(chunk)
        response.read()  # nothing is left: this marks the answer read, so the connection takes the next request
        return b"".join(chunks)

    def _new_connection(self):
        """A connection not yet opened: the watchdog can reach its socket from the first byte."""
        kind = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        return kind(self._host, self._port, timeout=self.connect_timeout)

    def _open(self, connection, watchdog):
        try:
            connection.connect()
        except ssl.SSLCertVerificationError as error:
            connection.close()
            raise ApiError(None, f"the server's certificate was refused: {error}") from error
        except OSError as error:
            connection.close()
            if watchdog.fired:
                raise DeadlinePassed() from error
            raise _NotSent() from error
        connection.sock.settimeout(self.read_timeout)
        self._connection = connection

    def _drop(self, response=None):
        if response is not None:
            response.close()  # an answer left part read holds the socket open otherwise
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class AnswerTooLarge(OSError):
    """An answer past the client's max_answer_bytes."""


class DeadlinePassed(OSError):
    """An exchange that outlasted the client's deadline."""


class _Watchdog:
    """Shuts a connection's socket down once `seconds` pass (never, for None), so that a read waiting on it
    ends, whether it is the handshake's, the request's or the answer's."""

    def __init__(self, connection, seconds):
        self.fired, self._timer = False, None
        if seconds is not None:
            self._timer = threading.Timer(seconds, self._fire, args=(connection,))
            self._timer.daemon = True
            self._timer.start()

    def _fire(self, connection):
        self.fired = True
        sock = connection.sock  # the plain socket while TLS is being set up, the wrapped one after
        try:
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def cancel(self):
        if self._timer is not None:
            self._timer.cancel()


def _dropped(sock):
    """True when a kept-alive socket is closed, or has bytes nobody asked for: unfit for a request."""
    if sock is None:
        return True
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


REDIRECTS = frozenset({301, 302, 303, 307, 308})


def _result(status, reason, headers, payload):
    if status >= 400:
        raise _error(status, reason, headers, payload)
    if status in REDIRECTS:
        raise ApiError(status, f"the server redirects to {headers.get('location')!r}, which is not followed: "
                               "use the address it names", headers=headers, body=payload)
    if not payload:
        return None
    try:
        data = json.loads(payload)
    except ValueError:
        raise ApiError(status, f"the answer is not JSON ({headers.get('content-type')})",
                       headers=headers, body=payload) from None
    return Resource(data, headers.get("etag")) if isinstance(data, dict) else data


def _error(status, reason, headers, payload):
    try:
        body = json.loads(payload)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        details = body.get("details")
        return ApiError(status, body["message"], code=body.get("code"),
                        details=details if isinstance(details, dict) else None, headers=headers, body=payload)
    text = payload.decode("utf-8", "replace").strip()
    return ApiError(status, text[:500] or reason or "no message", headers=headers, body=payload)


def _retry_after_seconds(value):
    """Retry-After's delay in seconds (a number, or an HTTP date), or None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        return None
    return (moment - datetime.now(timezone.utc)).total_seconds()


def _query_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _decimal_text(value):
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _quote(identifier):
    return urllib.parse.quote(str(identifier), safe="")
