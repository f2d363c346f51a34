"""What in the environment would end Litestream as soon as it starts an S3 replica (AWS_CA_BUNDLE set at all, an
AWS_* value its AWS SDK does not take, an AWS_PROFILE that does not exist) stops `okr serve --replicate` at start
with one `okr:` line naming the variable, instead of a Litestream started again and again while /healthz says
"ok"; and `okr restore --from-replica` alike."""
import os
import sqlite3
import subprocess
from contextlib import closing

import pytest

import okr.__main__ as program
from okr import create_app
from okr.server import litestream as replication  # the fixture litestream is the binary
from okr.server.litestream import ReplicationError

from replicas import SERVER_ENV

S3 = replication.replica("s3://okr/team", "http://127.0.0.1:9")


@pytest.fixture
def home(tmp_path):
    """A HOME whose AWS files hold the profiles "configured" (config) and "keyed" (credentials)."""
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "config").write_text("[default]\nregion = eu-west-3\n[profile configured]\nregion = x\n")
    (tmp_path / ".aws" / "credentials").write_text("[keyed]\naws_access_key_id = a\naws_secret_access_key = b\n")
    return str(tmp_path)


def refusal(environ):
    with pytest.raises(ReplicationError) as refused:
        replication.check_environment(S3, environ)
    return str(refused.value)


@pytest.mark.parametrize("value", ["/etc/ssl/certs/ca-certificates.crt", "/no/such/bundle.pem"])
def test_aws_ca_bundle_is_refused_whatever_it_names(value):
    assert refusal({"AWS_CA_BUNDLE": value}) == (
        "AWS_CA_BUNDLE is set, and Litestream 0.5 cannot replicate to S3 with it (\"unable to add custom RootCAs\"): "
        "unset it for okr; for a private CA, set SSL_CERT_FILE instead")


@pytest.mark.parametrize("name, value", [
    ("AWS_USE_FIPS_ENDPOINT", "yes"), ("AWS_USE_DUALSTACK_ENDPOINT", "1"), ("AWS_S3_USE_ARN_REGION", "on"),
    ("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "x"), ("AWS_S3_DISABLE_EXPRESS_SESSION_AUTH", "x"),
    ("AWS_ENABLE_ENDPOINT_DISCOVERY", "sometimes"), ("AWS_RETRY_MODE", "Standard"), ("AWS_DEFAULTS_MODE", "fast"),
    ("AWS_REQUEST_CHECKSUM_CALCULATION", "always"), ("AWS_RESPONSE_CHECKSUM_VALIDATION", "x"),
    ("AWS_ACCOUNT_ID_ENDPOINT_MODE", "Preferred"), ("AWS_MAX_ATTEMPTS", " 3"), ("AWS_MAX_ATTEMPTS", "three"),
])
def test_a_value_the_aws_sdk_does_not_take_is_named(name, value):
    message = refusal({name: value})
    assert message.startswith(f"{name} must be ") and message.endswith(f" for Litestream, not {value!r}")


@pytest.mark.parametrize("environ", [
    {}, {"AWS_CA_BUNDLE": ""}, {"AWS_USE_FIPS_ENDPOINT": "TRUE"}, {"AWS_S3_USE_ARN_REGION": "False"},
    {"AWS_RETRY_MODE": "adaptive"}, {"AWS_DEFAULTS_MODE": "In-Region"}, {"AWS_MAX_ATTEMPTS": "-1"},
    {"AWS_REQUEST_CHECKSUM_CALCULATION": "WHEN_REQUIRED"}, {"AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"},
])
def test_what_the_aws_sdk_takes_passes(environ):
    replication.check_environment(S3, environ)


def test_a_profile_must_be_in_the_aws_files(home):
    for profile in ("default", "configured", "keyed"):
        replication.check_environment(S3, {"HOME": home, "AWS_PROFILE": profile})
    assert refusal({"HOME": home, "AWS_PROFILE": "missing"}) == (
        f"AWS_PROFILE names the profile 'missing', which neither {home}/.aws/config nor {home}/.aws/credentials "
        "holds: Litestream would stop at once")
    elsewhere = os.path.join(home, "elsewhere")
    os.rename(os.path.join(home, ".aws", "credentials"), elsewhere)
    assert "'keyed'" in refusal({"HOME": home, "AWS_PROFILE": "keyed"})
    replication.check_environment(S3, {"HOME": home, "AWS_PROFILE": "keyed", "AWS_SHARED_CREDENTIALS_FILE": elsewhere})


def test_a_file_replica_reads_none_of_them():
    replication.check_environment(replication.replica("file:///var/backups/okr"),
                                  {"AWS_CA_BUNDLE": "/x.pem", "AWS_RETRY_MODE": "x", "AWS_PROFILE": "missing"})


def test_serving_with_aws_ca_bundle_is_one_line_and_makes_nothing(tmp_path, monkeypatch, clean_env):
    monkeypatch.setenv("AWS_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")
    # Past the check, nothing would start: the test ends on what the server says first.
    monkeypatch.setattr(replication, "find_litestream", lambda: None)
    with pytest.raises(SystemExit) as ended:
        program.main(["--database", str(tmp_path / "okr.db"), "--cpu", "all", "--replicate", "s3://okr/team"])
    assert str(ended.value).startswith("okr: AWS_CA_BUNDLE is set, and Litestream 0.5 cannot replicate to S3")
    assert os.listdir(tmp_path) == []


def test_restoring_from_an_s3_replica_with_aws_ca_bundle_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")
    monkeypatch.setattr(replication, "find_litestream", lambda: None)
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db"})
    result = app.test_cli_runner().invoke(args=["restore", "--from-replica", "s3://okr/team"])
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert "AWS_CA_BUNDLE is set, and Litestream 0.5 cannot replicate to S3" in result.output
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("environ, ends", [
    ({"AWS_CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt"}, True),
    ({"AWS_RETRY_MODE": "Standard"}, True),
    ({"AWS_PROFILE": "missing"}, True),
    ({"AWS_USE_FIPS_ENDPOINT": "TRUE", "AWS_MAX_ATTEMPTS": "-1", "AWS_DEFAULTS_MODE": "In-Region"}, False),
], ids=["ca-bundle", "retry-mode", "profile", "taken"])
@pytest.mark.slow
def test_litestream_ends_at_once_exactly_when_the_check_refuses(tmp_path, litestream, environ, ends):
    """The check's rules, held to the Litestream the tests run: what it refuses ends Litestream within its first
    seconds; what it takes leaves it replicating (to a store that is not there, which it only retries)."""
    database = tmp_path / "okr.db"
    with closing(sqlite3.connect(database)) as db:
        db.execute("PRAGMA journal_mode = wal")
        db.execute("CREATE TABLE t (x)")
    config = tmp_path / "litestream.yml"
    replication.write_private(config, replication.config_text(database, S3))
    env = {**{name: value for name, value in SERVER_ENV.items() if not name.startswith("AWS_")},
           "HOME": str(tmp_path), "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", **environ}
    refused = None
    try:
        replication.check_environment(S3, env)
    except ReplicationError as error:
        refused = error
    assert (refused is not None) == ends
    process = subprocess.Popen([litestream, "replicate", "-config", str(config), "-no-expand-env"], env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, errors = process.communicate(timeout=5)
        ended = True
    except subprocess.TimeoutExpired:
        process.terminate()
        _, errors = process.communicate(timeout=30)
        ended = False
    assert ended == ends, errors
    if ends:
        assert "cannot load aws config" in errors
