"""okr sources: key results' metric sources, as the background process runs them (okr.sources.syncing)."""
from datetime import date

import click
from flask import current_app
from flask.cli import AppGroup

from ..db import transaction
from ..errors import Conflict, Invalid, NotFound
from ..sources import reading, syncing
from ..store import sources
from ..store.schema import OwnTransactions
from .common import echo_json, read_database, reports_errors, use_database

sources_cli = AppGroup("sources", help="Metric sources: list, test, sync, fill, recompute.")


def own_transactions():
    config = current_app.config
    return OwnTransactions(config["DATABASE"], config["BUSY_TIMEOUT_MS"])


def source_of(key_result_id):
    """The key result's source (a dict); a one-line refusal when it has none."""
    with transaction(write=False) as db:
        row = sources.of_key_result(db, key_result_id)
    if row is None:
        raise click.ClickException(f"key result {key_result_id} has no source (see okr sources list)")
    return row


def refused(error):
    """A store or runner refusal as one line."""
    if isinstance(error, Invalid):
        return click.ClickException("; ".join(error.fields.values()))
    return click.ClickException(str(error) if not isinstance(error, NotFound) else f"no such {error}")


def day(text):
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a date such as 2026-01-31") from None


@sources_cli.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per source (never a secret).")
@reports_errors
def list_sources(as_json):
    """List the key results that read a source: state, failures, last and next run."""
    read_database()
    with transaction(write=False) as db:
        rows = sources.listed(db)
    if not rows and not as_json:
        click.echo("no sources yet; attach a key result to a connection on its edit page or with PUT "
                   "/v1/keyresults/ID/source")
    for row in rows:
        if as_json:
            echo_json({"key_result_id": row["key_result_id"], "key_result": row["key_result_name"],
                       "connection": row["connection_name"], "kind": row["kind"], "query": row["query"],
                       "path": row["path"], "state": row["state"], "failures": row["failures"],
                       "last_error": row["last_error"], "last_run_at": row["last_run_at"],
                       "next_run_at": row["next_run_at"]})
            continue
        problem = f"  ({row['failures']} failures: {row['last_error']})" if row["failures"] else ""
        click.echo(f"{row['key_result_id']}  {row['state']:<8} {row['key_result_name']} ← {row['connection_name']} "
                   f"({row['kind']}); next {row['next_run_at']}{problem}")


@sources_cli.command("test")
@click.argument("key_result_id", metavar="KEY_RESULT_ID")
@reports_errors
def test_source(key_result_id):
    """Read a key result's source now and print the value it would write; writes nothing."""
    read_database()
    row = source_of(key_result_id)
    tried = syncing.trial(current_app.config, row, row["query"], row["path"])
    if not tried["ok"]:
        raise click.ClickException(f"the source read nothing: {tried['error']}")
    click.echo(f"value:   {tried['value']}\nrequest: {tried['request']}\nanswer:  {tried['answer_size']} bytes")


@sources_cli.command("sync")
@click.argument("key_result_id", metavar="KEY_RESULT_ID")
@reports_errors
def sync_source(key_result_id):
    """Run a key result's source now: a changed value becomes a check-in with its evidence."""
    use_database()
    row = source_of(key_result_id)
    with own_transactions() as transactions:
        try:
            run = syncing.sync(current_app.config, transactions, row["id"])
        except (Invalid, Conflict, NotFound) as error:
            raise refused(error) from None
    words = {"written": f"wrote {run['value']} (check-in {run['checkin_id']})",
             "unchanged": f"read {run['value']}, as before: nothing written",
             "idle": f"nothing read: {run['reason']}",
             "failed": f"failed ({run['failures']} in a row, {run['state']}): {run['error']}"}
    click.echo(words[run["outcome"]])
    if run["outcome"] == "failed":
        raise SystemExit(1)


@sources_cli.command("fill")
@click.argument("key_result_id", metavar="KEY_RESULT_ID")
@click.option("--from", "first", metavar="DATE", help="The first day (default: the cycle's start).")
@click.option("--to", "last", metavar="DATE", help="The last day (default: yesterday).")
@click.option("--weekly", is_flag=True, help="One value a week rather than a day.")
@reports_errors
def fill_source(key_result_id, first, last, weekly):
    """Fill a key result's history back from its source, each value dated its day, in one transaction."""
    first, last = day(first), day(last)
    use_database()
    row = source_of(key_result_id)
    if not reading.takes_as_of(row["kind"], row["query"]):
        raise click.ClickException("this source reads only the present (its query takes no {as_of} or :as_of): "
                                   "it cannot fill a history back")
    with own_transactions() as transactions:
        try:
            done = syncing.fill(current_app.config, transactions, row["id"], first, last,
                                "weekly" if weekly else "daily")
        except (Invalid, Conflict, NotFound) as error:
            raise refused(error) from None
    if done["outcome"] == "failed":
        raise click.ClickException(f"nothing written: {done['error']}")
    click.echo(f"read {done['read']} values, wrote {done['written']} (the others were unchanged)")


@sources_cli.command("recompute")
@click.argument("checkin_id", metavar="CHECKIN_ID")
@reports_errors
def recompute_checkin(checkin_id):
    """Run a source-written check-in's request again and say whether its answer still matches."""
    read_database()
    with own_transactions() as transactions:
        try:
            again = syncing.recompute(current_app.config, transactions, checkin_id)
        except NotFound:
            raise click.ClickException(f"check-in {checkin_id} was not written by a source (or does not "
                                       "exist)") from None
        except Conflict as error:  # its connection is gone
            raise click.ClickException(str(error)) from None
    if again["error"]:
        raise click.ClickException(f"the source read nothing now: {again['error']}")
    if again["matches"]:
        click.echo(f"the answer matches (SHA-256 {again['sha256']}); value {again['value']}")
    else:
        click.echo(f"the answer changed: SHA-256 {again['sha256_then']} then, {again['sha256']} now; value "
                   f"{again['value_then']} then, {again['value']} now")
        raise SystemExit(1)
