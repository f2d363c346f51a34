"""Objectives: created, replaced and deleted, with their references and alignment checked against what is stored."""
import sqlite3

from .. import clock
from ..clock import new_id
from ..errors import Invalid
from ..records import objective_json
from . import events, visibility
from .common import count, deleted_or_missing, fetch, keyset_page
from .reports import DESCENDANTS



def get(db, objective_id):
    """The objective with this id as the viewer sees it (okr.store.visibility.shown); NotFound when there is none,
    or the viewer may not see it."""
    row = fetch("objectives", "objective", db, objective_id)
    if row["visibility"] != "everyone":
        visibility.require(db, objective_id)
    return visibility.shown(db, row)


# Each reference an objective may carry: what it names, and how to find it.
REFERENCES = {
    "cycle_id": ("cycle", "SELECT 1 FROM cycles WHERE id = ?"),
    "team_id": ("team", "SELECT 1 FROM teams WHERE id = ?"),
    "assignee_id": ("user", "SELECT 1 FROM users WHERE id = ?"),
    "parent_objective_id": ("objective", "SELECT 1 FROM objectives WHERE id = ?"),
}


def parent_problem(db, parent_id):
    """Why the viewer may not align under parent_id, or None: one they may not see does not exist for them."""
    if parent_id is not None and not visibility.sees(db, visibility.viewer(), parent_id):
        return "No objective with this id exists."
    return None

# Walks up the alignment chain from a would-be parent; UNION stops on repeats.
ANCESTORS_SQL = """
WITH RECURSIVE ancestors(id) AS (
    SELECT ?
    UNION
    SELECT o.parent_objective_id FROM objectives o JOIN ancestors a ON o.id = a.id
    WHERE o.parent_objective_id IS NOT NULL
)
SELECT 1 FROM ancestors WHERE id = ?
"""


def check_references(db, values, objective_id=None, kept_parent=None):
    """Invalid naming each referenced row that does not exist (a parent the viewer may not see but kept_parent,
    the stored one, included), or a parent that makes a loop."""
    errors = {
        field: f"No {kind} with this id exists."
        for field, (kind, sql) in REFERENCES.items()
        if values[field] is not None and db.execute(sql, (values[field],)).fetchone() is None
    }
    if "parent_objective_id" not in errors and values["parent_objective_id"] != kept_parent:
        problem = parent_problem(db, values["parent_objective_id"])
        if problem:
            errors["parent_objective_id"] = problem
    parent = values["parent_objective_id"]
    if objective_id and parent and "parent_objective_id" not in errors:
        if db.execute(ANCESTORS_SQL, (parent, objective_id)).fetchone():
            errors["parent_objective_id"] = "This parent would make the alignment a loop."
    if errors:
        raise Invalid(errors)


def create(db, values):
    """A new objective from an ObjectiveSchema's values (and maybe who may see it, visibility: else everyone);
    Invalid when a reference names no row."""
    now = clock.utc_now()
    row = {**values, "id": new_id(), "created_at": now, "modified_at": now, "revision": 0}  # the column's default
    if parent_problem(db, values["parent_objective_id"]):
        check_references(db, values)  # names it, and every other reference that fails
    try:
        # No RETURNING: the row is what we wrote, and reading it back would be one
        # more SQLite call, which releases the GIL.
        db.execute(
            """INSERT INTO objectives (id, name, description, is_company, is_personal, cycle_id,
                   team_id, assignee_id, parent_objective_id, created_at, modified_at, created_by, visibility)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (row["id"], row["name"], row["description"], row["is_company"], row["is_personal"],
             row["cycle_id"], row["team_id"], row["assignee_id"], row["parent_objective_id"], now, now,
             events.acting_person(), values.get("visibility") or "everyone"),
        )
    except sqlite3.IntegrityError:
        # The foreign keys check the references; only when they refuse one do we
        # look up which. (A new objective cannot close a loop.)
        check_references(db, values)
        raise
    events.record(db, "objective", "created", row["id"], objective_json(row), cycle_id=row["cycle_id"],
                  team_id=row["team_id"])
    return row


def replace(db, objective_id, values):
    """The objective with an ObjectiveUpdateSchema's values (and an ObjectiveEditSchema's visibility, when given:
    else it stays), once its references check out; its revision moves on. A parent the viewer may not see stays
    when they send none (okr.store.visibility.kept_parent)."""
    before = fetch("objectives", "objective", db, objective_id)
    sent = values["parent_objective_id"]
    values = {**values, "parent_objective_id": visibility.kept_parent(db, before["parent_objective_id"], sent)}
    # The hidden parent stays when none is sent; named, it is refused as any parent they may not see.
    check_references(db, values, objective_id, kept_parent=before["parent_objective_id"] if sent is None else None)
    row = db.execute(
        """UPDATE objectives SET name = ?, description = ?, is_company = ?, is_personal = ?,
               cycle_id = ?, team_id = ?, assignee_id = ?, parent_objective_id = ?, modified_at = ?,
               visibility = coalesce(?, visibility), revision = revision + 1
           WHERE id = ? RETURNING *""",
        (values["name"], values["description"], values["is_company"], values["is_personal"],
         values["cycle_id"], values["team_id"], values["assignee_id"], values["parent_objective_id"],
         clock.utc_now(), values.get("visibility"), objective_id),
    ).fetchone()
    events.record(db, "objective", "updated", objective_id, objective_json(row), before=objective_json(before),
                  cycle_id=row["cycle_id"], team_id=row["team_id"])
    return visibility.shown(db, row)


def doomed(db, objective_id):
    """What deleting the objective changes: {"key_results", "checkins": deleted with it, "children": the
    objectives that lose their parent}."""
    return {
        "key_results": count(db, "SELECT count(*) FROM key_results WHERE objective_id = ?", objective_id),
        "checkins": count(db, """SELECT count(*) FROM key_results k JOIN checkins c ON c.key_result_seq = k.seq
                                 WHERE k.objective_id = ?""", objective_id),
        "children": count(db, "SELECT count(*) FROM objectives WHERE parent_objective_id = ?", objective_id),
    }


def parent_candidates(db, objective_id, cycle_id, query, limit):
    """(objectives, how many in all): the objectives (id, name, cycle_id) an objective's form may offer as its
    parent, at most limit of them, and how many there are. Never the objective itself (objective_id; None for a
    new one) nor one aligned under it (a loop); narrowed to names holding query when given; those of cycle_id
    first in creation order, then the other cycles', the newest cycle first."""
    seen, seen_params = visibility.seeing("o")
    where = f"o.id NOT IN tree AND {seen}" + (" AND instr(lower(o.name), lower(?)) > 0" if query else "")
    params = (objective_id or "", *seen_params, *((query,) if query else ()))
    picked = db.execute(
        DESCENDANTS + f"""SELECT o.id, o.name, o.cycle_id FROM objectives o
                          WHERE o.cycle_id = ? AND {where} ORDER BY o.seq LIMIT ?""",
        (params[0], cycle_id or "", *params[1:], limit + 1)).fetchall()
    if len(picked) <= limit:
        picked += db.execute(
            DESCENDANTS + f"""SELECT o.id, o.name, o.cycle_id FROM objectives o JOIN cycles c ON c.id = o.cycle_id
                              WHERE o.cycle_id != ? AND {where} ORDER BY c.seq DESC, o.seq LIMIT ?""",
            (params[0], cycle_id or "", *params[1:], limit + 1 - len(picked))).fetchall()
    total = len(picked)
    if total > limit:
        picked = picked[:limit]
        # Without a search (or a viewer to see for), all of them less those aligned under it: no scan of every name.
        count_sql = (f"SELECT count(*) FROM objectives o WHERE {where}" if query or seen_params else
                     "SELECT (SELECT count(*) FROM objectives) - (SELECT count(*) FROM objectives WHERE id IN tree)")
        total = db.execute(DESCENDANTS + count_sql, params).fetchone()[0]
    return picked, total


def parent_choice(db, objective_id):
    """The objective's id, name and cycle_id (as parent_candidates has them), or None (also when the viewer may not
    see it)."""
    seen, params = visibility.seeing("objectives")
    return db.execute(f"SELECT id, name, cycle_id FROM objectives WHERE id = ? AND {seen}",
                      (objective_id, *params)).fetchone()


def parent_id_of(db, objective_id):
    """The id of the objective's parent; None when it has none, or does not exist, or the viewer may not see it."""
    row = db.execute("SELECT parent_objective_id FROM objectives WHERE id = ?", (objective_id,)).fetchone()
    return row[0] if row and row[0] and visibility.sees(db, visibility.viewer(), row[0]) else None


def named(db, objective_id):
    """The objective's id and name, or None (also when the viewer may not see it)."""
    seen, params = visibility.seeing("objectives")
    return db.execute(f"SELECT id, name FROM objectives WHERE id = ? AND {seen}", (objective_id, *params)).fetchone()


def delete(db, objective_id):
    """Deletes an objective and its key results; its children lose their parent."""
    row = deleted_or_missing("objective", db.execute("DELETE FROM objectives WHERE id = ? RETURNING *",
                                                     (objective_id,)))
    events.record(db, "objective", "deleted", objective_id, objective_json(row), cycle_id=row["cycle_id"],
                  team_id=row["team_id"], objective_id=None if row["visibility"] == "everyone" else objective_id)


def page(db, after, limit, cycle_id, filters):
    """A page of one cycle's objectives, oldest first, whose columns hold the filters' values ({team_id,
    assignee_id, parent_objective_id (None: none), is_company, is_personal}, each given or not)."""
    parent = filters.get("parent_objective_id")
    if parent is not None and visibility.viewer() is not None and not visibility.sees(db, visibility.viewer(), parent):
        return []  # a parent they may not see is no parent at all: as an unknown id
    rows = keyset_page("objectives", db, after, limit, {"cycle_id": cycle_id, **filters},
                       visibility.seeing("objectives"))
    if visibility.viewer() is None:
        return rows
    # The page's parents and carried-from objectives the reader may not see, in one query, not one a row.
    hidden = visibility.hidden_of(db, {row[field] for row in rows for field in visibility.OTHER_OBJECTIVES
                                       if row[field] is not None})
    if not hidden:
        return rows
    return [visibility.shown_among(row, hidden)
            if row["parent_objective_id"] in hidden or row["carried_from_id"] in hidden else row for row in rows]
