import pytest

from okr.deliverer import Deliverer

from hooks import FakeClock, Receiver


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
