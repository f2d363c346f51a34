"""The settings' one table (okr/settings.py): every setting has a variable, the environment is read and parsed
from it, the flags and their help come from it, and the documentation's table of settings agrees with it."""
import argparse
import re

import pytest

import helpers
import okr.__main__ as program
from okr import create_app, settings
from okr.outbound import smtp, webhook_request
from okr.server import litestream as replication
from okr.cli import COMMANDS
from okr.settings import SETTINGS, FernetKey

pytestmark = pytest.mark.usefixtures("clean_env")

OPERATIONS = helpers.REPO / "docs" / "operations.md"


def setting_ids(setting):
    return setting.name


# --- the table -----------------------------------------------------------------------------------------------


def test_every_setting_has_its_own_variable_named_after_it():
    assert all(setting.env == "OKR_" + setting.name for setting in SETTINGS)
    assert len({setting.name for setting in SETTINGS}) == len(SETTINGS)


def test_no_two_settings_share_a_flag_and_every_setting_has_help():
    options = [option for setting in SETTINGS for option, _ in setting.flags()]
    assert len(options) == len(set(options))
    assert all(setting.help and "\n" not in setting.help for setting in SETTINGS)


@pytest.mark.parametrize("setting", [setting for setting in SETTINGS if setting.shown_default() is not None
                                     and not isinstance(setting.type, settings.Path)], ids=setting_ids)
def test_each_default_as_written_reads_back_as_itself(setting):
    assert setting.parse(setting.shown_default()) == setting.default


def test_the_app_starts_from_the_tables_defaults():
    config = create_app().config
    assert {setting.name: config[setting.name] for setting in SETTINGS} == settings.defaults()


def test_the_constants_that_are_settings_are_the_tables_defaults():
    # Wired: the retry schedule, the replica's lag and the mail timeout take their defaults from the table.
    assert webhook_request.RETRY_SCHEDULE == settings.default("WEBHOOK_RETRY_SCHEDULE")
    assert replication.DEFAULT_MAX_LAG == settings.default("REPLICATE_MAX_LAG")
    assert smtp.DEFAULT_TIMEOUT == settings.default("SMTP_TIMEOUT")


# --- the environment -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, text, value", [
    ("THREADS", "16", 16),
    ("PORT", " 0 ", 0),
    ("WORKERS", "auto", "auto"),
    ("WORKERS", "3", 3),
    ("REPORT_WAIT", "0.5", 0.5),
    ("SMTP_TIMEOUT", "7", 7.0),
    ("ACCESS_LOG", "off", False),
    ("SECURE_COOKIES", "Yes", True),
    ("ALLOW_ANONYMOUS", "1", True),
    ("ALLOWED_HOSTS", "a.example, B.example.,", frozenset({"a.example", "b.example"})),
    ("WEBHOOK_RETRY_SCHEDULE", "1, 2.5,60", (1, 2.5, 60)),
    ("DATABASE", "/srv/okr/okr.db", "/srv/okr/okr.db"),
    ("WEEKLY_MAIL", "friday 16:00", "friday 16:00"),
    ("BUSY_TIMEOUT_MS", "250", 250),
    ("UPGRADE_BACKUP", "0", False),
])
def test_the_environment_is_read_into_typed_values(monkeypatch, name, text, value):
    monkeypatch.setenv("OKR_" + name, text)
    assert settings.from_environment() == {name: value}
    assert create_app().config[name] == value


def test_a_list_takes_its_entries_separated_by_commas(monkeypatch):
    monkeypatch.setenv("OKR_OIDC_ALLOWED_DOMAINS", "example.com,,example.org")
    monkeypatch.setenv("OKR_TRUSTED_PROXIES", "10.0.0.0/8, ::1")
    assert settings.from_environment() == {"OIDC_ALLOWED_DOMAINS": ("example.com", "example.org"),
                                           "TRUSTED_PROXIES": ("10.0.0.0/8", " ::1")}


def test_a_variable_set_to_nothing_is_not_set(monkeypatch):
    monkeypatch.setenv("OKR_THREADS", "")
    assert settings.from_environment() == {}
    assert create_app().config["THREADS"] == 8


def test_a_variable_a_flag_overrides_is_not_read(monkeypatch):
    monkeypatch.setenv("OKR_THREADS", "many")
    overrides, _ = program.parse_options(["--threads", "4"])
    assert create_app(overrides).config["THREADS"] == 4


def test_values_given_to_create_app_are_parsed_too():
    config = create_app({"THREADS": "4", "ACCESS_LOG": "off", "REPORT_WAIT": 1, "ALLOWED_HOSTS": ["A.example."],
                         "DATABASE": helpers.REPO / "nowhere.db"}).config
    assert (config["THREADS"], config["ACCESS_LOG"], config["REPORT_WAIT"]) == (4, False, 1)
    assert config["ALLOWED_HOSTS"] == {"a.example"} and config["DATABASE"] == str(helpers.REPO / "nowhere.db")


BAD = "nonsense"


def refuses(setting, value):
    try:
        setting.parse(value)
    except ValueError:
        return True
    return False


@pytest.mark.parametrize("setting", [setting for setting in SETTINGS if refuses(setting, BAD)], ids=setting_ids)
def test_a_bad_variable_stops_okr_with_one_line_that_names_it(setting, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(setting.env, BAD)
    with pytest.raises(SystemExit) as stopped:
        program.main(["--database", str(tmp_path / "okr.db"), "keys", "list"])
    message = stopped.value.code
    assert isinstance(message, str) and "\n" not in message, message
    if isinstance(setting.type, FernetKey):  # a key, even a mistyped one, is never printed
        assert message.startswith(f"okr: {setting.label} must be ") and BAD not in message, message
    else:
        assert message.startswith(f"okr: {setting.label} must be ") and message.endswith(f"not '{BAD}'"), message
    assert capsys.readouterr() == ("", "") and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, text, message", [
    ("THREADS", "0", "threads must be an integer from 1 to 256, not '0'"),
    ("PORT", "65536", "port must be an integer from 0 to 65535, not '65536'"),
    ("HEAD_TIMEOUT", "-1", "OKR_HEAD_TIMEOUT must be an integer from 1 to 86400, not '-1'"),
    ("BIG_REPORT_OBJECTIVES", "1.5", "OKR_BIG_REPORT_OBJECTIVES must be an integer of 0 or more, not '1.5'"),
    ("REPORT_WAIT", "nan", "OKR_REPORT_WAIT must be a number of seconds from 0 to 3600, not 'nan'"),
    ("SMTP_TIMEOUT", "soon", "OKR_SMTP_TIMEOUT must be a number of seconds from 0.1 to 3600, not 'soon'"),
    ("WEBHOOK_RETRY_SCHEDULE", "5,,60", "OKR_WEBHOOK_RETRY_SCHEDULE must be numbers of seconds from 0 to 86400 "
                                        "separated by commas, such as 5,300,1800, not '5,,60'"),
    ("ALLOW_ANONYMOUS", "maybe", "allow_anonymous must be on or off (1 or 0), not 'maybe'"),
    ("PASSWORD_SIGN_IN", "maybe", "OKR_PASSWORD_SIGN_IN must be on or off (1 or 0), not 'maybe'"),
    ("REPLICATE_MAX_LAG", "0", "replicate-max-lag must be a number of seconds from 1 to 86400, not '0'"),
])
def test_what_a_bad_value_is_told(monkeypatch, name, text, message):
    monkeypatch.setenv("OKR_" + name, text)
    with pytest.raises(ValueError) as refused:
        create_app()
    assert str(refused.value) == message


# --- the flags and the help ------------------------------------------------------------------------------------


def test_each_flag_sets_its_setting():
    parser = argparse.ArgumentParser()
    settings.add_flags(parser)
    for setting in SETTINGS:
        for option, const in setting.flags():
            args = [option] if const is not None else [option, "1"]
            value = vars(parser.parse_args(args))[setting.name.lower()]
            assert value == (const if const is not None else ["1"] if isinstance(setting.type, settings.Entries)
                             else "1"), option


def test_serve_help_lists_every_flag_with_its_variable(capsys):
    assert program.main(["serve", "--help"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    for setting in SETTINGS:
        for option, _ in setting.flags():
            [line] = [line for line in lines if line.startswith(f"  {option} ")]
            assert setting.env in line, line
    assert "docs/operations.md" in text


def test_the_program_help_lists_the_global_flags(capsys):
    assert program.main(["--help"]) == 0
    text = capsys.readouterr().out
    for setting in SETTINGS:
        for option, _ in setting.flags():
            assert (f"  {option} " in text) == (setting.group == settings.GLOBAL), option


# --- the documentation -----------------------------------------------------------------------------------------


def documented_settings():
    """{variable: (flag cell, default cell)} of docs/operations.md's table of settings."""
    text = OPERATIONS.read_text()
    section = text[text.index("\n## Configuration\n"):]
    table = section[section.index("\n| Flag |"):]
    table = table[:table.index("\n\n")]
    rows = {}
    for line in table.strip().splitlines()[2:]:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        flag, variable, default = cells[:3]
        [name] = re.fullmatch(r"`(OKR_[A-Z_]+)`", variable).groups()
        assert name not in rows, f"{name} is in the table twice"
        rows[name] = (flag, default)
    return rows


def test_the_documentation_has_a_row_for_every_setting_and_no_other():
    documented = documented_settings()
    assert sorted(documented) == sorted(setting.env for setting in SETTINGS)


@pytest.mark.parametrize("setting", SETTINGS, ids=setting_ids)
def test_each_row_of_the_documentation_names_the_flags_and_the_default(setting):
    flag, default = documented_settings()[setting.env]
    options = re.findall(r"`(--[a-z-]+)", flag)
    assert options == [option for option, _ in sorted(setting.flags(), key=lambda flag: flag[1] == setting.default)]
    shown = setting.shown_default()
    assert default == ("none" if shown is None else f"`{shown}`")


def command_variables():
    """The OKR_* variables the commands' own options read (okr auth-header's OKR_CREDENTIAL...)."""
    found = set()

    def walk(command):
        for param in command.params:
            found.update([param.envvar] if isinstance(param.envvar, str) else param.envvar or ())
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    for command in COMMANDS:
        walk(command)
    return found


def test_the_documentation_names_no_variable_the_table_does_not_know():
    named = set(re.findall(r"\bOKR_[A-Z][A-Z_]*[A-Z]\b", OPERATIONS.read_text()))
    assert named - {setting.env for setting in SETTINGS} - command_variables() == set()


# --- the figures the prose gives ------------------------------------------------------------------------------

DOCUMENTS = [helpers.REPO / "README.md", *sorted((helpers.REPO / "docs").glob("*.md"))]
FIGURE = r"(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"


def figures_given(text, setting):
    """(figure, words) of each limit the prose (code blocks left out) gives for setting, in the forms it is
    written in: "64 from one address (`--connections-per-address`", "`OKR_REPORT_WAIT` seconds (default `10`",
    "`--event-retention-days` (default 400"."""
    names = "|".join(re.escape(name) for name in [setting.env] + [option for option, _ in setting.flags()])
    prose = " ".join(re.sub(r"```.*?```", " ", text, flags=re.S).split())
    forms = [rf"{FIGURE}[^.;()`\d]{{0,60}}\(`(?:{names})\b",
             rf"`(?:{names})\b[^`]*`[^.;`\d]{{0,30}}\(default `?{FIGURE}"]
    return [(match.group(1), match.group(0)) for form in forms for match in re.finditer(form, prose)]


def numeric(setting):
    return isinstance(setting.default, (int, float)) and not isinstance(setting.default, bool)


def test_every_figure_the_docs_give_for_a_setting_is_its_default():
    given = [(setting.name, figure, words) for path in DOCUMENTS for setting in SETTINGS if numeric(setting)
             for figure, words in figures_given(path.read_text(), setting)]
    assert len(given) >= 10  # the forms still match how the docs are written
    assert [(name, figure, words) for name, figure, words in given
            if float(figure.replace(",", "")) != float(settings.default(name))] == []


def test_a_figure_that_is_not_the_default_is_found():
    connections = settings.BY_NAME["CONNECTIONS_PER_ADDRESS"]
    text = "At most 32 from one address (`--connections-per-address`; one IPv6 client counts by its /64)."
    assert figures_given(text, connections) == [("32", "32 from one address (`--connections-per-address")]
    waiting = settings.BY_NAME["REPORT_WAIT"]
    assert figures_given("waits up to `OKR_REPORT_WAIT` seconds (default `20`), then", waiting)[0][0] == "20"
    assert figures_given("```\nokr serve --connections-per-address 8\n```", connections) == []
