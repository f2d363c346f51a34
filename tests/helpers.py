"""Shared assertions and builders for the tests."""
import asyncio
import base64
import contextvars
import ctypes
import fcntl
import http.client
import json
import os
import random
import re
import shutil
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from waitress import create_server

from okr.accounts import passwords
from okr.db import transaction
from okr.rules.request_signature import authorization_header
from okr.store import users

UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
OBJECTIVE_FIELDS = {
    "id", "name", "created_at", "modified_at", "team_id", "assignee_id", "description",
    "is_personal", "is_company", "parent_objective_id", "cycle_id",
}
KEY_RESULT_FIELDS = {
    "id", "name", "created_at", "modified_at", "objective_id", "confidence", "type",
    "current_value", "target_value_min", "target_value_max",
}
CYCLE_FIELDS = TEAM_FIELDS = {"id", "name", "created_at"}
USER_FIELDS = {"id", "name", "email", "is_active", "created_at"}


def assert_error(response, status, *fields):
    """The contract's error shape: {code, message, details?}; fields must be named in details."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) <= {"code", "message", "details"}
    assert body["code"] == status
    assert isinstance(body["message"], str) and body["message"]
    if "details" in body:
        assert isinstance(body["details"], dict)
        assert all(isinstance(v, str) for v in body["details"].values())
    for field in fields:
        assert field in body.get("details", {}), body
    return body


def make_cycle(client, name="Q1"):
    response = client.post("/v1/cycles", json={"name": name})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def make_team(client, name="Platform"):
    response = client.post("/v1/teams", json={"name": name})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def make_objective(client, cycle_id, name="Grow revenue", **fields):
    body = {"name": name, "cycle_id": cycle_id, "is_company": False, "is_personal": False}
    body.update(fields)
    response = client.post("/v1/objectives", json=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def make_key_result(client, objective_id, name="Reach 100 customers", **fields):
    body = {"name": name, "type": "positive", "target_value_min": "100"}
    body.update(fields)
    response = client.post(f"/v1/objectives/{objective_id}/keyresults", json=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def fetch(client, path):
    """GET path, which must answer 200: its JSON."""
    response = client.get(path)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def fetch_key_result(client, key_result_id):
    return fetch(client, f"/v1/keyresults/{key_result_id}")


def thread_connection(app):
    """The database connection of this thread: the one the app's requests on it use."""
    return app.extensions["okr_connections"].db


def statements_of(app, client, request):
    """The SQL statements a request runs on this thread's connection, as SQLite traces them.

    request: a path to GET, or a function that sends the request and returns its response (a 200).
    """
    client.get("/healthz")  # opens this thread's connection
    connection = thread_connection(app)
    statements = []
    connection.set_trace_callback(statements.append)
    try:
        response = client.get(request) if isinstance(request, str) else request()
    finally:
        connection.set_trace_callback(None)
    assert response.status_code == 200, response.get_json()
    return statements


def create_key(runner, name="test", read_only=False):
    """An API key, as `okr keys create --json` prints it (credential, secret, name...)."""
    result = runner.invoke(args=["keys", "create", "--name", name, "--json", *(["--read-only"] if read_only else [])])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def signed(key):
    """Headers that sign a request with an API key, now."""
    return {"Authorization": authorization_header(key["credential"], key["secret"])}


def make_user(runner, name="Ada Lovelace", email="ada@example.com"):
    result = runner.invoke(args=["users", "add", "--name", name, "--email", email])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def set_active(runner, email, active):
    result = runner.invoke(args=["users", "activate" if active else "deactivate", email])
    assert result.exit_code == 0, result.output


def stored_users(app):
    """The users table as stored: (name, email, email_key, is_active) in creation order."""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT name, email, email_key, is_active FROM users ORDER BY seq").fetchall()


def write_csv(tmp_path, text, name="users.csv"):
    """A UTF-8 file of text in tmp_path, for users import: its path."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def token_of(text):
    """text as a page token spells it (URL-safe base64), to send tokens the service never made."""
    return base64.urlsafe_b64encode(text.encode()).decode()


def file_mode(path):
    """A file's permission bits, such as 0o600."""
    return stat.S_IMODE(os.stat(path).st_mode)


class HttpClient:
    """Real HTTP to a server on loopback: one connection per call, JSON in and out."""

    def __init__(self, address):
        self.address = address
        self.host, port = address.rsplit(":", 1)
        self.port = int(port)

    def request(self, method, path, body=None, headers=None, raw=None):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            data = raw if raw is not None else (None if body is None else json.dumps(body))
            connection.request(method, path, body=data, headers=headers or {})
            response = connection.getresponse()
            payload = response.read()
            return HttpResponse(response.status, dict(response.getheaders()), payload)
        finally:
            connection.close()

    def get(self, path, **kwargs):
        return self.request("GET", path, **kwargs)

    def post(self, path, body=None, **kwargs):
        return self.request("POST", path, body, **kwargs)

    def delete(self, path, **kwargs):
        return self.request("DELETE", path, **kwargs)


class HttpResponse:
    def __init__(self, status, headers, payload):
        self.status = status
        self.headers = headers
        self.payload = payload

    def json(self):
        return json.loads(self.payload)

    def ok(self):
        """The parsed body of a 200, or a failure that shows what came back."""
        assert self.status == 200, (self.status, self.payload[:500])
        return self.json() if self.payload else None


REPO = Path(__file__).resolve().parent.parent
APP_PY = REPO / "app.py"
# schema.sql as of schema version 0, the last release before versions were kept
SCHEMA_V0 = REPO / "tests" / "fixtures" / "schema_v0.sql"


# A child process's environment: this one's without the OKR_ settings of whoever runs the tests.
ENV_WITHOUT_OKR = {name: value for name, value in os.environ.items() if not name.startswith("OKR_")}


def run_okr(*args, cwd, env=None, timeout=60):
    """`python app.py ARGS` as its own process in the folder cwd, until it ends; env adds OKR_ settings.

    cwd is always named: ./okr.db is the default database, so the folder pytest runs in must not matter.
    """
    return subprocess.run([sys.executable, str(APP_PY), *map(str, args)], cwd=cwd,
                          env={**ENV_WITHOUT_OKR, **(env or {})}, capture_output=True, text=True, timeout=timeout)


def ephemeral_ports():
    """The kernel's range of ephemeral ports: where it picks the local port of a connect(), and for bind(port 0)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = map(int, f.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999


PORTS = random.Random()  # its own: Hypothesis reseeds the global random module


def free_port():
    """A loopback port that nothing listens on now, for a server about to start on it.

    Picked at random below the ephemeral range, not by bind(port 0): with the tests of other xdist workers opening
    thousands of connections beside this one, the kernel would soon give a port it had just said was free to one
    of their connect()s, before the server took it ("port ... is in use").
    """
    low = min(ephemeral_ports()[0], 32768)
    for _ in range(200):
        port = PORTS.randrange(max(1024, low - 16384), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_service(port, *args, env=None, program=None, **popen):
    """`python app.py --port PORT ARGS` (or program's command line instead of python app.py) as its own
    process, once /healthz answers."""
    process = subprocess.Popen(
        [*(program or [sys.executable, str(APP_PY)]), "--port", str(port), *args],
        env=os.environ if env is None else env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **popen,
    )
    http = HttpClient(f"127.0.0.1:{port}")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            if http.get("/healthz").status == 200:
                return process, http
        except OSError:
            time.sleep(0.05)
    process.kill()
    pytest.fail(f"service did not start: {process.communicate()[0].decode()}")


def stop_process(process, timeout=15):
    """SIGTERM, as a service manager stops a server, then SIGKILL if it has not ended within timeout seconds."""
    process.terminate()
    try:
        process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


def keep_file_permissions():
    """Runs in the server's process before exec: root without the capability to ignore file modes."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def serve_until(server, stopping):
    """waitress's own loop, stepped so that this thread alone stops and closes it."""
    while not stopping.is_set():
        server.asyncore.loop(timeout=0.05, map=server._map, use_poll=True, count=1)
    server.task_dispatcher.shutdown()
    server.asyncore.close_all(server._map)


@contextmanager
def served_in_thread(application, threads=4):
    """application on real waitress on a free loopback port, in a thread of this process.

    Yields its port, its base URL and stop(), which stops it early (a source that goes away).
    """
    server = create_server(application, host="127.0.0.1", port=0, threads=threads)
    stopping = threading.Event()
    thread = threading.Thread(target=serve_until, args=(server, stopping), daemon=True)
    thread.start()

    def stop():
        stopping.set()
        thread.join(timeout=10)

    try:
        yield SimpleNamespace(port=server.effective_port, url=f"http://127.0.0.1:{server.effective_port}", stop=stop)
    finally:
        stop()


def process_tree(pid):
    """pid and its descendants (a server's worker processes, its background process, Litestream), from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    tree, stack = [], [pid]
    while stack:
        tree.append(stack.pop())
        stack += children.get(tree[-1], [])
    return tree


def children_of(pid):
    """The pids of a process's children (Linux)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(child) for child in f.read().split()]
    except FileNotFoundError:
        return []


def listening_inode(port):
    """The inode of the socket listening on port on loopback (IPv4), from /proc/net/tcp."""
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
                return fields[9]
    return None


def holds_socket(pid, inode):
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return False
    for name in names:
        try:
            if os.readlink(f"/proc/{pid}/fd/{name}") == f"socket:[{inode}]":
                return True
        except OSError:
            pass
    return False


def worker_pids(server_pid, port):
    """The worker processes of the server (okr serve) started as server_pid: its children that hold the socket
    listening on port (the background process does not)."""
    inode = listening_inode(port)
    return sorted(pid for pid in children_of(server_pid) if inode and holds_socket(pid, inode))


def user_with_password(app, password, name="Maya Lee", email="maya@example.com", role="admin"):
    """A user made through the store as the commands make them, with a password (hashed as the app hashes):
    its row as a dict."""
    with app.app_context(), transaction() as db:
        user = users.create(db, name, email, role)
        users.set_password(db, user, passwords.hash_password(password))
        return dict(db.execute("SELECT * FROM users WHERE id = ?", (user["id"],)).fetchone())


def in_ci():
    """Whether CI is set: a test then fails, rather than skips, when a program it needs is missing."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def loopback_certificate(folder):
    """(cert.pem, key.pem) in folder: a self-signed certificate for 127.0.0.1, made with openssl (skips the test
    without it), for the TLS servers of the mail and webhook tests."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificate for the TLS tests")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key



# --- running beside other tests (pytest-xdist) ------------------------------------------------------------------
# `pytest` runs the suite in several worker processes (setup.cfg's addopts: -n, --dist loadgroup). What follows is
# how a test or a fixture copes with the others: the folder the workers share, the lock that lets a test marked
# `alone` run with no other test at the same time, and doing something once for the whole run.


def run_folder(config):
    """A folder of this run that all its xdist workers share: the controller's basetemp, of which each worker's
    basetemp (popen-gwN) is a subfolder; without xdist, the basetemp of the one process."""
    if hasattr(config, "workerinput"):
        return Path(config.getoption("basetemp")).parent
    return config._tmp_path_factory.getbasetemp()


class RunLock:
    """The run's readers-writer lock, which its xdist workers share through two flock()ed files in run_folder:
    every test holds it shared from its fixtures' set-up to their teardown, and a test marked `alone` holds it
    exclusively, so that nothing else of the run goes on meanwhile (its timing measures the code, not the other
    tests). The turnstile makes a waiting exclusive holder go next: a worker takes it for a moment before the lock,
    and the exclusive one keeps it until the shared holders have let go, so new tests cannot overtake it."""

    SHARED, EXCLUSIVE = fcntl.LOCK_SH, fcntl.LOCK_EX

    def __init__(self, folder):
        self.turnstile = os.open(folder / "okr-tests-turnstile.lock", os.O_RDWR | os.O_CREAT, 0o600)
        self.lock = os.open(folder / "okr-tests.lock", os.O_RDWR | os.O_CREAT, 0o600)
        self.held = None

    def acquire(self, mode):
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.lock, mode)
        finally:
            fcntl.flock(self.turnstile, fcntl.LOCK_UN)
        self.held = mode

    def release(self):
        fcntl.flock(self.lock, fcntl.LOCK_UN)
        self.held = None

    @contextmanager
    def holding(self, mode):
        self.acquire(mode)
        try:
            yield
        finally:
            self.release()

    @contextmanager
    def switched(self, mode):
        """Within a test: the block with the lock held in mode instead (None: not at all), then as before."""
        before = self.held
        if before is not None:
            self.release()
        if mode is not None:
            self.acquire(mode)
        try:
            yield
        finally:
            if mode is not None:
                self.release()
            if before is not None:
                self.acquire(before)

    def close(self):
        os.close(self.lock)
        os.close(self.turnstile)


RUN_LOCK = pytest.StashKey()


def run_lock(config):
    """This process's RunLock (tests/conftest.py opens it at the session's start)."""
    return config.stash[RUN_LOCK]


def alone(config):
    """Within a test or a fixture: the block runs with no other test of the run at the same time (as a test marked
    `alone` does), for a fixture that measures, such as the single-file build's start-up time."""
    return run_lock(config).switched(RunLock.EXCLUSIVE)


@contextmanager
def one_at_a_time(config, path):
    """An exclusive flock() on path for the block, waited for without holding the run's lock: another worker that
    holds path may want the run to itself meanwhile (alone), and would otherwise wait for this test forever."""
    with run_lock(config).switched(None):
        descriptor = os.open(path, os.O_RDONLY if os.path.isdir(path) else os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(descriptor, fcntl.LOCK_EX)
    try:
        yield
    finally:
        os.close(descriptor)


def npm_installed(config, folder, package, clean=True):
    """None once folder's pinned packages are installed (npm ci, once for all of the run's workers, one at a time
    in the folder), package among them; else why they are not. clean=False: npm install from the lock file without
    writing it, for a lock whose optional package for another system the registry does not hold (npm ci refuses
    it as out of step)."""
    command = ["ci"] if clean else ["install", "--no-save"]
    with one_at_a_time(config, folder):
        if not (folder / "node_modules" / package / "package.json").exists():
            done = subprocess.run([shutil.which("npm") or "npm", *command, "--no-audit", "--no-fund"], cwd=folder,
                                  capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                return f"npm ci in {folder} failed: {done.stderr[-2000:]}"
    return None


SCREENSHOT_FOLDERS = pytest.StashKey()


def screenshots_in(config, folder):
    """Lists folder's screenshots (*.png) at the end of the run, under "browser screenshots" (tests/conftest.py's
    pytest_terminal_summary): from an xdist worker too, which hands its folders to the controller as it ends."""
    folders = config.stash.setdefault(SCREENSHOT_FOLDERS, set())
    folders.add(str(folder))
    if hasattr(config, "workeroutput"):
        config.workeroutput["okr_screenshot_folders"] = sorted(folders)


# Debian's Chromium, which the browser tests drive with Playwright (never a downloaded one).
CHROMIUM = Path("/usr/bin/chromium")
# What a headless Chromium needs in a container without a network: no sandbox (no user
# namespaces as root), no GPU, /tmp instead of a small /dev/shm, and nothing that phones home.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    "--metrics-recording-only",
    "--mute-audio",
    "--password-store=basic",
    "--use-mock-keychain",
    "--no-proxy-server",
    # Loopback only: any host but localhost and 127.0.0.1 resolves to nothing.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1",
]


def run_coroutine(make):
    """asyncio.run(make()) on a thread of its own, in a copy of this context: the test's thread may run an event loop
    already (sync Playwright keeps one running for the worker's browser tests)."""
    context = contextvars.copy_context()
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(context.run, lambda: asyncio.run(make())).result()
