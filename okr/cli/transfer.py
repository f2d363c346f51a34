"""okr export and okr import: all data as one JSON file (okr/transfer/__init__.py describes the format), a cycle as CSV."""
import os
import stat

import click
from flask.cli import with_appcontext

from .. import clock, progress, transfer
from ..db import transaction
from ..store import cycles
from .common import echo_json, read_database, reports_errors, use_database
from .database import new_file_beside


def write_new_file(path, write, **open_options):
    """Calls write(file) on a private temporary file beside path, renamed to path once complete.

    A missing folder is refused rather than made, and an existing file is never
    replaced, as okr backup does: a mistyped path must not hide or lose data.
    """
    with new_file_beside(path, "export") as (handle, _):
        with open(handle, "w", **open_options) as f:
            return write(f)


@click.command("export", short_help="Write all data to JSON, or a cycle's key results as CSV.")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--include-keys", is_flag=True, help="Also write the API keys, their secrets included.")
@click.option("--format", "file_format", type=click.Choice(["json", "csv"]), default="json", show_default=True,
              help="json: everything, for okr import; csv: one cycle's key results, for spreadsheets.")
@click.option("--cycle", "cycle_id", metavar="ID", help="The cycle whose key results --format csv writes.")
@with_appcontext
@reports_errors
def export_command(path, include_keys, file_format, cycle_id):
    """Write every user, team, cycle, objective, key result, check-in and comment to PATH, with the activity feed.

    The JSON file (format okr-export, version 5) is what okr import reads: every
    field of every row, in creation order, after the events the server has not
    pruned; API keys only with --include-keys (they are secrets). Passwords,
    sessions, invitations, password resets and webhooks are never written. With
    --format csv --cycle ID, PATH gets that cycle's key results instead, one
    row each with its objective, progress and status, for spreadsheets. The
    copy is one consistent snapshot, safe while serving. PATH must be new, in a
    folder that exists.
    """
    if file_format == "csv" and not cycle_id:
        raise click.ClickException("--format csv needs --cycle ID: a CSV file holds one cycle's key results")
    if file_format == "json" and cycle_id:
        raise click.ClickException("--cycle goes with --format csv; the JSON export holds every cycle")
    if file_format == "csv" and include_keys:
        raise click.ClickException("--include-keys goes with the JSON export; a CSV file holds no keys")
    read_database()  # read, never written: an export works on a full disk or a read-only file
    with transaction(write=False) as db:  # one snapshot, however long the writing takes
        if file_format == "csv":
            if not cycles.exists(db, cycle_id):
                raise click.ClickException(f"no cycle with id {cycle_id}")
            now = progress.parse_timestamp(clock.utc_now())  # the clock the API's reports use
            # A byte-order mark: Excel takes a CSV without one for the local code page.
            count = write_new_file(path, lambda f: transfer.export_csv(db, cycle_id, f, now),
                                   encoding=transfer.CSV_ENCODING, newline="")
            report = {"exported": os.path.abspath(path), "format": "csv", "cycle": cycle_id, "key_results": count}
        else:
            counts = write_new_file(path, lambda f: transfer.export_json(db, f, include_keys),
                                    encoding="utf-8", newline="\n")
            report = {"exported": os.path.abspath(path), "format": transfer.FORMAT, "version": transfer.VERSION,
                      **counts}
    echo_json(report)


@click.command("import", short_help="Load a JSON export into an empty database, or --merge it.")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--merge", is_flag=True, help="Add new rows and update existing ones by id, into any database.")
@click.option("--include-keys", is_flag=True,
              help="Also import the file's API keys (a merge updates keys only then). Without it they are left out.")
@with_appcontext
@reports_errors
def import_command(path, merge, include_keys):
    """Load a file that okr export wrote into the database.

    Without --merge the database must be empty (no users, teams, cycles,
    objectives, key results, check-ins, comments or initiatives; okr init-db makes one), and
    every row keeps its id, times and order. With --merge, rows are matched by
    id: new ones are added, changed ones updated, and nothing is deleted; a
    change inside a cycle closed in the database is refused, naming it. The
    file's events come in as they are (an event already stored is left as it
    is), and the import records one event of its own, data.imported. The whole
    file is checked first, and written in one transaction: any problem is
    named, and nothing is written.

    API keys in the file (okr export --include-keys writes them) are imported
    only with --include-keys, and only keys whose secret has at least 32
    characters; without it they are left out, and the database's own keys are
    never changed. PATH must be a regular file: it is read twice, so a pipe or
    /dev/stdin is refused (save the stream to a file first).
    """
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise click.ClickException(f"cannot import {path}: not a regular file (it is read twice, once to check and "
                                   "once to write): save it to a file first")
    use_database()
    with transaction() as db:
        db.execute("PRAGMA cache_size = -16384")  # 16 MB: random UUID keys hit index pages all over
        try:
            counts = transfer.import_file(db, path, merge, include_keys)
        except transfer.Refusal as refusal:
            raise click.ClickException(f"cannot import {path}: nothing imported: {refusal}") from None
    report = {"imported": os.path.abspath(path)}
    left_out = counts.pop("api_keys") if not include_keys else None
    if merge:
        report.update(merged=True, **{name: outcome for name, outcome in counts.items()
                                      if name != "api_keys" or any(outcome.values())})
    else:
        report.update({name: outcome["added"] for name, outcome in counts.items()
                       if name != "api_keys" or outcome["added"]})
    if left_out and left_out["left_out"]:
        report["api_keys_left_out"] = left_out["left_out"]
    report["never_in_the_file"] = sorted({what for what, _ in transfer.LEFT_OUT.values()})
    echo_json(report)
