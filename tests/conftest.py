import compileall
import contextlib
import os
import re
import shutil
import socket
import sqlite3
import subprocess
from pathlib import Path

import pytest

import okr
import okr.clock
from okr import create_app
from okr.db import init_db

from helpers import (RUN_LOCK, SCREENSHOT_FOLDERS, HttpClient, RunLock, create_key, make_cycle, make_key_result,
                     make_objective, make_team, make_user, run_folder, served_in_thread)

CLOCK_START = "2026-01-01T00:00:00Z"


def pytest_sessionstart(session):
    """Byte-compiles the okr package once: the hundreds of `okr` processes the tests start read it compiled.

    Python writes no bytecode where PYTHONDONTWRITEBYTECODE is set (some CI machines and containers), and an
    editable install leaves none: every process would compile the whole package again, a third of its start.
    Under pytest-xdist the controller compiles, before it starts the workers, which then find it done.

    Opens the run's lock (helpers.RunLock) in each process that runs tests.
    """
    if not hasattr(session.config, "workerinput"):
        compileall.compile_dir(os.path.dirname(okr.__file__), quiet=2)
    session.config.stash[RUN_LOCK] = RunLock(run_folder(session.config))


def pytest_sessionfinish(session):
    lock = session.config.stash.get(RUN_LOCK, None)
    if lock is not None:
        lock.close()


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (in each worker, which all collect alike), the order the tests are handed out in: those
    marked slow first, since the longest are among them and one started late would keep its worker busy after the
    others had ended; then the in-process tier, whose many short tests even out the workers' ends; and those marked
    alone last, which then mostly wait for short tests to end. Without xdist the order stays the files' own."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: 2 if item.get_closest_marker("alone") else 0 if item.get_closest_marker("slow")
                   else 1)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist's controller, as a worker ends: the screenshot folders it used (helpers.screenshots_in)."""
    folders = getattr(node, "workeroutput", {}).get("okr_screenshot_folders", [])
    node.config.stash.setdefault(SCREENSHOT_FOLDERS, set()).update(folders)


def pytest_terminal_summary(terminalreporter, config):
    """Where the browser tests' screenshots are, once any were taken."""
    for folder in sorted(config.stash.get(SCREENSHOT_FOLDERS, ())):
        files = sorted(Path(folder).glob("*.png"))
        terminalreporter.section("browser screenshots")
        terminalreporter.write_line(f"{len(files)} screenshots in {folder}")
        for path in files:
            terminalreporter.write_line(f"  {path.name}")


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def pytest_make_parametrize_id(config, val, argname):
    """A parameter that holds a UUID (a random unknown id, made at import) is named `uuid` there (`UUID` in capitals):
    every xdist worker must collect the same test names, and each worker's import makes other random ids."""
    if isinstance(val, str) and UUID.search(val):
        return UUID.sub(lambda found: "UUID" if found[0].isupper() else "uuid", val)
    return None


class StartsAServer(Exception):
    """A test of the in-process tier started a server, a process or a fork."""


@contextlib.contextmanager
def in_process_only(item):
    """Refuses, inside a test not marked slow, to listen on a socket, start a process or fork: the in-process
    tier (pytest -m "not slow") must hold no server, not even one in a thread, and no child."""
    def refuse(what):
        def refused(*args, **kwargs):
            raise StartsAServer(f"{item.nodeid} {what}: mark it @pytest.mark.slow")
        return refused

    patches = ((socket.socket, "listen", "listens on a socket"),
               (subprocess.Popen, "_execute_child", "starts a process"),
               (os, "fork", "forks"), (os, "posix_spawn", "starts a process"))
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, what in patches:
        setattr(owner, name, refuse(what))
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """From a test's fixtures' set-up to their teardown: holds the run's lock shared (helpers.RunLock), and holds a
    test not marked slow to the in-process tier."""
    with item.config.stash[RUN_LOCK].holding(RunLock.SHARED):
        if item.get_closest_marker("slow"):
            yield
        else:
            with in_process_only(item):
                yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A test marked alone runs with no other test at the same time, in any xdist worker: the run's lock is held
    exclusively while the test function runs (its fixtures are set up and torn down beside other tests)."""
    if item.get_closest_marker("alone"):
        with item.config.stash[RUN_LOCK].switched(RunLock.EXCLUSIVE):
            yield
    else:
        yield


TMP_NUMBERS = {}  # a tmp_path name -> the number its next folder tries first


@pytest.fixture
def tmp_path(request, tmp_path_factory):
    """pytest's tmp_path (the test's name, cut to 30 characters, and a number, in the run's folder), made without
    listing the folder: pytest's own looks through every earlier test's folder for the next number, which cost
    each test more the later it ran (docs/design.md, The test suite's time)."""
    name = re.sub(r"\W", "_", request.node.name)[:30]
    base = tmp_path_factory.getbasetemp()
    number = TMP_NUMBERS.get(name, 0)
    while True:
        path = base / f"{name}{number}"
        number += 1
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        TMP_NUMBERS[name] = number
        return path


@pytest.fixture(scope="session")
def template_database(tmp_path_factory):
    """A database of today's schema, made once per session (each xdist worker is a session): running the whole
    schema costs more than copying its file (docs/development.md)."""
    path = tmp_path_factory.mktemp("template") / "okr.db"
    app = create_app({"TESTING": True, "DATABASE": path})
    with app.app_context():
        init_db()
    return path


@pytest.fixture
def new_database(template_database):
    """new_database(path): a copy of the template at path, private as init_db makes it."""
    def copy(path):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        shutil.copyfile(template_database, path)
        return path
    return copy


@pytest.fixture
def app(tmp_path, new_database):
    return create_app({"TESTING": True, "DATABASE": new_database(tmp_path / "okr.db")})


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def metrics(tmp_path):
    """An SQLite file of daily figures, a metric source's (the sqlite kind): metrics.set(day, value) records one;
    metrics.address is its path."""
    path = tmp_path / "metrics.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE figures (day TEXT PRIMARY KEY, value REAL NOT NULL)")
        db.commit()

    class Metrics:
        address = str(path)

        def set(self, day, value):
            with contextlib.closing(sqlite3.connect(path)) as db:
                db.execute("INSERT OR REPLACE INTO figures VALUES (?, ?)", (day, value))
                db.commit()

    return Metrics()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


class Clock:
    """A settable clock for the views, so modified_at can move without sleeping."""

    def __init__(self, now=CLOCK_START):
        self.now = now

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    """The one clock every okr module reads (okr.clock.utc_now), set to this one."""
    fake = Clock()
    monkeypatch.setattr(okr.clock, "utc_now", fake)
    return fake


@pytest.fixture
def live_server(app):
    """The app on real waitress, on a free loopback port, in this process."""
    with served_in_thread(app, threads=8) as served:
        yield HttpClient(f"127.0.0.1:{served.port}")


@pytest.fixture
def clean_env(monkeypatch):
    """No OKR_ setting of whoever runs the tests reaches the app (tests/cli uses it for every test)."""
    for name in [name for name in os.environ if name.startswith("OKR_")]:
        monkeypatch.delenv(name)


@pytest.fixture
def key(runner):
    """An API key (credential and secret); once one exists, the API wants signed requests."""
    return create_key(runner)


# --- a cycle, an objective in it and a key result of that ------------------------------------------------
# A module that needs other ones overrides objective_fields, key_result_fields or clock_after_making.


@pytest.fixture
def objective_fields():
    """The fields `objective` is made with, besides its cycle."""
    return {}


@pytest.fixture
def key_result_fields():
    """The fields `key_result` is made with: positive, at 5 of a 10 target, confidence 0.9 (no decimal at its
    default, so that a test sees which ones an update keeps or zeroes)."""
    return {"name": "Reach", "type": "positive", "confidence": "0.9", "current_value": "5", "target_value_min": "10"}


@pytest.fixture
def clock_after_making():
    """None: `cycle`, `objective` and `key_result` are made on the real clock. A module that asserts their times
    returns a time instead: they are made at the test clock's CLOCK_START, which then shows that time."""
    return None


def made(request, later, make, *args, **fields):
    """make(*args, **fields), on the test clock when later is a time (see clock_after_making)."""
    if later is None:
        return make(*args, **fields)
    clock = request.getfixturevalue("clock")
    clock.now = CLOCK_START
    result = make(*args, **fields)
    clock.now = later
    return result


@pytest.fixture
def cycle(request, client, clock_after_making):
    return made(request, clock_after_making, make_cycle, client)


@pytest.fixture
def objective(request, client, cycle, objective_fields, clock_after_making):
    return made(request, clock_after_making, make_objective, client, cycle["id"], **objective_fields)


@pytest.fixture
def key_result(request, client, objective, key_result_fields, clock_after_making):
    return made(request, clock_after_making, make_key_result, client, objective["id"], **key_result_fields)


@pytest.fixture
def fast_hashing(monkeypatch):
    """argon2id with the smallest parameters, for tests that hash or check many passwords (the real ones are
    slow by design); tests/test_passwords.py holds the real ones to their minimum."""
    from argon2 import PasswordHasher

    from okr.accounts import passwords
    monkeypatch.setattr(passwords, "hasher", PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))
    passwords.dummy_hash.cache_clear()
    yield
    passwords.dummy_hash.cache_clear()


# The worked example of docs/api.md's confidence calibration: a cycle of 2026-10-01 to 2026-12-31 (its last third
# from 2026-12-01), Ada's two key results in team Red, Bob's one in team Blue, five check-ins people made, closed.
WORKED_CHECKINS = (  # key result, day, value, confidence
    ("signups", "2026-11-01", "5", "0.8"), ("signups", "2026-12-05", "8", "0.9"),
    ("churn", "2026-11-01", "3", "0.7"), ("churn", "2026-12-10", "3", "0.8"),
    ("launch", "2026-12-15", "10", "0.6"),
)


@pytest.fixture
def worked_example(client, runner, clock):
    """The worked example, closed on 2027-01-02: ids of its cycle, teams, people, objectives and key results."""
    clock.now = "2026-10-01T09:00:00Z"
    cycle = client.post("/v1/cycles", json={"name": "Q4", "starts_on": "2026-10-01", "ends_on": "2026-12-31"})
    assert cycle.status_code == 200, cycle.get_json()
    c = cycle.get_json()["id"]
    red, blue = make_team(client, "Red")["id"], make_team(client, "Blue")["id"]
    ada = make_user(runner)["id"]
    bob = make_user(runner, "Bob", "bob@example.com")["id"]
    growth = make_objective(client, c, "Grow", team_id=red)["id"]
    ship = make_objective(client, c, "Ship", team_id=blue)["id"]
    fields = {"type": "positive", "current_value": "0", "target_value_min": "10", "confidence": "0.5"}
    k = {"signups": make_key_result(client, growth, "Signups", owner_id=ada, **fields)["id"],
         "churn": make_key_result(client, growth, "Churn", owner_id=ada, **fields)["id"],
         "launch": make_key_result(client, ship, "Launch", owner_id=bob, **fields)["id"]}
    for name, day, value, confidence in WORKED_CHECKINS:
        clock.now = f"{day}T10:00:00Z"
        answer = client.post(f"/v1/keyresults/{k[name]}/checkins", json={"value": value, "confidence": confidence})
        assert answer.status_code == 200, answer.get_json()
    clock.now = "2027-01-02T09:00:00Z"
    scored = client.patch(f"/v1/keyresults/{k['launch']}", json={"score": "0.50"})  # Bob scores his launch 0.50
    assert scored.status_code == 200, scored.get_json()
    closed = client.post(f"/v1/cycles/{c}/close")
    assert closed.status_code == 200, closed.get_json()
    return {"cycle": c, "red": red, "blue": blue, "ada": ada, "bob": bob, "growth": growth, "ship": ship, **k}
