"""Helpers of the replication tests: a server that replicates, writes from several clients with the time
each was acknowledged, Litestream's processes, and an S3-compatible server on loopback."""
import http.client
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import closing

import pytest

from helpers import APP_PY, ENV_WITHOUT_OKR, free_port, start_service

# The AWS SDK inside Litestream 0.5 cannot start with a custom CA bundle ("unable to add custom RootCAs"), so
# okr serve refuses an S3 replica while it is set; the S3 server on loopback speaks plain HTTP.
SERVER_ENV = {name: value for name, value in ENV_WITHOUT_OKR.items() if name != "AWS_CA_BUNDLE"}
S3_ENV = {**SERVER_ENV, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
          "AWS_REGION": "us-east-1"}


# The TMPDIRs start_replicating made for the test running; tests/replication/conftest.py removes them after it.
server_tmpdirs = []


def server_tmpdir():
    """A new folder of a short name in the system's temporary folder, for a server's TMPDIR. The server makes
    Litestream's folder there and puts its control socket in it, and a Unix socket's path may not pass 107 bytes:
    the test's own folder is too deep for that under pytest-xdist (/tmp/pytest-of-USER/pytest-N/popen-gw0/test_
    NAME0/okr-litestream-XXXXXXXX/control.sock is 109 bytes), and Litestream then answers no status."""
    folder = tempfile.mkdtemp(prefix="okr-tests-")
    server_tmpdirs.append(folder)
    return folder


def start_replicating(tmp_path, *options, env=None):
    """`okr serve` on a free port with options, in a session of its own (its whole group can be killed:
    it, its background process and Litestream); (process, http client)."""
    # TMPDIR: Litestream's folder, which a killed server leaves behind, goes with the test's (server_tmpdir).
    return start_service(free_port(), "--database", str(tmp_path / "okr.db"), "--no-access-log", *options,
                         env={**(env or SERVER_ENV), "TMPDIR": server_tmpdir()}, start_new_session=True,
                         cwd=tmp_path)


def kill_group(process):
    """SIGKILL to the server's whole process group: the machine is lost, nothing gets a last word."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    # Its pipe's other ends: Litestream and the background process, which die with the group.
    process.stdout.close()


def children(pid):
    """The pids of a process's children, whichever of its threads started them."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(child) for child in f.read().split()]
        except FileNotFoundError:
            pass
    return found


def process_name(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def litestream_of(server_pid, timeout=10):
    """The pid of the litestream the server runs, once it runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [pid for pid in children(server_pid) if process_name(pid) == "litestream"]
        if found:
            return found[0]
        time.sleep(0.05)
    pytest.fail("the server runs no litestream")


def wait_until(condition, timeout=10, every=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    return condition()


class Writer(threading.Thread):
    """A client on one keep-alive connection creating cycles named PREFIX-N until told to stop; it keeps
    each acknowledged write's name and when its answer came (time.time())."""

    def __init__(self, port, prefix, ready):
        super().__init__(daemon=True)
        self.port, self.prefix, self.ready = port, prefix, ready
        self.acknowledged = []
        self.stop = threading.Event()
        self.failure = None

    def run(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        number = 0
        try:
            while not self.stop.is_set():
                name = f"{self.prefix}-{number}"
                body = json.dumps({"name": name})
                connection.request("POST", "/v1/cycles", body=body, headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                payload = response.read()
                if response.status != 200:
                    raise AssertionError(f"{response.status} {payload[:200]!r}")
                self.acknowledged.append((name, time.time()))
                self.ready.release()
                number += 1
        except (OSError, http.client.HTTPException) as error:
            if not self.stop.is_set():
                self.failure = error
        except AssertionError as error:
            self.failure = error
        finally:
            connection.close()


def write_then_lose(process, port, writes=1000, clients=4, after=2.5):
    """`writes` writes from `clients` clients, then more for `after` seconds, and the server killed while they
    go on. Returns (every acknowledged (name, time), when the server was killed)."""
    ready = threading.Semaphore(0)
    writers = [Writer(port, f"client{number}", ready) for number in range(clients)]
    for writer in writers:
        writer.start()
    for _ in range(writes):
        if not ready.acquire(timeout=30):
            pytest.fail(f"writes stalled: {[writer.failure for writer in writers]}")
    time.sleep(after)
    for writer in writers:
        writer.stop.set()  # no new request; those under way stay so, and are cut off by the kill
    killed = time.time()
    kill_group(process)
    for writer in writers:
        writer.join(timeout=15)
        assert writer.failure is None, writer.failure
    return [entry for writer in writers for entry in writer.acknowledged], killed


def lose_database(path):
    """The disk is gone: the database, its WAL and its shared memory."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{path}{suffix}"):
            os.remove(f"{path}{suffix}")


def restore(tmp_path, url, *options, env=None):
    """`okr restore --from-replica URL`: its JSON report."""
    result = subprocess.run([sys.executable, str(APP_PY), "--database", str(tmp_path / "okr.db"), *options, "restore",
                             "--from-replica", url], cwd=tmp_path, env=env or SERVER_ENV, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def stored_cycle_names(path):
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {name for (name,) in db.execute("SELECT name FROM cycles")}


def recovery_point(acknowledged, stored, killed):
    """(how long before the kill the oldest acknowledged write that is missing was acknowledged, how many
    are missing): what the replica lost, in time; (0, 0) when nothing is."""
    missing = [at for name, at in acknowledged if name not in stored]
    return (max(0.0, killed - min(missing)), len(missing)) if missing else (0.0, 0)


class S3Server:
    """moto's S3-compatible server on a free loopback port, in a process of its own, with one bucket."""

    def __init__(self, bucket="okr"):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, env=S3_ENV)
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.close()
                    pytest.fail("moto's S3 server did not start")
                time.sleep(0.1)
        # moto leaves authentication off: a plain PUT makes the bucket.
        request = urllib.request.Request(f"{self.endpoint}/{bucket}", method="PUT")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200

    def close(self):
        self.process.kill()  # its buckets live in its memory: nothing to let it finish
        self.process.wait()
