"""Who may see an objective, in one place: every read of the store that shows objectives, or what hangs under
them (key results, check-ins, comments, initiatives, events), asks here.

An objective's visibility is 'everyone' (the default), 'team' (its team's members), or 'private'; whatever it is,
its assignee, its key results' owners and its creator see it too. VIEWER is the person whose sight limits this
request's reads, or None for whoever sees everything: admins, service keys, sign-in off, and the commands,
workers, webhooks and exports (okr.accounts.access.viewer_limit decides, okr.pipeline sets it per request).
"""
import json
from contextlib import contextmanager
from contextvars import ContextVar

from ..errors import NotFound
from ..rules.body_schemas import VISIBILITIES  # noqa: F401 (the rule's words, with it)

VIEWER = ContextVar("okr_viewer", default=None)
# A viewer who is nobody in particular (no user has this id): whoever holds a board link sees what everyone may.
ANYONE = ""

# True for the objective row {o} when the person (each of the four parameters) may see it. IS, not =: with no
# assignee or no known creator, = is NULL, and NOT NULL is not true either, where "not seen" (hidden_ids) must be
# true exactly when "seen" is false. (A coalesce around it all would do the same, but makes SQLite work out every
# term of the OR for every row, subqueries included, where the WHERE clause stops at the first true one.)
SEES = """({o}.visibility = 'everyone' OR {o}.assignee_id IS ? OR {o}.created_by IS ?
           OR EXISTS (SELECT 1 FROM key_results s WHERE s.objective_id = {o}.id AND s.owner_id = ?)
           OR {o}.visibility = 'team' AND EXISTS (SELECT 1 FROM team_members m
                                                  WHERE m.team_id = {o}.team_id AND m.user_id = ?))"""


def limit_of(person_id, role):
    """The viewer a person is: None (everything) for an admin, else their own id."""
    return None if role == "admin" else person_id


@contextmanager
def viewing_as(person_id):
    """Reads within see what person_id may see (None: everything)."""
    token = VIEWER.set(person_id)
    try:
        yield
    finally:
        VIEWER.reset(token)


def viewer():
    """The person whose sight limits this request's reads, or None (everything)."""
    return VIEWER.get()


def seeing(alias="o", person_id=...):
    """(sql, params): an SQL boolean, true when the objective row alias may be seen by person_id (by default the
    current viewer); ('1', ()) for whoever sees everything."""
    person_id = viewer() if person_id is ... else person_id
    if person_id is None:
        return "1", ()
    return SEES.format(o=alias), (person_id,) * 4


def condition(objective_id_sql, person_id=...):
    """(sql, params): an SQL boolean, true when the objective whose id the SQL expression gives exists and may be
    seen by person_id (by default the current viewer); ('1', ()) for whoever sees everything."""
    person_id = viewer() if person_id is ... else person_id
    if person_id is None:
        return "1", ()
    visible, params = seeing("v", person_id)
    return f"EXISTS (SELECT 1 FROM objectives v WHERE v.id = {objective_id_sql} AND {visible})", params


def of_event(alias="events", person_id=...):
    """(sql, params): an SQL boolean, true when the event row alias may be seen: it belongs to no objective, or to
    one the viewer may see (while it exists: a deleted hidden objective's events stay hidden)."""
    sql, params = condition(f"{alias}.objective_id", person_id)
    return ("1", ()) if sql == "1" else (f"({alias}.objective_id IS NULL OR {sql})", params)


def sees(db, person_id, objective_id):
    """Whether person_id (None: whoever sees everything) may see the objective with this id; False when it does
    not exist."""
    if person_id is None:
        return db.execute("SELECT 1 FROM objectives WHERE id = ?", (objective_id,)).fetchone() is not None
    sql, params = condition("?", person_id)
    return db.execute(f"SELECT {sql}", (objective_id, *params)).fetchone()[0] == 1


def require(db, objective_id, resource="objective"):
    """NotFound naming resource when the current viewer may not see the objective (which exists)."""
    person_id = viewer()
    if person_id is not None and not sees(db, person_id, objective_id):
        raise NotFound(resource)


def hidden_ids(db, cycle_id=None, person_id=...):
    """The ids of the cycle's objectives (None: of every cycle) person_id (by default the current viewer) may not
    see: a set, empty for whoever sees everything."""
    person_id = viewer() if person_id is ... else person_id
    if person_id is None:
        return frozenset()
    visible, params = seeing("o", person_id)
    of_cycle = "o.cycle_id = ? AND" if cycle_id is not None else ""
    return frozenset(row[0] for row in db.execute(
        f"SELECT o.id FROM objectives o WHERE {of_cycle} o.visibility != 'everyone' AND NOT {visible}",
        (*((cycle_id,) if cycle_id is not None else ()), *params)))


def hidden_around(db, cycle_id):
    """hidden_ids of the cycle, and of the objectives its objectives were carried over from (another cycle's): what
    a report of the cycle prunes or shows as none; one query, none for whoever sees everything."""
    if viewer() is None:
        return frozenset()
    visible, params = seeing("o", viewer())
    return frozenset(row[0] for row in db.execute(
        f"""SELECT o.id FROM objectives o
            WHERE (o.cycle_id = ? OR o.id IN (SELECT carried_from_id FROM objectives WHERE cycle_id = ?))
            AND o.visibility != 'everyone' AND NOT {visible}""", (cycle_id, cycle_id, *params)))


def hidden_of(db, objective_ids, person_id=...):
    """Those of objective_ids (a collection) person_id (by default the current viewer) may not see, as a set."""
    person_id = viewer() if person_id is ... else person_id
    if person_id is None or not objective_ids:
        return frozenset()
    visible, params = seeing("o", person_id)
    return frozenset(row[0] for row in db.execute(
        f"""SELECT o.id FROM objectives o WHERE o.id IN (SELECT value FROM json_each(?))
            AND o.visibility != 'everyone' AND NOT {visible}""", (json.dumps(list(objective_ids)), *params)))


def shown_among(row, hidden):
    """An objective's row with its parent (and carried-from objective) None when its id is in hidden, a set of
    hidden_ids; the row itself when neither is."""
    if not hidden:
        return row
    masked = [field for field in OTHER_OBJECTIVES if field in row.keys() and row[field] in hidden]
    return {**dict(row), **dict.fromkeys(masked)} if masked else row


# The fields of an objective that name another objective, which the viewer may not see.
OTHER_OBJECTIVES = ("parent_objective_id", "carried_from_id")


def shown(db, row):
    """An objective's row as the viewer sees it: the parent or carried-from objective they may not see is None.
    The row itself when nothing is hidden (a dict otherwise)."""
    if viewer() is None:
        return row
    return shown_among(row, hidden_of(db, [row[field] for field in OTHER_OBJECTIVES if row[field] is not None]))


def kept_parent(db, stored_parent, sent_parent):
    """The parent an update writes: the stored one when the viewer may not see it and sends none (they were shown
    none), else the one sent."""
    if sent_parent is None and stored_parent is not None and viewer() is not None \
            and not sees(db, viewer(), stored_parent):
        return stored_parent
    return sent_parent


def shown_event(db, event, seen):
    """An event as GET /v1/events shows it (okr.store.events.event_json's) as the viewer sees it: an objective's
    parent or carried-from objective they may not see is None in its data and changes; None (not shown) when that
    was all it changed. seen caches, per page, which objectives they may see ({id: bool})."""
    person_id = viewer()
    if person_id is None or event["resource"]["type"] != "objective":
        return event

    def hides(objective_id):
        if objective_id is None:
            return False
        if objective_id not in seen:
            seen[objective_id] = sees(db, person_id, objective_id)
        return not seen[objective_id]

    data, changes = event["data"], event.get("changes") or {}
    masked = False
    for field in OTHER_OBJECTIVES:
        if hides(data.get(field)):
            data[field] = None
        if field in changes:
            changes[field] = [None if hides(value) else value for value in changes[field]]
            if changes[field][0] == changes[field][1]:
                del changes[field]
                masked = True
    if masked and not set(changes) - {"modified_at"}:
        return None  # it changed only what they may not see: for them, nothing happened
    return event
