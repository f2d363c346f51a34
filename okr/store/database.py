"""The database as a whole, for okr backup, okr restore and okr demo: its tables and their columns, the tables
Litestream adds to it, its page size, and how many rows it holds. Any connection will do, a plain sqlite3 one
(rows as tuples) included.
"""
from .schema import table_columns

# Litestream's bookkeeping, in every database it has replicated (and a backup of one): none of okr's data.
LITESTREAM_TABLES = ("_litestream_seq", "_litestream_lock")


def tables_and_columns(db):
    """{table: {column, ...}} of an open database in creation order, SQLite's own tables left out."""
    tables = db.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY rowid"
    ).fetchall()
    return {name: table_columns(db, name) for (name,) in tables}


def drop_litestream_tables(db):
    """Drops the tables of LITESTREAM_TABLES the database has."""
    tables = db.execute(f"SELECT name FROM sqlite_schema WHERE type = 'table' AND name IN "
                        f"({', '.join('?' * len(LITESTREAM_TABLES))})", LITESTREAM_TABLES).fetchall()
    for (table,) in tables:
        db.execute(f'DROP TABLE "{table}"')


def set_page_size(db, page_size):
    """Rewrites the database (not in WAL mode) with pages of page_size bytes."""
    db.execute(f"PRAGMA page_size = {int(page_size)}")
    db.execute("VACUUM")


def counts(db, tables):
    """{table: how many rows it holds} of these tables (this package's own names, never a user's), in their
    order, from one statement."""
    return dict(db.execute(" UNION ALL ".join(f"SELECT '{name}', count(*) FROM {name}" for name in tables)).fetchall())
