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
    """The row a DELETE ... RETURNING * answered; NotFound when there was none."""
    row = answer.fetchone()
    if row is None:
        raise NotFound(resource)
    return row


def create_group(table, db, name):
    """A new cycle or team."""
    return db.execute(
        f"INSERT INTO {table} (id, name, created_at) VALUES (?, ?, ?) RETURNING *", (new_id(), name, utc_now())
    ).fetchone()


def rename_group(table, resource, db, row_id, name):
    """(before, after): the cycle or team before and after its renaming (its revision moves on); NotFound when
    it does not exist."""
    before = fetch(table, resource, db, row_id)
    after = db.execute(f"UPDATE {table} SET name = ?, revision = revision + 1 WHERE id = ? RETURNING *",
                       (name, row_id)).fetchone()
    return before, after


def count(db, sql, *params):
    """The one number a SELECT count(*) answers."""
    return db.execute(sql, params).fetchone()[0]
