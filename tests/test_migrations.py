"""Schema versions: PRAGMA user_version, migrations on start, and a newer database refused."""
import sqlite3

import pytest

from okr import create_app
from okr.db import SCHEMA_VERSION, SchemaTooNew, init_db


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
