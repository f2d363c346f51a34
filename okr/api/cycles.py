"""Delivery cycles: /v1/cycles."""
from flask import Blueprint
from werkzeug.exceptions import Forbidden

from .. import clock
from ..accounts import access
from ..db import get_db
from ..progress import parse_timestamp
from ..records import cycle_details_json, cycle_json
from ..rules.body_schemas import cycle_schema, cycle_update_schema, group_update_schema
from ..reports import closing as closing_report
from ..store import closing, cycles, locks
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


def current_cycle(cycle_id):
    """The cycle about to be changed, once it is open (409) and any If-Match names its present ETag."""
    row = cycles.get(get_db(), cycle_id)
    locks.require_open(get_db(), cycle_id)
    return current(row, cycle_json)


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
    current_cycle(cycle_id)
    body = load_body(group_update_schema)
    row = cycles.rename(get_db(), cycle_id, body["name"])
    return tagged(cycle_json(row), row["revision"])


@bp.patch("/<cycle_id>")
def patch_cycle(cycle_id):
    """Changes the name or dates a JSON Merge Patch names; answers the cycle with its dates and state."""
    stored = current_cycle(cycle_id)
    body = load_merge_patch(cycle_update_schema, {"name": stored["name"], "starts_on": stored["starts_on"],
                                                  "ends_on": stored["ends_on"]})
    row = cycles.update(get_db(), cycle_id, body)
    today = parse_timestamp(clock.utc_now()).date()
    return tagged(cycle_details_json(row, today), row["revision"], tag_of=cycle_json(row))


@bp.delete("/<cycle_id>")
def delete_cycle(cycle_id):
    """Deletes a cycle with its objectives, their key results and the key results' check-ins."""
    current_cycle(cycle_id)
    cycles.delete(get_db(), cycle_id)
    return deleted()


def details(row):
    """A cycle with its dates, state and closing, as PATCH answers it."""
    return tagged(cycle_details_json(row, parse_timestamp(clock.utc_now()).date()), row["revision"],
                  tag_of=cycle_json(row))


@bp.post("/<cycle_id>/close")
def close_cycle(cycle_id):
    """Closes a finished or current cycle: what is not scored takes its suggestion, and the cycle is locked."""
    db = get_db()
    row = cycles.get(db, cycle_id)
    now = parse_timestamp(clock.utc_now())
    closing_report.require_closable(row, now.date())
    return details(closing.close(db, cycle_id, access.person_id(), closing_report.suggestions_for_all(db, row, now)))


@bp.post("/<cycle_id>/reopen")
def reopen_cycle(cycle_id):
    """Reopens a closed cycle (an admin only); its scores stay."""
    if not access.may_reopen_cycles(access.current_actor()):
        raise Forbidden(access.refusal(access.current_actor(), "reopening"))
    return details(closing.reopen(get_db(), cycle_id))
