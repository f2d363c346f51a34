"""Schema versions: PRAGMA user_version, migrations on start, and a newer database refused."""
import json
import logging
import os
import re
import resource
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

import helpers
import okr.store.schema
from okr import create_app, schema_path
from okr.rules.request_signature import authorization_header
from okr.clock import utc_now
from okr.db import init_db
from okr.store.schema import SCHEMA_VERSION, SchemaTooNew


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
# seq order; the 3rd is the 1st under the email rule (NFC, A to Z in either case), which NOCASE allowed; the
# 5th is the 4th under full Unicode case folding only (versions 1 to 9), so no longer.
V0_EMAILS = ["\u00c9mile@x.org", "ada@example.com", "E\u0301mile@X.ORG", "straße@x.org", "STRASSE@x.org"]
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
    assert user_version(path) == SCHEMA_VERSION
    assert_served(app)
    with closing(sqlite3.connect(path)) as db:
        keys = db.execute("SELECT email, email_key FROM users ORDER BY seq").fetchall()
        assert keys == [("\u00c9mile@x.org", "\u00c9mile@x.org"), ("ada@example.com", "ada@example.com"),
                        ("E\u0301mile@X.ORG", None), ("straße@x.org", "straße@x.org"),
                        ("STRASSE@x.org", "strasse@x.org")]
        assert db.execute("SELECT read_only FROM api_keys ORDER BY seq").fetchall() == [(0,), (0,)]
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    [emile] = clash_warnings(caplog.records)
    assert "\u00c9mile@x.org" in emile and "E\u0301mile@X.ORG" in emile

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
        assert [r[1] for r in db.execute("PRAGMA table_info(api_keys)")][-2:] == ["read_only", "user_id"]
        assert db.execute("SELECT count(*) FROM users WHERE email_key IS NOT NULL").fetchone()[0] == 4


@pytest.mark.slow
def test_the_clash_report_shows_on_stderr_of_a_command(tmp_path):
    path = tmp_path / "v0.db"
    make_v0_database(path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OKR_")}
    result = subprocess.run([sys.executable, APP_PY, "--database", str(path), "init-db"],
                            env={**env, "PYTHONIOENCODING": "utf-8"}, capture_output=True,
                            encoding="utf-8", timeout=60)
    assert result.returncode == 0, result.stderr
    assert "\u00c9mile@x.org" in result.stderr and "E\u0301mile@X.ORG" in result.stderr
    assert "STRASSE@x.org" not in result.stderr
    assert user_version(path) == SCHEMA_VERSION


# --- version 1 to 2: check-ins and revisions ------------------------------------------------

# schema.sql of the last release of schema version 1 (git show 169d3ce:schema.sql)
SCHEMA_V1 = helpers.REPO / "tests" / "fixtures" / "schema_v1.sql"
REVISED_TABLES = ("users", "teams", "cycles", "objectives", "key_results")
V1_TABLES = ("users", "teams", "cycles", "objectives", "key_results", "api_keys")
# seq order; ids run against it, so only seq order passes. Every type, distinct values and times.
V1_KEY_RESULTS = [
    # id, objective, type, confidence, current_value, min, max, created_at, modified_at
    ("k-e", "o1", "positive", "0.10", "5.00", "100.00", None, "2026-02-01T00:00:00Z", "2026-02-05T10:00:00Z"),
    ("k-d", "o1", "range", "0.25", "-3.50", "-10.00", "0.00", "2026-02-02T00:00:00Z", "2026-03-01T11:30:00Z"),
    ("k-c", "o2", "milestone", "1.00", "1.00", "1.00", None, "2026-02-03T00:00:00Z", "2026-02-03T00:00:00Z"),
    ("k-b", "o2", "baseline", "0.75", "123456.125", None, None, "2026-02-04T00:00:00Z", "2026-04-09T23:59:59Z"),
    ("k-a", "o3", "negative", "0.00", "0.00", "7.00", None, "2026-02-05T00:00:00Z", "2026-02-06T06:06:06Z"),
]


def make_v1_database(path):
    """A database as the release before check-ins made it, with rows in every table."""
    with closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA_V1.read_text(encoding="utf-8"))
        db.execute("PRAGMA user_version = 1")
        db.executemany("INSERT INTO users (id, name, email, email_key, is_active, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                       [("u1", "Ada", "Ada@example.com", "ada@example.com", 1, "2026-01-01T00:00:00Z"),
                        ("u2", "Bob", "bob@example.com", "bob@example.com", 0, "2026-01-02T00:00:00Z")])
        db.execute("INSERT INTO teams (id, name, created_at) VALUES ('t1', 'Platform', '2026-01-03T00:00:00Z')")
        db.executemany("INSERT INTO cycles (id, name, created_at) VALUES (?, ?, ?)",
                       [("c1", "Q1", "2026-01-04T00:00:00Z"), ("c2", "Q2", "2026-01-05T00:00:00Z")])
        objective = ("INSERT INTO objectives (id, name, description, is_company, is_personal, cycle_id, team_id,"
                     " assignee_id, parent_objective_id, created_at, modified_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        db.execute(objective, ("o1", "Grow", "text", 1, 0, "c1", "t1", "u1", None,
                               "2026-01-06T00:00:00Z", "2026-01-07T00:00:00Z"))
        db.execute(objective, ("o2", "Child", None, 0, 1, "c1", None, "u2", "o1",
                               "2026-01-08T00:00:00Z", "2026-01-09T00:00:00Z"))
        db.execute(objective, ("o3", "Elsewhere", None, 0, 0, "c2", "t1", None, "o2",
                               "2026-01-10T00:00:00Z", "2026-01-10T00:00:00Z"))
        for kr_id, objective_id, kind, confidence, value, low, high, created, modified in V1_KEY_RESULTS:
            cycle_id = "c2" if objective_id == "o3" else "c1"
            db.execute("INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value,"
                       " target_value_min, target_value_max, created_at, modified_at)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (kr_id, objective_id, cycle_id, f"KR {kr_id}", kind, confidence, value, low, high,
                        created, modified))
        db.execute("INSERT INTO api_keys (credential, secret, name, created_at, revoked_at, read_only)"
                   " VALUES ('cred1', 'secret1', 'live', '2026-01-01T00:00:00Z', NULL, 0),"
                   " ('cred2', 'secret2', 'reader', '2026-01-01T00:00:00Z', NULL, 1),"
                   " ('cred3', 'secret3', 'old', '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z', 0)")
        db.commit()
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1
        assert not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'checkins'").fetchone()


def v1_rows(path):
    """Every row of every version-1 table, in the version-1 columns, in seq order."""
    with closing(sqlite3.connect(path)) as db:
        rows = {}
        for table in V1_TABLES:
            columns = ", ".join(column for column in V1_COLUMNS[table])
            rows[table] = db.execute(f"SELECT {columns} FROM {table} ORDER BY seq").fetchall()
        return rows


def columns_of(path, table):
    with closing(sqlite3.connect(path)) as db:
        return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def dump(path):
    """The whole database as SQL text, schema and rows, and its version."""
    with closing(sqlite3.connect(path)) as db:
        return list(db.iterdump()), db.execute("PRAGMA user_version").fetchone()[0]


def _v1_columns():
    with closing(sqlite3.connect(":memory:")) as db:
        db.executescript(SCHEMA_V1.read_text(encoding="utf-8"))
        return {table: [row[1] for row in db.execute(f"PRAGMA table_info({table})")] for table in V1_TABLES}


V1_COLUMNS = _v1_columns()


def migrated_v1(tmp_path):
    path = tmp_path / "v1.db"
    make_v1_database(path)
    before = v1_rows(path)
    app = create_app({"TESTING": True, "DATABASE": path})
    with app.app_context():
        init_db()
    return app, path, before


def signed():
    return {"Authorization": authorization_header("cred1", "secret1", utc_now())}


def test_the_v1_fixture_is_the_schema_of_the_release_before_checkins():
    assert "checkins" not in SCHEMA_V1.read_text(encoding="utf-8")
    assert "revision" not in SCHEMA_V1.read_text(encoding="utf-8")
    assert "email_key" in V1_COLUMNS["users"] and "read_only" in V1_COLUMNS["api_keys"]


def test_a_version_1_database_keeps_every_row_and_goes_to_the_new_version(tmp_path):
    app, path, before = migrated_v1(tmp_path)
    assert user_version(path) == SCHEMA_VERSION
    after = v1_rows(path)
    assert after == before
    assert [len(after[table]) for table in V1_TABLES] == [2, 1, 2, 3, 5, 3]
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []


def test_a_version_1_database_gets_one_checkin_per_key_result_of_its_present_value(tmp_path):
    _, path, _ = migrated_v1(tmp_path)
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT c.id, k.id, c.value, c.confidence, c.comment, c.author_id, c.created_at"
                          f" FROM checkins c JOIN key_results k ON {checkin_owner_join(db)} ORDER BY c.seq").fetchall()
        assert db.execute("SELECT count(*) FROM checkins").fetchone()[0] == len(rows)
    assert [row[1:] for row in rows] == [
        (kr_id, value, confidence, None, None, modified)
        for kr_id, _, _, confidence, value, _, _, _, modified in V1_KEY_RESULTS
    ]
    ids = [row[0] for row in rows]
    assert all(helpers.UUID4.fullmatch(checkin_id) for checkin_id in ids)
    assert len(set(ids)) == len(ids)


def test_a_migrated_key_results_checkin_is_served(tmp_path):
    app, path, _ = migrated_v1(tmp_path)
    client = app.test_client()
    for kr_id, _, _, confidence, value, _, _, _, modified in V1_KEY_RESULTS:
        response = client.get(f"/v1/keyresults/{kr_id}/checkins", headers=signed())
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        assert body["next_page_token"] is None
        [checkin] = body["checkins"]
        assert checkin == {"id": checkin["id"], "key_result_id": kr_id, "value": value, "confidence": confidence,
                           "comment": None, "author_id": None, "created_at": modified}
        key_result = client.get(f"/v1/keyresults/{kr_id}", headers=signed()).get_json()
        assert (key_result["current_value"], key_result["confidence"], key_result["modified_at"]) == (
            value, confidence, modified)
    # and a migrated key result takes new check-ins after its first
    response = client.post("/v1/keyresults/k-d/checkins", json={"value": "-1", "author_id": "u1"}, headers=signed())
    assert response.status_code == 200, response.get_json()
    listed = client.get("/v1/keyresults/k-d/checkins", headers=signed()).get_json()["checkins"]
    assert [(c["value"], c["confidence"], c["author_id"]) for c in listed] == [
        ("-3.50", "0.25", None), ("-1.00", "0.25", "u1")]


def test_a_version_1_database_gets_revision_columns_at_zero(tmp_path):
    _, path, _ = migrated_v1(tmp_path)
    with closing(sqlite3.connect(path)) as db:
        for table in REVISED_TABLES:
            info = {row[1]: row for row in db.execute(f"PRAGMA table_info({table})")}
            assert "revision" in info, table
            assert info["revision"][2].upper() == "INTEGER" and info["revision"][3] == 1, info["revision"]
            assert {row[0] for row in db.execute(f"SELECT revision FROM {table}")} == {0}, table


@pytest.mark.slow
def test_a_migrated_version_1_database_has_the_same_columns_and_indexes_as_a_new_one(app, tmp_path):
    _, path, _ = migrated_v1(tmp_path)
    assert structure(path) == structure(app.config["DATABASE"])
    assert "checkins" in structure(path)[0]


def test_migrating_a_version_1_database_twice_changes_nothing(tmp_path):
    app, path, _ = migrated_v1(tmp_path)
    once = dump(path)
    with app.app_context():
        init_db()
    assert dump(path) == once
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT count(*) FROM checkins").fetchone()[0] == len(V1_KEY_RESULTS)


def test_a_version_0_database_also_gets_its_first_checkins(tmp_path):
    path = tmp_path / "v0.db"
    make_v0_database(path)
    with create_app({"TESTING": True, "DATABASE": path}).app_context():
        init_db()
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT k.id, c.value, c.confidence, c.comment, c.author_id, c.created_at"
                          f" FROM checkins c LEFT JOIN key_results k ON {checkin_owner_join(db)}")
        assert rows.fetchall() == [("k1", "1.00", "0.50", None, None, NOW)]
        assert "revision" in table_columns_of(db, "key_results")


def checkin_owner_join(db):
    """The join of checkins c to key_results k: the design keys check-ins on key_results.id,
    the code on key_results.seq."""
    if "key_result_id" in table_columns_of(db, "checkins"):
        return "k.id = c.key_result_id"
    return "k.seq = c.key_result_seq"


def table_columns_of(db, table):
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


class Boom(RuntimeError):
    pass


@pytest.mark.parametrize("failing", ["schema", "fill"])
def test_a_migration_failing_midway_leaves_the_database_as_it_was(tmp_path, monkeypatch, failing):
    path = tmp_path / "v1.db"
    make_v1_database(path)
    before = dump(path)
    config = {"TESTING": True, "DATABASE": path}
    if failing == "schema":
        # after the columns are added and most of schema.sql ran (checkins included), a statement fails
        broken = tmp_path / "schema.sql"
        broken.write_text(Path(schema_path()).read_text(encoding="utf-8")
                          + "\nINSERT INTO no_such_table VALUES (1);\n", encoding="utf-8")
        config["SCHEMA"] = broken
        expected = sqlite3.OperationalError
    else:
        # after the check-ins are recorded, the last step fails
        fill = okr.store.schema.FILLS[2]

        def fill_then_fail(db):
            fill(db)
            assert db.execute("SELECT count(*) FROM checkins").fetchone()[0] == len(V1_KEY_RESULTS)
            raise Boom("disk on fire")

        monkeypatch.setitem(okr.store.schema.FILLS, 2, fill_then_fail)
        expected = Boom
    with create_app(config).app_context(), pytest.raises(expected):
        init_db()
    assert dump(path) == before
    assert "revision" not in columns_of(path, "key_results")
    monkeypatch.undo()
    # and a later start with the real code migrates it
    with create_app({"TESTING": True, "DATABASE": path}).app_context():
        init_db()
    assert user_version(path) == SCHEMA_VERSION
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT count(*) FROM checkins").fetchone()[0] == len(V1_KEY_RESULTS)


def test_a_version_2_database_gets_the_web_secrets_table_and_keeps_its_rows(tmp_path):
    """Version 3 only adds web_secrets; a version 2 database (one made before it) migrates to it."""
    app, path, before = migrated_v1(tmp_path)
    with closing(sqlite3.connect(path)) as db:
        db.execute("DROP TABLE web_secrets")
        db.execute("PRAGMA user_version = 2")
        db.commit()
    with app.app_context():
        init_db()
    assert user_version(path) == SCHEMA_VERSION
    assert v1_rows(path) == before
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT count(*) FROM web_secrets").fetchone()[0] == 1  # made by the start, not by a request


def test_a_version_3_database_gets_the_covering_checkins_index_and_keeps_its_rows(app, tmp_path):
    """Version 4 replaces the check-ins' index on (key_result_seq, seq) by one that also holds value and created_at."""
    app_v1, path, before = migrated_v1(tmp_path)
    with closing(sqlite3.connect(path)) as db:
        db.execute("DROP INDEX checkins_history")
        db.execute("CREATE INDEX checkins_by_key_result ON checkins (key_result_seq, seq)")
        db.execute("PRAGMA user_version = 3")
        checkins = db.execute("SELECT * FROM checkins ORDER BY seq").fetchall()
        db.commit()
    with app_v1.app_context():
        init_db()
    assert user_version(path) == SCHEMA_VERSION
    assert structure(path) == structure(app.config["DATABASE"])
    assert v1_rows(path) == before
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT * FROM checkins ORDER BY seq").fetchall() == checkins
        columns = [row[2] for row in db.execute("PRAGMA index_info(checkins_history)")]
        assert columns == ["key_result_seq", "seq", "value", "created_at"]



# --- version 5 to 6: people (roles, passwords, invitations), keys of a user, sessions of a user -----------

# schema.sql of the last release of schema version 5 (git show a5a8ddc:schema.sql)
SCHEMA_V5 = helpers.REPO / "tests" / "fixtures" / "schema_v5.sql"
V5_TABLES = ("users", "api_keys", "cycles", "objectives", "web_secrets")


def _v5_columns():
    with closing(sqlite3.connect(":memory:")) as db:
        db.executescript(SCHEMA_V5.read_text(encoding="utf-8"))
        return {table: [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
                for table in (*V5_TABLES, "web_sessions")}


V5_COLUMNS = _v5_columns()


def make_v5_database(path):
    """A database as the release before people made it: users, keys (live, read-only, revoked), an objective
    assigned to a user, and dashboard sessions opened with a key."""
    with closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA_V5.read_text(encoding="utf-8"))
        db.execute("PRAGMA user_version = 5")
        db.executemany("INSERT INTO users (id, name, email, email_key, is_active, created_at, revision)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?)",
                       [("u1", "Ada", "Ada@example.com", "ada@example.com", 1, "2026-01-01T00:00:00Z", 3),
                        ("u2", "Bob", "bob@example.com", "bob@example.com", 0, "2026-01-02T00:00:00Z", 0)])
        db.execute("INSERT INTO cycles (id, name, created_at) VALUES ('c1', 'Q1', '2026-01-03T00:00:00Z')")
        db.execute("INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, assignee_id, created_at,"
                   " modified_at) VALUES ('o1', 'Grow', 0, 1, 'c1', 'u2', '2026-01-04T00:00:00Z',"
                   " '2026-01-04T00:00:00Z')")
        db.execute("INSERT INTO api_keys (credential, secret, name, created_at, revoked_at, read_only)"
                   " VALUES ('cred1', 'secret1', 'live', '2026-01-01T00:00:00Z', NULL, 0),"
                   " ('cred2', 'secret2', 'reader', '2026-01-01T00:00:00Z', NULL, 1),"
                   " ('cred3', 'secret3', 'old', '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z', 0)")
        db.execute("INSERT INTO web_secrets (name, value) VALUES ('session', 'the-old-secret')")
        db.execute("INSERT INTO web_sessions (token_hash, credential, created_at, ended_at)"
                   " VALUES ('h1', 'cred1', '2026-01-05T00:00:00Z', NULL),"
                   " ('h2', 'cred2', '2026-01-05T00:00:00Z', '2026-01-05T01:00:00Z')")
        db.commit()


def v5_rows(path):
    """Every row of the version-5 tables, in their version-5 columns, in creation order."""
    with closing(sqlite3.connect(path)) as db:
        return {table: db.execute(f"SELECT {', '.join(V5_COLUMNS[table])} FROM {table} ORDER BY rowid").fetchall()
                for table in V5_TABLES}


def test_the_v5_fixture_is_the_schema_of_the_release_before_people():
    assert "role" not in V5_COLUMNS["users"] and "password_hash" not in V5_COLUMNS["users"]
    assert "user_id" not in V5_COLUMNS["api_keys"] and "user_id" not in V5_COLUMNS["web_sessions"]
    assert "credential" in V5_COLUMNS["web_sessions"] and "revision" in V5_COLUMNS["users"]
    assert "invitations" not in SCHEMA_V5.read_text(encoding="utf-8")


def test_a_version_5_database_keeps_every_row_its_users_are_editors_without_passwords_and_sessions_go(app, tmp_path):
    path = tmp_path / "v5.db"
    make_v5_database(path)
    before = v5_rows(path)
    migrated = create_app({"TESTING": True, "DATABASE": path})
    with migrated.app_context():
        init_db()
    assert user_version(path) == SCHEMA_VERSION
    assert v5_rows(path) == before
    assert [len(before[table]) for table in V5_TABLES] == [2, 3, 1, 1, 1]
    assert structure(path) == structure(app.config["DATABASE"])
    with closing(sqlite3.connect(path)) as db:
        # Everyone an editor, no one with a password yet; every key a service key.
        assert db.execute("SELECT id, role, password_hash FROM users ORDER BY seq").fetchall() == [
            ("u1", "editor", None), ("u2", "editor", None)]
        assert db.execute("SELECT credential, user_id FROM api_keys ORDER BY seq").fetchall() == [
            ("cred1", None), ("cred2", None), ("cred3", None)]
        # The sessions named a key only: they go, and everyone signs in again.
        assert db.execute("SELECT count(*) FROM web_sessions").fetchone()[0] == 0
        for table in ("invitations", "team_members", "sign_in_failures"):
            assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    # The old key still signs, as a service key: it reads and writes.
    client = migrated.test_client()
    headers = {"Authorization": authorization_header("cred1", "secret1", utc_now())}
    assert [user["email"] for user in client.get("/v1/users", headers=headers).get_json()["users"]] == [
        "Ada@example.com", "bob@example.com"]
    assert client.post("/v1/cycles", json={"name": "Q2"}, headers=headers).status_code == 200
    # Migrating again changes nothing.
    once = dump(path)
    with migrated.app_context():
        init_db()
    assert dump(path) == once


# --- version 6 to 7: cycles' dates, key results' owners -------------------------------------------------

# schema.sql of the last release of schema version 6 (git show c4ddf07:schema.sql)
SCHEMA_V6 = helpers.REPO / "tests" / "fixtures" / "schema_v6.sql"


def make_v6_database(path):
    """A database as the release before cycle dates made it: a cycle, an objective, a key result, a check-in."""
    with closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA_V6.read_text(encoding="utf-8"))
        db.execute("PRAGMA user_version = 6")
        db.execute("INSERT INTO users (id, name, email, email_key, created_at, role) VALUES "
                   "('u1', 'Ada', 'ada@example.com', 'ada@example.com', '2026-01-01T00:00:00Z', 'admin')")
        db.execute("INSERT INTO cycles (id, name, created_at, revision) VALUES ('c1', 'Q1', '2026-01-03T00:00:00Z', 2)")
        db.execute("INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, created_at, modified_at)"
                   " VALUES ('o1', 'Grow', 1, 0, 'c1', '2026-01-04T00:00:00Z', '2026-01-04T00:00:00Z')")
        db.execute("INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value,"
                   " target_value_min, created_at, modified_at) VALUES ('k1', 'o1', 'c1', 'Reach', 'positive',"
                   " '0.50', '3.00', '10.00', '2026-01-04T00:00:00Z', '2026-01-04T00:00:00Z')")
        db.execute("INSERT INTO checkins (id, key_result_seq, value, confidence, created_at)"
                   " VALUES ('h1', 1, '3.00', '0.50', '2026-01-04T00:00:00Z')")
        db.commit()


def test_the_v6_fixture_is_the_schema_of_the_release_before_cycle_dates():
    text = SCHEMA_V6.read_text(encoding="utf-8")
    assert "starts_on" not in text and "owner_id" not in text and "invitations" in text


def test_a_version_6_database_keeps_every_row_and_gets_no_dates_and_no_owners(app, tmp_path):
    path = tmp_path / "v6.db"
    make_v6_database(path)
    migrated = create_app({"TESTING": True, "DATABASE": path})
    with migrated.app_context():
        init_db()
    assert user_version(path) == SCHEMA_VERSION
    assert structure(path) == structure(app.config["DATABASE"])
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT id, name, revision, starts_on, ends_on FROM cycles").fetchall() == [
            ("c1", "Q1", 2, None, None)]
        assert db.execute("SELECT id, current_value, owner_id FROM key_results").fetchall() == [("k1", "3.00", None)]
        assert db.execute("SELECT count(*) FROM checkins").fetchone()[0] == 1
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    client = migrated.test_client()
    report = client.get("/v1/cycles/c1/report").get_json()
    assert report["cycle"]["state"] == "current" and report["key_results_count"] == 1
    # The new columns work: a date is kept, an owner is set, and the database refuses what is not a date.
    assert client.patch("/v1/cycles/c1", json={"ends_on": "2026-03-31"}).get_json()["ends_on"] == "2026-03-31"
    assert client.patch("/v1/keyresults/k1", json={"owner_id": "u1"}).get_json()["owner_id"] == "u1"
    with closing(sqlite3.connect(path)) as db, pytest.raises(sqlite3.IntegrityError):
        db.execute("UPDATE cycles SET starts_on = '2026-13-01'")  # (SQLite's date() takes February 30th)
    once = dump(path)
    with migrated.app_context():
        init_db()
    assert dump(path) == once


# --- version 8 to 9: who people are at the identity provider ---------------------------------------------

# schema.sql of the last release of schema version 8 (git show 2e2470d:schema.sql)
SCHEMA_V8 = helpers.REPO / "tests" / "fixtures" / "schema_v8.sql"


def test_the_v8_fixture_is_the_schema_of_the_release_before_sign_in_with_a_provider():
    text = SCHEMA_V8.read_text(encoding="utf-8")
    assert "weekly_email" in text and "oidc_subject" not in text


def test_a_version_8_database_keeps_its_users_who_are_linked_to_no_provider_yet(app, tmp_path):
    path = tmp_path / "v8.db"
    with closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA_V8.read_text(encoding="utf-8"))
        db.execute("PRAGMA user_version = 8")
        db.execute("INSERT INTO users (id, name, email, email_key, created_at, role, weekly_email) VALUES "
                   "('u1', 'Ada', 'ada@example.com', 'ada@example.com', '2026-01-01T00:00:00Z', 'admin', 0)")
        db.commit()
    migrated = create_app({"TESTING": True, "DATABASE": path})
    with migrated.app_context():
        init_db()
    assert user_version(path) == SCHEMA_VERSION
    assert structure(path) == structure(app.config["DATABASE"])
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT id, role, weekly_email, oidc_issuer, oidc_subject FROM users").fetchall() == [
            ("u1", "admin", 0, None, None)]
        db.execute("UPDATE users SET oidc_issuer = 'https://id.example', oidc_subject = 's1'")
        db.execute("INSERT INTO users (id, name, email, email_key, created_at) VALUES "
                   "('u2', 'Bo', 'bo@example.com', 'bo@example.com', '2026-01-01T00:00:00Z')")
        with pytest.raises(sqlite3.IntegrityError):  # one user per subject at a provider
            db.execute("UPDATE users SET oidc_issuer = 'https://id.example', oidc_subject = 's1' WHERE id = 'u2'")
    once = dump(path)
    with migrated.app_context():
        init_db()
    assert dump(path) == once


# --- version 9 to 10: the email rule is NFC and A to Z in either case, no longer full case folding ---------

# schema.sql of the last release of schema version 9 (git show 2ffee15:schema.sql)
SCHEMA_V9 = helpers.REPO / "tests" / "fixtures" / "schema_v9.sql"
# id, email, and email_key as version 9 stored it (NFC, then full Unicode case folding; NULL for a user an
# earlier upgrade left without a key). Seq order.
V9_USERS = [
    ("u1", "E\u0301mile@x.org", None),  # decomposed: a clash with u2 once, whose email was then another's
    ("u2", "\u00c9mile@x.org", "\u00e9mile@x.org"),
    ("u3", "juergen.straße@example.com", "juergen.strasse@example.com"),
    ("u4", "Ada@Example.com", "ada@example.com"),
    ("u5", "straße@x.org", "strasse@x.org"),
    ("u6", "STRASSE@x.org", None),  # lost to u5 at version 1: one under full case folding, two users now
]


def test_the_v9_fixture_is_the_schema_of_the_release_before_the_ascii_email_rule():
    text = SCHEMA_V9.read_text(encoding="utf-8")
    assert "oidc_subject" in text and "folded the full Unicode way" in text


def make_v9_database(path):
    with closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA_V9.read_text(encoding="utf-8"))
        db.execute("PRAGMA user_version = 9")
        db.executemany("INSERT INTO users (id, name, email, email_key, created_at) VALUES (?, ?, ?, ?, ?)",
                       [(id_, f"User {id_}", email, key, NOW) for id_, email, key in V9_USERS])
        db.execute("UPDATE users SET oidc_issuer = 'https://sso.example.com', oidc_subject = 's3' WHERE id = 'u3'")
        db.commit()


def test_a_version_9_database_gets_every_email_key_under_the_new_rule(app, tmp_path, caplog):
    path = tmp_path / "v9.db"
    make_v9_database(path)
    migrated = create_app({"TESTING": True, "DATABASE": path})
    with migrated.app_context():
        init_db()
    assert user_version(path) == SCHEMA_VERSION
    assert structure(path) == structure(app.config["DATABASE"])
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT id, email, email_key, oidc_subject FROM users ORDER BY seq").fetchall() == [
            ("u1", "E\u0301mile@x.org", None, None),  # still a clash: u2, who was found by email, keeps the key
            ("u2", "\u00c9mile@x.org", "\u00c9mile@x.org", None),
            ("u3", "juergen.straße@example.com", "juergen.straße@example.com", "s3"),
            ("u4", "Ada@Example.com", "ada@example.com", None),
            ("u5", "straße@x.org", "straße@x.org", None),
            ("u6", "STRASSE@x.org", "strasse@x.org", None)]  # found by email at last
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    [clash] = clash_warnings(caplog.records)
    assert "E\u0301mile@x.org" in clash and "\u00c9mile@x.org" in clash
    # The commands follow the new keys: juergen.strasse@ is nobody's now, and may be someone new.
    runner = migrated.test_cli_runner()
    result = runner.invoke(args=["users", "deactivate", "juergen.strasse@example.com"])
    assert result.exit_code == 1 and "no user with email juergen.strasse@example.com" in result.output
    assert runner.invoke(args=["users", "add", "--name", "J", "--email", "juergen.strasse@example.com"]).exit_code == 0
    assert runner.invoke(args=["users", "deactivate", "strasse@X.ORG"]).exit_code == 0
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT is_active FROM users WHERE id = 'u6'").fetchone() == (0,)
    # Migrating again changes nothing, and says nothing.
    caplog.clear()
    once = dump(path)
    with migrated.app_context():
        init_db()
    assert dump(path) == once and clash_warnings(caplog.records) == []


def test_a_version_9_database_gets_its_names_on_one_line(tmp_path):
    """Names refuse control characters from version 10 on; one stored before gets a space for each run."""
    path = tmp_path / "v9.db"
    make_v9_database(path)
    with closing(sqlite3.connect(path)) as db:
        db.execute("UPDATE users SET name = 'Maya\r\n Lee\t' WHERE id = 'u1'")
        db.execute("UPDATE users SET name = '\x1b' WHERE id = 'u2'")
        db.commit()
    migrated = create_app({"TESTING": True, "DATABASE": path})
    with migrated.app_context():
        init_db()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT id, name FROM users WHERE id IN ('u1', 'u2', 'u3') ORDER BY seq").fetchall() == [
            ("u1", "Maya  Lee"), ("u2", "?"), ("u3", "User u3")]


def test_a_backup_of_version_9_with_a_name_on_two_lines_restores(tmp_path, clean_env):
    path, live = tmp_path / "v9.db", tmp_path / "live.db"
    user_id = "0b7e1c1e-2f1a-4c55-9a43-1f6a3c2d9e10"
    with closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA_V9.read_text(encoding="utf-8"))
        db.execute("PRAGMA user_version = 9")
        db.execute("INSERT INTO users (id, name, email, email_key, created_at) VALUES (?, ?, ?, ?, ?)",
                   (user_id, "Maya\nLee", "maya@example.com", "maya@example.com", NOW))
        db.commit()
    app = create_app({"TESTING": True, "DATABASE": live})
    with app.app_context():
        init_db()
    result = app.test_cli_runner().invoke(args=["restore", str(path), "--force"])
    assert result.exit_code == 0, result.output
    with closing(sqlite3.connect(live)) as db:
        assert db.execute("SELECT name FROM users WHERE id = ?", (user_id,)).fetchone() == ("Maya Lee",)


# --- an upgrade says so, and keeps a backup beside the database first ------------------------------------------

MIGRATED = f"migrated from schema 1 to {SCHEMA_VERSION}"


def okr_lines(records):
    return [r.getMessage() for r in records if r.name == "okr" and r.levelno == logging.INFO]


def beside(path):
    """The backups beside the database, by name."""
    return sorted(name for name in os.listdir(path.parent) if name.startswith(f"{path.name}.") and name.endswith(".bak"))


def init_db_command(path, **config):
    return create_app({"TESTING": True, "DATABASE": path, **config}).test_cli_runner().invoke(args=["init-db"])


def test_init_db_keeps_a_backup_of_the_old_schema_and_says_so(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="okr")
    path = tmp_path / "okr.db"
    make_v1_database(path)
    before = v1_rows(path)
    result = init_db_command(path)
    assert result.exit_code == 0, result.output
    backup = tmp_path / "okr.db.schema-1.bak"
    assert okr_lines(caplog.records)[-2:] == [
        f"kept a backup of the database at schema 1: {backup} (okr restore brings it back)", MIGRATED]
    assert beside(path) == ["okr.db.schema-1.bak"] and helpers.file_mode(backup) == 0o600
    # The old database as it was, whole, in one file of its own
    assert user_version(backup) == 1 and v1_rows(backup) == before
    with closing(sqlite3.connect(backup)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert not os.path.exists(f"{backup}-wal") and not [n for n in os.listdir(tmp_path) if n.startswith(".okr-")]
    assert user_version(path) == SCHEMA_VERSION and v1_rows(path) == before

    caplog.clear()
    assert init_db_command(path).exit_code == 0  # up to date: no migration, no backup, not a word of either
    assert okr_lines(caplog.records) == [f"using database {path}"]
    assert beside(path) == ["okr.db.schema-1.bak"] and v1_rows(backup) == before


def test_the_backup_restores_with_okr_restore(tmp_path):
    path = tmp_path / "okr.db"
    with closing(sqlite3.connect(path)) as db:  # rows as okr stores them, which a restore checks
        db.executescript(SCHEMA_V9.read_text(encoding="utf-8"))
        db.execute("PRAGMA user_version = 9")
        db.execute("INSERT INTO users (id, name, email, email_key, created_at) VALUES (?, 'Maya', 'maya@example.com', "
                   "'maya@example.com', ?)", ("0b7e1c1e-2f1a-4c55-9a43-1f6a3c2d9e10", NOW))
        db.execute("INSERT INTO cycles (id, name, created_at) VALUES (?, 'Before', ?)",
                   ("5d1f3a3e-7c1b-4e0a-8f7e-2b9c4d6a1e20", NOW))
        db.commit()
    assert init_db_command(path).exit_code == 0
    live = create_app({"TESTING": True, "DATABASE": path})
    assert live.test_client().post("/v1/cycles", json={"name": "After"}).status_code == 200
    result = live.test_cli_runner().invoke(args=["restore", "--force", str(tmp_path / "okr.db.schema-9.bak")])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["migrated_from"] == 9 and report["users"] == 1 and report["cycles"] == 1
    assert [cycle["name"] for cycle in live.test_client().get("/v1/cycles").get_json()["cycles"]] == ["Before"]


def test_no_backup_migrates_without_one_and_says_so(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="okr")
    path = tmp_path / "okr.db"
    make_v1_database(path)
    assert init_db_command(path, UPGRADE_BACKUP=False).exit_code == 0
    assert okr_lines(caplog.records)[-1] == f"{MIGRATED} without a backup (--no-backup or OKR_UPGRADE_BACKUP=0)"
    assert beside(path) == [] and user_version(path) == SCHEMA_VERSION


def test_a_new_database_is_not_migrated_and_gets_no_backup(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="okr")
    path = tmp_path / "okr.db"
    assert init_db_command(path).exit_code == 0
    assert okr_lines(caplog.records) == [f"using database {path}"]
    assert beside(path) == [] and user_version(path) == SCHEMA_VERSION


def test_an_existing_backup_is_never_written_over(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="okr")
    path = tmp_path / "okr.db"
    make_v1_database(path)
    assert init_db_command(path).exit_code == 0
    first = (tmp_path / "okr.db.schema-1.bak").read_bytes()
    # Version 1 again (a backup of it restored, say, or an older copy put back), with other rows
    for name in ("okr.db", "okr.db-wal", "okr.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    make_v1_database(path)
    change = "UPDATE teams SET name = 'Renamed'"
    with closing(sqlite3.connect(path)) as db:
        db.execute(change)
        db.commit()
    before = v1_rows(path)
    assert init_db_command(path).exit_code == 0
    assert beside(path) == ["okr.db.schema-1.2.bak", "okr.db.schema-1.bak"]
    assert (tmp_path / "okr.db.schema-1.bak").read_bytes() == first
    assert v1_rows(tmp_path / "okr.db.schema-1.2.bak") == before
    assert f"{tmp_path / 'okr.db.schema-1.2.bak'}" in okr_lines(caplog.records)[-2]


def test_a_backup_that_cannot_be_written_stops_the_migration_and_changes_nothing(tmp_path):
    # A name one too long for the file system once ".schema-1.bak" is added: the copy is made, its name refused.
    path = tmp_path / ("o" * (255 - len(".schema-1.bak") + 1))
    make_v1_database(path)
    before = dump(path)
    result = init_db_command(path)
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert line.startswith(f"Error: cannot keep a backup in {tmp_path} before migrating from schema 1, so nothing "
                           "was changed: File name too long; "), line
    assert "--no-backup" in line and "Traceback" not in result.output
    assert dump(path) == before
    assert path.name in os.listdir(tmp_path)
    assert set(os.listdir(tmp_path)) <= {path.name, f"{path.name}-wal", f"{path.name}-shm"}  # no copy left
    # and without a backup it migrates
    assert init_db_command(path, UPGRADE_BACKUP=False).exit_code == 0
    assert user_version(path) == SCHEMA_VERSION


@pytest.mark.slow
def test_init_db_takes_no_backup_from_the_command_line_and_the_environment(tmp_path):
    for given, env in ((["init-db", "--no-backup"], None), (["init-db"], {"OKR_UPGRADE_BACKUP": "0"})):
        path = tmp_path / "okr.db"
        for name in ("okr.db", "okr.db-wal", "okr.db-shm"):
            (tmp_path / name).unlink(missing_ok=True)
        make_v1_database(path)
        result = helpers.run_okr("--database", path, *given, cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        assert f"okr: {MIGRATED} without a backup" in result.stderr
        assert beside(path) == []


def limit_file_size():
    """Runs in the child before exec: no file it writes grows past 64 KiB, as on a disk that is full (Python
    ignores SIGXFSZ, so the write fails instead)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.RLIM_INFINITY))


@pytest.mark.slow
def test_init_db_on_a_full_disk_ends_with_one_line_and_the_database_as_it_was(tmp_path):
    path = tmp_path / "okr.db"
    make_v1_database(path)
    assert path.stat().st_size > 64 * 1024
    before = dump(path)
    result = subprocess.run([sys.executable, APP_PY, "--database", str(path), "init-db"], cwd=tmp_path,
                            env=helpers.ENV_WITHOUT_OKR, capture_output=True, text=True, timeout=60,
                            preexec_fn=limit_file_size)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"okr: using database {path}",
        f"okr: cannot keep a backup in {tmp_path} before migrating from schema 1, so nothing was changed: disk I/O "
        "error; free some space there (or let okr write there), or pass --no-backup (OKR_UPGRADE_BACKUP=0) to "
        f"migrate without one (database {path})"]
    assert dump(path) == before and beside(path) == []
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".okr-")]


def serve_once(tmp_path, *args):
    """Starts a server on tmp_path/okr.db, stops it; returns its log."""
    process, _ = helpers.start_service(helpers.free_port(), "--database", str(tmp_path / "okr.db"), "--workers", "1",
                                       *args, env=helpers.ENV_WITHOUT_OKR, cwd=tmp_path)
    process.send_signal(signal.SIGTERM)
    output = process.communicate(timeout=15)[0].decode()
    assert process.returncode == 0, output
    return output


@pytest.mark.slow
def test_serve_keeps_a_backup_and_logs_the_migration_once(tmp_path):
    path = tmp_path / "okr.db"
    make_v1_database(path)
    before = v1_rows(path)
    log = serve_once(tmp_path)
    backup = tmp_path / "okr.db.schema-1.bak"
    assert re.search(rf"^\S+ \S+ INFO okr: kept a backup of the database at schema 1: {re.escape(str(backup))} "
                     r"\(okr restore brings it back\)$", log, re.MULTILINE), log
    assert re.search(rf"^\S+ \S+ INFO okr: {MIGRATED}$", log, re.MULTILINE), log
    assert log.index(MIGRATED) < log.index("using database")
    assert beside(path) == ["okr.db.schema-1.bak"] and v1_rows(backup) == before and user_version(backup) == 1
    again = serve_once(tmp_path)
    assert "migrated from" not in again and "kept a backup" not in again
    assert beside(path) == ["okr.db.schema-1.bak"]


@pytest.mark.slow
def test_serve_with_no_backup_migrates_without_one(tmp_path):
    path = tmp_path / "okr.db"
    make_v1_database(path)
    log = serve_once(tmp_path, "--no-backup")
    assert f"INFO okr: {MIGRATED} without a backup" in log and "kept a backup" not in log
    assert beside(path) == [] and user_version(path) == SCHEMA_VERSION


# --- version 10 to 11: key results get a unit and its position -------------------------------------------

# schema.sql of the last release of schema version 10 (git show 27472e3:schema.sql)
SCHEMA_V10 = helpers.REPO / "tests" / "fixtures" / "schema_v10.sql"


def test_the_v10_fixture_is_the_schema_of_the_release_before_units():
    text = SCHEMA_V10.read_text(encoding="utf-8")
    assert "owner_id" in text and "unit_position" not in text


def test_a_version_10_database_keeps_every_row_and_its_key_results_get_no_unit(app, tmp_path):
    path = tmp_path / "v10.db"
    with closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA_V10.read_text(encoding="utf-8"))
        db.execute("PRAGMA user_version = 10")
        db.execute("INSERT INTO users (id, name, email, email_key, created_at) VALUES "
                   "('u1', 'Ada', 'ada@example.com', 'ada@example.com', ?)", (NOW,))
        db.execute("INSERT INTO cycles (id, name, created_at) VALUES ('c1', 'Q1', ?)", (NOW,))
        db.execute("INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, created_at, modified_at) "
                   "VALUES ('o1', 'Grow', 0, 0, 'c1', ?, ?)", (NOW, NOW))
        db.executemany(
            "INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value, "
            "target_value_min, target_value_max, created_at, modified_at, owner_id) "
            "VALUES (?, 'o1', 'c1', ?, ?, '0.50', ?, ?, NULL, ?, ?, ?)",
            [("k1", "Revenue", "positive", "42000.00", "60000.00", NOW, NOW, "u1"),
             ("k2", "Ship", "milestone", "0.00", "1.00", NOW, NOW, None)])
        db.execute("INSERT INTO checkins (id, key_result_seq, value, confidence, created_at) "
                   "SELECT 'c-' || id, seq, current_value, confidence, created_at FROM key_results")
        db.commit()
    # Version 13 adds columns to cycles and objectives (null): their rows keep every column they had.
    before = {table: rows(path, table) for table in ("users", "cycles", "objectives", "checkins")}
    migrated = create_app({"TESTING": True, "DATABASE": path})
    with migrated.app_context():
        init_db()
    assert user_version(path) == SCHEMA_VERSION
    assert structure(path) == structure(app.config["DATABASE"])
    assert {table: [row[:len(before[table][0])] for row in rows(path, table)] for table in before} == before
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT id, name, current_value, owner_id, unit, unit_position FROM key_results "
                          "ORDER BY seq").fetchall() == [("k1", "Revenue", "42000.00", "u1", None, None),
                                                          ("k2", "Ship", "0.00", None, None, None)]
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        for bad in ("unit = 'thirteen char'", "unit = ''", "unit = '$', unit_position = 'left'",
                    "unit = NULL, unit_position = 'after'"):
            with pytest.raises(sqlite3.IntegrityError):  # the same CHECKs as a new database's
                db.execute(f"UPDATE key_results SET {bad} WHERE id = 'k1'")
    client = migrated.test_client()
    answer = client.patch("/v1/keyresults/k1", json={"unit": "$", "unit_position": "before"}).get_json()
    assert (answer["unit"], answer["unit_position"], answer["current_value"]) == ("$", "before", "42000.00")
    once = dump(path)
    with migrated.app_context():
        init_db()
    assert dump(path) == once


# --- version 12 to 13: closing a cycle --------------------------------------------------------------------

# schema.sql of the last release of schema version 12 (git show 91482e1:schema.sql)
SCHEMA_V12 = helpers.REPO / "tests" / "fixtures" / "schema_v12.sql"


def test_the_v12_fixture_is_the_schema_of_the_release_before_closing():
    text = SCHEMA_V12.read_text(encoding="utf-8")
    assert "board_links" in text and "closed_at" not in text


def test_a_version_12_database_keeps_every_row_and_nothing_is_closed_or_scored(app, tmp_path):
    path = tmp_path / "v12.db"
    with closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA_V12.read_text(encoding="utf-8"))
        db.execute("PRAGMA user_version = 12")
        db.execute("INSERT INTO cycles (id, name, created_at) VALUES ('c1', 'Q1', ?)", (NOW,))
        db.execute("INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, created_at, modified_at) "
                   "VALUES ('o1', 'Grow', 0, 0, 'c1', ?, ?)", (NOW, NOW))
        db.execute("INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value, "
                   "target_value_min, created_at, modified_at) VALUES ('k1', 'o1', 'c1', 'Revenue', 'positive', "
                   "'0.50', '10.00', '60.00', ?, ?)", (NOW, NOW))
        db.commit()
    before = {table: rows(path, table) for table in ("cycles", "objectives", "key_results")}
    migrated = create_app({"TESTING": True, "DATABASE": path})
    with migrated.app_context():
        init_db()
    assert user_version(path) == SCHEMA_VERSION
    assert structure(path) == structure(app.config["DATABASE"])
    after = {table: rows(path, table) for table in before}
    assert {table: [row[:len(before[table][0])] for row in found] for table, found in after.items()} == before
    assert [row[len(before[table][0]):] for table in before for row in after[table]] == [
        (None, None), (None, None, None, None, None, "everyone"), (None, 1, "measure")]
    with closing(sqlite3.connect(path)) as db:  # the migrated file has the lock: closed, nothing changes
        db.execute("UPDATE cycles SET closed_at = ? WHERE id = 'c1'", (NOW,))
        with pytest.raises(sqlite3.IntegrityError, match="cycle is closed"):
            db.execute("UPDATE key_results SET current_value = '20.00' WHERE id = 'k1'")


def rows(path, table):
    with closing(sqlite3.connect(path)) as db:
        return db.execute(f"SELECT * FROM {table} ORDER BY seq").fetchall()
