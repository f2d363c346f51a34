import time
import types
from datetime import datetime, timedelta, timezone

import pytest

import people_page


@pytest.fixture(scope="session")
def shared_chromium():
    """One headless Chromium for the whole test process (each xdist worker is one), which the browser modules'
    own fixtures hand out once they have checked it can run (test_browser.browser): a launch costs far more than
    a new context, and each test opens contexts of its own, which share no cookie or storage. Closed at the end."""
    try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling module
        import test_browser
    except ImportError:
        from . import test_browser
    with test_browser.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(test_browser.CHROMIUM), headless=True,
                                              args=test_browser.CHROMIUM_FLAGS, timeout=30_000)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def key_result_fields():
    """The dashboard's key result: 100 customers of 500, confidence 0.8."""
    return {"name": "Reach 500 customers", "type": "positive", "current_value": "100", "target_value_min": "500",
            "confidence": "0.8"}


class Later:
    """Moves the clock the sessions read (time.time in okr.accounts.sessions, and the utc_now clock)."""

    def __init__(self, clock, monkeypatch):
        import okr.accounts.sessions as sessions

        self.clock, self.offset = clock, 0
        self.start = datetime(2026, 6, 1, tzinfo=timezone.utc)
        clock.now = self.stamp()
        if isinstance(getattr(sessions, "time", None), types.ModuleType):
            real_time = time.time
            fake = types.SimpleNamespace(**{n: getattr(time, n) for n in dir(time) if not n.startswith("_")})
            fake.time = lambda: real_time() + self.offset
            monkeypatch.setattr(sessions, "time", fake)

    def stamp(self):
        return (self.start + timedelta(seconds=self.offset)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def advance(self, seconds):
        self.offset += seconds
        self.clock.now = self.stamp()


@pytest.fixture
def later(clock, monkeypatch):
    """The clock to move (it starts on 2026-06-01): list it after the fixtures that make data, which is then
    made before the clock moves."""
    return Later(clock, monkeypatch)


@pytest.fixture
def maya(app):
    """Maya Lee, an admin with people_page.PASSWORD."""
    return people_page.make_maya(app)


@pytest.fixture
def ed(app):
    """Ed Itor, an editor with people_page.PASSWORD."""
    return people_page.make_ed(app)
