"""Sending one webhook request: Standard Webhooks signatures, the refusal of private addresses, one POST.

Flask-free, so that the background process (okr.outbound.webhook_queue), the commands and the pages share it.

A request goes to an address checked after DNS resolution and pinned to it, within one deadline, connect to
last byte (okr.outbound.pinned_http, which metric sources share). Redirects are never followed: a 3xx is a
failure like any other non-2xx.
"""
import base64
import hashlib
import hmac
import http.client
import json
import random
import secrets
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

from ..rules.webhook_receivers import SECRET_PREFIX
from . import pinned_http
from .pinned_http import (Deadline, PinnedHTTPConnection, PinnedHTTPSConnection, Refused, Unresolved,
                          default_port, describe, is_public, tls_context)
from ..settings import default

TIMEOUT_SECONDS = 15
# After the first attempt fails, the retries wait about this long each (seconds); when the last fails, the
# delivery has failed and the hook is disabled. The setting OKR_WEBHOOK_RETRY_SCHEDULE; this is its default.
RETRY_SCHEDULE = default("WEBHOOK_RETRY_SCHEDULE")
JITTER = 0.1  # each wait is the schedule's +- 10 %, so that hooks failing together do not retry together
MAX_RETRY_AFTER = 24 * 3600  # a receiver's Retry-After is honoured up to a day
USER_AGENT = "okr-webhooks/1"
# What of a failed answer's body the delivery log keeps.
ERROR_BODY_BYTES = 200


def secret_bytes(secret):
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def signature(secret, message_id, timestamp, body):
    """The webhook-signature header: v1, and the base64 HMAC-SHA256 of "id.timestamp.body" under the secret."""
    signed = f"{message_id}.{timestamp}.".encode("utf-8") + body
    return "v1," + base64.b64encode(hmac.new(secret_bytes(secret), signed, hashlib.sha256).digest()).decode("ascii")


def signed_headers(secret, message_id, timestamp, body):
    """The headers of a delivery of body (bytes) with this id, signed at timestamp (Unix seconds)."""
    timestamp = str(int(timestamp))
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "webhook-id": message_id,
        "webhook-timestamp": timestamp,
        "webhook-signature": signature(secret, message_id, timestamp, body),
    }


def refusal(allow_private):
    """The webhooks' address rule for pinned_http.resolve: only public addresses, unless allow_private."""
    def refused(host, address):
        if allow_private or is_public(address):
            return None
        return (f"{host} resolves to {address}, a loopback, private, link-local or multicast address; "
                "add the hook with --allow-private to allow it")
    return refused


def resolve(host, port, allow_private):
    """The addresses to connect to for host (a name or an IP literal), each checked; Refused when the name
    does not resolve, or when any address it resolves to is not public and allow_private is false."""
    return pinned_http.resolve(host, port, refusal(allow_private))


def check_destination(url, allow_private):
    """Raises Refused when url's host resolves to an address a hook may not reach (for adding a hook). A name
    that does not resolve yet is let be: each delivery checks again."""
    parts = urlsplit(url)
    try:
        resolve(parts.hostname, parts.port or default_port(parts.scheme), allow_private)
    except Unresolved:
        pass


@dataclass
class Outcome:
    """What one attempt came to: the HTTP status (None when none came), an error sentence for a failure, and
    the receiver's Retry-After in seconds (None when it gave none)."""

    status: int | None
    error: str | None = None
    retry_after: float | None = None

    @property
    def ok(self):
        return self.status is not None and 200 <= self.status < 300


def parse_retry_after(value, now):
    """Seconds to wait from a Retry-After header (seconds, or an HTTP date), or None; at most a day."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - now
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def post(url, body, headers, allow_private, timeout=None, now=time.time, pool=None):
    """POSTs body (bytes) to url with headers, once, within timeout seconds (TIMEOUT_SECONDS) from the
    connection's start to the answer's last byte read; the Outcome. Never raises for the receiver's doing.

    pool: a dict in which a caller that sends many (a deliverer's worker) keeps a connection alive between
    requests; it is used again only while the name still resolves to the address it was made to, checked."""
    timeout = TIMEOUT_SECONDS if timeout is None else timeout
    parts = urlsplit(url)
    port = parts.port or default_port(parts.scheme)
    try:
        addresses = resolve(parts.hostname, port, allow_private)
    except Refused as refusal:
        return Outcome(None, f"refused: {refusal}")
    request = ("POST", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), body,
               {"Host": parts.netloc.rsplit("@", 1)[-1], **headers})
    deadline = Deadline(timeout)
    key = (parts.scheme, parts.hostname, port)
    kept = pool.pop(key, None) if pool is not None else None
    if kept is not None:
        address, connection = kept
        if address in addresses:
            try:
                connection.keep_until(deadline)
                return exchange(connection, request, now, pool, key, address)
            except ConnectionError:  # the receiver closed the idle connection: a new one
                pass
            except (OSError, http.client.HTTPException) as failure:
                return Outcome(None, describe(failure, timeout))
        connection.close()
    error = None
    for address in addresses:
        if deadline.end <= time.monotonic():
            break
        if parts.scheme == "https":
            connection = PinnedHTTPSConnection(address, port, parts.hostname, deadline, tls_context())
        else:
            connection = PinnedHTTPConnection(address, port, deadline)
        try:
            connection.connect()
        except OSError as failure:  # the next address may answer
            connection.close()
            error = f"cannot connect to {address}: {describe(failure, timeout)}"
            continue
        try:
            return exchange(connection, request, now, pool, key, address)
        except (OSError, http.client.HTTPException) as failure:
            return Outcome(None, describe(failure, timeout))
    return Outcome(None, error or f"timed out after {timeout:g} s")


# A body longer than this is not read to its end, and its connection not kept.
KEPT_BODY_BYTES = 65536


def exchange(connection, request, now, pool, key, address):
    """Sends request on connection and reads the answer; keeps the connection in pool when it may serve the
    next request, else closes it. Raises what the connection raises (closed then)."""
    kept = False
    try:
        connection.request(*request)
        response = connection.getresponse()
        answer = response.read(KEPT_BODY_BYTES)
        kept = pool is not None and response.isclosed() and not response.will_close
        if kept:
            pool[key] = (address, connection)
        return outcome_of(response, answer[:ERROR_BODY_BYTES], now())
    finally:
        if not kept:
            connection.close()


def close_pool(pool):
    for _, connection in pool.values():
        connection.close()
    pool.clear()


def outcome_of(response, start, now):
    status = response.status
    if 200 <= status < 300:
        return Outcome(status)
    if 300 <= status < 400:
        error = f"HTTP {status}: redirects are not followed (to {response.getheader('Location', 'nowhere')})"
    else:
        snippet = start.decode("utf-8", "replace").strip()
        error = f"HTTP {status} {response.reason}" + (f": {' '.join(snippet.split())[:100]}" if snippet else "")
    return Outcome(status, error, parse_retry_after(response.getheader("Retry-After"), now))


def retry_delay(failures, retry_after=None, rand=random.random, schedule=RETRY_SCHEDULE):
    """Seconds before the next attempt after `failures` failed attempts in a row, or None when that was the
    last (the delivery has failed). A Retry-After takes the schedule's place."""
    if failures > len(schedule):
        return None
    if retry_after is not None:
        return retry_after
    return schedule[failures - 1] * (1 + JITTER * (2 * rand() - 1))


def dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def send_event(hook, message_id, body, now=time.time, pool=None):
    """One delivery of an event's JSON body (bytes) to an events hook (a webhooks row), signed now."""
    return post(hook["url"], body, signed_headers(hook["secret"], message_id, now(), body),
                bool(hook["allow_private"]), now=now, pool=pool)


def post_slack(hook, message):
    """Sends message (a dict such as {"text": ...}, Slack's incoming-webhook JSON) to a slack hook, with the
    same address rules as events; the Outcome. Signed too (Slack ignores it), for a receiver of its own."""
    body = dumps(message)
    return post(hook["url"], body, signed_headers(hook["secret"], "msg_" + secrets.token_hex(12), time.time(), body),
                bool(hook["allow_private"]))


def send_ping(hook, actor):
    """Sends a hook its test message now, outside the outbox: to an events hook a signed ping event (by
    actor, a dict as the activity feed names one), to a slack hook a message. (Outcome, the message's id)."""
    message_id = str(uuid.uuid4())
    if hook["format"] == "slack":
        return post_slack(hook, {"text": "Test message from the OKR service: this hook works."}), message_id
    ping = {"id": message_id, "type": "ping", "created_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "actor": actor, "resource": {"type": "webhook", "id": hook["id"]}, "data": {"webhook_id": hook["id"]}}
    return send_event(hook, message_id, dumps(ping)), message_id
