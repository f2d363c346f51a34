"""Bounded work per client (okr/server/connections.py): each attack against a real server on loopback.

The attackers connect from 127.0.0.1 and a well-behaved client from 127.0.0.2, so that the
per-address cap tells them apart; while each attack runs, the well-behaved client's requests all
answer 200 with a p99 under a second. Every attack is bounded in count and time.
"""
import http.client
import os
import re
import resource
import socket
import threading
import time
from contextlib import closing

import pytest

from okr import create_app
from okr.__main__ import parse_options
from okr.server.connections import AddressCounts, address_key, limits_of, listeners
from okr.server.http_server import make_server
from okr.db import init_db

import helpers
from attackers import (ATTACKER, GOOD, Server, WellBehavedClient, allow_open_files, closed_within, connect_from,
                       open_sockets, pipeline, probed_server, read_answers, seed_pages, what_came)


@pytest.fixture(autouse=True)
def open_files():
    limits = allow_open_files()
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, limits)


@pytest.fixture
def serve(tmp_path):
    """Starts app.py with the given arguments and OKR_ settings; stops it after the test. One worker process
    unless told: exact counts are one process's (across workers the cap may be passed by one connection per
    other worker, test_the_cap_holds_across_worker_processes)."""
    servers = []

    def start(*args, env=None):
        if "--workers" not in args:
            args = ("--workers", "1", *args)
        servers.append(Server(tmp_path, "--database", tmp_path / "okr.db", *args, env=env))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def pages(tmp_path):
    """A 1,000-row page (about 1.4 MB) and a small GET, in the database `serve` uses."""
    cycle = seed_pages(tmp_path / "okr.db")
    return f"/v1/objectives?cycle_id={cycle}&page_size=1000", f"/v1/cycles/{cycle}"


# --- pipelining ------------------------------------------------------------------------------------


@pytest.fixture
def probed(tmp_path):
    with probed_server(tmp_path) as served:
        yield served


@pytest.mark.slow
def test_pipelined_requests_on_one_connection_are_answered_one_at_a_time_and_in_order(probed):
    port, probe = probed
    with closing(pipeline(port, 6)) as sock:
        answers = read_answers(sock, 6)
    assert probe.most == {ATTACKER: 1}
    assert re.findall(rb"<(\d+)>", answers) == [str(i).encode() for i in range(6)]


@pytest.mark.slow
def test_the_next_pipelined_request_waits_until_the_answer_before_it_is_read(probed):
    port, probe = probed
    big = 12 * 1024 * 1024  # more than the kernel's buffers hold for a client that reads nothing
    sock = pipeline(port, 5, headers=f"X-Size: {big}\r\nX-Sleep: 0\r\n")
    try:
        time.sleep(1.5)
        assert probe.served == ["0"]  # the others wait, and hold no worker thread
        sock.settimeout(10)
        received = 0
        while received < 5 * big:
            data = sock.recv(1 << 20)
            assert data, received
            received += len(data)
        assert probe.served == [str(i) for i in range(5)]
    finally:
        sock.close()


@pytest.mark.slow
@pytest.mark.alone  # an answer within 0.3 s
def test_an_address_takes_at_most_half_the_threads_and_others_get_the_rest(probed):
    port, probe = probed  # 4 threads: 2 for an address
    socks = [pipeline(port, 3, headers="X-Sleep: 0.6\r\n") for _ in range(4)]
    try:
        time.sleep(0.1)
        started = time.monotonic()
        other = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(GOOD, 0))
        other.request("GET", "/probe?other", headers={"X-Sleep": "0"})
        assert other.getresponse().status == 200
        assert time.monotonic() - started < 0.3  # a free thread, not a turn after the attacker's
        other.close()
        assert all(read_answers(sock, 3).count(b"HTTP/1.1 200 OK") == 3 for sock in socks)
        assert probe.most[ATTACKER] == 2 and len(probe.served) == 13
    finally:
        for sock in socks:
            sock.close()


@pytest.mark.slow
def test_eight_clients_pipelining_and_never_reading_are_dropped_and_hold_no_thread(serve, pages):
    page, small = pages
    server = serve("--threads", "8")
    baseline = open_sockets(server.process.pid)
    attackers = []
    with WellBehavedClient(server.port, small) as client:
        time.sleep(0.3)
        started = time.monotonic()
        for _ in range(8):
            sock = connect_from(server.port)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(f"GET {page} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode() * 80)
            attackers.append(sock)
        try:
            while open_sockets(server.process.pid) < baseline + 8 and time.monotonic() - started < 5:
                time.sleep(0.05)
            held = open_sockets(server.process.pid) - baseline
            # Unread for 5 s (UNREAD_TIMEOUT), checked every second: dropped well before 10 s.
            while open_sockets(server.process.pid) > baseline + 1 and time.monotonic() - started < 10:
                time.sleep(0.2)
            dropped_after = time.monotonic() - started
        finally:
            for sock in attackers:
                sock.close()
    assert held >= 8
    assert 4 < dropped_after < 9, dropped_after
    client.check()


@pytest.mark.slow
def test_a_connection_accepted_as_another_is_dropped_gets_its_answer(tmp_path):
    """The limits drop connections in waitress's maintenance, while it gathers the connections to poll. A
    connection accepted in that round gets the dropped one's number from the system: it must be answered,
    not take the dropped one's stale event and be closed with its request unread (its client saw a reset)."""
    app = create_app({"DATABASE": tmp_path / "okr.db", "PORT": 0, "ACCESS_LOG": False, "THREADS": 2})
    with app.app_context():
        init_db()
    server = make_server(app)
    listener = listeners(server)[0]

    def step():
        server.asyncore.loop(timeout=0.05, map=server._map, use_poll=True, count=1)

    port = int(server.effective_port)
    slow = connect_from(port)
    slow.sendall(b"GET /healthz HTTP/1.1\r\n")  # a head it never finishes
    deadline = time.monotonic() + 5
    while not listener.active_channels and time.monotonic() < deadline:
        step()
    while time.monotonic() < deadline and next(iter(listener.active_channels.values())).request is None:
        step()
    dropped = next(iter(listener.active_channels.values()))
    dropped.request_started = 0  # its head's deadline long past
    listener.next_channel_cleanup = 0  # maintenance in the next round
    good = connect_from(port, GOOD)
    good.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    try:
        step()  # drops the slow connection and accepts the good one, under the number it freed
        assert not dropped.connected
        good.setblocking(False)
        answer = b""
        while time.monotonic() < deadline + 5:
            step()
            try:
                data = good.recv(65536)
            except BlockingIOError:
                continue
            if not data:
                break
            answer += data
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
    finally:
        slow.close()
        good.close()
        server.task_dispatcher.shutdown()
        server.asyncore.close_all(server._map)


@pytest.mark.slow
def test_with_the_cap_off_an_address_may_take_every_thread(tmp_path):
    with probed_server(tmp_path, CONNECTIONS_PER_ADDRESS=0) as (port, probe):  # 4 threads
        socks = [pipeline(port, 1, headers="X-Sleep: 0.5\r\n") for _ in range(4)]
        try:
            assert all(b"<0>" in read_answers(sock, 1) for sock in socks)
        finally:
            for sock in socks:
                sock.close()
    assert probe.most[ATTACKER] == 4


@pytest.mark.slow
def test_a_head_s_clock_stops_while_the_requests_before_it_are_served(tmp_path):
    with probed_server(tmp_path, HEAD_TIMEOUT=3) as (port, probe):
        with closing(connect_from(port)) as sock:
            # A request served for 3.5 s, and half of the next one's head, in one packet.
            sock.sendall(b"GET /probe?slow HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Sleep: 3.5\r\n\r\n"
                         b"GET /probe?next HTTP/1.1\r\n")
            assert b"<slow>" in read_answers(sock, 1)
            time.sleep(1.2)  # past the next check: 4.7 s after the head began, 1.2 s after it was waited for
            sock.sendall(b"Host: 127.0.0.1\r\n\r\n")
            assert b"<next>" in read_answers(sock, 1)


# --- idle, slowloris and slow bodies ---------------------------------------------------------------


def open_many(port, count):
    return [connect_from(port) for _ in range(count)]


def settled(socks, kept, seconds=5):
    """Waits (seconds at most) until the server has closed all but `kept` of socks: those it keeps, and
    what each of the others got before it closed."""
    deadline, got, closed = time.monotonic() + seconds, {sock: b"" for sock in socks}, {}
    for sock in socks:
        sock.setblocking(False)
    while len(got) > kept and time.monotonic() < deadline:
        for sock in list(got):
            try:
                while data := sock.recv(65536):
                    got[sock] += data
                closed[sock] = got.pop(sock)
            except BlockingIOError:
                pass
            except ConnectionResetError:
                closed[sock] = got.pop(sock)
        time.sleep(0.05)
    assert len(got) == kept
    return list(got), list(closed.values())


@pytest.mark.slow
def test_a_thousand_idle_connections_from_one_address_lock_nobody_out(serve):
    server = serve()
    socks = []
    try:
        with WellBehavedClient(server.port, "/v1/cycles") as client:
            socks = open_many(server.port, 1000)
            kept, refused = settled(socks, 64)  # the default cap; the others are answered 503 and closed
            time.sleep(1)
        assert all(what_came(sock, 0) is None for sock in kept)
        # Once a minute at most, however many.
        assert server.log.read_text().count("over the cap of 64 per address") == 1
        assert all(outcome.startswith(b"HTTP/1.1 503 Service Unavailable\r\n") for outcome in refused)
        assert b"Retry-After: 5\r\n" in refused[0] and refused[0].endswith(
            b'{"code": 503, "message": "too many connections from this address"}')
    finally:
        for sock in socks:
            sock.close()
    client.check()


@pytest.mark.slow
def test_the_cap_holds_across_worker_processes(serve):
    server = serve("--workers", "2")
    socks = []
    try:
        with WellBehavedClient(server.port, "/v1/cycles") as client:
            socks = open_many(server.port, 300)
            deadline = time.monotonic() + 10
            while True:  # until every refusal has come: all but the cap (and one a race may let past)
                open_ones = [sock for sock in socks if what_came(sock, 0) is None]
                if len(open_ones) <= 65 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        assert 64 <= len(open_ones) <= 65  # 2 workers: the cap plus at most one per other worker
    finally:
        for sock in socks:
            sock.close()
    client.check()


class Trickle(threading.Thread):
    """Sends each socket's next byte of `data` every `interval` seconds, until stopped or refused."""

    def __init__(self, socks, data, interval):
        super().__init__(daemon=True)
        self.socks, self.data, self.interval = list(socks), data, interval
        self.stopping = threading.Event()

    def run(self):
        position, live = 0, list(self.socks)
        while live and not self.stopping.wait(self.interval):
            still = []
            for sock in live:
                try:
                    sock.send(self.data[position % len(self.data):][:1])
                    still.append(sock)
                except OSError:
                    pass  # refused or dropped
            live, position = still, position + 1

    def stop(self):
        self.stopping.set()
        self.join(timeout=10)


@pytest.mark.slow
def test_a_thousand_slowloris_connections_are_dropped_at_the_head_deadline(serve):
    server = serve(env={"OKR_HEAD_TIMEOUT": "3"})
    socks = open_many(server.port, 1000)
    trickle = Trickle(socks, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: yes\r\n" * 1000, 0.3)
    try:
        with WellBehavedClient(server.port, "/v1/cycles") as client:
            started = time.monotonic()
            trickle.start()
            kept, _ = settled(socks, 64)  # the others refused (a trickled byte may reset them before the 503)
            # The head deadline (3 s here), checked every second: all dropped with a 408 by 5 s.
            outcomes = [what_came(sock, max(0.01, started + 6 - time.monotonic())) for sock in kept]
            assert time.monotonic() - started < 7
    finally:
        trickle.stop()
        for sock in socks:
            sock.close()
    assert all(outcome is not None and outcome.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
               for outcome in outcomes), outcomes[:3]
    client.check()


@pytest.mark.slow
def test_slow_bodies_are_dropped_and_a_body_at_a_fair_rate_is_not(serve):
    server = serve()
    head = (b"POST /v1/cycles HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n")
    socks = open_many(server.port, 60)
    for sock in socks:
        sock.sendall(head)
    trickle = Trickle(socks, b" " * 100, 0.1)  # 10 bytes a second: far under 1 KiB/s

    fair_status = []

    def fair_upload():  # 12 KiB over about 6 s, in 2 KiB a second
        body = b'{"name": "fair"}'.ljust(12 * 1024)
        sock = connect_from(server.port, GOOD)
        with closing(sock):
            sock.sendall(head.replace(b"100000", str(len(body)).encode()).replace(b"\r\n\r\n",
                                                                                 b"\r\nConnection: close\r\n\r\n"))
            for start in range(0, len(body), 512):
                sock.sendall(body[start:start + 512])
                time.sleep(0.25)
            fair_status.append(what_came(sock, 5) or b"")

    fair = threading.Thread(target=fair_upload, daemon=True)
    try:
        with WellBehavedClient(server.port, "/v1/cycles") as client:
            started = time.monotonic()
            trickle.start()
            fair.start()
            # The grace of 5 s, checked every second: all dropped by 7 s.
            outcomes = [what_came(sock, max(0.01, started + 8 - time.monotonic())) for sock in socks]
            fair.join(timeout=15)
    finally:
        trickle.stop()
        for sock in socks:
            sock.close()
    assert all(outcome is not None and outcome.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
               for outcome in outcomes), outcomes[:3]
    assert fair_status and fair_status[0].startswith(b"HTTP/1.1 200 OK\r\n"), fair_status
    client.check()


# --- the per-address cap ---------------------------------------------------------------------------


@pytest.mark.slow
def test_connections_over_the_cap_are_refused_and_a_closed_one_makes_room(serve):
    server = serve("--connections-per-address", "3")
    kept = open_many(server.port, 3)
    try:
        over = connect_from(server.port)
        assert what_came(over, 5).startswith(b"HTTP/1.1 503 ")
        over.close()
        assert all(what_came(sock, 0.2) is None for sock in kept)
        # Another address has its own count.
        with closing(connect_from(server.port, GOOD)) as other:
            assert what_came(other, 0.5) is None
        kept.pop().close()
        time.sleep(0.3)
        kept.append(connect_from(server.port))
        assert what_came(kept[-1], 0.5) is None
    finally:
        for sock in kept:
            sock.close()


@pytest.mark.slow
def test_a_cap_of_zero_turns_the_cap_off(serve):
    server = serve(env={"OKR_CONNECTIONS_PER_ADDRESS": "0"})
    socks = open_many(server.port, 100)
    try:
        assert closed_within(socks, 1) == 0
    finally:
        for sock in socks:
            sock.close()


@pytest.mark.slow
def test_the_cap_and_timeouts_come_from_flags_and_environment(monkeypatch):
    defaults = limits_of(create_app().config)
    assert (defaults.per_address, defaults.head_timeout, defaults.unread_timeout) == (64, 10, 5)
    assert defaults.threads_per_address == 4  # half the 8 threads
    monkeypatch.setenv("OKR_HEAD_TIMEOUT", "7")
    monkeypatch.setenv("OKR_UNREAD_TIMEOUT", "4")
    overrides, _ = parse_options(["--connections-per-address", "9", "--threads", "6"])
    limits = limits_of(create_app(overrides).config)
    assert (limits.per_address, limits.head_timeout, limits.unread_timeout, limits.threads_per_address) == (9, 7, 4, 3)
    assert limits_of(create_app({"CONNECTIONS_PER_ADDRESS": 0}).config).threads_per_address == 0


@pytest.mark.slow
@pytest.mark.parametrize("value", ["-1", "many"])
def test_a_bad_cap_ends_with_one_line(tmp_path, value):
    result = helpers.run_okr("--connections-per-address", value, "--port", "0", "--database", tmp_path / "x.db",
                             cwd=tmp_path, timeout=30)
    assert result.returncode != 0
    assert result.stderr.strip() == f"okr: connections_per_address must be an integer from 0 to 100000, not '{value}'"


def test_addresses_are_counted_by_ipv4_address_and_ipv6_slash_64():
    assert address_key("192.0.2.7") == "192.0.2.7"
    assert address_key("::ffff:192.0.2.7") == "192.0.2.7"
    assert address_key("2001:db8:1:2:aaaa::1") == address_key("2001:db8:1:2:bbbb::2") == "2001:db8:1:2::/64"
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")
    assert address_key("fe80::1%eth0") == "fe80::/64"


def test_address_counts_cap_and_release():
    counts = AddressCounts()
    assert all(counts.add("192.0.2.1", 3) for _ in range(3))
    assert not counts.add("192.0.2.1", 3)
    assert counts.add("192.0.2.2", 3)  # another address
    counts.remove("192.0.2.1")
    assert counts.count("192.0.2.1") == 2 and counts.add("192.0.2.1", 3)
    assert all(counts.add("192.0.2.3", 0) for _ in range(500))  # cap 0: none


@pytest.mark.slow
def test_address_counts_are_shared_by_forked_processes_and_a_row_can_be_reset():
    counts = AddressCounts(processes=3)
    counts.add("192.0.2.1", 10)
    children = []
    for row in (1, 2):
        pid = os.fork()
        if pid == 0:  # a worker: its own row, the same memory
            counts.use_row(row)
            ok = all(counts.add("192.0.2.1", 10) for _ in range(row * 2))
            os._exit(0 if ok else 1)
        children.append(pid)
    assert all(os.waitpid(pid, 0)[1] == 0 for pid in children)
    assert counts.count("192.0.2.1") == 1 + 2 + 4
    assert counts.add("192.0.2.1", 8) and not counts.add("192.0.2.1", 8)
    counts.reset_row(2)  # that worker died: its 4 connections with it
    assert counts.count("192.0.2.1") == 4
    with pytest.raises(ValueError):
        counts.use_row(3)
