"""okr restore: the whole backup is checked before the live database is touched, and a served database is refused."""
import json
import os
import sqlite3
import stat
import uuid
from contextlib import closing
from pathlib import Path

import pytest

import helpers
from helpers import free_port, make_cycle, make_key_result, make_objective, make_team, start_service
from okr import create_app, schema_path
from okr.db import init_db, transaction
from okr.store.schema import NOT_RESTORED, SCHEMA_VERSION, schema_objects
from okr.store import invitations, keys, team_members, teams, users

SCHEMA_V0 = helpers.SCHEMA_V0


def schema_tables():
    """The tables schema.sql creates, in its order."""
    with closing(sqlite3.connect(":memory:")) as db:
        db.executescript(Path(schema_path()).read_text(encoding="utf-8"))
        return [name for (name,) in db.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite%' ORDER BY rowid")]


def columns(path):
    with closing(sqlite3.connect(path)) as db:
        return {table: {row[1] for row in db.execute(f"PRAGMA table_info({table})")} for table in schema_tables()}


def files(database):
    """The bytes of the database and of its -wal, as far as they exist."""
    return {suffix: Path(f"{database}{suffix}").read_bytes()
            for suffix in ("", "-wal") if os.path.exists(f"{database}{suffix}")}


@pytest.fixture
def live(app, client):
    """The app's database with a cycle in it and a -wal beside it, as a running server leaves it."""
    assert client.post("/v1/cycles", json={"name": "live"}).status_code == 200
    database = Path(app.config["DATABASE"])
    assert Path(f"{database}-wal").stat().st_size > 0
    return database


def make_backup(tmp_path, name="backup.db", cycles=("from the backup",)):
    """A backup as `okr backup` writes it, of a database holding these cycles."""
    source = create_app({"TESTING": True, "DATABASE": tmp_path / f"source-{name}"})
    with source.app_context():
        init_db()
    for cycle in cycles:
        assert source.test_client().post("/v1/cycles", json={"name": cycle}).status_code == 200
    result = source.test_cli_runner().invoke(args=["backup", str(tmp_path / name)])
    assert result.exit_code == 0, result.output
    return tmp_path / name


def change(path, *statements):
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        for statement in statements:
            db.execute(statement)


def restore(runner, backup, *options):
    return runner.invoke(args=["restore", *options, str(backup)])


def cycle_names(client):
    return [cycle["name"] for cycle in client.get("/v1/cycles").get_json()["cycles"]]


def assert_refused(result, backup, database, before, problem):
    assert result.exit_code == 1, result.output
    message = result.output.strip()
    assert "Traceback" not in message and len(message.splitlines()) == 1, message
    assert f"cannot restore from {backup}: {problem}" in message
    assert str(database) not in message and ".okr-restore" not in message
    assert files(database) == before


# --- backups that are refused -------------------------------------------------------------


def empty(tmp_path):
    (tmp_path / "backup.db").write_bytes(b"")
    return tmp_path / "backup.db"


def text(tmp_path):
    (tmp_path / "backup.db").write_text("name,email\nAda,ada@example.com\n" * 100)
    return tmp_path / "backup.db"


def sqlite_header_only(tmp_path):
    (tmp_path / "backup.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    return tmp_path / "backup.db"


def another_apps_database(tmp_path):
    change(tmp_path / "backup.db", "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
           "INSERT INTO notes (body) VALUES ('hello')")
    return tmp_path / "backup.db"


def without_a_column(tmp_path):
    backup = make_backup(tmp_path)
    change(backup, "ALTER TABLE api_keys DROP COLUMN revoked_at")
    return backup


def with_an_unknown_column(tmp_path):
    backup = make_backup(tmp_path)
    change(backup, "ALTER TABLE cycles ADD COLUMN colour TEXT")
    return backup


def newer(tmp_path):
    backup = make_backup(tmp_path)
    change(backup, f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    return backup


def corrupted(tmp_path):
    """A backup with bytes flipped in one of its cycles' pages, so that integrity_check fails."""
    backup = make_backup(tmp_path, cycles=[f"cycle {n}" for n in range(300)])
    pristine = backup.read_bytes()
    page_size = int.from_bytes(pristine[16:18], "big")
    for page in range(len(pristine) // page_size - 1, 1, -1):
        damaged = bytearray(pristine)
        middle = page * page_size + page_size // 2
        damaged[middle:middle + 64] = bytes(b ^ 0x5A for b in damaged[middle:middle + 64])
        backup.write_bytes(damaged)
        with closing(sqlite3.connect(f"file:{backup}?mode=ro", uri=True)) as db:
            if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                return backup
    pytest.fail("no page whose damage integrity_check reports")


def with_a_dangling_reference(tmp_path):
    backup = make_backup(tmp_path)
    change(backup, "INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, created_at, modified_at)"
                   f" VALUES ('{uuid.uuid4()}', 'orphan', 0, 0, 'no such cycle', '2026-01-01T00:00:00Z',"
                   " '2026-01-01T00:00:00Z')")
    return backup


@pytest.mark.parametrize("make, problem", [
    (empty, "it is empty (0 bytes)"),
    (text, "it is not an SQLite database"),
    (sqlite_header_only, "it is not an SQLite database"),
    (another_apps_database, "it is not an OKR database: no tables users, invitations, team_members, teams, cycles"),
    (without_a_column, "it is not an OKR database: table api_keys has no column revoked_at"),
    (with_an_unknown_column, "it is not an OKR database: table cycles has an unknown column colour"),
    (newer, f"it has schema version {SCHEMA_VERSION + 1}, newer than this release knows ({SCHEMA_VERSION})"),
    (corrupted, "it fails its integrity check: "),
    (with_a_dangling_reference, "it fails its foreign key check: 1 row refers to a missing row"),
], ids=lambda value: getattr(value, "__name__", ""))
def test_a_bad_backup_is_refused_and_the_live_database_is_untouched(runner, live, tmp_path, make, problem):
    backup = make(tmp_path)
    before, backup_bytes = files(live), backup.read_bytes()
    assert_refused(restore(runner, backup), backup, live, before, problem)
    assert backup.read_bytes() == backup_bytes
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("table", schema_tables())
def test_a_backup_missing_a_table_is_refused(runner, live, tmp_path, table):
    backup = make_backup(tmp_path)
    change(backup, f"DROP TABLE {table}")
    before = files(live)
    assert_refused(restore(runner, backup), backup, live, before, f"it is not an OKR database: no table {table}")


def test_a_refused_restore_creates_no_database(tmp_path):
    database = tmp_path / "new.db"
    runner = create_app({"TESTING": True, "DATABASE": database}).test_cli_runner()
    result = restore(runner, empty(tmp_path))
    assert result.exit_code == 1 and "it is empty" in result.output
    assert not database.exists() and not Path(f"{database}-wal").exists()


# --- backups that are restored -------------------------------------------------------------


def test_restore_replaces_the_live_database_with_the_backup(app, runner, live, client, tmp_path):
    backup = make_backup(tmp_path, cycles=("one", "two"))
    backup_bytes = backup.read_bytes()
    result = restore(runner, backup)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["restored"] == str(live) and report["from"] == str(backup)
    assert report["cycles"] == 2
    assert Path(f"{live}-wal").stat().st_size == 0  # all in the file, none left to replay
    assert cycle_names(client) == ["one", "two"]  # the app's open connection sees it
    assert backup.read_bytes() == backup_bytes
    with closing(sqlite3.connect(live)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert stat.S_IMODE(live.stat().st_mode) == 0o600
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_restore_reports_every_table_it_restored(runner, live, tmp_path):
    """Each table restored, with its rows: what the backup holds, check-ins and all, but what a restore keeps from
    the live database (its session secret, sessions, open links and failed sign-ins)."""
    source = create_app({"TESTING": True, "DATABASE": tmp_path / "source.db"})
    with source.app_context():
        init_db()
    client = source.test_client()
    objective = make_objective(client, make_cycle(client)["id"], team_id=make_team(client)["id"])
    key_result = make_key_result(client, objective["id"])
    for value in ("10", "20", "35"):
        assert client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": value}).status_code == 200
    assert client.post(f"/v1/keyresults/{key_result['id']}/comments", json={"body": "On it"}).status_code == 200
    backup = tmp_path / "full.db"
    assert source.test_cli_runner().invoke(args=["backup", str(backup)]).exit_code == 0
    with closing(sqlite3.connect(backup)) as db:
        held = {table: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for (table,) in db.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite%' ORDER BY rowid")}
    result = restore(runner, backup)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report.pop("restored") == str(live) and report.pop("from") == str(backup)
    assert report == {table: rows for table, rows in held.items() if table not in NOT_RESTORED}
    assert list(report) == [table for table in schema_tables() if table not in NOT_RESTORED]
    assert report["checkins"] == 4 and report["comments"] == 1 and report["events"] > 5  # 4: one as it was made


def test_restore_creates_a_database_that_does_not_exist_yet(tmp_path):
    database = tmp_path / "new.db"
    backup = make_backup(tmp_path, cycles=("restored",))
    previous = os.umask(0o022)
    try:
        app = create_app({"TESTING": True, "DATABASE": database})
        result = restore(app.test_cli_runner(), backup)
    finally:
        os.umask(previous)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(database.stat().st_mode) == 0o600
    assert cycle_names(app.test_client()) == ["restored"]


@pytest.mark.parametrize("page_size", [1024, 8192, 65536])
def test_a_backup_with_another_page_size_is_restored(runner, live, client, tmp_path, page_size):
    backup = make_backup(tmp_path, cycles=("other pages",))
    change(backup, f"PRAGMA page_size = {page_size}", "VACUUM")
    assert int.from_bytes(backup.read_bytes()[16:18], "big") == (1 if page_size == 65536 else page_size)
    result = restore(runner, backup)
    assert result.exit_code == 0, result.output
    assert cycle_names(client) == ["other pages"]
    with closing(sqlite3.connect(live)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_live_database_with_big_pages_takes_a_backup_with_small_ones(tmp_path):
    database = tmp_path / "big-pages.db"
    change(database, "PRAGMA page_size = 8192", "PRAGMA journal_mode = WAL")
    app = create_app({"TESTING": True, "DATABASE": database})
    with app.app_context():
        init_db()
    backup = make_backup(tmp_path, cycles=("small pages",))
    result = restore(app.test_cli_runner(), backup)
    assert result.exit_code == 0, result.output
    assert cycle_names(app.test_client()) == ["small pages"]


def test_an_older_backup_is_migrated_on_a_copy(runner, live, client, tmp_path):
    backup = tmp_path / "v0.db"
    with closing(sqlite3.connect(backup)) as db:
        db.executescript(SCHEMA_V0.read_text(encoding="utf-8"))
        db.execute("INSERT INTO cycles (id, name, created_at) VALUES (?, 'from version 0', '2025-01-01T00:00:00Z')",
                   (str(uuid.uuid4()),))
        db.execute("INSERT INTO users (id, name, email, is_active, created_at)"
                   " VALUES (?, 'Ada', 'ada@example.com', 1, '2025-01-01T00:00:00Z')", (str(uuid.uuid4()),))
        db.commit()
    backup_bytes = backup.read_bytes()
    result = restore(runner, backup)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output).get("migrated_from", 0) == 0
    assert backup.read_bytes() == backup_bytes
    assert cycle_names(client) == ["from version 0"]
    assert [user["email"] for user in client.get("/v1/users").get_json()["users"]] == ["ada@example.com"]
    with closing(sqlite3.connect(live)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert columns(live) == columns(make_backup(tmp_path, name="current.db"))


# --- a served database ---------------------------------------------------------------------


def test_a_database_held_by_a_server_is_refused_unless_forced(runner, live, client, tmp_path):
    from okr.server import serving_lock
    backup = make_backup(tmp_path, cycles=("forced",))
    held = serving_lock.hold_shared(live)
    try:
        before = files(live)
        result = restore(runner, backup)
        assert result.exit_code == 1, result.output
        assert f"cannot restore into {live}: a server is serving it" in result.output and "--force" in result.output
        assert files(live) == before
        result = restore(runner, backup, "--force")
        assert result.exit_code == 0, result.output
    finally:
        os.close(held)
    assert cycle_names(client) == ["forced"]


def okr(database, *args):
    return helpers.run_okr("--database", database, *args, cwd=Path(database).parent)


def stop(process):
    process.terminate()  # SIGTERM
    process.communicate(timeout=15)
    assert process.returncode == 0


def served_names(http):
    return [cycle["name"] for cycle in http.get("/v1/cycles").ok()["cycles"]]


def stored_names(database):
    with closing(sqlite3.connect(database)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return [name for (name,) in db.execute("SELECT name FROM cycles ORDER BY seq")]


@pytest.mark.slow
def test_a_running_server_blocks_a_restore_and_force_restores_under_it(tmp_path):
    database = tmp_path / "live.db"
    backup = make_backup(tmp_path, cycles=("restored",))
    change(backup, "PRAGMA page_size = 8192", "VACUUM")  # the live file is in WAL mode, with 4096
    process, http = start_service(free_port(), "--database", str(database), env=helpers.ENV_WITHOUT_OKR)
    try:
        http.post("/v1/cycles", {"name": "served"}).ok()
        before = files(database)
        refused = okr(database, "restore", str(backup))
        assert refused.returncode == 1, refused.stderr
        assert "a server is serving it" in refused.stderr and "Traceback" not in refused.stderr
        assert files(database) == before
        assert served_names(http) == ["served"]

        forced = okr(database, "restore", "--force", str(backup))
        assert forced.returncode == 0, forced.stderr
        assert served_names(http) == ["restored"]
        http.post("/v1/cycles", {"name": "written after"}).ok()
        assert served_names(http) == ["restored", "written after"]
    finally:
        stop(process)
    assert stored_names(database) == ["restored", "written after"]


@pytest.mark.slow
def test_two_servers_both_block_a_restore_until_both_have_stopped(tmp_path):
    database = tmp_path / "live.db"
    backup = make_backup(tmp_path, cycles=("restored",))
    first, http = start_service(free_port(), "--database", str(database), env=helpers.ENV_WITHOUT_OKR)
    try:
        second, _ = start_service(free_port(), "--database", str(database), env=helpers.ENV_WITHOUT_OKR)
        try:
            http.post("/v1/cycles", {"name": "served"}).ok()
            assert okr(database, "restore", str(backup)).returncode == 1
        finally:
            stop(second)
        assert okr(database, "restore", str(backup)).returncode == 1
    finally:
        stop(first)
    restored = okr(database, "restore", str(backup))
    assert restored.returncode == 0, restored.stderr
    assert stored_names(database) == ["restored"]


# --- hostile backups: objects okr does not make, bad rows, tables of their own --------------------------------

STEAL_KEYS = """CREATE TRIGGER leak AFTER INSERT ON api_keys
    BEGIN UPDATE teams SET name = new.secret; END"""


@pytest.mark.parametrize("statement, problem", [
    (STEAL_KEYS, "it has a trigger leak that okr does not make"),
    ("CREATE VIEW secrets AS SELECT secret FROM api_keys", "it has a view secrets that okr does not make"),
    ("CREATE INDEX by_secret ON api_keys (secret)", "it has an index by_secret that okr does not make"),
    ("CREATE TABLE extra (x)", "it has a table extra that okr does not make"),
    ("DROP TRIGGER key_results_follow_their_objective", None),  # a missing one is made again: taken
], ids=["trigger", "view", "index", "table", "missing trigger"])
def test_a_schema_object_okr_does_not_make_is_refused_by_name(runner, live, tmp_path, statement, problem):
    backup = make_backup(tmp_path)
    change(backup, statement)
    before = files(live)
    result = restore(runner, backup)
    if problem is None:
        assert result.exit_code == 0, result.output
    else:
        assert_refused(result, backup, live, before, problem)


def test_a_trigger_with_okrs_name_and_another_body_is_refused(runner, live, tmp_path):
    backup = make_backup(tmp_path)
    with closing(sqlite3.connect(backup)) as db:
        [sql] = db.execute("SELECT sql FROM sqlite_schema WHERE name = 'key_results_follow_their_objective'").fetchone()
    change(backup, "DROP TRIGGER key_results_follow_their_objective",
           sql.replace("END", "UPDATE teams SET name = 'x'; END"))
    before = files(live)
    assert_refused(restore(runner, backup), backup, live, before,
                   "its trigger key_results_follow_their_objective is not the one okr makes")


def test_the_keys_secret_does_not_leak_after_a_refused_restore(runner, live, tmp_path):
    backup = make_backup(tmp_path)
    # A team for the trigger to write each new key's secret into: restored, the next key would leak.
    change(backup, "INSERT INTO teams (id, name, created_at) VALUES "
                   "('0f8fad5b-d9cb-469f-a165-70867728950e', 'Platform', '2026-01-01T00:00:00Z')", STEAL_KEYS)
    assert restore(runner, backup).exit_code == 1
    result = runner.invoke(args=["keys", "create", "--name", "after", "--json"])
    assert result.exit_code == 0
    secret = json.loads(result.output)["secret"]
    with closing(sqlite3.connect(live)) as db:
        names = [name for (name,) in db.execute("SELECT name FROM teams")]
    assert secret not in names


@pytest.mark.parametrize("statement, problem", [
    ("UPDATE cycles SET id = 'not-a-uuid'", "cycles[0]: id: must be a lowercase UUID"),
    ("UPDATE cycles SET created_at = '2026-02-30T00:00:00Z'", "cycles[0]: created_at: must be an RFC 3339"),
    ("UPDATE cycles SET name = 'x' || char(0) || 'y'", "cycles[0]: name: Must not contain NUL"),
], ids=["id", "timestamp", "nul"])
def test_a_bad_row_is_refused_naming_the_first(runner, live, tmp_path, statement, problem):
    backup = make_backup(tmp_path)
    change(backup, statement)
    before = files(live)
    assert_refused(restore(runner, backup), backup, live, before, problem)


def test_a_backups_events_are_checked_and_restored(runner, live, tmp_path):
    """The activity feed comes along; an event not as okr records one is refused like any row."""
    backup = make_backup(tmp_path, cycles=("one", "two"))
    with closing(sqlite3.connect(backup)) as db:
        feed = db.execute("SELECT id, type, actor, data FROM events ORDER BY seq").fetchall()
    assert [row[1] for row in feed] == ["cycle.created", "cycle.created"]
    bad = tmp_path / "bad.db"
    bad.write_bytes(backup.read_bytes())
    change(bad, "UPDATE events SET type = 'cycle' WHERE type = 'cycle.created'")
    before = files(live)
    assert_refused(restore(runner, bad), bad, live, before, 'events[0]: type: must be a resource and an action')
    assert restore(runner, backup).exit_code == 0
    with closing(sqlite3.connect(live)) as db:
        assert db.execute("SELECT id, type, actor, data FROM events ORDER BY seq").fetchall() == feed


def test_a_decimal_not_stored_as_okr_stores_it_is_refused(runner, live, tmp_path):
    source = create_app({"TESTING": True, "DATABASE": tmp_path / "source.db"})
    with source.app_context():
        init_db()
    client = source.test_client()
    cycle = client.post("/v1/cycles", json={"name": "Q"}).get_json()
    objective = client.post("/v1/objectives", json={"name": "O", "cycle_id": cycle["id"], "is_company": False,
                                                     "is_personal": False}).get_json()
    client.post(f"/v1/objectives/{objective['id']}/keyresults", json={"name": "K", "type": "milestone"})
    backup = tmp_path / "decimal.db"
    assert source.test_cli_runner().invoke(args=["backup", str(backup)]).exit_code == 0
    change(backup, "UPDATE key_results SET confidence = '0.5'")
    before = files(live)
    assert_refused(restore(runner, backup), backup, live, before,
                   "key_results[0]: confidence is stored as '0.5', not as okr stores it ('0.50')")


def test_what_is_restored_has_okrs_schema_to_the_letter(app, runner, live, tmp_path):
    """A table of the backup's own making (here: teams without its name check, with a default) stays behind."""
    backup = make_backup(tmp_path)
    with closing(sqlite3.connect(backup, isolation_level=None)) as db:
        [sql] = db.execute("SELECT sql FROM sqlite_schema WHERE name = 'teams'").fetchone()
        db.execute("PRAGMA writable_schema = ON")
        db.execute("UPDATE sqlite_schema SET sql = ? WHERE name = 'teams'",
                   (sql.replace("CHECK (length(name) <= 200)", "DEFAULT 'planted'"),))
    result = restore(runner, backup)
    assert result.exit_code == 0, result.output
    fresh = tmp_path / "fresh.db"
    other = create_app({"TESTING": True, "DATABASE": fresh})
    with other.app_context():
        init_db()
    with closing(sqlite3.connect(live)) as restored, closing(sqlite3.connect(fresh)) as made:
        assert schema_objects(restored) == schema_objects(made)
        assert [name for (name,) in restored.execute("SELECT name FROM cycles")] == ["from the backup"]


def test_a_backups_session_secret_is_not_restored(runner, live, tmp_path):
    """Whoever chose the secret that signs session cookies could sign a session for any key's credential."""
    backup = make_backup(tmp_path)
    change(backup, "UPDATE web_secrets SET value = 'attacker-knows-this' WHERE name = 'session'")
    assert restore(runner, backup).exit_code == 0
    with closing(sqlite3.connect(live)) as db:
        [secret] = db.execute("SELECT value FROM web_secrets WHERE name = 'session'").fetchone()
    assert secret != "attacker-knows-this" and len(secret) == 64


def test_an_email_key_that_is_not_its_emails_is_refused(runner, live, tmp_path):
    backup = make_backup(tmp_path)
    change(backup, "INSERT INTO users (id, name, email, email_key, created_at) VALUES ("
                   "'0f8fad5b-d9cb-469f-a165-70867728950e', 'Eve', 'eve@example.com', 'victim@example.com', "
                   "'2026-01-01T00:00:00Z')")
    before = files(live)
    assert_refused(restore(runner, backup), backup, live, before,
                   "users[0]: email_key 'victim@example.com' is not the key of its email 'eve@example.com'")


def test_a_restore_hands_out_no_seq_twice(runner, live, tmp_path, app):
    """Rows deleted before the backup leave the AUTOINCREMENT counter above the rows' own seqs."""
    backup = make_backup(tmp_path, cycles=("one", "two", "three"))
    change(backup, "DELETE FROM cycles WHERE name IN ('two', 'three')")
    assert restore(runner, backup).exit_code == 0
    app.test_client().post("/v1/cycles", json={"name": "after"})
    with closing(sqlite3.connect(live)) as db:
        assert [seq for (seq,) in db.execute("SELECT seq FROM cycles ORDER BY seq")] == [1, 4]


def test_a_view_in_place_of_a_table_is_refused_not_a_traceback(runner, live, tmp_path):
    backup = make_backup(tmp_path)
    change(backup, "PRAGMA foreign_keys = OFF", "DROP TABLE teams", "CREATE VIEW teams AS SELECT * FROM cycles",
           f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    before = files(live)
    result = restore(runner, backup)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert f"cannot restore from {backup}: " in result.output
    assert files(live) == before


# --- people: roles, passwords, team members, users' keys ---------------------------------------------


PASSWORD_HASH = "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA"


def people_backup(tmp_path):
    """A backup of a database with an admin (with a password, and an invitation pending for another user),
    a viewer, a team of both, and a key of the viewer's."""
    source = create_app({"TESTING": True, "DATABASE": tmp_path / "source-people.db"})
    with source.app_context():
        init_db()
        with transaction() as db:
            admin = users.create(db, "Ada", "ada@example.com", "admin")
            viewer = users.create(db, "Vera", "vera@example.com", "viewer")
            users.set_password(db, admin, PASSWORD_HASH)
            invitations.create(db, viewer)
            team = teams.create(db, "Platform")
            team_members.add(db, team["id"], viewer["id"])
            team_members.add(db, team["id"], admin["id"])
            keys.create(db, "Vera's", False, viewer["id"])
    assert source.test_cli_runner().invoke(args=["backup", str(tmp_path / "people.db")]).exit_code == 0
    return tmp_path / "people.db"


PEOPLE = {
    "users": "SELECT id, role, password_hash FROM users ORDER BY seq",
    "team_members": "SELECT seq, team_id, user_id, joined_at FROM team_members ORDER BY seq",
    "api_keys": "SELECT credential, user_id FROM api_keys ORDER BY seq",
    "invitations": "SELECT * FROM invitations",
}


def test_roles_passwords_team_members_and_users_keys_are_restored(runner, live, tmp_path):
    backup = people_backup(tmp_path)
    result = restore(runner, backup)
    assert result.exit_code == 0, result.output
    with closing(sqlite3.connect(backup)) as source, closing(sqlite3.connect(live)) as restored:
        for name in ("users", "team_members", "api_keys"):
            rows = source.execute(PEOPLE[name]).fetchall()
            assert rows and restored.execute(PEOPLE[name]).fetchall() == rows, name
        assert source.execute(PEOPLE["invitations"]).fetchall()
        assert restored.execute(PEOPLE["invitations"]).fetchall() == []  # not restored, as sessions are not


def test_a_bad_team_member_row_is_refused_naming_it(runner, live, tmp_path):
    backup = people_backup(tmp_path)
    change(backup, "UPDATE team_members SET joined_at = 'soon' WHERE seq = 2")
    before = files(live)
    assert_refused(restore(runner, backup), backup, live, before,
                   "team_members[1]: joined_at: must be an RFC 3339 UTC time")
