"""okr users: add, import, activate and deactivate users.

Users can only be created here, not over HTTP.
"""
import csv
import sqlite3

import click
from flask.cli import AppGroup
from marshmallow import ValidationError

from ..api.errors import flatten
from ..api.schemas import user_schema
from ..api.users import user_json
from ..db import init_db, new_id, transaction, utc_now
from ..emails import email_key
from .common import echo_json, reports_errors


users_cli = AppGroup("users", help="Add, import, activate and deactivate users.")


def validated_user(name, email):
    try:
        return user_schema.load({"name": name, "email": email})
    except ValidationError as error:
        problems = "; ".join(f"{field}: {text}" for field, text in flatten(error.messages).items())
        raise click.ClickException(problems) from None


def insert_user(db, user):
    return db.execute(
        "INSERT INTO users (id, name, email, email_key, is_active, created_at) VALUES (?, ?, ?, ?, 1, ?)"
        " RETURNING *",
        (new_id(), user["name"], user["email"], email_key(user["email"]), utc_now()),
    ).fetchone()


@users_cli.command("add")
@click.option("--name", required=True, help="Full name.")
@click.option("--email", required=True, help="Email address; unique under Unicode case folding.")
@reports_errors
def add_user(name, email):
    """Create a user and print it as JSON."""
    user = validated_user(name, email)
    init_db()
    with transaction() as db:
        try:
            row = insert_user(db, user)
        except sqlite3.IntegrityError:
            raise click.ClickException(f"a user with email {email} already exists") from None
    echo_json(user_json(row))


def set_active(email, active):
    init_db()
    with transaction() as db:
        row = db.execute(
            "UPDATE users SET is_active = ? WHERE email_key = ? RETURNING *", (active, email_key(email))
        ).fetchone()
    if row is None:
        raise click.ClickException(f"no user with email {email}")
    echo_json(user_json(row))


@users_cli.command("deactivate")
@click.argument("email")
@reports_errors
def deactivate_user(email):
    """Mark a user inactive: they can no longer sign in."""
    set_active(email, 0)


@users_cli.command("activate")
@click.argument("email")
@reports_errors
def activate_user(email):
    """Mark a user active again."""
    set_active(email, 1)


def read_user_rows(path):
    """The users of a name,email CSV file (header optional), all validated or none."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    has_header = bool(rows) and [cell.strip().lower() for cell in rows[0]] == ["name", "email"]
    users, problems, seen = [], [], set()
    for number, row in enumerate(rows[1:] if has_header else rows, start=2 if has_header else 1):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != 2:
            problems.append(f"row {number}: expected 2 columns (name,email), got {len(row)}")
            continue
        try:
            user = validated_user(*row)
        except click.ClickException as error:
            problems.append(f"row {number}: {error.message}")
            continue
        if email_key(user["email"]) in seen:
            problems.append(f"row {number}: {user['email']} appears twice in the file")
        seen.add(email_key(user["email"]))
        users.append(user)
    if problems:
        raise click.ClickException("nothing imported:\n" + "\n".join(problems))
    return users


@users_cli.command("import")
@click.argument("csv_file", type=click.Path(exists=True, dir_okay=False))
@reports_errors
def import_users(csv_file):
    """Create users from a CSV file with columns name,email; existing emails are skipped."""
    users = read_user_rows(csv_file)
    init_db()
    imported = skipped = 0
    with transaction() as db:
        for user in users:
            exists = db.execute(
                "SELECT 1 FROM users WHERE email_key = ?", (email_key(user["email"]),)
            ).fetchone()
            if exists:
                skipped += 1
            else:
                insert_user(db, user)
                imported += 1
    echo_json({"imported": imported, "skipped_existing": skipped})
