"""The database file: okr init-db, okr backup and okr restore."""
import os
import shutil
import sqlite3
import stat
import tempfile
import urllib.parse
from contextlib import ExitStack, closing, contextmanager

import click
from flask import current_app
from flask.cli import with_appcontext

from ..db import init_db
from ..server import litestream, serving_lock
from ..store import database as database_rows
from ..store import scratch
from ..store.schema import (SCHEMA_VERSION, connect, connect_read_only, copy_rows, create_private_file, migrate,
                            restored_tables, schema_objects, schema_version)
from ..transfer.importer import check_stored
from ..transfer.rows import Refusal
from .common import echo_json, existing_database, name_database, reports_errors


@click.command("init-db", short_help="Create the database, or bring its schema up to date.")
@with_appcontext
@reports_errors
def init_db_command():
    """Create the database, or bring its schema up to date (safe to run twice)."""
    name_database()
    init_db()
    click.echo(f"initialised {current_app.config['DATABASE']}")


def folder_problem(folder):
    """What keeps files from being made in folder, in plain words; None if nothing does."""
    try:
        return None if stat.S_ISDIR(os.stat(folder).st_mode) else f"{folder} is not a folder"
    except FileNotFoundError:
        return f"the folder {folder} does not exist"
    except OSError as error:
        return f"{folder}: {error.strerror}"


@contextmanager
def new_file_beside(path, doing):
    """Yields (descriptor, path) of a private temporary file beside path, renamed to path when the block
    ends without an error, and removed in any case.

    path must not exist and its folder must: a missing folder is refused, not
    made, since a mistyped path would hide the copies. doing is the verb the
    messages use ("back up", "export"); they name path, never the temporary file.
    """
    if os.path.exists(path):
        raise click.ClickException(f"{path} exists; {doing} to a new file")
    folder = os.path.dirname(path) or "."
    problem = folder_problem(folder)
    if problem:
        raise click.ClickException(f"cannot {doing} to {path}: {problem}")
    try:
        handle, partial = tempfile.mkstemp(dir=folder, prefix=f".okr-{doing.replace(' ', '')}-")
    except OSError as error:
        raise click.ClickException(f"cannot {doing} to {path}: {error.strerror}") from None
    try:
        yield handle, partial
        try:
            os.replace(partial, path)
        except OSError as error:
            raise click.ClickException(f"cannot {doing} to {path}: {error.strerror}") from None
    finally:
        if os.path.exists(partial):
            os.remove(partial)


@click.command("backup", short_help="Copy the database to PATH, safely while it is served.")
@click.argument("path", type=click.Path(dir_okay=False, writable=True))
@with_appcontext
@reports_errors
def backup(path):
    """Copy the database to PATH through SQLite's online backup API, safe while serving."""
    source_path = existing_database()
    with new_file_beside(path, "back up") as (handle, partial):
        os.close(handle)
        source = connect_read_only(source_path, current_app.config["BUSY_TIMEOUT_MS"])
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
    echo_json({"backup": os.path.abspath(path), "bytes": os.path.getsize(path), "integrity_check": integrity})


SQLITE_MAGIC = b"SQLite format 3\x00"  # how every SQLite database file begins


def new_schema():
    """The tables and columns, and every schema object with its SQL, that schema.sql gives a new database."""
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as db:
        migrate(db, current_app.config["SCHEMA"])
        return database_rows.tables_and_columns(db), schema_objects(db)


def foreign_object(objects, expected):
    """What in a migrated backup's schema okr does not make, in words; None when there is nothing.

    Tables are compared by their columns (above) and rebuilt from schema.sql on restore; every index,
    trigger and view must be okr's own, to the letter: a trigger of a backup's own could copy each new
    key's secret where anyone can read it.
    """
    for (kind, name), sql in objects.items():
        if (kind, name) not in expected:
            return f"it has {'an' if kind == 'index' else 'a'} {kind} {name} that okr does not make"
        if kind != "table" and sql != expected[kind, name]:
            return f"its {kind} {name} is not the one okr makes"
    return None


def unreadable(error):
    """What a SQLite error while reading a backup says about it."""
    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF
    if code == sqlite3.SQLITE_NOTADB:
        return "it is not an SQLite database"
    if code == sqlite3.SQLITE_CORRUPT:
        return f"it is damaged: {error}"
    return f"it cannot be read: {error}"


def staged_backup(backup_path, staging, name=None):
    """A copy of the backup at staging, checked whole (its file, its schema's objects, every row by okr
    import's rules) and brought to this release's schema, then rebuilt beside it from schema.sql.

    Returns the rebuilt copy's open connection and the backup's schema version. Anything
    wrong raises a ClickException naming the backup (as name, if given): the live database is not
    opened before this has returned.
    """
    def refusal(problem):
        return click.ClickException(f"cannot restore from {name or backup_path}: {problem}")

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
            database_rows.drop_litestream_tables(db)
            db.execute("PRAGMA journal_mode = DELETE")  # one file, whose page size VACUUM can change
            integrity = [text for (text,) in db.execute("PRAGMA integrity_check")]
            version = schema_version(db)
            tables = database_rows.tables_and_columns(db)
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
        expected, expected_objects = new_schema()
        missing = [table for table in expected if table not in tables]
        # An older backup may predate a table, which its migration creates as init_db
        # would; without users (migrate's own test) it is no OKR database of any version.
        if missing and (version == SCHEMA_VERSION or "users" in missing):
            raise refusal(f"it is not an OKR database: no table{'s' if len(missing) > 1 else ''} {', '.join(missing)}")

        def check_columns(tables):
            for table, columns in expected.items():
                if table not in tables:  # something else of that name (a view) stood in the table's place
                    raise refusal(f"it is not an OKR database: no table {table}")
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
        check_columns(database_rows.tables_and_columns(db))
        check_foreign_keys(db, refusal)
        foreign = foreign_object(schema_objects(db), expected_objects)
        if foreign:
            raise refusal(foreign)
        try:
            check_stored(db)  # every row by okr import's rules, and stored as okr stores it
        except Refusal as problem:
            raise refusal(str(problem)) from None
    finally:
        db.close()
    return rebuilt(staging, refusal), version


def check_foreign_keys(db, refusal):
    dangling = db.execute("PRAGMA foreign_key_check").fetchall()
    if dangling:
        table, rowid, parent, _ = dangling[0]
        rows = "1 row refers" if len(dangling) == 1 else f"{len(dangling)} rows refer"
        raise refusal(f"it fails its foreign key check: {rows} to a missing row, "
                      f"the first in {table} (rowid {rowid}) to {parent}")


def rebuilt(staging, refusal):
    """A new database beside the checked copy, made by schema.sql alone, holding the copy's rows: whatever
    else the backup's tables said (a default, a constraint) stays behind, and so does its session secret
    (sessions end with a restore). Its open connection."""
    fresh = sqlite3.connect(os.path.join(os.path.dirname(staging), "restored.db"), isolation_level=None)
    try:
        migrate(fresh, current_app.config["SCHEMA"])
        try:
            copy_rows(staging, fresh, lambda db: check_foreign_keys(db, refusal))
        except sqlite3.IntegrityError as error:
            raise refusal(f"a row breaks one of okr's rules: {error}") from None
        fresh.execute("PRAGMA journal_mode = DELETE")
    except BaseException:
        fresh.close()
        raise
    return fresh


def write_over(stage, database):
    """Writes the checked copy into the live database through SQLite; returns the row count of every table restored,
    in schema.sql's order."""
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
            database_rows.set_page_size(stage, page_size)
        # Through SQLite, not a file copy: a WAL left by an unclean stop is
        # replayed first and then overwritten, instead of being replayed onto
        # the restored file at the next start. A server's connections see the
        # new content at their next transaction.
        stage.backup(target)
        target.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return database_rows.counts(target, restored_tables(target))
    finally:
        target.close()


@click.command("restore", short_help="Replace the database with a checked backup or replica copy.")
@click.argument("backup_path", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--from-replica", "replica_url", metavar="URL",
              help="Restore from a Litestream replica (file:///DIR or s3://BUCKET/DIR) instead of a backup file.")
@click.option("--at", "moment", metavar="TIME",
              help="With --from-replica: the copy as it was at TIME (e.g. 2026-11-24T18:00:00Z), not the latest.")
@click.option("--force", is_flag=True, help="Restore even while a server is serving the database (and, from a "
                                            "replica, over an existing database).")
@with_appcontext
@reports_errors
def restore(backup_path, replica_url, moment, force):
    """Replace the database with a backup, or with a Litestream replica's copy, once checked whole.

    Refused while a server is serving the database, unless --force; the server
    then serves the restored data. From a replica (--from-replica URL, the
    latest copy or the one at --at TIME), an existing database is only replaced
    with --force too. Either way the copy goes through the same checks.
    """
    if (backup_path is None) == (replica_url is None):
        raise click.UsageError("give a backup file or --from-replica URL (one of them)")
    if moment is not None and replica_url is None:
        raise click.UsageError("--at goes with --from-replica")
    if replica_url is not None:
        try:
            replica = litestream.replica(replica_url, current_app.config.get("REPLICATE_ENDPOINT"))
            litestream.check_environment(replica)
            timestamp = None if moment is None else litestream.restore_time(moment)
        except litestream.ReplicationError as error:
            raise click.ClickException(str(error)) from None
    database = name_database()  # made if it does not exist
    folder = os.path.dirname(os.path.abspath(database))
    problem = folder_problem(folder)
    if problem:
        raise click.ClickException(f"cannot restore into {database}: {problem}")
    with serving_lock.exclusive(database) as alone:
        if not alone and not force:
            raise click.ClickException(f"cannot restore into {database}: a server is serving it; "
                                       "stop the server first, or pass --force to restore under it")
        if replica_url is not None and os.path.exists(database) and not force:
            raise click.ClickException(f"cannot restore into {database}: it exists; move it aside, or pass "
                                       "--force to replace it with the replica's copy")
        # Beside the database, where there is room for it; removed whatever happens, or by the next run.
        scratch.remove_leftovers(database, ("restore",))
        with ExitStack() as stack:
            try:
                staging = stack.enter_context(scratch.scratch_folder(database, "restore"))
            except OSError as error:
                raise click.ClickException(f"cannot restore into {database}: {folder}: {error.strerror}") from None
            if replica_url is None:
                stage, version = staged_backup(backup_path, os.path.join(staging, "backup.db"))
            else:
                copy = replica_copy(database, replica, replica_url, timestamp, staging)
                stage, version = staged_backup(copy, os.path.join(staging, "backup.db"),
                                               name=litestream.shown(replica_url))
            try:
                counts = write_over(stage, database)
            finally:
                stage.close()
        if alone:
            # Litestream's local state described the file as it was: it starts afresh from the restored one.
            shutil.rmtree(litestream.metadata_path(database), ignore_errors=True)
    source = os.path.abspath(backup_path) if replica_url is None else litestream.shown(replica_url)
    report = {"restored": os.path.abspath(database), "from": source}
    if moment is not None:
        report["at"] = timestamp
    if version < SCHEMA_VERSION:
        report["migrated_from"] = version
    echo_json({**report, **counts})


def replica_copy(database, replica, url, timestamp, staging):
    """`litestream restore` of the replica's latest copy (or the one at timestamp) into staging; its path."""
    try:
        binary = litestream.usable_litestream()
    except litestream.ReplicationError as error:
        raise click.ClickException(str(error)) from None
    try:
        return litestream.restore(binary, database, replica, timestamp, staging,
                                  current_app.config["BUSY_TIMEOUT_MS"])
    except litestream.ReplicationError as why:
        raise click.ClickException(f"cannot restore from {litestream.shown(url)}: {why}") from None
