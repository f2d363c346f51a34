"""Operations: /healthz, failing disks and files, encoded slashes and OPTIONS (contract: Errors, Storage)."""
import json
import os
import sqlite3
import time
from contextlib import closing

import pytest
from werkzeug import Response

from helpers import (HttpResponse, assert_error, free_port, keep_file_permissions, make_cycle, start_service,
                     thread_connection)
from okr.rules.request_signature import authorization_header
from okr.clock import utc_now
from okr.db import READ_RECHECK_SECONDS

CYCLE_ID = "0f8fad5b-d9cb-469f-a165-70867728950e"


def count_cycles(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT count(*) FROM cycles").fetchone()[0]


def http_response(response):
    """An HttpResponse from a real server as a werkzeug Response, so that assert_error applies."""
    return Response(response.payload, status=response.status, headers=list(response.headers.items()))


# --- /healthz ----------------------------------------------------------------


def test_healthz_is_503_while_the_database_file_is_missing_and_200_once_it_is_back(app, client):
    assert client.get("/healthz").get_json() == {"status": "ok"}
    path = app.config["DATABASE"]
    os.rename(path, path + ".moved")
    body = assert_error(client.get("/healthz"), 503, "database")
    assert body["details"]["database"] == f"the database file {path} is missing"
    os.rename(path + ".moved", path)
    response = client.get("/healthz")
    assert (response.status_code, response.get_json()) == (200, {"status": "ok"})
    assert thread_connection(app) is not None  # it asked the connection the requests use


def test_healthz_is_503_when_the_file_is_not_a_database(app, client, runner):
    assert runner.invoke(args=["keys", "create", "--name", "k"]).exit_code == 0  # healthz stays open
    client.get("/healthz")
    path = app.config["DATABASE"]
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    with open(path + ".new", "wb") as f:
        f.write(b"not a database, " * 512)
    os.replace(path + ".new", path)
    body = assert_error(client.get("/healthz"), 503, "database")
    assert path in body["details"]["database"]
    assert "SELECT" not in body["details"]["database"]


# --- failures at a statement and at commit ------------------------------------


def test_a_full_disk_during_a_statement_is_507(app, client, caplog):
    client.get("/v1/cycles")  # opens this thread's connection
    db = thread_connection(app)
    db.execute(f"PRAGMA max_page_count = {db.execute('PRAGMA page_count').fetchone()[0]}")
    stored = 0
    for number in range(1000):
        response = client.post("/v1/cycles", json={"name": f"cycle {number} " + "x" * 180})
        if response.status_code != 200:
            break
        stored += 1
    body = assert_error(response, 507)
    assert "disk is full" in body["message"]
    assert count_cycles(app) == stored
    assert any(r.exc_info and "full" in str(r.exc_info[1]) for r in caplog.records)
    assert client.get("/v1/cycles").status_code == 200


def sqlite_error(code, name, message):
    error = sqlite3.OperationalError(message)
    error.sqlite_errorcode, error.sqlite_errorname = code, name
    return error


class CommitFails:
    """A thread connection whose COMMIT raises error."""

    def __init__(self, db, error):
        self.db, self.error = db, error

    def __getattr__(self, name):
        return getattr(self.db, name)

    def execute(self, sql, *args):
        if sql == "COMMIT":
            raise self.error
        return self.db.execute(sql, *args)


@pytest.mark.parametrize("error, status, message", [
    (sqlite_error(13, "SQLITE_FULL", "database or disk is full"), 507, "the disk is full"),
    (sqlite_error(5, "SQLITE_BUSY", "database is locked"), 503, "database busy, retry shortly"),
    (sqlite_error(522, "SQLITE_IOERR_SHORT_READ", "disk I/O error"), 500, "internal error"),
])
def test_a_failure_at_commit_answers_in_the_error_shape(app, client, caplog, error, status, message):
    app.config["PROPAGATE_EXCEPTIONS"] = False  # as served
    client.get("/v1/cycles")
    local = app.extensions["okr_connections"]
    real = local.db
    local.db = CommitFails(real, error)
    try:
        response = client.post("/v1/cycles", json={"name": "never stored"})
    finally:
        if local.db is not None:
            local.db = real
    body = assert_error(response, status)
    assert body == {"code": status, "message": message}
    assert response.headers["X-Content-Type-Options"] == "nosniff"  # a failed commit's answer is an answer too
    if status == 503:
        assert response.headers["Retry-After"] == "1"
    else:
        assert any(r.exc_info and r.exc_info[1] is error for r in caplog.records)
    assert count_cycles(app) == 0
    # An I/O error may leave the connection on a broken file: the next request opens another.
    assert (local.db is None) == (status == 500)
    assert client.post("/v1/cycles", json={"name": "later"}).status_code == 200


def test_the_document_gives_507_to_every_write_and_503_to_healthz(client):
    document = client.get("/v1/openapi.json").get_json()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in ("post", "put", "patch", "delete"):
                full = operation["responses"]["507"]
                assert full["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ApiError"}
            elif method != "parameters":
                assert "507" not in operation["responses"], (path, method)
    unhealthy = document["paths"]["/healthz"]["get"]["responses"]["503"]
    assert "missing" in unhealthy["description"] and "headers" not in unhealthy


# --- a database file that was unwritable for a while --------------------------


def read_only_copy(database, copy):
    """A copy of the live database, in WAL mode like it, that its owner cannot write."""
    with closing(sqlite3.connect(database)) as db:
        db.execute("VACUUM INTO ?", (str(copy),))
    with closing(sqlite3.connect(copy)) as db:
        db.execute("PRAGMA journal_mode = WAL")
    os.chmod(copy, 0o444)


@pytest.mark.slow
def test_writes_recover_by_themselves_once_the_database_file_is_writable_again(tmp_path):
    # Root ignores file modes; the interpreter lives under /root, so rather than
    # another user the server is root without that capability.
    popen = {"preexec_fn": keep_file_permissions} if os.geteuid() == 0 else {}
    database = tmp_path / "okr.db"
    process, http = start_service(free_port(), "--database", str(database), "--threads", "1", **popen)
    try:
        http.post("/v1/cycles", {"name": "before"}).ok()
        # The file is replaced by one the server may not write: it reopens it, read-only.
        read_only_copy(database, tmp_path / "copy.db")
        for suffix in ("-wal", "-shm"):
            os.remove(f"{database}{suffix}")
        os.replace(tmp_path / "copy.db", database)
        refused = http_response(http.post("/v1/cycles", {"name": "refused"}))
        body = assert_error(refused, 503)
        assert body["message"] == "the database file is not writable"
        assert refused.headers["Retry-After"] == "1"
        assert [c["name"] for c in http.get("/v1/cycles").ok()["cycles"]] == ["before"]
        # Fixed in place, so no reconnect on the file's identity. SQLite made the
        # companions it created meanwhile as unwritable as the database: fix them too.
        for suffix in ("", "-wal", "-shm"):
            os.chmod(f"{database}{suffix}", 0o600)
        http.post("/v1/cycles", {"name": "after"}).ok()
        # A worker that last looked at the file less than a second ago may still read the one
        # replaced (reads look at its identity once a second); past that, every worker reads the new one.
        time.sleep(READ_RECHECK_SECONDS)
        for _ in range(6):  # so that each worker answers at least once, most likely
            assert [c["name"] for c in http.get("/v1/cycles").ok()["cycles"]] == ["before", "after"]
    finally:
        process.terminate()
        log = process.communicate(timeout=10)[0].decode()
    assert "readonly database" in log


# --- encoded slashes ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/v1%2Fcycles", "/v1%2fcycles", "/v1/cycles%2f{id}", "/v1%2Fopenapi.json"])
def test_an_encoded_slash_in_the_path_is_404_on_a_real_server(client, live_server, path):
    cycle = make_cycle(client)
    response = http_response(live_server.get(path.format(id=cycle["id"])))
    assert_error(response, 404)


@pytest.mark.slow
def test_an_encoded_slash_is_404_after_auth_and_outside_the_query(app, client, runner):
    result = runner.invoke(args=["keys", "create", "--name", "k", "--json"])
    key = json.loads(result.output)
    signed = {"Authorization": authorization_header(key["credential"], key["secret"], utc_now())}
    assert_error(client.get("/v1%2Fcycles"), 401)  # auth first, as for any unknown /v1 path
    assert_error(client.get("/v1%2Fcycles", headers=signed), 404)
    assert client.get("/v1/cycles?page_size=1&x=%2F", headers=signed).status_code == 200


# --- OPTIONS -----------------------------------------------------------------


@pytest.mark.parametrize("path, allowed", [
    ("/v1/cycles", {"GET", "POST"}),
    (f"/v1/objectives/{CYCLE_ID}", {"GET", "POST", "DELETE"}),
    ("/healthz", {"GET"}),
    ("/v1/openapi.json", {"GET"}),
])
@pytest.mark.slow
def test_options_is_204_with_allow_and_no_body(client, live_server, path, allowed):
    for response in (client.options(path), live_server.request("OPTIONS", path)):
        if isinstance(response, HttpResponse):
            status, headers, payload = response.status, response.headers, response.payload
        else:
            status, headers, payload = response.status_code, response.headers, response.get_data()
        assert status == 204
        assert allowed <= {m.strip() for m in headers["Allow"].split(",")}
        assert "Content-Type" not in headers
        assert payload == b""


@pytest.mark.slow
def test_options_on_an_unknown_path_is_404_and_needs_auth_first_on_v1(client, runner):
    assert_error(client.options("/v1/nothing"), 404)
    nothing = client.options("/nothing")  # outside /v1, a page (tests/web/test_error_pages.py)
    assert nothing.status_code == 404 and nothing.mimetype == "text/html"
    assert runner.invoke(args=["keys", "create", "--name", "k"]).exit_code == 0
    assert_error(client.options("/v1/cycles"), 401)
    assert client.options("/healthz").status_code == 204
