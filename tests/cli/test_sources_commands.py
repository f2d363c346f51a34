"""okr sources: list, test, sync, fill and recompute, over an SQLite file as the source (a real reader)."""
import json
import sqlite3
from contextlib import closing

import pytest


@pytest.fixture
def attached(client, clock, tmp_path):
    """A key result of a dated cycle attached to an SQLite file of daily figures; the clock on 10 January."""
    path = tmp_path / "metrics.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE figures (day TEXT, value REAL)")
        db.executemany("INSERT INTO figures VALUES (?, ?)", [(f"2026-01-{d:02}", d * 2) for d in range(1, 10)])
        db.commit()
    clock.now = "2026-01-01T08:00:00Z"
    cycle = client.post("/v1/cycles", json={"name": "Q1", "starts_on": "2026-01-01", "ends_on": "2026-03-31"})
    objective = client.post("/v1/objectives", json={"name": "o", "cycle_id": cycle.get_json()["id"],
                                                    "is_company": False, "is_personal": False}).get_json()
    kr = client.post(f"/v1/objectives/{objective['id']}/keyresults",
                     json={"name": "Signups", "type": "baseline"}).get_json()
    connection = client.post("/v1/connections", json={"name": "Warehouse", "kind": "sqlite",
                                                      "address": str(path)}).get_json()
    client.put(f"/v1/keyresults/{kr['id']}/source", json={
        "connection_id": connection["id"],
        "query": "SELECT value FROM figures WHERE day <= substr(:as_of, 1, 10) ORDER BY day DESC LIMIT 1"})
    clock.now = "2026-01-10T08:00:00Z"
    return {"key_result": kr, "path": path}


def test_list_test_sync_and_recompute(runner, client, attached):
    key_result = attached["key_result"]["id"]
    listed = runner.invoke(args=["sources", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    row = json.loads(listed.output.splitlines()[-1])
    assert (row["key_result"], row["connection"], row["state"]) == ("Signups", "Warehouse", "active")

    tested = runner.invoke(args=["sources", "test", key_result])
    assert tested.exit_code == 0 and "value:   18.00" in tested.output
    assert len(client.get(f"/v1/keyresults/{key_result}/checkins").get_json()["checkins"]) == 1

    synced = runner.invoke(args=["sources", "sync", key_result])
    assert synced.exit_code == 0 and "wrote 18.00" in synced.output
    again = runner.invoke(args=["sources", "sync", key_result])
    assert "as before: nothing written" in again.output
    checkin = client.get(f"/v1/keyresults/{key_result}/checkins").get_json()["checkins"][-1]["id"]
    assert "the answer matches" in runner.invoke(args=["sources", "recompute", checkin]).output
    with closing(sqlite3.connect(attached["path"])) as db:
        db.execute("UPDATE figures SET value = 99 WHERE day = '2026-01-09'")
        db.commit()
    changed = runner.invoke(args=["sources", "recompute", checkin])
    assert changed.exit_code == 1 and "the answer changed" in changed.output and "99.00 now" in changed.output


def test_fill_writes_the_days_back_and_says_so(runner, client, attached):
    key_result = attached["key_result"]["id"]
    filled = runner.invoke(args=["sources", "fill", key_result])
    assert filled.exit_code == 0, filled.output
    assert "read 9 values, wrote 9" in filled.output
    values = [c["value"] for c in client.get(f"/v1/keyresults/{key_result}/checkins").get_json()["checkins"]]
    assert values == ["0.00", *[f"{d * 2}.00" for d in range(1, 10)]]


@pytest.mark.parametrize(("args", "message"), [
    (["sources", "sync", "00000000-0000-4000-8000-000000000000"], "has no source"),
    (["sources", "fill", "KR", "--from", "soon"], "is not a date"),
    (["sources", "recompute", "00000000-0000-4000-8000-000000000000"], "was not written by a source"),
])
def test_bad_input_is_one_plain_line(runner, attached, args, message):
    args = [attached["key_result"]["id"] if arg == "KR" else arg for arg in args]
    result = runner.invoke(args=args)
    assert result.exit_code != 0 and message in result.output
    assert "Traceback" not in result.output


def test_a_failing_source_exits_non_zero_with_its_reason(runner, attached):
    with closing(sqlite3.connect(attached["path"])) as db:
        db.execute("DROP TABLE figures")
        db.commit()
    failed = runner.invoke(args=["sources", "sync", attached["key_result"]["id"]])
    assert failed.exit_code == 1 and "no such table: figures" in failed.output and "1 in a row" in failed.output
