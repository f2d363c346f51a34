"""PostgreSQL sources against a real server (Debian's postgresql, started by conftest as an unprivileged user):
a count, :as_of, a wrong password's message without the password, a write refused by the read-only
transaction, a slow query stopped by the statement timeout, results that are not one number."""
import hashlib
import sys
from datetime import datetime, timezone
from decimal import Decimal

import pytest

from okr.sources.reading import SourceFailed, read, read_series, replay
from source_servers import ISSUES, PG_PASSWORD, connection

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("postgresql")]  # one worker starts the server

END_OF_MARCH = datetime(2026, 3, 31, 23, 59, 59, tzinfo=timezone.utc)
COUNT_AS_OF = "SELECT count(*) FROM issues WHERE opened_at <= :as_of"


def source(query):
    return {"query": query, "path": None}


def test_a_count_now_and_as_of(postgresql):
    metrics = connection("postgresql", postgresql)
    assert read(metrics, PG_PASSWORD, source("SELECT count(*) FROM issues WHERE closed_at IS NULL")).value == 20
    reading = read(metrics, PG_PASSWORD, source(COUNT_AS_OF + "::timestamptz"), END_OF_MARCH)
    assert reading.value == sum(opened <= END_OF_MARCH for _, opened, _ in ISSUES) == 29
    assert reading.as_of == END_OF_MARCH and PG_PASSWORD not in reading.request + str(reading.replay)
    moments = [datetime(2026, 1, day, 23, 59, 59, tzinfo=timezone.utc) for day in (12, 13, 16)]
    assert [r.value for r in read_series(metrics, PG_PASSWORD, source(COUNT_AS_OF), moments)] == [3, 4, 5]
    again = replay(metrics, PG_PASSWORD, reading.replay)
    assert (again.value, hashlib.sha256(again.answer).digest()) == (reading.value, hashlib.sha256(reading.answer).digest())


def test_numbers_of_each_type(postgresql):
    metrics = connection("postgresql", postgresql)
    assert read(metrics, PG_PASSWORD, source("SELECT amount FROM figures WHERE name = 'revenue'")).value == \
        Decimal("1234.50")
    assert read(metrics, PG_PASSWORD, source("SELECT label FROM figures WHERE name = 'revenue'")).value == \
        Decimal("42.5")
    assert read(metrics, PG_PASSWORD, source("SELECT 0.25::float8")).value == Decimal("0.25")
    assert read(metrics, PG_PASSWORD, source("SELECT 5 WHERE 'a%' LIKE 'a%' AND :as_of::date = '2026-03-31'"),
                END_OF_MARCH).value == 5


def test_a_wrong_password_says_so_without_the_password(postgresql):
    with pytest.raises(SourceFailed) as failed:
        read(connection("postgresql", postgresql), "Wrong-Pa55word", source("SELECT 1"))
    assert "password authentication failed" in str(failed.value)
    assert "Wrong-Pa55word" not in str(failed.value) and PG_PASSWORD not in str(failed.value)


def test_a_write_is_refused_by_the_check_and_by_the_read_only_transaction(postgresql):
    metrics = connection("postgresql", postgresql)
    with pytest.raises(SourceFailed, match="only read: it holds DELETE"):
        read(metrics, PG_PASSWORD, source("WITH gone AS (DELETE FROM issues RETURNING 1) SELECT count(*) FROM gone"))
    # A SELECT that writes gets past the check: the read-only transaction refuses it.
    with pytest.raises(SourceFailed, match="cannot execute nextval\\(\\) in a read-only transaction"):
        read(metrics, PG_PASSWORD, source("SELECT nextval('tickets')"))
    assert read(metrics, PG_PASSWORD, source("SELECT count(*) FROM issues")).value == len(ISSUES)


def test_a_slow_query_is_stopped_by_the_statement_timeout(postgresql):
    with pytest.raises(SourceFailed, match="ran longer than 1 s and was stopped"):
        read(connection("postgresql", postgresql), PG_PASSWORD, source("SELECT 1 FROM pg_sleep(5)"), timeout=1)


@pytest.mark.parametrize("query, words", [
    ("SELECT id FROM issues WHERE id > 100", "returned no rows, not one"),
    ("SELECT id FROM issues WHERE id <= 2", "returned 2 rows, not one"),
    ("SELECT id, opened_at FROM issues WHERE id = 1", "returned 2 columns, not one"),
    ("SELECT label FROM figures WHERE name = 'words'", "'many', not a number"),
    ("SELECT amount FROM figures WHERE name = 'words'", "null, not a number"),
    ("SELECT count(*) FROM nowhere", 'PostgreSQL: relation "nowhere" does not exist'),
])
def test_results_that_are_not_one_number(postgresql, query, words):
    with pytest.raises(SourceFailed, match=words):
        read(connection("postgresql", postgresql), PG_PASSWORD, source(query))


def test_nothing_listening_fails_plainly():
    with pytest.raises(SourceFailed, match="PostgreSQL: connection .* failed"):
        read(connection("postgresql", "postgresql://okr@127.0.0.1:9/metrics"), "pw", source("SELECT 1"), timeout=2)


def test_without_a_libpq_a_postgresql_source_says_what_to_install(monkeypatch):
    # The single file leaves psycopg's own libpq out: where the system has none either, psycopg cannot load.
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg then raises ImportError
    with pytest.raises(SourceFailed, match="PostgreSQL sources need libpq on this machine .*apt-get install libpq5"):
        read(connection("postgresql", "postgresql://okr@127.0.0.1:9/metrics"), "pw", source("SELECT 1"), timeout=2)
