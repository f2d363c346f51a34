"""Outbound webhooks (issue 24): what a delivery looks like, its order, its retries on a fake clock, the
hook disabled and enabled again, and the addresses a hook may not reach."""
import ipaddress
import json
import socket
import sqlite3
import threading
import time
from email.utils import formatdate
from types import SimpleNamespace

import pytest
from standardwebhooks.webhooks import Webhook

from helpers import make_cycle, make_team
import okr.outbound.webhook_queue as deliverer_module
from okr import create_app
from okr.outbound import webhook_request
from okr.db import transaction
from okr.outbound.webhook_queue import Deliverer, Dispatcher
from okr.store import cycles, events

from hooks import add_hook, resolving_to


def rows(app, sql, *params):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        return db.execute(sql, params).fetchall()


def stored_events(app, event_type=None):
    """The events as event_json renders them, in order."""
    with sqlite3.connect(app.config["DATABASE"]) as db:
        db.row_factory = sqlite3.Row
        found = db.execute("SELECT * FROM events ORDER BY seq").fetchall()
    return [events.event_json(row) for row in found if event_type is None or row["type"] == event_type]


def waiting(app, hook):
    return [row[0] for row in rows(app, "SELECT e.id FROM webhook_outbox o JOIN events e ON e.seq = o.event_seq "
                                        "WHERE o.hook_seq = ? ORDER BY o.seq", hook["seq"])]


def is_active(app, hook):
    return rows(app, "SELECT is_active, disabled_reason FROM webhooks WHERE seq = ?", hook["seq"])[0]


# --- what arrives ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_delivery_is_the_event_signed_per_standard_webhooks(app, client, runner, receiver, deliverer):
    hook = add_hook(runner, receiver.url, "--allow-private")
    assert hook["secret"].startswith("whsec_") and len(webhook_request.secret_bytes(hook["secret"])) == 24
    cycle = make_cycle(client)
    assert deliverer.deliver_due(hook["seq"]) is None
    [request] = receiver.wait_for(1)
    [event] = stored_events(app)
    # Any Standard Webhooks library accepts it: the reference one verifies the signature and the timestamp.
    assert Webhook(hook["secret"]).verify(request["body"], request["headers"]) == event
    assert json.loads(request["body"]) == event
    assert event["type"] == "cycle.created" and event["data"]["id"] == cycle["id"]
    assert set(event) == {"id", "type", "created_at", "actor", "resource", "data"}
    assert request["headers"]["webhook-id"] == event["id"]
    assert request["headers"]["Content-Type"] == "application/json"
    assert abs(int(request["headers"]["webhook-timestamp"]) - time.time()) < 60
    assert request["path"] == "/hook"
    with pytest.raises(Exception):
        Webhook(hook["secret"]).verify(request["body"] + b" ", request["headers"])
    # Delivered: out of the outbox, into the log.
    assert waiting(app, hook) == []
    assert rows(app, "SELECT event_id, event_type, status, error FROM webhook_deliveries") == [
        (event["id"], "cycle.created", 204, None)]


@pytest.mark.slow
def test_a_hook_gets_the_events_its_patterns_match_in_order(app, client, runner, receiver, other_receiver,
                                                            deliverer):
    teams_hook = add_hook(runner, receiver.url, "--allow-private", "--events", "team.*")
    cycles_hook = add_hook(runner, other_receiver.url, "--allow-private", "--events", "cycle.created")
    made = [make_team(client, f"T{index}")["id"] if index % 2 else make_cycle(client, f"C{index}")["id"]
            for index in range(20)]
    for hook in (teams_hook, cycles_hook):
        deliverer.deliver_due(hook["seq"])
    assert [event["data"]["id"] for event in receiver.events()] == made[1::2]
    assert [event["data"]["id"] for event in other_receiver.events()] == made[0::2]
    assert [request["headers"]["webhook-id"] for request in receiver.requests] == \
        [event["id"] for event in stored_events(app, "team.created")]


@pytest.mark.slow
def test_the_outbox_is_written_in_the_changes_transaction(app, runner, receiver):
    hook = add_hook(runner, receiver.url, "--allow-private")
    with app.app_context():
        with pytest.raises(RuntimeError), transaction() as db:
            cycles.create(db, "Rolled back")
            assert rows(app, "SELECT count(*) FROM webhook_outbox")[0][0] == 0  # not before the commit
            raise RuntimeError("the change fails")
        assert rows(app, "SELECT count(*) FROM webhook_outbox")[0][0] == 0
        with transaction() as db:
            cycles.create(db, "Kept")
    assert len(waiting(app, hook)) == 1


@pytest.mark.slow
def test_a_receiver_that_fails_then_recovers_gets_every_event_in_order_with_the_same_ids(
        app, client, runner, receiver, fake_clock):
    hook = add_hook(runner, receiver.url, "--allow-private")
    deliverer = Deliverer(app.config["DATABASE"], clock=fake_clock, rand=lambda: 0.5)
    made = [make_cycle(client, f"C{index}")["id"] for index in range(3)]
    receiver.status = 500
    assert deliverer.deliver_due(hook["seq"]) == fake_clock.now + 5
    assert len(receiver.requests) == 1  # the first failed: the others wait behind it
    fake_clock.advance(4)
    assert deliverer.deliver_due(hook["seq"]) == fake_clock.now + 1  # not due yet: nothing sent
    assert len(receiver.requests) == 1
    receiver.status = 200
    fake_clock.advance(1)
    assert deliverer.deliver_due(hook["seq"]) is None
    assert [event["data"]["id"] for event in receiver.events()] == [made[0], *made]
    ids = [request["headers"]["webhook-id"] for request in receiver.requests]
    assert ids[0] == ids[1] and ids[1:] == [event["id"] for event in stored_events(app)]
    assert waiting(app, hook) == []
    log = rows(app, "SELECT status, error FROM webhook_deliveries ORDER BY seq")
    assert log[0][0] == 500 and "HTTP 500" in log[0][1] and [status for status, _ in log[1:]] == [200] * 3
    deliverer.close()


# --- retries and disabling, on a fake clock ----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("jitter", [0.0, 1.0])
def test_the_retry_schedule_then_the_hook_is_disabled_until_enabled(app, client, runner, receiver, fake_clock,
                                                                  jitter):
    hook = add_hook(runner, receiver.url, "--allow-private")
    deliverer = Deliverer(app.config["DATABASE"], clock=fake_clock, rand=lambda: jitter)
    made = [make_cycle(client, f"C{index}")["id"] for index in range(3)]
    receiver.status = 503
    schedule = [5, 300, 1800, 7200, 18000, 36000, 36000]
    for attempt, base in enumerate(schedule, 1):
        next_at = deliverer.deliver_due(hook["seq"])
        assert len(receiver.requests) == attempt
        # rand 0 is the schedule's -10 %, rand 1 its +10 %.
        assert next_at - fake_clock.now == pytest.approx(base * (0.9 if jitter == 0.0 else 1.1))
        fake_clock.advance(base * 0.85)
        assert deliverer.deliver_due(hook["seq"]) == next_at  # too early: nothing sent
        assert len(receiver.requests) == attempt
        fake_clock.now = next_at
    # The 7th retry fails: the delivery has failed, and the hook is disabled.
    assert deliverer.deliver_due(hook["seq"]) is None
    assert len(receiver.requests) == 8
    active, reason = is_active(app, hook)
    assert active == 0 and "after 8 attempts" in reason and "HTTP 503" in reason
    fake_clock.advance(100 * 3600)
    assert deliverer.deliver_due(hook["seq"]) is None  # a disabled hook's events wait
    assert len(receiver.requests) == 8
    assert len(waiting(app, hook)) == 3
    listed = runner.invoke(args=["webhooks", "list"]).output
    assert "disabled (delivery failed after 8 attempts" in listed and "3 waiting" in listed
    # Enabled again: from the first undelivered event, at once, in order.
    receiver.status = 204
    result = runner.invoke(args=["webhooks", "enable", hook["id"]])
    assert result.exit_code == 0 and "3 waiting events" in result.output
    assert deliverer.deliver_due(hook["seq"]) is None
    assert [event["data"]["id"] for event in receiver.events()] == [made[0]] * 8 + made
    assert waiting(app, hook) == [] and is_active(app, hook) == (1, None)
    deliverer.close()


def test_the_retry_delays_are_the_schedule_within_ten_percent():
    for failures, base in enumerate(webhook_request.RETRY_SCHEDULE, 1):
        delays = [webhook_request.retry_delay(failures) for _ in range(200)]
        assert all(base * 0.9 <= delay <= base * 1.1 for delay in delays)
        assert len(set(delays)) > 1
    assert webhook_request.retry_delay(len(webhook_request.RETRY_SCHEDULE) + 1) is None


def test_the_retry_schedule_is_a_setting(monkeypatch, tmp_path, clean_env):
    monkeypatch.setenv("OKR_WEBHOOK_RETRY_SCHEDULE", "1, 2.5")
    app = create_app({"DATABASE": tmp_path / "okr.db"})
    assert app.config["WEBHOOK_RETRY_SCHEDULE"] == (1, 2.5)
    assert 0.9 <= webhook_request.retry_delay(1, schedule=(1, 2.5)) <= 1.1
    assert webhook_request.retry_delay(3, schedule=(1, 2.5)) is None
    dispatched = []
    monkeypatch.setattr(deliverer_module, "Dispatcher",
                        lambda deliverer, stop: SimpleNamespace(run=lambda: dispatched.append(deliverer)))
    deliverer_module.deliver_webhooks(app, threading.Event())
    assert dispatched[0].retry_schedule == (1, 2.5)


@pytest.mark.slow
def test_a_shorter_retry_schedule_disables_the_hook_sooner(app, client, runner, receiver, fake_clock):
    hook = add_hook(runner, receiver.url, "--allow-private")
    deliverer = Deliverer(app.config["DATABASE"], clock=fake_clock, rand=lambda: 0.5, retry_schedule=(2,))
    make_cycle(client)
    receiver.status = 503
    assert deliverer.deliver_due(hook["seq"]) == fake_clock.now + 2
    fake_clock.advance(2)
    assert deliverer.deliver_due(hook["seq"]) is None
    active, reason = is_active(app, hook)
    assert len(receiver.requests) == 2 and active == 0 and "after 2 attempts" in reason
    deliverer.close()


@pytest.mark.slow
def test_a_410_disables_the_hook_at_once(app, client, runner, receiver, fake_clock):
    hook = add_hook(runner, receiver.url, "--allow-private")
    deliverer = Deliverer(app.config["DATABASE"], clock=fake_clock)
    make_cycle(client, "A")
    make_cycle(client, "B")
    receiver.status = 410
    assert deliverer.deliver_due(hook["seq"]) is None
    assert is_active(app, hook) == (0, "the receiver answered 410 Gone")
    assert len(receiver.requests) == 1 and len(waiting(app, hook)) == 2
    deliverer.close()


@pytest.mark.slow
@pytest.mark.parametrize("retry_after", ["120", "date"])
def test_retry_after_is_honoured(app, client, runner, receiver, fake_clock, retry_after):
    hook = add_hook(runner, receiver.url, "--allow-private")
    # The receiver's date is the real clock's: so is this deliverer's.
    fake_clock.now = time.time()
    deliverer = Deliverer(app.config["DATABASE"], clock=fake_clock, rand=lambda: 0.5)
    make_cycle(client)
    header = "120" if retry_after == "120" else formatdate(fake_clock.now + 120, usegmt=True)
    receiver.answers = [(503, {"Retry-After": header})]
    next_at = deliverer.deliver_due(hook["seq"])
    assert next_at - fake_clock.now == pytest.approx(120, abs=1.5)
    deliverer.close()


@pytest.mark.slow
def test_a_redirect_is_not_followed(app, client, runner, receiver, other_receiver, deliverer):
    hook = add_hook(runner, receiver.url, "--allow-private")
    make_cycle(client)
    receiver.status = (302, {"Location": other_receiver.url})
    assert deliverer.deliver_due(hook["seq"]) is not None
    assert len(receiver.requests) == 1 and other_receiver.requests == []
    [(status, error)] = rows(app, "SELECT status, error FROM webhook_deliveries")
    assert status == 302 and "redirects are not followed" in error


@pytest.mark.slow
def test_no_answer_within_the_timeout_is_a_failure(app, client, runner, receiver, deliverer, monkeypatch):
    monkeypatch.setattr(webhook_request, "TIMEOUT_SECONDS", 0.3)
    hook = add_hook(runner, receiver.url, "--allow-private")
    make_cycle(client)
    receiver.delay = 2
    started = time.monotonic()
    assert deliverer.deliver_due(hook["seq"]) is not None
    assert time.monotonic() - started < 1.5
    [(status, error)] = rows(app, "SELECT status, error FROM webhook_deliveries")
    assert status is None and "timed out" in error


# A receiver that answers a byte every 1.5 s: its head (status line and headers), or its body.
TRICKLED = {
    "head": (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Slow: ", b"abcdefghij\r\n\r\n"),
    "body": (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", b"abcdefghij"),
}
QUICK = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"


def timed_post(url, timeout, pool=None):
    """post() of {} to url within timeout seconds: (Outcome, seconds it took)."""
    started = time.monotonic()
    outcome = webhook_request.post(url, b"{}", {"Content-Type": "application/json"}, True, timeout=timeout, pool=pool)
    return outcome, time.monotonic() - started


@pytest.mark.slow
def test_a_receiver_trickling_its_answer_holds_the_sender_no_longer_than_the_timeout(
        app, client, runner, trickling, deliverer, monkeypatch):
    """The timeout covers the whole delivery, connect to last byte: a socket's timeout is per read, and a byte
    every 1.5 s kept a delivery open for a minute."""
    monkeypatch.setattr(webhook_request, "TIMEOUT_SECONDS", 2)
    trickler = trickling(*TRICKLED["head"])
    hook = add_hook(runner, trickler.url, "--allow-private")
    make_cycle(client)
    started = time.monotonic()
    assert deliverer.deliver_due(hook["seq"]) is not None
    assert time.monotonic() - started < 3.5
    assert not trickler.sent.is_set()
    [(status, error)] = rows(app, "SELECT status, error FROM webhook_deliveries")
    assert status is None and error == "timed out after 2 s"


@pytest.mark.slow
@pytest.mark.parametrize("part", TRICKLED)
def test_a_trickled_answer_is_cut_off_at_the_deadline(trickling, part):
    trickler = trickling(*TRICKLED[part])
    outcome, took = timed_post(trickler.url, timeout=2)
    assert (outcome.status, outcome.error) == (None, "timed out after 2 s")
    assert took < 3.5 and not trickler.sent.is_set()


@pytest.mark.slow
def test_a_trickled_answer_over_tls_is_cut_off_at_the_deadline(trickling, certificate):
    trickler = trickling(*TRICKLED["body"], tls=certificate)
    assert trickler.url.startswith("https://")
    outcome, took = timed_post(trickler.url, timeout=2)
    assert (outcome.status, outcome.error) == (None, "timed out after 2 s")
    assert took < 3.5 and not trickler.sent.is_set()


@pytest.mark.slow
def test_a_kept_alive_connection_gets_a_fresh_deadline_for_each_delivery_and_no_more(trickling):
    trickler = trickling(*TRICKLED["head"], before=[QUICK])
    pool = {}
    try:
        outcome, _ = timed_post(trickler.url, timeout=2, pool=pool)
        assert outcome.status == 204 and len(pool) == 1  # kept for the next delivery
        outcome, took = timed_post(trickler.url, timeout=2, pool=pool)
        assert (outcome.status, outcome.error) == (None, "timed out after 2 s")
        assert took < 3.5 and not trickler.sent.is_set()
    finally:
        webhook_request.close_pool(pool)


def test_a_dead_receiver_is_a_failure(app, client, runner, deliverer):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    hook = add_hook(runner, f"http://127.0.0.1:{port}/", "--allow-private")
    make_cycle(client)
    assert deliverer.deliver_due(hook["seq"]) is not None
    [(status, error)] = rows(app, "SELECT status, error FROM webhook_deliveries")
    assert status is None and "cannot connect" in error


# --- private addresses --------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8080/", "http://localhost/", "http://10.1.2.3/", "http://192.168.0.10/",
    "http://169.254.169.254/latest/meta-data", "http://[::1]/", "http://224.0.0.1/", "http://0.0.0.0/",
    "http://[::ffff:127.0.0.1]/", "http://100.64.0.1/", "https://[fe80::1]/",
    "http://[2002:7f00:1::]/", "http://[2002:a9fe:a9fe::]/latest/meta-data",  # 6to4 of 127.0.0.1, 169.254.169.254
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",  # Teredo
])
def test_a_private_url_is_refused_without_allow_private(app, runner, url):
    result = runner.invoke(args=["webhooks", "add", url])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "--allow-private" in result.output
    assert rows(app, "SELECT count(*) FROM webhooks")[0][0] == 0


@pytest.mark.slow
def test_a_name_that_resolves_inside_is_refused_at_add_and_at_delivery(app, client, runner, receiver, deliverer,
                                                                      monkeypatch):
    port = receiver.url.split(":")[2].split("/")[0]
    url = f"http://hooks.example.test:{port}/hook"
    resolving_to(monkeypatch, "127.0.0.1")
    refused = runner.invoke(args=["webhooks", "add", url])
    assert refused.exit_code == 1 and "resolves to 127.0.0.1" in refused.output
    resolving_to(monkeypatch, "93.184.215.14")  # public when added...
    hook = add_hook(runner, url)
    make_cycle(client)
    resolving_to(monkeypatch, "127.0.0.1")  # ...and later inside: refused at delivery, nothing sent
    assert deliverer.deliver_due(hook["seq"]) is not None
    assert receiver.requests == []
    [(status, error)] = rows(app, "SELECT status, error FROM webhook_deliveries")
    assert status is None and error.startswith("refused: hooks.example.test resolves to 127.0.0.1")


def test_is_public():
    assert webhook_request.is_public(ipaddress.ip_address("93.184.215.14"))
    assert webhook_request.is_public(ipaddress.ip_address("2606:2800:21f:cb07:6820:80da:af6b:8b2c"))
    for private in ("127.0.0.2", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.1.1", "239.1.1.1",
                    "255.255.255.255", "::", "fc00::1", "ff02::1", "::ffff:10.0.0.1"):
        assert not webhook_request.is_public(ipaddress.ip_address(private)), private


@pytest.mark.parametrize("address, public", [
    ("2002:7f00:1::", False),  # 6to4 of 127.0.0.1
    ("2002:a9fe:a9fe::1", False),  # of 169.254.169.254, the cloud's metadata service
    ("2002:a00:1::", False),  # of 10.0.0.1
    ("2002:c0a8:101:1::1", False),  # of 192.168.1.1
    ("2002:6464:1::", False),  # of 100.100.0.1 (shared)
    ("2002:5db8:d70e::1", True),  # of 93.184.215.14, a public address
    ("2001::1", False),  # Teredo, refused as ever
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),
    ("::ffff:93.184.215.14", True),  # mapped, as ever
])
def test_an_ipv6_address_carrying_an_ipv4_one_is_judged_as_the_one_it_carries(address, public):
    assert webhook_request.is_public(ipaddress.ip_address(address)) is public


# --- the deliverer's threads ----------------------------------------------------------------------------------


@pytest.fixture
def dispatcher(app):
    stop = threading.Event()
    running = Dispatcher(Deliverer(app.config["DATABASE"], stop=stop), stop)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    yield running
    stop.set()
    thread.join(timeout=20)
    assert not thread.is_alive()


@pytest.mark.slow
def test_a_slow_receiver_does_not_hold_up_another_hook(app, client, runner, receiver, other_receiver, dispatcher):
    add_hook(runner, receiver.url, "--allow-private")
    add_hook(runner, other_receiver.url, "--allow-private")
    receiver.delay = 3
    started = time.monotonic()
    made = [make_cycle(client, f"C{index}")["id"] for index in range(5)]
    other_receiver.wait_for(5)
    assert time.monotonic() - started < 2
    assert [event["data"]["id"] for event in other_receiver.events()] == made
    assert len(receiver.requests) <= 1


@pytest.mark.slow
def test_the_dispatcher_delivers_soon_after_each_commit(app, client, runner, receiver, dispatcher):
    add_hook(runner, receiver.url, "--allow-private")
    for index in range(10):
        committed = time.monotonic()
        make_cycle(client, f"C{index}")
        receiver.wait_for(index + 1, timeout=5)
        assert receiver.requests[index]["at"] - committed < 1
    assert [event["id"] for event in receiver.events()] == [event["id"] for event in stored_events(app)]
