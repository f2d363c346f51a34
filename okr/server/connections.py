"""Bounded work per client, at the connection level: what waitress is given besides its own settings.

- Pipelined requests on one connection are served one at a time, as waitress does, and the next
  one only once the answer before it has been handed to the network: a client that does not read
  holds no worker thread while its answers wait.
- A connection whose client has not taken a byte of a pending answer for UNREAD_TIMEOUT seconds
  is dropped, whatever the answer's size; so is one that took HEAD_TIMEOUT seconds to send a
  request's head, or sends its body more slowly than BODY_MIN_RATE (with a 408 where it fits).
- An address holds at most CONNECTIONS_PER_ADDRESS connections; those above are answered 503 and
  closed at accept. The count lives in AddressCounts, which worker processes forked from one
  server share. While that cap is on, an address's requests also take at most half the worker
  threads at once (Shares): the others wait their turn, in order, and the rest of the threads
  stay free for everyone else.
- A trusted proxy (--trusted-proxies) carries everyone's connections: its own address is never
  capped, and each of its requests takes its share of the threads as the client it forwarded
  (okr.proxies.client_address), read from the request's head once it is parsed.

docs/design.md says how each attack is stopped; docs/operations.md has the settings.
"""
import hashlib
import json
import logging
import mmap
import os
import threading
import time
from collections import deque, namedtuple

from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer

from ..accounts.throttle import address_key
from ..proxies import as_address, client_address, is_trusted

logger = logging.getLogger("okr")

# A request body must arrive at this many bytes a second on average, counted from the end of its
# head, once BODY_GRACE seconds have passed: a slow but real upload sends far more.
BODY_MIN_RATE = 1024
BODY_GRACE = 5
# At most one warning per address-cap episode in this many seconds: an attack must not flood the log.
REFUSAL_LOG_INTERVAL = 60
# Connections taken from the listen queue at each turn of the main loop: a flood of them is
# refused in batches rather than one per turn, and a well-behaved client behind it waits less.
ACCEPT_BATCH = 64

Limits = namedtuple("Limits", "per_address head_timeout unread_timeout body_min_rate body_grace threads_per_address "
                               "trusted")


def limits_of(config):
    """The limits a server enforces, from the app's config."""
    per_address = config["CONNECTIONS_PER_ADDRESS"]
    return Limits(per_address=per_address, head_timeout=config["HEAD_TIMEOUT"],
                  unread_timeout=config["UNREAD_TIMEOUT"], body_min_rate=BODY_MIN_RATE,
                  body_grace=BODY_GRACE,
                  # 0: no share, as behind a proxy that is not trusted, whose address every request has.
                  threads_per_address=max(1, config["THREADS"] // 2) if per_address else 0,
                  trusted=tuple(config["TRUSTED_PROXIES"]))


class AddressCounts:
    """Open connections per client address, in memory shared with the processes forked after it is made.

    Each process counts its own connections in a row of its own (use_row), so no lock spans
    processes and a row can be zeroed when its process dies (reset_row); an address's count is the
    sum over the rows. An address is counted at two places picked by two keyed hashes, and its
    count is the smaller sum of the two: another address sharing one of them cannot push it over
    its cap unless it also shares the other, and the count is never too low.

    Two processes accepting from one address at the same instant may both see room for one more
    connection: the cap can be passed by at most one connection per other process.
    """

    SLOTS = 4096  # per hash: 2 x 4 x 4,096 bytes = 32 KiB a process
    HEADER = 16  # the hash key

    def __init__(self, processes=1, slots=SLOTS):
        self.processes, self.slots = processes, slots
        self.row_size = 2 * slots
        # mmap(-1, ...) is anonymous and MAP_SHARED: forked children see the same pages.
        self.memory = mmap.mmap(-1, self.HEADER + 4 * processes * self.row_size)
        self.memory[:self.HEADER] = os.urandom(self.HEADER)
        self.salt = bytes(self.memory[:self.HEADER])
        self.counts = memoryview(self.memory)[self.HEADER:].cast("I")
        self.row = 0
        self.lock = threading.Lock()  # within a process; rows keep processes apart

    def use_row(self, row):
        """Counts this process's connections in row (0 to processes - 1): call it in each worker after fork."""
        if not 0 <= row < self.processes:
            raise ValueError(f"row must be from 0 to {self.processes - 1}, not {row}")
        self.row = row

    def reset_row(self, row):
        """Forgets a row's connections: for the supervisor, once the process that counted them has ended."""
        start = row * self.row_size
        self.counts[start:start + self.row_size] = memoryview(bytes(4 * self.row_size)).cast("I")

    def places(self, key):
        digest = hashlib.blake2b(key.encode(), digest_size=8, key=self.salt).digest()
        value = int.from_bytes(digest, "little")
        return value % self.slots, self.slots + (value >> 32) % self.slots

    def count(self, key):
        """How many connections from key all processes hold (never fewer than there are)."""
        counts, size = self.counts, self.row_size
        return min(sum(counts[row * size + place] for row in range(self.processes)) for place in self.places(key))

    def add(self, key, cap):
        """Counts one more connection from key and returns True, or returns False if key holds cap already
        (cap 0: no cap)."""
        places = self.places(key)
        base = self.row * self.row_size
        with self.lock:
            if cap and self.count(key) >= cap:
                return False
            for place in places:
                self.counts[base + place] += 1
        return True

    def remove(self, key):
        """One connection from key has closed."""
        base = self.row * self.row_size
        with self.lock:
            for place in self.places(key):
                if self.counts[base + place]:
                    self.counts[base + place] -= 1


def plain_answer(status, reason, message, headers=""):
    """A minimal answer in the contract's error shape, closing the connection."""
    body = json.dumps({"code": status, "message": message}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n{headers}\r\n").encode() + body


TOO_SLOW = plain_answer(408, "Request Timeout", "the request was sent too slowly")
TOO_MANY = plain_answer(503, "Service Unavailable", "too many connections from this address", "Retry-After: 5\r\n")


def answer_and_close(sock, answer):
    """Sends answer without waiting (what fits, or nothing) and closes sock.

    What the client sent and nobody read is read away first: closing a socket with unread input
    resets the connection, and the client could lose the answer.
    """
    try:
        sock.setblocking(False)
        sock.send(answer)
        sock.recv(65536)
    except OSError:
        pass


class LimitedChannel(HTTPChannel):
    """waitress's connection, keeping the times and counts the limits need.

    The clocks are written by the main loop's thread (reads, sends, maintenance); worker threads
    only set `deferred`, under requests_lock.
    """

    counted = None  # (AddressCounts, key) while this connection is counted
    trusted = ()  # the trusted proxies' networks, when this connection comes from one of them
    last_sent = 0.0  # when a send last took bytes
    pending_seen = None  # when maintenance first saw output pending, since none was
    request_started = None  # when the partial request's first bytes were read
    body_started = None  # when its head was complete
    body_base = 0  # its body bytes at body_started
    deferred = False  # a pipelined request waits for the answer before it to be sent

    def __init__(self, server, sock, addr, adj, map=None, counted=None, trusted=()):
        self.counted, self.trusted = counted, trusted
        self.share_key = counted[1] if counted else ""  # kept after close, unlike counted
        # The keys its requests were started under (Shares), oldest first: the next one of a pipeline
        # is started before the one it follows is done.
        self.started_keys = deque()
        super().__init__(server, sock, addr, adj, map=map)

    def request_key(self):
        """Whose share the request to serve next takes: the connection's address, or behind a trusted proxy
        the client the proxy forwarded."""
        if not self.trusted or not self.requests:
            return self.share_key
        headers = self.requests[0].headers
        client = client_address(self.addr[0], headers.get("X_FORWARDED_FOR"), headers.get("FORWARDED"),
                                self.trusted)
        return address_key(client)

    def received(self, data):
        before = self.request
        result = super().received(data)
        partial = self.request
        if partial is not None:
            now = time.time()
            if partial is not before:
                self.request_started, self.body_started = now, None
            if partial.headers_finished and self.body_started is None:
                self.body_started, self.body_base = now, partial.body_bytes_received
        return result

    def _flush_some(self, do_close=True):
        sent = super()._flush_some(do_close=do_close)
        if sent:
            self.last_sent = time.time()
        return sent

    # A connection the limits dropped is never polled again. They drop it in maintenance, which waitress
    # runs while it gathers the connections to poll: polled, its closed number would come back invalid,
    # and a connection accepted in the same round, which the system gives that number, would take the
    # event and be closed with its request unread (its client sees a reset).
    def readable(self):
        return self.connected and super().readable()

    def writable(self):
        # A deferred request is started from handle_write, on the main loop's thread.
        return self.connected and (self.deferred or super().writable())

    def handle_write(self):
        super().handle_write()
        if self.deferred and not self.total_outbufs_len and self.connected:
            with self.requests_lock:
                if self.deferred and self.requests and self.connected:
                    self.deferred = False
                    self.server.okr_shares.start(self)

    def service(self):
        try:
            super().service()
        finally:
            self.server.okr_shares.done(self)

    def del_channel(self, map=None):
        super().del_channel(map)
        counted, self.counted = self.counted, None
        if counted is not None:
            counted[0].remove(counted[1])


class Shares:
    """Hands a connection's request to a worker thread, an address's at most `share` at once (0: no share).

    The requests of an address over its share wait in order, and each that ends hands its thread
    to the next: every address keeps its turn, and the threads beyond a share stay free for others.
    """

    def __init__(self, server, share):
        self.server, self.share = server, share
        self.lock = threading.Lock()
        self.busy = {}  # address key: its requests on worker threads now
        self.waiting = {}  # address key: deque of its connections whose next request waits

    def start(self, channel):
        """channel has a request to serve."""
        key = channel.request_key()
        channel.started_keys.append(key)
        with self.lock:
            busy = self.busy.get(key, 0)
            if self.share and busy >= self.share:
                self.waiting.setdefault(key, deque()).append(channel)
                return
            self.busy[key] = busy + 1
        self.server.task_dispatcher.add_task(channel)

    def done(self, channel):
        """channel's request has been served: its thread goes to the address's next waiting connection."""
        key = channel.started_keys.popleft() if channel.started_keys else channel.share_key
        following = None
        with self.lock:
            waiting = self.waiting.get(key)
            if waiting:
                following = waiting.popleft()
                if not waiting:
                    del self.waiting[key]
            elif self.busy.get(key, 0) > 1:
                self.busy[key] -= 1
            else:
                self.busy.pop(key, None)
        if following is not None:
            self.server.task_dispatcher.add_task(following)


def add_task(server, channel):
    """server.add_task: a connection's next pipelined request waits until the answer before it is sent.

    waitress calls it when a request is complete and none is being served on its connection, and
    at the end of each request when more are queued on it, under the connection's requests_lock.
    """
    if not isinstance(channel, LimitedChannel):
        server.task_dispatcher.add_task(channel)
    elif channel.total_outbufs_len:
        channel.deferred = True
        server.pull_trigger()  # the main loop then watches it for writing
    else:
        server.okr_shares.start(channel)


def enforce(server, limits, now):
    """Drops the connections that break a limit; runs in waitress's maintenance, on the main loop's thread."""
    for channel in list(server.active_channels.values()):
        if not isinstance(channel, LimitedChannel) or not channel.connected:
            continue
        if channel.total_outbufs_len:
            if channel.pending_seen is None:
                channel.pending_seen = now
            if now - max(channel.last_sent, channel.pending_seen) >= limits.unread_timeout:
                # Closed here, as waitress closes channels: will_close alone would wait for the
                # socket to turn writable, which it never does. Closing wakes a worker waiting to write.
                channel.handle_close()
            continue
        channel.pending_seen = None
        partial = channel.request
        if partial is None or partial.completed:
            continue
        if channel.requests:
            # Its earlier requests are being served, and waitress reads nothing meanwhile: the
            # client is not late, so its clocks start again.
            channel.request_started = now
            if channel.body_started is not None:
                channel.body_started, channel.body_base = now, partial.body_bytes_received
            continue
        if not partial.headers_finished:
            late = now - channel.request_started >= limits.head_timeout
        else:
            elapsed = now - channel.body_started
            late = (elapsed >= limits.body_grace
                    and partial.body_bytes_received - channel.body_base < limits.body_min_rate * elapsed)
        if late:
            answer_and_close(channel.socket, TOO_SLOW)
            channel.handle_close()


class Refusals:
    """Logs refused connections, at most once a minute, with how many there were."""

    def __init__(self):
        self.count, self.logged = 0, None

    def add(self, key, cap):
        self.count += 1
        now = time.monotonic()
        if self.logged is None or now - self.logged >= REFUSAL_LOG_INTERVAL:
            logger.warning("refused %d connection%s over the cap of %d per address (the last from %s); "
                           "behind a proxy, name it with --trusted-proxies",
                           self.count, "" if self.count == 1 else "s", cap, key)
            self.count, self.logged = 0, now


def channel_maker(counts, limits):
    """server.channel_class: counts each accepted connection against its address's cap, or refuses it."""
    refusals = Refusals()

    def make(server, conn, addr, adj, map=None):
        key = address_key(str(addr[0])) if addr else ""
        # A trusted proxy carries everyone: its address has no cap, and its clients their share of the threads.
        proxy = limits.trusted if addr and is_trusted(as_address(str(addr[0])), limits.trusted) else ()
        cap = 0 if proxy else limits.per_address
        if not counts.add(key, cap):
            refusals.add(key, cap)
            answer_and_close(conn, TOO_MANY)
            conn.close()
            return None
        try:
            return LimitedChannel(server, conn, addr, adj, map=map, counted=(counts, key), trusted=proxy)
        except BaseException:
            counts.remove(key)
            raise

    return make


def accept_batch(listener):
    """listener.handle_accept: waitress's, but for up to ACCEPT_BATCH connections waiting, within the total cap."""

    def handle_accept():
        for _ in range(ACCEPT_BATCH):
            conn = None
            try:
                accepted = listener.accept()  # None when none is waiting
                if accepted is None:
                    return
                conn, addr = accepted
                listener.set_socket_options(conn)
            except OSError:
                if conn is not None:
                    conn.close()
                # As waitress: a socket the client closed before it was accepted, say.
                if listener.adj.log_socket_errors:
                    logger.warning("server accept() threw an exception", exc_info=True)
                return
            listener.channel_class(listener, conn, listener.fix_addr(addr), listener.adj, map=listener._map)
            if len(listener._map) >= listener.adj.connection_limit:
                return

    return handle_accept


def listeners(server):
    """The waitress servers behind what create_server returned: several when the host names several addresses."""
    mapped = getattr(server, "map", None)
    found = [each for each in (mapped or {}).values() if isinstance(each, BaseWSGIServer)]
    return found or [server]


def install(server, limits, counts=None):
    """Puts the limits into a server create_server made, before it serves.

    counts: the AddressCounts to count connections in; a new one for this process alone by default.
    Several worker processes pass the one their supervisor made before forking them.
    """
    counts = AddressCounts() if counts is None else counts
    for listener in listeners(server):
        maintenance = listener.maintenance

        def maintain(now, listener=listener, maintenance=maintenance):
            maintenance(now)
            enforce(listener, limits, now)

        listener.maintenance = maintain
        listener.channel_class = channel_maker(counts, limits)
        listener.handle_accept = accept_batch(listener)
        listener.okr_shares = Shares(listener, limits.threads_per_address)
        listener.add_task = lambda channel, listener=listener: add_task(listener, channel)
    return counts
