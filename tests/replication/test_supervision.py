"""okr serve --replicate runs Litestream as its child: started again when it dies, stopped after a last sync
when the server stops, and a replica that keeps failing turns /healthz to 503. A wrong URL, or no Litestream,
is one `okr:` line before anything is made."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading

import pytest

import okr.__main__ as program
from okr.server import litestream as replication  # the fixture litestream is the binary
from okr.server import workers
from okr.server.replication import Replicator

from helpers import run_okr
from replicas import (children, kill_group, litestream_of, process_name, restore, start_replicating,
                      stored_cycle_names, wait_until)


def shipped(replica):
    """Whether Litestream has put a whole file in the replica."""
    return any(name.endswith(".ltx") for _, _, names in os.walk(replica) for name in names)


def health(http):
    response = http.get("/healthz")
    return response.status, response.json()


def state_of(pid):
    """What /proc says of a process: its state letter (Z a zombie, D waiting on the disk), or that it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f"process {pid} in state {f.read().rsplit(')', 1)[1].split()[0]}"
    except FileNotFoundError:
        return f"process {pid} gone"


def stopped(process, signal_to=lambda process: process.terminate()):
    """The server's log, once it has stopped."""
    signal_to(process)
    try:
        log = process.communicate(timeout=30)[0].decode()
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    assert process.returncode == 0, log
    return log


@pytest.mark.slow
def test_litestream_is_started_again_when_it_dies(tmp_path, litestream):
    process, http = start_replicating(tmp_path, "--replicate", f"file://{tmp_path / 'replica'}")
    try:
        first = litestream_of(process.pid)
        os.kill(first, signal.SIGKILL)
        assert wait_until(lambda: litestream_of(process.pid) != first, timeout=15), (
            f"litestream was not started again: {state_of(first)}, /healthz {health(http)}")
        status, body = health(http)
        assert status == 200 and "SIGKILL" not in str(body)
        # Caught up again: the lag falls back to about Litestream's second.
        assert wait_until(lambda: health(http)[1]["details"]["replication"] == "ok"
                          and float(health(http)[1]["details"]["replication_lag_seconds"]) < 2, timeout=15)
        shown = run_okr("--database", tmp_path / "okr.db", "replication", "status", cwd=tmp_path)
        assert shown.returncode == 0 and " litestream was killed by SIGKILL\n" in shown.stdout, shown.stderr
        assert "started again 1 times" in shown.stdout
    finally:
        log = stopped(process)
    assert "ERROR okr: litestream was killed by SIGKILL; starting it again in 1 s" in log


@pytest.mark.parametrize("signal_to", [
    lambda process: process.send_signal(signal.SIGTERM),  # the server alone (kill PID)
    lambda process: os.killpg(process.pid, signal.SIGTERM),  # the whole group (systemd, Ctrl-C's SIGINT alike)
], ids=["server", "group"])
@pytest.mark.slow
def test_litestream_ships_the_last_writes_and_ends_with_the_server(tmp_path, litestream, signal_to):
    url = f"file://{tmp_path / 'replica'}"
    process, http = start_replicating(tmp_path, "--replicate", url)
    pid = litestream_of(process.pid)
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        config = f.read().split(b"\0")[3].decode()
    assert os.stat(config).st_mode & 0o777 == 0o600 and os.stat(os.path.dirname(config)).st_mode & 0o777 == 0o700
    assert wait_until(lambda: shipped(tmp_path / "replica"), timeout=15)  # its first sync
    http.post("/v1/cycles", {"name": "just before the stop"}, headers={"Content-Type": "application/json"}).ok()
    log = stopped(process, signal_to)  # at once: only Litestream's last sync can have shipped the write
    assert "shutdown sync skipped" not in log
    assert not os.path.exists(f"/proc/{pid}") and not os.path.exists(os.path.dirname(config))
    os.remove(tmp_path / "okr.db")
    restore(tmp_path, url)
    assert "just before the stop" in stored_cycle_names(tmp_path / "okr.db")


def blocks_sigterm(status_path):
    """Whether the thread or process whose /proc status this is blocks SIGTERM (its SigBlk mask's bit)."""
    with open(status_path) as f:
        [mask] = [line.split()[1] for line in f if line.startswith("SigBlk:")]
    return bool(int(mask, 16) >> (signal.SIGTERM - 1) & 1)


@pytest.mark.slow
def test_only_the_supervisor_takes_a_servers_sigterm_and_its_children_take_theirs(tmp_path, litestream):
    """A SIGTERM to a server of several workers goes to a thread that does not block it. Litestream's thread of
    the server once did not: a SIGTERM that came while the supervisor was not waiting for signals ended the
    server at once (-15), its workers undrained and Litestream's last sync skipped. So every thread of the
    server blocks it, and the processes it starts (the workers, the background one, Litestream) take theirs."""
    process, _ = start_replicating(tmp_path, "--replicate", f"file://{tmp_path / 'replica'}", "--workers", "2")
    try:
        litestream_pid = litestream_of(process.pid)
        # Not the main thread: the supervisor, whose sigtimedwait unblocks them while it waits (as /proc shows).
        threads = [thread for thread in os.listdir(f"/proc/{process.pid}/task") if thread != str(process.pid)]
        assert threads  # Litestream's, at least
        open_to_it = [process_name(f"{process.pid}/task/{thread}") for thread in threads
                      if not blocks_sigterm(f"/proc/{process.pid}/task/{thread}/status")]
        assert open_to_it == [], open_to_it
        started = children(process.pid)
        assert litestream_pid in started and len(started) == 4, [process_name(pid) for pid in started]
        # Each unblocks them as it starts: a worker just forked may not have yet.
        assert wait_until(lambda: not any(blocks_sigterm(f"/proc/{pid}/status") for pid in started), timeout=10), \
            [(process_name(pid), blocks_sigterm(f"/proc/{pid}/status")) for pid in started]
    finally:
        log = stopped(process)
    assert "stopping (SIGTERM)" in log


@pytest.mark.slow
def test_litestream_ends_with_a_server_killed_alone(tmp_path, litestream):
    """SIGKILL to the server only (the OOM killer): Linux ends Litestream too, which would otherwise go on
    shipping a database nobody serves, beside the next server's."""
    process, _ = start_replicating(tmp_path, "--replicate", f"file://{tmp_path / 'replica'}")
    pid = litestream_of(process.pid)
    process.kill()
    process.communicate(timeout=30)
    assert wait_until(lambda: not os.path.exists(f"/proc/{pid}"), timeout=15)


@pytest.mark.slow
def test_a_second_server_may_serve_the_database_but_not_replicate_it(tmp_path, litestream):
    url = f"file://{tmp_path / 'replica'}"
    process, _ = start_replicating(tmp_path, "--replicate", url)
    try:
        second = run_okr("--database", tmp_path / "okr.db", "--port", "0", "--replicate", url, cwd=tmp_path)
        assert second.returncode == 1
        assert second.stderr.splitlines()[-1] == (f"okr: another server already replicates {tmp_path / 'okr.db'}; "
                                                  "serve it without --replicate, or stop that server first")
    finally:
        kill_group(process)


@pytest.mark.slow
def test_healthz_is_503_once_replication_fails_for_longer_than_the_limit(tmp_path, litestream):
    """/healthz says failing with the lag, and 503 past the limit; Litestream's error, which names the replica's
    path, is in the log and in `okr replication status`, never in /healthz, which needs no credentials."""
    # Nothing can be made under /proc, root or not: every sync fails.
    process, http = start_replicating(tmp_path, "--replicate", "file:///proc/okr-replica", "--replicate-max-lag", "2")
    try:
        def failing_with_its_error():
            status, body = health(http)
            shown = run_okr("--database", tmp_path / "okr.db", "replication", "status", cwd=tmp_path).stdout
            # The lag can pass the limit before Litestream logs its first failed sync: wait for both.
            return (body, shown) if status == 503 and "/proc/okr-replica" in shown else None

        found = wait_until(failing_with_its_error, timeout=20, every=0.5)
        if not found:
            last = health(http)
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail(f"/healthz {last}; the server's log:\n{process.communicate(timeout=10)[0].decode()[-4000:]}")
        body, shown = found
        assert body["message"] == "replication is failing" and body["details"]["replication"] == "failing"
        assert set(body["details"]) == {"replication", "replication_lag_seconds"}
        assert float(body["details"]["replication_lag_seconds"]) >= 2
        assert "proc" not in json.dumps(body)
        assert "state:        failing, /healthz answers 503 (the lag is past 2 s)\n" in shown
        assert "replica:      file:///proc/okr-replica\n" in shown
    finally:
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGKILL)  # a stop would wait for Litestream's last sync to fail
    log = process.communicate(timeout=30)[0].decode()  # its end, once the whole group is gone
    assert any(" ERROR okr: litestream: " in line and "/proc/okr-replica" in line for line in log.splitlines())


@pytest.mark.parametrize("answer", [
    b"not HTTP at all\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"databases\"",  # cut short
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]",  # JSON, not the object it should be
], ids=["not-http", "cut-short", "not-an-object"])
@pytest.mark.slow
def test_an_unforeseen_answer_of_the_control_socket_never_ends_the_supervision(tmp_path, answer):
    """The thread that restarts Litestream and saves its errors for /healthz reads its control socket every
    second: an answer it cannot read is no answer, never the end of the thread."""
    replicator = Replicator("/bin/false", tmp_path / "okr.db", replication.replica(f"file://{tmp_path / 'replica'}"),
                            5000)
    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    control.bind(replicator.socket_path)
    control.listen()

    def answer_twice():
        for _ in range(2):
            connection, _ = control.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(answer)

    answering = threading.Thread(target=answer_twice, daemon=True)
    answering.start()
    try:
        with pytest.raises(ValueError):  # last_sync's one word for an answer it cannot read
            replication.last_sync(replicator.socket_path, replicator.database)
        replicator.status["pid"] = 4242  # as if Litestream were running
        replicator.poll()
        answering.join(timeout=10)
        assert replication.read_status(replicator.status_path)["pid"] == 4242  # saved all the same
    finally:
        control.close()
        shutil.rmtree(replicator.folder)


def test_a_failure_nobody_foresaw_in_reading_litestream_is_logged_and_the_supervision_goes_on(tmp_path, monkeypatch,
                                                                                             caplog):
    replicator = Replicator("/bin/false", tmp_path / "okr.db", replication.replica(f"file://{tmp_path / 'replica'}"),
                            5000)

    def broken(*args):
        raise RuntimeError("a bug in reading the answer")

    monkeypatch.setattr(replication, "last_sync", broken)
    try:
        replicator.status["pid"] = 4242
        replicator.poll()
        assert replication.read_status(replicator.status_path)["pid"] == 4242
        assert "cannot read litestream's status" in caplog.text and "a bug in reading the answer" in caplog.text
    finally:
        shutil.rmtree(replicator.folder)


@pytest.mark.slow
def test_litestream_is_started_only_while_no_worker_is_being_forked(tmp_path):
    """A worker forked while subprocess.Popen waits for Litestream's exec keeps Popen's status pipe open: the
    supervising thread then waited as long as the worker lived, with Litestream running unwatched (no restart,
    no error saved for /healthz). Forks and program starts take turns (STARTING_CHILDREN)."""
    program = tmp_path / "litestream"
    program.write_text("#!/bin/sh\nexec sleep 30\n")
    program.chmod(0o755)
    replicator = Replicator(str(program), tmp_path / "okr.db", replication.replica(f"file://{tmp_path / 'replica'}"),
                            5000)
    checked = threading.Event()

    def launch():
        replicator.launch()
        # Lives on until checked, as the server's starting thread does: the program gets SIGTERM
        # (PR_SET_PDEATHSIG) once the thread that started it ends, which a loaded machine shows before the check.
        checked.wait(10)

    starting = threading.Thread(target=launch, daemon=True)
    try:
        with workers.STARTING_CHILDREN:  # a worker being forked
            starting.start()
            starting.join(timeout=0.5)
            assert starting.is_alive() and replicator.process is None
        assert wait_until(lambda: replicator.process is not None, timeout=10)
        assert replicator.process.poll() is None
    finally:
        checked.set()
        starting.join(timeout=10)
        if replicator.process is not None:
            replicator.process.kill()
            replicator.process.wait()
            for thread in threading.enumerate():
                if thread.name == "okr-litestream-log":
                    thread.join(timeout=10)  # its log's end, once the program is gone
            replicator.process.stderr.close()
        shutil.rmtree(replicator.folder)


@pytest.mark.slow
def test_a_wrong_replica_url_is_one_line_and_makes_nothing(tmp_path):
    result = run_okr("--replicate", "https://example.com/okr", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == ("okr: the replica must be a file:///path or s3://bucket/path URL, not "
                             "https://example.com/okr\n")
    assert os.listdir(tmp_path) == []


def test_without_litestream_serving_says_how_to_get_it(tmp_path, monkeypatch, clean_env):
    monkeypatch.setattr(replication, "find_litestream", lambda: None)
    with pytest.raises(SystemExit) as ended:
        program.main(["--database", str(tmp_path / "okr.db"), "--cpu", "all", "--replicate", "file:///x"])
    assert str(ended.value) == ("okr: replication needs Litestream, which is not installed: "
                                f"{replication.install_hint()}")
    assert "[replicate]', or put Litestream 0.5's litestream on PATH" in str(ended.value)
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_the_replica_settings_come_from_the_environment_too(tmp_path):
    result = subprocess.run([sys.executable, "-m", "okr"], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, "OKR_REPLICATE": "file:///x", "OKR_REPLICATE_MAX_LAG": "never"},
                            timeout=60)
    assert result.returncode == 1
    assert result.stderr == "okr: replicate-max-lag must be a number of seconds from 1 to 86400, not 'never'\n"
