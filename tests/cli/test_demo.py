"""okr demo: a demo database of believable OKRs, made through the API's own code, and served."""
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from urllib.parse import urlencode

import pytest

import helpers
import okr.__main__ as program
from helpers import TIMESTAMP, create_key, signed
from okr import create_app
from okr.accounts import passwords
from okr.rules.body_schemas import checkin_schema, group_update_schema, key_result_update_schema, objective_schema, user_schema
import okr.clock
from okr.db import init_db
from okr.cli.example_company import DEMO_APPLICATION_ID, create_demo, not_a_demo_database
from okr.server import serving_lock

CREATED = re.compile(r"created (\S+) in (\d+\.\d) s \(seed (\d+)\): 2 cycles, 4 teams, 12 users, 20 objectives, "
                     r"60 key results, (\d+) check-ins")
# 60 key results: a first check-in each, ten weekly ones, less three for each of the three that went stale.
CHECKINS = 60 + 600 - 9
ADMIN = "elena.marsh@tallybird.example"
SIGN_IN = re.compile(r"sign in as elena\.marsh@tallybird\.example with password (\S+) \(every demo user has it\)")
DEMO_PASSWORD = "the demo's password for these tests"

pytestmark = pytest.mark.xdist_group("demo")  # in one xdist worker, which makes the demo database once


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("demo") / "okr-demo.db"
    create_demo(create_app, str(path), seed=7, password=DEMO_PASSWORD)
    return path


class SignedClient:
    """A test client that signs every request with an API key: the demo's passwords turn sign-in on."""

    def __init__(self, client, key):
        self.client, self.key = client, key

    def get(self, path, **kwargs):
        return self.client.get(path, headers=signed(self.key), **kwargs)

    def post(self, path, **kwargs):
        return self.client.post(path, headers=signed(self.key), **kwargs)


def signed_client(path):
    """A test client of the database at path, with a service key made there for it."""
    app = create_app({"TESTING": True, "DATABASE": path})
    return SignedClient(app.test_client(), create_key(app.test_cli_runner(), "tests"))


@pytest.fixture(scope="module")
def demo_client(demo_db):
    return signed_client(demo_db)


def run(capsys, *args):
    """okr ARGS in this process: (exit status, stdout, stderr)."""
    try:
        status = program.main(list(args))
    except SystemExit as end:
        status = end.code
    out, err = capsys.readouterr()
    if isinstance(status, str):  # sys.exit(message): a process prints it on stderr and ends with 1
        status, err = 1, err + status + "\n"
    return status, out, err


@pytest.fixture
def never_serves(monkeypatch):
    def serve(app, args):
        raise AssertionError("served")

    monkeypatch.setattr(program, "run_server", serve)


def rows(path, sql, *params):
    with closing(sqlite3.connect(path)) as db:
        db.row_factory = sqlite3.Row
        return db.execute(sql, params).fetchall()


def get_all(client, path, key, **query):
    response = client.get(path, query_string={"page_size": 1000, **query})
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["next_page_token"] is None
    return body[key]


# --- what the data holds ----------------------------------------------------------------------


def test_the_counts(demo_db):
    [counts] = rows(demo_db, """SELECT (SELECT count(*) FROM cycles), (SELECT count(*) FROM teams),
        (SELECT count(*) FROM users), (SELECT count(*) FROM objectives), (SELECT count(*) FROM key_results),
        (SELECT count(*) FROM checkins)""")
    assert tuple(counts) == (2, 4, 12, 20, 60, CHECKINS)
    assert [row[0] for row in rows(demo_db, "SELECT name FROM teams ORDER BY seq")] == [
        "Product", "Engineering", "Sales", "Customer Success"]
    for cycle in rows(demo_db, "SELECT id FROM cycles"):
        kinds = {row[0] for row in rows(demo_db, "SELECT type FROM key_results WHERE cycle_id = ?", cycle["id"])}
        assert kinds == {"positive", "negative", "range", "milestone", "baseline"}


def test_objectives_are_aligned_company_team_personal(demo_db):
    objectives = {row["id"]: row for row in rows(demo_db, "SELECT * FROM objectives")}
    kinds = {"company": 0, "team": 0, "personal": 0}
    for objective in objectives.values():
        parent = objectives.get(objective["parent_objective_id"])
        assert objective["assignee_id"] is not None
        if objective["is_company"]:
            kinds["company"] += 1
            assert parent is None and objective["team_id"] is None
        elif objective["is_personal"]:
            kinds["personal"] += 1
            assert not parent["is_company"] and not parent["is_personal"]
            assert objective["team_id"] == parent["team_id"] is not None
        else:
            kinds["team"] += 1
            assert parent["is_company"] and objective["team_id"] is not None
        if parent is not None:
            assert parent["cycle_id"] == objective["cycle_id"]
    assert kinds == {"company": 4, "team": 8, "personal": 8}


def test_every_demo_user_signs_in_with_the_one_password_and_the_ceo_is_the_admin(demo_db):
    users = rows(demo_db, "SELECT email, role, is_active, password_hash FROM users ORDER BY seq")
    assert [(user["email"], user["role"]) for user in users[:2]] == [
        (ADMIN, "admin"), ("maya.okafor@tallybird.example", "editor")]
    assert [user["role"] for user in users].count("admin") == 1
    assert {user["role"] for user in users[1:]} == {"editor"} and all(user["is_active"] for user in users)
    # Hashed once for all: every user has the same hash, and it is the password's.
    assert len({user["password_hash"] for user in users}) == 1
    assert passwords.verify(users[0]["password_hash"], DEMO_PASSWORD)
    assert not passwords.verify(users[0]["password_hash"], "another password")


def test_a_demo_without_a_password_stays_open(tmp_path):
    create_demo(create_app, str(tmp_path / "open.db"), seed=1)
    assert rows(tmp_path / "open.db", "SELECT count(*) FROM users WHERE password_hash IS NOT NULL")[0][0] == 0
    client = create_app({"TESTING": True, "DATABASE": tmp_path / "open.db"}).test_client()
    assert client.get("/v1/cycles").status_code == 200


def test_every_key_result_has_weeks_of_history_with_comments(demo_db):
    now = datetime.now(timezone.utc)
    for key_result in rows(demo_db, "SELECT * FROM key_results"):
        history = rows(demo_db, "SELECT * FROM checkins WHERE key_result_seq = ? ORDER BY seq", key_result["seq"])
        assert len(history) in (8, 11)
        times = [datetime.fromisoformat(checkin["created_at"]) for checkin in history]
        assert times == sorted(times) and times[-1] < now
        assert times[-1] - times[0] >= timedelta(weeks=6)
        assert history[0]["comment"] is None  # the starting value, recorded as the key result was made
        assert all(checkin["comment"] and checkin["author_id"] for checkin in history[1:])
        assert (history[-1]["value"], history[-1]["confidence"]) == (
            key_result["current_value"], key_result["confidence"])


def test_every_row_passes_the_apis_own_validation(demo_client):
    now = datetime.now(timezone.utc)

    def past(resource):
        for field in ("created_at", "modified_at"):
            if field in resource:
                assert TIMESTAMP.fullmatch(resource[field]) and datetime.fromisoformat(resource[field]) < now
        assert resource.get("modified_at", resource["created_at"]) >= resource["created_at"]

    def loads_as_itself(schema, resource):
        loaded = schema.load(resource)  # the API's own request schema: raises on anything it would refuse
        assert {field: resource[field] for field in loaded} == loaded

    users = get_all(demo_client, "/v1/users", "users")
    assert len(users) == 12
    for user in users:
        past(user)
        loads_as_itself(user_schema, {"name": user["name"], "email": user["email"]})
    for team in get_all(demo_client, "/v1/teams", "teams"):
        past(team)
        loads_as_itself(group_update_schema, team)
    checkins = 0
    for cycle in get_all(demo_client, "/v1/cycles", "cycles"):
        past(cycle)
        loads_as_itself(group_update_schema, cycle)
        for objective in get_all(demo_client, "/v1/objectives", "objectives", cycle_id=cycle["id"]):
            past(objective)
            loads_as_itself(objective_schema, objective)
        for key_result in get_all(demo_client, "/v1/keyresults", "keyresults", cycle_id=cycle["id"]):
            past(key_result)
            loads_as_itself(key_result_update_schema, key_result)
            for checkin in get_all(demo_client, f"/v1/keyresults/{key_result['id']}/checkins", "checkins"):
                past(checkin)
                loads_as_itself(checkin_schema, checkin)
                assert 0 <= Decimal(checkin["value"]) < 10 ** 15
                checkins += 1
    assert checkins == CHECKINS


def test_each_cycles_report_has_something_to_show(demo_client):
    cycles = get_all(demo_client, "/v1/cycles", "cycles")
    for number, cycle in enumerate(cycles):
        report = demo_client.get(f"/v1/cycles/{cycle['id']}/report").get_json()
        figures, statuses, stale = set(), set(), []
        nodes = list(report["objectives"])
        while nodes:
            objective = nodes.pop()
            nodes.extend(objective["children"])
            figures.add(objective["progress"])
            for key_result in objective["key_results"]:
                figures.add(key_result["progress"])
                statuses.add(key_result["status"])
                stale.append(key_result["stale"])
        assert {"0.00", "1.00"} <= figures
        assert any(figure not in (None, "0.00", "1.00") for figure in figures)
        assert statuses == {"on_track", "at_risk", "off_track", "done"}  # key results at 1.00 are done
        if number == len(cycles) - 1:  # this cycle, under way: some key results went without a check-in
            assert report["cycle"]["state"] == "current"
            assert 0 < stale.count(True) < len(stale)
        else:  # last quarter's, finished: nothing in it is stale any more
            assert report["cycle"]["state"] == "finished"
            assert not any(stale)
        assert 0 < Decimal(report["progress"]) < 1


def test_the_cycles_have_thirteen_weeks_of_dates_back_to_back_and_each_key_result_its_owner(demo_client):
    older, newer = (demo_client.get(f"/v1/cycles/{cycle['id']}/report").get_json()
                    for cycle in get_all(demo_client, "/v1/cycles", "cycles"))
    for report in (older, newer):
        starts, ends = (date.fromisoformat(report["cycle"][name]) for name in ("starts_on", "ends_on"))
        assert ends - starts == timedelta(weeks=13, days=-1) and starts.weekday() == 0
    assert date.fromisoformat(newer["cycle"]["starts_on"]) - date.fromisoformat(older["cycle"]["ends_on"]) == \
        timedelta(days=1)
    nodes = list(newer["objectives"])
    while nodes:
        objective = nodes.pop()
        nodes.extend(objective["children"])
        assert objective["key_results"] and all(kr["owner_id"] == objective["assignee_id"]
                                                for kr in objective["key_results"])


def test_the_newest_cycle_is_this_one_and_the_other_the_last(demo_client):
    older, newer = get_all(demo_client, "/v1/cycles", "cycles")
    assert re.fullmatch(r"Q[1-4] \d{4}", older["name"]) and re.fullmatch(r"Q[1-4] \d{4}", newer["name"])
    assert older["name"] != newer["name"]
    assert timedelta(weeks=12) < (datetime.fromisoformat(newer["created_at"])
                                  - datetime.fromisoformat(older["created_at"])) < timedelta(weeks=14)


def dump(path):
    """Everything in a demo database but ids, in creation order."""
    return [
        [tuple(row) for row in rows(path, sql)]
        for sql in (
            "SELECT name, created_at FROM cycles ORDER BY seq",
            "SELECT name, created_at FROM teams ORDER BY seq",
            "SELECT name, email, is_active, created_at FROM users ORDER BY seq",
            """SELECT o.name, o.description, o.is_company, o.is_personal, t.name, u.email, p.name, o.created_at,
                   o.modified_at FROM objectives o LEFT JOIN teams t ON t.id = o.team_id
                   LEFT JOIN users u ON u.id = o.assignee_id LEFT JOIN objectives p ON p.id = o.parent_objective_id
               ORDER BY o.seq""",
            """SELECT name, type, confidence, current_value, target_value_min, target_value_max, created_at,
                   modified_at FROM key_results ORDER BY seq""",
            """SELECT k.name, c.value, c.confidence, c.comment, u.email, c.created_at FROM checkins c
                   JOIN key_results k ON k.seq = c.key_result_seq LEFT JOIN users u ON u.id = c.author_id
               ORDER BY c.seq""",
        )
    ]


def test_the_same_seed_gives_the_same_data(tmp_path):
    now = datetime(2026, 3, 18, 10, 30, 15, tzinfo=timezone.utc)
    for name, seed in (("a.db", 11), ("b.db", 11), ("c.db", 12)):
        create_demo(create_app, str(tmp_path / name), seed, now)
    first, second, other = (dump(tmp_path / name) for name in ("a.db", "b.db", "c.db"))
    assert first == second
    assert [row[:6] for row in rows(tmp_path / "a.db", "SELECT * FROM checkins")] != [
        row[:6] for row in rows(tmp_path / "c.db", "SELECT * FROM checkins")]  # other ids
    # Another seed: the same company and names, other values and times.
    assert [[row[0] for row in table] for table in first[:5]] == [[row[0] for row in table] for table in other[:5]]
    assert [row[1:] for row in first[5]] != [row[1:] for row in other[5]]
    times = [row[-1] for table in first for row in table]
    assert max(times) < "2026-03-18T10:30:15Z" and min(times) > "2025-08-01"
    assert [row[0] for row in first[0]] == ["Q4 2025", "Q1 2026"]


def test_a_demo_database_is_marked_and_the_mark_survives_a_backup(demo_db, tmp_path, capsys):
    [[application_id]] = rows(demo_db, "PRAGMA application_id")
    assert application_id == DEMO_APPLICATION_ID and not_a_demo_database(str(demo_db)) is None
    copy = tmp_path / "copy.db"
    status, out, err = run(capsys, "--database", str(demo_db), "backup", str(copy))
    assert status == 0, err
    assert not_a_demo_database(str(copy)) is None


# --- the command ------------------------------------------------------------------------------


def test_okr_demo_makes_okr_demo_db_and_never_touches_okr_db(tmp_path, monkeypatch, capsys, never_serves):
    monkeypatch.chdir(tmp_path)
    app = create_app({"DATABASE": "okr.db"})
    with app.app_context():
        init_db()
    real = (tmp_path / "okr.db").read_bytes()
    status, out, err = run(capsys, "demo", "--no-serve", "--seed", "3")
    assert status == 0, err
    created, sign_in, serve = out.splitlines()
    match = CREATED.fullmatch(created)
    assert match and match.group(1) == "./okr-demo.db" and match.group(3) == "3", out
    assert int(match.group(4)) == CHECKINS
    assert float(match.group(2)) < 30  # it takes well under a second; the issue asks for under three
    assert serve == "serve it with: okr demo"
    # The password printed is the admin's, and everyone's.
    password = SIGN_IN.fullmatch(sign_in).group(1)
    assert passwords.problem(password) is None
    [admin] = rows("okr-demo.db", "SELECT password_hash, role FROM users WHERE email = ?", ADMIN)
    assert admin["role"] == "admin" and passwords.verify(admin["password_hash"], password)
    assert {row[0] for row in rows("okr-demo.db", "SELECT password_hash FROM users")} == {admin["password_hash"]}
    assert err == f"okr: using database {tmp_path / 'okr-demo.db'}\n"
    assert (tmp_path / "okr.db").read_bytes() == real
    assert sorted(os.listdir(tmp_path)) == ["okr-demo.db", "okr.db"]
    assert not_a_demo_database("okr-demo.db") is None


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_a_database_named_on_purpose_is_used(tmp_path, monkeypatch, capsys, never_serves, how):
    monkeypatch.chdir(tmp_path)
    args = ["demo", "--no-serve"]
    if how == "flag":
        args = ["--database", "mine.db", *args]
    else:
        monkeypatch.setenv("OKR_DATABASE", "mine.db")
    status, out, err = run(capsys, *args)
    assert status == 0, err
    assert CREATED.fullmatch(out.splitlines()[0]).group(1) == "./mine.db"
    assert out.splitlines()[2] == "serve it with: okr demo --database ./mine.db"
    assert os.listdir(tmp_path) == ["mine.db"]


def make_okr_database(path):
    app = create_app({"DATABASE": path})
    with app.app_context():
        init_db()


def make_other_sqlite_database(path):
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
        db.execute("INSERT INTO notes VALUES ('keep me')")
        db.commit()


@pytest.mark.parametrize("kind, make, why", [
    ("okr", make_okr_database, "okr demo did not make it"),
    ("sqlite", make_other_sqlite_database, "okr demo did not make it"),
    ("text", lambda path: path.write_text("shopping list\n"), "it is not an SQLite database"),
    ("empty", lambda path: path.write_bytes(b""), "it is an empty file"),
    ("folder", lambda path: path.mkdir(), "it is a folder"),
])
@pytest.mark.parametrize("args", [["--no-serve"], [], ["--fresh", "--no-serve"]])
def test_a_file_it_did_not_make_is_refused_and_left_as_it_is(tmp_path, capsys, never_serves, kind, make, why, args):
    path = tmp_path / "okr-demo.db"
    make(path)
    before = sorted(os.listdir(tmp_path)), None if path.is_dir() else path.read_bytes(), path.stat().st_mtime_ns
    status, out, err = run(capsys, "--database", str(path), "demo", *args)
    assert status == 1 and out == ""
    assert err.splitlines() == [f"okr: {path} is not a demo database ({why}), so okr demo leaves it as it is; "
                                "pass --database with a new file name"]
    assert (sorted(os.listdir(tmp_path)), None if path.is_dir() else path.read_bytes(), path.stat().st_mtime_ns) \
        == before


def test_running_it_again_uses_the_demo_database_as_it_is_and_fresh_makes_it_anew(tmp_path, monkeypatch, capsys,
                                                                                     never_serves):
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, "demo", "--no-serve", "--seed", "1")
    assert status == 0, err
    first_password = SIGN_IN.fullmatch(out.splitlines()[1]).group(1)
    client = signed_client("okr-demo.db")
    [cycle, _] = get_all(client, "/v1/cycles", "cycles")
    key_result = get_all(client, "/v1/keyresults", "keyresults", cycle_id=cycle["id"])[0]
    response = client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": "1", "comment": "mine"})
    assert response.status_code == 200
    status, out, err = run(capsys, "demo", "--no-serve", "--seed", "1")
    assert status == 0, err
    assert out.splitlines()[:2] == [
        "using the demo database ./okr-demo.db as it is: 2 cycles, 4 teams, 12 users, "
        f"20 objectives, 60 key results, {CHECKINS + 1} check-ins (okr demo --fresh --seed 1 makes it anew)",
        # Its password is not known any more, only its hash.
        f"sign in as {ADMIN} with the password printed when it was made (or set another: okr users set-password "
        f"{ADMIN} --database ./okr-demo.db)"]
    assert first_password not in out
    assert rows("okr-demo.db", "SELECT count(*) FROM checkins WHERE comment = 'mine'")[0][0] == 1
    status, out, err = run(capsys, "demo", "--no-serve", "--fresh")
    assert status == 0, err
    assert CREATED.fullmatch(out.splitlines()[0]).group(4) == str(CHECKINS)
    assert rows("okr-demo.db", "SELECT count(*) FROM checkins WHERE comment = 'mine'")[0][0] == 0
    # A new database, a new password.
    second_password = SIGN_IN.fullmatch(out.splitlines()[1]).group(1)
    assert second_password != first_password
    [[password_hash]] = rows("okr-demo.db", "SELECT password_hash FROM users WHERE email = ?", ADMIN)
    assert passwords.verify(password_hash, second_password) and not passwords.verify(password_hash, first_password)
    assert sorted(os.listdir(tmp_path)) == ["okr-demo.db", "okr-demo.db.lock"]


def test_fresh_is_refused_while_a_server_serves_the_demo_database(tmp_path, capsys, never_serves):
    path = str(tmp_path / "okr-demo.db")
    create_demo(create_app, path, seed=2)
    before = (tmp_path / "okr-demo.db").read_bytes()
    descriptor = serving_lock.hold_shared(path)
    try:
        status, out, err = run(capsys, "--database", path, "demo", "--fresh", "--no-serve")
    finally:
        os.close(descriptor)
    assert status == 1
    assert err.splitlines()[-1] == f"okr: cannot replace {path}: a server is serving it; stop it first"
    assert (tmp_path / "okr-demo.db").read_bytes() == before


@pytest.mark.parametrize("args, message", [
    (["demo", "--seed", "abc"], "okr: invalid value for '--seed': 'abc' is not a valid integer (see okr demo --help)"),
    (["demo", "--seed", "-1"], "okr: invalid value for '--seed': -1 is not 0 or more (see okr demo --help)"),
    (["--port", "99999", "demo"], "okr: port must be an integer from 0 to 65535, not '99999'"),
    (["--port", "http", "demo"], "okr: port must be an integer from 0 to 65535, not 'http'"),
    (["demo", "now"], "okr: got unexpected extra argument (now) (see okr demo --help)"),
])
def test_bad_input_is_one_line_and_makes_nothing(tmp_path, monkeypatch, capsys, never_serves, args, message):
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, *args)
    assert status != 0 and out == ""
    assert err.splitlines() == [message]
    assert os.listdir(tmp_path) == []


def test_a_missing_folder_is_named(tmp_path, capsys, never_serves):
    status, out, err = run(capsys, "--database", str(tmp_path / "nowhere" / "demo.db"), "demo", "--no-serve")
    assert status == 1
    assert err.splitlines() == [f"okr: cannot create {tmp_path / 'nowhere' / 'demo.db'}: the folder "
                                f"{tmp_path / 'nowhere'} does not exist"]
    assert os.listdir(tmp_path) == []


def test_its_help_touches_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, "demo", "--help")
    assert status == 0 and err == ""
    assert out.startswith("Usage: okr demo [OPTIONS]") and "--seed N" in out and "see okr --help" in out
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_a_port_in_use_is_named_before_anything_is_made(tmp_path, monkeypatch, capsys, never_serves):
    monkeypatch.chdir(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, out, err = run(capsys, "--port", str(port), "demo")
    assert status == 1 and err.splitlines() == [f"okr: port {port} is in use; pass --port"]
    assert os.listdir(tmp_path) == []


def session_cookie(response):
    """The name=value of the session cookie an answer sets."""
    return response.headers["Set-Cookie"].split(";", 1)[0]


def log_in_with_key(http, key):
    """Signs in at /login with an API key's credential and secret, as a browser would; the session cookie."""
    form = http.get("/login", headers={"Accept": "text/html"})
    assert form.status == 200, form.status
    cookie = session_cookie(form)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.payload.decode()).group(1)
    body = urlencode({"csrf_token": csrf, "next": "/", "credential": key["credential"], "secret": key["secret"]})
    answer = http.request("POST", "/login", raw=body.encode(), headers={
        "Accept": "text/html", "Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie})
    assert answer.status == 303, answer.payload[:500]
    return session_cookie(answer)


@pytest.mark.slow
def test_it_serves_the_dashboard_at_the_address_it_prints(tmp_path):
    # --port 0: okr demo picks a free port, and prints it.
    process = subprocess.Popen(
        [sys.executable, str(helpers.APP_PY), "--port", "0", "--no-access-log", "demo", "--seed", "5"], cwd=tmp_path,
        env=helpers.ENV_WITHOUT_OKR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    watchdog = threading.Timer(60, process.kill)
    watchdog.start()
    try:
        created = process.stdout.readline()
        assert CREATED.fullmatch(created.rstrip("\n")), created + process.stderr.read()
        sign_in = process.stdout.readline()
        assert SIGN_IN.fullmatch(sign_in.rstrip("\n")), sign_in
        dashboard = process.stdout.readline()
        match = re.fullmatch(r"dashboard: http://127\.0\.0\.1:(\d+)/ \(Ctrl-C stops the server\)\n", dashboard)
        assert match and match.group(1) != "0", dashboard
        http = helpers.HttpClient(f"127.0.0.1:{match.group(1)}")
        deadline = time.monotonic() + 15
        while True:
            try:
                page = http.get("/", headers={"Accept": "text/html"})
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not answer"
                time.sleep(0.05)
        # Its people have passwords: the pages want a sign-in, and the API signed requests.
        assert page.status == 303 and page.headers["Location"].startswith("/login"), page.status
        assert http.get("/v1/cycles").status == 401
        made = helpers.run_okr("--database", "okr-demo.db", "keys", "create", "--name", "tests", "--user", ADMIN,
                               "--json", cwd=tmp_path)
        assert made.returncode == 0, made.stderr
        key = json.loads(made.stdout)
        cycles = http.get("/v1/cycles", headers=signed(key)).ok()["cycles"]
        cookie = log_in_with_key(http, key)
        # The key acts as the admin, a person: / is her week, with the key results she owns this quarter.
        week = http.get("/", headers={"Accept": "text/html", "Cookie": cookie}).payload
        assert b"<h1>Your week</h1>" in week and b"<ul class=\"week\">" in week and b">Check in</button>" in week
        assert b"<h1>Cycles</h1>" in http.get("/cycles", headers={"Accept": "text/html", "Cookie": cookie}).payload
        cycle_page = http.get(f"/cycles/{cycles[-1]['id']}", headers={"Accept": "text/html", "Cookie": cookie})
        assert cycle_page.status == 200 and "Grow self-serve revenue" in cycle_page.payload.decode()
    finally:
        process.send_signal(signal.SIGTERM)
        _, log = process.communicate(timeout=15)
        watchdog.cancel()
    assert process.returncode == 0, log
    assert "okr: using database" in log and "listening on http://127.0.0.1:" in log
    assert not (tmp_path / "okr.db").exists() and (tmp_path / "okr-demo.db").exists()


def test_the_clock_is_the_real_one_again_once_the_demo_is_made(tmp_path):
    create_demo(create_app, str(tmp_path / "demo.db"), 5, datetime(2026, 3, 18, tzinfo=timezone.utc))
    assert okr.clock.stamped_time.get() is None
    assert okr.clock.utc_now() > "2026-11-01"


def test_the_activity_feed_shows_the_demos_people_at_work(demo_db):
    """Each check-in's event is its author's (a starting value has none: its key result's owner made it), each
    key result's its owner's, dated as the change."""
    wrong = counts(demo_db, """SELECT count(*) FROM events e JOIN checkins c ON c.id = e.resource_id
                             WHERE e.type = 'checkin.created' AND (e.person_id IS NOT coalesce(c.author_id,
                                 (SELECT owner_id FROM key_results k WHERE k.seq = c.key_result_seq))
                                                                  OR e.created_at IS NOT c.created_at)""")
    assert wrong == [0]
    assert counts(demo_db, "SELECT count(*) FROM events WHERE type = 'checkin.created'") == counts(
        demo_db, "SELECT count(*) FROM checkins")
    unowned = counts(demo_db, """SELECT count(*) FROM events e JOIN key_results k ON k.id = e.resource_id
                               WHERE e.type = 'key_result.created' AND e.person_id IS NOT k.owner_id""")
    assert unowned == [0]
    assert counts(demo_db, "SELECT DISTINCT json_extract(actor, '$.type') FROM events WHERE type = 'user.created'") == [
        "system"]


def counts(path, sql):
    return [row[0] for row in rows(path, sql)]
