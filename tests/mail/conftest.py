"""A real SMTP server on loopback (aiosmtpd) for the email tests, and an app that sends through it.

smtp_server records what it is sent; its `refuse` makes it answer a message with 550, and `delay` makes it
slow. A server with STARTTLS or TLS uses a self-signed certificate made by openssl (skipped without it).
"""
import email
import email.policy
import socket
import ssl
import threading
import time

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from helpers import free_port, loopback_certificate, make_cycle, make_key_result, make_objective
from okr import create_app
from okr.outbound import smtp
from okr.db import init_db, transaction
from okr.store import users

from mail_helpers import BASE_URL, REMINDERS_MADE, mail_sent, person


class Recorder:
    """The server's handler: keeps each message it accepts, or refuses them all while refuse is set."""

    def __init__(self):
        self.messages, self.refuse, self.delay, self.tls = [], None, 0, []
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        if self.delay:
            time.sleep(self.delay)  # holds the server's loop: a slow server
        if self.refuse:
            return self.refuse
        with self.lock:
            self.messages.append(email.message_from_bytes(envelope.original_content or envelope.content,
                                                          policy=email.policy.default))
            self.tls.append(server.transport.get_extra_info("ssl_object") is not None)
        return "250 OK"

    def wait_for(self, count, seconds=10):
        """The messages once there are count of them (a page sends on a thread of its own)."""
        deadline = time.monotonic() + seconds
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.messages) >= count, self.messages
        return self.messages

    def to(self, address):
        return [message for message in self.messages if address in message["To"]]


class Server:
    def __init__(self, controller, recorder, url):
        self.controller, self.recorder, self.url = controller, recorder, url

    def __getattr__(self, name):
        return getattr(self.recorder, name)


def start(recorder, **kwargs):
    port = free_port()
    controller = Controller(recorder, hostname="127.0.0.1", port=port, **kwargs)
    controller.start()
    return controller, port


@pytest.fixture
def smtp_server():
    """An SMTP server on loopback without TLS (a local relay: okr.outbound.smtp sends in clear only to loopback)."""
    recorder = Recorder()
    controller, port = start(recorder)
    yield Server(controller, recorder, f"smtp://127.0.0.1:{port}")
    mail_sent()  # a page's email still on its way would meet a server stopped under it
    controller.stop()


@pytest.fixture
def certificate(tmp_path_factory, monkeypatch):
    """A self-signed certificate for 127.0.0.1 (cert.pem, key.pem), which okr.outbound.smtp then trusts."""
    cert, key = loopback_certificate(tmp_path_factory.mktemp("tls"))
    monkeypatch.setattr(smtp, "tls_context", lambda: ssl.create_default_context(cafile=str(cert)))
    return cert, key


def server_context(certificate):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*map(str, certificate))
    return context


def authenticator(logins):
    """An aiosmtpd authenticator that takes user "okr" with password "s3cret: pass", and records each login."""

    def check(server, session, envelope, mechanism, auth_data):
        logins.append((auth_data.login, auth_data.password))
        return AuthResult(success=auth_data.login == b"okr" and auth_data.password == b"s3cret: pass",
                          handled=False)

    return check


@pytest.fixture
def starttls_server(certificate):
    """An SMTP server that wants STARTTLS before anything, and a user and password."""
    recorder, logins = Recorder(), []
    controller, port = start(recorder, tls_context=server_context(certificate), require_starttls=True,
                             authenticator=authenticator(logins), auth_required=True)
    server = Server(controller, recorder, f"smtp://okr@127.0.0.1:{port}")
    server.logins = logins
    yield server
    controller.stop()


@pytest.fixture
def smtps_server(certificate):
    """An SMTP server that talks TLS from the first byte."""
    recorder = Recorder()
    controller, port = start(recorder, ssl_context=server_context(certificate))
    yield Server(controller, recorder, f"smtps://127.0.0.1:{port}")
    controller.stop()


@pytest.fixture
def silent_server():
    """A server that accepts TCP connections and never says a word; its URL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield f"smtp://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


@pytest.fixture
def mail_config(smtp_server):
    """The email settings of an app that sends through smtp_server."""
    return {"SMTP_URL": smtp_server.url, "MAIL_FROM": "OKR <okr@example.com>", "BASE_URL": BASE_URL,
            "SMTP_TIMEOUT": 5}


@pytest.fixture
def app(tmp_path, clean_env, mail_config):
    """The app, on a database of its own, sending mail as mail_config says (no OKR_ setting of the shell)."""
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db", **mail_config})
    with app.app_context():
        init_db()
    return app


@pytest.fixture
def settings(app):
    return smtp.settings(app.config)




# --- the reminders' world: tests/mail/test_reminders.py, test_schedule.py and test_reminder_commands.py ---------------

@pytest.fixture
def reminder_world(app, client, clock):
    """Olive owns key results; Ann's objective holds one Olive owns and one nobody owns; Quiet turned weekly
    emails off; Gone is deactivated; Fresh checked in two days ago; the finished and upcoming cycles' key
    results are as old, and remind nobody."""
    clock.now = REMINDERS_MADE
    people = {name: person(app, name, f"{name.lower()}@example.com") for name in ("Olive", "Ann", "Fresh", "Gone")}
    people["Quiet"] = person(app, "Quiet", "quiet@example.com", weekly_email=False)
    with app.app_context(), transaction() as db:
        users.set_active(db, users.get(db, people["Gone"]["id"]), False)
    current = make_cycle(client, "Q2")
    finished = client.post("/v1/cycles", json={"name": "Q1", "starts_on": "2026-01-01", "ends_on": "2026-03-31"})
    upcoming = client.post("/v1/cycles", json={"name": "Q3", "starts_on": "2026-07-01", "ends_on": "2026-09-30"})
    objective = make_objective(client, current["id"], "Grow revenue", assignee_id=people["Ann"]["id"])
    other = make_objective(client, current["id"], "Hire well")
    made = {
        "owned": make_key_result(client, objective["id"], "Reach 500 customers", owner_id=people["Olive"]["id"]),
        "unowned": make_key_result(client, objective["id"], "Ship the app"),
        "olive elsewhere": make_key_result(client, other["id"], "Hire 3 people", owner_id=people["Olive"]["id"]),
        "quiet": make_key_result(client, other["id"], "Quiet's", owner_id=people["Quiet"]["id"]),
        "gone": make_key_result(client, other["id"], "Gone's", owner_id=people["Gone"]["id"]),
        "fresh": make_key_result(client, other["id"], "Fresh's", owner_id=people["Fresh"]["id"]),
    }
    for cycle in (finished.get_json(), upcoming.get_json()):
        elsewhere = make_objective(client, cycle["id"], "Elsewhere", assignee_id=people["Ann"]["id"])
        make_key_result(client, elsewhere["id"], "Not now", owner_id=people["Olive"]["id"])
    clock.now = "2026-06-13T10:00:00Z"
    checked = client.post(f"/v1/keyresults/{made['fresh']['id']}/checkins", json={"value": "3", "confidence": "0.9"})
    assert checked.status_code == 200, checked.get_json()
    return people, made
