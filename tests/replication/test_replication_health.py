"""/healthz with replication on: a fixed word ("ok", "failing") and the replica's lag, never Litestream's error (it
needs no credentials, and the error names server paths, buckets and endpoints); 503 once the replica has fallen
behind for longer than --replicate-max-lag; without replication, the same answer as ever. The error in full is
for the admin: `okr replication status`, from the status file beside the database, and the server's log."""
import fcntl
import json
import os
import time

import pytest

from okr import create_app
from okr.server import litestream as replication  # the fixture litestream is the binary
from okr.db import init_db

from helpers import assert_error

# What Litestream logs when an S3 replica fails: the bucket, the endpoint and the database's path.
S3_ERROR = ("sync error: operation error S3: PutObject, https response error StatusCode: 404, api error NoSuchBucket:"
            " bucket=acme-okr-backups endpoint=http://minio.internal.acme:9000 path=/srv/okr/okr.db")
SECRET_WORDS = ("acme", "minio", "/srv", "NoSuchBucket", "sync error")


@pytest.fixture
def replicating(tmp_path):
    """An app whose status file says what the test writes, as the process running Litestream writes it."""
    database = tmp_path / "okr.db"
    app = create_app({"TESTING": True, "DATABASE": database, "REPLICATE_MAX_LAG": 60,
                      "REPLICATION_STATUS": replication.status_path(database)})
    with app.app_context():
        init_db()
    return app


def say(app, **status):
    replication.write_status(app.config["REPLICATION_STATUS"], {
        "since": time.time() - 300, "synced_at": None, "error": None, "error_at": None, "pid": None, "restarts": 0,
        "max_lag": 60, "replica": "s3://acme-okr-backups/okr", **status})


def assert_nothing_of_the_error_in(response):
    text = response.get_data(as_text=True)
    assert not any(word in text for word in SECRET_WORDS), text


@pytest.mark.slow
def test_without_replication_the_answer_is_the_same_to_the_byte(client):
    response = client.get("/healthz")
    assert (response.status_code, response.data) == (200, b'{"status":"ok"}\n')


def test_a_replica_that_keeps_up_is_ok_with_its_lag(replicating):
    say(replicating, synced_at=time.time() - 0.5)
    response = replicating.test_client().get("/healthz")
    assert response.status_code == 200
    body = response.get_json()
    assert body["status"] == "ok" and set(body["details"]) == {"replication", "replication_lag_seconds"}
    assert body["details"]["replication"] == "ok"
    assert 0.4 <= float(body["details"]["replication_lag_seconds"]) < 5


def test_an_error_from_before_the_replica_last_caught_up_is_over(replicating):
    say(replicating, synced_at=time.time(), error=S3_ERROR, error_at=time.time() - 10)
    response = replicating.test_client().get("/healthz")
    assert response.status_code == 200 and response.get_json()["details"]["replication"] == "ok"
    assert_nothing_of_the_error_in(response)


def test_syncs_failing_are_said_with_a_fixed_word_and_the_lag_never_the_error(replicating):
    """Every sync failing, the replica behind for less than --replicate-max-lag: not "ok", and nothing of the
    error, which names the bucket, the endpoint and the server's paths to whoever asks."""
    say(replicating, synced_at=time.time() - 5, error=S3_ERROR, error_at=time.time() - 1)
    response = replicating.test_client().get("/healthz")
    assert response.status_code == 200
    body = response.get_json()
    assert body["status"] == "degraded" and body["details"]["replication"] == "failing"
    assert set(body["details"]) == {"replication", "replication_lag_seconds"}
    assert 4.5 <= float(body["details"]["replication_lag_seconds"]) < 10
    assert_nothing_of_the_error_in(response)


def test_a_replica_that_never_caught_up_and_an_error_is_failing(replicating):
    say(replicating, since=time.time() - 3, error="litestream exited with status 1", error_at=time.time() - 2)
    body = replicating.test_client().get("/healthz").get_json()
    assert (body["status"], body["details"]["replication"]) == ("degraded", "failing")


def test_a_replica_behind_for_longer_than_the_limit_is_503(replicating):
    say(replicating, synced_at=time.time() - 61, error=S3_ERROR, error_at=time.time() - 1)
    response = replicating.test_client().get("/healthz")
    body = assert_error(response, 503, "replication", "replication_lag_seconds")
    assert body["message"] == "replication is failing"
    assert set(body["details"]) == {"replication", "replication_lag_seconds"}
    assert body["details"]["replication"] == "failing"
    assert float(body["details"]["replication_lag_seconds"]) >= 61
    assert_nothing_of_the_error_in(response)


def test_a_replica_that_never_caught_up_counts_from_the_start(replicating):
    say(replicating, since=time.time() - 61)
    assert replicating.test_client().get("/healthz").status_code == 503
    say(replicating, since=time.time() - 1)
    assert replicating.test_client().get("/healthz").status_code == 200


def test_no_status_file_is_503(replicating):
    body = assert_error(replicating.test_client().get("/healthz"), 503, "replication")
    assert body["details"] == {"replication": "not started", "replication_lag_seconds": "unknown"}


def test_a_missing_database_is_still_the_first_thing_said(replicating):
    say(replicating, synced_at=time.time())
    path = replicating.config["DATABASE"]
    replicating.test_client().get("/healthz")
    os.rename(path, f"{path}.moved")
    body = assert_error(replicating.test_client().get("/healthz"), 503, "database")
    assert "replication_lag_seconds" not in body["details"]


# --- okr replication status: the detail, for whoever may read the status file -------------------------------


@pytest.fixture
def serving(replicating):
    """The replication lock held, as a server replicating the database holds it."""
    descriptor = os.open(f"{os.path.realpath(replicating.config['DATABASE'])}.replication.lock",
                         os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    yield replicating
    os.close(descriptor)


def status_lines(app, *args):
    result = app.test_cli_runner().invoke(args=["replication", "status", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_command_shows_the_error_in_full_with_its_time(serving):
    failed_at = time.time() - 1
    say(serving, synced_at=time.time() - 5, error=S3_ERROR, error_at=failed_at, pid=4242, restarts=2)
    output = status_lines(serving)
    assert f"last error:   {replication.stamp(failed_at)} {S3_ERROR}\n" in output
    assert "replica:      s3://acme-okr-backups/okr\n" in output
    assert "replicating:  yes (litestream pid 4242; started again 2 times)\n" in output
    assert "state:        failing\n" in output
    assert "lag:          5." in output


def test_the_command_says_when_the_healthz_answers_503(serving):
    say(serving, synced_at=time.time() - 61, error=S3_ERROR, error_at=time.time() - 1)
    assert "state:        failing, /healthz answers 503 (the lag is past 60 s)\n" in status_lines(serving)


def test_the_command_as_json(serving):
    say(serving, synced_at=time.time() - 1, error=S3_ERROR, error_at=time.time() - 10)
    shown = json.loads(status_lines(serving, "--json"))
    assert shown["error"] == S3_ERROR and shown["replicating"] is True and shown["healthy"] is True
    assert shown["state"] == "ok" and 0.5 <= shown["lag_seconds"] < 5


def test_the_command_says_when_no_server_replicates(replicating):
    say(replicating, synced_at=0, error=S3_ERROR, error_at=0, stopped_at=1)
    output = status_lines(replicating)
    assert ("replicating:  no: no server replicates this database now; the last status is of "
            "1970-01-01T00:00:01Z\n") in output
    assert "state:" not in output and S3_ERROR in output
    assert not os.path.exists(f"{os.path.realpath(replicating.config['DATABASE'])}.replication.lock")  # made nothing


def test_the_command_without_any_status(replicating):
    result = replicating.test_cli_runner().invoke(args=["replication", "status"])
    assert result.exit_code == 1
    assert "no server has replicated" in result.output and "okr serve --replicate URL" in result.output


def test_the_command_escapes_what_a_terminal_would_obey(serving):
    say(serving, synced_at=time.time(), error="answer: \x1b]0;owned\x07 done", error_at=0)
    output = status_lines(serving)
    assert "\x1b" not in output and "\x07" not in output
    assert "answer: \\x1b]0;owned\\x07 done" in output
