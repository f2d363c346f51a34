"""For attack tests: servers on loopback, a well-behaved client to measure them with, bounded bad clients."""
import http.client
import re
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from okr import create_app
from okr.server.http_server import make_server
from okr.clock import new_id, utc_now
from okr.db import init_db
from okr.store.schema import connect

import helpers
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

    def __init__(self, tmp_path, *args, env=None, health="/healthz"):
        """health: where /healthz is (under the public URL's path, when it has one)."""
        self.port, self.log = free_port(), tmp_path / "server.log"
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, str(APP_PY), "--port", str(self.port), *map(str, args)],
                stdout=out, stderr=subprocess.STDOUT, env={**ENV_WITHOUT_OKR, **(env or {})})
        deadline = time.monotonic() + 15
        while status_of(self.port, health, 1) != 200:
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


# --- a probe: a route that counts its requests running at once, on a server in this process -------------


class Probe:
    """A WSGI route that records how many of its requests run at once, by client address (the one a proxy
    forwarded in X-Forwarded-For, if any)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running, self.most, self.served = {}, {}, []

    def __call__(self, environ, start_response):
        address = environ.get("HTTP_X_FORWARDED_FOR") or environ["REMOTE_ADDR"]
        with self.lock:
            self.running[address] = self.running.get(address, 0) + 1
            self.most[address] = max(self.most.get(address, 0), self.running[address])
        try:
            time.sleep(float(environ.get("HTTP_X_SLEEP", "0.05")))
            body = f"<{environ['QUERY_STRING']}>".encode().ljust(int(environ.get("HTTP_X_SIZE", "0")))
            self.served.append(environ["QUERY_STRING"])
            start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
            return [body]
        finally:
            with self.lock:
                self.running[address] -= 1


@contextmanager
def probed_server(tmp_path, **config):
    """make_server's server, in a thread of this process, serving a Probe at /probe: (port, probe)."""
    app = create_app({"DATABASE": tmp_path / "okr.db", "PORT": 0, "ACCESS_LOG": False, "THREADS": 4, **config})
    probe = Probe()
    app.wsgi_app = (lambda inner: lambda environ, start: (probe if environ["PATH_INFO"] == "/probe" else inner)(
        environ, start))(app.wsgi_app)
    server = make_server(app)
    stopping = threading.Event()
    thread = threading.Thread(target=helpers.serve_until, args=(server, stopping), daemon=True)
    thread.start()
    try:
        yield int(server.effective_port), probe
    finally:
        # Closed by their clients first: waitress's close at exit leaves a closed connection's spooled
        # output to the garbage collector.
        deadline = time.monotonic() + 5
        while server.active_channels and time.monotonic() < deadline:
            time.sleep(0.05)
        stopping.set()
        thread.join(timeout=10)


def read_answers(sock, count, timeout=10):
    """What the server sent until count Probe answers have come whole, or it closed the connection."""
    sock.settimeout(timeout)
    received = b""
    while len(re.findall(rb"<[^>]*>", received)) < count:
        data = sock.recv(1 << 20)
        if not data:
            break
        received += data
    return received


def pipeline(port, count, source=ATTACKER, headers=""):
    sock = connect_from(port, source)
    sock.sendall(b"".join(f"GET /probe?{i} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n".encode()
                          for i in range(count)))
    return sock
