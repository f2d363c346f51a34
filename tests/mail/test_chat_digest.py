"""The weekly digest in chat: a webhook added with --format slack gets each team's digest once a week as a
Slack incoming-webhook message, with or without email (issue 24)."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from okr.outbound import chat_digest, weekly_emails

from test_digest import NOW, world  # noqa: F401 (the digest's world, a fixture)

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser

WEEK = weekly_emails.week_of(NOW, weekly_emails.ZoneInfo("UTC"))


class Chat:
    """A chat's incoming webhook on loopback: records each message, answers status."""

    def __init__(self):
        self.messages, self.status = [], 200
        chat = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                chat.messages.append(json.loads(body))
                self.send_response(chat.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def chat():
    receiver = Chat()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()


def add_hook(runner, url, *options):
    result = runner.invoke(args=["webhooks", "add", url, "--allow-private", "--json", *options])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_slack_hook_gets_each_teams_digest_once_a_week(app, runner, world, chat):  # noqa: F811
    add_hook(runner, chat.url, "--format", "slack")
    add_hook(runner, chat.url.replace("/hook", "/events"))  # an events hook gets no digest
    assert chat_digest.send_round(app.config, NOW, WEEK) == (1, 0)
    [message] = chat.messages
    assert "Platform" in message["text"] and "Grow revenue" in json.dumps(message)
    assert chat_digest.send_round(app.config, NOW, WEEK) == (0, 0)  # claimed: not again this week
    assert len(chat.messages) == 1


def test_a_chat_that_fails_is_tried_again_at_the_next_round(app, runner, world, chat):  # noqa: F811
    hook = add_hook(runner, chat.url, "--format", "slack")
    chat.status = 500
    assert chat_digest.send_round(app.config, NOW, WEEK) == (0, 1)
    chat.status = 200
    assert chat_digest.send_round(app.config, NOW, WEEK) == (1, 0)
    log = runner.invoke(args=["webhooks", "deliveries", hook["id"]]).output
    assert "500" in log and "200" in log


def test_the_digest_goes_to_chat_without_email(app, runner, world, chat, monkeypatch):  # noqa: F811
    monkeypatch.setitem(app.config, "SMTP_URL", None)
    add_hook(runner, chat.url, "--format", "slack")
    assert chat_digest.send_round(app.config, NOW, WEEK) == (1, 0)
