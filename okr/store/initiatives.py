"""Initiatives: the work under a key result (a name, an owner, a state, maybe a due date and a link), written,
changed and deleted, each with its event placed under its key result (parent_id, and that one's cycle and team).

A key result holds at most MAX_PER_KEY_RESULT of them; its owner is who may own a key result (an editor or an
admin: okr.store.key_results.check_owner's rule).
"""
import json

from .. import clock
from ..clock import new_id
from ..errors import Invalid, NotFound
from ..records import initiative_json
from . import events, visibility
from .common import keyset_page
from .key_results import check_owner

MAX_PER_KEY_RESULT = 50
TOO_MANY = f"A key result holds at most {MAX_PER_KEY_RESULT} initiatives: finish or delete one first."

# An initiative with where its events go: its key result, and that one's cycle and team (its objective's).
PLACED = """
SELECT i.*, k.cycle_id, o.team_id, k.name AS key_result_name, k.objective_id
FROM initiatives i
JOIN key_results k ON k.id = i.key_result_id
JOIN objectives o ON o.id = k.objective_id
WHERE i.id = ?"""
PARENT = """SELECT k.id, k.cycle_id, o.team_id, k.objective_id FROM key_results k JOIN objectives o ON o.id = k.objective_id
            WHERE k.id = ?"""


def get(db, initiative_id):
    """The initiative with this id, with its key result's cycle_id, team_id and name; NotFound when there is none."""
    row = db.execute(PLACED, (initiative_id,)).fetchone()
    if row is None:
        raise NotFound("initiative")
    visibility.require(db, row["objective_id"], "initiative")
    return row


def key_result_of(db, key_result_id):
    """The key result initiatives go under, as {"id", "cycle_id", "team_id"}; NotFound."""
    row = db.execute(PARENT, (key_result_id,)).fetchone()
    if row is None:
        raise NotFound("key result")
    visibility.require(db, row["objective_id"], "key result")
    return row


def record(db, action, row, place, before=None):
    events.record(db, "initiative", action, row["id"], initiative_json(row), before=before,
                  parent_id=row["key_result_id"], cycle_id=place["cycle_id"], team_id=place["team_id"])


def create(db, key_result_id, values):
    """A new initiative under the key result (an InitiativeSchema's values); NotFound when the key result does not
    exist, Invalid when its owner may not own one or the key result holds MAX_PER_KEY_RESULT already."""
    on = key_result_of(db, key_result_id)
    check_owner(db, values)
    held = db.execute("SELECT count(*) FROM initiatives WHERE key_result_id = ?", (key_result_id,)).fetchone()[0]
    if held >= MAX_PER_KEY_RESULT:
        raise Invalid({"key_result_id": TOO_MANY})
    now = clock.utc_now()
    row = db.execute(
        """INSERT INTO initiatives (id, key_result_id, name, owner_id, state, due_on, link, created_at, modified_at,
               done_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, CASE WHEN ? = 'done' THEN ? END) RETURNING *""",
        (new_id(), on["id"], values["name"], values["owner_id"], values["state"], values["due_on"], values["link"],
         now, now, values["state"], now)).fetchone()
    record(db, "created", row, on)
    return row


def update(db, stored, values):
    """The stored initiative (get's row) with an InitiativeSchema's values; its revision moves on. Its owner, when
    unchanged, stays whatever their role now (as a key result's)."""
    check_owner(db, values, stored)
    now = clock.utc_now()
    row = db.execute(
        """UPDATE initiatives SET name = ?, owner_id = ?, state = ?, due_on = ?, link = ?, modified_at = ?,
               revision = revision + 1,
               done_at = CASE WHEN ? <> 'done' THEN NULL WHEN state = 'done' THEN done_at ELSE ? END
           WHERE id = ? RETURNING *""",
        (values["name"], values["owner_id"], values["state"], values["due_on"], values["link"], now,
         values["state"], now, stored["id"])).fetchone()
    if row is None:
        raise NotFound("initiative")
    record(db, "updated", row, stored, before=initiative_json(stored))
    return row


def delete(db, stored):
    """Deletes the stored initiative (get's row)."""
    if db.execute("DELETE FROM initiatives WHERE id = ?", (stored["id"],)).rowcount == 0:
        raise NotFound("initiative")
    record(db, "deleted", stored, stored)


def page(db, after, limit, key_result_id):
    """A page of a key result's initiatives, in the order they were made."""
    return keyset_page("initiatives", db, after, limit, {"key_result_id": key_result_id})


def of_key_result(db, key_result_id):
    """Every initiative of a key result (at most MAX_PER_KEY_RESULT), in the order made, each with its owner's
    name as owner_name."""
    return db.execute(
        """SELECT i.*, u.name AS owner_name FROM initiatives i LEFT JOIN users u ON u.id = i.owner_id
           WHERE i.key_result_id = ? ORDER BY i.seq""", (key_result_id,)).fetchall()


def owned_open(db, user_id, cycle_ids):
    """A person's initiatives not done, in the cycles given (their week's), soonest due first (none due last), each
    with its key result's name and cycle."""
    seen, params = visibility.condition("k.objective_id")  # owning one is no way of seeing its objective
    return db.execute(
        f"""SELECT i.*, k.name AS key_result_name, k.cycle_id FROM initiatives i
            JOIN key_results k ON k.id = i.key_result_id
            WHERE i.owner_id = ? AND i.state <> 'done' AND k.cycle_id IN (SELECT value FROM json_each(?)) AND {seen}
            ORDER BY i.due_on IS NULL, i.due_on, i.seq""", (user_id, json.dumps(list(cycle_ids)), *params)).fetchall()
