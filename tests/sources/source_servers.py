"""The servers the source readers are tested against: a local HTTP server that answers as GitHub, Jira and a
published sheet do (and hostile ones), a real PostgreSQL and a real Prometheus, each started here; conftest.py
makes their fixtures the folder's. (A module of its own: `from conftest import` would find another folder's.)"""
import json
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from helpers import free_port, in_ci, stop_process

# GitHub's issues of acme/app: (number, opened, closed or None).
ISSUES = [(number, datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(days=3 * number),
           datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(days=3 * number + 20) if number % 2 else None)
          for number in range(1, 41)]
JIRA_TOTAL = 17
SHEET = ("\ufeffMonth,Revenue,Customers,Churn\r\n"
         "2026-01,\"1,234.5\",120,2.5%\r\n"
         "2026-02, 1500 ,131,3 %\r\n"
         "2026-03,\"12,345,678.25\",140,\r\n"
         "2026-04,n/a,150,1.1%\r\n")


def github_count(query):
    """What GitHub's /search/issues counts for q: is:open, is:closed and created:<=moment understood."""
    found = ISSUES
    for term in query.split():
        if term == "is:open":
            found = [issue for issue in found if issue[2] is None]
        elif term == "is:closed":
            found = [issue for issue in found if issue[2] is not None]
        elif term.startswith("created:<="):
            moment = datetime.fromisoformat(term.removeprefix("created:<=").replace("Z", "+00:00"))
            found = [issue for issue in found if issue[1] <= moment]
    return len(found)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, content_type="application/json; charset=utf-8", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        parts = urlsplit(self.path)
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        self.server.seen.append({"path": self.path, "headers": dict(self.headers)})
        route = getattr(self, "route_" + parts.path.strip("/").replace("/", "_").replace(".", "_"), None)
        if route is None:
            return self.send(404, b'{"message": "Not Found"}')
        return route(query)

    def route_search_issues(self, query):  # GitHub's REST API: GET /search/issues?q=...
        count = github_count(query.get("q", ""))
        self.send(200, json.dumps({"total_count": count, "incomplete_results": False, "items": []}).encode())

    def route_rest_api_3_search(self, query):  # Jira Cloud: GET /rest/api/3/search?jql=...&maxResults=0
        if self.headers.get("Authorization") != "Basic bWF5YUBhY21lLmNvbTp0b2tlbg==":
            return self.send(401, b'{"errorMessages": ["You are not authenticated."]}')
        self.send(200, json.dumps({"expand": "schema,names", "startAt": 0, "maxResults": 0, "total": JIRA_TOTAL,
                                   "issues": []}).encode())

    def route_sheet_csv(self, query):  # a published sheet's CSV link
        self.send(200, SHEET.encode("utf-8"), "text/csv")

    def route_values_json(self, query):
        self.send(200, json.dumps({"count": 7, "text": " 12.5 ", "flag": True, "items": [1, 2], "none": None,
                                   "big": "1e999999999"}).encode())

    def route_html(self, query):
        self.send(200, b"<!DOCTYPE html><html><body>Sign in</body></html>", "text/html; charset=utf-8")

    def route_error(self, query):
        self.send(500, b"Internal Server Error: database down", "text/plain")

    def route_redirect(self, query):
        self.send(302, b"", headers=[("Location", "http://169.254.169.254/latest/meta-data/")])

    def route_big(self, query):
        self.send(200, b'{"n": 1, "pad": "' + b"x" * (2 * 1024 * 1024) + b'"}')

    def route_big_unannounced(self, query):  # no Content-Length: the cap holds while reading
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b'{"pad": "' + b"x" * (2 * 1024 * 1024) + b'"}')
        self.close_connection = True

    def route_liar(self, query):  # announces 1000 bytes, sends 12, closes
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "1000")
        self.end_headers()
        self.wfile.write(b'{"count": 7,')
        self.close_connection = True

    def route_trickle(self, query):  # a byte every 0.2 s, for a minute
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "300")
        self.end_headers()
        try:
            for _ in range(300):
                self.wfile.write(b" ")
                self.wfile.flush()
                if self.server.stopping.wait(0.2):
                    break
        except OSError:
            pass
        self.close_connection = True


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen, self.stopping = [], threading.Event()
        self.port = self.server_address[1]

    def handle_error(self, request, client_address):
        pass  # a reader that gives up early (the deadline, 1 MB) resets the connection: as intended


@pytest.fixture(scope="module")
def web():
    """The local HTTP server, on 127.0.0.1, for a module's tests; .seen lists the requests it got."""
    server = FakeServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.stopping.set()
    server.shutdown()
    server.server_close()


def connection(kind, address, headers=None, inside_network=True):
    return {"kind": kind, "address": address, "headers": headers or {}, "inside_network": inside_network}


def needs(*programs):
    """Skips (fails under CI) when a program is missing."""
    missing = [program for program in programs if not Path(program).exists()]
    if missing:
        message = f"{', '.join(missing)} not installed (apt-get install postgresql prometheus)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)


# PostgreSQL --------------------------------------------------------------------------------------------------

# Debian's PostgreSQL, whichever major version the release has (the newest when several are installed).
PG_BIN = max(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda path: int(path.parent.name)
             if path.parent.name.isdigit() else 0, default=Path("/usr/lib/postgresql/15/bin"))
PG_PASSWORD = "s3cret-Pa55word"


def as_owner(owner):
    """The command prefix that runs a program as owner (root cannot run initdb), or nothing when not root."""
    return ["runuser", "-u", owner, "--"] if os.geteuid() == 0 else []


@pytest.fixture(scope="session")
def postgresql():
    """A PostgreSQL server of its own on a free loopback port, with password sign-in, a table of issues and one
    of figures. Yields its address (postgresql://okr@127.0.0.1:PORT/metrics); the password is PG_PASSWORD."""
    needs(PG_BIN / "initdb", PG_BIN / "postgres")
    import psycopg

    owner = "nobody" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
    folder = Path(tempfile.mkdtemp(prefix="okr-pg-"))
    server = log = None
    try:
        port = free_port()
        (folder / "password").write_text(PG_PASSWORD)
        if os.geteuid() == 0:
            shutil.chown(folder, owner)
            shutil.chown(folder / "password", owner)
        prefix = as_owner(owner)
        subprocess.run([*prefix, str(PG_BIN / "initdb"), "-D", str(folder / "data"), "-U", "okr", "-A",
                        "scram-sha-256", "--pwfile", str(folder / "password"), "--no-sync"],
                       check=True, capture_output=True)
        log = open(folder / "postgresql.log", "wb")  # a file: a full pipe would stop the server
        server = subprocess.Popen([*prefix, str(PG_BIN / "postgres"), "-D", str(folder / "data"), "-p", str(port),
                                   "-h", "127.0.0.1", "-k", str(folder), "-F"], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                admin = psycopg.connect(host="127.0.0.1", port=port, user="okr", password=PG_PASSWORD,
                                        dbname="postgres", autocommit=True, connect_timeout=2)
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail(f"PostgreSQL did not start: {(folder / 'postgresql.log').read_text()[-2000:]}")
                time.sleep(0.1)
        with admin:
            admin.execute("CREATE DATABASE metrics")
        with psycopg.connect(host="127.0.0.1", port=port, user="okr", password=PG_PASSWORD, dbname="metrics",
                             autocommit=True) as db:
            db.execute("CREATE TABLE issues (id integer PRIMARY KEY, opened_at timestamptz NOT NULL, "
                       "closed_at timestamptz)")
            for number, opened, closed in ISSUES:
                db.execute("INSERT INTO issues VALUES (%s, %s, %s)", (number, opened, closed))
            db.execute("CREATE TABLE figures (name text PRIMARY KEY, amount numeric, label text)")
            db.execute("INSERT INTO figures VALUES ('revenue', 1234.50, '42.5'), ('words', NULL, 'many')")
            db.execute("CREATE SEQUENCE tickets")  # nextval() writes, in a SELECT the read check lets by
        yield f"postgresql://okr@127.0.0.1:{port}/metrics"
    finally:
        if server is not None:
            stop_process(server)
        if log is not None:
            log.close()
        shutil.rmtree(folder, ignore_errors=True)


# Prometheus ---------------------------------------------------------------------------------------------------

PROMETHEUS = Path("/usr/bin/prometheus")
PROMTOOL = Path("/usr/bin/promtool")
# The seeded quarter: a value per hour from its first hour to its last.
QUARTER_START = datetime(2026, 7, 1, tzinfo=timezone.utc)
QUARTER_END = datetime(2026, 10, 1, tzinfo=timezone.utc)


def seeded_value(moment):
    """The gauge okr_open_issues's value at an hour of the quarter: hours since its start, times 0.5."""
    return (moment - QUARTER_START) // timedelta(hours=1) * 0.5


def openmetrics():
    lines = ["# HELP okr_open_issues Open issues.", "# TYPE okr_open_issues gauge"]
    hour = QUARTER_START
    while hour < QUARTER_END:
        lines.append(f"okr_open_issues {seeded_value(hour)} {int(hour.timestamp())}")
        hour += timedelta(hours=1)
    lines += ["# HELP okr_requests Requests.", "# TYPE okr_requests gauge"]
    hour = QUARTER_START
    while hour < QUARTER_END:
        for instance, factor in (("a", 1), ("b", 2)):
            lines.append(f'okr_requests{{instance="{instance}"}} {factor * 100} {int(hour.timestamp())}')
        hour += timedelta(hours=6)
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="session")
def prometheus_server():
    """A Prometheus server on a free loopback port, its storage seeded (promtool) with a quarter of hourly
    values before it starts; yields its base URL."""
    needs(PROMETHEUS, PROMTOOL)
    folder = Path(tempfile.mkdtemp(prefix="okr-prometheus-"))
    server = log = None
    try:
        (folder / "seed.om").write_text(openmetrics())
        (folder / "data").mkdir()
        # Blocks spanning the quarter: promtool's default, a block per two hours, writes a thousand of them slowly.
        subprocess.run([str(PROMTOOL), "tsdb", "create-blocks-from", "openmetrics", "--quiet",
                        "--max-block-duration=2400h", str(folder / "seed.om"), str(folder / "data")],
                       check=True, capture_output=True)
        (folder / "prometheus.yml").write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
        port = free_port()
        log = open(folder / "prometheus.log", "wb")  # a file: a full pipe would stop the server
        server = subprocess.Popen([str(PROMETHEUS), f"--config.file={folder / 'prometheus.yml'}",
                                   f"--storage.tsdb.path={folder / 'data'}", "--storage.tsdb.retention.time=20y",
                                   f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                pytest.fail(f"Prometheus did not start: {(folder / 'prometheus.log').read_text()[-2000:]}")
            time.sleep(0.1)
        yield url
    finally:
        if server is not None:
            stop_process(server)
        if log is not None:
            log.close()
        shutil.rmtree(folder, ignore_errors=True)
