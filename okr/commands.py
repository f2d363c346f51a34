"""Admin commands: users, API keys, request signing and backups.

Users can only be created here, not over HTTP.
"""
import csv
import functools
import json
import os
import secrets
import sqlite3
import tempfile

import click
from flask import current_app
from flask.cli import AppGroup, with_appcontext
from marshmallow import ValidationError

from .auth import authorization_header
from .db import connect, init_db, new_id, transaction, utc_now
from .errors import flatten
from .schemas import user_schema
from .users import user_json

def reports_errors(command):
    """A bad file or database ends the command with a one-line message, not a traceback."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except (sqlite3.Error, OSError, UnicodeError, csv.Error, RuntimeError) as error:
            raise click.ClickException(f"{error} (database {current_app.config['DATABASE']})") from None

    return run


users_cli = AppGroup("users", help="Add, import, activate and deactivate users.")


@click.command("init-db")
@with_appcontext
@reports_errors
def init_db_command():
    """Create the schema (safe to run twice)."""
    init_db()
    click.echo(f"initialised {current_app.config['DATABASE']}")


def echo_json(value):
    click.echo(json.dumps(value, ensure_ascii=False))


def validated_user(name, email):
    try:
        return user_schema.load({"name": name, "email": email})
    except ValidationError as error:
        problems = "; ".join(f"{field}: {text}" for field, text in flatten(error.messages).items())
        raise click.ClickException(problems) from None


def insert_user(db, user):
    return db.execute(
        "INSERT INTO users (id, name, email, is_active, created_at) VALUES (?, ?, ?, 1, ?) RETURNING *",
        (new_id(), user["name"], user["email"], utc_now()),
    ).fetchone()


@users_cli.command("add")
@click.option("--name", required=True, help="Full name.")
@click.option("--email", required=True, help="Email address; unique, case-insensitive.")
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
            "UPDATE users SET is_active = ? WHERE email = ? RETURNING *", (active, email)
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
        if user["email"].lower() in seen:
            problems.append(f"row {number}: {user['email']} appears twice in the file")
        seen.add(user["email"].lower())
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
            exists = db.execute("SELECT 1 FROM users WHERE email = ?", (user["email"],)).fetchone()
            if exists:
                skipped += 1
            else:
                insert_user(db, user)
                imported += 1
    echo_json({"imported": imported, "skipped_existing": skipped})


keys_cli = AppGroup("keys", help="Create, list and revoke API keys.")


@keys_cli.command("create")
@click.option("--name", required=True, help="What the key is for, e.g. the client's name.")
@click.option("--json", "as_json", is_flag=True, help='Print {"credential": ..., "secret": ...}.')
@reports_errors
def create_key(name, as_json):
    """Create an API key; its secret is printed now and never again."""
    if not name.strip():
        raise click.ClickException("--name must not be blank")
    credential, secret = secrets.token_hex(12), secrets.token_urlsafe(32)
    init_db()
    with transaction() as db:
        db.execute(
            "INSERT INTO api_keys (credential, secret, name, created_at) VALUES (?, ?, ?, ?)",
            (credential, secret, name, utc_now()),
        )
    if as_json:
        echo_json({"credential": credential, "secret": secret})
    else:
        click.echo(f"credential: {credential}\nsecret:     {secret}\n"
                   "The secret is shown only this once: store it now.")


@keys_cli.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per key.")
@reports_errors
def list_keys(as_json):
    """List API keys (never their secrets)."""
    init_db()
    with transaction(write=False) as db:
        rows = db.execute(
            "SELECT credential, name, created_at, revoked_at FROM api_keys ORDER BY seq"
        ).fetchall()
    for row in rows:
        if as_json:
            echo_json(dict(row))
        else:
            state = f"revoked {row['revoked_at']}" if row["revoked_at"] else "active"
            click.echo(f"{row['credential']}  {row['created_at']}  {state:28}  {row['name']}")


@keys_cli.command("revoke")
@click.argument("credential")
@reports_errors
def revoke_key(credential):
    """Revoke an API key; the next request signed with it is refused."""
    init_db()
    with transaction() as db:
        row = db.execute(
            "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE credential = ? "
            "RETURNING revoked_at",
            (utc_now(), credential),
        ).fetchone()
    if row is None:
        raise click.ClickException(f"no API key with credential {credential}")
    click.echo(f"revoked {credential} at {row['revoked_at']}")


@click.command("auth-header")
@click.option("--credential", required=True, envvar="OKR_CREDENTIAL", help="Or set OKR_CREDENTIAL.")
@click.option("--secret", required=True, envvar="OKR_SECRET", help="Or set OKR_SECRET.")
@click.option("--timestamp", help="RFC 3339 UTC time to sign; default: now.")
def auth_header(credential, secret, timestamp):
    """Print a signed Authorization header line, for curl -H."""
    timestamp = timestamp or utc_now()
    click.echo(f"Authorization: {authorization_header(credential, secret, timestamp)}")


@click.command("backup")
@click.argument("path", type=click.Path(dir_okay=False, writable=True))
@with_appcontext
@reports_errors
def backup(path):
    """Copy the database to PATH through SQLite's online backup API, safe while serving."""
    source_path = current_app.config["DATABASE"]
    if not os.path.isfile(source_path):
        raise click.ClickException(f"no database at {source_path}")
    if os.path.exists(path):
        raise click.ClickException(f"{path} exists; back up to a new file")
    # A private temporary file beside the target, renamed only once complete.
    handle, partial = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".okr-backup-")
    os.close(handle)
    try:
        source = connect(source_path, current_app.config["BUSY_TIMEOUT_MS"])
        target = sqlite3.connect(partial)
        try:
            # One step: the copy is one read snapshot, and in WAL mode writers go on meanwhile.
            source.backup(target)
            target.execute("PRAGMA journal_mode = DELETE")  # a single self-contained file
            integrity = target.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            target.close()
            source.close()
        if integrity != "ok":
            raise click.ClickException(f"the copy failed its integrity check: {integrity}")
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    echo_json({"backup": os.path.abspath(path), "bytes": os.path.getsize(path), "integrity_check": integrity})


@click.command("restore")
@click.argument("backup_path", type=click.Path(exists=True, dir_okay=False))
@with_appcontext
@reports_errors
def restore(backup_path):
    """Replace the database with a backup (stop the server first)."""
    source = sqlite3.connect(f"file:{os.path.abspath(backup_path)}?mode=ro", uri=True)
    try:
        integrity = source.execute("PRAGMA integrity_check").fetchone()[0]
        if integrity != "ok":
            raise click.ClickException(f"{backup_path} fails its integrity check: {integrity}")
        init_db()
        # Through SQLite, not a file copy: a WAL left by an unclean stop is
        # replayed first and then overwritten, instead of being replayed onto
        # the restored file at the next start.
        target = connect(current_app.config["DATABASE"], current_app.config["BUSY_TIMEOUT_MS"])
        try:
            source.backup(target)
            target.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            counts = dict(target.execute(
                "SELECT 'cycles', count(*) FROM cycles UNION ALL SELECT 'objectives', count(*) FROM objectives"
                " UNION ALL SELECT 'key_results', count(*) FROM key_results"
                " UNION ALL SELECT 'teams', count(*) FROM teams UNION ALL SELECT 'users', count(*) FROM users"
            ).fetchall())
        finally:
            target.close()
    finally:
        source.close()
    echo_json({"restored": os.path.abspath(current_app.config["DATABASE"]), "from": os.path.abspath(backup_path),
               **counts})


def init_app(app):
    for command in (init_db_command, users_cli, keys_cli, auth_header, backup, restore):
        app.cli.add_command(command)
