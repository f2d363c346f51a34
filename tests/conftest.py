import sys

import pytest

# Loaded here, so that the clock fixture finds every module that imported utc_now.
import okr.api
import okr.cli
import okr.db
import okr.web.views
from okr import create_app
from okr.db import init_db

from helpers import HttpClient, served_in_thread


@pytest.fixture
def app(tmp_path):
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db"})
    with app.app_context():
        init_db()
    return app


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


class Clock:
    """A settable clock for the views, so modified_at can move without sleeping."""

    def __init__(self, now="2026-01-01T00:00:00Z"):
        self.now = now

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    """Every okr module that imported utc_now reads this clock instead, whichever module a view lives in."""
    fake, real = Clock(), okr.db.utc_now
    for name, module in list(sys.modules.items()):
        if name.startswith("okr") and getattr(module, "utc_now", None) is real:
            monkeypatch.setattr(module, "utc_now", fake)
    return fake


@pytest.fixture
def live_server(app):
    """The app on real waitress, on a free loopback port, in this process."""
    with served_in_thread(app, threads=8) as served:
        yield HttpClient(f"127.0.0.1:{served.port}")
