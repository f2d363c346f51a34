"""The command line: admin commands and the global options of app.py."""
import json
import os
import sqlite3
import stat

import pytest

import helpers

import okr.__main__ as cli
from helpers import TIMESTAMP, USER_FIELDS, UUID4, make_user, write_csv
from okr import create_app


def users_in(path):
    if not os.path.exists(path):
        return []
    with sqlite3.connect(path) as db:
        return db.execute("SELECT name, email, is_active FROM users ORDER BY seq").fetchall()


def stored(app):
    return users_in(app.config["DATABASE"])


def add(runner, name, email):
    return runner.invoke(args=["users", "add", "--name", name, "--email", email])


# --- init-db -----------------------------------------------------------------


def test_init_db_runs_twice(app, runner):
    make_user(runner)
    for _ in range(2):
        result = runner.invoke(args=["init-db"])
        assert result.exit_code == 0, result.output
    assert len(stored(app)) == 1


# --- users add ---------------------------------------------------------------


def test_users_add_prints_the_user_as_json(app, runner):
    result = add(runner, "Ada Lovelace", "ada@example.com")
    assert result.exit_code == 0, result.output
    user = json.loads(result.output)
    assert set(user) == USER_FIELDS
    assert UUID4.fullmatch(user["id"])
    assert TIMESTAMP.fullmatch(user["created_at"])
    assert (user["name"], user["email"], user["is_active"]) == ("Ada Lovelace", "ada@example.com", True)
    assert stored(app) == [("Ada Lovelace", "ada@example.com", 1)]


def test_added_user_is_served_over_http(runner, client):
    user = make_user(runner)
    assert client.get(f"/v1/users/{user['id']}").get_json() == user


def test_users_add_keeps_unicode_name(app, runner):
    user = make_user(runner, name="Zoë Ñúñez 李小龙", email="zoe@example.com")
    assert user["name"] == "Zoë Ñúñez 李小龙"
    assert stored(app)[0][0] == "Zoë Ñúñez 李小龙"


@pytest.mark.parametrize("email", ["not-an-email", "", "a@", "@example.com", "a b@example.com"])
def test_users_add_rejects_invalid_email(app, runner, email):
    result = add(runner, "Ada", email)
    assert result.exit_code != 0
    assert "email" in result.output
    assert stored(app) == []


@pytest.mark.parametrize("name", ["", "   ", "\t"])
def test_users_add_rejects_blank_name(app, runner, name):
    result = add(runner, name, "ada@example.com")
    assert result.exit_code != 0
    assert "name" in result.output
    assert stored(app) == []


def test_users_add_rejects_duplicate_email_ignoring_case(app, runner):
    make_user(runner, email="ada@example.com")
    result = add(runner, "Other Ada", "ADA@Example.COM")
    assert result.exit_code != 0
    assert "already exists" in result.output
    assert len(stored(app)) == 1


def test_users_add_requires_name_and_email(app, runner):
    assert runner.invoke(args=["users", "add", "--name", "Ada"]).exit_code != 0
    assert runner.invoke(args=["users", "add", "--email", "ada@example.com"]).exit_code != 0
    assert stored(app) == []


# --- activate / deactivate ---------------------------------------------------


def test_deactivate_and_activate_flip_is_active(runner, client):
    user = make_user(runner)
    result = runner.invoke(args=["users", "deactivate", "ada@example.com"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["is_active"] is False
    assert client.get(f"/v1/users/{user['id']}").get_json()["is_active"] is False

    result = runner.invoke(args=["users", "activate", "ada@example.com"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["is_active"] is True
    assert client.get(f"/v1/users/{user['id']}").get_json()["is_active"] is True


def test_deactivate_matches_email_ignoring_case(app, runner):
    make_user(runner, email="ada@example.com")
    assert runner.invoke(args=["users", "deactivate", "ADA@EXAMPLE.COM"]).exit_code == 0
    assert stored(app)[0][2] == 0


@pytest.mark.parametrize("command", ["deactivate", "activate"])
def test_unknown_email_fails(app, runner, command):
    make_user(runner)
    result = runner.invoke(args=["users", command, "nobody@example.com"])
    assert result.exit_code != 0
    assert "nobody@example.com" in result.output
    assert stored(app)[0][2] == 1


# --- users import ------------------------------------------------------------


def import_csv(runner, path):
    return runner.invoke(args=["users", "import", path])


def test_import_with_header(app, runner, tmp_path):
    path = write_csv(tmp_path, "name,email\nAda,ada@example.com\nGrace,grace@example.com\n")
    result = import_csv(runner, path)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"imported": 2, "skipped_existing": 0}
    assert stored(app) == [("Ada", "ada@example.com", 1), ("Grace", "grace@example.com", 1)]


def test_import_without_header(app, runner, tmp_path):
    path = write_csv(tmp_path, "Ada,ada@example.com\nGrace,grace@example.com\n")
    result = import_csv(runner, path)
    assert result.exit_code == 0, result.output
    assert [row[1] for row in stored(app)] == ["ada@example.com", "grace@example.com"]


def test_import_skips_blank_lines(app, runner, tmp_path):
    path = write_csv(tmp_path, "name,email\n\nAda,ada@example.com\n\n\nGrace,grace@example.com\n\n")
    result = import_csv(runner, path)
    assert result.exit_code == 0, result.output
    assert len(stored(app)) == 2


@pytest.mark.parametrize("text, bad_row", [
    ("name,email\nAda,ada@example.com\nGrace,not-an-email\nAlan,alan@example.com\n", "row 3"),
    ("Ada,ada@example.com\nGrace\n", "row 2"),  # wrong column count
])
def test_import_with_one_bad_row_imports_nothing_and_names_the_row(app, runner, tmp_path, text, bad_row):
    result = import_csv(runner, write_csv(tmp_path, text))
    assert result.exit_code != 0
    assert bad_row in result.output
    assert stored(app) == []


def test_import_with_email_twice_in_file_imports_nothing(app, runner, tmp_path):
    path = write_csv(tmp_path, "Ada,ada@example.com\nAda Again,ADA@example.com\n")
    assert import_csv(runner, path).exit_code != 0
    assert stored(app) == []


def test_import_skips_and_counts_existing_emails(app, runner, tmp_path):
    make_user(runner, name="Ada", email="ada@example.com")
    path = write_csv(tmp_path, "name,email\nAda L,ADA@example.com\nGrace,grace@example.com\n")
    result = import_csv(runner, path)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"imported": 1, "skipped_existing": 1}
    assert stored(app) == [("Ada", "ada@example.com", 1), ("Grace", "grace@example.com", 1)]


def test_import_keeps_unicode_names(app, runner, tmp_path):
    path = write_csv(tmp_path, "name,email\nZoë Ñúñez,zoe@example.com\n李小龙,li@example.com\n")
    result = import_csv(runner, path)
    assert result.exit_code == 0, result.output
    assert [row[0] for row in stored(app)] == ["Zoë Ñúñez", "李小龙"]


def test_import_accepts_utf8_bom_and_quoted_fields(app, runner, tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes('\ufeffname,email\n"Lovelace, Ada",ada@example.com\n'.encode("utf-8"))
    result = import_csv(runner, str(path))
    assert result.exit_code == 0, result.output
    assert stored(app) == [("Lovelace, Ada", "ada@example.com", 1)]


def test_import_of_missing_file_fails(app, runner, tmp_path):
    assert import_csv(runner, str(tmp_path / "missing.csv")).exit_code != 0


# --- global options ----------------------------------------------------------


def test_parse_options_before_the_command():
    overrides, rest = cli.parse_options(
        ["--host", "0.0.0.0", "--port", "9000", "--database", "x.db", "--threads", "8", "serve"]
    )
    assert overrides == {"HOST": "0.0.0.0", "PORT": "9000", "DATABASE": "x.db", "THREADS": "8"}
    assert rest == ["serve"]


def test_parse_options_after_the_command_leaves_command_args():
    overrides, rest = cli.parse_options(
        ["users", "add", "--name", "Ada", "--database", "x.db", "--email", "ada@example.com"]
    )
    assert overrides == {"DATABASE": "x.db"}
    assert rest == ["users", "add", "--name", "Ada", "--email", "ada@example.com"]


def test_parse_options_accepts_equals_form_and_mixed_positions():
    overrides, rest = cli.parse_options(["--port=9001", "users", "import", "f.csv", "--database=y.db"])
    assert overrides == {"PORT": "9001", "DATABASE": "y.db"}
    assert rest == ["users", "import", "f.csv"]


def test_parse_options_with_no_arguments():
    assert cli.parse_options([]) == ({}, [])


def test_defaults_without_flags_or_env():
    app = create_app(cli.parse_options([])[0])
    assert app.config["HOST"] == "127.0.0.1"
    assert str(app.config["PORT"]) == "8080"
    assert os.path.basename(app.config["DATABASE"]) == "okr.db"
    assert str(app.config["THREADS"]) == "8"


def test_env_overrides_defaults(monkeypatch):
    monkeypatch.setenv("OKR_HOST", "0.0.0.0")
    monkeypatch.setenv("OKR_PORT", "9100")
    monkeypatch.setenv("OKR_DATABASE", "env.db")
    monkeypatch.setenv("OKR_THREADS", "16")
    app = create_app(cli.parse_options(["serve"])[0])
    assert app.config["HOST"] == "0.0.0.0"
    assert str(app.config["PORT"]) == "9100"
    assert app.config["DATABASE"] == "env.db"
    assert str(app.config["THREADS"]) == "16"


def test_flags_override_env(monkeypatch):
    monkeypatch.setenv("OKR_HOST", "0.0.0.0")
    monkeypatch.setenv("OKR_PORT", "9100")
    monkeypatch.setenv("OKR_DATABASE", "env.db")
    monkeypatch.setenv("OKR_THREADS", "16")
    overrides, _ = cli.parse_options(
        ["serve", "--host", "127.0.0.2", "--port", "9200", "--database", "flag.db", "--threads", "2"]
    )
    app = create_app(overrides)
    assert app.config["HOST"] == "127.0.0.2"
    assert str(app.config["PORT"]) == "9200"
    assert app.config["DATABASE"] == "flag.db"
    assert str(app.config["THREADS"]) == "2"


def init_db_in_process(database):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["init-db", "--database", str(database)])
    assert exit_info.value.code == 0


def test_main_honours_database_flag_after_the_command(tmp_path, capsys):
    database = tmp_path / "flag.db"
    init_db_in_process(database)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["users", "add", "--name", "Ada", "--email", "ada@example.com", "--database", str(database)])
    assert exit_info.value.code in (0, None)
    assert json.loads(capsys.readouterr().out)["email"] == "ada@example.com"
    assert users_in(database) == [("Ada", "ada@example.com", 1)]


def test_main_flag_beats_env_database(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OKR_DATABASE", str(tmp_path / "env.db"))
    init_db_in_process(tmp_path / "flag.db")
    with pytest.raises(SystemExit):
        cli.main(["--database", str(tmp_path / "flag.db"), "users", "add", "--name", "A", "--email", "a@x.io"])
    assert len(users_in(tmp_path / "flag.db")) == 1
    assert users_in(tmp_path / "env.db") == []


# --- app.py as a process -----------------------------------------------------


def init_db_process(database, cwd, env=None):
    result = helpers.run_okr("init-db", *([] if database is None else ["--database", database]), cwd=cwd, env=env)
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_process_database_flag_adds_the_user_there(tmp_path):
    database = tmp_path / "chosen.db"
    init_db_process(database, tmp_path)
    result = helpers.run_okr("--database", database, "users", "add", "--name", "Ada", "--email", "ada@example.com",
                             cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["is_active"] is True
    assert users_in(database) == [("Ada", "ada@example.com", 1)]
    assert not (tmp_path / "okr.db").exists()


@pytest.mark.slow
def test_process_database_flag_after_command(tmp_path):
    database = tmp_path / "after.db"
    init_db_process(database, tmp_path)
    result = helpers.run_okr("users", "add", "--name", "Ada", "--email", "ada@example.com", "--database", database,
                             cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(users_in(database)) == 1


@pytest.mark.slow
def test_process_honours_okr_database_env(tmp_path):
    database = tmp_path / "from-env.db"
    init_db_process(None, tmp_path, env={"OKR_DATABASE": str(database)})
    result = helpers.run_okr("users", "add", "--name", "Grace", "--email", "grace@example.com", cwd=tmp_path,
                             env={"OKR_DATABASE": str(database)})
    assert result.returncode == 0, result.stderr
    assert users_in(database) == [("Grace", "grace@example.com", 1)]
    assert not (tmp_path / "okr.db").exists()


@pytest.mark.slow
def test_process_init_db_creates_private_file(tmp_path):
    database = tmp_path / "new.db"
    for _ in range(2):
        result = helpers.run_okr("init-db", "--database", database, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(os.stat(database).st_mode) == 0o600


@pytest.mark.slow
def test_process_bad_command_exits_non_zero(tmp_path):
    result = helpers.run_okr("no-such-command", cwd=tmp_path)
    assert result.returncode != 0
    assert "no-such-command" in result.stderr


@pytest.mark.parametrize(
    "args, env, word",
    [
        (["--port", "notanumber"], {}, "port"),
        (["serve", "--port", "70000"], {}, "port"),
        (["--port", "-1"], {}, "port"),
        (["--threads", "0"], {}, "threads"),
        ([], {"OKR_PORT": "http"}, "port"),
    ],
)
@pytest.mark.slow
def test_process_bad_port_or_threads_exits_with_message(tmp_path, args, env, word):
    # A bad value must stop the process before it listens; the timeout catches a server left running.
    result = helpers.run_okr("--database", tmp_path / "x.db", *args, cwd=tmp_path, env=env, timeout=20)
    assert result.returncode != 0
    assert word in result.stderr.lower()


# --- regressions found in review: clean messages, never tracebacks --------------------


def assert_clean_failure(result, text):
    assert result.exit_code == 1, result.output
    assert text in result.output
    assert "Traceback" not in result.output


def test_import_of_a_file_that_is_not_utf8_fails_cleanly(runner, tmp_path):
    bad = tmp_path / "latin1.csv"
    bad.write_bytes("name,email\nJos\xe9,jose@example.com\n".encode("latin-1"))
    assert_clean_failure(runner.invoke(args=["users", "import", str(bad)]), "utf-8")


def test_import_of_an_oversized_field_fails_cleanly(runner, tmp_path):
    huge = tmp_path / "huge.csv"
    huge.write_text('name,email\n"' + "x" * 200_000 + '",a@example.com\n')
    assert_clean_failure(runner.invoke(args=["users", "import", str(huge)]), "field larger")


def hidden_files(folder):
    return [path.name for path in folder.iterdir() if path.name.startswith(".")]


def test_backup_into_a_missing_folder_says_so(runner, tmp_path):
    target = tmp_path / "nowhere" / "b.db"
    result = runner.invoke(args=["backup", str(target)])
    assert_clean_failure(result, f"cannot back up to {target}: the folder {target.parent} does not exist")
    assert not target.parent.exists()  # refused, not created: a mistyped path stays visible


def test_backup_beside_a_file_names_no_temporary_file(runner, tmp_path):
    (tmp_path / "plain").write_text("not a folder")
    target = tmp_path / "plain" / "b.db"
    result = runner.invoke(args=["backup", str(target)])
    assert_clean_failure(result, f"cannot back up to {target}: {target.parent} is not a folder")
    assert ".okr-backup-" not in result.output


def test_a_failed_backup_leaves_no_temporary_file(tmp_path):
    database, folder = tmp_path / "not.db", tmp_path / "backups"
    database.write_text("not a database" * 100)
    folder.mkdir()
    runner = create_app({"TESTING": True, "DATABASE": database}).test_cli_runner()
    result = runner.invoke(args=["backup", str(folder / "b.db")])
    assert_clean_failure(result, "not a database")
    assert ".okr-backup-" not in result.output
    assert list(folder.iterdir()) == [] and hidden_files(tmp_path) == []


@pytest.mark.parametrize("make_database", [
    lambda tmp: tmp,  # a folder
    lambda tmp: (tmp / "not.db").write_text("not a database" * 100) and tmp / "not.db",
    lambda tmp: tmp / "missing" / "okr.db",
])
@pytest.mark.parametrize("command", [["users", "add", "--name", "A", "--email", "a@example.com"],
                                     ["keys", "list"], ["init-db"], ["serve"]])
@pytest.mark.slow
def test_an_unusable_database_fails_with_a_message(tmp_path, make_database, command):
    database = make_database(tmp_path)
    result = helpers.run_okr("--database", database, "--port", "0", *command, cwd=tmp_path, timeout=20)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    assert str(database) in result.stderr or "database" in result.stderr


def test_too_old_sqlite_is_named(app, monkeypatch):
    import okr.db
    import okr.store.schema
    monkeypatch.setattr(okr.store.schema.sqlite3, "sqlite_version_info", (3, 31, 1))
    with app.app_context(), pytest.raises(RuntimeError, match="SQLite 3.35"):
        okr.db.init_db()
