"""Reading a source's number: the interface the runner, the API and the commands call.

A connection is {"kind", "address", "headers": {name: value}, "inside_network": bool}, a source {"query",
"path"}; a secret is the connection's decrypted secret (or None), which no Reading, replay spec or error holds.
"""
from datetime import datetime, timezone

from . import documents, fetching, prometheus, sql_queries
from .values import Reading, SourceFailed, checked_moment, masked, moment_of, moment_text

KINDS = ("http_json", "csv", "postgresql", "sqlite", "prometheus")
OVER_HTTP = ("http_json", "csv", "prometheus")
SQL = ("postgresql", "sqlite")

__all__ = ["KINDS", "SourceFailed", "Reading", "connection_problem", "source_problem", "takes_as_of", "read",
           "read_series", "replay"]


def connection_problem(kind, address, headers):
    """Why an admin's connection cannot be saved (a sentence), or None."""
    if kind not in KINDS:
        return f"the kind must be one of {', '.join(KINDS)}"
    if kind in OVER_HTTP:
        problem = fetching.address_problem(address)
    elif kind == "postgresql":
        problem = sql_queries.postgresql_problem(address)
    else:
        problem = sql_queries.sqlite_problem(address)
    # An SQL connection sends no headers; they are held to the same rule all the same.
    return problem or fetching.headers_problem(headers or {})


def source_problem(kind, query, path):
    """{field: sentence} of what is wrong in an editor's source (query, path), {} when nothing."""
    problems = {}
    if kind in ("http_json", "csv"):
        problems["query"] = fetching.query_problem(query)
        problems["path"] = documents.path_problem(path) if kind == "http_json" else documents.cell_problem(path)
    elif kind in SQL:
        problems["query"] = sql_queries.sql_problem(query)
    elif kind == "prometheus":
        problems["query"] = prometheus.query_problem(query)
    else:
        return {"kind": f"the kind must be one of {', '.join(KINDS)}"}
    if kind not in ("http_json", "csv") and path:
        problems["path"] = f"a {kind} source has no path: its query gives the number"
    return {field: sentence for field, sentence in problems.items() if sentence}


def takes_as_of(kind, query):
    """Whether a source can be read for a past moment (fill-back)."""
    if kind == "prometheus":
        return True
    if kind in SQL:
        return sql_queries.takes_as_of(query)
    return kind in KINDS and isinstance(query, str) and fetching.AS_OF in query


def checked(connection, source):
    kind = connection.get("kind")
    problem = connection_problem(kind, connection.get("address"), connection.get("headers") or {})
    if problem:
        raise SourceFailed(f"the connection: {problem}")
    problems = source_problem(kind, source.get("query"), source.get("path"))
    if problems:
        raise SourceFailed("; ".join(f"the {field}: {sentence}" for field, sentence in problems.items()))
    return kind


def read(connection, secret, source, as_of=None, timeout=30):
    """Reads a source's number now (as_of None) or for the moment as_of (an aware UTC datetime)."""
    kind = checked(connection, source)
    asked = None if as_of is None else checked_moment(as_of)
    moment = moment_text(asked or datetime.now(timezone.utc))
    if kind in ("http_json", "csv"):
        url = fetching.joined(connection["address"], source["query"], moment)
        spec = {"kind": kind, "url": url, "path": source["path"]}
    elif kind in SQL:
        spec = {"kind": kind, "query": source["query"],
                "moment": moment if sql_queries.takes_as_of(source["query"]) else None}
    else:
        spec = {"kind": kind, "url": prometheus.instant_url(connection["address"], source["query"], moment)}
    spec["as_of"] = None if asked is None else moment_text(asked)
    return replay(connection, secret, spec, timeout)


def read_series(connection, secret, source, moments, timeout=30):
    """One Reading per moment (aware UTC datetimes, ascending); SourceFailed at the first failure."""
    moments = [checked_moment(moment) for moment in moments]
    if any(later <= earlier for earlier, later in zip(moments, moments[1:])):
        raise SourceFailed("the moments to fill back must be in ascending order")
    kind = checked(connection, source)
    if kind == "prometheus" and len(moments) > 1:
        return prometheus.series(connection, secret, source["query"], moments, timeout)
    return [read(connection, secret, source, moment, timeout) for moment in moments]


def replay(connection, secret, spec, timeout=30):
    """Runs again what a Reading's replay dict says (the very request) and returns the new Reading."""
    kind = connection.get("kind")
    if not isinstance(spec, dict) or spec.get("kind") != kind:
        raise SourceFailed(f"what was run was for a {spec.get('kind') if isinstance(spec, dict) else '?'} "
                           f"source, and the connection is now a {kind} one")
    problem = connection_problem(kind, connection.get("address"), connection.get("headers") or {})
    if problem:
        raise SourceFailed(f"the connection: {problem}")
    asked = moment_of(spec.get("as_of"))
    if kind in ("http_json", "csv"):
        url = spec["url"]
        fetching.check_under(connection["address"], url)
        headers = fetching.headers_with(connection.get("headers") or {}, secret)
        accept = "application/json" if kind == "http_json" else "text/csv, text/plain;q=0.9, */*;q=0.5"
        answer = fetching.get(url, headers, bool(connection.get("inside_network")), timeout, secret, accept)
        if kind == "http_json":
            value = documents.json_number(answer.body, spec["path"])
        else:
            value = documents.csv_number(answer.body, spec["path"], answer.content_type)
        return Reading(value, masked(url, secret), spec, answer.body, asked)
    if kind in SQL:
        query, moment = spec["query"], spec.get("moment")
        if kind == "postgresql":
            result = sql_queries.run_postgresql(connection["address"], secret, query, moment, timeout)
        else:
            result = sql_queries.run_sqlite(connection["address"], query, moment, timeout)
        value = sql_queries.one_number(*result)
        shown = masked(query if moment is None else f"{query}  -- :as_of = {moment}", secret)
        return Reading(value, shown, spec, sql_queries.answer_of(*result[:2]), asked)
    url = spec["url"]
    fetching.check_under(connection["address"], url)
    if spec.get("range"):
        return prometheus.one_of_range(connection, secret, url, asked, timeout)
    return prometheus.instant(connection, secret, url, asked, timeout)
