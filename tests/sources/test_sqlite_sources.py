"""SQLite sources: a file opened read only, one SELECT within the statement limit, :as_of as RFC 3339 text."""
import hashlib
import sqlite3
from datetime import datetime, timezone
from decimal import Decimal

import pytest

from okr.sources import sql_queries
from okr.sources.reading import SourceFailed, read, read_series, replay
from source_servers import ISSUES, connection

END_OF_MARCH = datetime(2026, 3, 31, 23, 59, 59, tzinfo=timezone.utc)
COUNT_AS_OF = "SELECT count(*) FROM issues WHERE opened_at <= :as_of"


@pytest.fixture
def metrics(tmp_path):
    path = tmp_path / "metrics.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE issues (id INTEGER PRIMARY KEY, opened_at TEXT NOT NULL, closed_at TEXT)")
        db.executemany("INSERT INTO issues VALUES (?, ?, ?)",
                       [(number, f"{opened:%Y-%m-%dT%H:%M:%SZ}", closed and f"{closed:%Y-%m-%dT%H:%M:%SZ}")
                        for number, opened, closed in ISSUES])
        db.execute("CREATE TABLE figures (name TEXT, amount, label TEXT)")
        db.executemany("INSERT INTO figures VALUES (?, ?, ?)", [("revenue", 1234.5, "42.5"), ("words", None, "many"),
                                                                ("real", 0.1, "x")])
    db.close()
    return connection("sqlite", str(path))


def source(query):
    return {"query": query, "path": None}


def test_a_count_now_and_as_of(metrics):
    assert read(metrics, None, source("SELECT count(*) FROM issues")).value == len(ISSUES)
    reading = read(metrics, None, source(COUNT_AS_OF), END_OF_MARCH)
    assert reading.value == sum(opened <= END_OF_MARCH for _, opened, _ in ISSUES) == 29
    assert reading.as_of == END_OF_MARCH
    assert reading.request == f"{COUNT_AS_OF}  -- :as_of = 2026-03-31T23:59:59Z"
    assert reading.replay["moment"] == "2026-03-31T23:59:59Z"


def test_values_of_every_type(metrics):
    assert read(metrics, None, source("SELECT amount FROM figures WHERE name = 'revenue'")).value == Decimal("1234.5")
    assert read(metrics, None, source("SELECT label FROM figures WHERE name = 'revenue'")).value == Decimal("42.5")
    assert read(metrics, None, source("SELECT amount FROM figures WHERE name = 'real'")).value == Decimal("0.1")


@pytest.mark.parametrize("query, words", [
    ("SELECT id FROM issues WHERE id > 100", "returned no rows, not one"),
    ("SELECT id FROM issues WHERE id <= 3", "returned 3 rows, not one"),
    ("SELECT id FROM issues", "returned 40 rows, not one"),
    ("SELECT id, opened_at FROM issues WHERE id = 1", "returned 2 columns, not one"),
    ("SELECT label FROM figures WHERE name = 'words'", "'many', not a number"),
    ("SELECT amount FROM figures WHERE name = 'words'", "null, not a number"),
    ("SELECT count(*) FROM nowhere", "SQLite: no such table: nowhere"),
    ("SELECT count(*) FROM issues; DELETE FROM issues", "one statement"),
])
def test_results_that_are_not_one_number(metrics, query, words):
    with pytest.raises(SourceFailed, match=words):
        read(metrics, None, source(query))


def test_the_file_is_opened_read_only(metrics, monkeypatch):
    with pytest.raises(SourceFailed, match="only read: it holds INSERT, INTO"):
        read(metrics, None, source("WITH x AS (SELECT 1) INSERT INTO figures VALUES ('a', 1, 'b')"))
    # Past the check (as a write it missed would be), SQLite itself refuses: the file is opened read only.
    monkeypatch.setattr(sql_queries, "sql_problem", lambda query: None)
    with pytest.raises(SourceFailed, match="SQLite: attempt to write a readonly database"):
        read(metrics, None, source("INSERT INTO figures VALUES ('a', 1, 'b')"))
    assert read(metrics, None, source("SELECT count(*) FROM figures")).value == 3


def test_a_slow_query_is_stopped(metrics):
    slow = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
    with pytest.raises(SourceFailed, match="ran longer than 0.3 s and was stopped"):
        read(metrics, None, source(slow), timeout=0.3)


def test_a_missing_file_or_another_kind_of_file(tmp_path):
    with pytest.raises(SourceFailed, match=f"there is no file {tmp_path}/gone.db"):
        read(connection("sqlite", str(tmp_path / "gone.db")), None, source("SELECT 1"))
    (tmp_path / "notes.txt").write_text("not a database, " * 100)
    with pytest.raises(SourceFailed, match="is not a SQLite database"):
        read(connection("sqlite", str(tmp_path / "notes.txt")), None, source("SELECT 1"))
    assert not (tmp_path / "gone.db").exists()


def test_replay_and_a_series(metrics):
    first = read(metrics, None, source(COUNT_AS_OF), END_OF_MARCH)
    again = replay(metrics, None, first.replay)
    assert (again.value, again.as_of, hashlib.sha256(again.answer).digest()) == \
        (first.value, first.as_of, hashlib.sha256(first.answer).digest())
    moments = [datetime(2026, 1, day, 23, 59, 59, tzinfo=timezone.utc) for day in (12, 13, 16)]
    assert [reading.value for reading in read_series(metrics, None, source(COUNT_AS_OF), moments)] == [3, 4, 5]
