"""Key results: /v1/keyresults, and creating and listing them under their objective."""
from decimal import Decimal

from flask import Blueprint, abort

from .cycles import get_cycle_or_404
from ..db import get_db, new_id, utc_now
from ..records import key_result_json
from .conditional import check_if_match, tagged
from .history import record_checkin
from .objectives import get_objective_or_404
from .paging import choice_arg, list_sql, paginate, query_arg
from .responses import deleted
from .schemas import KEY_RESULT_TYPES, key_result_schema, key_result_update_schema, load_body, load_merge_patch

bp = Blueprint("key_results", __name__, url_prefix="/v1")


def get_key_result_or_404(key_result_id):
    row = get_db().execute("SELECT * FROM key_results WHERE id = ?", (key_result_id,)).fetchone()
    if row is None:
        abort(404, "key result not found")
    return row


def get_current_key_result_or_404(key_result_id):
    """The key result about to be changed, once any If-Match names its present ETag."""
    row = get_key_result_or_404(key_result_id)
    check_if_match(key_result_json(row), row["revision"])
    return row


@bp.post("/objectives/<objective_id>/keyresults")
def create_key_result(objective_id):
    """Creates a key result of an objective, with its first check-in: its starting value."""
    objective = get_objective_or_404(objective_id)
    body = load_body(key_result_schema)
    now = utc_now()
    row = get_db().execute(
        """INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence,
               current_value, target_value_min, target_value_max, created_at, modified_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *""",
        (new_id(), objective_id, objective["cycle_id"], body["name"], body["type"],
         body["confidence"], body["current_value"], body["target_value_min"],
         body["target_value_max"], now, now),
    ).fetchone()
    record_checkin(row, row["current_value"], row["confidence"], now)
    return key_result_json(row)


@bp.get("/objectives/<objective_id>/keyresults")
def list_objective_key_results(objective_id):
    """Lists an objective's key results in creation order, a page at a time."""
    conditions, params = type_filter()
    get_objective_or_404(objective_id)
    return paginate(
        "keyresults",
        list_sql("key_results", ("objective_id = ?", *conditions)),
        (objective_id, *params),
        key_result_json,
    )


@bp.get("/keyresults")
def list_key_results():
    """Lists the key results of one cycle's objectives, a page at a time."""
    cycle_id = query_arg("cycle_id", required=True)
    conditions, params = type_filter()
    get_cycle_or_404(cycle_id)
    return paginate(
        "keyresults",
        list_sql("key_results", ("cycle_id = ?", *conditions)),
        (cycle_id, *params),
        key_result_json,
    )


def type_filter():
    """The SQL condition and parameter of the optional type filter, when given."""
    kind = choice_arg("type", KEY_RESULT_TYPES)
    return (["type = ?"], [kind]) if kind is not None else ([], [])


@bp.get("/keyresults/<key_result_id>")
def get_key_result(key_result_id):
    """Returns one key result."""
    row = get_key_result_or_404(key_result_id)
    return tagged(key_result_json(row), row["revision"])


@bp.post("/keyresults/<key_result_id>")
def update_key_result(key_result_id):
    """Replaces a key result's attributes; omitted ones take their zero value."""
    stored = get_current_key_result_or_404(key_result_id)
    return replace_key_result(stored, load_body(key_result_update_schema))


@bp.patch("/keyresults/<key_result_id>")
def patch_key_result(key_result_id):
    """Changes the attributes a JSON Merge Patch names; the result is checked as a full update."""
    stored = get_current_key_result_or_404(key_result_id)
    return replace_key_result(stored, load_merge_patch(key_result_update_schema, key_result_json(stored)))


def replace_key_result(stored, body):
    """Writes a validated full update of a stored key result; a new value or confidence is a check-in."""
    now = utc_now()
    row = get_db().execute(
        """UPDATE key_results SET name = ?, type = ?, confidence = ?, current_value = ?,
               target_value_min = ?, target_value_max = ?, modified_at = ?, revision = revision + 1
           WHERE id = ? RETURNING *""",
        (body["name"], body["type"], body["confidence"], body["current_value"],
         body["target_value_min"], body["target_value_max"], now, stored["id"]),
    ).fetchone()
    if moved(stored, row):
        record_checkin(row, row["current_value"], row["confidence"], now)
    return tagged(key_result_json(row), row["revision"])


def moved(before, after):
    """Whether the current value or the confidence changed, as numbers ("1.0" is "1.00")."""
    return any(Decimal(before[field]) != Decimal(after[field]) for field in ("current_value", "confidence"))


@bp.delete("/keyresults/<key_result_id>")
def delete_key_result(key_result_id):
    """Deletes a key result and its check-ins."""
    get_current_key_result_or_404(key_result_id)
    get_db().execute("DELETE FROM key_results WHERE id = ?", (key_result_id,))
    return deleted()
