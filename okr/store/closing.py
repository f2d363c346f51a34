"""Closing out a cycle: each objective's outcome, score and reflection and each key result's score, saved in as
many sittings as people need; then the cycle closed (locked: okr.store.locks) and maybe reopened by an admin."""
from .. import clock, progress
from ..errors import Conflict
from ..records import cycle_dates_json
from . import events, notifications
from .checkins import with_team
from .common import fetch

CLOSING_FIELDS = ("outcome", "score", "reflection")


def closing_json(row):
    return {field: row[field] for field in CLOSING_FIELDS}


def score_objective(db, stored, values):
    """The objective (its stored row) with the close-out fields values holds (outcome, score, reflection; absent
    ones stay); its revision moves on when any changed, with an objective.scored event. Its callers have asked
    okr.store.locks (schema.sql's triggers refuse it in a closed cycle anyway)."""
    merged = {**closing_json(stored), **{field: values[field] for field in CLOSING_FIELDS if field in values}}
    if merged == closing_json(stored):
        return stored
    row = db.execute(
        """UPDATE objectives SET outcome = ?, score = ?, reflection = ?, modified_at = ?, revision = revision + 1
           WHERE id = ? RETURNING *""",
        (merged["outcome"], merged["score"], merged["reflection"], clock.utc_now(), stored["id"])).fetchone()
    events.record(db, "objective", "scored", row["id"], {"id": row["id"], **closing_json(row)},
                  before={"id": row["id"], **closing_json(stored)}, cycle_id=row["cycle_id"], team_id=row["team_id"])
    if row["reflection"] != stored["reflection"]:
        notifications.notify(db, "mentioned", notifications.mentioned(db, row["reflection"],
                                                                      before=stored["reflection"]).person_ids,
                             objective_id=row["id"])
    return row


def score_key_result(db, stored, score):
    """The key result (its stored row) with this final score (two-decimal text or None); its revision moves on
    when it changed, with a key_result.scored event (its callers have asked okr.store.locks)."""
    if score == stored["score"]:
        return stored
    row = with_team(db, db.execute(
        "UPDATE key_results SET score = ?, modified_at = ?, revision = revision + 1 WHERE id = ? RETURNING *",
        (score, clock.utc_now(), stored["id"])).fetchone())
    events.record(db, "key_result", "scored", row["id"], {"id": row["id"], "score": row["score"]},
                  before={"id": row["id"], "score": stored["score"]}, parent_id=row["objective_id"],
                  cycle_id=row["cycle_id"], team_id=row["team_id"])
    return row


def closed_json(row):
    return {**cycle_dates_json(row), "closed_at": row["closed_at"], "closed_by": row["closed_by"]}


def close(db, cycle_id, person_id, suggestions):
    """Closes the cycle (its row back): what is not scored yet takes its suggested score first, suggestions being
    okr.reports.closing.suggestions' {"objectives": {id: score}, "key_results": {id: score}}, and an objective
    without an outcome the one its final score suggests; Conflict when it is closed already."""
    cycle = fetch("cycles", "cycle", db, cycle_id)
    if cycle["closed_at"] is not None:
        raise Conflict("cycle is already closed")
    for row in db.execute("SELECT * FROM objectives WHERE cycle_id = ? AND (score IS NULL OR outcome IS NULL) "
                          "ORDER BY seq", (cycle_id,)).fetchall():
        score = row["score"] if row["score"] is not None else suggestions["objectives"].get(row["id"])
        score_objective(db, row, {"score": score, "outcome": row["outcome"] or progress.suggested_outcome(score)})
    for row in db.execute("SELECT * FROM key_results WHERE cycle_id = ? AND score IS NULL ORDER BY seq",
                          (cycle_id,)).fetchall():
        if suggestions["key_results"].get(row["id"]) is not None:
            score_key_result(db, row, suggestions["key_results"][row["id"]])
    row = db.execute("UPDATE cycles SET closed_at = ?, closed_by = ?, revision = revision + 1 WHERE id = ? "
                     "RETURNING *", (clock.utc_now(), person_id, cycle_id)).fetchone()
    events.record(db, "cycle", "closed", cycle_id, closed_json(row), before=closed_json(cycle), cycle_id=cycle_id)
    return row


def reopen(db, cycle_id):
    """Reopens a closed cycle (its row back): its scores stay; Conflict when it is not closed."""
    cycle = fetch("cycles", "cycle", db, cycle_id)
    if cycle["closed_at"] is None:
        raise Conflict("cycle is not closed")
    row = db.execute("UPDATE cycles SET closed_at = NULL, closed_by = NULL, revision = revision + 1 WHERE id = ? "
                     "RETURNING *", (cycle_id,)).fetchone()
    events.record(db, "cycle", "reopened", cycle_id, closed_json(row), before=closed_json(cycle), cycle_id=cycle_id)
    return row
