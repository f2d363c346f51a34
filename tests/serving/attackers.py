"""For attack tests: servers on loopback, a well-behaved client to measure them with, bounded bad clients."""
import http.client
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from okr import create_app
from okr.db import connect, init_db, new_id, utc_now

from helpers import APP_PY, ENV_WITHOUT_OKR, free_port, stop_process

# Linux routes all of 127/8 to loopback: the attackers connect from ATTACKER, the measured client
# from GOOD, so that the per-address cap counts them apart.
ATTACKER, GOOD = "127.0.0.1", "127.0.0.2"


def seed_pages(path, objectives=1000, description="d" * 1000):
    """A database with a cycle of objectives with long descriptions: its id (a 1,000-row page is ~1.4 MB)."""
    app = create_app({"DATABASE": path})
    with app.app_context():
        init_db()
    db = connect(str(path), 5000)
    cycle, now = new_id(), utc_now()
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO cycles (id, name, created_at) VALUES (?, 'big', ?)", (cycle, now))
    db.executemany(
        "INSERT INTO objectives (id, name, description, is_company, is_personal, cycle_id, created_at, "
        "modified_at) VALUES (?, 'objective', ?, 0, 0, ?, ?, ?)",
        ((new_id(), description, cycle, now, now) for _ in range(objectives)))
    db.execute("COMMIT")
    db.close()
    return cycle


def status_of(port, path, timeout=5, source=GOOD):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status
    except OSError as error:
        return repr(error)
    finally:
        connection.close()


class Server:
    """`app.py` on a free loopback port, its log in a file (a pipe nobody reads could stall it)."""

    def __init__(self, tmp_path, *args, env=None):
        self.port, self.log = free_port(), tmp_path / "server.log"
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, str(APP_PY), "--port", str(self.port), *map(str, args)],
                stdout=out, stderr=subprocess.STDOUT, env={**ENV_WITHOUT_OKR, **(env or {})})
        deadline = time.monotonic() + 15
        while status_of(self.port, "/healthz", 1) != 200:
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                pytest.fail(f"service did not start: {Path(self.log).read_text()}")
            time.sleep(0.05)

    def stop(self):
        stop_process(self.process)


def allow_open_files(count=4096):
    """Room for the attacks' sockets in this process, as far as the hard limit allows: the old limits."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count if hard == resource.RLIM_INFINITY else min(count, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    return soft, hard


class WellBehavedClient(threading.Thread):
    """From GOOD: asks for /healthz and a small GET in turn, each on a new connection, timing each answer."""

    def __init__(self, port, path):
        super().__init__(daemon=True)
        self.port, self.paths = port, ["/healthz", path]
        self.latencies = {p: [] for p in self.paths}
        self.statuses = []
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            for path in self.paths:
                started = time.monotonic()
                self.statuses.append(status_of(self.port, path, timeout=10))
                self.latencies[path].append(time.monotonic() - started)
            self.stopping.wait(0.01)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.join(timeout=30)

    def check(self):
        """Nothing failed, and each path's p99 is under a second."""
        assert self.statuses and set(self.statuses) == {200}, sorted(set(map(str, self.statuses)))
        for path, latencies in self.latencies.items():
            assert p99(latencies) < 1.0, (path, p99(latencies), max(latencies), len(latencies))


def p99(values):
    return statistics.quantiles(values, n=100, method="inclusive")[98] if len(values) > 1 else values[0]


def connect_from(port, source=ATTACKER):
    sock = socket.socket()
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def what_came(sock, timeout):
    """What the server sent before closing within timeout seconds; None when it kept the connection open."""
    sock.settimeout(timeout)
    received = b""
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return received
            received += data
    except ConnectionResetError:
        return received
    except (socket.timeout, BlockingIOError):
        return None


def closed_within(socks, seconds):
    """How many of socks the server has closed (after an answer or not) within seconds, checked together."""
    deadline, open_ = time.monotonic() + seconds, list(socks)
    while open_ and time.monotonic() < deadline:
        open_ = [sock for sock in open_ if what_came(sock, 0) is None]
        time.sleep(0.1)
    return len(socks) - len(open_)


def open_sockets(pid):
    """The sockets a process holds (its listening one included), from /proc."""
    count = 0
    folder = Path(f"/proc/{pid}/fd")
    for entry in folder.iterdir():
        try:
            count += entry.readlink().name.startswith("socket:")
        except OSError:
            pass
    return count
