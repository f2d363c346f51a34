"""What the resources' modules share: finding a row by id, and the writes of a named group (cycle, team)."""
from ..db import new_id, utc_now
from ..errors import NotFound


def fetch(table, resource, db, row_id):
    """The row of table with this id; NotFound naming resource when there is none.

    Each module binds the first two: cycles.get(db, cycle_id).
    """
    row = db.execute(f"SELECT * FROM {table} WHERE id = ?", (row_id,)).fetchone()
    if row is None:
        raise NotFound(resource)
    return row


def deleted_or_missing(resource, answer):
    """NotFound unless a DELETE ... RETURNING answered a row."""
    if answer.fetchone() is None:
        raise NotFound(resource)


def create_group(table, db, name):
    """A new cycle or team."""
    return db.execute(
        f"INSERT INTO {table} (id, name, created_at) VALUES (?, ?, ?) RETURNING *", (new_id(), name, utc_now())
    ).fetchone()


def rename_group(table, resource, db, row_id, name):
    """The cycle or team renamed (its revision moves on); NotFound when it does not exist."""
    row = db.execute(
        f"UPDATE {table} SET name = ?, revision = revision + 1 WHERE id = ? RETURNING *", (name, row_id)
    ).fetchone()
    if row is None:
        raise NotFound(resource)
    return row


def count(db, sql, *params):
    """The one number a SELECT count(*) answers."""
    return db.execute(sql, params).fetchone()[0]
