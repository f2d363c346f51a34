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
import logging
import os
import signal
import sqlite3
import sys

from flask.cli import ScriptInfo

from okr import create_app
from okr.auth import open_to_network
from okr.db import connect, init_db
from okr.server import make_server, place_on_cpus
from okr.serving_lock import hold_shared


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


def positive_int(app, key, low, high):
    value = str(app.config[key])
    if not value.isdigit() or not low <= int(value) <= high:
        sys.exit(f"okr: {key.lower()} must be an integer from {low} to {high}, not {value!r}")
    return int(value)


def stop_on_sigterm(signum, frame):
    # waitress shuts down its workers cleanly on SystemExit.
    raise SystemExit(0)


def run_server(app, args):
    if args:
        sys.exit(f"okr: serve takes no arguments besides the global options, not {' '.join(args)}")
    positive_int(app, "PORT", 0, 65535)
    positive_int(app, "THREADS", 1, 256)
    positive_int(app, "CONNECTION_LIMIT", 1, 100_000)
    positive_int(app, "CHANNEL_TIMEOUT", 1, 86_400)
    try:
        placement = place_on_cpus(app.config["CPU"])
    except ValueError as error:
        sys.exit(f"okr: {error}")
    try:
        with app.app_context():
            init_db()
            # Held until the process ends: `okr restore` refuses a served database.
            hold_shared(app.config["DATABASE"])
            db = connect(app.config["DATABASE"], app.config["BUSY_TIMEOUT_MS"])
            exposed = open_to_network(db, app.config["HOST"])
            db.close()
    except (sqlite3.Error, OSError, RuntimeError) as error:
        sys.exit(f"okr: cannot use database {app.config['DATABASE']}: {error}")
    if exposed and not app.config.get("ALLOW_ANONYMOUS"):
        sys.exit(
            f"okr: refusing to serve on {app.config['HOST']} without authentication: no API key "
            "exists yet. Run `okr keys create --name NAME` first, or pass --allow-anonymous."
        )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("okr").info("database %s; serving %s", os.path.abspath(app.config["DATABASE"]), placement)
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    server = make_server(app)
    server.print_listen("Serving on http://{}:{}")
    server.run()


def main(argv=None):
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
