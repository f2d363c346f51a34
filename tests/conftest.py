import pytest

import okr
from okr import create_app
from okr.db import init_db


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
    fake = Clock()
    for module in (okr.objectives, okr.key_results, okr.cycles, okr.teams, okr.commands):
        monkeypatch.setattr(module, "utc_now", fake)
    return fake
