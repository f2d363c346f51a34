"""The server's background process: forked by okr serve, one at work per database however many servers serve
it, ending with its server; its pruning of old events."""
import fcntl
import os
import signal
import sqlite3
import time
from contextlib import closing
from datetime import datetime, timedelta, timezone

import pytest

from okr.server.background import lock_path
from okr.store import events

from helpers import REPO, children_of, free_port, start_service, stop_process

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has ended
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def lock_is_held(database):
    descriptor = os.open(lock_path(str(database)), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)
    return False


def eventually(check, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


@pytest.fixture
def servers(tmp_path):
    started = []

    def start(*args):
        process, http = start_service(free_port(), "--database", str(tmp_path / "okr.db"), *args)
        started.append(process)
        return process, http

    yield start
    for process in started:
        stop_process(process)  # closes its output pipe, ended or not


def test_one_background_process_works_per_database_and_the_next_takes_over(tmp_path, servers):
    # One process each, whose only child is its background process (test_workers.py: the same with workers).
    first, _ = servers("--workers", "1")
    second, _ = servers("--workers", "1")
    helpers = children_of(first.pid) + children_of(second.pid)
    assert len(helpers) == 2  # each server forked one
    assert eventually(lambda: lock_is_held(tmp_path / "okr.db"))
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert eventually(lambda: not alive(children_of(first.pid)[0]) if children_of(first.pid) else True)
    # The second server's helper holds the lock now (it tries every second).
    assert eventually(lambda: lock_is_held(tmp_path / "okr.db"))
    [helper] = children_of(second.pid)
    second.send_signal(signal.SIGKILL)
    second.wait()
    assert eventually(lambda: not alive(helper))
    assert eventually(lambda: not lock_is_held(tmp_path / "okr.db"))


def test_pruning_follows_the_retention_setting(tmp_path, servers):
    with closing(sqlite3.connect(tmp_path / "okr.db")) as db:
        db.executescript((REPO / "schema.sql").read_text())
        for name, days in (("old", 30), ("recent", 5)):
            seq = events.record(db, "team", "created", name, {"name": name})
            moment = (datetime.now(timezone.utc) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
            db.execute("UPDATE events SET created_at = ? WHERE seq = ?", (moment, seq))
        db.commit()
    servers("--event-retention-days", "10")

    def names():
        with closing(sqlite3.connect(tmp_path / "okr.db")) as db:
            return [row[0] for row in db.execute("SELECT json_extract(data, '$.name') FROM events ORDER BY seq")]
    assert eventually(lambda: names() == ["recent"])
