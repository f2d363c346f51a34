"""What the resources' modules share: finding a row by id, and the writes of a named group (cycle, team)."""
from .. import clock
from ..clock import new_id
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
        f"INSERT INTO {table} (id, name, created_at) VALUES (?, ?, ?) RETURNING *", (new_id(), name, clock.utc_now())
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


def keyset_page(table, db, after, limit, columns=None, condition=None):
    """Up to limit rows of table after the row whose seq is after, in seq order (the API's pages), whose
    columns hold the values given ({column: value}, None for NULL), and for which condition, (sql, params), holds
    when given. The columns are this package's own names, never a client's; the values go in as parameters."""
    conditions, params = [], []
    if condition is not None and condition[0] != "1":
        conditions.append(condition[0])
        params += condition[1]
    for column, value in (columns or {}).items():
        if value is None:
            conditions.append(f"{column} IS NULL")
        else:
            conditions.append(f"{column} = ?")
            params.append(value)
    where = " AND ".join((*conditions, "seq > ?"))
    return db.execute(f"SELECT * FROM {table} WHERE {where} ORDER BY seq LIMIT ?", (*params, after, limit)).fetchall()
