"""Delivery cycles: /v1/cycles."""
from flask import Blueprint

from ..db import get_db
from ..records import cycle_json
from ..rules.schemas import group_schema, group_update_schema
from ..store import cycles
from .bodies import load_body
from .conditional import current, tagged
from .paging import paginate
from .responses import deleted

bp = Blueprint("cycles", __name__, url_prefix="/v1/cycles")


@bp.post("")
def create_cycle():
    """Creates a cycle."""
    body = load_body(group_schema)
    return cycle_json(cycles.create(get_db(), body["name"]))


@bp.get("")
def list_cycles():
    """Lists cycles in creation order, a page at a time."""
    return paginate("cycles", "SELECT * FROM cycles WHERE seq > ? ORDER BY seq LIMIT ?", (), cycle_json)


@bp.get("/<cycle_id>")
def get_cycle(cycle_id):
    """Returns one cycle."""
    row = cycles.get(get_db(), cycle_id)
    return tagged(cycle_json(row), row["revision"])


@bp.post("/<cycle_id>")
def update_cycle(cycle_id):
    """Renames a cycle."""
    current(cycles.get(get_db(), cycle_id), cycle_json)
    body = load_body(group_update_schema)
    row = cycles.rename(get_db(), cycle_id, body["name"])
    return tagged(cycle_json(row), row["revision"])


@bp.delete("/<cycle_id>")
def delete_cycle(cycle_id):
    """Deletes a cycle with its objectives, their key results and the key results' check-ins."""
    current(cycles.get(get_db(), cycle_id), cycle_json)
    cycles.delete(get_db(), cycle_id)
    return deleted()
