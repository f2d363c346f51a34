"""The activity feed's reads for people (okr.reports.activity words them): the newest events by team, person and cycle,
one objective's or key result's history, and the names the events refer to.

Two events of a pair are folded into the other, so that one change reads as one line (okr.reports.activity says which);
both pairs are written one after the other in one transaction, so their seqs are consecutive.
"""
import json

from . import visibility

# Folded: a key_result.updated that a check-in follows (WITH_CHECKIN) and that changed nothing but what a
# check-in moves and the clock (okr.reports.activity.CHECKIN_FIELDS), and a new key result's first check-in.
WITH_CHECKIN = """EXISTS (SELECT 1 FROM events c WHERE c.seq = e.seq + 1 AND c.type = 'checkin.created'
                          AND c.parent_id = e.resource_id)"""
FOLDED = f"""((e.type = 'key_result.updated' AND {WITH_CHECKIN}
               AND NOT EXISTS (SELECT 1 FROM json_each(e.changes)
                               WHERE key NOT IN ('current_value', 'confidence', 'modified_at')))
           OR (e.type = 'checkin.created' AND EXISTS (SELECT 1 FROM events k WHERE k.seq = e.seq - 1
                                                      AND k.type = 'key_result.created'
                                                      AND k.resource_id = e.parent_id)))"""
SELECT = f"SELECT e.*, {WITH_CHECKIN} AS with_checkin FROM events e"
# The columns the feed may be narrowed by.
FILTERS = ("team_id", "person_id", "cycle_id")

# The table of each kind of row an event may name.
TABLES = {"objective": "objectives", "key_result": "key_results", "team": "teams", "cycle": "cycles",
          "user": "users"}


def newest(db, before, limit, team_id=None, person_id=None, cycle_id=None):
    """Up to limit events under seq before, newest first, those folded into another left out, of the team, the
    person (who made them: their sessions and their keys) and the cycle given; each row with with_checkin,
    whether a check-in follows it."""
    seen, seen_params = visibility.of_event("e")
    where, params = ["e.seq < ?", seen], [before, *seen_params]
    for column, value in zip(FILTERS, (team_id, person_id, cycle_id)):
        if value is not None:
            where.append(f"e.{column} = ?")
            params.append(value)
    return db.execute(f"{SELECT} WHERE {' AND '.join(where)} AND NOT {FOLDED} ORDER BY e.seq DESC LIMIT ?",
                      (*params, limit)).fetchall()


def history(db, kind, resource_id, limit):
    """Up to limit of the latest changes of one objective or key result (kind), newest first, as newest has
    them. An objective's: its own events, its comments', and the creation and deletion of its key results; a
    key result's: its own, and those of what belongs to it (its check-ins, its comments)."""
    if kind == "objective":
        where = """(e.resource_id = ?1 OR (e.parent_id = ?1 AND (e.resource_type = 'comment' OR
                   e.type IN ('key_result.created', 'key_result.deleted'))))"""
    else:
        where = "(e.resource_id = ?1 OR e.parent_id = ?1)"
    seen, seen_params = visibility.of_event("e")
    # Numbered: ?1 and ?2 are the resource and the limit, the viewer's from ?3.
    seen = seen.replace("?", "?3") if seen_params else seen
    return db.execute(f"{SELECT} WHERE {where} AND {seen} AND NOT {FOLDED} ORDER BY e.seq DESC LIMIT ?2",
                      (resource_id, limit, *seen_params[:1])).fetchall()


def present_names(db, kind, ids):
    """The id and name of each row of kind (a key of TABLES) with one of these ids that exists (a cursor)."""
    return db.execute(f"SELECT id, name FROM {TABLES[kind]} WHERE id IN (SELECT value FROM json_each(?))",
                      (json.dumps(ids),))


def key_result_units(db, ids):
    """The id, unit and unit_position of each key result with one of these ids that exists (a cursor)."""
    return db.execute("SELECT id, unit, unit_position FROM key_results WHERE id IN (SELECT value FROM json_each(?))",
                      (json.dumps(ids),))


def recorded_names(db, ids):
    """The resource_type, resource_id and name of each of these ids that an event recorded a name of: the name
    its last such event recorded (a cursor)."""
    # A bare column beside max() is the max row's (SQLite): the name its last event recorded.
    return db.execute(
        """SELECT resource_type, resource_id, json_extract(data, '$.name') AS name, max(seq) FROM events
           WHERE resource_id IN (SELECT value FROM json_each(?)) AND json_type(data, '$.name') = 'text'
           GROUP BY resource_id""", (json.dumps(ids),))
