"""The program's help, version and errors: what a newcomer sees first."""
import configparser
import os
import re
from importlib import metadata

import pytest

import helpers
import okr.__main__ as program
from okr import create_app
from okr.cli import COMMANDS

def help_text(capsys, *args):
    assert program.main(list(args)) in (0, None)
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


# --- okr --help ------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_is_one_screen_that_names_every_command(capsys, flag):
    text = help_text(capsys, flag)
    lines = text.splitlines()
    assert len(lines) <= 40 and max(map(len, lines)) <= 80, text
    commands = [line for line in lines if re.match(r"  [a-z]", line)]
    assert [line.split()[0] for line in commands] == ["serve", *(command.name for command in COMMANDS)]
    assert not any(line.endswith("...") for line in commands)  # no short help cut off


def test_help_names_each_sub_command_on_its_group_line(capsys):
    text = help_text(capsys, "--help")
    for group in (command for command in COMMANDS if hasattr(command, "commands")):
        # The group's line, and the lines that go on under its text when it is too long for one.
        [entry] = re.findall(rf"^  {group.name} .*(?:\n {{5,}}\S.*)*", text, re.MULTILINE)
        assert all(name in entry for name in group.commands), entry


def option_default(text, flag):
    [line] = [line for line in text.splitlines() if line.lstrip().startswith(flag + " ")]
    return re.search(r"default (\S+)", line).group(1)


def test_help_shows_the_real_defaults(capsys):
    text = help_text(capsys, "serve", "--help")
    config = create_app().config
    assert option_default(text, "--host") == config["HOST"] == "127.0.0.1"
    assert option_default(text, "--port") == str(config["PORT"]) == "8080"
    assert option_default(text, "--database") == "./" + config["DATABASE"] == "./okr.db"
    assert option_default(text, "--workers") == config["WORKERS"] == "auto"
    assert option_default(text, "--threads") == str(config["THREADS"]) == "8"
    assert option_default(text, "--cpu") == config["CPU"] == "auto"
    assert option_default(text, "--connection-limit") == str(config["CONNECTION_LIMIT"]) == "1000"
    assert option_default(text, "--channel-timeout") == str(config["CHANNEL_TIMEOUT"]) == "30"
    assert option_default(text, "--connections-per-address") == str(config["CONNECTIONS_PER_ADDRESS"]) == "64"
    assert option_default(text, "--event-retention-days") == str(config["EVENT_RETENTION_DAYS"]) == "400"
    assert option_default(text, "--replicate-max-lag") == str(config["REPLICATE_MAX_LAG"]) == "60"
    assert config["REPLICATE"] is None and "--replicate URL" in text and "--replicate-endpoint URL" in text
    assert "--no-access-log" in text and "OKR_ACCESS_LOG" in text
    assert "--allow-anonymous" in text and "--version" in text


def test_the_program_help_keeps_to_the_common_options_and_points_to_the_servers(capsys):
    text = help_text(capsys, "--help")
    assert "--database FILE" in text and "--port N" in text and "okr serve --help" in text
    assert "--threads" not in text and "--replicate" not in text


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_serve_help_is_a_screen_and_a_half_at_most(capsys, flag):
    lines = help_text(capsys, "serve", flag).splitlines()
    assert len(lines) <= 60 and max(map(len, lines)) <= 80


def test_help_is_not_the_module_docstring_and_click_help(capsys):
    text = help_text(capsys, "--help")
    assert text.count("Usage:") + text.count("usage:") == 1


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_serve_help_shows_the_serving_options(capsys, tmp_path, monkeypatch, flag):
    monkeypatch.chdir(tmp_path)  # a folder of its own: the one pytest runs in may hold a user's ./okr.db
    text = help_text(capsys, "serve", flag)
    assert text.startswith("usage: okr [serve]")
    assert option_default(text, "--port") == "8080" and "--no-access-log" in text
    assert not os.path.exists("okr.db") and os.listdir(tmp_path) == []  # help touches no database


@pytest.mark.parametrize("flag", ["--help", "-h"])
@pytest.mark.parametrize("command", [["users"], ["users", "add"], ["users", "update"], ["users", "set-role"],
                                     ["users", "invite"], ["users", "set-password"], ["users", "unlock"],
                                     ["users", "unlink"],
                                     ["keys", "list"],
                                     ["backup"], ["restore"], ["init-db"], ["auth-header"]])
def test_every_command_has_help(capsys, tmp_path, monkeypatch, command, flag):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as ended:  # as click ends on --help; the process's status: the test below
        program.main([*command, flag])
    assert ended.value.code in (0, None)
    captured = capsys.readouterr()
    assert captured.err == ""
    text = captured.out
    assert text.startswith(f"Usage: okr {' '.join(command)}")
    assert "see okr --help" in text  # where --database and the other global options are
    assert list(tmp_path.iterdir()) == []  # help touches no database


@pytest.mark.parametrize("command", [["users", "add"], ["keys", "list"], ["backup"]])
@pytest.mark.slow
def test_each_command_group_has_help_through_the_program(tmp_path, command):
    result = helpers.run_okr(*command, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Usage: okr {' '.join(command)}")
    assert "see okr --help" in result.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_help_through_the_program(tmp_path):
    result = helpers.run_okr("--help", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("usage: okr") and "  serve " in result.stdout
    assert list(tmp_path.iterdir()) == []


# --- okr --version ---------------------------------------------------------------------------


def checkout_version():
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(helpers.REPO / "setup.cfg")
    return parser["metadata"]["version"]


@pytest.mark.slow
def test_version_is_the_installed_packages(tmp_path):
    result = helpers.run_okr("--version", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"okr {metadata.version('okr-service')}\n"


def test_version_of_a_checkout_that_is_not_installed(capsys, monkeypatch):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(program.metadata, "version", not_installed)
    assert help_text(capsys, "--version") == f"okr {checkout_version()}\n"


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["no-such-command"], "okr: no such command 'no-such-command' (see okr --help)"),
    (["users", "add", "--name", "Ada"], "okr: missing option '--email' (see okr users add --help)"),
    (["users", "ad"], "okr: no such command 'ad'. Did you mean 'add'? (see okr users --help)"),
    (["--port"], "okr: argument --port: expected one argument (see okr --help)"),
    (["keys", "revoke", "nope"], "okr: no database at ./okr.db; run okr init-db or pass --database"),
])
@pytest.mark.slow
def test_errors_are_one_line_that_starts_with_okr(tmp_path, args, message):
    result = helpers.run_okr(*args, cwd=tmp_path)
    assert result.returncode != 0
    assert result.stderr.splitlines() == [message]
    assert result.stdout == ""


@pytest.mark.slow
def test_a_command_error_is_one_line(tmp_path):
    assert helpers.run_okr("init-db", cwd=tmp_path).returncode == 0
    result = helpers.run_okr("users", "add", "--name", "Ada", "--email", "not-an-email", cwd=tmp_path)
    assert result.returncode == 1
    [*_, last] = result.stderr.splitlines()
    assert last.startswith("okr: email: ") and "Error" not in result.stderr
