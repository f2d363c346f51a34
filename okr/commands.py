"""Admin commands: users, API keys, request signing and backups.

Users can only be created here, not over HTTP.
"""
import csv
import functools
import json
import os
import secrets
import sqlite3
import stat
import tempfile
import urllib.parse
from contextlib import closing

import click
from flask import current_app
from flask.cli import AppGroup, with_appcontext
from marshmallow import ValidationError

from . import serving_lock
from .auth import authorization_header
from .db import (
    SCHEMA_VERSION, connect, create_private_file, init_db, migrate, new_id, schema_version, transaction, utc_now,
)
from .errors import flatten
from .schemas import email_key, user_schema
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


keys_cli = AppGroup("keys", help="Create, list and revoke API keys.")


@keys_cli.command("create")
@click.option("--name", required=True, help="What the key is for, e.g. the client's name.")
@click.option("--json", "as_json", is_flag=True, help='Print {"credential": ..., "secret": ...}.')
@click.option("--read-only", is_flag=True, help="The key may only read: GET, HEAD and OPTIONS.")
@reports_errors
def create_key(name, as_json, read_only):
    """Create an API key; its secret is printed now and never again."""
    if not name.strip():
        raise click.ClickException("--name must not be blank")
    credential, secret = secrets.token_hex(12), secrets.token_urlsafe(32)
    init_db()
    with transaction() as db:
        db.execute(
            "INSERT INTO api_keys (credential, secret, name, created_at, read_only) VALUES (?, ?, ?, ?, ?)",
            (credential, secret, name, utc_now(), int(read_only)),
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
            "SELECT credential, name, created_at, revoked_at, read_only FROM api_keys ORDER BY seq"
        ).fetchall()
    for row in rows:
        if as_json:
            echo_json({**dict(row), "read_only": bool(row["read_only"])})
        else:
            state = f"revoked {row['revoked_at']}" if row["revoked_at"] else "active"
            access = "read-only" if row["read_only"] else "read-write"
            click.echo(f"{row['credential']}  {row['created_at']}  {state:28}  {access:10}  {row['name']}")


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


def folder_problem(folder):
    """What keeps files from being made in folder, in plain words; None if nothing does."""
    try:
        return None if stat.S_ISDIR(os.stat(folder).st_mode) else f"{folder} is not a folder"
    except FileNotFoundError:
        return f"the folder {folder} does not exist"
    except OSError as error:
        return f"{folder}: {error.strerror}"


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
    # A missing folder is refused, not created: a mistyped path would hide the backups.
    folder = os.path.dirname(path) or "."
    problem = folder_problem(folder)
    if problem:
        raise click.ClickException(f"cannot back up to {path}: {problem}")
    # A private temporary file beside the target, renamed only once complete. Its
    # name is never shown: the messages speak of the path the user gave.
    try:
        handle, partial = tempfile.mkstemp(dir=folder, prefix=".okr-backup-")
    except OSError as error:
        raise click.ClickException(f"cannot back up to {path}: {error.strerror}") from None
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
        try:
            os.replace(partial, path)
        except OSError as error:
            raise click.ClickException(f"cannot back up to {path}: {error.strerror}") from None
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    echo_json({"backup": os.path.abspath(path), "bytes": os.path.getsize(path), "integrity_check": integrity})


SQLITE_MAGIC = b"SQLite format 3\x00"  # how every SQLite database file begins


def tables_and_columns(db):
    """{table: {column, ...}} of an open database in creation order, SQLite's own tables left out."""
    tables = db.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY rowid"
    ).fetchall()
    return {name: {column for (column,) in db.execute("SELECT name FROM pragma_table_info(?)", (name,))}
            for (name,) in tables}


def schema_tables():
    """The tables and columns that schema.sql gives a new database."""
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as db:
        migrate(db, current_app.config["SCHEMA"])
        return tables_and_columns(db)


def unreadable(error):
    """What a SQLite error while reading a backup says about it."""
    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF
    if code == sqlite3.SQLITE_NOTADB:
        return "it is not an SQLite database"
    if code == sqlite3.SQLITE_CORRUPT:
        return f"it is damaged: {error}"
    return f"it cannot be read: {error}"


def staged_backup(backup_path, staging):
    """A copy of the backup at staging, checked whole and brought to this release's schema.

    Returns the copy's open connection and the backup's schema version. Anything
    wrong raises a ClickException naming the backup: the live database is not
    opened before this has returned.
    """
    def refusal(problem):
        return click.ClickException(f"cannot restore from {backup_path}: {problem}")

    try:
        with open(backup_path, "rb") as f:
            header = f.read(100)
        lone_wal_file = header[18:20] == b"\x02\x02" and not os.path.exists(f"{backup_path}-wal")
    except OSError as error:
        raise refusal(error.strerror) from None
    if not header:
        raise refusal("it is empty (0 bytes)")
    if not header.startswith(SQLITE_MAGIC):
        raise refusal("it is not an SQLite database")
    db = sqlite3.connect(staging, isolation_level=None)
    try:
        try:
            # mode=ro: the backup is never written, not even to replay a WAL of its own. A
            # WAL-mode file copied without its -wal would still get an empty -wal and -shm
            # beside it: immutable reads it as it is, with no companions.
            uri = f"file:{urllib.parse.quote(os.path.abspath(backup_path))}?mode=ro"
            uri += "&immutable=1" if lone_wal_file else ""
            with closing(sqlite3.connect(uri, uri=True)) as source:
                source.backup(db)
            db.execute("PRAGMA journal_mode = DELETE")  # one file, whose page size VACUUM can change
            integrity = [text for (text,) in db.execute("PRAGMA integrity_check")]
            version = schema_version(db)
            tables = tables_and_columns(db)
        except sqlite3.DatabaseError as error:
            raise refusal(unreadable(error)) from None
        if integrity != ["ok"]:
            lines = [line for text in integrity for line in text.splitlines() if line and not line.startswith("***")]
            lines = lines or integrity
            more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
            raise refusal(f"it fails its integrity check: {lines[0]}{more}")
        if version > SCHEMA_VERSION:
            raise refusal(f"it has schema version {version}, newer than this release knows ({SCHEMA_VERSION}); "
                          "restore it with a newer okr")
        if version < 0:
            raise refusal(f"it has schema version {version}, which no release of okr writes")
        expected = schema_tables()
        missing = [table for table in expected if table not in tables]
        # An older backup may predate a table, which its migration creates as init_db
        # would; without users (migrate's own test) it is no OKR database of any version.
        if missing and (version == SCHEMA_VERSION or "users" in missing):
            raise refusal(f"it is not an OKR database: no table{'s' if len(missing) > 1 else ''} {', '.join(missing)}")

        def check_columns(tables):
            for table, columns in expected.items():
                lacking, unknown = sorted(columns - tables[table]), sorted(tables[table] - columns)
                if lacking:
                    raise refusal(f"it is not an OKR database: table {table} has no column {', '.join(lacking)}")
                if unknown:
                    raise refusal(f"it is not an OKR database: table {table} has an unknown column "
                                  f"{', '.join(unknown)}")

        if version == SCHEMA_VERSION:
            check_columns(tables)
        try:
            migrate(db, current_app.config["SCHEMA"])  # on the copy; also restores any missing index or trigger
        except sqlite3.Error as error:
            raise refusal(f"its migration from schema version {version} failed: {error}") from None
        check_columns(tables_and_columns(db))
        dangling = db.execute("PRAGMA foreign_key_check").fetchall()
        if dangling:
            table, rowid, parent, _ = dangling[0]
            rows = "1 row refers" if len(dangling) == 1 else f"{len(dangling)} rows refer"
            raise refusal(f"it fails its foreign key check: {rows} to a missing row, "
                          f"the first in {table} (rowid {rowid}) to {parent}")
    except BaseException:
        db.close()
        raise
    return db, version


def write_over(stage, database):
    """Writes the checked copy into the live database through SQLite; returns the row counts."""
    create_private_file(database)
    try:
        target = connect(database, current_app.config["BUSY_TIMEOUT_MS"])
    except sqlite3.DatabaseError as error:
        raise click.ClickException(f"cannot restore into {database}: {error}; move it aside, then restore") from None
    try:
        page_size = target.execute("PRAGMA page_size").fetchone()[0]
        if stage.execute("PRAGMA page_size").fetchone()[0] != page_size:
            # SQLite cannot change the page size of a WAL database, which a server
            # may have open anyway: the copy takes the live file's page size.
            stage.execute(f"PRAGMA page_size = {int(page_size)}")
            stage.execute("VACUUM")
        # Through SQLite, not a file copy: a WAL left by an unclean stop is
        # replayed first and then overwritten, instead of being replayed onto
        # the restored file at the next start. A server's connections see the
        # new content at their next transaction.
        stage.backup(target)
        target.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return dict(target.execute(
            "SELECT 'cycles', count(*) FROM cycles UNION ALL SELECT 'objectives', count(*) FROM objectives"
            " UNION ALL SELECT 'key_results', count(*) FROM key_results"
            " UNION ALL SELECT 'teams', count(*) FROM teams UNION ALL SELECT 'users', count(*) FROM users"
        ).fetchall())
    finally:
        target.close()


@click.command("restore")
@click.argument("backup_path", type=click.Path(exists=True, dir_okay=False))
@click.option("--force", is_flag=True, help="Restore even while a server is serving the database.")
@with_appcontext
@reports_errors
def restore(backup_path, force):
    """Replace the database with a backup, once the whole backup has been checked.

    Refused while a server is serving the database, unless --force; the server
    then serves the restored data.
    """
    database = current_app.config["DATABASE"]
    folder = os.path.dirname(os.path.abspath(database))
    problem = folder_problem(folder)
    if problem:
        raise click.ClickException(f"cannot restore into {database}: {problem}")
    with serving_lock.exclusive(database) as alone:
        if not alone and not force:
            raise click.ClickException(f"cannot restore into {database}: a server is serving it; "
                                       "stop the server first, or pass --force to restore under it")
        # Beside the database, where there is room for it; removed whatever happens.
        try:
            scratch = tempfile.TemporaryDirectory(dir=folder, prefix=".okr-restore-")
        except OSError as error:
            raise click.ClickException(f"cannot restore into {database}: {folder}: {error.strerror}") from None
        with scratch:
            stage, version = staged_backup(backup_path, os.path.join(scratch.name, "backup.db"))
            try:
                counts = write_over(stage, database)
            finally:
                stage.close()
    report = {"restored": os.path.abspath(database), "from": os.path.abspath(backup_path)}
    if version < SCHEMA_VERSION:
        report["migrated_from"] = version
    echo_json({**report, **counts})


def init_app(app):
    for command in (init_db_command, users_cli, keys_cli, auth_header, backup, restore):
        app.cli.add_command(command)
