"""okr serve --workers N: worker processes on one socket, under a supervisor, against a real server on loopback."""
import fcntl
import http.client
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing

import pytest

from helpers import (APP_PY, ENV_WITHOUT_OKR, HttpClient, children_of, free_port, holds_socket, listening_inode,
                     run_okr)
from okr import create_app, sync_once
from okr.server import workers
from okr.server.request_log import whole_lines
from okr.server.workers import worker_count

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads /proc (Linux)")


def eventually(check, timeout=10, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(step)
    return check()


class Server:
    """`python app.py` on a free loopback port, its log in a file, in a session of its own."""

    def __init__(self, tmp_path, args, env):
        self.port = free_port()
        self.database = tmp_path / "okr.db"
        self.log_path = tmp_path / f"server-{self.port}.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(APP_PY), "--port", str(self.port), "--database", str(self.database), *args],
                env={**ENV_WITHOUT_OKR, **(env or {})}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.process.pid
        self.http = HttpClient(f"127.0.0.1:{self.port}")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                if self.http.get("/healthz").status == 200:
                    return
            except OSError:
                time.sleep(0.05)
        self.kill()
        pytest.fail(f"service did not start: {self.log()}")

    def log(self):
        return self.log_path.read_text(errors="replace")

    def workers(self):
        """The supervisor's children that serve the listening socket."""
        inode = listening_inode(self.port)
        return sorted(pid for pid in children_of(self.pid) if inode and holds_socket(pid, inode))

    def workers_once(self, count, without=()):
        """The workers once there are count of them, none of them in without: each try checks and returns one
        reading of /proc (two readings may differ while a worker is being replaced); false after 10 s."""
        def check():
            workers = self.workers()
            return len(workers) == count and not set(workers) & set(without) and workers
        return eventually(check)

    def others(self):
        """The supervisor's children that do not serve it: the background process."""
        workers = self.workers()
        return [pid for pid in children_of(self.pid) if pid not in workers]

    def kill(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)


@pytest.fixture
def serve(tmp_path):
    """serve(*args, env=None): a server started with these options; killed with its whole session at the end."""
    started = []

    def start(*args, env=None):
        server = Server(tmp_path, args, env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def answered(server, path="/v1/cycles"):
    """The status of a GET on a new connection."""
    return server.http.get(path).status


@pytest.mark.slow
def test_n_workers_share_the_socket_and_each_serves_alone(serve):
    server = serve("--workers", "3")
    workers = server.workers_once(3)
    assert workers and server.pid not in workers, server.log()
    assert "serving with 3 worker processes" in server.log()
    # Each worker, with the others stopped, takes the new connections: all three accept on the one socket.
    for serving in workers:
        others = [pid for pid in workers if pid != serving]
        for pid in others:
            os.kill(pid, signal.SIGSTOP)
        try:
            assert [answered(server) for _ in range(3)] == [200, 200, 200]
        finally:
            for pid in others:
                os.kill(pid, signal.SIGCONT)


@pytest.mark.slow
def test_workers_one_is_one_process_as_before(serve):
    server = serve("--workers", "1")
    assert holds_socket(server.pid, listening_inode(server.port))  # the server itself listens, and serves
    assert server.workers() == [] and len(children_of(server.pid)) == 1  # the background process alone
    assert "serving on CPU" in server.log() and "worker processes" not in server.log()


@pytest.mark.slow
def test_the_default_is_one_worker_per_cpu_at_most_eight(serve):
    server = serve()
    expected = min(8, len(os.sched_getaffinity(0)))
    assert worker_count("auto") == expected
    if expected == 1:
        assert holds_socket(server.pid, listening_inode(server.port)) and server.workers() == []
    else:
        assert len(server.workers_once(expected)) == expected


@pytest.mark.slow
def test_workers_keep_each_to_a_cpu_of_its_own(serve):
    allowed = sorted(os.sched_getaffinity(0))
    server = serve("--workers", "2")
    workers = server.workers_once(2)
    wanted = sorted([[allowed[0]], [allowed[1 % len(allowed)]]])

    def placed():  # each worker pins itself once forked, and holds the socket from the fork on
        return sorted(sorted(os.sched_getaffinity(pid)) for pid in workers)
    assert eventually(lambda: placed() == wanted), placed()
    unpinned = serve("--workers", "2", "--cpu", "all")
    for pid in unpinned.workers_once(2):
        assert sorted(os.sched_getaffinity(pid)) == allowed


@pytest.mark.parametrize("args, env, shown", [
    (["--workers", "0"], None, "'0'"),
    (["--workers", "abc"], None, "'abc'"),
    ([], {"OKR_WORKERS": "-2"}, "'-2'"),
    (["--workers", "65"], None, "'65'"),
])
@pytest.mark.slow
def test_a_bad_worker_count_stops_okr_with_one_line(tmp_path, args, env, shown):
    result = run_okr("--port", "0", *args, cwd=tmp_path, env=env)
    assert result.returncode != 0
    assert result.stderr == f"okr: workers must be auto or an integer from 1 to 64, not {shown}\n"
    assert not (tmp_path / "okr.db").exists()


@pytest.mark.slow
def test_a_killed_worker_is_replaced_and_its_end_logged(serve):
    server = serve("--workers", "2")
    first = server.workers_once(2)
    os.kill(first[0], signal.SIGKILL)
    replaced = server.workers_once(2, without=[first[0]])
    assert replaced and first[1] in replaced, server.log()
    assert f"(pid {first[0]}) was killed by signal SIGKILL" in server.log()
    assert [answered(server) for _ in range(4)] == [200] * 4
    # A worker that ends of itself is replaced too, and its exit code logged.
    os.kill(replaced[1], signal.SIGTERM)  # a worker alone stops as when its supervisor stops it: exit code 0
    assert eventually(lambda: f"(pid {replaced[1]}) ended with exit code 0" in server.log()), server.log()
    assert server.workers_once(2, without=[replaced[1]])


@pytest.mark.slow
def test_a_worker_that_keeps_dying_is_restarted_ever_more_slowly(serve):
    server = serve("--workers", "2")
    for _ in range(4):
        workers = server.workers_once(2)
        newest = max(workers)
        os.kill(newest, signal.SIGKILL)
        eventually(lambda: not alive(newest) and newest not in children_of(server.pid))
    log = eventually(lambda: server.log().count("was killed by signal SIGKILL") == 4 and server.log())
    assert "starting another in 0.1 s" in log and "starting another in 0.2 s" in log, log


def start_slow_post(server, body):
    """A POST whose body is half sent: in flight until the rest comes."""
    connection = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    head = (f"POST /v1/cycles HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    connection.sendall(head + body[:5])
    return connection


def refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_lets_the_request_in_flight_end_then_exits_0(serve, stop):
    server = serve("--workers", "2")
    workers = server.workers_once(2)
    helpers = children_of(server.pid)
    body = json.dumps({"name": "finished while stopping"}).encode()
    connection = start_slow_post(server, body)
    time.sleep(0.3)  # accepted by a worker
    os.kill(server.pid, stop)
    assert eventually(lambda: refused(server.port)), "still accepting after the stop signal"
    time.sleep(0.5)
    assert server.process.poll() is None  # waits for the request
    connection.sendall(body[5:])
    response = http.client.HTTPResponse(connection)
    response.begin()
    assert response.status == 200, response.read()
    connection.close()
    assert server.process.wait(timeout=10) == 0
    assert f"stopping ({signal.Signals(stop).name})" in server.log()
    assert not any(alive(pid) for pid in helpers + workers)
    with closing(sqlite3.connect(server.database)) as db:
        assert db.execute("SELECT name FROM cycles").fetchall() == [("finished while stopping",)]


@pytest.mark.slow
def test_workers_die_with_their_supervisor(serve):
    server = serve("--workers", "2")
    workers = server.workers_once(2)
    os.kill(server.pid, signal.SIGKILL)
    server.process.wait(timeout=10)
    assert eventually(lambda: not any(alive(pid) for pid in workers)), "a worker outlived its supervisor"
    assert eventually(lambda: refused(server.port))


@pytest.mark.slow
def test_exactly_one_background_process_however_many_workers(serve):
    server = serve("--workers", "3")
    eventually(lambda: len(server.workers()) == 3)
    [background] = server.others()
    lock = f"{os.path.realpath(server.database)}.background.lock"
    with open(lock) as f:  # held by that process: taking it fails
        with pytest.raises(BlockingIOError):
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    # Killing a worker starts a worker, never another background process.
    os.kill(server.workers()[0], signal.SIGKILL)
    assert server.workers_once(3, without=[background])
    assert server.others() == [background]


def post_objectives(server, cycle, count, statuses):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        for number in range(count):
            connection.request("POST", "/v1/objectives", body=json.dumps({"name": f"o{number}", "cycle_id": cycle, "is_company": False,
                                                                   "is_personal": False}),
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            statuses.append(response.status)
    finally:
        connection.close()


@pytest.mark.slow
def test_concurrent_writes_from_several_clients_all_succeed(serve):
    server = serve("--workers", "2")
    cycle = server.http.post("/v1/cycles", {"name": "Q1"}).ok()["id"]
    statuses, clients = [], 8
    threads = [threading.Thread(target=post_objectives, args=(server, cycle, 40, statuses)) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(statuses) == clients * 40 and set(statuses) == {200}, sorted(set(statuses))
    assert "database busy" not in server.log()
    with closing(sqlite3.connect(server.database)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM objectives").fetchone()[0] == clients * 40


@pytest.mark.slow
def test_writers_of_every_worker_wait_their_turn_on_one_lock(serve):
    server = serve("--workers", "2")
    cycle = server.http.post("/v1/cycles", {"name": "Q1"}).ok()["id"]
    lock = f"{os.path.realpath(server.database)}.writers.lock"
    statuses = []
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        writer = threading.Thread(target=post_objectives, args=(server, cycle, 1, statuses))
        writer.start()
        writer.join(timeout=1)
        assert writer.is_alive() and statuses == []  # waiting for the lock
        assert answered(server) == 200  # reads go on meanwhile
    writer.join(timeout=10)
    assert statuses == [200]


@pytest.mark.slow
def test_access_log_health_and_serving_lock_with_workers(serve, tmp_path):
    server = serve("--workers", "2")
    for _ in range(4):
        assert answered(server, "/v1/cycles?page_size=7") == 200
    assert server.http.get("/healthz").json()["status"] == "ok"
    assert eventually(lambda: server.log().count("okr.access: 127.0.0.1 GET /v1/cycles?page_size=7 200") == 4), \
        server.log()
    backup = tmp_path / "backup.db"
    assert run_okr("--database", server.database, "backup", backup, cwd=tmp_path).returncode == 0
    refused_restore = run_okr("--database", server.database, "restore", backup, cwd=tmp_path)
    assert refused_restore.returncode == 1 and "a server is serving it" in refused_restore.stderr
    # The lock is the workers' too: with the supervisor gone, it holds until they are.
    os.kill(server.pid, signal.SIGTERM)
    assert server.process.wait(timeout=10) == 0
    assert run_okr("--database", server.database, "restore", backup, cwd=tmp_path).returncode == 0


def test_access_log_lines_go_out_whole_in_writes_a_pipe_keeps_whole():
    lines = [f"line {number} {'x' * (number % 300)}\n" for number in range(200)] + ["é" * 5000 + "\n"]
    chunks = list(whole_lines(lines))
    assert "".join(chunks) == "".join(lines)
    assert all(chunk.endswith("\n") for chunk in chunks)
    assert all(len(chunk.encode()) <= 4096 for chunk in chunks[:-1]) and chunks[-1] == lines[-1]


@pytest.mark.slow
def test_the_workers_access_log_lines_never_mix(serve):
    server = serve("--workers", "2")
    statuses = []

    def get_many():
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        for number in range(150):
            connection.request("GET", f"/v1/cycles?page_size=5&n={number}")
            response = connection.getresponse()
            response.read()
            statuses.append(response.status)
        connection.close()

    threads = [threading.Thread(target=get_many) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert statuses == [200] * 1200
    lines = eventually(lambda: [line for line in server.log().splitlines() if "okr.access: 127.0.0.1 GET /v1" in line]
                       if server.log().count("okr.access: 127.0.0.1 GET /v1/cycles?") == 1200 else None)
    assert lines, server.log()[-2000:]
    shape = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO okr\.access: 127\.0\.0\.1 GET "
                       r"/v1/cycles\?page_size=5&n=\d+ 200 "
                       r"\d+\.\d ms")
    assert all(shape.fullmatch(line) for line in lines), [line for line in lines if not shape.fullmatch(line)][:3]


def connections_of(pid, port):
    """The connections a worker holds open: its sockets but the listening one."""
    listening = listening_inode(port)
    count = 0
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        count += target.startswith("socket:") and target != f"socket:[{listening}]"
    return count


@pytest.mark.slow
def test_new_connections_are_shared_out_evenly(serve):
    server = serve("--workers", "2")
    workers = server.workers_once(2)
    time.sleep(1)  # both serving: a worker that has not yet begun is left out, and the other takes them all
    kept = []
    try:
        for _ in range(10):  # one after the other, as a client's pool opens them
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            connection.request("GET", "/healthz")
            connection.getresponse().read()
            kept.append(connection)
        counts = eventually(lambda: sum(connections_of(pid, server.port) for pid in workers) == 10
                            and [connections_of(pid, server.port) for pid in workers])
        assert counts and abs(counts[0] - counts[1]) <= 1, counts
    finally:
        for connection in kept:
            connection.close()


def test_flask_is_asked_once_per_function_whether_it_is_async():
    asked = []
    ensure_sync = sync_once(lambda func: asked.append(func) or func)

    def view():
        pass

    assert ensure_sync(view) is view and ensure_sync(view) is view and asked == [view]
    assert create_app().ensure_sync(view) is view


def test_a_worker_is_forked_only_while_no_program_is_starting(monkeypatch):
    """A worker forked while subprocess.Popen waits for Litestream's exec keeps Popen's status pipe open, and
    Popen would wait as long as the worker lives: forks and program starts take turns (STARTING_CHILDREN)."""
    held = []
    monkeypatch.setattr(workers.os, "fork", lambda: held.append(workers.STARTING_CHILDREN.locked()) or 4242)
    assert workers.start_worker(None, [], None, None) == 4242  # as the supervisor, once forked
    assert held == [True]
    assert not workers.STARTING_CHILDREN.locked()
