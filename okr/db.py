"""SQLite: a connection per worker thread, a transaction per request, the schema, and row helpers."""
import fcntl
import logging
import os
import secrets
import sqlite3
import threading
import urllib.parse
import uuid
from contextlib import closing, contextmanager, suppress
from contextvars import ContextVar
from datetime import datetime, timezone
from time import monotonic

from flask import current_app, g, request

from .rules.email_addresses import RULE_WORDS, email_key
from .rules import names

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# SQLite's default: a commit that brings the WAL to this many pages copies it into the database.
# 0 in a server that replicates (okr serve --replicate): Litestream then checkpoints alone.
wal_autocheckpoint = 1000
# The app's logger (Flask names it after the package): what init_db reports shows
# on stderr for the commands and in the server's log.
logger = logging.getLogger("okr")
MIN_SQLITE = (3, 35, 0)


def connect(path, busy_timeout_ms):
    """Opens a connection with the pragmas every connection needs."""
    # isolation_level=None: we issue BEGIN ourselves, so a request is one transaction.
    # timeout= is SQLite's busy timeout: wait for a lock rather than fail at once.
    db = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout_ms / 1000)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA foreign_keys = ON")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    # Connections live as long as the server, so the WAL would otherwise keep
    # its largest size (after a big cycle delete: docs/design.md, What was chosen) until shutdown.
    db.execute("PRAGMA journal_size_limit = 16777216")
    if wal_autocheckpoint != 1000:
        db.execute(f"PRAGMA wal_autocheckpoint = {int(wal_autocheckpoint)}")
    return db


def leave_checkpoints_to_litestream():
    """From now on, this process's connections (and those of the processes it forks) never checkpoint.

    Litestream ships the WAL's frames before they are copied into the database, and restarts the WAL
    itself once it has: a checkpoint by the server between two of Litestream's could restart the WAL
    under it, and Litestream would have to ship a whole new snapshot. docs/operations.md says more.
    """
    global wal_autocheckpoint
    wal_autocheckpoint = 0


# How long a thread's reads go on without checking that the database file is
# still the one its connection opened. Writes always check. The check is one
# stat() call, but it releases the GIL, and under load every release hands the
# CPU to another thread: checking on every read cost a sixth of GET throughput.
READ_RECHECK_SECONDS = 1.0


def get_connection():
    """This request's connection, outside any transaction (for the auth check).

    Each worker thread keeps one connection for the app's life: opening one per
    request cost more than the request's own queries (pragmas, parsing the
    schema, a WAL checkpoint on close). It is never shared between threads.
    """
    if "db" not in g:
        local = current_app.extensions["okr_connections"]
        recently_checked = getattr(local, "db", None) is not None and monotonic() < local.recheck_at
        write = request.method not in READ_METHODS
        if not (recently_checked and not write):
            open_current_file(local, write)
        g.db = local.db
    return g.db


def open_current_file(local, write=False):
    """Gives this thread a connection to the file now at the configured path, writable if it can be."""
    path = current_app.config["DATABASE"]
    identity = file_identity(path)
    if getattr(local, "db", None) is not None and local.identity != identity:
        # The file was deleted or replaced under us: writes to the old one would be lost.
        current_app.logger.warning("database file %s changed on disk; reconnecting", path)
        local.db.close()
        local.db = None
    elif getattr(local, "db", None) is not None and write and local.read_only:
        # Opened while the file was unwritable, so read-only for good: the file may be fixed by now.
        local.db.close()
        local.db = None
    if identity is None:
        raise DatabaseMissing(f"the database file {path} is missing")
    if getattr(local, "db", None) is None:
        local.db = connect(path, current_app.config["BUSY_TIMEOUT_MS"])
        local.identity = identity
        # SQLite opens a file it may not write read-only without a word.
        local.read_only = not os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids)
    local.recheck_at = monotonic() + READ_RECHECK_SECONDS


class DatabaseMissing(RuntimeError):
    """No file at the configured path: never create an empty one in its place."""


class DatabaseUnusable(Exception):
    """The database cannot answer; the argument says why, for an operator."""


def check_database():
    """Raises DatabaseUnusable unless the file is there and this thread's connection answers a query."""
    path = current_app.config["DATABASE"]
    local = current_app.extensions["okr_connections"]
    try:
        open_current_file(local)  # always: a health check must not trust a second-old look
        g.db = local.db
        # Reads the file's first page; an empty file would answer too, but holds no tables.
        if local.db.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' LIMIT 1").fetchone() is None:
            raise DatabaseUnusable(f"the database file {path} holds no tables")
    except DatabaseMissing as error:
        raise DatabaseUnusable(str(error)) from error
    except sqlite3.Error as error:
        forget_connection_after(error)
        raise DatabaseUnusable(f"the database file {path} does not answer: {error}") from error


# After these, a thread's connection may be stuck on a file it can no longer use:
# opened read-only while the file was unwritable, or holding a handle on a broken
# or vanished file. A new connection costs little; a stuck one fails every write.
STALE_CONNECTION_ERRORS = frozenset({
    sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN,
    sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB,
})


def primary_error_code(error):
    """SQLite's primary result code of a sqlite3 error (SQLITE_READONLY for SQLITE_READONLY_DBMOVED), or None."""
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def forget_connection_after(error):
    """Has close_db drop this thread's connection when the error says it may be stuck."""
    if primary_error_code(error) in STALE_CONNECTION_ERRORS and "db" in g:
        g.drop_connection = True


def database_trouble(error):
    """(status, message, retry) for a sqlite3 error that a client may wait out or an operator fix, once
    logged; None for any other. The API and the pages each word it their way."""
    forget_connection_after(error)
    code = primary_error_code(error)
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        # The busy timeout ran out: the client may simply retry.
        current_app.logger.warning("database busy: %s", error)
        return 503, "database busy, retry shortly", True
    if code == sqlite3.SQLITE_FULL:
        current_app.logger.exception("the disk is full")
        return 507, "the disk is full", False
    if code == sqlite3.SQLITE_READONLY:
        # Retrying helps once an operator fixes the file: the connection is reopened.
        current_app.logger.exception("the database file is not writable")
        return 503, "the database file is not writable", True
    return None


def file_identity(path):
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return status.st_dev, status.st_ino


def get_db():
    """This request's connection inside its transaction, begun on first use."""
    db = get_connection()
    if not db.in_transaction:
        # Writers take the write lock up front so that two requests never
        # deadlock upgrading read locks; readers get a consistent snapshot.
        if request.method in READ_METHODS:
            db.execute("BEGIN")
        else:
            begin_write(db)
    return db


def begin_write(db):
    """BEGIN IMMEDIATE, once this process's writers' lock is ours; close_db gives it back.

    Writers in one process queue on this lock rather than on SQLite's: a writer
    that finds SQLite's lock taken sleeps and polls (1, 2, 5, 10 ms and longer),
    so under load the lock often stood free while every waiter slept. With
    several worker processes (okr/cli/workers.py) the one writer of each that
    holds this lock then queues on a flock(2) shared by all of them
    (WritersFile), for the same reason; docs/design.md has the figures. Other
    processes (the background jobs, the admin commands) still meet SQLite's
    busy timeout.
    """
    if g.get("holds_writers_lock"):  # taken once per request, whatever happened to its transaction
        db.execute("BEGIN IMMEDIATE")
        return
    writers = current_app.extensions["okr_writers"]
    if not writers.acquire(timeout=current_app.config["BUSY_TIMEOUT_MS"] / 1000):
        busy = sqlite3.OperationalError("database is locked (waited for this server's other writers)")
        busy.sqlite_errorcode = sqlite3.SQLITE_BUSY
        raise busy
    g.holds_writers_lock = True
    try:
        across = current_app.extensions.get("okr_writers_file")
        if across is not None:
            across.acquire()
        db.execute("BEGIN IMMEDIATE")
    except BaseException:
        release_writers()
        raise


def release_writers():
    if g.pop("holds_writers_lock", False):
        try:
            across = current_app.extensions.get("okr_writers_file")
            if across is not None:
                across.release()
        finally:
            current_app.extensions["okr_writers"].release()


class WritersFile:
    """The writers' turn across the worker processes of one server: flock(2) on DATABASE.writers.lock.

    Taken by the thread that holds its process's writers' lock, so by one thread of each process at most,
    and blocking: the kernel wakes the next waiter the moment the holder lets go, where SQLite's busy
    handler would have it sleep. Reentrant within the process, as that lock is. Opened in each process
    (a flock belongs to the open file, which a fork would share).
    """

    def __init__(self, database):
        self.path = os.path.realpath(database) + ".writers.lock"
        self.descriptor = None
        self.depth = 0

    def acquire(self):
        if self.depth == 0:
            if self.descriptor is None:
                self.descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self.descriptor, fcntl.LOCK_EX)
        self.depth += 1

    def release(self):
        self.depth -= 1
        if self.depth == 0:
            fcntl.flock(self.descriptor, fcntl.LOCK_UN)


# Rows; about what fills the WAL to the 1,000 pages at which SQLite checkpoints.
BULK_CHANGES = 10_000


@contextmanager
def bulk_delete(db):
    """A 32 MiB page cache for a delete that may be big; if it was, its checkpoint runs in the background.

    A cascade over 100,000 objectives re-reads index pages that SQLite's 2 MB
    default cache keeps evicting: the bigger cache makes a big cycle delete a
    third faster. Its commit would also copy the ~120 MB it wrote from the
    WAL into the database, which the client need not wait for.
    """
    changes_before = db.total_changes  # counts the rows the foreign keys cascade to
    db.execute("PRAGMA cache_size = -32768")
    try:
        yield
    finally:
        db.execute("PRAGMA cache_size = -2000")
    if db.total_changes - changes_before >= BULK_CHANGES:
        g.checkpoint_in_background = True


def finish_transaction(response):
    """Commits the request's transaction when it succeeded, rolls it back otherwise."""
    db = g.get("db")
    if db is None or not db.in_transaction:
        return response
    if response.status_code >= 400:
        # A failed rollback is left to close_db, which drops the connection.
        with suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        return response
    try:
        commit(db)
    except sqlite3.Error as error:
        # After-request hooks run past the app's error handlers: hand the failure to
        # them, so that a full disk at commit answers like a full disk anywhere.
        return current_app.make_response(current_app.handle_user_exception(error))
    return response


@contextmanager
def own_write():
    """A short write transaction of its own within a request, committed at the end of the block, after which this
    process's writers' lock is given back: for what must stay whatever the request then answers (a failed
    sign-in's record), written after slow work (a password's hash) rather than around it. A transaction the
    request has open ends with a commit first (its callers have only read); what follows the block runs in a
    new one."""
    db = get_connection()
    if db.in_transaction:
        commit(db)
    begin_write(db)
    try:
        yield db
        commit(db)
    finally:
        if db.in_transaction:
            with suppress(sqlite3.Error):  # a failed rollback is left to close_db, which drops the connection
                db.execute("ROLLBACK")
        release_writers()


def commit(db):
    if not g.get("checkpoint_in_background") or wal_autocheckpoint == 0:  # 0: Litestream checkpoints
        db.execute("COMMIT")
        return
    db.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        db.execute("COMMIT")
    finally:
        db.execute(f"PRAGMA wal_autocheckpoint = {wal_autocheckpoint}")
    # Should the thread fail, nothing is lost: the next commit checkpoints. A
    # write that commits before the thread has begun runs the checkpoint itself.
    args = (current_app.config["DATABASE"], current_app.logger)
    threading.Thread(target=checkpoint, args=args, name="okr-checkpoint", daemon=True).start()


def checkpoint(path, logger):
    """Copies the WAL into the database file without blocking readers or writers."""
    try:
        # mode=rw: should the file have gone meanwhile, never create an empty one.
        with closing(sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=rw", uri=True)) as db:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except sqlite3.Error:
        logger.exception("checkpoint after a bulk delete failed")


def close_db(exception=None):
    """Ends the request's use of its thread's connection; anything uncommitted is rolled back."""
    try:
        end_use_of_connection()
    finally:
        release_writers()


def end_use_of_connection():
    db = g.pop("db", None)
    if db is None:
        return
    if g.pop("drop_connection", False):
        # The next request opens the file afresh, writable again once it is fixed.
        current_app.logger.warning("dropping this thread's database connection after a file error")
        drop_connection(db)
    elif db.in_transaction:
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            # Never hand the next request a connection stuck in a transaction.
            current_app.logger.exception("rollback failed; dropping the connection")
            drop_connection(db)


def drop_connection(db):
    local = current_app.extensions["okr_connections"]
    if local.db is db:
        local.db = None
    db.close()  # rolls back whatever is open


def close_thread_connection():
    """Closes the connection this thread keeps, if any: for code done with a database it will move or remove."""
    db = getattr(current_app.extensions["okr_connections"], "db", None)
    if db is not None:
        drop_connection(db)


def create_private_file(path):
    """Creates the database file readable by its owner only: it will hold API secrets."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass


# The schema version this release writes, kept in PRAGMA user_version. Version 0
# is every database made before versions were kept.
SCHEMA_VERSION = 10


def table_columns(db, table):
    """The column names of a table; empty when it does not exist."""
    return {row[1] for row in db.execute("SELECT * FROM pragma_table_info(?)", (table,))}


def add_email_keys_and_read_only_keys(db):
    """Version 1: the users.email_key column, and api_keys.read_only, 0 for every key. The keys themselves
    are version 10's, under the rule of today (okr.emails)."""
    if "email_key" not in table_columns(db, "users"):
        db.execute("ALTER TABLE users ADD COLUMN email_key TEXT")
    # A database older than API keys gets the table, column included, from schema.sql.
    if table_columns(db, "api_keys") and "read_only" not in table_columns(db, "api_keys"):
        db.execute("ALTER TABLE api_keys ADD COLUMN read_only INTEGER NOT NULL DEFAULT 0 CHECK (read_only IN (0, 1))")


REVISED_TABLES = ("users", "teams", "cycles", "objectives", "key_results")


def add_revisions(db):
    """Version 2, before schema.sql: a revision counter on every resource that has an ETag."""
    for table in REVISED_TABLES:
        if table_columns(db, table) and "revision" not in table_columns(db, table):
            db.execute(f"ALTER TABLE {table} ADD COLUMN revision INTEGER NOT NULL DEFAULT 0")


def record_first_checkins(db):
    """Version 2, after schema.sql made the checkins table: each key result's present value
    becomes its first check-in, dated when it was last modified (when that value was set)."""
    db.create_function("okr_new_id", 0, new_id)
    db.execute(
        """INSERT INTO checkins (id, key_result_seq, value, confidence, comment, author_id, created_at)
           SELECT okr_new_id(), seq, current_value, confidence, NULL, NULL, modified_at
           FROM key_results k
           WHERE NOT EXISTS (SELECT 1 FROM checkins c WHERE c.key_result_seq = k.seq)
           ORDER BY seq"""
    )


def drop_narrow_checkins_index(db):
    """Version 4, before schema.sql: the check-ins' index on (key_result_seq, seq) gives way to
    checkins_history, which also holds value and created_at (schema.sql makes it)."""
    db.execute("DROP INDEX IF EXISTS checkins_by_key_result")


def add_people(db):
    """Version 6, before schema.sql: users get a role (editor for everyone there was) and a password (none
    yet); API keys may belong to a user (every existing key stays a service key). The sessions of version 5
    named a key only: they go, and schema.sql makes the table anew (everyone signs in again)."""
    columns = table_columns(db, "users")
    if "role" not in columns:
        db.execute("ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'editor' "
                   "CHECK (role IN ('admin', 'editor', 'viewer'))")
    if "password_hash" not in columns:
        db.execute("ALTER TABLE users ADD COLUMN password_hash TEXT")
    if table_columns(db, "api_keys") and "user_id" not in table_columns(db, "api_keys"):
        db.execute("ALTER TABLE api_keys ADD COLUMN user_id TEXT REFERENCES users (id) ON DELETE CASCADE")
    db.execute("DROP TABLE IF EXISTS web_sessions")


def add_dates_and_owners(db):
    """Version 7, before schema.sql: cycles get optional dates, key results an optional owner (none yet)."""
    columns = table_columns(db, "cycles")
    for column in ("starts_on", "ends_on"):
        if column not in columns:
            db.execute(f"ALTER TABLE cycles ADD COLUMN {column} TEXT "
                       f"CHECK ({column} IS NULL OR date({column}) IS {column})")
    if "owner_id" not in table_columns(db, "key_results"):
        db.execute("ALTER TABLE key_results ADD COLUMN owner_id TEXT REFERENCES users (id) ON DELETE SET NULL")


def add_weekly_email_switch(db):
    """Version 8, before schema.sql: each user may turn off the weekly emails (on by default). The activity,
    comments, webhooks and email tables are schema.sql's."""
    if "weekly_email" not in table_columns(db, "users"):
        db.execute("ALTER TABLE users ADD COLUMN weekly_email INTEGER NOT NULL DEFAULT 1 "
                   "CHECK (weekly_email IN (0, 1))")


def add_oidc_subjects(db):
    """Version 9, before schema.sql (its index needs them): users get the issuer and subject an identity
    provider knows them by, none yet."""
    columns = table_columns(db, "users")
    for column in ("oidc_issuer", "oidc_subject"):
        if column not in columns:
            db.execute(f"ALTER TABLE users ADD COLUMN {column} TEXT")


def key_emails_anew(db):
    """Version 10, before schema.sql: every user's email_key under the email rule of okr.emails (NFC, then
    the letters A to Z lowercased), which was NFC and full Unicode case folding from version 1 to 9 (and
    SQLite's NOCASE before: a version 0 database gets its first keys here).

    The rule tells apart emails the old one took as one, never the reverse, so two users who both had a
    key never clash. A user left without a key (an earlier clash: find_by_email reaches it by its exact
    email only) gets one unless another user's email has the same key: those who had a key, who are the
    ones found by email today, are keyed first, then the rest by seq. Both users of a clash are kept; the
    later one stays without a key, and a warning names both emails.
    """
    rows = db.execute("SELECT seq, email FROM users ORDER BY email_key IS NULL, seq").fetchall()
    db.execute("UPDATE users SET email_key = NULL")  # keys may move between rows: none is held meanwhile
    holders = {}
    for seq, email in rows:
        key = email_key(email)
        if key in holders:
            logger.warning(
                "email clash on upgrade: users %r and %r have emails that are one under the email rule (%s); "
                "both are kept, but %r has no email key and cannot be found by email until its email is "
                "changed", holders[key], email, RULE_WORDS, email)
            continue
        holders[key] = email
        db.execute("UPDATE users SET email_key = ? WHERE seq = ?", (key, seq))


def put_names_on_one_line(db):
    """Version 10: names refuse control characters, so a name an earlier release took with one (a line break,
    a tab) gets a space in each run of them; else okr restore and okr import would refuse its backups."""
    for seq, name in db.execute("SELECT seq, name FROM users").fetchall():
        if names.problem(name):
            db.execute("UPDATE users SET name = ? WHERE seq = ?", (names.one_line(name) or "?", seq))


# version -> function(db) that brings a database of the version before up to it,
# inside the migration's transaction: MIGRATIONS before schema.sql runs (columns
# the schema's indexes need), FILLS after it (rows for tables it creates).
# Versions 3 and 5 added the web_secrets and web_sessions tables, which schema.sql creates: no step of their own.
MIGRATIONS = {1: add_email_keys_and_read_only_keys, 2: add_revisions, 4: drop_narrow_checkins_index,
              6: add_people, 7: add_dates_and_owners, 8: add_weekly_email_switch,
              9: add_oidc_subjects, 10: key_emails_anew}
FILLS = {2: record_first_checkins, 10: put_names_on_one_line}


class SchemaTooNew(RuntimeError):
    """The database was written by a newer release than this one."""


def schema_statements(path):
    """The statements of schema.sql, one at a time (executescript would commit)."""
    statement = ""
    with open(path, encoding="utf-8") as f:
        for line in f:
            statement += line
            if sqlite3.complete_statement(statement):
                yield statement
                statement = ""
    if statement.strip() and not statement.lstrip().startswith("--"):
        yield statement


def schema_version(db):
    return db.execute("PRAGMA user_version").fetchone()[0]


def migrate(db, schema_file):
    """Brings an open database to SCHEMA_VERSION in one transaction, keeping its rows.

    A database newer than this release is refused and left untouched.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        version = schema_version(db)
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"the database has schema version {version}, newer than this release knows "
                f"({SCHEMA_VERSION}); use a newer okr"
            )
        steps = range(version + 1, SCHEMA_VERSION + 1)
        existing = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'users'").fetchone()
        if existing:
            for step in steps:
                if step in MIGRATIONS:
                    MIGRATIONS[step](db)
        for statement in schema_statements(schema_file):
            db.execute(statement)
        if existing:
            for step in steps:
                if step in FILLS:
                    FILLS[step](db)
        # The dashboard's session-signing secret, made once: never during a request.
        db.execute("INSERT OR IGNORE INTO web_secrets (name, value) VALUES ('session', ?)", (secrets.token_hex(32),))
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")


def schema_objects(db):
    """{(type, name): sql} of every table, index, trigger and view in an open database, SQLite's own left out."""
    return {(kind, name): sql for kind, name, sql in db.execute(
        "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY rowid")}


# Kept from the new database rather than copied: a backup that chose the secret that signs session cookies
# could sign a session for any key's credential, and a restore ends every session. An invitation used since
# the backup must not open again, and the sign-in failures are only the last 15 minutes'.
NOT_RESTORED = frozenset({"web_secrets", "web_sessions", "invitations", "sign_in_failures", "password_resets"})


def copy_rows(source_path, target, check_foreign_keys):
    """Copies every row of every table of target (a new database made by migrate) but NOT_RESTORED's from the
    database at source_path, which has the same tables and columns, in one transaction of target's.

    Rows keep their seq, and each table's AUTOINCREMENT counter the larger of the source's and its
    rows' own, so that no seq is ever handed out twice and lists and page tokens stay as they were.
    check_foreign_keys(target) runs before the commit, and may raise to roll everything back.
    """
    target.execute("ATTACH DATABASE ? AS source", (source_path,))
    target.execute("PRAGMA foreign_keys = OFF")  # an objective may come before its parent
    try:
        target.execute("BEGIN IMMEDIATE")
        tables = [name for (kind, name) in schema_objects(target) if kind == "table" and name not in NOT_RESTORED]
        for table in tables:
            columns = ", ".join(row[1] for row in target.execute("SELECT * FROM pragma_table_info(?)", (table,)))
            target.execute(f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM source.{table} ORDER BY rowid")
        counters = target.execute(
            "SELECT name, seq FROM source.sqlite_sequence WHERE typeof(seq) = 'integer' AND seq > 0").fetchall()
        for table, counter in counters:
            if table in tables:
                target.execute("INSERT INTO main.sqlite_sequence (name, seq) SELECT ?, 0 WHERE NOT EXISTS "
                               "(SELECT 1 FROM main.sqlite_sequence WHERE name = ?)", (table, table))
                target.execute("UPDATE main.sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (counter, table))
        check_foreign_keys(target)
        target.execute("COMMIT")
    finally:
        if target.in_transaction:
            target.execute("ROLLBACK")
        target.execute("PRAGMA foreign_keys = ON")
        target.execute("DETACH DATABASE source")


def init_db():
    """Creates the schema if it is missing, or migrates it; keeps any data already stored."""
    if sqlite3.sqlite_version_info < MIN_SQLITE:
        raise RuntimeError(f"SQLite 3.35 or newer is needed (for RETURNING); this Python has {sqlite3.sqlite_version}")
    path = current_app.config["DATABASE"]
    create_private_file(path)
    db = connect(path, current_app.config["BUSY_TIMEOUT_MS"])
    try:
        migrate(db, current_app.config["SCHEMA"])
    finally:
        db.close()


def init_app(app):
    app.extensions["okr_connections"] = threading.local()
    # Reentrant: a test client that keeps a request's context open may start the next one in the same thread.
    app.extensions["okr_writers"] = threading.RLock()
    app.after_request(finish_transaction)
    app.teardown_appcontext(close_db)


def after_fork(app, across_processes=False):
    """A forked worker's own connections, writers' lock and randomness: none is shared with its parent.

    across_processes: writers also wait for those of the other workers (WritersFile).
    """
    global _id_entropy
    app.extensions["okr_connections"] = threading.local()
    app.extensions["okr_writers"] = threading.RLock()
    app.extensions["okr_writers_file"] = WritersFile(app.config["DATABASE"]) if across_processes else None
    _id_entropy = threading.local()


# Randomness for new ids, read from the OS 256 ids at a time: os.urandom
# releases the GIL, and under load every release hands the CPU to another thread.
_id_entropy = threading.local()


def entropy_chunks():
    while True:
        block = os.urandom(16 * 256)
        for start in range(0, len(block), 16):
            yield block[start:start + 16]


def new_id():
    """A new lowercase UUID4, as uuid.uuid4() would make it."""
    if not hasattr(_id_entropy, "chunks"):
        _id_entropy.chunks = entropy_chunks()
    return str(uuid.UUID(bytes=next(_id_entropy.chunks), version=4))


# The time every write stamps, when set: `okr demo` dates the rows it makes in the past. Unset, the clock's.
stamped_time = ContextVar("stamped_time", default=None)


def utc_now():
    """The current time as RFC 3339 UTC to the second, e.g. 2026-11-22T10:15:30Z."""
    moment = stamped_time.get()
    return (moment or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")


def connect_read_only(path, busy_timeout_ms):
    """A connection that cannot write the database, nor change its journal mode as connect() would."""
    db = sqlite3.connect(f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro", uri=True,
                         isolation_level=None, timeout=busy_timeout_ms / 1000)
    db.row_factory = sqlite3.Row
    return db


@contextmanager
def transaction(write=True):
    """A transaction outside any request, for the admin commands; one that only reads writes nothing."""
    opened = connect if write else connect_read_only
    db = opened(current_app.config["DATABASE"], current_app.config["BUSY_TIMEOUT_MS"])
    try:
        db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        yield db
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
        db.close()
