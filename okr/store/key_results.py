"""Key results: created with their first check-in, replaced (a new value or confidence is a check-in), deleted."""
from decimal import Decimal

from .. import clock
from ..clock import new_id
from ..errors import Invalid
from ..records import key_result_details_json
from . import events, visibility
from .checkins import key_result_updated, record, with_team
from .common import count, deleted_or_missing, fetch, keyset_page



def get(db, key_result_id):
    """The key result with this id; NotFound when there is none, or the viewer may not see its objective."""
    row = fetch("key_results", "key result", db, key_result_id)
    visibility.require(db, row["objective_id"], "key result")
    return row



# The roles that may own a key result: who owns one updates it, and a viewer may not write.
OWNER_ROLES = frozenset({"editor", "admin"})
NOT_AN_OWNER_ROLE = "A viewer cannot own a key result: choose an editor or an admin."


def check_owner(db, values, stored=None):
    """Invalid unless the owner values name, if any, is a user who may own a key result (an editor or an admin).
    The owner the stored key result has is kept whatever their role now: made a viewer later, they show as
    needing a new owner rather than blocking every other change."""
    owner = values.get("owner_id")
    if owner is None or (stored is not None and owner == stored["owner_id"]):
        return
    user = db.execute("SELECT role FROM users WHERE id = ?", (owner,)).fetchone()
    if user is None:
        raise Invalid({"owner_id": "No user with this id exists."})
    if user["role"] not in OWNER_ROLES:
        raise Invalid({"owner_id": NOT_AN_OWNER_ROLE})


def create(db, objective, values, author_id=None):
    """A new key result of an objective (its row) from a KeyResultSchema's values (maybe with an owner_id), with
    its first check-in: its starting value, by author_id (the person who made it, None when unknown)."""
    check_owner(db, values)
    now = clock.utc_now()
    row = db.execute(
        """INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence,
               current_value, target_value_min, target_value_max, created_at, modified_at, owner_id, unit,
               unit_position, weight, progress_from)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *, ? AS team_id""",
        (new_id(), objective["id"], objective["cycle_id"], values["name"], values["type"],
         values["confidence"], values["current_value"], values["target_value_min"],
         values["target_value_max"], now, now, values.get("owner_id"), values.get("unit"),
         values.get("unit_position") if values.get("unit") else None, values.get("weight", 1),
         values.get("progress_from", "measure"), objective["team_id"]),
    ).fetchone()
    key_result_created(db, row)
    record(db, row, row["current_value"], row["confidence"], now, author_id=author_id)
    return row


def key_result_created(db, row):
    """Records the event of a new key result (its row, with its team_id)."""
    events.record(db, "key_result", "created", row["id"], key_result_details_json(row), parent_id=row["objective_id"],
                  cycle_id=row["cycle_id"], team_id=row["team_id"])


def replace(db, stored, values, author_id=None):
    """The stored key result (its row) with a KeyResultUpdateSchema's values (its owner, unit, weight and progress
    source stay) or a KeyResultEditSchema's (with owner_id, and maybe unit, unit_position, weight and progress_from);
    a new value or confidence is a check-in, by author_id."""
    check_owner(db, values, stored)
    now = clock.utc_now()
    row = with_team(db, db.execute(
        """UPDATE key_results SET name = ?, type = ?, confidence = ?, current_value = ?,
               target_value_min = ?, target_value_max = ?, modified_at = ?, revision = revision + 1,
               owner_id = CASE WHEN ? THEN ? ELSE owner_id END,
               unit = CASE WHEN ? THEN ? ELSE unit END,
               unit_position = CASE WHEN ? THEN ? ELSE unit_position END,
               weight = CASE WHEN ? THEN ? ELSE weight END,
               progress_from = CASE WHEN ? THEN ? ELSE progress_from END
           WHERE id = ? RETURNING *""",
        (values["name"], values["type"], values["confidence"], values["current_value"],
         values["target_value_min"], values["target_value_max"], now, "owner_id" in values,
         values.get("owner_id"), "unit" in values, values.get("unit"), "unit" in values,
         values.get("unit_position") if values.get("unit") else None, "weight" in values, values.get("weight"),
         "progress_from" in values, values.get("progress_from"), stored["id"]),
    ).fetchone())
    if row is None:
        return get(db, stored["id"])
    key_result_updated(db, stored, row)
    if moved(stored, row):
        record(db, row, row["current_value"], row["confidence"], now, author_id=author_id)
    return row


def moved(before, after):
    """Whether the current value or the confidence changed, as numbers ("1.0" is "1.00")."""
    return any(Decimal(before[field]) != Decimal(after[field]) for field in ("current_value", "confidence"))


def doomed(db, key_result_id):
    """What deleting the key result deletes with it: {"checkins": n}."""
    return {"checkins": count(db, """SELECT count(*) FROM checkins WHERE key_result_seq =
                                         (SELECT seq FROM key_results WHERE id = ?)""", key_result_id)}


def delete(db, key_result_id):
    """Deletes a key result and its check-ins."""
    row = with_team(db, deleted_or_missing("key result", db.execute(
        "DELETE FROM key_results WHERE id = ? RETURNING *", (key_result_id,))))
    events.record(db, "key_result", "deleted", key_result_id, key_result_details_json(row),
                  parent_id=row["objective_id"], cycle_id=row["cycle_id"], team_id=row["team_id"])


def page(db, after, limit, of, kind=None):
    """A page of key results, oldest first: of is {"objective_id": id} or {"cycle_id": id}; kind, when
    given, keeps those of that type; those of objectives the viewer may not see left out."""
    return keyset_page("key_results", db, after, limit, {**of, **({"type": kind} if kind is not None else {})},
                       visibility.condition("key_results.objective_id"))
