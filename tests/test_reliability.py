"""Reliability: the real server process under concurrent load, SIGKILL and SIGTERM.

Every test starts `python app.py --port P --database X` as a child process on
loopback, drives it from many client threads over real HTTP, and checks the
storage promises of the contract: no write answered with 200 is ever lost, the
file always passes PRAGMA integrity_check and foreign_key_check, and no request
is answered with a 5xx or a "database is locked" message.
"""
import base64
import concurrent.futures
import http.client
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import traceback
from contextlib import closing
from pathlib import Path

import pytest

from helpers import APP_PY, KEY_RESULT_FIELDS, OBJECTIVE_FIELDS, HttpClient, free_port

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser

# What a client sees when the server dies under it: refused, reset, closed mid-response.
NO_ANSWER = (OSError, http.client.HTTPException)


# --- the server process ------------------------------------------------------------------------


class Service:
    """One `python app.py` process; its output goes to a log file, never a pipe that can fill."""

    def __init__(self, database, log):
        self.database = database
        self.log = log
        self.port = free_port()
        with open(log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, str(APP_PY), "--host", "127.0.0.1",
                 "--port", str(self.port), "--database", str(database)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        self.http = HttpClient(f"127.0.0.1:{self.port}")

    def output(self):
        return Path(self.log).read_text(errors="replace")[-4000:]

    def wait_ready(self):
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if self.http.get("/healthz").status == 200:
                    return self
            except NO_ANSWER:
                time.sleep(0.05)
        self.kill()
        pytest.fail(f"service did not start:\n{self.output()}")

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=15)

    def terminate(self, timeout=15):
        """SIGTERM, then the exit code and how long the exit took."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"no exit within {timeout}s of SIGTERM:\n{self.output()}")
        return code, time.monotonic() - started


@pytest.fixture
def services(tmp_path):
    """Starts services on demand; whatever is still running at the end is killed."""
    started = []

    def start(database):
        service = Service(database, tmp_path / f"server-{len(started)}.log")
        started.append(service)
        return service.wait_ready()

    yield start
    for service in started:
        service.kill()


# --- the database file, read directly ----------------------------------------------------------


def check_file(path):
    """integrity_check and foreign_key_check on the file; returns its ids per table."""
    with closing(sqlite3.connect(path)) as db:
        integrity = db.execute("PRAGMA integrity_check").fetchall()
        foreign = db.execute("PRAGMA foreign_key_check").fetchall()
        ids = {
            table: {row[0] for row in db.execute(f"SELECT id FROM {table}")}
            for table in ("cycles", "objectives", "key_results")
        }
    assert integrity == [("ok",)], integrity
    assert foreign == [], foreign
    return ids


def check_crashed_file(database, scratch):
    """Checks a byte-for-byte copy of the files the killed process left behind.

    Opening the crashed file itself would recover and checkpoint its WAL; working on a
    copy leaves the original exactly as the crash left it, so that the restarted
    server, not this check, is the one that recovers it.
    """
    scratch.mkdir()
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{database}{suffix}")
        if source.exists():
            shutil.copyfile(source, scratch / f"copy.db{suffix}")
    return check_file(scratch / "copy.db")


# --- writers: creates from many threads, tolerant of the server going away ---------------------

TABLE_OF = {"/v1/cycles/": "cycles", "/v1/objectives/": "objectives", "/v1/keyresults/": "key_results"}


class Writers:
    """Threads that create cycles, objectives and key results until told to stop.

    Each create answered with 200 is recorded as (path to GET it, body). A request
    that gets no answer once the server is being stopped is counted as unanswered
    and ends its thread. Any other outcome is a failure: a status other than 200,
    or no answer while the server should be up.
    """

    def __init__(self, http, cycle_id, count, seed):
        self.http = http
        self.cycle_id = cycle_id
        self.acked = {}
        self.failures = []
        self.unanswered = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.server_going = threading.Event()
        self.threads = [
            threading.Thread(target=self.work, args=(random.Random(seed * 1000 + n), n), daemon=True)
            for n in range(count)
        ]

    def start(self):
        for thread in self.threads:
            thread.start()
        return self

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=20)
        assert not any(thread.is_alive() for thread in self.threads), "a writer thread did not stop"

    def fail(self, *what):
        with self.lock:
            self.failures.append(what)

    def work(self, rng, n):
        try:
            self.write_until_stopped(rng, n)
        except BaseException:
            self.fail("writer crashed", traceback.format_exc())

    def write_until_stopped(self, rng, n):
        cycle_id, objectives, i = self.cycle_id, [], 0
        while not self.stopping.is_set():
            i += 1
            roll = rng.random()
            if not objectives or roll < 0.4:
                path, get_prefix = "/v1/objectives", "/v1/objectives/"
                body = {"name": f"w{n}-{i}", "cycle_id": cycle_id, "is_company": rng.random() < 0.2,
                        "is_personal": False, "description": rng.choice([None, f"d{n}-{i}"])}
            elif roll < 0.8:
                path, get_prefix = f"/v1/objectives/{rng.choice(objectives)}/keyresults", "/v1/keyresults/"
                body = rng.choice([
                    {"name": f"k{n}-{i}", "type": "positive", "target_value_min": str(i)},
                    {"name": f"k{n}-{i}", "type": "range", "target_value_min": "1", "target_value_max": "2.5"},
                    {"name": f"k{n}-{i}", "type": "milestone", "confidence": "0.9"},
                    {"name": f"k{n}-{i}", "type": "baseline", "current_value": "3.25"},
                ])
            else:
                path, get_prefix = "/v1/cycles", "/v1/cycles/"
                body = {"name": f"c{n}-{i}"}
            try:
                response = self.http.post(path, body)
            except NO_ANSWER as error:
                if self.server_going.is_set():
                    with self.lock:
                        self.unanswered += 1
                else:
                    self.fail("no answer while the server was up", path, repr(error))
                return
            if response.status != 200:
                self.fail("not 200", path, response.status, response.payload[:300])
                continue
            created = response.json()
            with self.lock:
                self.acked[get_prefix + created["id"]] = created
            if get_prefix == "/v1/objectives/":
                objectives.append(created["id"])
            elif get_prefix == "/v1/cycles/" and rng.random() < 0.5:
                cycle_id = created["id"]


def missing_from_file(acked, ids):
    """The acknowledged creates whose id is not in the file."""
    return sorted(
        path for path in acked
        for prefix, table in TABLE_OF.items()
        if path.startswith(prefix) and path[len(prefix):] not in ids[table]
    )


def check_all_served(http, acked):
    """GETs every acknowledged create: 200 and the very body the create returned."""
    def fetch(item):
        path, body = item
        response = http.get(path)
        if response.status != 200:
            return (path, response.status, response.payload[:300])
        if response.json() != body:
            return (path, "changed", body, response.json())
        return None

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        problems = [p for p in pool.map(fetch, list(acked.items())) if p is not None]
    assert problems == [], problems[:10]


# --- 1. SIGKILL mid-load -------------------------------------------------------------------------


def test_sigkill_mid_load_loses_no_acknowledged_write(tmp_path, services):
    """Three rounds on one file: 16 writers, SIGKILL after 0.5-1 s, check the file, restart on it."""
    database = tmp_path / "crash.db"
    rng = random.Random(20261122)
    service = services(database)
    cycle_id = service.http.post("/v1/cycles", {"name": "crash"}).ok()["id"]
    acked_so_far = {}

    for round_ in range(3):
        writers = Writers(service.http, cycle_id, count=16, seed=round_).start()
        try:
            time.sleep(rng.uniform(0.5, 1.0))
            writers.server_going.set()
            service.kill()
        finally:
            writers.stop()
        assert writers.failures == [], (round_, writers.failures[:5], service.output())
        assert len(writers.acked) > 0, f"round {round_}: nothing was written before the kill"
        acked_so_far.update(writers.acked)
        print(f"round {round_}: {len(writers.acked)} creates answered 200, {writers.unanswered} unanswered")

        ids = check_crashed_file(database, tmp_path / f"after-kill-{round_}")
        assert missing_from_file(acked_so_far, ids) == [], f"round {round_}: answered 200, not in the file"

        service = services(database)
        check_all_served(service.http, acked_so_far)
        missing = missing_from_file(acked_so_far, check_file(database))
        assert missing == [], f"round {round_}: answered 200, gone after restart"

    code, _ = service.terminate()
    assert code == 0, service.output()
    check_file(database)


# --- 2. mixed load -------------------------------------------------------------------------------


def decode_token(token):
    text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("ascii")
    assert text.isdigit(), token
    return int(text)


def walk(http, path, name, fields, page_size, problems):
    """Pages through a list; checks every page's shape; returns the items, or None on a bad page."""
    items, seen, token, last_seq = [], set(), None, -1
    while True:
        url = f"{path}{'&' if '?' in path else '?'}page_size={page_size}"
        url += f"&page_token={token}" if token else ""
        response = http.get(url)
        if response.status != 200:
            problems.append(("list not 200", url, response.status, response.payload[:300]))
            return None
        page = response.json()
        try:
            assert isinstance(page, dict) and set(page) == {"next_page_token", name}, page
            assert isinstance(page[name], list) and len(page[name]) <= page_size, page
            for item in page[name]:
                assert isinstance(item, dict) and set(item) == fields, item
                assert item["id"] not in seen, ("repeated across pages", item["id"])
                seen.add(item["id"])
            token = page["next_page_token"]
            if token is not None:
                # A token means more rows follow, so this page must be full.
                assert isinstance(token, str) and len(page[name]) == page_size, page
                seq = decode_token(token)
                assert seq > last_seq, (token, last_seq)
                last_seq = seq
        except (AssertionError, ValueError) as error:
            problems.append(("malformed page", url, repr(error)[:500]))
            return None
        items += page[name]
        if token is None:
            return items


def expected_view(objective):
    return {key: objective[key] for key in
            ("name", "description", "is_company", "is_personal", "parent_objective_id", "cycle_id")}


def test_mixed_load_from_sixteen_threads(tmp_path, services):
    """Creates, full-replacement updates, deletes and paged lists; the end state is what was believed."""
    database = tmp_path / "load.db"
    service = services(database)
    http = service.http
    cycle_id = http.post("/v1/cycles", {"name": "load"}).ok()["id"]
    lock = threading.Lock()
    failures, believed, believed_krs = [], {}, {}

    def check(response, what):
        """A 200 for something every worker may rightly do; never a 5xx, never 'locked'."""
        if b"locked" in response.payload.lower() or response.status != 200:
            failures.append((what, response.status, response.payload[:300]))
            return False
        return True

    def worker(n):
        rng = random.Random(n)
        mine, order, krs, gone, problems = {}, [], {}, set(), []
        for op in range(60):
            roll = rng.random()
            if not mine or roll < 0.30:
                earlier = [o for o in order if o in mine]
                body = {"name": f"t{n}-{op}", "cycle_id": cycle_id, "is_company": False,
                        "is_personal": rng.random() < 0.5,
                        "description": rng.choice([None, f"about {n}-{op}"]),
                        "parent_objective_id": rng.choice([None, *earlier[-3:]])}
                response = http.post("/v1/objectives", body)
                if check(response, "create"):
                    created = response.json()
                    if expected_view(created) != body | {"cycle_id": cycle_id}:
                        problems.append(("create answered other values", body, created))
                    mine[created["id"]] = expected_view(created)
                    order.append(created["id"])
                    krs[created["id"]] = set()
            elif roll < 0.55:
                # Full replacement: omitted attributes become null or false. The new parent
                # is created earlier by this thread, so alignment never makes a loop.
                target = rng.choice(list(mine))
                earlier = [o for o in order[:order.index(target)] if o in mine]
                company = rng.random() < 0.3
                body = {"name": f"t{n}-{op}-updated", "cycle_id": cycle_id, "is_company": company}
                if not company and rng.random() < 0.5:
                    body["is_personal"] = True
                if rng.random() < 0.5:
                    body["description"] = f"now {op}"
                if earlier and rng.random() < 0.5:
                    body["parent_objective_id"] = rng.choice(earlier)
                want = {"name": body["name"], "description": body.get("description"),
                        "is_company": company, "is_personal": body.get("is_personal", False),
                        "parent_objective_id": body.get("parent_objective_id"), "cycle_id": cycle_id}
                response = http.post(f"/v1/objectives/{target}", body)
                if check(response, "update"):
                    if expected_view(response.json()) != want:
                        problems.append(("update answered other values", want, response.json()))
                    mine[target] = want
            elif roll < 0.70:
                target = rng.choice(list(mine))
                response = http.delete(f"/v1/objectives/{target}")
                if check(response, "delete"):
                    if response.payload != b"":
                        problems.append(("delete body not empty", response.payload[:200]))
                    del mine[target]
                    krs.pop(target)
                    gone.add(target)
                    for view in mine.values():  # ON DELETE SET NULL
                        if view["parent_objective_id"] == target:
                            view["parent_objective_id"] = None
            elif roll < 0.80:
                target = rng.choice(list(mine))
                response = http.post(f"/v1/objectives/{target}/keyresults",
                                     {"name": f"kr{n}-{op}", "type": "positive", "target_value_min": "5"})
                if check(response, "key result"):
                    krs[target].add(response.json()["id"])
            else:
                listed = walk(http, f"/v1/objectives?cycle_id={cycle_id}", "objectives",
                              OBJECTIVE_FIELDS, rng.choice([10, 25, 50]), problems)
                if listed is not None:
                    by_id = {o["id"]: o for o in listed}
                    # Only this thread touches its own objectives: the list must show them as written.
                    for oid, view in mine.items():
                        if oid not in by_id or expected_view(by_id[oid]) != view:
                            problems.append(("own objective not listed as written", oid, view, by_id.get(oid)))
                    if gone & set(by_id):
                        problems.append(("deleted objectives listed", sorted(gone & set(by_id))))
                if mine:
                    target = rng.choice(list(mine))
                    listed = walk(http, f"/v1/objectives/{target}/keyresults", "keyresults",
                                  KEY_RESULT_FIELDS, 2, problems)
                    if listed is not None and {k["id"] for k in listed} != krs[target]:
                        problems.append(("key results of own objective", target, krs[target], listed))
        with lock:
            failures.extend(problems)
            believed.update(mine)
            for oid, ids in krs.items():
                believed_krs.update(dict.fromkeys(ids, oid))

    def guarded(n):
        try:
            worker(n)
        except BaseException:
            with lock:
                failures.append(("worker crashed", n, traceback.format_exc()))

    threads = [threading.Thread(target=guarded, args=(n,), daemon=True) for n in range(16)]
    try:
        for thread in threads:
            thread.start()
    finally:
        for thread in threads:
            thread.join(timeout=90)
    assert not any(thread.is_alive() for thread in threads), "a worker did not finish"
    assert failures == [], (failures[:10], service.output())

    print(f"load: {len(believed)} objectives and {len(believed_krs)} key results remain")
    problems = []
    listed = walk(http, f"/v1/objectives?cycle_id={cycle_id}", "objectives", OBJECTIVE_FIELDS, 37, problems)
    assert problems == []
    assert {o["id"]: expected_view(o) for o in listed} == believed
    listed = walk(http, f"/v1/keyresults?cycle_id={cycle_id}", "keyresults", KEY_RESULT_FIELDS, 100, problems)
    assert problems == []
    assert {k["id"]: k["objective_id"] for k in listed} == believed_krs
    check_file(database)

    code, _ = service.terminate()
    assert code == 0, service.output()
    ids = check_file(database)
    assert ids["objectives"] == set(believed) and ids["key_results"] == set(believed_krs)


# --- 3. SIGTERM while serving --------------------------------------------------------------------


def test_sigterm_under_write_load_exits_cleanly_and_keeps_every_answered_write(tmp_path, services):
    database = tmp_path / "term.db"
    service = services(database)
    cycle_id = service.http.post("/v1/cycles", {"name": "term"}).ok()["id"]

    writers = Writers(service.http, cycle_id, count=4, seed=99).start()
    try:
        time.sleep(0.8)
        writers.server_going.set()
        code, took = service.terminate()
    finally:
        writers.stop()
    assert code == 0, service.output()
    assert took < 10, f"took {took:.1f}s to exit after SIGTERM"
    print(f"SIGTERM: exit {code} after {took:.2f}s; {len(writers.acked)} answered 200, "
          f"{writers.unanswered} unanswered")
    assert writers.failures == [], (writers.failures[:5], service.output())
    assert len(writers.acked) > 0

    ids = check_file(database)
    assert missing_from_file(writers.acked, ids) == []

    service = services(database)
    check_all_served(service.http, writers.acked)
    code, _ = service.terminate()
    assert code == 0, service.output()
    check_file(database)
