"""A failing replica gives its reason: Litestream 0.5 logs a failed S3 upload only after all its retries, so once
the replica has fallen behind the server looks at it itself (okr/server/replica_probe.py) and puts the reason in
its log and in `okr replication status`, never in /healthz."""
import json
import logging
import os
import shutil
import signal
import time
from datetime import datetime, timezone

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from okr.server import litestream as replication  # the fixture litestream is the binary
from okr.server import replica_probe, replication as replicating
from okr.server.replication import Replicator

from helpers import run_okr
from replicas import S3_ENV, start_replicating, wait_until

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


# --- the look itself --------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "session-token"])
@pytest.mark.parametrize("host, path", [("127.0.0.1:9000", "/okr"), ("okr.s3.eu-west-3.amazonaws.com", "/")])
def test_the_request_is_signed_as_the_aws_sdk_signs_it(host, path, token):
    query = {"list-type": "2", "max-keys": "1", "prefix": "team/an okr+é/"}
    theirs = AWSRequest(method="GET", url=f"http://{host}{path}?{replica_probe.canonical_query(query)}",
                        headers={"x-amz-content-sha256": replica_probe.EMPTY_SHA256})
    S3SigV4Auth(Credentials("AKID", "the secret", token), "s3", "eu-west-3").add_auth(theirs)
    moment = datetime.strptime(theirs.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    ours = replica_probe.sign("GET", host, path, query, "eu-west-3", ("AKID", "the secret", token), now=moment)
    assert ours["Authorization"] == theirs.headers["Authorization"]


@pytest.mark.parametrize("url, endpoint, environ, expected", [
    ("s3://okr/team", "http://127.0.0.1:9000", {}, ("http://127.0.0.1:9000", True, "us-east-1", "okr", "team", False)),
    ("s3://okr/team?endpoint=localhost:9000&skip-verify=true", None, {},
     ("http://localhost:9000", True, "us-east-1", "okr", "team", True)),
    ("s3://okr/team?endpoint=minio.example.com&region=eu-west-3&force-path-style=false", None, {},
     ("https://minio.example.com", False, "eu-west-3", "okr", "team", False)),
    ("s3://okr/a/b", None, {"LITESTREAM_S3_ENDPOINT": "https://r2.example.com"},
     ("https://r2.example.com", True, "us-east-1", "okr", "a/b", False)),
    ("s3://okr/a/b", None, {}, (None, False, None, "okr", "a/b", False)),  # AWS: the bucket's region is looked up
])
def test_the_store_is_reached_as_litestream_reaches_it(monkeypatch, url, endpoint, environ, expected):
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    assert replica_probe.s3_target(replication.replica(url, endpoint), environ) == expected


def test_a_folder_that_cannot_be_made_says_why(tmp_path):
    (tmp_path / "a-file").write_text("")
    assert replica_probe.check(replication.replica(f"file://{tmp_path / 'a-file' / 'replica'}")) == (
        f"the replica's folder {tmp_path / 'a-file' / 'replica'} cannot be made: {tmp_path / 'a-file'} is not a folder")
    reason = replica_probe.check(replication.replica("file:///proc/okr-replica"))
    assert reason.startswith("cannot make the replica's folder /proc/okr-replica in /proc: ")


def test_a_folder_litestream_can_write_in_or_make_is_fine(tmp_path):
    assert replica_probe.check(replication.replica(f"file://{tmp_path}")) is None
    assert replica_probe.check(replication.replica(f"file://{tmp_path / 'not' / 'yet'}")) is None
    assert os.listdir(tmp_path) == []  # nothing left behind, nothing made


def test_an_s3_error_gives_its_code_and_message_never_what_was_signed():
    body = (b"<?xml version='1.0'?><Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we "
            b"calculated does not match</Message><AWSAccessKeyId>AKIDSECRETISH</AWSAccessKeyId><StringToSign>AWS4"
            b"</StringToSign><CanonicalRequest>GET /okr</CanonicalRequest></Error>")
    reason = replica_probe.s3_error(403, body)
    assert reason == "SignatureDoesNotMatch: The request signature we calculated does not match"
    assert replica_probe.s3_error(502, b"<html>\x1b[31mbad gateway</html>") == "(no S3 error)"


@pytest.mark.slow
def test_the_s3_store_is_asked_with_the_replicas_credentials(s3):
    assert replica_probe.check(replication.replica("s3://okr/team", s3.endpoint), CREDENTIALS) is None
    assert replica_probe.check(replication.replica("s3://missing/team", s3.endpoint), CREDENTIALS) == (
        f"the S3 store at {s3.endpoint}/missing answered 404 NoSuchBucket: The specified bucket does not exist")
    # Without keys in the environment (a profile, an instance role), only the network is judged.
    assert replica_probe.check(replication.replica("s3://missing/team", s3.endpoint), {}) is None
    s3.close()
    assert replica_probe.check(replication.replica("s3://okr/team", s3.endpoint), CREDENTIALS) == (
        f"cannot reach the S3 store at {s3.endpoint}/okr: Connection refused")


# --- when the server looks, and what it does with the answer ------------------------------------------------


@pytest.fixture
def replicator(tmp_path):
    made = Replicator("/bin/false", tmp_path / "okr.db", replication.replica(f"file://{tmp_path / 'replica'}"), 5000,
                      max_lag=60)
    yield made
    shutil.rmtree(made.folder)


def looked(replicator):
    """look_if_behind, then its look's end."""
    replicator.look_if_behind()
    if replicator.checking is not None:
        replicator.checking.join(timeout=10)


def test_the_server_looks_once_the_replica_is_behind_and_logs_the_reason_once(replicator, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="okr")
    calls = []
    monkeypatch.setattr(replica_probe, "check", lambda settings: calls.append(settings) or "the store is gone")
    replicator.status["synced_at"] = time.time() - 1
    looked(replicator)
    assert calls == [] and replicator.status["error"] is None  # a second behind: Litestream is at work
    replicator.status["synced_at"] = time.time() - replicating.CHECK_AFTER_SECONDS - 1
    looked(replicator)
    assert calls == [replicator.replica]
    assert replicator.status["error"] == "replica check: the store is gone"
    looked(replicator)
    assert len(calls) == 1  # at most once every CHECK_EVERY_SECONDS
    replicator.checked_at -= replicating.CHECK_EVERY_SECONDS
    looked(replicator)
    assert len(calls) == 2
    errors = [record.getMessage() for record in caplog.records if record.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].startswith("replica check: the store is gone (the replica has not caught up")
    replicator.status["synced_at"] = time.time()
    looked(replicator)
    assert "replica check: the replica has caught up again" in caplog.text


def test_a_short_lag_limit_brings_the_look_sooner(tmp_path, monkeypatch):
    replicator = Replicator("/bin/false", tmp_path / "okr.db", replication.replica(f"file://{tmp_path / 'replica'}"),
                            5000, max_lag=2)
    try:
        monkeypatch.setattr(replica_probe, "check", lambda settings: "the store is gone")
        replicator.status["synced_at"] = time.time() - 2.5
        looked(replicator)
        assert replicator.status["error"] == "replica check: the store is gone"
    finally:
        shutil.rmtree(replicator.folder)


def test_a_replica_that_answers_is_no_error(replicator, monkeypatch):
    monkeypatch.setattr(replica_probe, "check", lambda settings: None)
    replicator.status["synced_at"] = time.time() - 30  # a big snapshot on its way, say
    looked(replicator)
    assert replicator.status["error"] is None


def test_a_look_that_fails_unforeseen_is_logged_and_no_answer(replicator, monkeypatch, caplog):
    def broken(settings):
        raise RuntimeError("a bug in looking")

    monkeypatch.setattr(replica_probe, "check", broken)
    replicator.status["synced_at"] = time.time() - 30
    looked(replicator)
    assert replicator.status["error"] is None and "a bug in looking" in caplog.text


# --- the whole: a server replicating to an S3 store that goes away ------------------------------------------


@pytest.mark.slow
def test_a_store_that_goes_away_is_named_in_the_log_and_the_status_within_30_s(tmp_path, litestream, s3):
    """With the default lag limit, under which Litestream alone says nothing for longer than the test waits."""
    process, http = start_replicating(tmp_path, "--replicate", "s3://okr/team", "--replicate-endpoint", s3.endpoint,
                                      env=S3_ENV)
    try:
        assert wait_until(lambda: http.get("/healthz").json()["details"]["replication"] == "ok"
                          and float(http.get("/healthz").json()["details"]["replication_lag_seconds"]) < 2, timeout=20)
        s3.close()
        gone = time.time()
        http.post("/v1/cycles", {"name": "after the store went away"},
                  headers={"Content-Type": "application/json"}).ok()

        def error_shown():
            shown = run_okr("--database", tmp_path / "okr.db", "replication", "status", "--json", cwd=tmp_path)
            status = json.loads(shown.stdout)
            return status if status["error"] else None

        status = wait_until(error_shown, timeout=30, every=1)
        assert status, "okr replication status shows no error 30 s after the store went away"
        assert status["error"] == f"replica check: cannot reach the S3 store at {s3.endpoint}/okr: Connection refused"
        assert status["error_at"] - gone <= 30
        body = http.get("/healthz").json()
        assert body["details"]["replication"] == "failing" and "127.0.0.1" not in json.dumps(body)
        text = run_okr("--database", tmp_path / "okr.db", "replication", "status", cwd=tmp_path).stdout
        assert f"Z replica check: cannot reach the S3 store at {s3.endpoint}/okr: Connection refused\n" in text
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # a stop would wait for Litestream's last sync to fail
    log = process.communicate(timeout=30)[0].decode()
    assert (f" ERROR okr: replica check: cannot reach the S3 store at {s3.endpoint}/okr: Connection refused (the "
            "replica has not caught up for ") in log
    assert "testing" not in log  # the credentials
