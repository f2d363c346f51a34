"""Which database a command uses: it is named on stderr, and only init-db, serve and restore create one."""
import json

import pytest

from helpers import make_user, run_okr

NEEDS_A_DATABASE = [
    ["users", "add", "--name", "Ada", "--email", "ada@example.com"],
    ["users", "list"],
    ["users", "list", "--json"],
    ["users", "update", "ada@example.com", "--name", "Ada L"],
    ["users", "deactivate", "ada@example.com"],
    ["users", "activate", "ada@example.com"],
    ["users", "import", "users.csv"],
    ["users", "set-role", "ada@example.com", "viewer"],
    ["users", "invite", "ada@example.com"],
    ["users", "set-password", "ada@example.com"],
    ["keys", "create", "--name", "k"],
    ["keys", "create", "--name", "k", "--user", "ada@example.com"],
    ["keys", "list"],
    ["keys", "revoke", "abc"],
    ["backup", "copy.db"],
]


@pytest.mark.slow
@pytest.mark.parametrize("command", NEEDS_A_DATABASE, ids=" ".join)
def test_a_command_on_a_missing_database_says_so_and_creates_nothing(tmp_path, command):
    (tmp_path / "users.csv").write_text("name,email\nAda,ada@example.com\n")
    result = run_okr(*command, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == "okr: no database at ./okr.db; run okr init-db or pass --database\n"
    assert result.stdout == ""
    assert sorted(path.name for path in tmp_path.iterdir()) == ["users.csv"]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["flag", "env"])
def test_the_missing_database_is_named_as_configured(tmp_path, how):
    (tmp_path / "data").mkdir()
    args, env = (["--database", "data/team.db"], None) if how == "flag" else ([], {"OKR_DATABASE": "data/team.db"})
    result = run_okr(*args, "keys", "list", cwd=tmp_path, env=env)
    assert result.returncode == 1
    assert result.stderr == "okr: no database at data/team.db; run okr init-db or pass --database\n"
    assert list((tmp_path / "data").iterdir()) == []


@pytest.mark.slow
def test_init_db_creates_the_database_and_names_it(tmp_path):
    result = run_okr("init-db", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"okr: using database {tmp_path / 'okr.db'}\n"
    assert (tmp_path / "okr.db").is_file()


@pytest.mark.parametrize("command, parse", [
    (["users", "add", "--name", "Ada", "--email", "ada@example.com"], json.loads),
    (["users", "list", "--json"], str),
    (["keys", "create", "--name", "k", "--json"], json.loads),
    (["keys", "list", "--json"], str),
    (["backup", "copy.db"], json.loads),
    (["restore", "okr.db"], json.loads),  # the target named, not the backup
], ids=lambda value: " ".join(value) if isinstance(value, list) else "")
@pytest.mark.slow
def test_each_command_names_its_database_on_stderr_and_keeps_stdout_clean(tmp_path, command, parse):
    (tmp_path / "data").mkdir()
    assert run_okr("init-db", cwd=tmp_path).returncode == 0  # ./okr.db, a backup for restore
    result = run_okr("--database", "data/live.db", "init-db", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    result = run_okr(*command, "--database", "data/live.db", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"okr: using database {tmp_path / 'data' / 'live.db'}\n"
    parse(result.stdout)


@pytest.mark.slow
def test_restore_may_create_its_target(tmp_path):
    assert run_okr("init-db", cwd=tmp_path).returncode == 0
    result = run_okr("--database", "new.db", "restore", "okr.db", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "new.db").is_file()


@pytest.mark.slow
def test_auth_header_needs_no_database(tmp_path):
    result = run_okr("auth-header", "--credential", "c", "--secret", "s", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Authorization: S1-HMAC-SHA256 ") and result.stderr == ""
    assert list(tmp_path.iterdir()) == []


# --- keys list and users list with nothing to list ----------------------------------------------


def test_keys_list_without_keys_says_how_to_create_one(runner):
    result = runner.invoke(args=["keys", "list"])
    assert result.exit_code == 0, result.output
    assert result.output == "no API keys yet; create one with okr keys create --name NAME\n"


def test_keys_list_json_without_keys_prints_nothing(runner):
    # One JSON object per key and line: no keys, no lines.
    result = runner.invoke(args=["keys", "list", "--json"])
    assert (result.exit_code, result.output) == (0, "")


def test_users_list_without_users_says_how_to_add_one(runner):
    result = runner.invoke(args=["users", "list"])
    assert result.exit_code == 0, result.output
    assert result.output == "no users yet; add one with okr users add --name NAME --email EMAIL\n"
    assert runner.invoke(args=["users", "list", "--json"]).output == ""
    make_user(runner)
    assert "no users yet" not in runner.invoke(args=["users", "list"]).output
