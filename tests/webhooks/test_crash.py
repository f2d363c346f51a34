"""Webhooks survive SIGKILL: a real `okr serve` (its background process delivers), killed while deliveries
are under way and writes are being answered; after a restart every event answered 200 arrives, in order,
a repeat with the same webhook-id."""
import http.client
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import APP_PY, ENV_WITHOUT_OKR, HttpClient, free_port, run_okr

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser


class Server:
    """`python app.py` on a database, its output in a file (never a pipe that can fill)."""

    def __init__(self, database, log):
        self.port = free_port()
        with open(log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, str(APP_PY), "--port", str(self.port), "--database", str(database)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=ENV_WITHOUT_OKR)
        self.log, self.http = log, HttpClient(f"127.0.0.1:{self.port}")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                if self.http.get("/healthz").status == 200:
                    return
            except OSError:
                time.sleep(0.05)
        self.process.kill()
        raise AssertionError(f"the server did not start: {Path(log).read_text()}")

    def background_pid(self):
        """The pid of the server's background process (its only child)."""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
            if children:
                return int(children[0])
            time.sleep(0.05)
        raise AssertionError("the server has no background process")


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


class Writers:
    """Threads creating cycles until told to stop; acked: the ids of those answered 200."""

    def __init__(self, http, count=4):
        self.http, self.acked, self.stopping = http, [], threading.Event()
        self.threads = [threading.Thread(target=self.write, args=(index,)) for index in range(count)]

    def write(self, index):
        number = 0
        while not self.stopping.is_set():
            number += 1
            try:
                response = self.http.post("/v1/cycles", {"name": f"w{index}-{number}"})
            except (OSError, http.client.HTTPException):
                return  # the server is gone, maybe mid-answer
            if response.status == 200:
                self.acked.append(response.json()["id"])

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=30)


def test_sigkill_mid_delivery_loses_no_event_and_keeps_the_order(tmp_path, receiver):
    database, log = tmp_path / "okr.db", tmp_path / "server.log"
    assert run_okr("init-db", "--database", database, cwd=tmp_path).returncode == 0
    added = run_okr("webhooks", "add", receiver.url, "--allow-private", "--events", "cycle.*", "--json",
                    "--database", database, cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    receiver.delay = 0.01  # slow enough that deliveries are under way at each kill
    acked = []

    # 1. SIGKILL of the server alone, while writes are answered: its background process ends with it.
    server = Server(database, log)
    background = server.background_pid()
    with Writers(server.http) as writers:
        receiver.wait_for(20)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
    acked += writers.acked
    deadline = time.monotonic() + 25
    while alive(background) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(background), "the background process outlived its server"

    # 2. SIGKILL of both at once, as a crash takes them, mid-delivery.
    server = Server(database, log)
    background = server.background_pid()
    with Writers(server.http) as writers:
        receiver.wait_for(len(receiver.requests) + 20)
        os.kill(background, signal.SIGKILL)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
    acked += writers.acked
    assert len(acked) > 40

    # 3. After the restart, every event answered 200 arrives, the first arrival of each in event order.
    server = Server(database, log)
    try:
        with sqlite3.connect(database) as db:
            expected = [(event_id, json.loads(data)["id"]) for event_id, data in
                        db.execute("SELECT id, data FROM events WHERE type = 'cycle.created' ORDER BY seq")]
        assert set(acked) <= {cycle_id for _, cycle_id in expected}  # nothing answered 200 was lost
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            arrived = {request["headers"]["webhook-id"] for request in list(receiver.requests)}
            if arrived >= {event_id for event_id, _ in expected}:
                break
            time.sleep(0.1)
        requests = list(receiver.requests)
        first_arrivals = []
        bodies = {}
        for request in requests:
            event_id = request["headers"]["webhook-id"]
            body = json.loads(request["body"])
            assert body["id"] == event_id
            if event_id in bodies:
                assert bodies[event_id] == body  # a repeat is the same event
            else:
                bodies[event_id] = body
                first_arrivals.append(event_id)
        assert first_arrivals == [event_id for event_id, _ in expected]
        print(f"{len(expected)} events, {len(requests)} requests ({len(requests) - len(expected)} repeats)")
    finally:
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=30)
    assert "Traceback" not in log.read_text()
