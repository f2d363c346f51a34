"""okr serve at start: a port in use, what it logs, and the access log."""
import io
import logging
import re
import signal
import socket
import sqlite3
import time
from types import SimpleNamespace

import pytest
from werkzeug.test import Client

import helpers
import okr.server.http_server as http_server
from helpers import free_port, start_service
from okr import create_app
from okr.__main__ import parse_options
from okr.accounts import passwords
from okr.server.request_log import AccessLog
from okr.server.http_server import make_server
from okr.db import init_db, transaction
from okr.store import users

ACCESS_LINE = re.compile(r"okr\.access: 127\.0\.0\.1 GET /v1/cycles\?page_size=5 200 \d+\.\d ms$", re.MULTILINE)


# --- a port in use ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_port_in_use_ends_with_one_line_and_creates_no_database(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = helpers.run_okr("--port", str(port), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"okr: port {port} is in use; pass --port"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_an_address_that_is_not_this_machines_is_named(tmp_path):
    # 192.0.2.0/24 is for documentation: never an address of this machine. A key first, so
    # that serving there is not refused for want of one.
    assert helpers.run_okr("init-db", cwd=tmp_path).returncode == 0
    assert helpers.run_okr("keys", "create", "--name", "k", cwd=tmp_path).returncode == 0
    result = helpers.run_okr("--host", "192.0.2.1", "--port", str(free_port()), cwd=tmp_path)
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("okr: cannot listen on 192.0.2.1 port ") and "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_refused_non_loopback_host_creates_no_database(tmp_path):
    result = helpers.run_okr("--host", "0.0.0.0", "--port", str(free_port()), cwd=tmp_path)
    assert result.returncode == 1 and "okr keys create" in result.stderr
    assert list(tmp_path.iterdir()) == []


def give_a_password(tmp_path):
    """A database whose one user has a password, and no API key."""
    app = create_app({"DATABASE": tmp_path / "okr.db"})
    with app.app_context():
        init_db()
        with transaction() as db:
            users.set_password(db, users.create(db, "Maya", "maya@example.com", "admin"),
                               passwords.hash_password("correct horse battery"))


@pytest.mark.slow
def test_a_password_alone_lets_the_server_listen_beyond_loopback(tmp_path):
    give_a_password(tmp_path)
    result = helpers.run_okr("--database", "okr.db", "--host", "192.0.2.1", "--port", str(free_port()), cwd=tmp_path)
    [line] = result.stderr.splitlines()
    assert line.startswith("okr: cannot listen on 192.0.2.1 port "), line  # not refused for want of auth


@pytest.mark.slow
def test_a_database_from_before_passwords_with_a_key_is_served_beyond_loopback(tmp_path):
    assert helpers.run_okr("init-db", cwd=tmp_path).returncode == 0
    assert helpers.run_okr("keys", "create", "--name", "k", cwd=tmp_path).returncode == 0
    with sqlite3.connect(tmp_path / "okr.db") as db:  # as version 5 had it: no password column yet
        db.execute("DROP INDEX users_with_password")
        db.execute("ALTER TABLE users DROP COLUMN password_hash")
    result = helpers.run_okr("--host", "192.0.2.1", "--port", str(free_port()), cwd=tmp_path)
    [line] = result.stderr.splitlines()
    assert line.startswith("okr: cannot listen on 192.0.2.1 port "), line


# --- what the server logs at start, and per request -------------------------------------------


def warnings_in(output):
    """The log's WARNING lines, less waitress's note that a request waited for a free thread ("Task queue depth
    is 1"), which a loaded machine (the tests of other xdist workers) can bring about at any request."""
    return [line for line in output.splitlines() if " WARNING " in line and " WARNING waitress.queue: " not in line]


def serve_and_stop(tmp_path, *args, env=None):
    """Starts a server, asks it one question, stops it; returns its output."""
    process, http = start_service(free_port(), "--database", str(tmp_path / "okr.db"), *args,
                                  env={**helpers.ENV_WITHOUT_OKR, **(env or {})}, cwd=tmp_path)
    try:
        http.get("/v1/cycles?page_size=5")  # a 401 once a key exists
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=15)[0].decode()
    assert process.returncode == 0, output
    return output


@pytest.mark.slow
def test_the_start_names_the_address_the_database_and_an_open_api(tmp_path):
    output = serve_and_stop(tmp_path, "--database", "okr.db")
    assert re.search(r"INFO \S+: listening on http://127\.0\.0\.1:\d+$", output, re.MULTILINE), output
    assert f"INFO okr: using database {tmp_path / 'okr.db'}\n" in output
    [warning] = warnings_in(output)
    assert "no API key or password exists" in warning and "anyone who can reach them on this machine" in warning
    assert "okr keys create" in warning


@pytest.mark.slow
def test_no_warning_once_a_key_exists(tmp_path):
    assert helpers.run_okr("init-db", cwd=tmp_path).returncode == 0
    assert helpers.run_okr("keys", "create", "--name", "k", cwd=tmp_path).returncode == 0
    output = serve_and_stop(tmp_path)
    assert warnings_in(output) == [] and "listening on" in output, output


@pytest.mark.slow
def test_each_request_is_logged_by_default(tmp_path):
    output = serve_and_stop(tmp_path)
    assert len(ACCESS_LINE.findall(output)) == 1, output


@pytest.mark.parametrize("args, env", [(["--no-access-log"], None), ([], {"OKR_ACCESS_LOG": "0"}),
                                       ([], {"OKR_ACCESS_LOG": "off"})])
@pytest.mark.slow
def test_the_access_log_can_be_turned_off(tmp_path, args, env):
    output = serve_and_stop(tmp_path, *args, env=env)
    assert "okr.access" not in output and "listening on" in output


@pytest.mark.slow
def test_the_access_log_flag_beats_the_environment(tmp_path):
    output = serve_and_stop(tmp_path, "--access-log", env={"OKR_ACCESS_LOG": "0"})
    assert len(ACCESS_LINE.findall(output)) == 1, output


@pytest.mark.slow
def test_a_bad_access_log_setting_is_refused_before_anything(tmp_path):
    result = helpers.run_okr("--port", free_port(), cwd=tmp_path, env={"OKR_ACCESS_LOG": "maybe"})
    assert result.returncode == 1
    assert result.stderr.splitlines() == ["okr: access log must be on or off (1 or 0), not 'maybe'"]
    assert list(tmp_path.iterdir()) == []


def test_the_access_log_is_the_servers_not_the_apps(app, caplog, capfd):
    # An app embedded in another program logs nothing of its own per request.
    with caplog.at_level(logging.INFO):
        assert app.test_client().get("/healthz").status_code == 200
    assert caplog.records == [] and capfd.readouterr() == ("", "")
    stream = io.StringIO()
    access_log = AccessLog(stream)
    assert Client(access_log.wrap(app)).get("/healthz?x=1").status_code == 200
    access_log.flush()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO okr\.access: - GET /healthz\?x=1 200 \d+\.\d ms\n",
                        stream.getvalue())


def test_a_requests_thread_only_queues_its_line(app):
    stream = io.StringIO()
    access_log = AccessLog(stream, flush_seconds=3600)
    client = Client(access_log.wrap(app))
    for path in ("/healthz", "/v1/nowhere"):
        client.get(path)
    assert stream.getvalue() == ""
    access_log.flush()
    first, second = stream.getvalue().splitlines()
    # werkzeug's test client has no address: "-".
    assert " INFO okr.access: - GET /healthz 200 " in first and " INFO okr.access: - GET /v1/nowhere 404 " in second


def test_the_log_never_holds_an_invitations_token(app):
    stream = io.StringIO()
    access_log = AccessLog(stream, flush_seconds=3600)
    client = Client(access_log.wrap(app))
    token = "N0AERpUfCX6uINEZfL46YcLWHMraM1K_ix_64Qi_vE8"
    client.get(f"/invitations/{token}")
    client.get(f"/okr/invitations/{token}?x=1")
    access_log.flush()
    assert token not in stream.getvalue()
    first, second = stream.getvalue().splitlines()
    assert " GET /invitations/[token] " in first and " GET /okr/invitations/[token]?x=1 " in second


def test_the_lines_are_written_while_serving(app):
    stream = io.StringIO()
    access_log = AccessLog(stream, flush_seconds=0.05)
    Client(access_log.wrap(app)).get("/healthz")
    deadline = time.monotonic() + 5
    while "GET /healthz 200" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "GET /healthz 200" in stream.getvalue()


def test_a_log_read_too_slowly_drops_lines_and_says_how_many(app):
    stream = io.StringIO()
    access_log = AccessLog(stream, flush_seconds=3600, queue_limit=2)
    client = Client(access_log.wrap(app))
    for _ in range(5):
        client.get("/healthz")
    access_log.flush()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and all(" INFO okr.access: - GET /healthz 200 " in line for line in lines[:2])
    assert lines[2].endswith(" WARNING okr.access: 3 access log lines dropped: the log was read more slowly "
                             "than requests came")


def test_make_server_wraps_the_app_only_when_the_access_log_is_on(tmp_path, monkeypatch):
    served = []

    def create_server(application, **settings):
        served.append(application)
        return SimpleNamespace(maintenance=None)

    monkeypatch.setattr(http_server, "create_server", create_server)
    for args, wrapped in ((["--port", "0"], True), (["--port", "0", "--no-access-log"], False)):
        app = create_app({**parse_options(args)[0], "DATABASE": tmp_path / "okr.db"})
        make_server(app)
        assert (served.pop() is not app) == wrapped
