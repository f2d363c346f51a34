"""What anyone could sign in with, for open mode (okr.accounts.access): an API key, a password, or a link to choose one.

Each stays once made (a revoked key too) until it becomes a password: an invitation or a reset is deleted
only when used, or when its user's password is set some other way.
"""
# Each kind, the table and column that hold it, and whether a row of it exists.
KINDS = (
    ("key", "api_keys", "credential", "SELECT EXISTS (SELECT 1 FROM api_keys)"),
    ("password", "users", "password_hash", "SELECT EXISTS (SELECT 1 FROM users WHERE password_hash IS NOT NULL)"),
    ("invitation", "invitations", "token_hash", "SELECT EXISTS (SELECT 1 FROM invitations)"),
    ("reset", "password_resets", "token_hash", "SELECT EXISTS (SELECT 1 FROM password_resets)"),
)
EVERY_KIND = "SELECT " + ", ".join(query.removeprefix("SELECT ") for *_, query in KINDS)


def first(db):
    """The first kind the database holds, or None; one statement, asked per request in open mode."""
    row = db.execute(EVERY_KIND).fetchone()
    return next((kind for (kind, *_), exists in zip(KINDS, row) if exists), None)


def first_of_any_version(db):
    """first, for a database not yet migrated, which may be older than some of these tables or columns."""
    for kind, table, column, query in KINDS:
        has_column = db.execute("SELECT EXISTS (SELECT 1 FROM pragma_table_info(?) WHERE name = ?)",
                                (table, column)).fetchone()[0]
        if has_column and db.execute(query).fetchone()[0]:
            return kind
    return None
