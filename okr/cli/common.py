"""What every command shares: one-line errors instead of tracebacks, JSON output, and the database it uses."""
import csv
import functools
import json
import logging
import os
import sqlite3
import urllib.parse
from contextlib import closing

import click
from flask import current_app

from ..db import init_db
from ..store.schema import SCHEMA_VERSION, schema_version

# The app's logger: `okr COMMAND` shows what it logs on stderr, as `okr: ...` lines.
logger = logging.getLogger("okr")


def reports_errors(command):
    """A bad file or database ends the command with a one-line message, not a traceback."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except (sqlite3.Error, OSError, UnicodeError, csv.Error, RuntimeError) as error:
            raise click.ClickException(f"{error} (database {current_app.config['DATABASE']})") from None

    return run


def echo_json(value):
    click.echo(json.dumps(value, ensure_ascii=False))


def address(host, port):
    """The server's address for a browser: http://HOST:PORT/, an IPv6 address in brackets."""
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def as_configured(path):
    """The database path as the user gave it, with ./ before a bare file name so that it reads as a path."""
    return path if os.path.dirname(path) else os.path.join(".", path)


def name_database():
    """Says on stderr which file this command uses: the server's and the command's may differ."""
    path = current_app.config["DATABASE"]
    logger.info("using database %s", os.path.abspath(path))
    return path


def existing_database():
    """The configured database, named; refused if it does not exist rather than made empty."""
    path = current_app.config["DATABASE"]
    if not os.path.exists(path):
        raise click.ClickException(f"no database at {as_configured(path)}; run okr init-db or pass --database")
    return name_database()


def use_database():
    """The existing database, named and brought to this release's schema."""
    existing_database()
    init_db()


def read_database():
    """The existing database, named, for a command that only reads: it is not written at all.

    Its schema must be this release's: an older one is refused, naming its version, rather than
    migrated (a migration writes, and a command that reads must work on a full disk or a read-only
    file); okr init-db, or any command that writes, brings it up to date.
    """
    path = existing_database()
    # mode=ro: reading the version must not create or change anything.
    with closing(sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=ro", uri=True)) as db:
        version = schema_version(db)
    if version < SCHEMA_VERSION:
        raise click.ClickException(
            f"the database has schema version {version}, older than this release's {SCHEMA_VERSION}; this command "
            f"only reads, so it does not upgrade it: run okr init-db first (database {as_configured(path)})")
    if version > SCHEMA_VERSION:
        raise click.ClickException(
            f"the database has schema version {version}, newer than this release knows ({SCHEMA_VERSION}); "
            f"use a newer okr (database {as_configured(path)})")
    return path
