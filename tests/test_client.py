"""okr.transfer.api_client end to end against real waitress servers on loopback: every method against the service
with a key, and the retry rules against small fake servers that answer 503, refuse, or drop."""
import json
import socket
import threading
import time
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from email.utils import format_datetime

import pytest
from flask import Flask
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from helpers import (KEY_RESULT_FIELDS, OBJECTIVE_FIELDS, USER_FIELDS, free_port, make_user,
                     served_in_thread)
import okr.transfer.api_client as client_module
from okr.transfer.api_client import ApiError, Client, Resource, authorization_header

VECTOR_HEADER = ("S1-HMAC-SHA256 Credential=mycredential&Timestamp=2019-02-03T01:55:37Z"
                 "&Signature=ab9b15c8321dd0e00bbbcc8e33629adcb273b1dfeedb54387cb305fca6c409fa")



@pytest.fixture
def okr(live_server, key):
    with Client(f"http://{live_server.address}", key["credential"], key["secret"], timeout=(2, 20)) as client:
        client._sleep = fail_on_sleep
        yield client


def fail_on_sleep(seconds):
    raise AssertionError(f"the client slept {seconds} s against a healthy server")


class Sleeps(list):
    """Stands in for time.sleep: records each wait instead of waiting."""

    def __call__(self, seconds):
        self.append(seconds)


class RawServer:
    """A loopback HTTP server on bare sockets, one connection at a time: it reads each request whole,
    records it, and then `answer(server, connection, request)` either writes a response and returns
    True (keep the connection) or returns False (close it, whether or not it answered)."""

    def __init__(self, answer):
        self.answer = answer
        self.requests, self.connections = [], 0
        self.closed = threading.Event()  # set each time the server closes a connection
        self.stopping = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stopping.set()
        self.thread.join(timeout=10)
        self.listener.close()

    def run(self):
        while not self.stopping.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            with connection:
                connection.settimeout(0.05)
                self.serve(connection)
            self.closed.set()

    def serve(self, connection):
        buffer = b""
        while not self.stopping.is_set():
            try:
                chunk = connection.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                return
            buffer += chunk
            head, found, rest = buffer.partition(b"\r\n\r\n")
            if not found:
                continue
            lines = head.decode("latin-1").split("\r\n")
            headers = dict(line.split(": ", 1) for line in lines[1:])
            length = int(headers.get("Content-Length", 0))
            if len(rest) < length:
                continue
            method, path, _ = lines[0].split(" ")
            request = {"method": method, "path": path, "headers": headers, "body": rest[:length]}
            buffer = rest[length:]
            self.requests.append(request)
            if not self.answer(self, connection, request):
                return

    def hold(self, connection):
        """Keeps a connection open, unanswered, until the server stops."""
        self.stopping.wait(10)


def respond(connection, status=200, body=b'{"id": "1"}', content_type="application/json", extra=""):
    connection.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\n"
                       f"Content-Length: {len(body)}\r\n{extra}\r\n".encode() + body)


def test_the_signature_is_simple_okrs():
    assert authorization_header("mycredential", "mysecret", "2019-02-03T01:55:37Z") == VECTOR_HEADER


@pytest.mark.slow
def test_each_request_is_signed_afresh_with_a_current_timestamp():
    with RawServer(lambda server, connection, request: respond(connection) or True) as server:
        with Client(server.url, "cred", "secret") as client:
            client.health()
            client.health()
    for request in server.requests:
        scheme, _, params = request["headers"]["Authorization"].partition(" ")
        fields = dict(part.split("=", 1) for part in params.split("&"))
        assert authorization_header("cred", "secret", fields["Timestamp"]) == request["headers"]["Authorization"]
        moment = datetime.strptime(fields["Timestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
        assert abs(datetime.now(timezone.utc) - moment) < timedelta(seconds=30)
    assert server.connections == 1  # both went over one kept-alive connection


@pytest.mark.slow
def test_cycles_and_teams_create_list_get_rename_delete(okr):
    cycle = okr.create_cycle("2026 Q4")
    assert cycle["name"] == "2026 Q4" and set(cycle) == {"id", "name", "created_at"}
    assert okr.create_cycle()["name"] == ""
    assert [c["id"] for c in okr.cycles()][0] == cycle["id"]
    fetched = okr.cycle(cycle["id"])
    assert fetched == cycle and isinstance(fetched, Resource) and fetched.etag
    renamed = okr.rename_cycle(cycle["id"], "2027 Q1", if_match=fetched.etag)
    assert renamed["name"] == "2027 Q1" and renamed.etag != fetched.etag
    okr.delete_cycle(cycle["id"], if_match=renamed.etag)
    assert cycle["id"] not in [c["id"] for c in okr.cycles()]

    team = okr.create_team("Platform")
    assert okr.team(team["id"]) == team
    assert [t["name"] for t in okr.teams()] == ["Platform"]
    assert okr.rename_team(team["id"], "Core")["name"] == "Core"
    assert okr.delete_team(team["id"]) is None
    with pytest.raises(ApiError) as caught:
        okr.team(team["id"])
    assert caught.value.status == 404


@pytest.mark.slow
def test_users_are_listed_and_read(okr, runner):
    ada = make_user(runner, "Ada Lovelace", "ada@example.com")
    make_user(runner, "Grace Hopper", "grace@example.com")
    users = list(okr.users(page_size=1))
    assert [u["email"] for u in users] == ["ada@example.com", "grace@example.com"]
    assert set(users[0]) == USER_FIELDS
    assert okr.user(ada["id"]) == ada
    assert not hasattr(okr, "create_user")  # the API only reads users


@pytest.mark.slow
def test_objectives_create_get_replace_patch_delete(okr):
    cycle = okr.create_cycle("Q1")
    team = okr.create_team("Platform")
    parent = okr.create_objective("Delight customers", cycle["id"], is_company=True)
    objective = okr.create_objective("Faster support", cycle["id"], team_id=team["id"],
                                     parent_objective_id=parent["id"], description="first")
    assert set(objective) == OBJECTIVE_FIELDS
    assert (objective["team_id"], objective["parent_objective_id"]) == (team["id"], parent["id"])
    assert okr.objective(objective["id"]) == objective

    replaced = okr.replace_objective(objective["id"], {**objective, "name": "Faster support desk", "team_id": None})
    assert replaced["name"] == "Faster support desk"
    assert replaced["team_id"] is None and replaced["parent_objective_id"] == parent["id"]
    bare = okr.replace_objective(objective["id"], {"name": "Bare", "cycle_id": cycle["id"]})
    assert bare["parent_objective_id"] is None and bare["description"] is None  # replaced whole

    patched = okr.patch_objective(objective["id"], description="Answer within a day", assignee_id=None)
    assert patched["description"] == "Answer within a day" and patched["name"] == "Bare"
    assert okr.patch_objective(objective["id"], description=None)["description"] is None

    okr.delete_objective(objective["id"])
    with pytest.raises(ApiError) as caught:
        okr.delete_objective(objective["id"])
    assert (caught.value.status, caught.value.code) == (404, 404)


@pytest.mark.slow
def test_lists_follow_page_tokens_with_small_pages(okr, monkeypatch):
    cycle = okr.create_cycle("Q1")
    made = [okr.create_objective(f"Objective {n}", cycle["id"])["id"] for n in range(7)]
    calls = []
    exchange = okr._exchange
    monkeypatch.setattr(okr, "_exchange", lambda *args: calls.append(args[1]) or exchange(*args))
    objectives = okr.objectives(cycle["id"], page_size=2)
    assert len(calls) == 1  # the first page is fetched at once
    assert [o["id"] for o in objectives] == made
    assert len(calls) == 4 and all("page_size=2" in target for target in calls)
    assert "page_token=" in calls[1] and "page_token=" not in calls[0]
    assert [o["id"] for o in okr.objectives(cycle["id"], page_size=7)] == made  # one full page, no more
    assert len(calls) == 5

    objective = made[0]
    for n in range(5):
        okr.create_key_result(objective, f"KR {n}", "baseline")
    assert len(list(okr.objective_key_results(objective, page_size=2))) == 5
    assert len(list(okr.key_results(cycle["id"], page_size=3))) == 5


@pytest.mark.slow
def test_list_filters(okr, runner):
    ada = make_user(runner)
    cycle, team = okr.create_cycle("Q1"), okr.create_team("Platform")
    company = okr.create_objective("Company", cycle["id"], is_company=True)
    teams = okr.create_objective("Team", cycle["id"], team_id=team["id"], parent_objective_id=company["id"])
    personal = okr.create_objective("Mine", cycle["id"], is_personal=True, assignee_id=ada["id"])

    def names(**filters):
        return [o["name"] for o in okr.objectives(cycle["id"], page_size=1, **filters)]

    assert names() == ["Company", "Team", "Mine"]
    assert names(team_id=team["id"]) == ["Team"]
    assert names(assignee_id=ada["id"]) == ["Mine"]
    assert names(parent_objective_id=company["id"]) == ["Team"]
    assert names(parent_objective_id="none") == ["Company", "Mine"]
    assert names(is_company=True) == ["Company"]
    assert names(is_company=False, is_personal=False) == ["Team"]
    assert names(is_personal=True, assignee_id=ada["id"]) == ["Mine"]

    okr.create_key_result(teams["id"], "Tickets", "positive", target_value_min="500")
    okr.create_key_result(teams["id"], "Launch", "milestone")
    okr.create_key_result(personal["id"], "Reading", "baseline")
    assert [k["name"] for k in okr.key_results(cycle["id"], type="baseline")] == ["Reading"]
    assert [k["name"] for k in okr.objective_key_results(teams["id"], type="milestone")] == ["Launch"]
    assert list(okr.objective_key_results(teams["id"], type="range")) == []


@pytest.mark.slow
def test_key_results_create_get_replace_patch_delete_with_decimals_as_strings(okr):
    cycle = okr.create_cycle("Q1")
    objective = okr.create_objective("Faster support", cycle["id"])
    created = okr.create_key_result(objective["id"], "Tickets closed", "positive",
                                    current_value=Decimal("120"), target_value_min="500")
    assert set(created) == KEY_RESULT_FIELDS
    assert (created["current_value"], created["target_value_min"], created["confidence"]) == ("120.00", "500.00", "0.50")
    fetched = okr.key_result(created["id"])
    assert fetched == created and fetched.etag

    replaced = okr.replace_key_result(created["id"], {"name": "Reply hours", "type": "range",
                                                      "target_value_min": "1", "target_value_max": 4.5})
    assert (replaced["type"], replaced["target_value_max"], replaced["current_value"]) == ("range", "4.50", "0.00")
    patched = okr.patch_key_result(created["id"], if_match=replaced.etag, name="Reply time")
    assert patched["name"] == "Reply time" and patched["type"] == "range" and patched.etag != replaced.etag
    with pytest.raises(ApiError) as caught:
        okr.patch_key_result(created["id"], if_match=replaced.etag, name="Stale")
    assert caught.value.status == 412 and "ETag" in caught.value.message
    assert okr.key_result(created["id"])["name"] == "Reply time"
    okr.delete_key_result(created["id"], if_match=patched.etag)
    assert list(okr.objective_key_results(objective["id"])) == []


@pytest.mark.slow
def test_check_ins_and_reports(okr, runner):
    ada = make_user(runner)
    cycle, team = okr.create_cycle("Q1"), okr.create_team("Platform")
    parent = okr.create_objective("Delight customers", cycle["id"], is_company=True)
    objective = okr.create_objective("Faster support", cycle["id"], team_id=team["id"],
                                     parent_objective_id=parent["id"], assignee_id=ada["id"])
    kr = okr.create_key_result(objective["id"], "Tickets closed", "positive",
                               current_value="100", target_value_min="500")
    checkin = okr.check_in(kr["id"], "300", confidence="0.8", comment="new macros", author_id=ada["id"])
    assert {k: checkin[k] for k in ("key_result_id", "value", "confidence", "comment", "author_id")} == {
        "key_result_id": kr["id"], "value": "300.00", "confidence": "0.80", "comment": "new macros",
        "author_id": ada["id"]}
    okr.check_in(kr["id"], Decimal("350"), if_match=okr.key_result(kr["id"]).etag)
    moved = okr.key_result(kr["id"])
    assert (moved["current_value"], moved["confidence"]) == ("350.00", "0.80")  # confidence kept
    history = list(okr.checkins(kr["id"], page_size=2))
    assert [c["value"] for c in history] == ["100.00", "300.00", "350.00"]
    assert [c["comment"] for c in history] == [None, "new macros", None]

    report = okr.cycle_report(cycle["id"])
    assert (report["cycle"]["id"], report["progress"], report["objectives_count"]) == (cycle["id"], "0.62", 2)
    [root] = report["objectives"]
    assert root["id"] == parent["id"] and root["children"][0]["key_results"][0]["status"] == "on_track"
    narrowed = okr.cycle_report(cycle["id"], team_id=team["id"])
    assert [o["id"] for o in narrowed["objectives"]] == [objective["id"]]
    assert okr.cycle_report(cycle["id"], assignee_id=ada["id"])["objectives_count"] == 1
    tree = okr.objective_report(parent["id"])["objective"]
    assert tree["children"][0]["progress"] == "0.62"
    assert okr.health() == {"status": "ok"}


@pytest.mark.slow
def test_errors_carry_status_code_message_and_details(okr):
    cycle = okr.create_cycle("Q1")
    missing = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(ApiError) as caught:
        okr.objective(missing)
    error = caught.value
    assert (error.status, error.code, error.details) == (404, 404, {})
    assert error.message and error.headers["content-type"] == "application/json"

    with pytest.raises(ApiError) as caught:
        okr.create_key_result(okr.create_objective("O", cycle["id"])["id"], "KR", "positive", confidence="2")
    error = caught.value
    assert (error.status, error.code) == (400, 400)
    assert "confidence" in error.details and error.message == "validation failed"
    assert "confidence" in str(error)

    with pytest.raises(ApiError) as caught:
        okr.objectives(cycle["id"], team_id="Platform")  # raised at the call, before iterating
    assert caught.value.status == 400 and "team_id" in caught.value.details
    with pytest.raises(ApiError) as caught:
        okr.objectives(missing)
    assert caught.value.status == 404


@pytest.mark.slow
def test_a_wrong_secret_is_a_401(live_server, key):
    with Client(f"http://{live_server.address}", key["credential"], "not the secret") as client:
        with pytest.raises(ApiError) as caught:
            client.cycles()
        assert client.health() == {"status": "ok"}  # open without a key
    assert (caught.value.status, caught.value.code) == (401, 401)
    assert caught.value.headers["www-authenticate"] == "S1-HMAC-SHA256"
    with Client(f"http://{live_server.address}") as unsigned:
        with pytest.raises(ApiError) as caught:
            unsigned.create_cycle()
    assert caught.value.status == 401


@pytest.mark.slow
def test_a_base_url_with_a_path_prefix(app, key):
    parent = Flask(__name__)
    parent.wsgi_app = DispatcherMiddleware(parent.wsgi_app, {"/okr": app})
    with served_in_thread(parent, threads=2) as served, Client(served.url + "/okr/", key["credential"], key["secret"]) as client:
        cycle = client.create_cycle("Q1")
        assert client.cycle(cycle["id"]) == cycle


@pytest.mark.slow
def test_one_client_serves_several_threads(okr):
    cycle = okr.create_cycle("Q1")
    failures = []

    def work():
        try:
            for _ in range(10):
                assert okr.cycle(cycle["id"])["id"] == cycle["id"]
        except Exception as error:  # reported below
            failures.append(error)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert failures == []


@pytest.mark.slow
def test_a_non_json_error_body_still_gives_an_api_error():
    def proxy(environ, start_response):
        start_response("502 Bad Gateway", [("Content-Type", "text/plain")])
        return [b"upstream is down\n"]

    with served_in_thread(proxy, threads=2) as served, Client(served.url) as client:
        with pytest.raises(ApiError) as caught:
            client.cycles()
    error = caught.value
    assert (error.status, error.code, error.message, error.details) == (502, 502, "upstream is down", {})
    assert error.body == b"upstream is down\n"


@pytest.mark.slow
def test_a_non_json_success_is_an_api_error():
    def page(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/html")])
        return [b"<html>the dashboard</html>"]

    with served_in_thread(page, threads=2) as served, Client(served.url) as client:
        with pytest.raises(ApiError, match="not JSON"):
            client.cycles()


class Flaky:
    """A WSGI app answering `status` with Retry-After `after` to its first `failures` calls, then 200."""

    def __init__(self, failures, status=503, after="2"):
        self.failures, self.status, self.after, self.calls = failures, status, after, 0

    def __call__(self, environ, start_response):
        self.calls += 1
        if self.calls <= self.failures:
            headers = [("Content-Type", "application/json")]
            if self.after is not None:
                headers.append(("Retry-After", self.after))
            start_response(f"{self.status} Busy", headers)
            return [json.dumps({"code": self.status, "message": "database busy, retry shortly"}).encode()]
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b'{"id": "c1", "name": "Q1", "created_at": "2026-01-01T00:00:00Z"}']


@pytest.mark.slow
@pytest.mark.parametrize("status", [503, 429])
def test_a_busy_answer_is_retried_after_retry_after(status):
    app, sleeps = Flaky(failures=2, status=status), Sleeps()
    with served_in_thread(app, threads=2) as served, Client(served.url, "c", "s", retries=3) as client:
        client._sleep = sleeps
        assert client.cycle("c1")["name"] == "Q1"
        assert client.rename_cycle("c1", "Q1")["id"] == "c1"  # POST-replace is idempotent
    assert app.calls == 4 and sleeps == [2.0, 2.0]


@pytest.mark.slow
def test_retry_after_is_capped_and_read_as_a_date_too():
    app, sleeps = Flaky(failures=1, after="3600"), Sleeps()
    with served_in_thread(app, threads=2) as served, Client(served.url, max_wait=5) as client:
        client._sleep = sleeps
        client.cycle("c1")
        app.calls, app.after = 0, format_datetime(datetime.now(timezone.utc) + timedelta(seconds=3), usegmt=True)
        client.cycle("c1")
        app.calls, app.after = 0, None  # no Retry-After: exponential backoff
        client.cycle("c1")
    assert sleeps[0] == 5.0 and 1 < sleeps[1] <= 3 and 0.25 <= sleeps[2] <= 0.5


@pytest.mark.slow
def test_retrying_a_503_stops_after_the_retries():
    app, sleeps = Flaky(failures=100), Sleeps()
    with served_in_thread(app, threads=2) as served, Client(served.url, retries=2) as client:
        client._sleep = sleeps
        with pytest.raises(ApiError) as caught:
            client.cycles()
    assert app.calls == 3 and len(sleeps) == 2
    assert (caught.value.status, caught.value.message) == (503, "database busy, retry shortly")
    assert caught.value.headers["retry-after"] == "2"


@pytest.mark.parametrize("create", [
    lambda client: client.create_cycle("Q1"),
    lambda client: client.create_objective("O", "c1"),
    lambda client: client.create_key_result("o1", "KR", "baseline"),
    lambda client: client.check_in("k1", "1"),
])
@pytest.mark.slow
def test_a_create_answered_503_is_not_retried(create):
    app, sleeps = Flaky(failures=1), Sleeps()
    with served_in_thread(app, threads=2) as served, Client(served.url) as client:
        client._sleep = sleeps
        with pytest.raises(ApiError) as caught:
            create(client)
    assert caught.value.status == 503 and app.calls == 1 and sleeps == []


@pytest.mark.slow
def test_connection_refused_is_retried_with_backoff_then_an_error():
    sleeps = Sleeps()
    with Client(f"http://127.0.0.1:{free_port()}", retries=3, backoff=0.5) as client:
        client._sleep = sleeps
        started = time.monotonic()
        with pytest.raises(ApiError) as caught:
            client.cycles()
        assert len(sleeps) == 3
        with pytest.raises(ApiError):
            client.create_cycle("Q1")  # never sent, so a create is retried too
    assert time.monotonic() - started < 5
    assert caught.value.status is None and "4 attempts" in caught.value.message
    assert isinstance(caught.value.__cause__, ConnectionRefusedError)
    assert len(sleeps) == 6
    for attempt, seconds in enumerate(sleeps[:3]):
        assert 0.5 * 2 ** attempt / 2 <= seconds <= 0.5 * 2 ** attempt


def drop_unanswered(server, connection, request):
    return False


@pytest.mark.parametrize("call, idempotent", [
    (lambda client: client.create_cycle("Q1"), False),
    (lambda client: client.create_objective("O", "c1"), False),
    (lambda client: client.create_key_result("o1", "KR", "baseline"), False),
    (lambda client: client.check_in("k1", "1"), False),
    (lambda client: client.cycles(), True),
    (lambda client: client.replace_objective("o1", {"name": "O", "cycle_id": "c1"}), True),
    (lambda client: client.patch_key_result("k1", name="KR"), True),
    (lambda client: client.delete_team("t1"), True),
])
@pytest.mark.slow
def test_a_connection_dropped_after_sending_is_retried_only_when_idempotent(call, idempotent):
    sleeps = Sleeps()
    with RawServer(drop_unanswered) as server, Client(server.url, retries=2) as client:
        client._sleep = sleeps
        with pytest.raises(ApiError) as caught:
            call(client)
    assert caught.value.status is None
    if idempotent:
        assert len(server.requests) == 3 and len(sleeps) == 2
    else:
        assert len(server.requests) == 1 and sleeps == []  # the server saw it once
        assert "may have been applied" in caught.value.message


@pytest.mark.slow
def test_a_create_goes_out_on_a_fresh_connection_when_the_kept_one_was_closed():
    def answer_then_close(server, connection, request):
        respond(connection)  # no Connection: close, so the client keeps the connection
        return False

    with RawServer(answer_then_close) as server, Client(server.url) as client:
        client._sleep = fail_on_sleep
        client.cycle("c1")
        assert server.closed.wait(5)
        time.sleep(0.05)  # the FIN crosses loopback
        assert client.create_cycle("Q2") == {"id": "1"}
    assert len(server.requests) == 2 and server.connections == 2


@pytest.mark.slow
def test_a_kept_connection_found_closed_only_after_sending(monkeypatch):
    """When the closed connection is not seen before sending: a read is sent again at once on a
    new connection; a create is not, since the server might have taken it."""
    def answer_then_close(server, connection, request):
        respond(connection)
        return False

    monkeypatch.setattr(client_module, "_dropped", lambda sock: False)
    with RawServer(answer_then_close) as server, Client(server.url) as client:
        client._sleep = fail_on_sleep
        for _ in range(2):
            server.closed.clear()
            assert client.cycle("c1") == {"id": "1"}
            assert server.closed.wait(5)
        with pytest.raises(ApiError, match="may have been applied"):
            client.create_cycle("Q1")
    assert [r["method"] for r in server.requests] == ["GET", "GET"] and server.connections == 2


@pytest.mark.slow
def test_a_header_http_client_refuses_leaves_the_client_usable():
    with RawServer(lambda server, connection, request: respond(connection) or True) as server:
        with Client(server.url, "cred", "secret") as client:
            client.health()
            with pytest.raises(ValueError):
                client.request("GET", "/healthz", headers={"X-Bad": "a\r\nInjected: yes"})
            assert client.create_cycle("Q1") == {"id": "1"}
    assert [r["method"] for r in server.requests] == ["GET", "POST"]


@pytest.mark.slow
def test_a_read_timeout_is_an_error_and_not_retried():
    def never_answer(server, connection, request):
        server.hold(connection)
        return False

    with RawServer(never_answer) as server, Client(server.url, timeout=(1, 0.2)) as client:
        client._sleep = fail_on_sleep
        started = time.monotonic()
        with pytest.raises(ApiError) as caught:
            client.cycles()
        assert time.monotonic() - started < 2
        assert len(server.requests) == 1
    assert caught.value.status is None and "no answer within 0.2 s" in caught.value.message


def test_bad_arguments_are_refused_at_once():
    with pytest.raises(ValueError):
        Client("http://127.0.0.1:1", credential="c")
    with pytest.raises(ValueError):
        Client("127.0.0.1:8080")
