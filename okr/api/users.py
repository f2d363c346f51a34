"""Users: read-only over HTTP at /v1/users; created with the `okr users` commands."""
from flask import Blueprint, abort

from ..db import get_db
from ..records import user_json
from .conditional import tagged
from .paging import paginate

bp = Blueprint("users", __name__, url_prefix="/v1/users")


def get_user_or_404(user_id):
    row = get_db().execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone()
    if row is None:
        abort(404, "user not found")
    return row


@bp.get("")
def list_users():
    """Lists users in creation order, a page at a time."""
    return paginate("users", "SELECT * FROM users WHERE seq > ? ORDER BY seq LIMIT ?", (), user_json)


@bp.get("/<user_id>")
def get_user(user_id):
    """Returns one user."""
    row = get_user_or_404(user_id)
    return tagged(user_json(row), row["revision"])
