"""Serves the OKR API with waitress, or runs one of its admin commands.

usage: python app.py [serve] [--host H] [--port P] [--database FILE] [--threads N]
                             [--cpu auto|all|N] [--connection-limit N]
                             [--channel-timeout SECONDS] [--allow-anonymous]
       python app.py COMMAND [ARGS]...      (also installed as `okr`)

Global options may stand anywhere on the line; flags override the OKR_HOST,
OKR_PORT, OKR_DATABASE, OKR_THREADS, OKR_CPU, OKR_CONNECTION_LIMIT and
OKR_CHANNEL_TIMEOUT environment variables, which override the defaults
(127.0.0.1, 8080, ./okr.db, 8 threads, one CPU, 1000 connections, 30 s).
"""
import argparse
import sys

from flask.cli import ScriptInfo

from okr import create_app
from okr.cli.serve import run_server


def parse_options(argv):
    """Splits the global options off the command line; the rest is the command."""
    parser = argparse.ArgumentParser(prog="okr", add_help=False, allow_abbrev=False)
    parser.add_argument("--host")
    parser.add_argument("--port")
    parser.add_argument("--database")
    parser.add_argument("--threads")
    parser.add_argument("--cpu")
    parser.add_argument("--connection-limit")
    parser.add_argument("--channel-timeout")
    parser.add_argument("--allow-anonymous", action="store_true", default=None)
    options, rest = parser.parse_known_args(argv)
    return {key.upper(): value for key, value in vars(options).items() if value is not None}, rest


def main(argv=None):
    """The okr program: serve (the default) or run an admin command."""
    overrides, rest = parse_options(sys.argv[1:] if argv is None else argv)
    app = create_app(overrides)
    if rest[:1] in ([], ["serve"]):
        return run_server(app, rest[1:])
    if rest[0] in ("-h", "--help"):
        print(__doc__)
    with app.app_context():
        return app.cli.main(args=rest, prog_name="okr", obj=ScriptInfo(create_app=lambda: app))


if __name__ == "__main__":
    main()
