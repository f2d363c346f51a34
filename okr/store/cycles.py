"""Delivery cycles: created (maybe with dates), renamed or edited, copied to a new cycle, deleted."""
import json
from functools import partial

from .. import clock
from ..clock import new_id
from ..rules.body_schemas import DEFAULT_CONFIDENCE
from ..records import cycle_dates_json, objective_json
from . import events, locks, visibility
from .checkins import record, with_team
from .common import count, deleted_or_missing, fetch, keyset_page, rename_group
from .key_results import key_result_created
from .schema import bulk_delete

get = partial(fetch, "cycles", "cycle")


def create(db, name, starts_on=None, ends_on=None):
    """A new cycle (its row), maybe with its dates (ISO dates, checked by CycleSchema)."""
    row = db.execute(
        "INSERT INTO cycles (id, name, created_at, starts_on, ends_on) VALUES (?, ?, ?, ?, ?) RETURNING *",
        (new_id(), name, clock.utc_now(), starts_on, ends_on),
    ).fetchone()
    events.record(db, "cycle", "created", row["id"], cycle_dates_json(row), cycle_id=row["id"])
    return row


def updated(db, before, row):
    events.record(db, "cycle", "updated", row["id"], cycle_dates_json(row), before=cycle_dates_json(before),
                  cycle_id=row["id"])
    return row


def rename(db, cycle_id, name):
    """The cycle renamed (its row; its revision moves on); NotFound when it does not exist, CycleClosed when it is
    closed."""
    locks.require_open(db, cycle_id)
    return updated(db, *rename_group("cycles", "cycle", db, cycle_id, name))


def update(db, cycle_id, values):
    """The cycle with a CycleUpdateSchema's name and dates (its revision moves on); NotFound when it does not exist,
    CycleClosed when it is closed."""
    before = get(db, cycle_id)
    locks.require_open(db, cycle_id)
    row = db.execute(
        "UPDATE cycles SET name = ?, starts_on = ?, ends_on = ?, revision = revision + 1 WHERE id = ? RETURNING *",
        (values["name"], values["starts_on"], values["ends_on"], cycle_id),
    ).fetchone()
    return updated(db, before, row)


def doomed(db, cycle_id):
    """What deleting the cycle deletes with it: {"objectives", "key_results", "checkins": n}."""
    return {
        "objectives": count(db, "SELECT count(*) FROM objectives WHERE cycle_id = ?", cycle_id),
        "key_results": count(db, "SELECT count(*) FROM key_results WHERE cycle_id = ?", cycle_id),
        "checkins": count(db, """SELECT count(*) FROM key_results k JOIN checkins c ON c.key_result_seq = k.seq
                                 WHERE k.cycle_id = ?""", cycle_id),
    }


def copy(db, source_id, values, author_id=None, objective_ids=None, key_result_ids=None):
    """A new cycle (its row) from a CycleUpdateSchema's values, with copies of the source cycle's objectives and
    key results; the caller's transaction makes it all or nothing.

    objective_ids and key_result_ids pick what goes (ids of the source cycle's rows; None: every one the viewer may
    see: those hidden from them stay behind): a key result goes only with its objective. A copy keeps its source's
    visibility and maker, so the same people see it. Each copy's carried_from_id is the objective it was copied from.
    An objective keeps its name, description, kind, team and assignee; its parent is the copy of its parent when
    that is copied too, else the same parent (an objective of the source cycle left behind, or of another cycle,
    a year's, say). A key result keeps its name, type, targets and owner and starts from the source's current
    value (a milestone not done), with the default confidence, its first check-in by author_id.
    """
    get(db, source_id)
    cycle = create(db, values["name"], values["starts_on"], values["ends_on"])
    now = clock.utc_now()
    seen, params = visibility.seeing("objectives")
    sources = [row for row in db.execute(f"SELECT * FROM objectives WHERE cycle_id = ? AND {seen} ORDER BY seq",
                                         (source_id, *params)).fetchall()
               if objective_ids is None or row["id"] in objective_ids]
    copies = {row["id"]: new_id() for row in sources}
    # A copy is seen by whoever saw its source: the same visibility, team, assignee, key results' owners and maker.
    db.executemany(
        """INSERT INTO objectives (id, name, description, is_company, is_personal, cycle_id, team_id, assignee_id,
               parent_objective_id, created_at, modified_at, carried_from_id, visibility, created_by)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [(copies[row["id"]], row["name"], row["description"], row["is_company"], row["is_personal"], cycle["id"],
          row["team_id"], row["assignee_id"],
          None if row["parent_objective_id"] in copies else row["parent_objective_id"], now, now, row["id"],
          row["visibility"], row["created_by"])
         for row in sources],
    )
    # Parents within the cycle once every copy exists: a parent may have been made after its child.
    db.executemany("UPDATE objectives SET parent_objective_id = ? WHERE id = ?",
                   [(copies[row["parent_objective_id"]], copies[row["id"]])
                    for row in sources if row["parent_objective_id"] in copies])
    for copied in db.execute("SELECT * FROM objectives WHERE cycle_id = ? ORDER BY seq", (cycle["id"],)).fetchall():
        events.record(db, "objective", "created", copied["id"], objective_json(copied), cycle_id=cycle["id"],
                      team_id=copied["team_id"])
    for row in db.execute("SELECT * FROM key_results WHERE cycle_id = ? ORDER BY seq", (source_id,)).fetchall():
        if row["objective_id"] not in copies or key_result_ids is not None and row["id"] not in key_result_ids:
            continue
        start = "0.00" if row["type"] == "milestone" else row["current_value"]
        copied = with_team(db, db.execute(
            """INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value,
                   target_value_min, target_value_max, created_at, modified_at, owner_id, unit, unit_position)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *""",
            (new_id(), copies[row["objective_id"]], cycle["id"], row["name"], row["type"], DEFAULT_CONFIDENCE,
             start, row["target_value_min"], row["target_value_max"], now, now, row["owner_id"], row["unit"],
             row["unit_position"]),
        ).fetchone())
        key_result_created(db, copied)
        record(db, copied, start, DEFAULT_CONFIDENCE, now, author_id=author_id)
    return cycle


def delete(db, cycle_id):
    """Deletes a cycle with its objectives, their key results and the key results' check-ins; CycleClosed when it
    is closed."""
    locks.require_open(db, cycle_id)
    with bulk_delete(db):
        # The foreign keys would cascade to the key results too, but a range delete
        # on the cycle's index is twice as fast as a cascade step per objective.
        # Their check-ins go by cascade: a delete of its own would list every key result
        # in memory first, for little time saved (docs/design.md, What was chosen).
        db.execute("DELETE FROM key_results WHERE cycle_id = ?", (cycle_id,))
        row = deleted_or_missing("cycle", db.execute("DELETE FROM cycles WHERE id = ? RETURNING *", (cycle_id,)))
    # One event for the cycle and everything that went with it.
    events.record(db, "cycle", "deleted", cycle_id, cycle_dates_json(row), cycle_id=cycle_id)


def pick_list(db):
    """Every cycle's id and name, the newest first: the choices of a page's cycle filter or select."""
    return db.execute("SELECT id, name FROM cycles ORDER BY seq DESC").fetchall()


def newest_first(db, before, limit):
    """Up to limit cycle rows under the position before (a seq), the newest first: the dashboard's cycles list."""
    return db.execute("SELECT * FROM cycles WHERE seq < ? ORDER BY seq DESC LIMIT ?", (before, limit)).fetchall()


def newest_id(db):
    """The id of the cycle made last, or None when there is none."""
    row = db.execute("SELECT id FROM cycles ORDER BY seq DESC LIMIT 1").fetchone()
    return row["id"] if row else None


def names_of(db, cycle_ids):
    """The id and name of each of these cycles that exists (the ids go in as one JSON array, one parameter
    whatever their count)."""
    return db.execute("SELECT id, name FROM cycles WHERE id IN (SELECT value FROM json_each(?))",
                      (json.dumps(list(cycle_ids)),)).fetchall()


def around(db, today):
    """The cycle rows whose dates may make them current on today (a date), newest first: SQLite narrows them by
    their ISO dates (text that sorts as dates), a day's slack either side; okr.progress.cycle_state decides."""
    return db.execute(
        """SELECT * FROM cycles WHERE (starts_on IS NULL OR starts_on <= date(:day, '+1 day'))
           AND (ends_on IS NULL OR ends_on >= date(:day, '-1 day')) ORDER BY seq DESC""",
        {"day": today.isoformat()},
    ).fetchall()


def upcoming(db, today):
    """The cycle rows that start after today (a date), the soonest first."""
    return db.execute("SELECT * FROM cycles WHERE starts_on > ? ORDER BY starts_on, seq",
                      (today.isoformat(),)).fetchall()


def finished_ids(db, today):
    """The ids of the cycles that ended before today (a date)."""
    return {row[0] for row in db.execute("SELECT id FROM cycles WHERE ends_on < ?", (today.isoformat(),))}


def dates(db):
    """Every cycle's id, starts_on and ends_on: what a report of key results of any cycle paces them by."""
    return db.execute("SELECT id, starts_on, ends_on FROM cycles").fetchall()


def exists(db, cycle_id):
    """Whether a cycle with this id exists."""
    return db.execute("SELECT 1 FROM cycles WHERE id = ?", (cycle_id,)).fetchone() is not None


# page(db, after, limit): a page of cycles, oldest first.
page = partial(keyset_page, "cycles")
