"""What every command shares: one-line errors instead of tracebacks, and JSON output."""
import csv
import functools
import json
import sqlite3

import click
from flask import current_app


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
