"""PLACEHOLDER (replaced by the readers' branch): the interface the runner calls."""
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

KINDS = ("http_json", "csv", "postgresql", "sqlite", "prometheus")


class SourceFailed(Exception):
    pass


@dataclass(frozen=True)
class Reading:
    value: Decimal
    request: str
    replay: dict
    answer: bytes
    as_of: datetime | None


def connection_problem(kind, address, headers):
    return None if kind in KINDS else "unknown kind"


def source_problem(kind, query, path):
    return {}


def takes_as_of(kind, query):
    return kind == "prometheus" or "{as_of}" in query or ":as_of" in query


def read(connection, secret, source, as_of=None, timeout=30):
    import sqlite3, json
    if connection["kind"] != "sqlite":
        raise SourceFailed("not built")
    at = None if as_of is None else as_of.strftime("%Y-%m-%dT%H:%M:%SZ")
    return replay(connection, secret, {"query": source["query"], "as_of": at}, timeout)


def read_series(connection, secret, source, moments, timeout=30):
    return [read(connection, secret, source, moment, timeout) for moment in moments]


def replay(connection, secret, spec, timeout=30):
    import sqlite3, json
    try:
        db = sqlite3.connect(f"file:{connection['address']}?mode=ro", uri=True)
        rows = db.execute(spec["query"], {"as_of": spec["as_of"]} if ":as_of" in spec["query"] else {}).fetchall()
        db.close()
    except sqlite3.Error as error:
        raise SourceFailed(f"the query failed: {error}")
    if len(rows) != 1:
        raise SourceFailed(f"the query returned {len(rows)} rows, not one")
    as_of = None if spec["as_of"] is None else datetime.strptime(spec["as_of"], "%Y-%m-%dT%H:%M:%SZ")
    return Reading(Decimal(str(rows[0][0])), spec["query"], spec, json.dumps(rows).encode(), as_of)
