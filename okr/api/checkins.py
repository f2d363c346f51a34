"""Check-ins, the history of a key result: /v1/keyresults/<id>/checkins."""
from functools import partial

from flask import Blueprint, current_app, request
from marshmallow import ValidationError
from werkzeug.exceptions import BadRequest

from ..accounts import access
from ..db import get_db
from ..records import checkin_json, key_result_json
from ..rules.body_schemas import checkin_schema
from ..store import checkins, key_results
from .bodies import load_body
from .conditional import current_tag
from .key_results import current_key_result
from .paging import paginate

bp = Blueprint("checkins", __name__, url_prefix="/v1/keyresults/<key_result_id>/checkins")


@bp.post("")
def create_checkin(key_result_id):
    """Records a check-in, which becomes the key result's current value and confidence."""
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


@bp.get("")
def list_checkins(key_result_id):
    """Lists a key result's check-ins in creation order, a page at a time."""
    key_result = key_results.get(get_db(), key_result_id)
    return paginate("checkins", partial(checkins.page, key_result=key_result), checkin_json)
