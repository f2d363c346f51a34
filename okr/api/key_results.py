"""Key results: /v1/keyresults, and creating and listing them under their objective."""
from functools import partial

from flask import Blueprint

from ..accounts import access
from ..db import get_db
from ..records import key_result_details_json, key_result_json
from ..rules.body_schemas import KEY_RESULT_TYPES, key_result_edit_schema, key_result_schema, key_result_update_schema
from ..store import closing, cycles, key_results, locks, objectives
from .bodies import load_body, load_merge_patch
from .conditional import current, tagged
from .paging import choice_arg, paginate, query_arg
from .responses import deleted

bp = Blueprint("key_results", __name__, url_prefix="/v1")


def current_key_result(key_result_id):
    """The key result about to be changed, once its cycle is open (409) and any If-Match names its present ETag."""
    row = key_results.get(get_db(), key_result_id)
    locks.require_open(get_db(), row["cycle_id"])
    return current(row, key_result_json)


@bp.post("/objectives/<objective_id>/keyresults")
def create_key_result(objective_id):
    """Creates a key result of an objective, with its first check-in: its starting value (and maybe its owner,
    not answered: the spec's key result has none)."""
    objective = objectives.get(get_db(), objective_id)
    locks.require_open(get_db(), objective["cycle_id"])
    body = load_body(key_result_schema)
    row = key_results.create(get_db(), objective, body, access.person_id())
    return tagged(key_result_json(row), row["revision"])


@bp.get("/objectives/<objective_id>/keyresults")
def list_objective_key_results(objective_id):
    """Lists an objective's key results in creation order, a page at a time."""
    kind = choice_arg("type", KEY_RESULT_TYPES)
    objectives.get(get_db(), objective_id)
    return paginate("keyresults", partial(key_results.page, of={"objective_id": objective_id}, kind=kind),
                    key_result_json)


@bp.get("/keyresults")
def list_key_results():
    """Lists the key results of one cycle's objectives, a page at a time."""
    cycle_id = query_arg("cycle_id", required=True)
    kind = choice_arg("type", KEY_RESULT_TYPES)
    cycles.get(get_db(), cycle_id)
    return paginate("keyresults", partial(key_results.page, of={"cycle_id": cycle_id}, kind=kind), key_result_json)


@bp.get("/keyresults/<key_result_id>")
def get_key_result(key_result_id):
    """Returns one key result."""
    row = key_results.get(get_db(), key_result_id)
    return tagged(key_result_json(row), row["revision"])


@bp.post("/keyresults/<key_result_id>")
def update_key_result(key_result_id):
    """Replaces a key result's attributes; omitted ones take their zero value."""
    stored = current_key_result(key_result_id)
    return replace_key_result(stored, load_body(key_result_update_schema))


@bp.patch("/keyresults/<key_result_id>")
def patch_key_result(key_result_id):
    """Changes the attributes (owner_id, unit and the close-out's score too) a JSON Merge Patch names; the result
    is checked as a full update and answered with its owner."""
    stored = current_key_result(key_result_id)
    body = load_merge_patch(key_result_edit_schema, key_result_details_json(stored))
    row = key_results.replace(get_db(), stored, body, access.person_id())
    row = closing.score_key_result(get_db(), row, body["score"])
    return tagged(key_result_details_json(row), row["revision"], tag_of=key_result_json(row))


def replace_key_result(stored, body):
    """Writes a validated full update of a stored key result; a new value or confidence is a check-in."""
    row = key_results.replace(get_db(), stored, body, access.person_id())
    return tagged(key_result_json(row), row["revision"])


@bp.delete("/keyresults/<key_result_id>")
def delete_key_result(key_result_id):
    """Deletes a key result and its check-ins."""
    current_key_result(key_result_id)
    key_results.delete(get_db(), key_result_id)
    return deleted()
