"""Check-ins, a key result's history: every write that moves a key result records one here."""
from .. import clock
from ..clock import new_id
from ..errors import Conflict, Invalid, NotFound
from ..records import checkin_json, key_result_details_json
from . import events, notifications, visibility


def with_team(db, row):
    """A key result's row (None stays None) with its objective's team_id, which the activity feed places it by.

    A query of its own: in a RETURNING clause, SQLite (3.40) runs a correlated subquery as a scan of every
    objective, which made each check-in cost milliseconds per thousand objectives.
    """
    if row is None:
        return None
    team = db.execute("SELECT team_id FROM objectives WHERE id = ?", (row["objective_id"],)).fetchone()
    return {**dict(row), "team_id": None if team is None else team[0]}


def record(db, key_result, value, confidence, now, comment=None, author_id=None):
    """Adds a check-in to a key result (its row, or what has its seq, id, cycle_id and team_id); returns the
    check-in as written."""
    checkin = {
        "id": new_id(), "key_result_id": key_result["id"], "value": value, "confidence": confidence,
        "comment": comment, "author_id": author_id, "created_at": now,
    }
    db.execute(
        """INSERT INTO checkins (id, key_result_seq, value, confidence, comment, author_id, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)""",
        (checkin["id"], key_result["seq"], value, confidence, comment, author_id, now),
    )
    events.record(db, "checkin", "created", checkin["id"], checkin_json(checkin), parent_id=key_result["id"],
                  cycle_id=key_result["cycle_id"], team_id=key_result["team_id"])
    return checkin


def check_in(db, key_result_id, value, confidence=None, comment=None, author_id=None):
    """Records a check-in and moves its key result to it; confidence None keeps the key result's.

    The API and the pages both record check-ins here. NotFound for an unknown key result, Invalid
    for an author who is not a user. The key result's change is an event of its own (key_result.updated),
    before the check-in's.
    """
    if author_id is not None and db.execute("SELECT 1 FROM users WHERE id = ?", (author_id,)).fetchone() is None:
        raise Invalid({"author_id": "No user with this id exists."})
    now = clock.utc_now()
    before = db.execute("SELECT * FROM key_results WHERE id = ?", (key_result_id,)).fetchone()
    if before is None:
        raise NotFound("key result")
    visibility.require(db, before["objective_id"], "key result")
    key_result = with_team(db, db.execute(
        """UPDATE key_results SET current_value = ?, confidence = coalesce(?, confidence), modified_at = ?,
               revision = revision + 1
           WHERE seq = ? RETURNING *""",
        (value, confidence, now, before["seq"]),
    ).fetchone())
    key_result_updated(db, before, key_result)
    return record(db, key_result, value, key_result["confidence"], now, comment, author_id)


def in_effect(db, key_result_seq, moment):
    """The value and confidence a key result had at moment (RFC 3339): its latest check-in dated then or before
    (the starting one when none is), as (value, confidence)."""
    row = db.execute("""SELECT value, confidence FROM checkins WHERE key_result_seq = ? AND created_at <= ?
                        ORDER BY created_at DESC, seq DESC LIMIT 1""", (key_result_seq, moment)).fetchone()
    if row is None:
        row = db.execute("SELECT value, confidence FROM checkins WHERE key_result_seq = ? ORDER BY seq LIMIT 1",
                         (key_result_seq,)).fetchone()
    return (row[0], row[1]) if row else (None, None)


def newest_seq(db, key_result_seq):
    """The seq of a key result's check-in written last (the one just recorded)."""
    return db.execute("SELECT max(seq) FROM checkins WHERE key_result_seq = ?", (key_result_seq,)).fetchone()[0]


def starting_date(db, key_result_seq):
    """When a key result's starting check-in was made (RFC 3339), or None."""
    row = db.execute("SELECT created_at FROM checkins WHERE key_result_seq = ? ORDER BY seq LIMIT 1",
                     (key_result_seq,)).fetchone()
    return row[0] if row else None


def record_dated(db, key_result_id, value, moment):
    """Records a check-in dated moment (RFC 3339, in the past) with the confidence in effect then; the caller puts
    the history in date order again (resequence) once it has recorded what it will. Returns the check-in."""
    before = db.execute("SELECT * FROM key_results WHERE id = ?", (key_result_id,)).fetchone()
    if before is None:
        raise NotFound("key result")
    _, confidence = in_effect(db, before["seq"], moment)
    key_result = with_team(db, before)
    return record(db, key_result, value, confidence or before["confidence"], moment)


def resequence(db, key_result_seq):
    """Puts a key result's check-ins after its starting one in date order again, once check-ins dated in the past
    were added (seq is the order every history and report reads). Those out of place are written again with new
    seqs, keeping their ids, authors and evidence. {old seq: new seq} of those moved."""
    rows = db.execute("SELECT * FROM checkins WHERE key_result_seq = ? ORDER BY seq", (key_result_seq,)).fetchall()
    rest = rows[1:]
    ordered = sorted(rest, key=lambda row: (row["created_at"], row["seq"]))
    first_out = next((index for index, (a, b) in enumerate(zip(rest, ordered)) if a["seq"] != b["seq"]), None)
    if first_out is None:
        return {}
    moving = ordered[first_out:]
    seqs = [row["seq"] for row in moving]
    marks = ",".join("?" * len(seqs))
    kept = {row["checkin_seq"]: dict(row) for row in db.execute(
        f"SELECT * FROM evidence WHERE checkin_seq IN ({marks})", seqs)}
    db.execute(f"DELETE FROM checkins WHERE seq IN ({marks})", seqs)
    moved = {}
    for row in moving:
        moved[row["seq"]] = db.execute(
            """INSERT INTO checkins (id, key_result_seq, value, confidence, comment, author_id, created_at)
               VALUES (?, ?, ?, ?, ?, ?, ?)""",
            (row["id"], key_result_seq, row["value"], row["confidence"], row["comment"], row["author_id"],
             row["created_at"])).lastrowid
        evidence = kept.get(row["seq"])
        if evidence is not None:
            evidence["checkin_seq"] = moved[row["seq"]]
            columns = ", ".join(evidence)
            db.execute(f"INSERT INTO evidence ({columns}) VALUES ({', '.join('?' * len(evidence))})",
                       tuple(evidence.values()))
    follow_latest(db, key_result_seq)
    return moved


def key_result_updated(db, before, row):
    """Records the event of a key result's update: row is it after (with its team_id), before its row before."""
    events.record(db, "key_result", "updated", row["id"], key_result_details_json(row),
                  before=key_result_details_json(before), parent_id=row["objective_id"], cycle_id=row["cycle_id"],
                  team_id=row["team_id"])
    notifications.notify(db, "changed", [row["owner_id"]], key_result_id=row["id"])


def page(db, after, limit, key_result):
    """A page of a key result's (its row) check-ins, oldest first. Check-ins point at their key result's seq;
    each row also names its id, as the API shows it."""
    return db.execute(
        "SELECT *, ? AS key_result_id FROM checkins WHERE key_result_seq = ? AND seq > ? ORDER BY seq LIMIT ?",
        (key_result["id"], key_result["seq"], after, limit)).fetchall()


def latest(db, key_result_id, limit):
    """Up to limit of a key result's check-ins, the newest first, each with its author's name as author_name
    (None for none, or one gone), its key_result_id and is_start (the starting check-in)."""
    return db.execute(
        """SELECT c.*, u.name AS author_name, k.id AS key_result_id,
               c.seq = (SELECT min(seq) FROM checkins WHERE key_result_seq = c.key_result_seq) AS is_start
           FROM checkins c
           JOIN key_results k ON k.seq = c.key_result_seq
           LEFT JOIN users u ON u.id = c.author_id
           WHERE k.id = ? ORDER BY c.seq DESC LIMIT ?""",
        (key_result_id, limit),
    ).fetchall()


def get(db, checkin_id):
    """One check-in with its key result's id, cycle_id and team_id, and is_start (the one made with its key
    result, which is never changed). NotFound when none has this id."""
    row = db.execute(
        """SELECT c.*, k.id AS key_result_id, k.cycle_id, o.team_id, k.objective_id,
               c.seq = (SELECT min(seq) FROM checkins WHERE key_result_seq = c.key_result_seq) AS is_start
           FROM checkins c JOIN key_results k ON k.seq = c.key_result_seq
           JOIN objectives o ON o.id = k.objective_id WHERE c.id = ?""", (checkin_id,)).fetchone()
    if row is None:
        raise NotFound("check-in")
    visibility.require(db, row["objective_id"], "check-in")
    return row


STARTING = "the starting check-in, made with its key result, is never changed or deleted"


def correct(db, stored, value, confidence, comment):
    """Corrects a check-in (get's row): its value, confidence and comment; its key result follows its latest
    remaining check-in. Conflict for the starting check-in."""
    if stored["is_start"]:
        raise Conflict(STARTING)
    if db.execute("UPDATE checkins SET value = ?, confidence = ?, comment = ? WHERE seq = ?",
                  (value, confidence, comment, stored["seq"])).rowcount == 0:
        raise NotFound("check-in")
    after = {**checkin_json(stored), "value": value, "confidence": confidence, "comment": comment}
    events.record(db, "checkin", "updated", stored["id"], after, before=checkin_json(stored),
                  parent_id=stored["key_result_id"], cycle_id=stored["cycle_id"], team_id=stored["team_id"])
    follow_latest(db, stored["key_result_seq"])
    return {**dict(stored), **after}


def delete(db, stored):
    """Deletes a check-in (get's row); its key result follows its latest remaining check-in. Conflict for the
    starting check-in."""
    if stored["is_start"]:
        raise Conflict(STARTING)
    if db.execute("DELETE FROM checkins WHERE seq = ?", (stored["seq"],)).rowcount == 0:
        raise NotFound("check-in")
    events.record(db, "checkin", "deleted", stored["id"], checkin_json(stored), parent_id=stored["key_result_id"],
                  cycle_id=stored["cycle_id"], team_id=stored["team_id"])
    follow_latest(db, stored["key_result_seq"])


def follow_latest(db, key_result_seq):
    """Moves a key result's current value and confidence to its latest check-in's, when they differ."""
    before = db.execute("SELECT * FROM key_results WHERE seq = ?", (key_result_seq,)).fetchone()
    latest_row = db.execute("SELECT value, confidence FROM checkins WHERE key_result_seq = ? ORDER BY seq DESC "
                            "LIMIT 1", (key_result_seq,)).fetchone()
    if before is None or latest_row is None or (
            (before["current_value"], before["confidence"]) == (latest_row["value"], latest_row["confidence"])):
        return
    row = with_team(db, db.execute(
        """UPDATE key_results SET current_value = ?, confidence = ?, modified_at = ?, revision = revision + 1
           WHERE seq = ? RETURNING *""",
        (latest_row["value"], latest_row["confidence"], clock.utc_now(), key_result_seq)).fetchone())
    key_result_updated(db, before, row)
