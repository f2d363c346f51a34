"""Objectives: /v1/objectives."""
import sqlite3

from flask import Blueprint, abort
from marshmallow import ValidationError

from .cycles import get_cycle_or_404
from ..db import get_db, new_id, utc_now
from ..records import objective_json
from .conditional import check_if_match, tagged
from .paging import bool_arg, list_sql, paginate, query_arg, uuid_arg
from .responses import deleted
from .schemas import load_body, load_merge_patch, objective_schema, objective_update_schema

bp = Blueprint("objectives", __name__, url_prefix="/v1/objectives")

# Each reference a body may carry: what it names, and how to find it.
REFERENCES = {
    "cycle_id": ("cycle", "SELECT 1 FROM cycles WHERE id = ?"),
    "team_id": ("team", "SELECT 1 FROM teams WHERE id = ?"),
    "assignee_id": ("user", "SELECT 1 FROM users WHERE id = ?"),
    "parent_objective_id": ("objective", "SELECT 1 FROM objectives WHERE id = ?"),
}

# Walks up the alignment chain from a would-be parent; UNION stops on repeats.
ANCESTORS_SQL = """
WITH RECURSIVE ancestors(id) AS (
    SELECT ?
    UNION
    SELECT o.parent_objective_id FROM objectives o JOIN ancestors a ON o.id = a.id
    WHERE o.parent_objective_id IS NOT NULL
)
SELECT 1 FROM ancestors WHERE id = ?
"""


def get_objective_or_404(objective_id):
    row = get_db().execute("SELECT * FROM objectives WHERE id = ?", (objective_id,)).fetchone()
    if row is None:
        abort(404, "objective not found")
    return row


def get_current_objective_or_404(objective_id):
    """The objective about to be changed, once any If-Match names its present ETag."""
    row = get_objective_or_404(objective_id)
    check_if_match(objective_json(row), row["revision"])
    return row


def check_references(body, objective_id=None):
    """400 naming each referenced row that does not exist, or a parent that makes a loop."""
    db = get_db()
    errors = {
        field: f"No {kind} with this id exists."
        for field, (kind, sql) in REFERENCES.items()
        if body[field] is not None and db.execute(sql, (body[field],)).fetchone() is None
    }
    parent = body["parent_objective_id"]
    if objective_id and parent and "parent_objective_id" not in errors:
        if db.execute(ANCESTORS_SQL, (parent, objective_id)).fetchone():
            errors["parent_objective_id"] = "This parent would make the alignment a loop."
    if errors:
        raise ValidationError(errors)


@bp.post("")
def create_objective():
    """Creates an objective."""
    body = load_body(objective_schema)
    now = utc_now()
    row = {**body, "id": new_id(), "created_at": now, "modified_at": now}
    try:
        # No RETURNING: the row is what we wrote, and reading it back would be one
        # more SQLite call, which releases the GIL.
        get_db().execute(
            """INSERT INTO objectives (id, name, description, is_company, is_personal, cycle_id,
                   team_id, assignee_id, parent_objective_id, created_at, modified_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (row["id"], row["name"], row["description"], row["is_company"], row["is_personal"],
             row["cycle_id"], row["team_id"], row["assignee_id"], row["parent_objective_id"],
             now, now),
        )
    except sqlite3.IntegrityError:
        # The foreign keys check the references; only when they refuse one do we
        # look up which, for the 400. (A new objective cannot close a loop.)
        check_references(body)
        raise
    return objective_json(row)


@bp.get("")
def list_objectives():
    """Lists the objectives of one cycle in creation order, a page at a time, maybe filtered."""
    cycle_id = query_arg("cycle_id", required=True)
    conditions, params = objective_filters()
    get_cycle_or_404(cycle_id)
    return paginate(
        "objectives",
        list_sql("objectives", ("cycle_id = ?", *conditions)),
        (cycle_id, *params),
        objective_json,
    )


def objective_filters():
    """The SQL conditions and parameters of the optional list filters given."""
    conditions, params = [], []
    for name in ("team_id", "assignee_id"):
        value = uuid_arg(name)
        if value is not None:
            conditions.append(f"{name} = ?")
            params.append(value)
    parent = uuid_arg("parent_objective_id", words=("none",))
    if parent == "none":
        conditions.append("parent_objective_id IS NULL")
    elif parent is not None:
        conditions.append("parent_objective_id = ?")
        params.append(parent)
    for name in ("is_company", "is_personal"):
        value = bool_arg(name)
        if value is not None:
            conditions.append(f"{name} = ?")
            params.append(int(value))
    return conditions, params


@bp.get("/<objective_id>")
def get_objective(objective_id):
    """Returns one objective."""
    row = get_objective_or_404(objective_id)
    return tagged(objective_json(row), row["revision"])


@bp.post("/<objective_id>")
def update_objective(objective_id):
    """Replaces an objective's attributes; omitted ones take their zero value."""
    get_current_objective_or_404(objective_id)
    return replace_objective(objective_id, load_body(objective_update_schema))


@bp.patch("/<objective_id>")
def patch_objective(objective_id):
    """Changes the attributes a JSON Merge Patch names; the result is checked as a full update."""
    stored = objective_json(get_current_objective_or_404(objective_id))
    return replace_objective(objective_id, load_merge_patch(objective_update_schema, stored))


def replace_objective(objective_id, body):
    """Writes a validated full update of an existing objective, once its references check out."""
    check_references(body, objective_id)
    row = get_db().execute(
        """UPDATE objectives SET name = ?, description = ?, is_company = ?, is_personal = ?,
               cycle_id = ?, team_id = ?, assignee_id = ?, parent_objective_id = ?, modified_at = ?,
               revision = revision + 1
           WHERE id = ? RETURNING *""",
        (body["name"], body["description"], body["is_company"], body["is_personal"],
         body["cycle_id"], body["team_id"], body["assignee_id"], body["parent_objective_id"],
         utc_now(), objective_id),
    ).fetchone()
    return tagged(objective_json(row), row["revision"])


@bp.delete("/<objective_id>")
def delete_objective(objective_id):
    """Deletes an objective and its key results; its children lose their parent."""
    get_current_objective_or_404(objective_id)
    get_db().execute("DELETE FROM objectives WHERE id = ?", (objective_id,))
    return deleted()
