"""Check-ins, the history of a key result: /v1/keyresults/<id>/checkins."""
from flask import Blueprint, abort, request
from marshmallow import ValidationError
from werkzeug.exceptions import BadRequest

from ..db import get_db, utc_now
from ..records import checkin_json
from .history import record_checkin
from .key_results import get_current_key_result_or_404, get_key_result_or_404
from .paging import paginate
from .schemas import checkin_schema, load_body

bp = Blueprint("checkins", __name__, url_prefix="/v1/keyresults/<key_result_id>/checkins")


@bp.post("")
def create_checkin(key_result_id):
    """Records a check-in, which becomes the key result's current value and confidence."""
    if "If-Match" in request.headers:
        get_current_key_result_or_404(key_result_id)  # the precondition needs the stored ETag
        return check_in(key_result_id, load_body(checkin_schema))
    try:
        body = load_body(checkin_schema)
    except (ValidationError, BadRequest):
        get_key_result_or_404(key_result_id)  # an unknown key result is a 404, whatever the body
        raise
    return check_in(key_result_id, body)


def check_in(key_result_id, body):
    """Records a validated check-in (a CheckinSchema body) on a key result, and moves the key result
    to it; the API and the dashboard both record check-ins here. 404 for an unknown key result.

    The key result is not read first: its UPDATE returns what the check-in needs, one statement
    fewer on the busiest write.
    """
    db = get_db()
    author_id = body["author_id"]
    if author_id is not None and db.execute("SELECT 1 FROM users WHERE id = ?", (author_id,)).fetchone() is None:
        raise ValidationError({"author_id": "No user with this id exists."})
    now = utc_now()
    key_result = db.execute(
        """UPDATE key_results SET current_value = ?, confidence = coalesce(?, confidence), modified_at = ?,
               revision = revision + 1
           WHERE id = ? RETURNING seq, id, confidence""",
        (body["value"], body.get("confidence"), now, key_result_id),
    ).fetchone()
    if key_result is None:
        abort(404, "key result not found")
    return record_checkin(key_result, body["value"], key_result["confidence"], now, body["comment"], author_id)


@bp.get("")
def list_checkins(key_result_id):
    """Lists a key result's check-ins in creation order, a page at a time."""
    key_result = get_key_result_or_404(key_result_id)
    return paginate(
        "checkins",
        # Check-ins point at their key result's seq; the JSON names its id.
        "SELECT *, ? AS key_result_id FROM checkins WHERE key_result_seq = ? AND seq > ? ORDER BY seq LIMIT ?",
        (key_result_id, key_result["seq"]),
        checkin_json,
    )
