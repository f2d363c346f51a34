"""Admin commands around API keys: keys create/list/revoke, auth-header, the private file, backup."""
import json
import os
import re
import sqlite3
import threading
import time
from contextlib import closing
from datetime import datetime, timezone

import pytest

import helpers
from helpers import OBJECTIVE_FIELDS, TIMESTAMP, assert_error, create_key, file_mode, make_user, signed
from okr import create_app

VECTOR_LINE = ("Authorization: S1-HMAC-SHA256 Credential=mycredential&Timestamp=2019-02-03T01:55:37Z"
               "&Signature=ab9b15c8321dd0e00bbbcc8e33629adcb273b1dfeedb54387cb305fca6c409fa")


@pytest.fixture
def umask_022():
    """A permissive umask, so that only an explicit mode makes a file private."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)



def stored_keys(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT credential, secret, name, created_at, revoked_at FROM api_keys ORDER BY seq").fetchall()


def assert_401(response):
    assert_error(response, 401)
    assert response.headers["WWW-Authenticate"] == "S1-HMAC-SHA256"


# --- keys create ---------------------------------------------------------------------------


@pytest.mark.slow
def test_keys_create_json_prints_credential_and_secret_and_stores_them(app, runner):
    key = create_key(runner, "dashboard")
    assert set(key) == {"credential", "secret"}
    assert key["credential"] and key["secret"] and key["credential"] != key["secret"]
    [(credential, secret, name, created_at, revoked_at)] = stored_keys(app)
    assert (credential, secret, name, revoked_at) == (key["credential"], key["secret"], "dashboard", None)
    assert TIMESTAMP.fullmatch(created_at)


def test_keys_create_plain_prints_the_secret(app, runner):
    result = runner.invoke(args=["keys", "create", "--name", "laptop"])
    assert result.exit_code == 0, result.output
    [(credential, secret, *_)] = stored_keys(app)
    assert credential in result.output and secret in result.output


def test_keys_are_unique(runner):
    first, second = create_key(runner, "a"), create_key(runner, "b")
    assert first["credential"] != second["credential"] and first["secret"] != second["secret"]


@pytest.mark.parametrize("args", [[], ["--name", ""], ["--name", "   "]], ids=["no name", "empty", "blank"])
def test_keys_create_needs_a_name(app, runner, args):
    assert runner.invoke(args=["keys", "create", *args]).exit_code != 0
    assert stored_keys(app) == []


# --- keys list -----------------------------------------------------------------------------


@pytest.fixture
def two_keys(runner):
    kept, gone = create_key(runner, "kept-key"), create_key(runner, "gone-key")
    assert runner.invoke(args=["keys", "revoke", gone["credential"]]).exit_code == 0
    return kept, gone


def test_keys_list_never_prints_secrets(runner, two_keys):
    for args in (["keys", "list"], ["keys", "list", "--json"]):
        result = runner.invoke(args=args)
        assert result.exit_code == 0, result.output
        for key in two_keys:
            assert key["credential"] in result.output
            assert key["secret"] not in result.output


def test_keys_list_shows_name_and_revocation(runner, two_keys):
    kept, gone = two_keys
    lines = runner.invoke(args=["keys", "list"]).output.splitlines()
    [kept_line] = [line for line in lines if kept["credential"] in line]
    [gone_line] = [line for line in lines if gone["credential"] in line]
    assert "kept-key" in kept_line and "revoked" not in kept_line
    assert "gone-key" in gone_line and "revoked" in gone_line


@pytest.mark.slow
def test_keys_list_json(runner, two_keys):
    kept, gone = two_keys
    rows = [json.loads(line) for line in runner.invoke(args=["keys", "list", "--json"]).output.splitlines()]
    assert [(r["credential"], r["name"]) for r in rows] == [(kept["credential"], "kept-key"), (gone["credential"], "gone-key")]
    assert all("secret" not in r for r in rows)
    assert rows[0]["revoked_at"] is None and TIMESTAMP.fullmatch(rows[1]["revoked_at"])


# --- read-only keys ------------------------------------------------------------------------


def read_only_flags(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT name, read_only FROM api_keys ORDER BY seq").fetchall()


def test_keys_create_read_only_stores_the_flag(app, runner):
    result = runner.invoke(args=["keys", "create", "--name", "dashboard", "--read-only", "--json"])
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.output)) == {"credential", "secret"}
    create_key(runner, "writer")
    assert read_only_flags(app) == [("dashboard", 1), ("writer", 0)]


@pytest.fixture
def reader_and_writer(runner):
    return create_key(runner, "reader", read_only=True), create_key(runner, "writer")


def test_keys_list_shows_which_keys_are_read_only(runner, reader_and_writer):
    reader, writer = reader_and_writer
    lines = runner.invoke(args=["keys", "list"]).output.splitlines()
    [reader_line] = [line for line in lines if reader["credential"] in line]
    [writer_line] = [line for line in lines if writer["credential"] in line]
    assert "read-only" in reader_line and "read-only" not in writer_line
    assert "read-write" in writer_line


def test_keys_list_json_shows_read_only(runner, reader_and_writer):
    reader, writer = reader_and_writer
    rows = [json.loads(line) for line in runner.invoke(args=["keys", "list", "--json"]).output.splitlines()]
    assert [(r["credential"], r["read_only"]) for r in rows] == [(reader["credential"], True),
                                                                 (writer["credential"], False)]


# --- keys acting as a user ----------------------------------------------------------------


def key_users(app):
    """(name, the email of the user it acts as or None) of every key."""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT k.name, u.email FROM api_keys k LEFT JOIN users u ON u.id = k.user_id"
                          " ORDER BY k.seq").fetchall()


def test_keys_create_user_makes_a_key_that_acts_as_that_user(app, runner):
    make_user(runner)
    result = runner.invoke(args=["keys", "create", "--name", "ada-scripts", "--user", "ADA@example.com"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[2] == "user:       ada@example.com (the key acts as them, with their role)"
    create_key(runner, "service")
    assert key_users(app) == [("ada-scripts", "ada@example.com"), ("service", None)]


def test_keys_create_user_json_is_the_credential_and_secret(app, runner):
    make_user(runner)
    result = runner.invoke(args=["keys", "create", "--name", "k", "--user", "ada@example.com", "--json"])
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.output)) == {"credential", "secret"}
    assert key_users(app) == [("k", "ada@example.com")]


def test_a_users_key_has_the_users_role(app, runner, client):
    make_user(runner)
    assert runner.invoke(args=["users", "set-role", "ada@example.com", "viewer"]).exit_code == 0
    result = runner.invoke(args=["keys", "create", "--name", "k", "--user", "ada@example.com", "--json"])
    key = json.loads(result.output)
    assert client.get("/v1/cycles", headers=signed(key)).status_code == 200
    assert_error(client.post("/v1/cycles", json={"name": "Q1"}, headers=signed(key)), 403)


@pytest.mark.parametrize("deactivated", [False, True], ids=["unknown email", "deactivated user"])
def test_keys_create_user_refuses_an_unknown_or_deactivated_user(app, runner, deactivated):
    make_user(runner)
    if deactivated:
        assert runner.invoke(args=["users", "deactivate", "ada@example.com"]).exit_code == 0
    email = "ada@example.com" if deactivated else "nobody@example.com"
    result = runner.invoke(args=["keys", "create", "--name", "k", "--user", email, "--json"])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "Error: ada@example.com is deactivated: reactivate them first (okr users activate ada@example.com)"
        if deactivated else "Error: no user with email nobody@example.com"]
    assert stored_keys(app) == []


def test_keys_list_shows_each_keys_user_or_service(runner):
    make_user(runner, "Zoë", "zoë@example.com")
    mine = json.loads(runner.invoke(args=["keys", "create", "--name", "mine", "--user", "zoë@example.com",
                                          "--json"]).output)
    bot = create_key(runner, "bot")
    lines = runner.invoke(args=["keys", "list"]).output.splitlines()
    [mine_line] = [line for line in lines if mine["credential"] in line]
    [bot_line] = [line for line in lines if bot["credential"] in line]
    assert mine_line.split()[-2:] == ["zoë@example.com", "mine"]
    assert bot_line.split()[-2:] == ["service", "bot"]
    assert mine_line.index("mine") == bot_line.index("bot")  # the names line up after the users
    rows = [json.loads(line) for line in runner.invoke(args=["keys", "list", "--json"]).output.splitlines()]
    assert [(row["name"], row["user"]) for row in rows] == [("mine", "zoë@example.com"), ("bot", None)]


# --- keys revoke ---------------------------------------------------------------------------


def test_keys_revoke_records_the_time_and_keeps_the_key(app, runner):
    key = create_key(runner)
    result = runner.invoke(args=["keys", "revoke", key["credential"]])
    assert result.exit_code == 0, result.output
    [(credential, _, _, _, revoked_at)] = stored_keys(app)
    assert credential == key["credential"] and TIMESTAMP.fullmatch(revoked_at)


def test_keys_revoke_takes_effect_on_the_next_request(client, runner):
    key = create_key(runner)
    line = runner.invoke(args=["auth-header", "--credential", key["credential"], "--secret", key["secret"]]).output
    headers = {"Authorization": line.strip().split(": ", 1)[1]}
    assert client.get("/v1/cycles", headers=headers).status_code == 200
    assert runner.invoke(args=["keys", "revoke", key["credential"]]).exit_code == 0
    assert_401(client.get("/v1/cycles", headers=headers))


def test_keys_revoke_unknown_credential_fails(app, runner):
    create_key(runner)
    result = runner.invoke(args=["keys", "revoke", "no-such-credential"])
    assert result.exit_code != 0
    assert "no-such-credential" in result.output
    assert stored_keys(app)[0][4] is None


def test_keys_revoke_needs_a_credential(runner):
    assert runner.invoke(args=["keys", "revoke"]).exit_code != 0


# --- auth-header ---------------------------------------------------------------------------


def test_auth_header_with_timestamp_matches_the_test_vector(runner):
    result = runner.invoke(args=["auth-header", "--credential", "mycredential", "--secret", "mysecret",
                                 "--timestamp", "2019-02-03T01:55:37Z"])
    assert result.exit_code == 0, result.output
    assert result.output == VECTOR_LINE + "\n"


def test_auth_header_reads_credential_and_secret_from_the_environment(runner):
    result = runner.invoke(args=["auth-header", "--timestamp", "2019-02-03T01:55:37Z"],
                           env={"OKR_CREDENTIAL": "mycredential", "OKR_SECRET": "mysecret"})
    assert result.output == VECTOR_LINE + "\n"


def test_auth_header_signs_now_and_is_accepted(client, runner):
    key = create_key(runner)
    result = runner.invoke(args=["auth-header", "--credential", key["credential"], "--secret", key["secret"]])
    assert result.exit_code == 0, result.output
    name, value = result.output.rstrip("\n").split(": ", 1)
    assert name == "Authorization"
    signed_at = re.search(r"Timestamp=([^&]+)", value).group(1)
    age = datetime.now(timezone.utc) - datetime.strptime(signed_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert abs(age.total_seconds()) < 60
    response = client.post("/v1/cycles", json={"name": "Q1"}, headers={name: value})
    assert response.status_code == 200, response.get_json()


def test_auth_header_needs_credential_and_secret(runner):
    assert runner.invoke(args=["auth-header", "--credential", "c"]).exit_code != 0
    assert runner.invoke(args=["auth-header", "--secret", "s"]).exit_code != 0


# --- the database file is private ----------------------------------------------------------


def test_database_file_is_created_owner_only(tmp_path, umask_022):
    runner = create_app({"TESTING": True, "DATABASE": tmp_path / "fresh.db"}).test_cli_runner()
    assert runner.invoke(args=["init-db"]).exit_code == 0
    create_key(runner)
    assert file_mode(tmp_path / "fresh.db") == 0o600


@pytest.mark.slow
def test_database_file_created_by_the_init_db_process_is_owner_only(tmp_path, umask_022):
    database = tmp_path / "process.db"
    for command in (["init-db"], ["keys", "create", "--name", "n"]):
        result = helpers.run_okr("--database", database, *command, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    assert file_mode(database) == 0o600


# --- backup --------------------------------------------------------------------------------


def all_objectives(get, cycle_id):
    rows, token = [], None
    while True:
        page = get(f"/v1/objectives?cycle_id={cycle_id}&page_size=1000" + (f"&page_token={token}" if token else ""))
        rows += page["objectives"]
        token = page["next_page_token"]
        if token is None:
            return rows


def objective_count(app):
    with closing(sqlite3.connect(app.config["DATABASE"], timeout=10)) as db:
        return db.execute("SELECT count(*) FROM objectives").fetchone()[0]


def integrity(path):
    with closing(sqlite3.connect(path)) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0], db.execute("PRAGMA foreign_key_check").fetchall()


DESCRIPTION = "backed up while busy " * 100


@pytest.mark.slow
def test_backup_while_serving_writes_is_a_consistent_working_copy(app, live_server, runner, tmp_path, umask_022):
    http = live_server
    cycle = http.post("/v1/cycles", {"name": "busy"}).ok()
    stop, failures = threading.Event(), []

    def writer(n):
        i = 0
        while not stop.is_set():
            response = http.post("/v1/objectives", {"name": f"w{n}-{i}", "description": DESCRIPTION,
                                                    "cycle_id": cycle["id"], "is_company": False, "is_personal": True})
            if response.status != 200:
                failures.append((response.status, response.payload[:200]))
            i += 1

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    target = tmp_path / "copy.db"
    try:
        deadline = time.monotonic() + 30
        while objective_count(app) < 300 and time.monotonic() < deadline:
            time.sleep(0.02)
        before = objective_count(app)
        result = runner.invoke(args=["backup", str(target)])
        after = objective_count(app)
        time.sleep(0.2)  # the server keeps taking writes after the backup too
    finally:
        stop.set()
        for thread in threads:
            thread.join()

    assert result.exit_code == 0, result.output
    assert failures == []
    assert json.loads(result.output)["integrity_check"] == "ok"
    assert integrity(target) == ("ok", [])
    assert file_mode(target) == 0o600

    copy = create_app({"TESTING": True, "DATABASE": target}).test_client()
    copied = all_objectives(lambda path: copy.get(path).get_json(), cycle["id"])
    assert before <= len(copied) <= after
    assert all(set(o) == OBJECTIVE_FIELDS and o["description"] == DESCRIPTION
               and re.fullmatch(r"w\d-\d+", o["name"]) for o in copied)
    # A snapshot: exactly the oldest rows of the live database, unchanged.
    source = all_objectives(lambda path: http.get(path).ok(), cycle["id"])
    assert len(source) > after and copied == source[:len(copied)]
    # And a working database of its own.
    response = copy.post("/v1/cycles", json={"name": "restored"})
    assert response.status_code == 200, response.get_json()
    assert copy.get(f"/v1/cycles/{cycle['id']}").get_json()["name"] == "busy"


def test_backup_copy_is_a_single_self_contained_file(runner, client, tmp_path):
    cycle = client.post("/v1/cycles", json={"name": "Q1"}).get_json()
    target = tmp_path / "solo.db"
    assert runner.invoke(args=["backup", str(target)]).exit_code == 0
    assert not (tmp_path / "solo.db-wal").exists()
    with closing(sqlite3.connect(target)) as db:
        assert db.execute("SELECT id FROM cycles").fetchall() == [(cycle["id"],)]


@pytest.mark.slow
def test_backup_is_a_page_copy_that_keeps_the_database_header(app, runner, tmp_path):
    # A dump-and-reload copy would lose these; SQLite's backup API copies the file's pages.
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.execute("PRAGMA user_version = 42")
        db.execute("PRAGMA application_id = 1330332242")
    target = tmp_path / "pages.db"
    assert runner.invoke(args=["backup", str(target)]).exit_code == 0
    with closing(sqlite3.connect(target)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 42
        assert db.execute("PRAGMA application_id").fetchone()[0] == 1330332242


def test_backup_refuses_an_existing_target(runner, tmp_path):
    target = tmp_path / "taken.db"
    target.write_bytes(b"precious")
    result = runner.invoke(args=["backup", str(target)])
    assert result.exit_code != 0
    assert target.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_backup_refuses_a_missing_database(tmp_path):
    missing, target = tmp_path / "missing.db", tmp_path / "copy.db"
    runner = create_app({"TESTING": True, "DATABASE": missing}).test_cli_runner()
    result = runner.invoke(args=["backup", str(target)])
    assert result.exit_code != 0
    assert not target.exists() and not missing.exists()


@pytest.mark.slow
def test_backup_through_the_real_cli(runner, client, tmp_path, umask_022):
    client.post("/v1/cycles", json={"name": "Q1"})
    database, target = client.application.config["DATABASE"], tmp_path / "cli-copy.db"
    result = helpers.run_okr("--database", database, "backup", target, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["integrity_check"] == "ok" and report["backup"] == str(target.resolve())
    assert integrity(target) == ("ok", []) and file_mode(target) == 0o600
