"""The activity feed: every write of okr.store records its event here, in the caller's transaction.

So a change is never committed without its event, and an event is never kept for a change that rolled back,
whichever interface made it (the API, the pages, the commands, okr import-simpleokr, the demo). okr import is
the exception: its file brings its rows' events, and it records one, data.imported, for the whole import
(okr.transfer.importer). Each event is also put in the outbox of every webhook whose patterns match its type,
in the same transaction.

Who acts is ACTOR, set for each request by okr.pipeline (the person signed in, or the API key) and for each
command by okr.cli; writes outside both are the system's.
"""
import json
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta, timezone

from .. import clock
from ..clock import new_id
from . import visibility


def system(name):
    """The actor of a change nobody signed in made: a command ("okr import"), or a request while sign-in is
    off ("open access")."""
    return {"type": "system", "id": None, "name": name}


SYSTEM = system("okr")
ACTOR = ContextVar("actor", default=SYSTEM)


@contextmanager
def acting_as(actor):
    """Every event recorded inside is actor's (a dict as current_actor answers)."""
    token = ACTOR.set(actor)
    try:
        yield
    finally:
        ACTOR.reset(token)


def acting_person():
    """The user behind the actor events are recorded for now (person_of), or None."""
    return person_of(ACTOR.get())


def person_of(actor):
    """The user behind an actor: a user's own id, a user's key's user, None for a service key or the system."""
    return actor["id"] if actor["type"] == "user" else None


def changes(before, after):
    """{field: [before, after]} of each field of two JSON shapes of one resource that differs."""
    return {field: [before.get(field), value] for field, value in after.items() if before.get(field) != value}


def dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


ENQUEUE = """INSERT INTO webhook_outbox (hook_seq, event_seq)
    SELECT DISTINCT hook_seq, ? FROM webhook_patterns WHERE ? GLOB pattern"""


def objective_of(db, kind, resource_id, data, parent_id):
    """The id of the objective an event of resource kind belongs to (hidden with it: okr.store.visibility), or
    None. Schema version 17's place_events applies the same rule to the events kept before."""
    if kind == "objective":
        return resource_id
    if kind in ("key_result", "comment") and data.get("objective_id"):
        return data["objective_id"]
    key_result_id = {"key_result": resource_id, "checkin": parent_id or data.get("key_result_id"),
                     "comment": data.get("key_result_id"), "initiative": data.get("key_result_id")}.get(kind)
    if key_result_id is None:
        return None
    row = db.execute("SELECT objective_id FROM key_results WHERE id = ?", (key_result_id,)).fetchone()
    return None if row is None else row[0]


# objective_of's rule in SQL, for events written without their objective (those kept before version 17, and an
# import's).
PLACE = """UPDATE events SET objective_id = CASE resource_type
    WHEN 'objective' THEN resource_id
    WHEN 'key_result' THEN coalesce(json_extract(data, '$.objective_id'),
                                    (SELECT objective_id FROM key_results WHERE id = resource_id))
    WHEN 'comment' THEN coalesce(json_extract(data, '$.objective_id'),
                                 (SELECT objective_id FROM key_results WHERE id = json_extract(data, '$.key_result_id')))
    WHEN 'checkin' THEN (SELECT objective_id FROM key_results
                         WHERE id = coalesce(parent_id, json_extract(data, '$.key_result_id')))
    WHEN 'initiative' THEN (SELECT objective_id FROM key_results WHERE id = json_extract(data, '$.key_result_id'))
END
WHERE seq > ? AND objective_id IS NULL AND json_valid(data)"""


def place(db, after_seq, keep_missing):
    """Gives the events after after_seq written without their objective theirs (objective_of's rule). Those of an
    objective no longer stored are everyone's unless keep_missing, when they stay hidden from all but those who see
    everything (an import cannot tell whether it was hidden)."""
    db.execute(PLACE, (after_seq,))
    if not keep_missing:
        db.execute("UPDATE events SET objective_id = NULL WHERE seq > ? AND objective_id IS NOT NULL "
                   "AND objective_id NOT IN (SELECT id FROM objectives)", (after_seq,))


def record(db, kind, action, resource_id, data, before=None, parent_id=None, cycle_id=None, team_id=None,
           objective_id=...):
    """Records the event "<kind>.<action>" (e.g. objective.updated) of resource kind with resource_id: data is
    the resource as the API shows it, after the change (before it, for a delete); before, given for an update,
    makes the event's changes. parent_id, cycle_id and team_id place it (see schema.sql), and objective_id (by
    default objective_of's) hides it with its objective. Returns its seq."""
    actor = ACTOR.get()
    event_type = f"{kind}.{action}"
    if objective_id is ...:
        objective_id = objective_of(db, kind, resource_id, data, parent_id)
    seq = db.execute(
        """INSERT INTO events (id, type, created_at, actor, person_id, resource_type, resource_id, parent_id,
               cycle_id, team_id, data, changes, objective_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (new_id(), event_type, clock.utc_now(), dumps(actor), person_of(actor), kind, resource_id, parent_id, cycle_id,
         team_id, dumps(data), None if before is None else dumps(changes(before, data)), objective_id),
    ).lastrowid
    db.execute(ENQUEUE, (seq, event_type))
    return seq


def last_change(db, resource_id, field):
    """Who last changed a resource's field and when, as (actor, created_at) of the newest kept event whose changes
    name field (or, when none does, of the resource's newest event); None when none is kept."""
    newest = None
    for row in db.execute("SELECT actor, created_at, changes FROM events WHERE resource_id = ? ORDER BY seq DESC "
                          "LIMIT 100", (resource_id,)):
        newest = newest or row
        if row["changes"] is not None and field in json.loads(row["changes"]):
            newest = row
            break
    return None if newest is None else (json.loads(newest["actor"]), newest["created_at"])


def event_json(row):
    """An event as GET /v1/events shows it."""
    event = {
        "id": row["id"],
        "type": row["type"],
        "created_at": row["created_at"],
        "actor": json.loads(row["actor"]),
        "resource": {"type": row["resource_type"], "id": row["resource_id"]},
        "data": json.loads(row["data"]),
    }
    if row["changes"] is not None:
        event["changes"] = json.loads(row["changes"])
    return event


# A page of GET /v1/events ends once the events in it hold this many bytes of stored JSON: events carry whole
# resources and their changes (tens of KB each), and a thousand of them made one answer tens of MB, held several
# times over in the worker (rows, dicts, the JSON) at once for each request.
PAGE_BYTES = 1 << 20
# An event names rows by id (a UUID), an API key's by its credential; the feed's resource_id and an import's
# events hold ids of up to this many characters.
MAX_ID_LENGTH = 200

# What an event's stored JSON weighs, in bytes (CAST AS BLOB reads the UTF-8 as stored, copying nothing).
STORED_BYTES = ("length(CAST(data AS BLOB)) + coalesce(length(CAST(changes AS BLOB)), 0) "
                "+ length(CAST(actor AS BLOB)) AS stored_bytes")


def seq_of(db, event_id):
    """The seq of the event with this id, or None when none is kept (never was, or pruned)."""
    row = db.execute("SELECT seq FROM events WHERE id = ?", (event_id,)).fetchone()
    return None if row is None else row["seq"]


def page(db, after, size, kind=None, resource_id=None, cycle_id=None, max_bytes=None):
    """A page of the activity feed: (events as event_json shows them, the seq of the last one when more follow,
    else None). At most size events after seq `after`, oldest first, of types beginning with kind, of one
    resource, of one cycle; the page ends early, after the event that brings it past max_bytes (PAGE_BYTES)
    of stored JSON, so that it is never empty but for a feed with nothing more."""
    max_bytes = PAGE_BYTES if max_bytes is None else max_bytes
    conditions, params = ["seq > ?"], [after]
    if kind is not None:
        conditions.append("substr(type, 1, ?) = ?")
        params += [len(kind), kind]
    if resource_id is not None:
        conditions.append("resource_id = ?")
        params.append(resource_id)
    if cycle_id is not None:
        conditions.append("cycle_id = ?")
        params.append(cycle_id)
    seen, seen_params = visibility.of_event()
    if seen != "1":
        conditions.append(seen)
        params += seen_params
    # Read one at a time, until one more than the page holds is shown: a next page exactly when a further row
    # exists that the viewer sees. (No LIMIT: an event whose data says only what they may not see is passed over.)
    cursor = db.execute(f"SELECT *, {STORED_BYTES} FROM events WHERE {' AND '.join(conditions)} ORDER BY seq",
                        params)
    try:
        listed, weight, last, seen = [], 0, None, {}
        for row in cursor:
            shown = visibility.shown_event(db, event_json(row), seen)
            if shown is None:
                continue
            if len(listed) == size or weight >= max_bytes:
                return listed, last
            listed.append(shown)
            weight += row["stored_bytes"]
            last = row["seq"]
        return listed, None
    finally:
        cursor.close()



def prune(db, retention_days, now=None):
    """Deletes the events older than retention_days but those still waiting in a webhook's outbox; how many."""
    moment = now or datetime.now(timezone.utc)
    cutoff = (moment - timedelta(days=retention_days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    # The outbox's rows are in event order: its oldest row holds the oldest event still to deliver.
    return db.execute(
        """DELETE FROM events WHERE created_at < ?
               AND seq < coalesce((SELECT event_seq FROM webhook_outbox ORDER BY seq LIMIT 1), 9223372036854775807)""",
        (cutoff,)).rowcount


def prune_now(db, retention_days):
    """prune in a write transaction of its own, for the server's background process; how many it deleted."""
    db.execute("BEGIN IMMEDIATE")
    try:
        pruned = prune(db, retention_days)
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
    return pruned
