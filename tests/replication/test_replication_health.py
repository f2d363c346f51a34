"""/healthz with replication on: the replica's lag and the last error in details, and 503 once the replica has
fallen behind for longer than --replicate-max-lag; without replication, the same answer as ever."""
import os
import time

import pytest

from okr import create_app, replication
from okr.db import init_db

from helpers import assert_error


@pytest.fixture
def replicating(tmp_path):
    """An app whose status file says what the test writes, as the process running Litestream writes it."""
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db", "REPLICATION_STATUS": str(tmp_path / "status"),
                      "REPLICATE_MAX_LAG": 60})
    with app.app_context():
        init_db()
    return app


def say(app, **status):
    replication.write_status(app.config["REPLICATION_STATUS"], {"since": time.time() - 300, "synced_at": None,
                                                                 "error": None, "error_at": None, **status})


def test_without_replication_the_answer_is_the_same_to_the_byte(client):
    response = client.get("/healthz")
    assert (response.status_code, response.data) == (200, b'{"status":"ok"}\n')


def test_a_replica_that_keeps_up_is_ok_with_its_lag(replicating):
    say(replicating, synced_at=time.time() - 0.5)
    response = replicating.test_client().get("/healthz")
    assert response.status_code == 200
    body = response.get_json()
    assert body["status"] == "ok" and set(body["details"]) == {"replication_lag_seconds", "replication_last_error"}
    assert 0.4 <= float(body["details"]["replication_lag_seconds"]) < 5
    assert body["details"]["replication_last_error"] == "none"


def test_a_past_error_shows_while_the_replica_keeps_up(replicating):
    say(replicating, synced_at=time.time(), error="litestream was killed by SIGKILL", error_at=0)
    body = replicating.test_client().get("/healthz").get_json()
    assert body["details"]["replication_last_error"] == "1970-01-01T00:00:00Z litestream was killed by SIGKILL"


def test_a_replica_behind_for_longer_than_the_limit_is_503(replicating):
    say(replicating, synced_at=time.time() - 61, error="sync error: disk full", error_at=time.time() - 1)
    body = assert_error(replicating.test_client().get("/healthz"), 503, "replication_lag_seconds",
                        "replication_last_error")
    assert body["message"] == "replication is failing"
    assert float(body["details"]["replication_lag_seconds"]) >= 61
    assert body["details"]["replication_last_error"].endswith(" sync error: disk full")


def test_a_replica_that_never_caught_up_counts_from_the_start(replicating):
    say(replicating, since=time.time() - 61)
    assert replicating.test_client().get("/healthz").status_code == 503
    say(replicating, since=time.time() - 1)
    assert replicating.test_client().get("/healthz").status_code == 200


def test_no_status_file_is_503(replicating):
    body = assert_error(replicating.test_client().get("/healthz"), 503, "replication_last_error")
    assert body["details"]["replication_last_error"] == "replication has not started"


def test_a_missing_database_is_still_the_first_thing_said(replicating):
    say(replicating, synced_at=time.time())
    path = replicating.config["DATABASE"]
    replicating.test_client().get("/healthz")
    os.rename(path, f"{path}.moved")
    body = assert_error(replicating.test_client().get("/healthz"), 503, "database")
    assert "replication_lag_seconds" not in body["details"]
