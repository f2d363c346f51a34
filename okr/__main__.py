"""The okr program: serves the OKR API (the default), or runs one of its admin commands.

`okr`, `python -m okr` and `python app.py` all run main(); `okr --help` says how.
"""
import argparse
import configparser
import logging
import os
import sys
import textwrap
from contextlib import contextmanager
from importlib import metadata

import click
from flask.cli import ScriptInfo

from okr import create_app, settings
from okr.cli import COMMANDS
from okr.cli.demo import DEMO_DATABASE, SERVE
from okr.cli.serve import run_server

HELP_FLAGS = ("-h", "--help")
# The columns of an option's line in the help: the flag, the variable, then the default and what it does.
FLAG_WIDTH = VARIABLE_WIDTH = 20
CONTINUED = " " * 24


def padded(text, width):
    return f"{text:{width}}  " if len(text) <= width else f"{text}  "


def option_lines(setting):
    """A setting's lines in the help: one per flag; the first says the default and what it does."""
    if isinstance(setting.type, settings.OnOff):
        # The flag that changes the default first.
        flags = sorted(setting.flags(), key=lambda flag: flag[1] == setting.default)
        cells = [(option, f"{setting.env}={int(const)}") for option, const in flags]
    else:
        cells = [(setting.flag, setting.env)]
    shown = setting.shown_default()
    if shown is not None and " " in shown:
        shown = f'"{shown}"'
    what = f"default {shown} ({setting.help})" if shown is not None else f"none: {setting.help}"
    lines = []
    for number, (flag, variable) in enumerate(cells):
        start = "  " + padded(flag, FLAG_WIDTH) + padded(variable, VARIABLE_WIDTH)
        if number:
            lines.append(start.rstrip())
            continue
        lines += textwrap.wrap(what, 80, initial_indent=start, subsequent_indent=CONTINUED, break_on_hyphens=False)
    return lines


def options_help(group):
    """The help's lines for the flags of one group of settings (okr/settings.py)."""
    return [line for setting in settings.SETTINGS if setting.group == group and setting.flag
            for line in option_lines(setting)]


# `okr --help` shows the options every command takes; `okr serve --help` adds the server's.
OPTIONS = "\n".join([
    "Options (anywhere on the line; a flag beats OKR_*, which beats the default):",
    *options_help(settings.GLOBAL),
    "  -h, --help            show this help (okr serve --help: the server's options)",
    "  --version             show the version"])

SERVING_OPTIONS = "\n\n".join(
    "\n".join([f"{group}:", *options_help(group)])
    for group in dict.fromkeys(setting.group for setting in settings.SETTINGS if setting.flag)
    if group != settings.GLOBAL)

SERVE_HELP = f"""\
usage: okr [serve] [OPTIONS]

Serves the API with waitress until stopped (Ctrl-C or SIGTERM), creating the
database if it does not exist. Logs on stderr where it listens, the database,
and one line per request. Email is set up by OKR_SMTP_URL and OKR_MAIL_FROM.

{OPTIONS}

{SERVING_OPTIONS}

Every setting also has an OKR_* variable; those with no flag (email, webhooks,
the client secret...) are in docs/operations.md, under Configuration."""


def program_help():
    commands = [("serve", "Serve the API with waitress: the command when none is given.")]
    commands += [(command.name, command.get_short_help_str(limit=200)) for command in COMMANDS]
    width = max(len(name) for name, _ in commands)
    # A text too long for 80 columns goes on under itself.
    indent = " " * (width + 4)
    lines = "\n".join(
        f"  {name:{width}}  " + f"\n{indent}".join(textwrap.wrap(text, 80 - len(indent), break_on_hyphens=False))
        for name, text in commands)
    return f"""\
usage: okr [OPTIONS] [COMMAND [ARGS]...]

Serves the OKR API over HTTP, or runs an admin command on its database.
python app.py and python -m okr take the same arguments.

Commands (okr COMMAND --help tells more):
{lines}

{OPTIONS}"""


class OptionError(Exception):
    """A global option the command line got wrong."""


class OptionParser(argparse.ArgumentParser):
    def error(self, message):
        # argparse would print its usage and exit; the program says one line instead.
        raise OptionError(message)


def parse_options(argv):
    """Splits the global options off the command line; the rest is the command."""
    parser = OptionParser(prog="okr", add_help=False, allow_abbrev=False)
    settings.add_flags(parser)
    options, rest = parser.parse_known_args(argv)
    return {key.upper(): value for key, value in vars(options).items() if value is not None}, rest


def version():
    """The installed package's version, or for a checkout never installed, its setup.cfg's."""
    try:
        return metadata.version("okr-service")
    except metadata.PackageNotFoundError:
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "setup.cfg"))
        return parser.get("metadata", "version", fallback="unknown")


class StderrLines(logging.Handler):
    """A command's log on stderr, as `okr: ...` lines; stdout stays the command's output alone."""

    def emit(self, record):
        try:
            level = "" if record.levelno <= logging.INFO else f"{record.levelname.lower()}: "
            sys.stderr.write(f"okr: {level}{record.getMessage()}\n")  # the stderr of the moment
        except Exception:
            self.handleError(record)


@contextmanager
def command_log():
    """Shows the okr logger's INFO lines while a command runs, and only then."""
    logger, handler = logging.getLogger("okr"), StderrLines()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def fail(message, status):
    print(f"okr: {message}".replace("\n", "; "), file=sys.stderr)
    return status


def as_clause(message):
    """Click's "Missing option '--name'." as "missing option '--name'", to follow "okr: "."""
    if message[1:2].islower():
        message = message[:1].lower() + message[1:]
    return message[:-1] if message.endswith(".") else message


def run_command(app, args):
    """Runs an admin command; returns its exit status, or SERVE when the command's database is to be
    served next (okr demo). An error ends as one `okr: ...` line."""
    try:
        with app.app_context(), command_log():
            status = app.cli.main(args=args, prog_name="okr", obj=ScriptInfo(create_app=lambda: app),
                                  standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as error:
        error.show()  # a group alone, such as `okr users`: its help
        return error.exit_code
    except click.UsageError as error:
        where = f" (see {error.ctx.command_path} --help)" if error.ctx else ""
        return fail(as_clause(error.format_message()) + where, error.exit_code)
    except click.ClickException as error:
        return fail(error.format_message(), error.exit_code)
    except click.Abort:
        return fail("stopped", 1)
    return status if isinstance(status, int) or status is SERVE else 0


def main(argv=None):
    """The okr program: serve (the default) or run an admin command."""
    try:
        overrides, rest = parse_options(sys.argv[1:] if argv is None else argv)
    except OptionError as error:
        sys.exit(f"okr: {error} (see okr --help)")
    command = rest[0] if rest else "serve"
    if command in HELP_FLAGS:
        print(program_help())
        return 0
    if command == "--version":
        print(f"okr {version()}")
        return 0
    if command == "serve" and any(arg in HELP_FLAGS for arg in rest[1:]):
        print(SERVE_HELP)
        return 0
    if command == "demo" and "DATABASE" not in overrides and not settings.set_in_environment("DATABASE"):
        overrides["DATABASE"] = DEMO_DATABASE  # the demo's own default: never ./okr.db
    try:
        app = create_app(overrides)
    except ValueError as error:  # a setting the app cannot take, such as OKR_SECURE_COOKIES=maybe or --port http
        sys.exit(f"okr: {error}")
    if command == "serve":
        return run_server(app, rest[1:])
    status = run_command(app, rest)
    if status is SERVE:
        return run_server(app, [])
    sys.exit(status)


if __name__ == "__main__":
    main()
