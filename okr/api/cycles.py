"""Delivery cycles: /v1/cycles."""
from flask import Blueprint

from .. import clock
from ..db import get_db
from ..progress import parse_timestamp
from ..records import cycle_details_json, cycle_json
from ..rules.body_schemas import cycle_schema, cycle_update_schema, group_update_schema
from ..store import cycles
from .bodies import load_body, load_merge_patch
from .conditional import current, tagged
from .paging import paginate
from .responses import deleted

bp = Blueprint("cycles", __name__, url_prefix="/v1/cycles")


@bp.post("")
def create_cycle():
    """Creates a cycle, maybe with its dates (answered as the spec's cycle, without them)."""
    body = load_body(cycle_schema)
    row = cycles.create(get_db(), body["name"], body["starts_on"], body["ends_on"])
    return tagged(cycle_json(row), row["revision"])


@bp.get("")
def list_cycles():
    """Lists cycles in creation order, a page at a time."""
    return paginate("cycles", cycles.page, cycle_json)


@bp.get("/<cycle_id>")
def get_cycle(cycle_id):
    """Returns one cycle."""
    row = cycles.get(get_db(), cycle_id)
    return tagged(cycle_json(row), row["revision"])


@bp.post("/<cycle_id>")
def update_cycle(cycle_id):
    """Renames a cycle; its dates stay."""
    current(cycles.get(get_db(), cycle_id), cycle_json)
    body = load_body(group_update_schema)
    row = cycles.rename(get_db(), cycle_id, body["name"])
    return tagged(cycle_json(row), row["revision"])


@bp.patch("/<cycle_id>")
def patch_cycle(cycle_id):
    """Changes the name or dates a JSON Merge Patch names; answers the cycle with its dates and state."""
    stored = current(cycles.get(get_db(), cycle_id), cycle_json)
    body = load_merge_patch(cycle_update_schema, {"name": stored["name"], "starts_on": stored["starts_on"],
                                                  "ends_on": stored["ends_on"]})
    row = cycles.update(get_db(), cycle_id, body)
    today = parse_timestamp(clock.utc_now()).date()
    return tagged(cycle_details_json(row, today), row["revision"], tag_of=cycle_json(row))


@bp.delete("/<cycle_id>")
def delete_cycle(cycle_id):
    """Deletes a cycle with its objectives, their key results and the key results' check-ins."""
    current(cycles.get(get_db(), cycle_id), cycle_json)
    cycles.delete(get_db(), cycle_id)
    return deleted()
