"""Connections of metric sources: an admin's kind, address, headers and sealed secret (okr.sources).

The secret comes here sealed (okr.sources.sealing) and is never read back in clear by this module: `listed`
and `get` say only whether there is one. A connection some source uses is not deleted.
"""
import json

from .. import clock
from ..clock import new_id
from ..errors import Conflict, Invalid, NotFound

COLUMNS = "seq, id, name, kind, address, headers, sealed_secret, inside_network, created_at, modified_at"
# Each connection with how many sources read it (sources).
WITH_SOURCES = f"""SELECT {COLUMNS}, (SELECT count(*) FROM sources s WHERE s.connection_seq = c.seq) AS sources
    FROM connections c"""


def shaped(row):
    """A connection's row as a dict, its headers parsed."""
    if row is None:
        return None
    return {**dict(row), "headers": json.loads(row["headers"]), "inside_network": bool(row["inside_network"])}


def listed(db):
    """Every connection, by name, with how many sources use it (sources)."""
    rows = db.execute(f"{WITH_SOURCES} ORDER BY name COLLATE NOCASE, seq").fetchall()
    return [shaped(row) for row in rows]


def page(db, after, limit):
    """Up to limit connections after seq, in creation order, with how many sources use each (sources)."""
    rows = db.execute(f"{WITH_SOURCES} WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)).fetchall()
    return [shaped(row) for row in rows]


def get(db, connection_id):
    """One connection (a dict); NotFound."""
    row = db.execute(f"{WITH_SOURCES} WHERE id = ?", (connection_id,)).fetchone()
    if row is None:
        raise NotFound("connection")
    return shaped(row)


def get_or_invalid(db, connection_id):
    """The connection a body names (a dict); Invalid naming connection_id when there is none."""
    try:
        return get(db, connection_id)
    except NotFound:
        raise Invalid({"connection_id": "No connection has this id."}) from None


def by_seq(db, seq):
    """The connection with this seq (a dict), or None when it is gone."""
    return shaped(db.execute(f"SELECT {COLUMNS} FROM connections WHERE seq = ?", (seq,)).fetchone())


def name_taken(db, name, connection_id=None):
    return db.execute("SELECT 1 FROM connections WHERE name = ? AND id IS NOT ?",
                      (name, connection_id)).fetchone() is not None


def create(db, values, sealed_secret):
    """A new connection from checked values (name, kind, address, headers, inside_network) and the sealed
    secret (None: none); Invalid when the name is taken."""
    if name_taken(db, values["name"]):
        raise Invalid({"name": "Another connection has this name."})
    now = clock.utc_now()
    connection_id = new_id()
    db.execute("""INSERT INTO connections (id, name, kind, address, headers, sealed_secret, inside_network,
                       created_at, modified_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
               (connection_id, values["name"], values["kind"], values["address"],
                json.dumps(values.get("headers") or {}, sort_keys=True), sealed_secret,
                int(bool(values.get("inside_network"))), now, now))
    return get(db, connection_id)


KEEP = object()  # update's sealed_secret when the secret stays as it is


def update(db, stored, values, sealed_secret=KEEP):
    """Changes a connection (get's dict): the fields of values given, and its secret unless KEEP (None: none
    from now on). Its kind never changes (its sources' queries are written for it)."""
    if "kind" in values and values["kind"] != stored["kind"]:
        raise Invalid({"kind": "A connection's kind does not change: add another connection."})
    if "name" in values and name_taken(db, values["name"], stored["id"]):
        raise Invalid({"name": "Another connection has this name."})
    merged = {**stored, **values}
    secret = stored["sealed_secret"] if sealed_secret is KEEP else sealed_secret
    db.execute("""UPDATE connections SET name = ?, address = ?, headers = ?, sealed_secret = ?, inside_network = ?,
                      modified_at = ? WHERE seq = ?""",
               (merged["name"], merged["address"], json.dumps(merged["headers"] or {}, sort_keys=True), secret,
                int(bool(merged["inside_network"])), clock.utc_now(), stored["seq"]))
    return get(db, stored["id"])


def delete(db, stored):
    """Deletes a connection no source uses; Conflict naming how many use it."""
    used = db.execute("SELECT count(*) FROM sources WHERE connection_seq = ?", (stored["seq"],)).fetchone()[0]
    if used:
        raise Conflict(f"{used} key result{'s' if used != 1 else ''} read this connection: remove their sources "
                       "first")
    db.execute("DELETE FROM connections WHERE seq = ?", (stored["seq"],))
