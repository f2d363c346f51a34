"""okr replication status: what the server replicating the database last wrote of its replication (the replica, the
lag, Litestream's last error in full), and whether a server replicates it now."""
import json
import os
import time

import click
from flask import current_app
from flask.cli import AppGroup

from ..server import litestream
from ..server.replication import replicated_now
from .common import as_configured, echo_json, reports_errors

replication_cli = AppGroup("replication", help="Replication with Litestream: status.")


def terminal_text(text):
    """Text from elsewhere (Litestream's error, which may quote a remote store's answer) safe for a terminal."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in str(text))


@replication_cli.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as one JSON object.")
@reports_errors
def replication_status(as_json):
    """Show replication's state: the replica, the lag, and Litestream's last error in full.

    What the server running with --replicate last wrote beside the database
    (DATABASE.replication.json, readable by its owner only). /healthz, which
    needs no key, says only ok or failing and the lag; the error's detail is
    here and in the server's log.
    """
    database = current_app.config["DATABASE"]
    try:
        with open(litestream.status_path(database), encoding="utf-8") as f:
            status = json.load(f)
    except FileNotFoundError:
        raise click.ClickException(f"no server has replicated {as_configured(database)}: serve it with "
                                   "okr serve --replicate URL") from None
    except ValueError:
        raise click.ClickException(f"{litestream.status_path(database)} is not a status okr wrote") from None
    now, running = time.time(), replicated_now(database)
    max_lag = status.get("max_lag") or litestream.DEFAULT_MAX_LAG
    healthy, details = litestream.health(status, max_lag, now)
    state = details["replication"] if running else "stopped"
    if as_json:
        echo_json({**status, "database": os.path.abspath(database), "replicating": running, "state": state,
                   "healthy": running and healthy,
                   "lag_seconds": round(litestream.lag(status, now), 1) if running else None})
        return
    lines = [("database", os.path.abspath(database)), ("replica", status.get("replica") or "unknown")]
    if status.get("endpoint"):
        lines.append(("endpoint", status["endpoint"]))
    if running:
        child = (f"litestream pid {status['pid']}" if status.get("pid") else "litestream not running, "
                 "starting it again")
        lines.append(("replicating", f"yes ({child}; started again {status.get('restarts', 0)} times)"))
        verdict = details["replication"]
        if not healthy:
            verdict += f", /healthz answers 503 (the lag is past {max_lag} s)"
        lines.append(("state", verdict))
        lines.append(("lag", f"{details['replication_lag_seconds']} s"))
    else:
        ended = status.get("stopped_at") or status.get("written_at")
        lines.append(("replicating", "no: no server replicates this database now"
                      + (f"; the last status is of {litestream.stamp(ended)}" if ended else "")))
    synced = status.get("synced_at")
    lines.append(("last sync", litestream.stamp(synced) if synced else "never"))
    error = status.get("error")
    lines.append(("last error", f"{litestream.stamp(status.get('error_at') or 0)} {terminal_text(error)}"
                  if error else "none"))
    for name, value in lines:
        click.echo(f"{name + ':':13} {value}")
