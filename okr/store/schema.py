"""The database file, without Flask: a connection with the pragmas every one needs, the schema (schema.sql) with
the migrations from every earlier version and the backup kept before one, a backup's rows copied into a new
database, and a big delete's page cache.

Everything here takes a path or an open connection; okr.db gives the app's requests and commands theirs.
"""
import itertools
import logging
import os
import secrets
import sqlite3
import urllib.parse
from contextlib import closing, contextmanager, suppress
from contextvars import ContextVar

from ..clock import new_id
from . import events, scratch
from ..rules.email_addresses import RULE_WORDS, email_key
from ..rules import names

# SQLite's default: a commit that brings the WAL to this many pages copies it into the database.
# 0 in a server that replicates (okr serve --replicate): Litestream then checkpoints alone.
wal_autocheckpoint = 1000
# The app's logger (Flask names it after the package): what init_db reports shows
# on stderr for the commands and in the server's log.
logger = logging.getLogger("okr")
MIN_SQLITE = (3, 35, 0)


def connect(path, busy_timeout_ms, any_thread=False):
    """Opens a connection with the pragmas every connection needs; any_thread: one thread at a time uses it, not
    always the one that opened it (a pool's)."""
    # isolation_level=None: we issue BEGIN ourselves, so a request is one transaction.
    # timeout= is SQLite's busy timeout: wait for a lock rather than fail at once.
    db = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout_ms / 1000,
                         check_same_thread=not any_thread)
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


class OwnTransactions:
    """Transactions on a connection of its own, outside any request (the background process, the commands): a
    context manager that closes it; reading() and writing() each yield it inside a transaction, committed at the
    end of the block, rolled back should it raise."""

    def __init__(self, path, busy_timeout_ms, any_thread=False):
        self.db = connect(path, busy_timeout_ms, any_thread)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.db.close()

    @contextmanager
    def reading(self):
        with self.transaction("BEGIN") as db:
            yield db

    @contextmanager
    def writing(self):
        with self.transaction("BEGIN IMMEDIATE") as db:
            yield db

    @contextmanager
    def transaction(self, begin):
        self.db.execute(begin)
        try:
            yield self.db
            self.db.execute("COMMIT")
        finally:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")


def leave_checkpoints_to_litestream():
    """From now on, this process's connections (and those of the processes it forks) never checkpoint.

    Litestream ships the WAL's frames before they are copied into the database, and restarts the WAL
    itself once it has: a checkpoint by the server between two of Litestream's could restart the WAL
    under it, and Litestream would have to ship a whole new snapshot. docs/operations.md says more.
    """
    global wal_autocheckpoint
    wal_autocheckpoint = 0


def connect_read_only(path, busy_timeout_ms):
    """A connection that cannot write the database, nor change its journal mode as connect() would."""
    db = sqlite3.connect(f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro", uri=True,
                         isolation_level=None, timeout=busy_timeout_ms / 1000)
    db.row_factory = sqlite3.Row
    return db


# Rows; about what fills the WAL to the 1,000 pages at which SQLite checkpoints.
BULK_CHANGES = 10_000
# Set by a delete of that many rows (bulk_delete) until its request ends: okr.db then commits it without a
# checkpoint, which a thread of its own runs, and sets it back.
big_delete = ContextVar("big_delete", default=False)


@contextmanager
def bulk_delete(db):
    """A 32 MiB page cache for a delete that may be big; if it was, its checkpoint runs in the background.

    A big cascade re-reads index pages that SQLite's default cache keeps
    evicting, and its commit would copy all it wrote from the WAL into the
    database, which the client need not wait for (docs/design.md, "One range
    delete" and "The checkpoint after a big delete", has the figures).
    """
    changes_before = db.total_changes  # counts the rows the foreign keys cascade to
    db.execute("PRAGMA cache_size = -32768")
    try:
        yield
    finally:
        db.execute("PRAGMA cache_size = -2000")
    if db.total_changes - changes_before >= BULK_CHANGES:
        big_delete.set(True)


def create_private_file(path):
    """Creates the database file readable by its owner only: it will hold API secrets."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass


# The schema version this release writes, kept in PRAGMA user_version. Version 0
# is every database made before versions were kept.
SCHEMA_VERSION = 17


def holds_tables(db):
    """Whether the database holds any table. Reads the file's first page, so a health check learns that the
    file answers; an empty file would answer too, but holds none."""
    return db.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' LIMIT 1").fetchone() is not None


def table_columns(db, table):
    """The column names of a table; empty when it does not exist."""
    return {row[1] for row in db.execute("SELECT * FROM pragma_table_info(?)", (table,))}


def add_email_keys_and_read_only_keys(db):
    """Version 1: the users.email_key column, and api_keys.read_only, 0 for every key. The keys themselves
    are version 10's, under the rule of today (okr.rules.email_addresses)."""
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
    """Version 10, before schema.sql: every user's email_key under the email rule of okr.rules.email_addresses (NFC, then
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


def add_units(db):
    """Version 11, before schema.sql: key results get a unit and its position, none yet (as schema.sql has them)."""
    columns = table_columns(db, "key_results")
    if "unit" not in columns:
        db.execute("ALTER TABLE key_results ADD COLUMN unit TEXT CHECK (unit IS NULL OR length(unit) BETWEEN 1 AND 12)")
    if "unit_position" not in columns:
        db.execute("ALTER TABLE key_results ADD COLUMN unit_position TEXT CHECK (unit_position IN ('before', 'after') "
                   "AND unit IS NOT NULL OR unit_position IS NULL)")


def add_closing(db):
    """Version 13, before schema.sql: a cycle's closing (when, by whom), an objective's outcome, score, reflection
    and carried-from link, a key result's score; none yet (as schema.sql has them)."""
    added = {"cycles": ["closed_at TEXT", "closed_by TEXT REFERENCES users (id) ON DELETE SET NULL"],
             "objectives": ["outcome TEXT CHECK (outcome IN ('achieved', 'partly_achieved', 'missed', 'dropped', "
                            "'carried_over'))", "score TEXT", "reflection TEXT CHECK (length(reflection) <= 10000)",
                            "carried_from_id TEXT REFERENCES objectives (id) ON DELETE SET NULL"],
             "key_results": ["score TEXT"]}
    for table, columns in added.items():
        present = table_columns(db, table)
        for column in columns:
            if column.split()[0] not in present:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")


def add_weights_and_initiatives(db):
    """Version 16, before schema.sql: key results get a weight, 1 for every one there was (today's figures), and
    take their progress from their measure, as they did; connected assistants' grants get the refresh token each
    replaced, none yet; objectives get their creator (record_creators fills it after schema.sql). The initiatives
    table is schema.sql's."""
    added = {"key_results": ["weight INTEGER NOT NULL DEFAULT 1 CHECK (weight BETWEEN 0 AND 100)",
                             "progress_from TEXT NOT NULL DEFAULT 'measure' "
                             "CHECK (progress_from IN ('measure', 'initiatives'))"],
             "objectives": ["created_by TEXT REFERENCES users (id) ON DELETE SET NULL"],
             "assistant_grants": ["previous_refresh_hash TEXT"]}
    for table, columns in added.items():
        present = table_columns(db, table)
        for column in columns:
            if present and column.split()[0] not in present:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")


def record_creators(db):
    """Version 16, after schema.sql: each objective's creator is the person of its objective.created event, where
    the activity feed still holds one and that person still exists; else none (unknown)."""
    db.execute(
        """UPDATE objectives SET created_by = (
               SELECT e.person_id FROM events e WHERE e.resource_id = objectives.id AND e.type = 'objective.created'
               AND e.person_id IN (SELECT id FROM users) ORDER BY e.seq LIMIT 1)
           WHERE created_by IS NULL""")


def add_visibility(db):
    """Version 17, before schema.sql: objectives get who may see them, everyone for every one there was (as
    before), and events the objective they belong to (place_events fills it after schema.sql)."""
    added = {"objectives": ["visibility TEXT NOT NULL DEFAULT 'everyone' "
                            "CHECK (visibility IN ('everyone', 'team', 'private'))"],
             "events": ["objective_id TEXT"]}
    for table, columns in added.items():
        present = table_columns(db, table)
        for column in columns:
            if present and column.split()[0] not in present:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")


def place_events(db):
    """Version 17, after schema.sql: each kept event's objective, where that objective still exists: every one was
    seen by everyone, so the events of those deleted are everyone's."""
    events.place(db, after_seq=0, keep_missing=False)


# version -> function(db) that brings a database of the version before up to it,
# inside the migration's transaction: MIGRATIONS before schema.sql runs (columns
# the schema's indexes need), FILLS after it (rows for tables it creates).
# Versions 3, 5, 12, 14 and 15 added the web_secrets, web_sessions, board_links, metric sources' and
# assistants' tables, which schema.sql creates: no step of their own.
MIGRATIONS = {1: add_email_keys_and_read_only_keys, 2: add_revisions, 4: drop_narrow_checkins_index,
              6: add_people, 7: add_dates_and_owners, 8: add_weekly_email_switch,
              9: add_oidc_subjects, 10: key_emails_anew, 11: add_units, 13: add_closing,
              16: add_weights_and_initiatives, 17: add_visibility}
FILLS = {2: record_first_checkins, 10: put_names_on_one_line, 16: record_creators, 17: place_events}


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


def migrate(db, schema_file, before_migrating=None):
    """Brings an open database to SCHEMA_VERSION in one transaction, keeping its rows. Returns the schema version
    it migrated from, or None when there was nothing to migrate (a new database, or one of this version).

    before_migrating(version), if given, runs first when there is, within the transaction: no other writer
    changes the database between it and the migration. Should it raise, nothing is changed.
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
        migrating = existing is not None and version < SCHEMA_VERSION
        if migrating and before_migrating is not None:
            before_migrating(version)
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
    return version if migrating else None


def schema_objects(db):
    """{(type, name): sql} of every table, index, trigger and view in an open database, SQLite's own left out."""
    return {(kind, name): sql for kind, name, sql in db.execute(
        "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY rowid")}


# Kept from the new database rather than copied: a backup that chose the secret that signs session cookies
# could sign a session for any key's credential, and a restore ends every session. An invitation used since
# the backup must not open again, and the sign-in failures are only the last 15 minutes'.
NOT_RESTORED = frozenset({"web_secrets", "web_sessions", "invitations", "sign_in_failures", "password_resets"})


def restored_tables(db):
    """The tables a restore copies from a backup, in schema.sql's order: every one but NOT_RESTORED's."""
    return [name for (kind, name) in schema_objects(db) if kind == "table" and name not in NOT_RESTORED]


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
        tables = restored_tables(target)
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


class BackupFailed(RuntimeError):
    """The backup kept before a migration could not be written; the migration did not run."""


def backup_path(path, version, number=1):
    """Where the backup of the database at path, at schema version, is kept before it is migrated: beside it,
    okr.db.schema-4.bak; should that exist (a backup of an earlier upgrade), okr.db.schema-4.2.bak, and so on."""
    return f"{path}.schema-{version}.bak" if number == 1 else f"{path}.schema-{version}.{number}.bak"


def keep_backup(path, version, busy_timeout_ms):
    """Copies the database at path, as its last commit left it, to a new private file (backup_path), never over an
    existing one; returns the file's path. BackupFailed, with the reason in words, when it cannot.

    Called by migrate's before_migrating, so the caller holds the write lock and the copy is the database the
    migration starts from. Copied through SQLite's backup API from a connection of its own (the one in a write
    transaction may not be a backup's source), into a scratch folder beside the database, then moved into place
    whole: a run killed meanwhile leaves no half backup under the name.
    """
    scratch.remove_leftovers(path, ("upgrade",))
    claimed = placed = None
    try:
        with scratch.scratch_folder(path, "upgrade") as folder:
            partial = os.path.join(folder, "backup.db")
            create_private_file(partial)
            with closing(connect_read_only(path, busy_timeout_ms)) as source, \
                    closing(sqlite3.connect(partial, isolation_level=None)) as target:
                source.backup(target)
                target.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, as okr backup makes
            for number in itertools.count(1):
                try:  # claims the name: an existing file is never written over
                    os.close(os.open(backup_path(path, version, number), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
                except FileExistsError:
                    continue
                claimed = backup_path(path, version, number)
                break
            os.replace(partial, claimed)
            placed = claimed
            sync_folder(os.path.dirname(os.path.abspath(path)))
    except (sqlite3.Error, OSError) as error:
        if claimed is not None and placed is None:
            with suppress(OSError):
                os.remove(claimed)  # the empty file that claimed the name for the copy
        why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise BackupFailed(
            f"cannot keep a backup in {os.path.dirname(os.path.abspath(path))} before migrating from schema "
            f"{version}, so nothing was changed: {why}; free some space there (or let okr write there), or pass "
            "--no-backup (OKR_UPGRADE_BACKUP=0) to migrate without one") from None
    return placed


def sync_folder(folder):
    """Makes a file's new name in folder last a power cut: the migration that follows may remove the only other
    copy of the old rows."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def init_db(path, schema_file, busy_timeout_ms, backup=True):
    """Creates the database at path from schema_file (schema.sql) if it is missing, or migrates it; keeps any data
    already stored. Before migrating an existing database, keeps a backup of it beside it (keep_backup) unless
    backup is False; logs the backup and the migration."""
    if sqlite3.sqlite_version_info < MIN_SQLITE:
        raise RuntimeError(f"SQLite 3.35 or newer is needed (for RETURNING); this Python has {sqlite3.sqlite_version}")
    create_private_file(path)
    kept = []

    def back_up(version):
        if backup:
            kept.append(keep_backup(path, version, busy_timeout_ms))
            logger.info("kept a backup of the database at schema %d: %s (okr restore brings it back)", version,
                        os.path.abspath(kept[0]))

    db = connect(path, busy_timeout_ms)
    try:
        version = migrate(db, schema_file, back_up)
    except BaseException:
        for name in kept:  # the database is as it was: a copy of it is no longer needed
            with suppress(OSError):
                os.remove(name)
        raise
    finally:
        db.close()
    if version is not None:
        logger.info("migrated from schema %d to %d%s", version, SCHEMA_VERSION,
                    "" if backup else " without a backup (--no-backup or OKR_UPGRADE_BACKUP=0)")
    return version
