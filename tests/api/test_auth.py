"""Simple OKR's S1-HMAC-SHA256 request signing, and serving only what is safe to expose."""
import base64
import hashlib
import hmac
import json
import signal
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone

import pytest

import helpers
from werkzeug.wrappers import Response

import okr.__main__ as app_module
import okr.api.auth
import okr.server.startup
from helpers import assert_error, create_key, free_port, start_service
from okr import create_app
from okr.accounts.access import is_loopback
from okr.api.openapi import ADMIN_ONLY, EDITOR_ONLY, PERSON_ONLY
from okr.rules.request_signature import sign
from okr.db import init_db
from okr.server.http_server import waitress_settings

VECTOR = ("mycredential", "mysecret", "2019-02-03T01:55:37Z")
VECTOR_SIGNATURE = "ab9b15c8321dd0e00bbbcc8e33629adcb273b1dfeedb54387cb305fca6c409fa"

# The servers and commands here judge their own settings: none may come from the shell running the tests.
pytestmark = pytest.mark.usefixtures("clean_env")


def stamp(offset=timedelta()):
    return (datetime.now(timezone.utc) + offset).strftime("%Y-%m-%dT%H:%M:%SZ")


def signature(credential, secret, timestamp):
    """Computed here, as a Simple OKR client would, not with okr.api.auth."""
    return hmac.new(secret.encode(), (credential + timestamp).encode(), hashlib.sha256).hexdigest()


def header(credential, secret, timestamp=None):
    timestamp = timestamp or stamp()
    return (f"S1-HMAC-SHA256 Credential={credential}&Timestamp={timestamp}"
            f"&Signature={signature(credential, secret, timestamp)}")


def signed(key, timestamp=None):
    return {"Authorization": header(key["credential"], key["secret"], timestamp)}



def revoke(runner, credential):
    result = runner.invoke(args=["keys", "revoke", credential])
    assert result.exit_code == 0, result.output


def assert_401(response):
    body = assert_error(response, 401)
    assert response.headers["WWW-Authenticate"] == "S1-HMAC-SHA256"
    return body


def count(app, table):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


# --- the signature -------------------------------------------------------------------------


def test_signature_matches_the_published_test_vector():
    assert sign(*VECTOR) == VECTOR_SIGNATURE
    assert signature(*VECTOR) == VECTOR_SIGNATURE  # this file's client-side helper agrees


def test_api_is_open_until_the_first_key(client, runner):
    assert client.get("/v1/cycles").status_code == 200
    create_key(runner)
    assert_401(client.get("/v1/cycles"))


def test_signed_request_succeeds(client, key):
    response = client.post("/v1/cycles", json={"name": "Q1"}, headers=signed(key))
    assert response.status_code == 200, response.get_json()
    assert client.get("/v1/cycles", headers=signed(key)).get_json()["cycles"][0]["name"] == "Q1"


def test_healthz_stays_open_with_keys(client, runner, key):
    revoke(runner, key["credential"])
    response = client.get("/healthz")
    assert (response.status_code, response.get_json()) == (200, {"status": "ok"})


# --- rejections ------------------------------------------------------------------------------


def test_missing_header_is_401(client, key):
    assert_401(client.get("/v1/cycles"))


@pytest.mark.parametrize("headers", [{}, {"Authorization": ""}], ids=["absent", "empty"])
def test_missing_header_message_says_how_to_sign(client, key, headers):
    message = assert_401(client.get("/v1/cycles", headers=headers))["message"]
    assert message == ("missing Authorization header; sign requests with S1-HMAC-SHA256 "
                       "(okr auth-header prints one)")


def test_other_401_messages_do_not_point_at_auth_header(client, key):
    wrong = {"Authorization": header(key["credential"], "wrong")}
    message = assert_401(client.get("/v1/cycles", headers=wrong))["message"]
    assert message == "unknown or revoked credential, or wrong signature"


@pytest.mark.parametrize("value", [
    "Basic dXNlcjpwYXNz",
    "Bearer abcdef0123456789",
    "HMAC-SHA256 Credential=c&Timestamp=t&Signature=s",
    "Credential=c&Timestamp=t&Signature=s",
])
def test_other_schemes_are_401(client, key, value):
    assert_401(client.get("/v1/cycles", headers={"Authorization": value}))


def test_other_scheme_with_valid_parts_is_401(client, key):
    parts = header(key["credential"], key["secret"]).split(" ", 1)[1]
    assert_401(client.get("/v1/cycles", headers={"Authorization": "Bearer " + parts}))


MALFORMED = {
    "scheme only": "S1-HMAC-SHA256",
    "scheme and space": "S1-HMAC-SHA256 ",
    "no credential": "S1-HMAC-SHA256 Timestamp={t}&Signature={s}",
    "no timestamp": "S1-HMAC-SHA256 Credential={c}&Signature={s}",
    "no signature": "S1-HMAC-SHA256 Credential={c}&Timestamp={t}",
    "duplicated credential": "S1-HMAC-SHA256 Credential={c}&Credential={c}&Timestamp={t}&Signature={s}",
    "duplicated signature": "S1-HMAC-SHA256 Credential={c}&Timestamp={t}&Signature={s}&Signature={s}",
    "part without '='": "S1-HMAC-SHA256 Credential={c}&Timestamp={t}&Signature{s}",
    "empty credential": "S1-HMAC-SHA256 Credential=&Timestamp={t}&Signature={s}",
    "comma separated": "S1-HMAC-SHA256 Credential={c},Timestamp={t},Signature={s}",
    "no separators": "S1-HMAC-SHA256 {c}{t}{s}",
}


@pytest.mark.parametrize("template", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_header_is_401(client, key, template):
    t = stamp()
    value = template.format(c=key["credential"], t=t, s=signature(key["credential"], key["secret"], t))
    assert_401(client.get("/v1/cycles", headers={"Authorization": value}))


def test_unknown_credential_is_401(client, key):
    assert_401(client.get("/v1/cycles", headers={"Authorization": header("nosuchkey", key["secret"])}))


def test_revoked_credential_is_401_on_the_next_request(client, runner, key):
    assert client.get("/v1/cycles", headers=signed(key)).status_code == 200
    revoke(runner, key["credential"])
    assert_401(client.get("/v1/cycles", headers=signed(key)))


def test_revoking_one_key_leaves_the_others_working(client, runner, key):
    other = create_key(runner, "other")
    revoke(runner, key["credential"])
    assert client.get("/v1/cycles", headers=signed(other)).status_code == 200


def test_revoking_the_last_key_locks_the_api(client, runner, key):
    revoke(runner, key["credential"])
    assert_401(client.get("/v1/cycles"))
    assert_401(client.post("/v1/cycles", json={"name": "Q1"}))
    assert count(client.application, "cycles") == 0


WRONG_SIGNATURES = {
    "wrong secret": lambda c, s, t: signature(c, s + "x", t),
    "timestamp then credential": lambda c, s, t: hmac.new(s.encode(), (t + c).encode(), hashlib.sha256).hexdigest(),
    "sha1": lambda c, s, t: hmac.new(s.encode(), (c + t).encode(), hashlib.sha1).hexdigest(),
    "truncated": lambda c, s, t: signature(c, s, t)[:-2],
    "last digit changed": lambda c, s, t: signature(c, s, t)[:-1] + "0123456789abcdef".replace(signature(c, s, t)[-1], "")[0],
    "base64 instead of hex": lambda c, s, t: base64.b64encode(
        hmac.new(s.encode(), (c + t).encode(), hashlib.sha256).digest()).decode(),
    "not hex": lambda c, s, t: "z" * 64,
    "non-ASCII": lambda c, s, t: "é" * 64,
}


@pytest.mark.parametrize("make", WRONG_SIGNATURES.values(), ids=WRONG_SIGNATURES.keys())
def test_wrong_signature_is_401(client, key, make):
    c, t = key["credential"], stamp()
    value = f"S1-HMAC-SHA256 Credential={c}&Timestamp={t}&Signature={make(c, key['secret'], t)}"
    assert_401(client.get("/v1/cycles", headers={"Authorization": value}))


def test_signature_of_another_timestamp_is_401(client, key):
    c, s = key["credential"], key["secret"]
    value = f"S1-HMAC-SHA256 Credential={c}&Timestamp={stamp()}&Signature={signature(c, s, stamp(timedelta(minutes=-1)))}"
    assert_401(client.get("/v1/cycles", headers={"Authorization": value}))


def test_signature_with_another_keys_secret_is_401(client, runner, key):
    other = create_key(runner, "other")
    assert_401(client.get("/v1/cycles", headers={"Authorization": header(key["credential"], other["secret"])}))


@pytest.mark.parametrize("offset", [
    timedelta(minutes=-10, seconds=-30), timedelta(minutes=10, seconds=30),
    timedelta(days=-1), timedelta(days=1), timedelta(days=-365 * 5),
], ids=["10m30s ago", "10m30s ahead", "a day ago", "a day ahead", "five years ago"])
def test_timestamp_more_than_ten_minutes_off_is_401(client, key, offset):
    assert_401(client.get("/v1/cycles", headers=signed(key, stamp(offset))))


@pytest.mark.parametrize("offset", [timedelta(minutes=-8), timedelta(), timedelta(minutes=8)],
                         ids=["8m ago", "now", "8m ahead"])
def test_timestamp_within_ten_minutes_is_accepted(client, key, offset):
    assert client.get("/v1/cycles", headers=signed(key, stamp(offset))).status_code == 200


@pytest.mark.parametrize("timestamp", [
    "yesterday", "1700000000", "2026-13-45T99:99:99Z", "2026-02-30T10:00:00Z",
    "{today}", "{today}T10:00:00", "{now_no_zone}", "{now_with_words}",
])
def test_unparseable_timestamp_is_401(client, key, timestamp):
    now = datetime.now(timezone.utc)
    timestamp = timestamp.format(
        today=now.strftime("%Y-%m-%d"),
        now_no_zone=now.strftime("%Y-%m-%dT%H:%M:%S"),
        now_with_words=now.strftime("%Y-%m-%dT%H:%M:%SZ") + " please",
    )
    assert_401(client.get("/v1/cycles", headers=signed(key, timestamp)))


def test_signatures_are_compared_with_compare_digest(client, key, monkeypatch):
    calls = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(okr.api.auth.hmac, "compare_digest", spy)
    assert client.get("/v1/cycles", headers=signed(key)).status_code == 200
    assert len(calls) == 1

    # The answer is compare_digest's: a valid signature it calls unequal is refused.
    monkeypatch.setattr(okr.api.auth.hmac, "compare_digest", lambda a, b: False)
    assert_401(client.get("/v1/cycles", headers=signed(key)))


# --- 401 comes before anything is read or written ------------------------------------------


@pytest.mark.parametrize("auth", [None, "wrong"], ids=["no header", "wrong signature"])
def test_unauthenticated_post_creates_nothing(client, app, key, auth):
    headers = {} if auth is None else {"Authorization": header(key["credential"], "wrong")}
    assert_401(client.post("/v1/cycles", json={"name": "Q1"}, headers=headers))
    assert count(app, "cycles") == 0


def test_unauthenticated_delete_deletes_nothing(client, key):
    cycle = client.post("/v1/cycles", json={"name": "kept"}, headers=signed(key)).get_json()
    assert_401(client.delete(f"/v1/cycles/{cycle['id']}"))
    assert client.get(f"/v1/cycles/{cycle['id']}", headers=signed(key)).get_json()["name"] == "kept"


@pytest.mark.parametrize("path", ["/v1", "/v1/", "/v1/nowhere", "/v1/cycles/not-an-id/x", "/v1/openapi.jsonx"])
def test_unknown_v1_path_without_auth_is_401_not_404(client, key, path):
    assert_401(client.get(path))


def test_unknown_v1_path_with_auth_is_404(client, key):
    assert_error(client.get("/v1/nowhere", headers=signed(key)), 404)


def test_wrong_method_without_auth_is_401_not_405(client, key):
    assert_401(client.put("/v1/cycles", json={"name": "Q1"}))
    assert_401(client.delete("/v1/cycles"))


def test_invalid_json_without_auth_is_401_not_400(client, key):
    assert_401(client.post("/v1/cycles", data=b"{not json", content_type="application/json"))


def test_invalid_json_with_auth_is_400(client, key):
    assert_error(client.post("/v1/cycles", data=b"{not json", headers=signed(key)), 400)


# --- read-only keys: GET, HEAD and OPTIONS only ----------------------------------------------


@pytest.fixture
def reader(runner, key):
    """A read-only key, beside the read-write `key`."""
    result = runner.invoke(args=["keys", "create", "--name", "reader", "--read-only", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.fixture
def records(client, key):
    """A cycle, an objective and a key result, made with the read-write key."""
    cycle = client.post("/v1/cycles", json={"name": "Q1"}, headers=signed(key)).get_json()
    objective = client.post("/v1/objectives", headers=signed(key), json={
        "name": "Grow", "cycle_id": cycle["id"], "is_company": False, "is_personal": False}).get_json()
    key_result = client.post(f"/v1/objectives/{objective['id']}/keyresults", headers=signed(key),
                             json={"name": "Reach", "type": "positive", "target_value_min": "10"}).get_json()
    return {"cycle": cycle["id"], "objective": objective["id"], "key_result": key_result["id"]}


def dump(app):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        return list(db.iterdump())


def test_a_read_only_key_can_read(client, reader, records):
    assert client.get("/v1/cycles", headers=signed(reader)).get_json()["cycles"][0]["id"] == records["cycle"]
    response = client.get(f"/v1/objectives/{records['objective']}", headers=signed(reader))
    assert response.status_code == 200 and response.get_json()["name"] == "Grow"
    assert client.get(f"/v1/keyresults?cycle_id={records['cycle']}", headers=signed(reader)).status_code == 200
    assert client.head("/v1/cycles", headers=signed(reader)).status_code == 200
    assert client.options("/v1/cycles", headers=signed(reader)).status_code == 204


WRITES = {
    "create": ("post", "/v1/cycles", {"name": "Q2"}),
    "update": ("post", "/v1/cycles/{cycle}", {"name": "renamed"}),
    "delete": ("delete", "/v1/cycles/{cycle}", None),
    "merge patch": ("patch", "/v1/objectives/{objective}", {"name": "patched"}),
    "update key result": ("post", "/v1/keyresults/{key_result}", {"name": "Reach", "type": "baseline"}),
    "delete key result": ("delete", "/v1/keyresults/{key_result}", None),
    "create key result": ("post", "/v1/objectives/{objective}/keyresults", {"name": "K", "type": "baseline"}),
    "method not allowed": ("put", "/v1/cycles", {"name": "Q2"}),
    "unknown path": ("post", "/v1/nowhere", {}),
}


@pytest.mark.parametrize("method, path, body", WRITES.values(), ids=WRITES.keys())
def test_a_read_only_key_gets_403_for_anything_but_reads_and_nothing_changes(
        app, client, reader, records, method, path, body):
    before = dump(app)
    response = getattr(client, method)(path.format(**records), json=body, headers=signed(reader))
    assert "read-only" in assert_error(response, 403)["message"]
    assert "WWW-Authenticate" not in response.headers
    assert dump(app) == before


def test_a_read_only_key_gets_403_before_the_body_is_read(client, reader):
    response = client.post("/v1/cycles", data=b"{not json", content_type="application/json", headers=signed(reader))
    assert_error(response, 403)


def test_a_read_only_write_never_waits_for_the_write_lock(app, client, reader):
    app.config["BUSY_TIMEOUT_MS"] = 100  # a write that waited would end in 503
    with closing(sqlite3.connect(app.config["DATABASE"], isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")
        try:
            assert_error(client.post("/v1/cycles", json={"name": "Q2"}, headers=signed(reader)), 403)
        finally:
            holder.execute("ROLLBACK")


def test_a_read_write_key_still_writes_beside_a_read_only_one(client, key, reader, records):
    response = client.post(f"/v1/cycles/{records['cycle']}", json={"name": "renamed"}, headers=signed(key))
    assert response.status_code == 200, response.get_json()
    assert client.delete(f"/v1/keyresults/{records['key_result']}", headers=signed(key)).status_code == 200
    assert client.get(f"/v1/cycles/{records['cycle']}", headers=signed(reader)).get_json()["name"] == "renamed"


@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_a_bad_signature_with_a_read_only_credential_is_401_not_403(client, reader, method):
    headers = {"Authorization": header(reader["credential"], reader["secret"] + "x")}
    assert_401(getattr(client, method)("/v1/cycles", json={"name": "Q2"} if method == "post" else None,
                                       headers=headers))
    assert_401(getattr(client, method)("/v1/cycles", headers=signed(reader, stamp(timedelta(hours=1)))))


def test_a_revoked_read_only_key_is_401(client, runner, reader):
    revoke(runner, reader["credential"])
    assert_401(client.post("/v1/cycles", json={"name": "Q2"}, headers=signed(reader)))


def test_the_openapi_document_says_403_on_every_write_and_on_no_read_but_sources(client):
    document = client.get("/v1/openapi.json").get_json()
    writes = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            documented = "403" in operation["responses"]
            # and on the reads of the admins' connections, the editors' sources and evidence and a person's inbox
            needs_a_right = path in ADMIN_ONLY or path in EDITOR_ONLY or path in PERSON_ONLY
            assert documented == ((method != "get" or needs_a_right) and path.startswith("/v1/")), (path, method)
            writes += documented
            if documented:
                assert operation["responses"]["403"]["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/ApiError"}
    assert writes >= 12  # every create, replace and delete


# --- loopback and serving --------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "LOCALHOST", "::1", "[::1]"])
def test_loopback_hosts(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.com", "::ffff:8.8.8.8"])
def test_non_loopback_hosts(host):
    assert not is_loopback(host)


@pytest.mark.slow
@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_serve_refuses_non_loopback_host_without_a_key(tmp_path, host):
    # It must exit before binding; the timeout catches a server left listening.
    result = helpers.run_okr("--host", host, "--port", free_port(), "--database", tmp_path / "x.db", cwd=tmp_path,
                             timeout=20)
    assert result.returncode != 0
    assert "okr keys create" in result.stderr


class ServerSpy:
    """Stands in for the waitress server app.py makes, recording its settings instead of serving."""

    def __init__(self, app, calls):
        self.settings = waitress_settings(app.config)
        calls.append(self.settings)

    def print_listen(self, format_str):
        pass

    def run(self):
        pass


@pytest.fixture
def serve_spy(monkeypatch):
    """Replaces the server app.py makes, and its CPU placement (which would pin this test
    process); restores the SIGTERM handler run_server installs. One process: worker processes
    would be forks of this one."""
    calls = []
    monkeypatch.setenv("OKR_WORKERS", "1")
    monkeypatch.setattr(okr.server.startup, "make_server", lambda app: ServerSpy(app, calls))
    monkeypatch.setattr(okr.server.startup, "place_on_cpus", lambda setting: "on all CPUs")
    previous = signal.getsignal(signal.SIGTERM)
    yield calls
    signal.signal(signal.SIGTERM, previous)


def test_serve_refuses_non_loopback_host_in_process(tmp_path, serve_spy):
    with pytest.raises(SystemExit) as exit_info:
        app_module.main(["--host", "0.0.0.0", "--port", "0", "--database", str(tmp_path / "x.db")])
    assert exit_info.value.code not in (0, None)
    assert "okr keys create" in str(exit_info.value.code)
    assert serve_spy == []


@pytest.mark.slow
def test_allow_anonymous_serves_non_loopback_without_a_key(tmp_path, serve_spy):
    app_module.main(["--host", "0.0.0.0", "--port", "0", "--database", str(tmp_path / "x.db"),
                     "--allow-anonymous"])
    assert [call["host"] for call in serve_spy] == ["0.0.0.0"]


def keyed_database(tmp_path, revoked=False):
    path = tmp_path / "keyed.db"
    app = create_app({"TESTING": True, "DATABASE": path})
    with app.app_context():
        init_db()  # okr keys create refuses a missing database
    runner = app.test_cli_runner()
    key = create_key(runner)
    if revoked:
        revoke(runner, key["credential"])
    return path


@pytest.mark.slow
@pytest.mark.parametrize("revoked", [False, True], ids=["active key", "only a revoked key"])
def test_serves_non_loopback_once_a_key_exists(tmp_path, serve_spy, revoked):
    database = keyed_database(tmp_path, revoked)
    app_module.main(["--host", "0.0.0.0", "--port", "0", "--database", str(database)])
    assert [call["host"] for call in serve_spy] == ["0.0.0.0"]


@pytest.mark.slow
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_serves_loopback_without_a_key(tmp_path, serve_spy, host):
    app_module.main(["--host", host, "--port", "0", "--database", str(tmp_path / "x.db")])
    assert [call["host"] for call in serve_spy] == [host]


# --- end to end: a real server, keys managed by the CLI while it runs --------------------------


def http_response(r):
    """An HttpResponse as a werkzeug Response, so that assert_error applies."""
    return Response(r.payload, status=r.status, headers=list(r.headers.items()))


def cli(database, *args):
    result = helpers.run_okr("--database", database, *args, cwd=database.parent, timeout=20)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
def test_end_to_end_signed_requests_and_revocation(tmp_path):
    database = tmp_path / "e2e.db"
    process, http = start_service(free_port(), "--database", str(database), env=helpers.ENV_WITHOUT_OKR)
    try:
        assert http.get("/v1/cycles").status == 200  # open: no key yet

        key = json.loads(cli(database, "keys", "create", "--name", "n", "--json"))
        assert set(key) == {"credential", "secret"}
        unsigned = http_response(http.get("/v1/cycles"))
        assert_401(unsigned)

        auth = lambda: {"Authorization": header(key["credential"], key["secret"])}  # noqa: E731
        cycle = http.post("/v1/cycles", {"name": "Q1"}, headers=auth()).ok()
        assert http.get(f"/v1/cycles/{cycle['id']}", headers=auth()).ok()["name"] == "Q1"

        # The line auth-header prints works as it is.
        line = cli(database, "auth-header", "--credential", key["credential"], "--secret", key["secret"])
        name, _, value = line.strip().partition(": ")
        assert name == "Authorization"
        assert http.get("/v1/cycles", headers={name: value}).ok()["cycles"][0]["id"] == cycle["id"]

        cli(database, "keys", "revoke", key["credential"])
        assert_401(http_response(http.get("/v1/cycles", headers=auth())))
        assert_401(http_response(http.get("/v1/cycles")))  # the last key revoked: still locked
        assert_401(http_response(http.post("/v1/cycles", {"name": "sneaky"})))
        assert http.get("/healthz").ok() == {"status": "ok"}
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=15)[0].decode()
    assert process.returncode == 0, output
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT name FROM cycles").fetchall() == [("Q1",)]
