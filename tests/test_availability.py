"""Misbehaving clients and long deletes cannot stop the real server answering others.

Each test starts `app.py` as its own process on a free loopback port, runs
bounded bad clients against it, and measures what a well-behaved client sees.
"""
import base64
import http.client
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from okr import create_app
from okr.clock import new_id, utc_now
from okr.db import init_db
from okr.store.schema import connect

from helpers import APP_PY, HttpClient, free_port, process_tree, stop_process

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser


def seed(path, objectives, key_results_each=0, description=""):
    """A database with a cycle of `objectives` objectives, written straight with SQL."""
    app = create_app({"DATABASE": path})
    with app.app_context():
        init_db()
    db = connect(str(path), 5000)
    cycle, now = new_id(), utc_now()
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO cycles (id, name, created_at) VALUES (?, 'big', ?)", (cycle, now))
    ids = [new_id() for _ in range(objectives)]
    db.executemany(
        "INSERT INTO objectives (id, name, description, is_company, is_personal, cycle_id, created_at, "
        "modified_at) VALUES (?, 'objective', ?, 0, 0, ?, ?, ?)",
        ((i, description, cycle, now, now) for i in ids))
    db.executemany(
        "INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value, "
        "target_value_min, created_at, modified_at) VALUES (?, ?, ?, 'kr', 'positive', '0.50', '0.00', "
        "'10.00', ?, ?)",
        ((new_id(), i, cycle, now, now) for i in ids for _ in range(key_results_each)))
    # Each key result's first check-in, as the API records it.
    db.create_function("new_id", 0, new_id)
    db.execute("INSERT INTO checkins (id, key_result_seq, value, confidence, created_at) "
               "SELECT new_id(), seq, current_value, confidence, created_at FROM key_results")
    db.execute("COMMIT")
    db.close()
    return cycle, ids


def start(port, log, *args):
    """`app.py` with its log in a file: a pipe nobody reads could fill and stall the server."""
    with open(log, "ab") as out:
        process = subprocess.Popen([sys.executable, str(APP_PY), "--port", str(port), *args],
                                   stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 15
    while quick_status(port, "/healthz", 1) != 200:
        if time.monotonic() > deadline or process.poll() is not None:
            stop_process(process)
            pytest.fail(f"service did not start: {Path(log).read_text()}")
        time.sleep(0.05)
    return process


def open_connections(pid):
    """The sockets the server's processes hold, the listening one included (once in each)."""
    count = 0
    for member in process_tree(pid):
        folder = f"/proc/{member}/fd"
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            try:
                if os.readlink(os.path.join(folder, name)).startswith("socket:"):
                    count += 1
            except FileNotFoundError:
                pass
    return count


class WellBehavedClient(threading.Thread):
    """Asks for /healthz and a small GET in turn, each on a new connection, and times each answer."""

    def __init__(self, port, path):
        super().__init__(daemon=True)
        self.http = HttpClient(f"127.0.0.1:{port}")
        self.paths = ["/healthz", path]
        self.latencies = {p: [] for p in self.paths}
        self.statuses = []
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            for path in self.paths:
                started = time.monotonic()
                try:
                    status = self.http.get(path).status
                except OSError as error:
                    status = repr(error)
                self.latencies[path].append(time.monotonic() - started)
                self.statuses.append(status)
            time.sleep(0.01)

    def finish(self):
        self.stopping.set()
        self.join(timeout=60)
        return self


def p99(values):
    return statistics.quantiles(values, n=100)[98] if len(values) > 1 else values[0]


def pipelining_client(port, path, count):
    """Sends `count` requests on one connection and never reads an answer."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    sock.sendall(request * count)
    return sock


def stalled_client(port):
    """Starts a request and never finishes its headers."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    return sock


def idle_keepalive_client(port):
    """One answered request, then the connection is kept open and idle."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    sock.settimeout(10)
    assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    return sock


@pytest.fixture
def page_database(tmp_path):
    """1,000 objectives with 1 kB descriptions: a page of them is about 1.4 MB of JSON."""
    path = tmp_path / "okr.db"
    cycle, _ = seed(path, 1000, description="d" * 1000)
    return path, cycle


@pytest.mark.alone  # measures a client's latencies (p99 under 1 s, max under 0.5 s)
def test_bad_clients_do_not_stop_the_service_answering_others(page_database):
    path, cycle = page_database
    port = free_port()
    # All from one address, as behind a reverse proxy, with the per-address cap off as the docs say
    # for a proxy: the other limits alone keep the server answering (tests/server has the cap on).
    process = start(port, path.with_suffix(".log"), "--database", str(path), "--connections-per-address", "0")
    bad = []
    try:
        baseline = open_connections(process.pid)
        page = f"/v1/objectives?cycle_id={cycle}&page_size=1000"
        client = WellBehavedClient(port, f"/v1/cycles/{cycle}")
        bad += [pipelining_client(port, page, 80) for _ in range(2)]
        bad += [stalled_client(port) for _ in range(200)]
        bad += [idle_keepalive_client(port) for _ in range(50)]
        client.start()
        time.sleep(5)
        client.finish()
        assert set(client.statuses) == {200}, set(client.statuses)
        for path_, latencies in client.latencies.items():
            assert p99(latencies) < 1.0, (path_, p99(latencies), max(latencies))

        for sock in bad:
            sock.close()
        bad.clear()
        deadline = time.monotonic() + 20
        while open_connections(process.pid) > baseline and time.monotonic() < deadline:
            time.sleep(0.1)
        assert open_connections(process.pid) <= baseline
        after = WellBehavedClient(port, f"/v1/cycles/{cycle}")
        after.start()
        time.sleep(1)
        after.finish()
        assert set(after.statuses) == {200} and max(after.latencies["/healthz"]) < 0.5
    finally:
        for sock in bad:
            sock.close()
        stop_process(process)


def quick_status(port, path, timeout):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        return connection.getresponse().status
    except OSError as error:
        return repr(error)
    finally:
        connection.close()


def closed_by_server(sock, timeout):
    """True when the server closes the connection within timeout seconds."""
    sock.settimeout(timeout)
    try:
        while sock.recv(1 << 20):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_idle_stalled_and_non_reading_connections_are_dropped_after_the_channel_timeout(page_database):
    path, cycle = page_database
    port = free_port()
    # Two threads, both taken by clients that pipeline big pages and never read.
    process = start(port, path.with_suffix(".log"), "--database", str(path), "--threads", "2",
                    "--channel-timeout", "2")
    page = f"/v1/objectives?cycle_id={cycle}&page_size=1000"
    stalled, idle = stalled_client(port), idle_keepalive_client(port)
    pipelining = [pipelining_client(port, page, 80) for _ in range(2)]
    try:
        started = time.monotonic()
        # Dropped between the 2 s timeout and that plus the 2 s cleanup interval.
        assert closed_by_server(stalled, 10)
        assert closed_by_server(idle, 10)
        assert time.monotonic() - started < 10
        # The stuck workers are freed while their clients still hold their sockets open.
        assert quick_status(port, "/healthz", timeout=10) == 200
    finally:
        for sock in (stalled, idle, *pipelining):
            sock.close()
        stop_process(process)


class Load(threading.Thread):
    """Calls `request()` every `interval` seconds until stopped, keeping each status and latency."""

    def __init__(self, request, interval):
        super().__init__(daemon=True)
        self.request, self.interval = request, interval
        self.results = []
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                outcome = self.request()
            except OSError as error:
                outcome = repr(error)
            self.results.append((outcome, time.monotonic() - started))
            self.stopping.wait(self.interval)

    def finish(self):
        self.stopping.set()
        self.join(timeout=60)
        return self.results


@pytest.fixture
def big_cycle(tmp_path):
    """A database with a big cycle: (its path, the cycle's id, its objectives' ids). Big enough to hold the write
    lock for a second or more, and far enough under the 5-second busy timeout (after which a waiting write is a
    503, as documented) that a slow moment of a shared machine does not cross it: a delete of 100,000 objectives,
    check-ins and all, once did. Made beside other tests; the test then runs alone."""
    path = tmp_path / "okr.db"
    return path, *seed(path, 50_000, key_results_each=3)


@pytest.mark.alone  # measures latencies, and the delete must end well within the 5-s busy timeout
def test_a_big_cycle_delete_stalls_no_read_and_fails_no_write(tmp_path, big_cycle):
    path, big, big_ids = big_cycle
    port = free_port()
    process = start(port, tmp_path / "okr.log", "--database", str(path))
    http = HttpClient(f"127.0.0.1:{port}")
    try:
        small = http.post("/v1/cycles", {"name": "small"}).ok()["id"]
        objective = http.post("/v1/objectives", {"name": "o", "cycle_id": small, "is_company": False,
                                                "is_personal": False}).ok()["id"]
        # The last full page of the big cycle: while it exists, it holds exactly 1,000 rows.
        last_page = f"/v1/objectives?cycle_id={big}&page_size=1000&page_token=" + page_token_before(path, big_ids[-1000])

        def whole_or_gone():
            response = http.get(last_page)
            return response.status if response.status != 200 else len(response.json()["objectives"])

        loads = {
            "write": Load(lambda: http.post("/v1/teams", {"name": "t"}).status, 0.05),
            "read": Load(lambda: http.get(f"/v1/objectives/{objective}").status, 0.01),
            "healthz": Load(lambda: http.get("/healthz").status, 0.01),
            "snapshot": Load(whole_or_gone, 0.05),
        }
        for load in loads.values():
            load.start()
        time.sleep(0.5)
        started = time.monotonic()
        assert http.delete(f"/v1/cycles/{big}").status == 200
        deleted_in = time.monotonic() - started
        time.sleep(1)
        results = {name: load.finish() for name, load in loads.items()}
    finally:
        stop_process(process)
    assert deleted_in > 0.3  # the delete was long enough to matter
    assert {outcome for outcome, _ in results["write"]} == {200}, results["write"]
    assert {outcome for outcome, _ in results["read"] + results["healthz"]} == {200}
    assert max(latency for _, latency in results["read"]) < 1.0
    assert max(latency for _, latency in results["healthz"]) < 0.5
    # Never part of the cycle: the whole page, then a 404 once it is gone.
    seen = [outcome for outcome, _ in results["snapshot"]]
    assert set(seen) == {1000, 404} and seen == sorted(seen, key=lambda s: s == 404)


def page_token_before(path, objective_id):
    """The page token that lists from objective_id on."""
    db = sqlite3.connect(path)
    seq = db.execute("SELECT seq FROM objectives WHERE id = ?", (objective_id,)).fetchone()[0]
    db.close()
    return base64.urlsafe_b64encode(str(seq - 1).encode()).decode()
