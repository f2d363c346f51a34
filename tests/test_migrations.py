"""Schema versions: PRAGMA user_version, migrations on start, and a newer database refused."""
import logging
import os
import sqlite3
import subprocess
import sys
from contextlib import closing

import pytest

import helpers
from okr import create_app
from okr.api.auth import authorization_header
from okr.db import SCHEMA_VERSION, SchemaTooNew, init_db, utc_now


def user_version(path):
    with sqlite3.connect(path) as db:
        return db.execute("PRAGMA user_version").fetchone()[0]


def test_init_db_records_the_schema_version(app):
    assert user_version(app.config["DATABASE"]) == SCHEMA_VERSION


def test_a_database_newer_than_the_code_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "newer.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (seq INTEGER PRIMARY KEY, id TEXT)")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    app = create_app({"TESTING": True, "DATABASE": path})
    with app.app_context(), pytest.raises(SchemaTooNew, match="newer"):
        init_db()
    assert user_version(path) == SCHEMA_VERSION + 1
    with sqlite3.connect(path) as db:
        assert [row[0] for row in db.execute("SELECT name FROM sqlite_master")] == ["users"]


# --- version 0 to 1: users.email_key and api_keys.read_only -----------------------------------

SCHEMA_V0 = helpers.SCHEMA_V0
APP_PY = str(helpers.APP_PY)
NOW = "2026-01-01T00:00:00Z"
# seq order; the 3rd and 5th fold to the same key as the 1st and 4th, which NOCASE allowed.
V0_EMAILS = ["Émile@x.org", "ada@example.com", "émile@X.ORG", "straße@x.org", "STRASSE@x.org"]
V0_COLUMNS = {
    "users": "id, name, email, is_active, created_at",
    "teams": "id, name, created_at",
    "cycles": "id, name, created_at",
    "objectives": "id, name, description, is_company, is_personal, cycle_id, team_id, assignee_id,"
                  " parent_objective_id, created_at, modified_at",
    "key_results": "id, objective_id, cycle_id, name, type, confidence, current_value, target_value_min,"
                   " target_value_max, created_at, modified_at",
    "api_keys": "credential, secret, name, created_at, revoked_at",
}


def make_v0_database(path):
    """A database as the release before schema versions made it, with a row or more in every table."""
    with closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA_V0.read_text(encoding="utf-8"))
        for n, email in enumerate(V0_EMAILS, start=1):
            db.execute("INSERT INTO users (id, name, email, is_active, created_at) VALUES (?, ?, ?, ?, ?)",
                       (f"u{n}", f"User {n}", email, n % 2, NOW))
        db.execute("INSERT INTO teams (id, name, created_at) VALUES ('t1', 'Platform', ?)", (NOW,))
        db.execute("INSERT INTO cycles (id, name, created_at) VALUES ('c1', 'Q1', ?)", (NOW,))
        objective = ("INSERT INTO objectives (id, name, description, is_company, is_personal, cycle_id, team_id,"
                     " assignee_id, parent_objective_id, created_at, modified_at)"
                     " VALUES (?, ?, ?, 0, 0, 'c1', ?, ?, ?, ?, ?)")
        db.execute(objective, ("o1", "Grow", "text", "t1", "u3", None, NOW, NOW))
        db.execute(objective, ("o2", "Child", None, None, "u5", "o1", NOW, NOW))
        db.execute("INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value,"
                   " target_value_min, target_value_max, created_at, modified_at)"
                   " VALUES ('k1', 'o1', 'c1', 'Reach', 'range', '0.50', '1.00', '1.00', '9.00', ?, ?)", (NOW, NOW))
        db.execute("INSERT INTO api_keys (credential, secret, name, created_at, revoked_at)"
                   " VALUES ('cred1', 'secret1', 'live', ?, NULL), ('cred2', 'secret2', 'old', ?, ?)",
                   (NOW, NOW, NOW))
        db.commit()
        assert db.execute("PRAGMA user_version").fetchone()[0] == 0


def v0_rows(path):
    with closing(sqlite3.connect(path)) as db:
        return {table: db.execute(f"SELECT {columns} FROM {table} ORDER BY seq").fetchall()
                for table, columns in V0_COLUMNS.items()}


def clash_warnings(records):
    return [r.getMessage() for r in records if r.name == "okr" and r.levelno == logging.WARNING]


def assert_served(app):
    """The API serves the migrated rows, and the old key still signs reads and writes."""
    client = app.test_client()
    headers = {"Authorization": authorization_header("cred1", "secret1", utc_now())}
    response = client.get("/v1/users", headers=headers)
    assert response.status_code == 200
    assert [u["email"] for u in response.get_json()["users"]] == V0_EMAILS
    assert client.get("/v1/objectives/o2", headers=headers).get_json()["assignee_id"] == "u5"
    assert client.post("/v1/cycles", json={"name": "Q2"}, headers=headers).status_code == 200


def test_a_version_0_database_keeps_every_row_and_gets_email_keys_and_read_only_flags(tmp_path, caplog):
    path = tmp_path / "v0.db"
    make_v0_database(path)
    before = v0_rows(path)
    app = create_app({"TESTING": True, "DATABASE": path})
    with app.app_context():
        init_db()
    assert v0_rows(path) == before
    assert user_version(path) == SCHEMA_VERSION == 1
    assert_served(app)
    with closing(sqlite3.connect(path)) as db:
        keys = db.execute("SELECT email, email_key FROM users ORDER BY seq").fetchall()
        assert keys == [("Émile@x.org", "émile@x.org"), ("ada@example.com", "ada@example.com"),
                        ("émile@X.ORG", None), ("straße@x.org", "strasse@x.org"), ("STRASSE@x.org", None)]
        assert db.execute("SELECT read_only FROM api_keys ORDER BY seq").fetchall() == [(0,), (0,)]
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    [emile, strasse] = clash_warnings(caplog.records)
    assert "Émile@x.org" in emile and "émile@X.ORG" in emile
    assert "straße@x.org" in strasse and "STRASSE@x.org" in strasse

    caplog.clear()
    with app.app_context():
        init_db()  # the migration ran once: nothing to report the second time
    assert clash_warnings(caplog.records) == []
    assert v0_rows(path)["users"] == before["users"]


def structure(path):
    """Every table's columns, and every index's name, uniqueness, columns and condition."""
    with closing(sqlite3.connect(path)) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        shape = {}
        for table in tables:
            indexes = {}
            for _, name, unique, _, partial in db.execute(f"PRAGMA index_list({table})"):
                columns = [r[2] for r in db.execute(f"PRAGMA index_info({name})")]
                indexes[name] = (unique, partial, columns)
            shape[table] = (db.execute(f"PRAGMA table_info({table})").fetchall(), indexes)
        triggers = db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name").fetchall()
        return shape, triggers


def test_a_migrated_database_has_the_same_columns_and_indexes_as_a_new_one(app, tmp_path):
    path = tmp_path / "v0.db"
    make_v0_database(path)
    with create_app({"TESTING": True, "DATABASE": path}).app_context():
        init_db()
    assert structure(path) == structure(app.config["DATABASE"])
    users_columns = [column[1] for column in structure(path)[0]["users"][0]]
    assert "email_key" in users_columns


def test_a_version_0_database_without_the_api_keys_table_is_migrated(tmp_path):
    path = tmp_path / "v0.db"
    make_v0_database(path)
    with closing(sqlite3.connect(path)) as db:
        db.execute("DROP TABLE api_keys")
    with create_app({"TESTING": True, "DATABASE": path}).app_context():
        init_db()
    with closing(sqlite3.connect(path)) as db:
        assert [r[1] for r in db.execute("PRAGMA table_info(api_keys)")][-1] == "read_only"
        assert db.execute("SELECT count(*) FROM users WHERE email_key IS NOT NULL").fetchone()[0] == 3


def test_the_clash_report_shows_on_stderr_of_a_command(tmp_path):
    path = tmp_path / "v0.db"
    make_v0_database(path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OKR_")}
    result = subprocess.run([sys.executable, APP_PY, "--database", str(path), "init-db"],
                            env={**env, "PYTHONIOENCODING": "utf-8"}, capture_output=True,
                            encoding="utf-8", timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Émile@x.org" in result.stderr and "émile@X.ORG" in result.stderr
    assert "STRASSE@x.org" in result.stderr
    assert user_version(path) == 1
