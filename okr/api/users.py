"""Users: read-only over HTTP at /v1/users; created with the `okr users` commands."""
from flask import Blueprint, abort

from ..db import get_db
from .paging import paginate

bp = Blueprint("users", __name__, url_prefix="/v1/users")


def user_json(row):
    return {
        "id": row["id"],
        "name": row["name"],
        "email": row["email"],
        "is_active": bool(row["is_active"]),
        "created_at": row["created_at"],
    }


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
    return user_json(get_user_or_404(user_id))
