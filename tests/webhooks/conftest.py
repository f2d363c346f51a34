import ssl

import pytest

from helpers import loopback_certificate
from okr.outbound import webhook_request
from okr.outbound.webhook_queue import Deliverer

from hooks import FakeClock, Receiver, Trickler


@pytest.fixture
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def other_receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def fake_clock():
    return FakeClock()


@pytest.fixture
def deliverer(app):
    """A deliverer on the test's database on the real clock, driven by hand (deliver_due)."""
    made = Deliverer(app.config["DATABASE"])
    yield made
    made.close()


@pytest.fixture
def certificate(tmp_path_factory, monkeypatch):
    """A server-side TLS context with a self-signed certificate for 127.0.0.1, which deliveries then trust."""
    cert, key = loopback_certificate(tmp_path_factory.mktemp("tls"))
    monkeypatch.setattr(webhook_request, "tls_context", lambda: ssl.create_default_context(cafile=str(cert)))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(str(cert), str(key))
    return server


@pytest.fixture
def trickling():
    """Makes Tricklers (hooks.py), receivers that answer a byte at a time; closed after the test."""
    made = []

    def make(*args, **kwargs):
        made.append(Trickler(*args, **kwargs))
        return made[-1]

    yield make
    for trickler in made:
        trickler.close()
