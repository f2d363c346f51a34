"""Prometheus sources against a real Prometheus (Debian's, started by conftest, its history seeded with promtool):
an instant query at a past moment, a range read of one value per day equal to the instant reads, queries that
give several series or nothing."""
import hashlib
import json
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from okr.sources import prometheus
from okr.sources.reading import SourceFailed, read, read_series, replay
from source_servers import connection, seeded_value

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("prometheus")]  # one worker starts the server

NOON = datetime(2026, 8, 15, 12, tzinfo=timezone.utc)
# The end of each day from 10 to 16 August: a fill-back's moments.
DAYS = [datetime(2026, 8, day, 23, 59, 59, tzinfo=timezone.utc) for day in range(10, 17)]
LAST_HOUR = "last_over_time(okr_open_issues[1h])"


def source(query):
    return {"query": query, "path": None}


def test_an_instant_query_at_a_past_moment(prometheus_server):
    reading = read(connection("prometheus", prometheus_server), None, source("okr_open_issues"), NOON)
    assert reading.value == Decimal(str(seeded_value(NOON)))
    assert reading.as_of == NOON
    assert "time=2026-08-15T12%3A00%3A00Z" in reading.request
    assert json.loads(reading.answer)["data"]["resultType"] == "vector"
    again = replay(connection("prometheus", prometheus_server), None, reading.replay)
    assert hashlib.sha256(again.answer).digest() == hashlib.sha256(reading.answer).digest()


def test_a_range_read_gives_each_day_the_instant_value(prometheus_server):
    metrics = connection("prometheus", prometheus_server)
    readings = read_series(metrics, None, source(LAST_HOUR), DAYS)
    instants = [read(metrics, None, source(LAST_HOUR), day) for day in DAYS]
    expected = [Decimal(str(seeded_value(day.replace(minute=0, second=0)))) for day in DAYS]
    assert [reading.value for reading in readings] == [reading.value for reading in instants] == expected
    assert [reading.as_of for reading in readings] == DAYS
    assert len({reading.answer for reading in readings}) == 1 and "/api/v1/query_range?" in readings[0].request
    assert "step=86400s" in readings[0].request
    again = replay(metrics, None, readings[3].replay)
    assert (again.value, again.as_of) == (readings[3].value, DAYS[3])


def test_a_long_range_is_asked_in_parts(prometheus_server, monkeypatch):
    monkeypatch.setattr(prometheus, "MOST_POINTS", 3)
    readings = read_series(connection("prometheus", prometheus_server), None, source(LAST_HOUR), DAYS)
    assert [reading.value for reading in readings] == [
        Decimal(str(seeded_value(day.replace(minute=0, second=0)))) for day in DAYS]
    assert len({reading.request for reading in readings}) == 3


def test_two_series_or_none_fail_plainly(prometheus_server):
    metrics = connection("prometheus", prometheus_server)
    with pytest.raises(SourceFailed, match="the query gave 2 series, not one"):
        read(metrics, None, source("okr_requests"), NOON)
    with pytest.raises(SourceFailed, match="the query gave 2 series, not one"):
        read_series(metrics, None, source("last_over_time(okr_requests[6h])"), DAYS)
    assert read(metrics, None, source("sum(okr_requests)"), NOON).value == 300
    with pytest.raises(SourceFailed, match="no series at that moment"):
        read(metrics, None, source("okr_open_issues"), datetime(2025, 1, 1, tzinfo=timezone.utc))
    with pytest.raises(SourceFailed, match="Prometheus refused the query: .*parse error"):
        read(metrics, None, source("sum(("), NOON)
    with pytest.raises(SourceFailed, match="range of values"):
        read(metrics, None, source("okr_open_issues[1h]"), NOON)
    with pytest.raises(SourceFailed, match="NaN, not a number"):
        read(metrics, None, source("okr_open_issues / 0 * 0"), NOON)


def test_a_missing_day_is_named(prometheus_server):
    late = [datetime(2026, 9, 29, 23, 59, 59, tzinfo=timezone.utc) + timedelta(days=n) for n in range(4)]
    with pytest.raises(SourceFailed, match="Prometheus has no value for 2026-10-01"):
        read_series(connection("prometheus", prometheus_server), None, source(LAST_HOUR), late)
    uneven = [DAYS[0], DAYS[1], DAYS[3]]
    with pytest.raises(SourceFailed, match="evenly spaced"):
        read_series(connection("prometheus", prometheus_server), None, source(LAST_HOUR), uneven)


def test_prometheus_on_loopback_needs_inside_our_network(prometheus_server):
    with pytest.raises(SourceFailed, match='"inside our network"'):
        read(connection("prometheus", prometheus_server, inside_network=False), None, source("up"), NOON)
