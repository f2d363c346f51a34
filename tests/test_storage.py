"""SQLite storage: schema, pragmas, file permissions, transactions and locking."""
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from contextlib import closing, contextmanager

import pytest
from helpers import (APP_PY, assert_error, file_mode, free_port, make_cycle, make_key_result, make_objective,
                     start_service, thread_connection)
from marshmallow import ValidationError

import okr.api.cycles
import okr.clock
import okr.db
import okr.api.objectives
from okr import create_app
from okr.db import get_db, init_db
from okr.store.schema import connect

UUID_A = "0f8fad5b-d9cb-469f-a165-70867728950e"
NOW = "2026-01-01T00:00:00Z"


def db_path(app):
    return app.config["DATABASE"]


def count(app, table):
    with sqlite3.connect(db_path(app)) as db:
        return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


# --- schema and file ---------------------------------------------------------


def test_init_db_twice_keeps_data(app, client):
    cycle = make_cycle(client)
    objective = make_objective(client, cycle["id"])
    make_key_result(client, objective["id"])
    with app.app_context():
        init_db()
        init_db()
    assert client.get(f"/v1/cycles/{cycle['id']}").get_json() == cycle
    assert client.get(f"/v1/objectives/{objective['id']}").status_code == 200
    assert count(app, "key_results") == 1


def test_restart_on_same_file_keeps_data(app, client):
    cycle = make_cycle(client, "kept")
    restarted = create_app({"TESTING": True, "DATABASE": db_path(app)})
    with restarted.app_context():
        init_db()
    response = restarted.test_client().get(f"/v1/cycles/{cycle['id']}")
    assert response.status_code == 200
    assert response.get_json() == cycle


def test_database_file_is_created_owner_only(tmp_path):
    path = tmp_path / "fresh.db"
    app = create_app({"TESTING": True, "DATABASE": path})
    with app.app_context():
        init_db()
    assert path.exists()
    assert file_mode(path) == 0o600


def test_wal_file_is_owner_only_too(app, client):
    make_cycle(client)
    # Keep a connection open so that the -wal file is not removed on close.
    keep = sqlite3.connect(db_path(app))
    keep.execute("SELECT count(*) FROM cycles").fetchone()
    try:
        wal = db_path(app) + "-wal"
        assert os.path.exists(wal)
        assert file_mode(wal) == 0o600
    finally:
        keep.close()


def test_journal_mode_is_wal(app):
    with sqlite3.connect(db_path(app)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_request_connection_has_foreign_keys_and_busy_timeout(app):
    with app.test_request_context("/v1/cycles", method="GET"):
        db = get_db()
        assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert db.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_connect_turns_foreign_keys_on(app):
    db = connect(db_path(app), 5000)
    try:
        assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    finally:
        db.close()


# --- CHECK and foreign key constraints on raw SQL ----------------------------


@pytest.fixture
def raw(app):
    """A connection like the service's, with one cycle 'c' and one objective 'o'."""
    db = connect(db_path(app), 5000)
    db.execute("INSERT INTO cycles (id, name, created_at) VALUES ('c', 'Q1', ?)", (NOW,))
    db.execute(
        "INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, created_at, modified_at)"
        " VALUES ('o', 'O', 0, 0, 'c', ?, ?)",
        (NOW, NOW),
    )
    yield db
    db.close()


def insert_objective(db, **fields):
    row = {"id": "o2", "name": "O2", "is_company": 0, "is_personal": 0, "cycle_id": "c",
           "created_at": NOW, "modified_at": NOW}
    row.update(fields)
    names = ", ".join(row)
    db.execute(f"INSERT INTO objectives ({names}) VALUES ({', '.join('?' * len(row))})",
               tuple(row.values()))


def insert_key_result(db, type, low, high):
    db.execute(
        "INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value,"
        " target_value_min, target_value_max, created_at, modified_at)"
        " VALUES ('k', 'o', 'c', 'K', ?, '0.50', '0.00', ?, ?, ?, ?)",
        (type, low, high, NOW, NOW),
    )


def test_schema_accepts_a_good_objective(raw):
    insert_objective(raw)


@pytest.mark.parametrize(
    "fields",
    [
        {"is_company": 1, "is_personal": 1},
        {"is_company": 2},
        {"is_personal": -1},
        {"name": ""},
        {"name": "x" * 501},
        {"description": "x" * 10_001},
        {"parent_objective_id": "o2"},
        {"cycle_id": "no-such-cycle"},
        {"team_id": "no-such-team"},
        {"assignee_id": "no-such-user"},
        {"parent_objective_id": "no-such-objective"},
        {"id": "o"},
    ],
)
def test_schema_rejects_bad_objective_rows(raw, fields):
    with pytest.raises(sqlite3.IntegrityError):
        insert_objective(raw, **fields)


@pytest.mark.parametrize(
    "type, low, high",
    [("positive", "1.00", None), ("negative", "1.00", None), ("range", "1.00", "2.00"),
     ("baseline", None, None), ("milestone", "1.00", None)],
)
def test_schema_accepts_good_key_results(raw, type, low, high):
    insert_key_result(raw, type, low, high)


@pytest.mark.parametrize(
    "type, low, high",
    [
        ("sideways", None, None),
        ("", None, None),
        ("positive", None, None),
        ("positive", "1.00", "2.00"),
        ("negative", None, None),
        ("negative", "1.00", "2.00"),
        ("range", "1.00", None),
        ("range", None, "2.00"),
        ("baseline", "1.00", None),
        ("baseline", None, "1.00"),
        ("milestone", "2.00", None),
        ("milestone", "1.00", "1.00"),
        ("milestone", None, None),
    ],
)
def test_schema_rejects_bad_key_result_targets(raw, type, low, high):
    with pytest.raises(sqlite3.IntegrityError):
        insert_key_result(raw, type, low, high)


def test_schema_rejects_key_result_of_missing_objective(raw):
    with pytest.raises(sqlite3.IntegrityError):
        raw.execute(
            "INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value,"
            " created_at, modified_at) VALUES ('k', 'nope', 'c', 'K', 'baseline', '0.50', '0.00', ?, ?)",
            (NOW, NOW),
        )


def test_schema_rejects_duplicate_email_ignoring_case(raw):
    raw.execute("INSERT INTO users (id, name, email, created_at) VALUES ('u1', 'A', 'a@x.io', ?)", (NOW,))
    with pytest.raises(sqlite3.IntegrityError):
        raw.execute("INSERT INTO users (id, name, email, created_at) VALUES ('u2', 'B', 'A@X.IO', ?)",
                    (NOW,))


# --- one request, one transaction --------------------------------------------


def test_failure_after_insert_stores_nothing(app, client, monkeypatch):
    def broken(row):
        raise RuntimeError("after the insert")

    monkeypatch.setattr(okr.api.cycles, "cycle_json", broken)
    assert_error(client.post("/v1/cycles", json={"name": "Q1"}), 500)
    assert count(app, "cycles") == 0


def test_database_error_after_insert_stores_nothing(app, client, monkeypatch):
    cycle = make_cycle(client)

    def broken(row):
        raise sqlite3.DatabaseError("disk I/O error")

    monkeypatch.setattr(okr.api.objectives, "objective_json", broken)
    body = {"name": "O", "cycle_id": cycle["id"], "is_company": False, "is_personal": False}
    assert_error(client.post("/v1/objectives", json=body), 500)
    assert count(app, "objectives") == 0


def test_failed_update_leaves_row_unchanged(app, client, monkeypatch):
    cycle = make_cycle(client, "before")

    def broken(row):
        raise RuntimeError("after the update")

    monkeypatch.setattr(okr.api.cycles, "cycle_json", broken)
    assert_error(client.post(f"/v1/cycles/{cycle['id']}", json={"name": "after"}), 500)
    monkeypatch.undo()
    assert client.get(f"/v1/cycles/{cycle['id']}").get_json()["name"] == "before"


def test_failed_delete_keeps_everything(app, client, monkeypatch):
    cycle = make_cycle(client)
    objective = make_objective(client, cycle["id"])
    make_key_result(client, objective["id"])

    def broken():
        raise RuntimeError("after the delete")

    monkeypatch.setattr(okr.api.cycles, "deleted", broken)
    assert_error(client.delete(f"/v1/cycles/{cycle['id']}"), 500)
    assert (count(app, "cycles"), count(app, "objectives"), count(app, "key_results")) == (1, 1, 1)


def test_client_error_after_a_write_stores_nothing(app, client):
    @app.post("/v1/write-then-reject")
    def write_then_reject():
        get_db().execute("INSERT INTO cycles (id, name, created_at) VALUES (?, 'x', ?)", (UUID_A, NOW))
        raise ValidationError({"name": "rejected after the write"})

    assert_error(client.post("/v1/write-then-reject"), 400, "name")
    assert count(app, "cycles") == 0


def test_abort_after_a_write_stores_nothing(app, client):
    from flask import abort

    @app.post("/v1/write-then-404")
    def write_then_404():
        get_db().execute("INSERT INTO cycles (id, name, created_at) VALUES (?, 'x', ?)", (UUID_A, NOW))
        abort(404)

    assert_error(client.post("/v1/write-then-404"), 404)
    assert count(app, "cycles") == 0


def test_successful_write_is_committed_and_visible_to_others(app, client):
    cycle = make_cycle(client)
    with sqlite3.connect(db_path(app)) as other:
        assert other.execute("SELECT name FROM cycles WHERE id = ?", (cycle["id"],)).fetchone() == ("Q1",)


# --- locking -----------------------------------------------------------------


def hold_write_lock(path, seconds, locked):
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        locked.set()
        time.sleep(seconds)
        other.execute("COMMIT")
    finally:
        other.close()


@contextmanager
def write_lock_held(app, seconds):
    """Another connection holds the write lock for `seconds` while the block runs."""
    locked = threading.Event()
    holder = threading.Thread(target=hold_write_lock, args=(db_path(app), seconds, locked))
    holder.start()
    try:
        assert locked.wait(5)
        yield
    finally:
        holder.join()


def test_write_waits_for_a_held_write_lock(app, client):
    with write_lock_held(app, 0.3):
        started = time.monotonic()
        response = client.post("/v1/cycles", json={"name": "waited"})
        waited = time.monotonic() - started
    assert response.status_code == 200, response.get_data(as_text=True)
    assert waited >= 0.2
    assert count(app, "cycles") == 1


def test_read_is_not_blocked_by_a_held_write_lock(app, client):
    make_cycle(client)
    with write_lock_held(app, 1.0):
        started = time.monotonic()
        response = client.get("/v1/cycles")
        elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert len(response.get_json()["cycles"]) == 1
    assert elapsed < 0.5


def test_write_lock_held_past_busy_timeout_is_a_json_error(app, client):
    app.config["BUSY_TIMEOUT_MS"] = 100
    with write_lock_held(app, 1.0):
        response = client.post("/v1/cycles", json={"name": "late"})
    assert_error(response, 503)
    assert response.headers["Retry-After"] == "1"
    assert count(app, "cycles") == 0


# --- key results follow their objective's cycle; indexes for every cascade and list --------


def test_schema_refuses_a_key_result_outside_its_objectives_cycle(app, client):
    cycle, other = make_cycle(client), make_cycle(client, "Q2")
    objective = make_objective(client, cycle["id"])
    with closing(connect(app.config["DATABASE"], 1000)) as db:
        with pytest.raises(sqlite3.IntegrityError, match="cycle_id"):
            db.execute(
                "INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value,"
                " created_at, modified_at) VALUES ('k', ?, ?, 'k', 'baseline', '0.50', '0.00', 'x', 'x')",
                (objective["id"], other["id"]))
        kr = make_key_result(client, objective["id"])
        with pytest.raises(sqlite3.IntegrityError, match="cycle_id"):
            db.execute("UPDATE key_results SET cycle_id = ? WHERE id = ?", (other["id"], kr["id"]))


def test_moving_an_objective_moves_its_key_results_in_the_schema(app, client):
    cycle, other = make_cycle(client), make_cycle(client, "Q2")
    objective = make_objective(client, cycle["id"])
    kr = make_key_result(client, objective["id"])
    with closing(connect(app.config["DATABASE"], 1000)) as db:
        db.execute("UPDATE objectives SET cycle_id = ? WHERE id = ?", (other["id"], objective["id"]))
        assert db.execute("SELECT cycle_id FROM key_results WHERE id = ?", (kr["id"],)).fetchone()[0] == other["id"]


def test_every_foreign_key_column_leads_an_index(app):
    with closing(connect(app.config["DATABASE"], 1000)) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            leading = {db.execute(f"PRAGMA index_info({index[1]!r})").fetchone()[2]
                       for index in db.execute(f"PRAGMA index_list({table!r})")}
            # An INTEGER PRIMARY KEY is the rowid itself, the table's own order (evidence.checkin_seq).
            leading |= {column[1] for column in db.execute(f"PRAGMA table_info({table!r})")
                        if column[5] == 1 and column[2].upper() == "INTEGER"}
            for foreign_key in db.execute(f"PRAGMA foreign_key_list({table!r})"):
                assert foreign_key[3] in leading, (table, foreign_key[3])


NULLABLE_REFERENCE_INDEXES = {
    "objectives_with_team": "team_id",
    "objectives_with_assignee": "assignee_id",
    "objectives_with_parent": "parent_objective_id",
}


# Deleting each of these parents runs the SET NULL action on one nullable reference.
SET_NULL_ACTIONS = {
    "objectives_with_team": ("INSERT INTO teams (id, name, created_at) VALUES ('p', 'T', ?)",
                             "DELETE FROM teams WHERE id = 'p'"),
    "objectives_with_assignee": ("INSERT INTO users (id, name, email, is_active, created_at)"
                                 " VALUES ('p', 'U', 'u@example.com', 1, ?)", "DELETE FROM users WHERE id = 'p'"),
    "objectives_with_parent": ("INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, created_at,"
                               " modified_at) VALUES ('p', 'O', 0, 0, 'c', ?1, ?1)",
                               "DELETE FROM objectives WHERE id = 'p'"),
}


def vm_steps(db, sql):
    """How many SQLite virtual machine instructions a statement takes, its foreign-key actions included."""
    steps = 0

    def count():
        nonlocal steps
        steps += 1

    db.set_progress_handler(count, 1)
    try:
        db.execute(sql)
    finally:
        db.set_progress_handler(None, 1)
    return steps


@pytest.mark.parametrize("index", NULLABLE_REFERENCE_INDEXES)
def test_nullable_references_are_indexed_only_where_set(raw, index):
    partial = {row[1]: row[4] for row in raw.execute("PRAGMA index_list('objectives')")}
    assert partial[index] == 1
    create_parent, delete_parent = SET_NULL_ACTIONS[index]
    raw.execute(create_parent, (NOW,))
    raw.executemany(
        "INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, created_at, modified_at)"
        " VALUES (?, 'O', 0, 0, 'c', ?, ?)", [(f"o{i}", NOW, NOW) for i in range(2000)])
    # The SET NULL action finds the (no) referencing rows through the partial
    # index: a few dozen steps, where a scan of 2,000 objectives takes 14,000.
    assert vm_steps(raw, delete_parent) < 500


def test_init_db_replaces_the_full_indexes_of_earlier_versions(app, client):
    objective = make_objective(client, make_cycle(client)["id"])
    with closing(connect(app.config["DATABASE"], 1000)) as db:
        for index, column in NULLABLE_REFERENCE_INDEXES.items():
            db.execute(f"DROP INDEX {index}")
            db.execute(f"CREATE INDEX {index.replace('_with_', '_by_')} ON objectives ({column})")
    with app.app_context():
        init_db()
    with closing(connect(app.config["DATABASE"], 1000)) as db:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'objectives'")}
    assert set(NULLABLE_REFERENCE_INDEXES) <= names
    assert not names & {"objectives_by_team", "objectives_by_assignee", "objectives_by_parent"}
    assert client.get(f"/v1/objectives/{objective['id']}").get_json() == objective


@pytest.mark.parametrize("sql", [
    "SELECT * FROM objectives WHERE cycle_id = ? AND seq > ? ORDER BY seq LIMIT ?",
    "SELECT * FROM key_results WHERE cycle_id = ? AND seq > ? ORDER BY seq LIMIT ?",
    "SELECT * FROM key_results WHERE objective_id = ? AND seq > ? ORDER BY seq LIMIT ?",
])
def test_list_queries_search_an_index_without_sorting(app, sql):
    with closing(connect(app.config["DATABASE"], 1000)) as db:
        plan = " ".join(row[3] for row in db.execute("EXPLAIN QUERY PLAN " + sql, ("x", 0, 101)))
    assert "SEARCH" in plan and "USING INDEX" in plan and "TEMP B-TREE" not in plan, plan


# --- new ids --------------------------------------------------------------------------------


def test_new_ids_are_distinct_lowercase_uuid4s_in_every_thread():
    ids = []

    def make_ids():
        ids.extend(okr.clock.new_id() for _ in range(1000))

    threads = [threading.Thread(target=make_ids) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(ids)) == 4000
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122


# --- the per-thread connection ------------------------------------------------------------


def seed_cycle(app, objectives, key_results_each):
    """A cycle written straight with SQL, big enough that deleting it fills the WAL past a checkpoint."""
    cycle = make_cycle(app.test_client())
    with closing(connect(app.config["DATABASE"], 1000)) as db:
        ids = [f"o{i}" for i in range(objectives)]
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, created_at, modified_at)"
            " VALUES (?, 'O', 0, 0, ?, ?, ?)", [(i, cycle["id"], NOW, NOW) for i in ids])
        db.executemany(
            "INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value,"
            " target_value_min, created_at, modified_at) VALUES (?, ?, ?, 'K', 'positive', '0.50', '0.00',"
            " '10.00', ?, ?)",
            [(f"{i}k{n}", i, cycle["id"], NOW, NOW) for i in ids for n in range(key_results_each)])
        db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return cycle


def file_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_a_big_cycle_delete_answers_before_its_checkpoint(app, client, monkeypatch):
    cycle = seed_cycle(app, 8000, 3)  # its delete writes some 1,600 pages
    before = file_digest(db_path(app))
    release, done, at_start = threading.Event(), threading.Event(), []
    real_checkpoint = okr.db.checkpoint

    def held_checkpoint(path, logger):
        at_start.append(file_digest(path))
        release.wait(5)
        real_checkpoint(path, logger)
        done.set()

    monkeypatch.setattr(okr.db, "checkpoint", held_checkpoint)
    # The answer comes while the checkpoint is held back, so it never waits for one.
    assert client.delete(f"/v1/cycles/{cycle['id']}").status_code == 200
    assert not done.is_set()
    assert count(app, "objectives") == count(app, "key_results") == 0
    release.set()
    assert done.wait(10)
    # The commit left the database file as it was; the background checkpoint then wrote it.
    assert at_start == [before]
    assert file_digest(db_path(app)) != before
    assert thread_connection(app).execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000


def test_a_failed_bulk_commit_restores_the_automatic_checkpoint(app, client):
    cycle = seed_cycle(app, 10, 1)
    app.config["PROPAGATE_EXCEPTIONS"] = False  # as served: a failing commit is a 500, not a test crash
    client.get("/v1/cycles")
    local = app.extensions["okr_connections"]

    class CommitFails:
        def __init__(self, db):
            self.db = db

        def __getattr__(self, name):
            return getattr(self.db, name)

        def execute(self, sql, *args):
            if sql == "COMMIT":
                raise sqlite3.OperationalError("disk I/O error")
            return self.db.execute(sql, *args)

    real = local.db
    local.db = CommitFails(real)
    try:
        assert_error(client.delete(f"/v1/cycles/{cycle['id']}"), 500)
    finally:
        local.db = real
    assert real.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    assert count(app, "objectives") == 10


def test_small_deletes_and_other_writes_leave_the_checkpoint_to_sqlite(app, client, monkeypatch):
    calls = []
    monkeypatch.setattr(okr.db, "checkpoint", lambda path, logger: calls.append(path))
    assert client.delete(f"/v1/cycles/{seed_cycle(app, 100, 3)['id']}").status_code == 200
    assert client.post("/v1/cycles", json={"name": "small"}).status_code == 200
    assert client.delete(f"/v1/objectives/{make_objective(client, make_cycle(client)['id'])['id']}").status_code == 200
    assert calls == []
    assert thread_connection(app).execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000


def test_a_background_checkpoint_on_a_vanished_file_is_logged_and_creates_none(app, tmp_path, caplog):
    vanished = tmp_path / "gone.db"
    okr.db.checkpoint(str(vanished), app.logger)
    assert "checkpoint after a bulk delete failed" in caplog.text
    assert not vanished.exists()


@pytest.mark.parametrize("method, path, body", [
    ("GET", "/v1/cycles", None), ("GET", "/v1/cycles/nope", None), ("PUT", "/v1/cycles", None),
    ("POST", "/v1/cycles", b"{bad json"), ("POST", "/v1/cycles", b"x" * (1024 * 1024 + 1)),
    ("POST", "/v1/cycles", b'{"name": "ok"}'), ("DELETE", "/v1/cycles/nope", None), ("HEAD", "/v1/cycles", None),
])
def test_no_request_leaves_its_threads_connection_in_a_transaction(app, client, method, path, body):
    client.get("/v1/cycles")  # opens this thread's connection
    client.open(path, method=method, data=body)
    assert thread_connection(app).in_transaction is False


def test_a_401_leaves_no_transaction_open(app, client, runner):
    client.get("/v1/cycles")
    assert runner.invoke(args=["keys", "create", "--name", "k"]).exit_code == 0
    for method in ("GET", "POST", "DELETE"):
        assert client.open("/v1/cycles", method=method).status_code == 401
        assert thread_connection(app).in_transaction is False


def replace_database_file(app, tmp_path, cycle_name):
    """Replaces the app's database with another holding one cycle, as a careful operator would."""
    other = create_app({"TESTING": True, "DATABASE": tmp_path / "other.db"})
    with other.app_context():
        init_db()
    other.test_client().post("/v1/cycles", json={"name": cycle_name})
    with closing(connect(tmp_path / "other.db", 1000)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    # Companions and all (okr restore does it for you).
    for suffix in ("-wal", "-shm"):
        os.remove(str(app.config["DATABASE"]) + suffix)
    os.replace(tmp_path / "other.db", app.config["DATABASE"])


def cycle_names(client):
    return [c["name"] for c in client.get("/v1/cycles").get_json()["cycles"]]


def test_a_database_file_replaced_under_the_server_is_reopened_by_the_next_write(app, client, tmp_path):
    client.post("/v1/cycles", json={"name": "old file"})
    replace_database_file(app, tmp_path, "new file")
    assert client.post("/v1/cycles", json={"name": "written"}).status_code == 200
    assert cycle_names(client) == ["new file", "written"]


def test_reads_notice_a_replaced_database_file_within_a_second(app, client, tmp_path, monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(okr.db, "monotonic", lambda: now[0])
    client.post("/v1/cycles", json={"name": "old file"})
    replace_database_file(app, tmp_path, "new file")
    assert cycle_names(client) == ["old file"]
    now[0] += okr.db.READ_RECHECK_SECONDS
    assert cycle_names(client) == ["new file"]


def test_a_deleted_database_file_is_an_error_not_a_silent_loss(app, client):
    client.post("/v1/cycles", json={"name": "q"})
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(str(app.config["DATABASE"]) + suffix):
            os.remove(str(app.config["DATABASE"]) + suffix)
    assert_error(client.post("/v1/cycles", json={"name": "lost?"}), 500)
    assert not os.path.exists(app.config["DATABASE"])


def test_the_wal_is_kept_small_between_checkpoints(app):
    with closing(connect(app.config["DATABASE"], 1000)) as db:
        assert db.execute("PRAGMA journal_size_limit").fetchone()[0] == 16 * 1024 * 1024


# --- restore -----------------------------------------------------------------------------


@pytest.mark.slow
def test_restore_after_an_unclean_stop_gives_exactly_the_backup(tmp_path):
    database, copy = tmp_path / "live.db", tmp_path / "backup.db"
    # its own process group, so that the server and its background process die together
    process, http = start_service(free_port(), "--database", str(database), start_new_session=True)
    try:
        kept = http.post("/v1/cycles", {"name": "kept"}).ok()
        result = subprocess.run([sys.executable, str(APP_PY), "--database", str(database), "backup", str(copy)],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
        for i in range(50):
            http.post("/v1/cycles", {"name": f"after backup {i}"}).ok()
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # an unclean stop: the WAL stays behind
        process.communicate(timeout=15)
    assert os.path.exists(str(database) + "-wal")
    result = subprocess.run([sys.executable, str(APP_PY), "--database", str(database), "restore", str(copy)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["cycles"] == 1
    process, http = start_service(free_port(), "--database", str(database))
    try:
        assert [c["id"] for c in http.get("/v1/cycles").ok()["cycles"]] == [kept["id"]]
    finally:
        process.terminate()
        process.communicate(timeout=15)
    with closing(sqlite3.connect(database)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_restore_refuses_a_damaged_backup(runner, tmp_path):
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    result = runner.invoke(args=["restore", str(damaged)])
    assert result.exit_code == 1 and "Traceback" not in result.output
