"""okr demo: a demo database with a small company's OKRs, served for a look at the dashboard."""
import os
import secrets
import time

import click
from flask import current_app
from flask.cli import with_appcontext

from ..server import serving_lock
from ..server.http_server import cannot_listen, port_to_serve
from .common import address, as_configured, name_database, reports_errors
from .database import folder_problem


# The demo's own database, by default: never ./okr.db.
DEMO_DATABASE = "okr-demo.db"


class Serve:
    """What the demo command returns when the program should serve its database next (okr/__main__.py)."""


SERVE = Serve()


def summary(counts):
    return (f"{counts['cycles']} cycles, {counts['teams']} teams, {counts['users']} users, "
            f"{counts['objectives']} objectives, {counts['key_results']} key results, "
            f"{counts['checkins']} check-ins")


def serving_port():
    """The port to serve on, checked before any data is made; a free one for --port 0."""
    config = current_app.config
    host, port = config["HOST"], config["PORT"]
    try:
        port = port_to_serve(host, port)
    except OSError as error:
        raise click.ClickException(cannot_listen(error, host, port)) from None
    config["PORT"] = port
    return port


def not_negative(value):
    if value is not None and value < 0:
        raise click.BadParameter(f"{value} is not 0 or more")
    return value


@click.command("demo", short_help="Create a demo database of a company's OKRs, and serve it.")
@click.option("--no-serve", is_flag=True, help="Only create the database; do not serve it.")
@click.option("--seed", type=int, metavar="N", callback=lambda ctx, param, value: not_negative(value),
              help="Make the data from N (0 or more): the same N gives the same data, ids and dates aside.")
@click.option("--fresh", is_flag=True, help="Replace an existing demo database with new data.")
@with_appcontext
@reports_errors
def demo(no_serve, seed, fresh):
    """Create a demo database, fill it with a small software company's OKRs, and serve it.

    The database is ./okr-demo.db unless --database (or OKR_DATABASE) names
    another; ./okr.db is never used. It holds two cycles (last quarter's,
    finished, and this one, under way), four teams, twelve users, twenty
    objectives aligned company, team, personal, sixty key results of every type
    and ten weeks of check-ins, all dated in the past. --port and --host work
    as for okr serve; the dashboard's address is printed.

    Every demo user has the same password, made anew for each new demo
    database and printed once, when it is made: sign in as any of them.
    Elena Marsh (elena.marsh@tallybird.example), the CEO, is an admin; the
    others are editors.

    An existing demo database is served as it is, with whatever was recorded
    in it since; --fresh replaces it with new data. A file that okr demo did not
    make is never used, and left as it is.
    """
    from . import example_company as demo_data  # its data tables: built only when a demo is made

    path = current_app.config["DATABASE"]
    shown = as_configured(path)
    exists = os.path.lexists(path)
    if exists:
        problem = demo_data.not_a_demo_database(path)
        if problem:
            raise click.ClickException(f"{shown} is not a demo database ({problem}), so okr demo leaves it as it "
                                       "is; pass --database with a new file name")
    else:
        problem = folder_problem(os.path.dirname(path) or ".")
        if problem:
            raise click.ClickException(f"cannot create {shown}: {problem}")
    port = None if no_serve else serving_port()  # before any data is made
    name_database()
    if exists and not fresh:
        counts = demo_data.count_rows(path)
        anew = "okr demo --fresh makes a new one" if seed is None else f"okr demo --fresh --seed {seed} makes it anew"
        click.echo(f"using the demo database {shown} as it is: {summary(counts)} ({anew})")
        admin = demo_data.admin_with_password(path)
        if admin is not None:
            # --database always: for any other command than demo, the database is ./okr.db by default.
            click.echo(f"sign in as {admin} with the password printed when it was made (or set another: "
                       f"okr users set-password {admin} --database {shown})")
    else:
        seed = secrets.randbelow(1_000_000) if seed is None else seed
        password = demo_data.new_password()
        started = time.perf_counter()
        if exists:
            with serving_lock.exclusive(path) as alone:
                if not alone:
                    raise click.ClickException(f"cannot replace {shown}: a server is serving it; stop it first")
                counts = demo_data.create_demo(current_app.extensions["okr.create_app"], path, seed, replace=True,
                                               password=password)
        else:
            counts = demo_data.create_demo(current_app.extensions["okr.create_app"], path, seed, password=password)
        seconds = time.perf_counter() - started
        click.echo(f"created {shown} in {seconds:.1f} s (seed {seed}): {summary(counts)}")
        click.echo(f"sign in as {demo_data.ADMIN_EMAIL} with password {password} (every demo user has it)")
    if no_serve:
        again = "" if path == DEMO_DATABASE else f" --database {shown}"
        click.echo(f"serve it with: okr demo{again}")
        return 0
    click.echo(f"dashboard: {address(current_app.config['HOST'], port)} (Ctrl-C stops the server)")
    return SERVE
