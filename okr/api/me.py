"""Who signs this request: /v1/me; and their inbox: /v1/me/notifications."""
from flask import Blueprint
from werkzeug.exceptions import Forbidden

from ..accounts import access
from ..db import get_db
from ..records import notification_json, user_json
from ..rules.body_schemas import notifications_read_schema
from ..store import notifications, users
from .bodies import load_body
from .paging import bool_arg, encode_token, page_size, page_token_arg

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


NO_INBOX = "only a person has notifications: sign with a key of a user's, not a service key"


def inbox_owner():
    """The id of the person whose inbox this request reads or marks; 403 for a service key or open access."""
    person = access.person_id()
    if person is None:
        raise Forbidden(NO_INBOX)
    return person


@bp.get("/notifications")
def list_my_notifications():
    """Lists the signer's notifications, newest first, a page at a time (unread=true: only the unread)."""
    person = inbox_owner()
    unread = bool_arg("unread")
    before, size = page_token_arg(), page_size()
    rows = notifications.page(get_db(), person, before, size + 1, unread_only=bool(unread))
    more = len(rows) > size
    rows = rows[:size]
    return {"next_page_token": encode_token(rows[-1]["seq"]) if more else None,
            "notifications": [notification_json(row) for row in rows]}


@bp.post("/notifications/read")
def mark_my_notifications_read():
    """Marks the signer's notifications read: all (all: true), or those of ids."""
    person = inbox_owner()
    body = load_body(notifications_read_schema)
    marked = notifications.mark_read(get_db(), person, None if body["all"] else body.get("ids", []))
    return {"marked": marked, "unread": notifications.count_unread(get_db(), person)}
