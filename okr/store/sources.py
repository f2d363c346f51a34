"""Metric sources: which key result reads which connection, by what query, on what schedule, in what state; and
the evidence of every value a source wrote (okr.sources.syncing writes them here).

A key result has one source at most. A check-in a source wrote has one evidence row: what it was read from.
"""
import json

from .. import clock
from ..clock import new_id
from ..errors import NotFound

EVIDENCE_BYTES = 65536  # of an answer, the bytes kept

SOURCE = """SELECT s.*, k.id AS key_result_id, k.objective_id, k.name AS key_result_name, k.current_value, k.confidence AS
           key_result_confidence, k.owner_id, k.cycle_id, o.team_id, c.id AS connection_id,
           c.name AS connection_name, c.kind, c.address, c.headers, c.sealed_secret, c.inside_network,
           cy.starts_on, cy.ends_on, cy.closed_at
    FROM sources s JOIN key_results k ON k.seq = s.key_result_seq JOIN objectives o ON o.id = k.objective_id
    JOIN connections c ON c.seq = s.connection_seq JOIN cycles cy ON cy.id = k.cycle_id"""


def shaped(row):
    if row is None:
        return None
    return {**dict(row), "headers": json.loads(row["headers"]), "inside_network": bool(row["inside_network"])}


def of_key_result(db, key_result_id):
    """The source of a key result (a dict with its connection's and key result's fields), or None."""
    return shaped(db.execute(f"{SOURCE} WHERE k.id = ?", (key_result_id,)).fetchone())


def get(db, source_id):
    """A source by its id; NotFound."""
    found = shaped(db.execute(f"{SOURCE} WHERE s.id = ?", (source_id,)).fetchone())
    if found is None:
        raise NotFound("source")
    return found


def listed(db):
    """Every source, by key result name."""
    return [shaped(row) for row in db.execute(f"{SOURCE} ORDER BY k.name, s.seq").fetchall()]


def due(db, now, limit):
    """Up to limit sources due to run at now (an RFC 3339 text), the longest waiting first; stopped ones never."""
    return [shaped(row) for row in db.execute(
        f"{SOURCE} WHERE s.state != 'stopped' AND s.next_run_at <= ? ORDER BY s.next_run_at, s.seq LIMIT ?",
        (now, limit)).fetchall()]


def put(db, key_result_seq, connection_seq, query, path, every_minutes, created_by=None):
    """Attaches a key result to a connection, or changes its source: active again, due now. The source's id."""
    now = clock.utc_now()
    row = db.execute(
        """INSERT INTO sources (id, key_result_seq, connection_seq, query, path, every_minutes, next_run_at,
               created_by, created_at, modified_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (key_result_seq) DO UPDATE SET connection_seq = excluded.connection_seq,
               query = excluded.query, path = excluded.path, every_minutes = excluded.every_minutes,
               state = 'active', failures = 0, failing_since = NULL, last_error = NULL,
               next_run_at = excluded.next_run_at, modified_at = excluded.modified_at
           RETURNING id""",
        (new_id(), key_result_seq, connection_seq, query, path, every_minutes, now, created_by, now, now)).fetchone()
    return row[0]


def remove(db, source):
    """Detaches a key result from its source (its values and their evidence stay)."""
    db.execute("DELETE FROM sources WHERE seq = ?", (source["seq"],))


def succeeded(db, source, now, next_run_at):
    """A run that read a value: the source is active, its failures forgotten."""
    db.execute("""UPDATE sources SET state = 'active', failures = 0, failing_since = NULL, last_error = NULL,
                      last_run_at = ?, next_run_at = ? WHERE seq = ?""", (now, next_run_at, source["seq"]))


def failed(db, source, now, error, next_run_at, stop_after):
    """A run that read nothing: one failure more in a row; the source stops at stop_after. (failures, state)."""
    row = db.execute(
        """UPDATE sources SET failures = failures + 1,
               state = CASE WHEN failures + 1 >= ? THEN 'stopped' ELSE 'failing' END,
               failing_since = coalesce(failing_since, ?), last_error = ?, last_run_at = ?, next_run_at = ?
           WHERE seq = ? RETURNING failures, state""",
        (stop_after, now, error, now, next_run_at, source["seq"])).fetchone()
    return (row["failures"], row["state"]) if row else (0, "stopped")


def postpone(db, source, next_run_at):
    """A source not run now (its cycle has not begun, has ended or is closed): it is asked again later."""
    db.execute("UPDATE sources SET next_run_at = ? WHERE seq = ?", (next_run_at, source["seq"]))


def restart(db, source):
    """Starts a stopped or failing source again: active, due now."""
    db.execute("""UPDATE sources SET state = 'active', failures = 0, failing_since = NULL, last_error = NULL,
                      next_run_at = ?, modified_at = ? WHERE seq = ?""",
               (clock.utc_now(), clock.utc_now(), source["seq"]))


# --- evidence ---------------------------------------------------------------------------------------------------


def keep_evidence(db, checkin_seq, connection_seq, source_name, evidence):
    """Keeps what a check-in's value was read from: evidence is {request, replay (a dict), as_of, read_at,
    sha256, answer (bytes: its first EVIDENCE_BYTES are kept), answer_size}."""
    db.execute(
        """INSERT INTO evidence (checkin_seq, connection_seq, source_name, request, replay, as_of, read_at, sha256,
               answer, answer_size) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (checkin_seq, connection_seq, source_name, evidence["request"],
         json.dumps(evidence["replay"], sort_keys=True, separators=(",", ":")), evidence["as_of"],
         evidence["read_at"], evidence["sha256"], bytes(evidence["answer"][:EVIDENCE_BYTES]),
         evidence["answer_size"]))


EVIDENCE = """SELECT e.*, c.id AS checkin_id, c.value, c.created_at AS checkin_created_at, k.id AS key_result_id,
           k.seq AS key_result_seq, k.cycle_id, o.team_id
    FROM evidence e JOIN checkins c ON c.seq = e.checkin_seq JOIN key_results k ON k.seq = c.key_result_seq
    JOIN objectives o ON o.id = k.objective_id"""


def evidence_of(db, checkin_id):
    """The evidence of a check-in (with its key result's id, cycle and team); NotFound when it has none (a person
    wrote it) or there is no such check-in."""
    row = db.execute(f"{EVIDENCE} WHERE c.id = ?", (checkin_id,)).fetchone()
    if row is None:
        raise NotFound("evidence")
    return {**dict(row), "replay": json.loads(row["replay"])}


def evidence_names(db, key_result_seq):
    """{check-in id: the source's name} of a key result's check-ins that a source wrote (the history's author)."""
    return {row[0]: row[1] for row in db.execute(
        """SELECT c.id, e.source_name FROM evidence e JOIN checkins c ON c.seq = e.checkin_seq
           WHERE c.key_result_seq = ?""", (key_result_seq,))}
