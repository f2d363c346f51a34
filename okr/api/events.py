"""The activity feed: /v1/events, every change oldest first (okr.store.events records them)."""
import re

from flask import Blueprint
from marshmallow import ValidationError

from ..db import get_db
from ..errors import NotFound
from ..store import events
from .paging import encode_token, page_size, page_token_arg, query_arg, uuid_arg

bp = Blueprint("events", __name__, url_prefix="/v1/events")

# A type prefix: "objective." or "objective.updated", "team.member_"; a resource id: a UUID, or an API key's
# credential (any text up to MAX_ID_LENGTH characters).
TYPE_PREFIX = re.compile(r"[a-z_]+(\.[a-z_]*)?")
RESOURCE_ID = re.compile(rf"[^\x00-\x1f]{{1,{events.MAX_ID_LENGTH}}}")


def text_arg(name, pattern, message):
    """An optional query argument that must match pattern, or None when absent."""
    value = query_arg(name)
    if value is None or pattern.fullmatch(value):
        return value
    raise ValidationError({name: message})


def after_seq(db):
    """The seq of the event `after` names, or 0 when absent; a 404 when no such event is kept (it may have been
    pruned)."""
    after = uuid_arg("after")
    if after is None:
        return 0
    seq = events.seq_of(db, after)
    if seq is None:
        raise NotFound("event")
    return seq


@bp.get("")
def list_events():
    """Lists the events, oldest first, a page at a time, maybe filtered; a page ends early once its events
    weigh about a megabyte (okr.store.events.page), with a token for the rest."""
    db = get_db()
    kind = text_arg("type", TYPE_PREFIX, "Must be an event type or its beginning, such as objective. or "
                                         "checkin.created.")
    resource = text_arg("resource_id", RESOURCE_ID, "Must be a resource's id.")
    cycle = uuid_arg("cycle_id")
    start = after_seq(db)
    # after and page_token both give a start: the later one wins.
    after = max(start, page_token_arg())
    listed, last = events.page(db, after, page_size(), kind=kind, resource_id=resource, cycle_id=cycle)
    return {"next_page_token": None if last is None else encode_token(last), "events": listed}
