"""Users: read-only over HTTP at /v1/users; created with the `okr users` commands."""
from flask import Blueprint

from ..db import get_db
from ..records import user_json
from ..store import users
from .conditional import tagged
from .paging import paginate

bp = Blueprint("users", __name__, url_prefix="/v1/users")


@bp.get("")
def list_users():
    """Lists users in creation order, a page at a time."""
    return paginate("users", users.page, user_json)


@bp.get("/<user_id>")
def get_user(user_id):
    """Returns one user."""
    row = users.get(get_db(), user_id)
    return tagged(user_json(row), row["revision"])
