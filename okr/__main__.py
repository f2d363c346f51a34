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

from okr import create_app, env_settings
from okr.cli import COMMANDS
from okr.cli.demo import DEMO_DATABASE, SERVE
from okr.cli.serve import run_server

HELP_FLAGS = ("-h", "--help")
# Each line's default is the one create_app sets; tests/cli/test_help.py holds them to it.
# `okr --help` shows the options every command takes; `okr serve --help` adds the server's.
OPTIONS = """\
Options (anywhere on the line; a flag beats OKR_*, which beats the default):
  --database FILE       OKR_DATABASE          default ./okr.db
  --host ADDRESS        OKR_HOST              default 127.0.0.1 (this machine)
  --port N              OKR_PORT              default 8080
  --allow-anonymous     serve a non-loopback address while no API key exists
  -h, --help            show this help (okr serve --help: the server's options)
  --version             show the version"""

SERVING_OPTIONS = """\
Processes and connections:
  --workers auto|N      OKR_WORKERS           default auto (per CPU, at most 8)
  --threads N           OKR_THREADS           default 8 (per worker)
  --cpu auto|all|N      OKR_CPU               default auto (one CPU per worker)
  --connection-limit N  OKR_CONNECTION_LIMIT  default 1000
  --channel-timeout S   OKR_CHANNEL_TIMEOUT   default 30 (seconds idle)
  --connections-per-address N  OKR_CONNECTIONS_PER_ADDRESS  default 64 (0: off)

Logging, cookies and hosts:
  --no-access-log       OKR_ACCESS_LOG=0      default on: a line per request
  --access-log          OKR_ACCESS_LOG=1
  --secure-cookies      OKR_SECURE_COOKIES=1  default off (for HTTPS)
  --allowed-host NAME   OKR_ALLOWED_HOSTS     a host name to answer for (repeat)
  --trusted-proxies IP  OKR_TRUSTED_PROXIES   none: a proxy (address or CIDR;
                        repeat) whose X-Forwarded-For, -Host and -Proto count

Activity and replication:
  --event-retention-days N  OKR_EVENT_RETENTION_DAYS  default 400 (days)
  --replicate URL       OKR_REPLICATE         file:///DIR or s3://BUCKET/DIR
  --replicate-endpoint URL  OKR_REPLICATE_ENDPOINT  an S3-compatible store
  --replicate-max-lag S  OKR_REPLICATE_MAX_LAG  default 60 (then /healthz: 503)

Sign-in by OpenID Connect (the client secret: OKR_OIDC_CLIENT_SECRET only):
  --oidc-issuer URL     OKR_OIDC_ISSUER       the provider's issuer URL
  --oidc-client-id ID   OKR_OIDC_CLIENT_ID    this service's client id there
  --public-url URL      OKR_PUBLIC_URL        this service's address (redirects)
  --oidc-name TEXT      OKR_OIDC_NAME         the button's words
  --oidc-create-users R  OKR_OIDC_CREATE_USERS  viewer|editor: add new people
  --oidc-allowed-domain D  OKR_OIDC_ALLOWED_DOMAINS  accept these emails only
  --no-password-sign-in OKR_PASSWORD_SIGN_IN=0  the provider only"""

SERVE_HELP = f"""\
usage: okr [serve] [OPTIONS]

Serves the API with waitress until stopped (Ctrl-C or SIGTERM), creating the
database if it does not exist. Logs on stderr where it listens, the database,
and one line per request. Email is set up by OKR_SMTP_URL and OKR_MAIL_FROM.

{OPTIONS}

{SERVING_OPTIONS}"""


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
    parser.add_argument("--host")
    parser.add_argument("--port")
    parser.add_argument("--database")
    parser.add_argument("--workers")
    parser.add_argument("--threads")
    parser.add_argument("--cpu")
    parser.add_argument("--connection-limit")
    parser.add_argument("--channel-timeout")
    parser.add_argument("--connections-per-address")
    parser.add_argument("--event-retention-days")
    parser.add_argument("--access-log", action="store_const", const=True, default=None)
    parser.add_argument("--no-access-log", dest="access_log", action="store_const", const=False)
    parser.add_argument("--allow-anonymous", action="store_true", default=None)
    parser.add_argument("--secure-cookies", action="store_const", const=True, default=None)
    parser.add_argument("--allowed-host", dest="allowed_hosts", action="append", default=None)
    parser.add_argument("--trusted-proxies", dest="trusted_proxies", action="append", default=None)
    parser.add_argument("--replicate")
    parser.add_argument("--replicate-endpoint")
    parser.add_argument("--replicate-max-lag")
    # Sign-in with an identity provider (okr/accounts/identity_provider.py); the client secret has no flag: every user's `ps` shows flags.
    parser.add_argument("--oidc-issuer")
    parser.add_argument("--oidc-client-id")
    parser.add_argument("--oidc-name")
    parser.add_argument("--public-url")
    parser.add_argument("--oidc-create-users")
    parser.add_argument("--oidc-allowed-domain", dest="oidc_allowed_domains", action="append", default=None)
    parser.add_argument("--no-password-sign-in", dest="password_sign_in", action="store_const", const=False)
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
    if command == "demo" and "DATABASE" not in overrides and "DATABASE" not in env_settings():
        overrides["DATABASE"] = DEMO_DATABASE  # the demo's own default: never ./okr.db
    try:
        app = create_app(overrides)
    except ValueError as error:  # a setting the app cannot take, such as OKR_SECURE_COOKIES=maybe
        sys.exit(f"okr: {error}")
    if command == "serve":
        return run_server(app, rest[1:])
    status = run_command(app, rest)
    if status is SERVE:
        return run_server(app, [])
    sys.exit(status)


if __name__ == "__main__":
    main()
