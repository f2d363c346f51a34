"""Initiatives: /v1/keyresults/<id>/initiatives and /v1/initiatives/<id>."""
from functools import partial

from flask import Blueprint

from ..db import get_db
from ..records import initiative_json
from ..rules.body_schemas import initiative_schema
from ..store import initiatives, key_results, locks
from .bodies import load_body, load_merge_patch
from .conditional import current, tagged
from .paging import paginate
from .responses import deleted

bp = Blueprint("initiatives", __name__, url_prefix="/v1")


@bp.post("/keyresults/<key_result_id>/initiatives")
def create_initiative(key_result_id):
    """Adds an initiative under a key result."""
    on = initiatives.key_result_of(get_db(), key_result_id)  # an unknown key result is a 404, whatever the body
    locks.require_open(get_db(), on["cycle_id"])
    row = initiatives.create(get_db(), key_result_id, load_body(initiative_schema))
    return tagged(initiative_json(row), row["revision"])


@bp.get("/keyresults/<key_result_id>/initiatives")
def list_initiatives(key_result_id):
    """Lists a key result's initiatives in the order they were made, a page at a time."""
    key_results.get(get_db(), key_result_id)
    return paginate("initiatives", partial(initiatives.page, key_result_id=key_result_id), initiative_json)


@bp.get("/initiatives/<initiative_id>")
def get_initiative(initiative_id):
    """Returns one initiative."""
    row = initiatives.get(get_db(), initiative_id)
    return tagged(initiative_json(row), row["revision"])


def changeable(initiative_id):
    """The initiative about to be changed, once its cycle is open (409) and any If-Match names its ETag (412)."""
    row = initiatives.get(get_db(), initiative_id)
    locks.require_open(get_db(), row["cycle_id"])
    return current(row, initiative_json)


@bp.patch("/initiatives/<initiative_id>")
def patch_initiative(initiative_id):
    """Changes the fields of an initiative a JSON Merge Patch names (its state, say)."""
    stored = changeable(initiative_id)
    row = initiatives.update(get_db(), stored, load_merge_patch(initiative_schema, initiative_json(stored)))
    return tagged(initiative_json(row), row["revision"])


@bp.delete("/initiatives/<initiative_id>")
def delete_initiative(initiative_id):
    """Deletes an initiative."""
    initiatives.delete(get_db(), changeable(initiative_id))
    return deleted()
