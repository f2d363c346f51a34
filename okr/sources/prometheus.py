"""Prometheus sources: a PromQL expression read through Prometheus's HTTP API, at one moment
(/api/v1/query) or at evenly spaced moments (/api/v1/query_range, for filling back a history)."""
import json
from decimal import Decimal
from urllib.parse import urlencode

from . import fetching
from .values import Reading, SourceFailed, masked, moment_text, number

# Prometheus answers at most this many points of a series per range query: longer ranges are asked in parts.
MOST_POINTS = 11_000


def query_problem(query):
    if not isinstance(query, str) or not query.strip():
        return "the query must be a PromQL expression, such as sum(up{job=\"api\"})"
    if "\x00" in query:
        return "the query may not hold a NUL character"
    return None


def answer_data(answer, secret):
    """The data of Prometheus's JSON answer; SourceFailed with Prometheus's own error when it refused."""
    try:
        document = json.loads(answer.body.decode("utf-8"), parse_float=Decimal)
    except (UnicodeDecodeError, ValueError, RecursionError):
        if 200 <= answer.status < 300:
            raise SourceFailed("the answer is not Prometheus's JSON: is the address a Prometheus server?") from None
        raise SourceFailed(fetching.status_failure(answer, secret)) from None
    if not isinstance(document, dict) or document.get("status") != "success":
        error = document.get("error") if isinstance(document, dict) else None
        if error:
            raise SourceFailed(masked(f"Prometheus refused the query: {error}", secret))
        raise SourceFailed(fetching.status_failure(answer, secret))
    data = document.get("data")
    if not isinstance(data, dict):
        raise SourceFailed("the answer is not Prometheus's JSON: is the address a Prometheus server?")
    return data


def sample_value(pair):
    """A sample's value ([timestamp, "text"]) as a finite Decimal."""
    text = pair[1] if isinstance(pair, list) and len(pair) == 2 else None
    if isinstance(text, str) and text.strip() in ("NaN", "+Inf", "-Inf", "Inf"):
        raise SourceFailed(f"the query's value is {text.strip()}, not a number")
    return number(text, "the query's value")


def fetch(connection, secret, url, timeout):
    headers = fetching.headers_with(connection.get("headers") or {}, secret)
    return fetching.get_any(url, headers, bool(connection.get("inside_network")), timeout, secret,
                            accept="application/json")


def instant_url(address, query, moment):
    return f"{address.rstrip('/')}/api/v1/query?" + urlencode({"query": query, "time": moment})


def range_url(address, query, start, end, step):
    return f"{address.rstrip('/')}/api/v1/query_range?" + urlencode(
        {"query": query, "start": moment_text(start), "end": moment_text(end), "step": f"{step}s"})


def instant(connection, secret, url, asked, timeout):
    """The Reading of an instant query's URL; asked: the moment asked for (None for now)."""
    answer = fetch(connection, secret, url, timeout)
    data = answer_data(answer, secret)
    kind, result = data.get("resultType"), data.get("result")
    if kind == "scalar":
        value = sample_value(result)
    elif kind == "vector" and isinstance(result, list):
        if len(result) != 1:
            raise SourceFailed("the query gave no series at that moment, not one" if not result
                               else f"the query gave {len(result)} series, not one: sum them or pick one by "
                               "its labels")
        value = sample_value(result[0].get("value"))
    elif kind == "matrix":
        raise SourceFailed("the query gives a range of values (a range vector), not one: wrap it in a function "
                           "such as increase() or last_over_time()")
    else:
        raise SourceFailed(f"the query gives {kind or 'nothing'}, not a number")
    spec = {"kind": "prometheus", "url": url, "as_of": None if asked is None else moment_text(asked)}
    return Reading(value, masked(url, secret), spec, answer.body, asked)


def spacing(moments):
    """The step between the moments, in whole seconds; SourceFailed when they are not evenly spaced."""
    steps = {int((later - earlier).total_seconds()) for earlier, later in zip(moments, moments[1:])}
    if len(steps) != 1 or min(steps) <= 0:
        raise SourceFailed("the moments to fill back must be evenly spaced, ascending")
    return steps.pop()


def series(connection, secret, query, moments, timeout):
    """One Reading per moment, from range queries of at most MOST_POINTS points each."""
    step = spacing(moments)
    readings = []
    for start in range(0, len(moments), MOST_POINTS):
        part = moments[start:start + MOST_POINTS]
        url = range_url(connection["address"], query, part[0], part[-1], step)
        readings += range_readings(connection, secret, url, part, timeout)
    return readings


def range_readings(connection, secret, url, moments, timeout):
    """The Readings, one per moment, of a range query's URL."""
    answer = fetch(connection, secret, url, timeout)
    data = answer_data(answer, secret)
    result = data.get("result")
    if data.get("resultType") != "matrix" or not isinstance(result, list):
        raise SourceFailed("the answer is not a range of values")
    if len(result) > 1:
        raise SourceFailed(f"the query gave {len(result)} series, not one: sum them or pick one by its labels")
    samples = {}
    for pair in (result[0].get("values") or []) if result else []:
        samples[round(Decimal(str(pair[0])) * 1000)] = pair
    readings = []
    for moment in moments:
        pair = samples.get(round(Decimal(str(moment.timestamp())) * 1000))
        if pair is None:
            raise SourceFailed(f"Prometheus has no value for {moment:%Y-%m-%d} ({moment_text(moment)}): the query "
                               "gave nothing at that moment")
        spec = {"kind": "prometheus", "url": url, "as_of": moment_text(moment), "range": True}
        readings.append(Reading(sample_value(pair), masked(url, secret), spec, answer.body, moment))
    return readings


def one_of_range(connection, secret, url, moment, timeout):
    """The Reading for moment from a range query's URL run again."""
    return next(reading for reading in range_readings(connection, secret, url, [moment], timeout))
