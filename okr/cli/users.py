"""okr users: add, list, update, import, deactivate and activate users.

Users can only be created and changed here, not over HTTP.
"""
import csv
import unicodedata
from contextlib import contextmanager

import click
from flask.cli import AppGroup
from marshmallow import ValidationError

from ..rules.messages import flatten
from ..rules.schemas import user_schema
from ..db import transaction
from ..emails import email_key
from ..errors import Conflict, NotFound
from ..records import user_json
from ..store import users
from .common import echo_json, read_database, reports_errors, use_database


users_cli = AppGroup("users", help="Users: add, list, update, import, deactivate, activate.")


def validated_user(name, email, partial=False):
    """The user's fields as add stores them (the email in NFC); with partial, only those given."""
    given = {key: value for key, value in (("name", name), ("email", email)) if value is not None or not partial}
    try:
        return user_schema.load(given, partial=partial)
    except ValidationError as error:
        problems = "; ".join(f"{field}: {text}" for field, text in flatten(error.messages).items())
        raise click.ClickException(problems) from None


@users_cli.command("add")
@click.option("--name", required=True, help="Full name.")
@click.option("--email", required=True, help="Email address; unique under Unicode case folding.")
@reports_errors
def add_user(name, email):
    """Create a user and print it as JSON."""
    user = validated_user(name, email)
    use_database()
    with transaction() as db, refusals():
        row = users.create(db, user["name"], user["email"])
    echo_json(user_json(row))


@users_cli.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per user and line, as GET /v1/users/:id.")
@reports_errors
def list_users(as_json):
    """List users in creation order, inactive ones included."""
    read_database()
    with transaction(write=False) as db:
        listed = [user_json(row) for row in db.execute("SELECT * FROM users ORDER BY seq")]
    if as_json:
        for user in listed:
            echo_json(user)
    elif not listed:
        click.echo("no users yet; add one with okr users add --name NAME --email EMAIL")
    else:
        table = [("EMAIL", "NAME", "ACTIVE", "CREATED", "ID")] + [
            (user["email"], user["name"], "yes" if user["is_active"] else "no", user["created_at"], user["id"])
            for user in listed
        ]
        widths = [max(columns(row[column]) for row in table) for column in range(4)]
        for row in table:
            click.echo("".join(cell + " " * (width - columns(cell) + 2) for cell, width in zip(row, widths)) + row[4])


def columns(text):
    """The terminal columns text takes: two for a wide character (such as 李), none for a combining one."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


@users_cli.command("update")
@click.argument("email")
@click.option("--name", help="New full name.")
@click.option("--email", "new_email", help="New email address; unique under Unicode case folding.")
@reports_errors
def update_user(email, name, new_email):
    """Change the name or email of the user with EMAIL.

    Prints the user as JSON. The new email must be valid, and no other user's
    under Unicode case folding.
    """
    if name is None and new_email is None:
        raise click.ClickException("nothing to change: pass --name, --email or both")
    # Only what is given is checked: an email stored under older rules may stay as it is.
    changes = validated_user(name, new_email, partial=True)
    use_database()
    with transaction() as db, refusals(email):
        row = users.find_by_email(db, email)
        if row is None:
            raise NotFound("user")
        row = users.update(db, row, changes.get("name", row["name"]), changes.get("email", row["email"]))
    echo_json(user_json(row))


@contextmanager
def refusals(email=None):
    """The store's refusals as one `okr:` line: a taken email, or no user with the email asked for."""
    try:
        yield
    except Conflict as error:
        raise click.ClickException(str(error)) from None
    except NotFound:
        raise click.ClickException(f"no user with email {email}") from None


def set_active(email, active):
    use_database()
    with transaction() as db, refusals(email):
        row = users.set_active(db, users.found(db, email), active)
    echo_json(user_json(row))


@users_cli.command("deactivate")
@click.argument("email")
@reports_errors
def deactivate_user(email):
    """Mark the user with EMAIL inactive; print it as JSON.

    An inactive user cannot sign in: their dashboard sessions end now and their
    API keys are refused from the next request. The user stays listed, in okr users
    list and over the API, with is_active false, and may still be an
    objective's assignee. The last active admin cannot be deactivated.
    """
    set_active(email, 0)


@users_cli.command("activate")
@click.argument("email")
@reports_errors
def activate_user(email):
    """Mark the user with EMAIL active again; print it as JSON."""
    set_active(email, 1)


COLUMNS = "name,email (in that order)"
# First-row cells that show the row was meant as a header, once normalised: lower
# case, with no spaces, hyphens or underscores.
HEADER_WORDS = {"name", "fullname", "username", "user", "email", "mail", "emailaddress", "address"}
# Problems shown of a file that has many: the line stays readable, and the first ones show the pattern.
PROBLEMS_SHOWN = 10


def header_kind(row):
    """'name,email' for the expected header, 'other' for a row that looks like a different header, else None."""
    cells = [cell.strip().lower() for cell in row]
    if cells == ["name", "email"]:
        return "name,email"
    words = {cell.replace(" ", "").replace("-", "").replace("_", "") for cell in cells}
    # A data row holds an email, and so an @.
    return "other" if words & HEADER_WORDS and not any("@" in cell for cell in cells) else None


def read_user_rows(path):
    """The users of a name,email CSV file (header optional), all validated or none."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    header = header_kind(rows[0]) if rows else None
    if header == "other":
        raise click.ClickException(f"nothing imported: row 1: expected the header name,email (in that order), "
                                   f"or no header; got {','.join(rows[0])}")
    people, problems, seen = [], [], set()
    for number, row in enumerate(rows[1:] if header else rows, start=2 if header else 1):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != 2:
            problems.append(f"row {number}: expected 2 columns, {COLUMNS}; got {len(row)}")
            continue
        try:
            user = validated_user(*row)
        except click.ClickException as error:
            problems.append(f"row {number}: {error.message}")
            continue
        if email_key(user["email"]) in seen:
            problems.append(f"row {number}: {user['email']} appears twice in the file")
        seen.add(email_key(user["email"]))
        people.append(user)
    if problems:
        more = len(problems) - PROBLEMS_SHOWN
        raise click.ClickException("nothing imported: " + "; ".join(problems[:PROBLEMS_SHOWN])
                                   + (f" (and {more} more rows with problems)" if more > 0 else ""))
    return people


@users_cli.command("import")
@click.argument("csv_file", type=click.Path(exists=True, dir_okay=False))
@reports_errors
def import_users(csv_file):
    """Create users from a CSV file of name,email rows.

    The columns are name and email, in that order. A first row name,email is
    taken as the header. Users whose email exists already are skipped; any
    other problem imports nothing.
    """
    people = read_user_rows(csv_file)
    use_database()
    imported = skipped = 0
    with transaction() as db:
        for user in people:
            exists = db.execute(
                "SELECT 1 FROM users WHERE email_key = ?", (email_key(user["email"]),)
            ).fetchone()
            if exists:
                skipped += 1
            else:
                users.create(db, user["name"], user["email"])
                imported += 1
    echo_json({"imported": imported, "skipped_existing": skipped})
