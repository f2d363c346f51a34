"""The app's database: a connection per worker thread, a transaction per request, a transaction for a command, and
SQLite's errors as the project's own. The one part of the database that knows Flask; the file itself (its pragmas,
schema and migrations) is okr.store.schema's.
"""
import fcntl
import os
import sqlite3
import threading
import urllib.parse
from contextlib import closing, contextmanager, suppress
from time import monotonic

from flask import current_app, g

from . import clock
from .errors import CycleClosed, DatabaseBusy, DatabaseReadOnly, DatabaseUnusable, DiskFull
from .store import schema
from .store.schema import connect, connect_read_only


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
        write = request_writes()
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


def check_database():
    """Raises DatabaseUnusable unless the file is there and this thread's connection answers a query."""
    path = current_app.config["DATABASE"]
    local = current_app.extensions["okr_connections"]
    try:
        open_current_file(local)  # always: a health check must not trust a second-old look
        g.db = local.db
        if not schema.holds_tables(local.db):
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


# What schema.sql's triggers say when a write would change a closed cycle.
CLOSED_CYCLE_TRIGGER = "cycle is closed"


def project_error(error):
    """The project's own error (okr.errors) for a sqlite3 error that a client may wait out or an operator fix, once
    logged; any other error as it is. The pipeline asks before the API and the pages word a failure their way."""
    if not isinstance(error, sqlite3.Error):
        return error
    if isinstance(error, sqlite3.IntegrityError) and str(error) == CLOSED_CYCLE_TRIGGER:
        # A write the store let through, refused by schema.sql's triggers: a closed cycle is locked.
        return CycleClosed()
    forget_connection_after(error)
    code = primary_error_code(error)
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        # The busy timeout ran out: the client may simply retry.
        current_app.logger.warning("database busy: %s", error)
        trouble = DatabaseBusy()
    elif code == sqlite3.SQLITE_FULL:
        current_app.logger.exception("the disk is full")
        trouble = DiskFull()
    elif code == sqlite3.SQLITE_READONLY:
        # Retrying helps once an operator fixes the file: the connection is reopened.
        current_app.logger.exception("the database file is not writable")
        trouble = DatabaseReadOnly()
    else:
        return error
    trouble.__cause__ = error
    return trouble


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
        if request_writes():
            begin_write(db)
        else:
            db.execute("BEGIN")
    return db


def reads_first(view):
    """Marks a view that reads, does slow work (a metric source read over the network), then writes in own_write:
    its request's transaction only reads until then, and holds no write lock (okr.pipeline.request_writes)."""
    view.reads_first = True
    return view


def finish_reading():
    """Ends the request's reading transaction, so that no snapshot is held over slow work."""
    db = g.get("db")
    if db is not None and db.in_transaction:
        db.execute("COMMIT")


class InRequest:
    """okr.sources.syncing's Transactions inside a reads_first request: its reading transaction (ended before
    the slow work), then writes of their own (own_write)."""

    @contextmanager
    def reading(self):
        yield get_db()
        finish_reading()

    @contextmanager
    def writing(self):
        with own_write() as db:
            yield db


def request_writes():
    """Whether the request now served may write: the pipeline decides (okr.pipeline.request_writes), from its method."""
    return current_app.extensions["okr_request_writes"]()


def begin_write(db):
    """BEGIN IMMEDIATE, once this process's writers' lock is ours; close_db gives it back.

    Writers in one process queue on this lock rather than on SQLite's: a writer
    that finds SQLite's lock taken sleeps and polls (1, 2, 5, 10 ms and longer),
    so under load the lock often stood free while every waiter slept. With
    several worker processes (okr/server/workers.py) the one writer of each that
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
    if not schema.big_delete.get() or schema.wal_autocheckpoint == 0:  # 0: Litestream checkpoints
        db.execute("COMMIT")
        return
    db.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        db.execute("COMMIT")
    finally:
        db.execute(f"PRAGMA wal_autocheckpoint = {schema.wal_autocheckpoint}")
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
    schema.big_delete.set(False)
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


def init_db():
    """Creates the app's database if it is missing, or migrates it (okr.store.schema.init_db) after keeping a backup
    unless UPGRADE_BACKUP is off; keeps any data already stored. Returns the schema version it migrated from, or
    None."""
    config = current_app.config
    return schema.init_db(config["DATABASE"], config["SCHEMA"], config["BUSY_TIMEOUT_MS"], config["UPGRADE_BACKUP"])


def init_app(app, request_writes):
    """request_writes(): whether the request now served may write; asked as its connection opens (a writer's checks
    the file) and its transaction begins (a writer's takes the write lock)."""
    app.extensions["okr_request_writes"] = request_writes
    app.extensions["okr_connections"] = threading.local()
    # Reentrant: a test client that keeps a request's context open may start the next one in the same thread.
    app.extensions["okr_writers"] = threading.RLock()
    app.after_request(finish_transaction)
    app.teardown_appcontext(close_db)


def after_fork(app, across_processes=False):
    """A forked worker's own connections, writers' lock and randomness: none is shared with its parent.

    across_processes: writers also wait for those of the other workers (WritersFile).
    """
    app.extensions["okr_connections"] = threading.local()
    app.extensions["okr_writers"] = threading.RLock()
    app.extensions["okr_writers_file"] = WritersFile(app.config["DATABASE"]) if across_processes else None
    clock.fresh_ids()


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
