"""Objectives: /v1/objectives."""
from functools import partial

from flask import Blueprint

from ..db import get_db
from ..records import objective_details_json, objective_json
from ..rules.body_schemas import objective_edit_schema, objective_schema, objective_update_schema
from ..store import closing, cycles, locks, objectives
from .bodies import load_body, load_merge_patch
from .conditional import current, tagged
from .paging import bool_arg, paginate, query_arg, uuid_arg
from .responses import deleted

bp = Blueprint("objectives", __name__, url_prefix="/v1/objectives")


def current_objective(objective_id):
    """The objective about to be changed, once its cycle is open (409) and any If-Match names its present ETag."""
    row = objectives.get(get_db(), objective_id)
    locks.require_open(get_db(), row["cycle_id"])
    return current(row, objective_json)


@bp.post("")
def create_objective():
    """Creates an objective."""
    body = load_body(objective_schema)
    row = objectives.create(get_db(), body)
    return tagged(objective_json(row), row["revision"])


@bp.get("")
def list_objectives():
    """Lists the objectives of one cycle in creation order, a page at a time, maybe filtered."""
    cycle_id = query_arg("cycle_id", required=True)
    filters = objective_filters()
    cycles.get(get_db(), cycle_id)
    return paginate("objectives", partial(objectives.page, cycle_id=cycle_id, filters=filters), objective_json)


def objective_filters():
    """The optional list filters given, as the values their columns must hold (None: parent_objective_id
    none)."""
    filters = {}
    for name in ("team_id", "assignee_id"):
        value = uuid_arg(name)
        if value is not None:
            filters[name] = value
    parent = uuid_arg("parent_objective_id", words=("none",))
    if parent is not None:
        filters["parent_objective_id"] = None if parent == "none" else parent
    for name in ("is_company", "is_personal"):
        value = bool_arg(name)
        if value is not None:
            filters[name] = int(value)
    return filters


@bp.get("/<objective_id>")
def get_objective(objective_id):
    """Returns one objective."""
    row = objectives.get(get_db(), objective_id)
    return tagged(objective_json(row), row["revision"])


@bp.post("/<objective_id>")
def update_objective(objective_id):
    """Replaces an objective's attributes; omitted ones take their zero value."""
    current_objective(objective_id)
    return replace_objective(objective_id, load_body(objective_update_schema))


@bp.patch("/<objective_id>")
def patch_objective(objective_id):
    """Changes the attributes (the close-out's outcome, score and reflection too) a JSON Merge Patch names; the
    result is checked as a full update and answered with the close-out and carried-from link."""
    stored = current_objective(objective_id)
    body = load_merge_patch(objective_edit_schema, objective_details_json(stored))
    db = get_db()
    row = objectives.replace(db, objective_id, body)
    row = closing.score_objective(db, row, body)
    return tagged(objective_details_json(row), row["revision"], tag_of=objective_json(row))


def replace_objective(objective_id, body):
    """Writes a validated full update of an existing objective, once its references check out."""
    row = objectives.replace(get_db(), objective_id, body)
    return tagged(objective_json(row), row["revision"])


@bp.delete("/<objective_id>")
def delete_objective(objective_id):
    """Deletes an objective and its key results; its children lose their parent."""
    current_objective(objective_id)
    objectives.delete(get_db(), objective_id)
    return deleted()
