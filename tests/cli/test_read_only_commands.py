"""Commands that only read (keys list, users list, export, backup) never write the database: they take no
write lock (so they work while a writer holds it, as they would on a full disk, where a write fails), leave
even the journal mode as it was, and refuse a database of another schema version, naming it, instead of
migrating it."""
import sqlite3
from contextlib import closing

import pytest

from helpers import make_user
from okr.store.schema import SCHEMA_VERSION

READERS = [["keys", "list"], ["users", "list"], ["export", "{tmp}/all.json"], ["backup", "{tmp}/copy.db"]]


def run(app, tmp_path, args):
    return app.test_cli_runner().invoke(args=[arg.format(tmp=tmp_path) for arg in args])


@pytest.mark.parametrize("args", READERS, ids=lambda args: " ".join(args[:2]))
def test_a_reading_command_works_while_a_writer_holds_the_database(app, runner, tmp_path, args):
    make_user(runner)
    app.config["BUSY_TIMEOUT_MS"] = 300  # a command that wanted to write would fail after this
    with closing(sqlite3.connect(app.config["DATABASE"], isolation_level=None)) as writer:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE users SET name = 'Ada, mid-write'")
        result = run(app, tmp_path, args)
        writer.execute("ROLLBACK")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("args", READERS[:3], ids=lambda args: " ".join(args[:2]))
def test_a_reading_command_refuses_an_older_schema_naming_it_and_leaves_it(app, tmp_path, args):
    path = app.config["DATABASE"]
    with closing(sqlite3.connect(path)) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    result = run(app, tmp_path, args)
    assert result.exit_code == 1
    assert f"schema version {SCHEMA_VERSION - 1}" in result.output and "okr init-db" in result.output
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION - 1


@pytest.mark.parametrize("args", READERS, ids=lambda args: " ".join(args[:2]))
def test_a_reading_command_leaves_a_rollback_journal_database_as_it_is(app, runner, tmp_path, args):
    """A file okr backup wrote is in rollback-journal mode: reading it must not turn it to WAL."""
    make_user(runner)
    assert runner.invoke(args=["backup", str(tmp_path / "copy.db")]).exit_code == 0
    app.config["DATABASE"] = str(tmp_path / "copy.db")
    before = (tmp_path / "copy.db").read_bytes()
    result = run(app, tmp_path, [arg.replace("copy.db", "again.db") for arg in args])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "copy.db").read_bytes() == before
    with closing(sqlite3.connect(tmp_path / "copy.db")) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
