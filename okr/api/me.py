"""Who signs this request: /v1/me."""
from flask import Blueprint

from ..accounts import access
from ..db import get_db
from ..records import user_json
from ..store import users

bp = Blueprint("me", __name__, url_prefix="/v1/me")


@bp.get("")
def show_me():
    """Returns the user, role and key this request is signed as (all null while auth is off)."""
    actor = access.current_actor()
    if actor is None:
        # Open mode (no key, no password yet): nothing signs requests, and anyone may do anything.
        return {"user": None, "role": None, "key": None}
    user = None if actor.user_id is None else user_json(users.get(get_db(), actor.user_id))
    return {
        "user": user,
        "role": actor.role,
        "key": {"credential": actor.credential, "name": actor.key_name, "read_only": actor.read_only},
    }
