"""okr webhooks: add, list, remove, enable, test, deliveries; and `okr export` leaves the hooks out."""
import json
import re
import sqlite3

import pytest
from standardwebhooks.webhooks import Webhook

from helpers import make_cycle
from okr.outbound import webhook_request
from okr.rules.webhook_receivers import new_secret

from hooks import add_hook


def invoke(runner, *args):
    return runner.invoke(args=list(args))


def one_line_error(result):
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: ") or result.output.startswith("okr: "), result.output
    assert result.output.count("\n") == 1, result.output
    return result.output


@pytest.mark.slow
def test_add_prints_the_id_and_the_secret_once(app, runner, receiver):
    result = invoke(runner, "webhooks", "add", receiver.url, "--allow-private", "--events", "objective.*, checkin.created")
    assert result.exit_code == 0, result.output
    hook_id = re.search(r"^id: +(\S+)$", result.output, re.M).group(1)
    secret = re.search(r"^secret: +(whsec_\S+)$", result.output, re.M).group(1)
    assert "objective.*,checkin.created" in result.output
    listed = invoke(runner, "webhooks", "list")
    assert hook_id in listed.output and "active" in listed.output and secret not in listed.output
    [shown] = [json.loads(line) for line in invoke(runner, "webhooks", "list", "--json").output.splitlines()]
    assert shown == {"id": hook_id, "url": receiver.url, "format": "events",
                     "events": ["objective.*", "checkin.created"], "allow_private": True, "is_active": True,
                     "disabled_reason": None, "created_at": shown["created_at"], "pending": 0}


@pytest.mark.slow
def test_events_default_to_every_event(app, runner, receiver):
    assert add_hook(runner, receiver.url, "--allow-private")["events"] == ["*"]


@pytest.mark.parametrize("url, message", [
    ("ftp://example.com/", "http:// or https://"),
    ("https://user:pw@example.com/", "credentials"),
    ("https:///path", "no host"),
    ("not a url", "spaces"),
    ("https://example.com:99999/", "not valid"),
])
def test_a_bad_url_is_refused_in_one_line(app, runner, url, message):
    assert message in one_line_error(invoke(runner, "webhooks", "add", url))


@pytest.mark.slow
def test_a_bad_pattern_is_refused(app, runner, receiver):
    output = one_line_error(invoke(runner, "webhooks", "add", receiver.url, "--allow-private", "--events", "Objective;"))
    assert "not an event pattern" in output


@pytest.mark.slow
def test_a_slack_hook_takes_no_events_and_gets_a_slack_message(app, runner, receiver):
    output = one_line_error(invoke(runner, "webhooks", "add", receiver.url, "--allow-private", "--format", "slack",
                                   "--events", "*"))
    assert "weekly digest" in output
    hook = add_hook(runner, receiver.url, "--allow-private", "--format", "slack")
    assert hook["format"] == "slack" and hook["events"] == []
    with sqlite3.connect(app.config["DATABASE"]) as db:
        db.row_factory = sqlite3.Row
        row = db.execute("SELECT * FROM webhooks WHERE id = ?", (hook["id"],)).fetchone()
    outcome = webhook_request.post_slack(row, {"text": "Weekly digest", "blocks": []})
    assert outcome.ok
    [request] = receiver.requests
    assert json.loads(request["body"]) == {"text": "Weekly digest", "blocks": []}
    Webhook(hook["secret"]).verify(request["body"], request["headers"])


@pytest.mark.slow
def test_a_slack_hook_gets_no_events(app, client, runner, receiver, deliverer):
    hook = add_hook(runner, receiver.url, "--allow-private", "--format", "slack")
    make_cycle(client)
    with sqlite3.connect(app.config["DATABASE"]) as db:
        assert db.execute("SELECT count(*) FROM webhook_outbox").fetchone()[0] == 0
    assert deliverer.deliver_due(hook["seq"]) is None and receiver.requests == []


def test_a_slack_message_to_a_private_address_is_refused(app, runner):
    row = {"url": "http://10.0.0.1/slack", "secret": new_secret(), "allow_private": 0}
    outcome = webhook_request.post_slack(row, {"text": "x"})
    assert not outcome.ok and outcome.error.startswith("refused:")


@pytest.mark.slow
def test_test_sends_a_signed_ping_and_logs_it(app, runner, receiver):
    hook = add_hook(runner, receiver.url, "--allow-private")
    result = invoke(runner, "webhooks", "test", hook["id"])
    assert result.exit_code == 0 and "ping delivered: HTTP 204" in result.output
    [request] = receiver.requests
    ping = Webhook(hook["secret"]).verify(request["body"], request["headers"])
    assert ping["type"] == "ping" and ping["id"] == request["headers"]["webhook-id"]
    assert ping["resource"] == {"type": "webhook", "id": hook["id"]}
    [line] = invoke(runner, "webhooks", "deliveries", hook["id"]).output.splitlines()
    assert " 204  ping  " in line
    receiver.status = 500
    assert "ping failed: HTTP 500" in one_line_error(invoke(runner, "webhooks", "test", hook["id"]))
    attempts = [json.loads(line) for line in invoke(runner, "webhooks", "deliveries", hook["id"], "--json").output.splitlines()]
    assert [attempt["status"] for attempt in attempts] == [500, 204]  # newest first
    assert set(attempts[0]) == {"event_id", "event_type", "attempted_at", "status", "error"}


@pytest.mark.slow
def test_deliveries_keeps_the_last_hundred_attempts(app, runner, receiver):
    hook = add_hook(runner, receiver.url, "--allow-private")
    from okr.db import transaction
    from okr.store import webhooks
    with app.app_context(), transaction() as db:
        for index in range(130):
            webhooks.log_attempts(db, hook["seq"], [(f"e{index}", "x.y", "2026-01-01T00:00:00Z", 200, None)])
    lines = invoke(runner, "webhooks", "deliveries", hook["id"]).output.splitlines()
    assert len(lines) == 100 and "e129" in lines[0] and "e30" in lines[-1]


@pytest.mark.slow
def test_remove_drops_the_hook_and_its_waiting_events(app, client, runner, receiver):
    hook = add_hook(runner, receiver.url, "--allow-private")
    make_cycle(client)
    result = invoke(runner, "webhooks", "remove", hook["id"])
    assert result.exit_code == 0 and hook["id"] in result.output
    with sqlite3.connect(app.config["DATABASE"]) as db:
        assert db.execute("SELECT (SELECT count(*) FROM webhooks) + (SELECT count(*) FROM webhook_outbox)"
                          ).fetchone()[0] == 0
    assert invoke(runner, "webhooks", "list").output.startswith("no webhooks yet")


@pytest.mark.parametrize("command", ["remove", "enable", "test", "deliveries"])
def test_an_unknown_id_is_one_line(app, runner, command):
    assert "no webhook with id nope" in one_line_error(invoke(runner, "webhooks", command, "nope"))


@pytest.mark.slow
def test_export_leaves_webhooks_out(app, runner, receiver, tmp_path):
    hook = add_hook(runner, receiver.url, "--allow-private")
    out = tmp_path / "export.json"
    result = invoke(runner, "export", str(out), "--include-keys")
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert hook["secret"] not in text and receiver.url not in text and "webhook" not in text


def test_a_name_that_does_not_resolve_yet_may_be_added(app, runner, monkeypatch):
    import socket

    def unresolved(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    monkeypatch.setattr(socket, "getaddrinfo", unresolved)
    hook = add_hook(runner, "https://hooks.example.test/okr")
    assert hook["is_active"]
    row = {"url": hook["url"], "secret": hook["secret"], "allow_private": 0}
    outcome = webhook_request.send_event(row, "msg", b"{}")
    assert outcome.error == "refused: hooks.example.test does not resolve: [Errno -2] Name or service not known"
