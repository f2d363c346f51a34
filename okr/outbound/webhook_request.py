"""Sending one webhook request: Standard Webhooks signatures, the refusal of private addresses, one POST.

Flask-free, so that the background process (okr.outbound.webhook_queue), the commands and the pages share it.

A request goes to an address checked after DNS resolution, and to that very address (the URL's name
travels in the Host header and in TLS's SNI and certificate check), so that a name cannot resolve to a
public address for the check and to a private one for the connection. Redirects are never followed: a
3xx is a failure like any other non-2xx. One deadline covers a delivery, connect to last byte (Deadline): a
socket's own timeout is per read, which a receiver sending a byte now and then never reaches.
"""
import base64
import hashlib
import hmac
import http.client
import ipaddress
import json
import random
import secrets
import socket
import ssl
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

from ..rules.webhook_receivers import SECRET_PREFIX
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


class Refused(Exception):
    """The URL's host is, or resolves to, an address a hook may not reach (or does not resolve)."""


class Unresolved(Refused):
    """The URL's host does not resolve (now)."""


def is_public(address):
    """Whether an IP address is one a hook may reach without --allow-private: none of loopback, private,
    link-local, multicast, reserved, unspecified, shared (100.64/10) or documentation ranges.

    An IPv6 address that carries an IPv4 one is judged as the address it carries: a mapped one (::ffff:a.b.c.d)
    and a 6to4 one (2002:AABB:CCDD::/48, which a 6to4 relay or tunnel delivers to a.b.c.d). A Teredo address
    (2001::/32) is never public: its client is hidden behind NAT and a relay, and nothing here can tell where
    the packets go."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.teredo is not None:
            return False
        carried = address.ipv4_mapped or address.sixtofour
        if carried is not None:
            address = carried
    return address.is_global and not (address.is_multicast or address.is_loopback or address.is_link_local
                                      or address.is_private or address.is_reserved or address.is_unspecified)


def resolve(host, port, allow_private):
    """The addresses to connect to for host (a name or an IP literal), each checked; Refused when the name
    does not resolve, or when any address it resolves to is not public and allow_private is false."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as error:
        raise Unresolved(f"{host} does not resolve: {error}") from None
    addresses = []
    for family, _, _, _, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address = ipaddress.ip_address(sockaddr[0].split("%", 1)[0])
        if not allow_private and not is_public(address):
            # Any one refuses the name: else a name with one public and one private address could be used.
            raise Refused(f"{host} resolves to {address}, a loopback, private, link-local or multicast address; "
                          "add the hook with --allow-private to allow it")
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise Unresolved(f"{host} has no IP address")
    return addresses


def check_destination(url, allow_private):
    """Raises Refused when url's host resolves to an address a hook may not reach (for adding a hook). A name
    that does not resolve yet is let be: each delivery checks again."""
    parts = urlsplit(url)
    try:
        resolve(parts.hostname, parts.port or default_port(parts.scheme), allow_private)
    except Unresolved:
        pass


def default_port(scheme):
    return 443 if scheme == "https" else 80


def tls_context():
    """The TLS context a receiver's certificate is checked with: the system's trusted authorities."""
    return ssl.create_default_context()


class Deadline:
    """The moment a delivery must be over by, connect to last byte."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self):
        """Seconds left; TimeoutError (a socket.timeout) once there are none."""
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError("the delivery's deadline passed")
        return left


class WithinDeadline:
    """A socket whose every blocking call waits at most for what is left of its deadline. A socket's timeout is
    per call: a receiver sending a byte now and then would otherwise hold a delivery open as long as it likes."""

    deadline = None  # a Deadline, set before the first call

    def connect(self, *args):
        self.settimeout(self.deadline.left())
        return super().connect(*args)

    def do_handshake(self, *args):
        self.settimeout(self.deadline.left())
        return super().do_handshake(*args)

    def send(self, *args):
        self.settimeout(self.deadline.left())
        return super().send(*args)

    def sendall(self, *args):
        self.settimeout(self.deadline.left())  # the timeout of sendall is for the whole of it
        return super().sendall(*args)

    def recv(self, *args):
        self.settimeout(self.deadline.left())
        return super().recv(*args)

    def recv_into(self, *args):  # what http.client's reads come to
        self.settimeout(self.deadline.left())
        return super().recv_into(*args)


class DeadlineSocket(WithinDeadline, socket.socket):
    pass


class DeadlineSSLSocket(WithinDeadline, ssl.SSLSocket):
    pass


class PinnedHTTPConnection(http.client.HTTPConnection):
    """HTTP to a given IP address (an ipaddress address), its every wait within one Deadline."""

    def __init__(self, address, port, deadline):
        super().__init__(str(address), port, timeout=deadline.seconds)
        self.address, self.deadline = address, deadline

    def connect(self):
        family = socket.AF_INET6 if self.address.version == 6 else socket.AF_INET
        self.sock = DeadlineSocket(family, socket.SOCK_STREAM)
        self.sock.deadline = self.deadline
        self.sock.connect((str(self.address), self.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def keep_until(self, deadline):
        """The next request on this kept-alive connection waits within deadline."""
        self.deadline = self.sock.deadline = deadline


class PinnedHTTPSConnection(PinnedHTTPConnection):
    """HTTPS to a given IP address, with SNI and the certificate checked for the URL's name."""

    default_port = 443

    def __init__(self, address, port, server_name, deadline):
        super().__init__(address, port, deadline)
        self.server_name = server_name

    def connect(self):
        super().connect()
        context = tls_context()
        context.sslsocket_class = DeadlineSSLSocket
        # The handshake once the deadline is set; the connection closes the socket should it fail.
        self.sock = context.wrap_socket(self.sock, server_hostname=self.server_name, do_handshake_on_connect=False)
        self.sock.deadline = self.deadline
        self.sock.do_handshake()


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
            connection = PinnedHTTPSConnection(address, port, parts.hostname, deadline)
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


def describe(failure, timeout):
    if isinstance(failure, (socket.timeout, TimeoutError)):
        return f"timed out after {timeout:g} s"
    return str(failure) or type(failure).__name__


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
