"""Check-ins, the history of a key result: /v1/keyresults/<id>/checkins."""
from functools import partial

from flask import Blueprint, current_app, request
from marshmallow import ValidationError
from werkzeug.exceptions import BadRequest, Forbidden

from ..accounts import access
from ..db import get_db
from ..records import checkin_json, key_result_json
from .. import clock
from ..rules.body_schemas import checkin_correction_schema, checkin_schema
from ..store import checkins, key_results, locks
from .bodies import load_body, load_merge_patch
from .conditional import current_tag
from .key_results import current_key_result
from .paging import paginate
from .responses import deleted

bp = Blueprint("checkins", __name__, url_prefix="/v1")


@bp.post("/keyresults/<key_result_id>/checkins")
def create_checkin(key_result_id):
    """Records a check-in, which becomes the key result's current value and confidence."""
    locks.require_open(get_db(), locks.cycle_of(get_db(), "key_results", key_result_id))
    if "If-Match" in request.headers:
        current_key_result(key_result_id)  # the precondition needs the stored ETag
        return check_in(key_result_id, load_body(checkin_schema))
    try:
        body = load_body(checkin_schema)
    except (ValidationError, BadRequest):
        key_results.get(get_db(), key_result_id)  # an unknown key result is a 404, whatever the body
        raise
    return check_in(key_result_id, body)


def check_in(key_result_id, body):
    """Records a validated check-in (a CheckinSchema body) on a key result; the answer carries the key result's
    new ETag, which the next check-in's or edit's If-Match names."""
    author_id = access.checkin_author(access.current_actor(), body["author_id"])
    checkin = checkins.check_in(get_db(), key_result_id, body["value"], body.get("confidence"), body["comment"],
                                author_id)
    moved = key_results.get(get_db(), key_result_id)
    response = current_app.json.response(checkin)
    response.set_etag(current_tag(key_result_json(moved), moved["revision"]))
    return response


@bp.get("/keyresults/<key_result_id>/checkins")
def list_checkins(key_result_id):
    """Lists a key result's check-ins in creation order, a page at a time."""
    key_result = key_results.get(get_db(), key_result_id)
    return paginate("checkins", partial(checkins.page, key_result=key_result), checkin_json)


@bp.get("/checkins/<checkin_id>")
def get_checkin(checkin_id):
    """Returns one check-in."""
    return checkin_json(checkins.get(get_db(), checkin_id))


def changeable(checkin_id):
    """The check-in about to be corrected or deleted: 404 when missing, 403 unless access allows this actor."""
    row = checkins.get(get_db(), checkin_id)
    locks.require_open(get_db(), row["cycle_id"])
    refusal = access.checkin_change_refusal(access.current_actor(), row, clock.utc_now())
    if refusal is not None:
        raise Forbidden(refusal)
    return row


@bp.patch("/checkins/<checkin_id>")
def patch_checkin(checkin_id):
    """Corrects a check-in's value, confidence or comment (a JSON Merge Patch); the key result follows its latest
    remaining check-in."""
    stored = changeable(checkin_id)
    body = load_merge_patch(checkin_correction_schema, {name: stored[name] for name in ("value", "confidence",
                                                                                         "comment")})
    return checkin_json(checkins.correct(get_db(), stored, body["value"], body["confidence"], body["comment"]))


@bp.delete("/checkins/<checkin_id>")
def delete_checkin(checkin_id):
    """Deletes a check-in; the key result follows its latest remaining check-in."""
    checkins.delete(get_db(), changeable(checkin_id))
    return deleted()
