"""What every command shares: one-line errors instead of tracebacks, JSON output, and the database it uses."""
import csv
import functools
import json
import logging
import os
import sqlite3

import click
from flask import current_app

from ..db import init_db

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
