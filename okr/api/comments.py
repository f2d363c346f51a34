"""Comments: /v1/objectives/<id>/comments, /v1/keyresults/<id>/comments and /v1/comments/<id>."""
from functools import partial

from flask import Blueprint
from werkzeug.exceptions import Forbidden

from ..accounts import access
from ..db import get_db
from ..records import comment_json
from ..rules.body_schemas import comment_schema
from ..store import comments, key_results, locks, objectives
from .bodies import load_body, load_merge_patch
from .conditional import current, tagged
from .paging import paginate
from .responses import deleted

bp = Blueprint("comments", __name__, url_prefix="/v1")

NOT_YOURS = "only a comment's author or an admin may change or delete it"


def write_comment(kind, parent_id):
    """Writes the body sent as a comment on the objective or key result (kind), by whoever signs."""
    on = comments.parent(get_db(), kind, parent_id)  # an unknown parent is a 404, whatever the body
    locks.require_open(get_db(), on["cycle_id"])
    body = load_body(comment_schema)
    row = comments.create(get_db(), kind, parent_id, body["body"], access.person_id())
    return tagged(comment_json(row), row["revision"])


def list_comments(column, parent_id):
    """A page of the comments on a parent, oldest first."""
    return paginate("comments", partial(comments.page, column=column, parent_id=parent_id), comment_json)


@bp.post("/objectives/<objective_id>/comments")
def create_objective_comment(objective_id):
    """Comments on an objective; the author is the person who signs (none for a service key)."""
    return write_comment("objective", objective_id)


@bp.get("/objectives/<objective_id>/comments")
def list_objective_comments(objective_id):
    """Lists an objective's comments, oldest first, a page at a time."""
    objectives.get(get_db(), objective_id)
    return list_comments("objective_id", objective_id)


@bp.post("/keyresults/<key_result_id>/comments")
def create_key_result_comment(key_result_id):
    """Comments on a key result; the author is the person who signs (none for a service key)."""
    return write_comment("key_result", key_result_id)


@bp.get("/keyresults/<key_result_id>/comments")
def list_key_result_comments(key_result_id):
    """Lists a key result's comments, oldest first, a page at a time."""
    key_results.get(get_db(), key_result_id)
    return list_comments("key_result_id", key_result_id)


@bp.get("/comments/<comment_id>")
def get_comment(comment_id):
    """Returns one comment."""
    row = comments.get(get_db(), comment_id)
    return tagged(comment_json(row), row["revision"])


def changeable(comment_id):
    """The comment about to be changed: 404 when missing, 403 unless its author or an admin asks, 412 unless any
    If-Match names its present ETag."""
    row = comments.get(get_db(), comment_id)
    locks.require_open(get_db(), row["cycle_id"])
    if not access.may_change_comment(access.current_actor(), row):
        raise Forbidden(NOT_YOURS)
    return current(row, comment_json)


@bp.patch("/comments/<comment_id>")
def patch_comment(comment_id):
    """Changes a comment's body (a JSON Merge Patch)."""
    stored = changeable(comment_id)
    body = load_merge_patch(comment_schema, comment_json(stored))
    row = comments.update(get_db(), stored, body["body"])
    return tagged(comment_json(row), row["revision"])


@bp.delete("/comments/<comment_id>")
def delete_comment(comment_id):
    """Deletes a comment."""
    comments.delete(get_db(), changeable(comment_id))
    return deleted()
