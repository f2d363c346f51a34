"""The activity feed: /v1/events, every change oldest first (okr.store.events records them)."""
import re

from flask import Blueprint
from marshmallow import ValidationError

from ..db import get_db
from ..errors import NotFound
from ..store.events import event_json
from .paging import paginate, query_arg, uuid_arg

bp = Blueprint("events", __name__, url_prefix="/v1/events")

# A type prefix: "objective." or "objective.updated", "team.member_"; a resource id: a UUID, or an API key's
# credential (any text up to 200 characters).
TYPE_PREFIX = re.compile(r"[a-z_]+(\.[a-z_]*)?")
RESOURCE_ID = re.compile(r"[^\x00-\x1f]{1,200}")


def text_arg(name, pattern, message):
    """An optional query argument that must match pattern, or None when absent."""
    value = query_arg(name)
    if value is None or pattern.fullmatch(value):
        return value
    raise ValidationError({name: message})


def after_seq(db):
    """The seq of the event `after` names, or None when absent; a 404 when no such event is kept (it may have
    been pruned)."""
    after = uuid_arg("after")
    if after is None:
        return None
    row = db.execute("SELECT seq FROM events WHERE id = ?", (after,)).fetchone()
    if row is None:
        raise NotFound("event")
    return row["seq"]


@bp.get("")
def list_events():
    """Lists the events, oldest first, a page at a time, maybe filtered."""
    db = get_db()
    conditions, params = [], []
    kind = text_arg("type", TYPE_PREFIX, "Must be an event type or its beginning, such as objective. or "
                                         "checkin.created.")
    if kind is not None:
        conditions.append("substr(type, 1, ?) = ?")
        params += [len(kind), kind]
    resource = text_arg("resource_id", RESOURCE_ID, "Must be a resource's id.")
    if resource is not None:
        conditions.append("resource_id = ?")
        params.append(resource)
    cycle = uuid_arg("cycle_id")
    if cycle is not None:
        conditions.append("cycle_id = ?")
        params.append(cycle)
    start = after_seq(db)
    if start is not None:
        conditions.append("seq > ?")
        params.append(start)
    where = " AND ".join((*conditions, "seq > ?"))
    return paginate("events", f"SELECT * FROM events WHERE {where} ORDER BY seq LIMIT ?", params, event_json)
