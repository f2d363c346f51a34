"""A key result that follows a source, through the API, on a faked clock: Sync now writes a changed value as a
check-in by the source with its evidence, keeps the confidence people gave, writes nothing outside its cycle;
failures back off, reach the feed and the owner's mail, and stop the source; fill-back gives the same history as
a source attached from the start; Recompute tells a changed answer.

The source here is an SQLite file (the sqlite kind): a real reader, in-process.
"""
import hashlib
import json
import os
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone

import pytest

from okr.outbound import smtp
from okr.server import background
from okr.sources import syncing
from okr.db import transaction
from okr.store import schema, sources, users, webhooks

START = "2026-01-01"
END = "2026-03-31"


NOW_QUERY = "SELECT value FROM figures ORDER BY day DESC LIMIT 1"
AS_OF_QUERY = "SELECT value FROM figures WHERE day <= substr(:as_of, 1, 10) ORDER BY day DESC LIMIT 1"


@pytest.fixture
def quarter(client, clock):
    """A cycle of the first quarter of 2026 with an objective and a positive key result (start 0, target 100),
    made on 1 January."""
    clock.now = "2026-01-01T09:00:00Z"
    cycle = client.post("/v1/cycles", json={"name": "Q1", "starts_on": START, "ends_on": END}).get_json()
    objective = client.post("/v1/objectives", json={"name": "Grow", "cycle_id": cycle["id"], "is_company": False,
                                                    "is_personal": False}).get_json()
    key_result = client.post(f"/v1/objectives/{objective['id']}/keyresults", json={
        "name": "Customers", "type": "positive", "current_value": "0", "target_value_min": "100",
        "confidence": "0.7"}).get_json()
    return {"cycle": cycle, "objective": objective, "key_result": key_result}


def attach(client, key_result_id, address, query=NOW_QUERY, name="Metrics"):
    connection = client.post("/v1/connections", json={"name": name, "kind": "sqlite", "address": address})
    assert connection.status_code == 200, connection.get_json()
    source = client.put(f"/v1/keyresults/{key_result_id}/source",
                        json={"connection_id": connection.get_json()["id"], "query": query})
    assert source.status_code == 200, source.get_json()
    return source.get_json()


def history(client, key_result_id):
    return [(c["created_at"], c["value"], c["confidence"], c["author_id"])
            for c in client.get(f"/v1/keyresults/{key_result_id}/checkins?page_size=1000").get_json()["checkins"]]


def sync(client, key_result_id):
    response = client.post(f"/v1/keyresults/{key_result_id}/source/sync")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_a_changed_value_is_a_check_in_by_the_source_with_its_evidence_and_an_unchanged_one_is_not(
        client, clock, quarter, metrics):
    key_result = quarter["key_result"]["id"]
    metrics.set("2026-01-05", 12)
    attach(client, key_result, metrics.address)
    clock.now = "2026-01-05T10:00:00Z"
    first = sync(client, key_result)
    assert first["outcome"] == "written" and first["value"] == "12.00"
    rows = history(client, key_result)
    assert rows[-1] == ("2026-01-05T10:00:00Z", "12.00", "0.70", None)  # the confidence people gave last
    assert client.get(f"/v1/keyresults/{key_result}").get_json()["current_value"] == "12.00"

    clock.now = "2026-01-05T11:00:00Z"
    assert sync(client, key_result)["outcome"] == "unchanged"
    assert len(history(client, key_result)) == 2

    metrics.set("2026-01-06", 15.5)
    clock.now = "2026-01-06T10:00:00Z"
    written = sync(client, key_result)
    assert written["outcome"] == "written" and written["value"] == "15.50"
    evidence = client.get(f"/v1/checkins/{written['checkin_id']}/evidence").get_json()
    answer = client.get(f"/v1/checkins/{written['checkin_id']}/evidence/answer").data
    assert evidence["source_name"] == "Metrics" and evidence["request"] == NOW_QUERY
    assert evidence["read_at"] == "2026-01-06T10:00:00Z" and evidence["value"] == "15.50"
    assert evidence["sha256"] == hashlib.sha256(answer).hexdigest() and evidence["answer_size"] == len(answer)
    assert b"15.5" in answer

    events = client.get("/v1/events?type=checkin.created&page_size=100").get_json()["events"]
    by_source = [event for event in events if event["actor"]["type"] == "source"]
    assert [event["data"]["value"] for event in by_source] == ["12.00", "15.50"]
    assert {event["actor"]["name"] for event in by_source} == {"Metrics"}


def test_a_person_s_check_in_sets_the_confidence_the_source_keeps(client, clock, quarter, metrics):
    key_result = quarter["key_result"]["id"]
    attach(client, key_result, metrics.address)
    clock.now = "2026-01-10T10:00:00Z"
    client.post(f"/v1/keyresults/{key_result}/checkins", json={"value": "3", "confidence": "0.4"})
    metrics.set("2026-01-10", 20)
    sync(client, key_result)
    assert history(client, key_result)[-1][1:3] == ("20.00", "0.40")


@pytest.mark.parametrize(("moment", "reason"), [("2025-12-31T23:59:00Z", "its cycle has not begun"),
                                                ("2026-04-01T00:00:00Z", "its cycle has ended")])
def test_nothing_is_written_outside_the_cycle(client, clock, quarter, metrics, moment, reason):
    key_result = quarter["key_result"]["id"]
    metrics.set("2025-12-01", 40)
    attach(client, key_result, metrics.address)
    clock.now = moment
    idle = sync(client, key_result)
    assert (idle["outcome"], idle["reason"], idle["checkin_id"]) == ("idle", reason, None)
    assert len(history(client, key_result)) == 1


def test_nothing_is_written_in_a_closed_cycle(client, clock, quarter, metrics):
    key_result = quarter["key_result"]["id"]
    metrics.set("2026-01-02", 40)
    attach(client, key_result, metrics.address)
    clock.now = "2026-03-31T12:00:00Z"
    assert client.post(f"/v1/cycles/{quarter['cycle']['id']}/close").status_code == 200
    idle = sync(client, key_result)
    assert (idle["outcome"], idle["reason"]) == ("idle", "its cycle is closed")


def test_a_value_with_more_fraction_digits_than_a_key_result_holds_is_rounded(client, clock, quarter, metrics):
    key_result = quarter["key_result"]["id"]
    metrics.set("2026-01-02", 1.23456789)
    attach(client, key_result, metrics.address)
    clock.now = "2026-01-02T10:00:00Z"
    assert sync(client, key_result)["value"] == "1.234568"


def source_state(client, key_result_id):
    return client.get(f"/v1/keyresults/{key_result_id}/source").get_json()


def test_failures_keep_the_last_value_back_off_reach_the_feed_and_the_owner_and_stop_the_source(
        client, clock, quarter, metrics, monkeypatch, app):
    sent = []
    monkeypatch.setattr(smtp, "send", lambda settings, message: sent.append(message))
    app.config.update(SMTP_URL="smtp://localhost:2525", MAIL_FROM="okr@example.com")
    with app.app_context(), transaction() as db:
        owner = users.create(db, "Ola Owner", "ola@example.com", "editor")
    key_result = quarter["key_result"]["id"]
    client.patch(f"/v1/keyresults/{key_result}", json={"owner_id": owner["id"]})
    metrics.set("2026-01-02", 9)
    attach(client, key_result, metrics.address)
    clock.now = "2026-01-02T10:00:00Z"
    sync(client, key_result)
    with closing(sqlite3.connect(metrics.address)) as db:
        db.execute("DROP TABLE figures")
        db.commit()

    waits = []
    for run in range(1, 21):
        clock.now = (datetime(2026, 1, 3, tzinfo=timezone.utc) + timedelta(hours=run)).strftime("%Y-%m-%dT%H:%M:%SZ")
        failed = sync(client, key_result)
        assert failed["outcome"] == "failed" and failed["failures"] == run
        assert "no such table: figures" in failed["error"]
        state = source_state(client, key_result)
        waits.append((datetime.fromisoformat(state["next_run_at"][:-1]) -
                      datetime.fromisoformat(clock.now[:-1])).total_seconds())
        assert state["failing_since"] == "2026-01-03T01:00:00Z"
        assert client.get(f"/v1/keyresults/{key_result}").get_json()["current_value"] == "9.00"
        assert len(sent) == (1 if run >= 3 else 0)  # one email, after the third failure in a row
    assert state["state"] == "stopped" and failed["state"] == "stopped"
    for wait, expected in zip(waits, [300, 1800] + [21600] * 17):
        assert expected * 0.9 <= wait <= expected * 1.1
    assert sent[0]["To"] == "Ola Owner <ola@example.com>"
    assert "no such table: figures" in sent[0].get_content()
    assert f"http://127.0.0.1:8080/keyresults/{key_result}/edit" in sent[0].get_content()
    failures = client.get("/v1/events?type=key_result.source_failed&page_size=100").get_json()["events"]
    assert len(failures) == 20 and failures[-1]["data"]["state"] == "stopped"
    assert failures[0]["actor"] == {"type": "source", "id": state["id"], "name": "Metrics"}
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:  # the owner's inbox says so once, at the first
        assert db.execute("SELECT person_id, kind, key_result_id, actor_id FROM notifications").fetchall() == [
            (owner["id"], "source_failed", key_result, None)]

    # A stopped source is not scheduled; Sync now runs it, and a good read makes it active again.
    with closing(schema.connect(app.config["DATABASE"], 1000)) as db:
        assert sources.due(db, "2027-01-01T00:00:00Z", 10) == []
    with closing(sqlite3.connect(metrics.address)) as db:
        db.execute("CREATE TABLE figures (day TEXT PRIMARY KEY, value REAL NOT NULL)")
        db.execute("INSERT INTO figures VALUES ('2026-01-04', 11)")
        db.commit()
    assert sync(client, key_result)["outcome"] == "written"
    assert source_state(client, key_result)["state"] == "active"
    assert source_state(client, key_result)["failures"] == 0


def daily_values(metrics):
    """A figure that moves on most days of January and February, and stays still on some."""
    day = datetime(2026, 1, 1)
    values = {}
    for number in range(59):
        if number % 5 != 3:
            values[(day + timedelta(days=number)).strftime("%Y-%m-%d")] = number * 1.5
    for key, value in values.items():
        metrics.set(key, value)
    return values


def test_filling_back_in_week_6_gives_the_history_a_source_attached_in_week_1_wrote(
        client, clock, quarter, metrics, app):
    daily_values(metrics)
    early = quarter["key_result"]["id"]
    late = client.post(f"/v1/objectives/{quarter['objective']['id']}/keyresults", json={
        "name": "Customers again", "type": "positive", "current_value": "0", "target_value_min": "100",
        "confidence": "0.7"}).get_json()["id"]

    attach(client, early, metrics.address, AS_OF_QUERY, name="Early")
    for number in range(41):  # attached in week 1: runs at the end of every day up to 10 February
        clock.now = f"{(datetime(2026, 1, 1) + timedelta(days=number)).strftime('%Y-%m-%d')}T23:59:59Z"
        sync(client, early)

    clock.now = "2026-02-11T08:00:00Z"  # attached in week 6, filled back to the quarter's start
    attach(client, late, metrics.address, AS_OF_QUERY, name="Late")
    filled = client.post(f"/v1/keyresults/{late}/source/fill", json={"step": "daily"})
    assert filled.status_code == 200, filled.get_json()
    assert filled.get_json()["read"] == 41
    assert history(client, late) == history(client, early)
    assert len(history(client, late)) > 20

    again = client.post(f"/v1/keyresults/{late}/source/fill", json={}).get_json()
    assert again["written"] == 0  # filling twice writes nothing new


def test_fill_back_keeps_a_person_s_check_ins_in_date_order(client, clock, quarter, metrics):
    daily_values(metrics)
    key_result = quarter["key_result"]["id"]
    clock.now = "2026-01-20T12:00:00Z"
    client.post(f"/v1/keyresults/{key_result}/checkins", json={"value": "77", "comment": "by hand"})
    clock.now = "2026-01-25T08:00:00Z"
    attach(client, key_result, metrics.address, AS_OF_QUERY)
    assert client.post(f"/v1/keyresults/{key_result}/source/fill", json={"step": "weekly"}).status_code == 200
    rows = history(client, key_result)
    assert [row[0] for row in rows] == sorted(row[0] for row in rows)
    assert ("2026-01-20T12:00:00Z", "77.00", "0.70", None) in rows
    # 1 January's value is the starting one (0): only changes are written.
    assert [row[0] for row in rows if row[0].endswith("23:59:59Z")] == [
        "2026-01-08T23:59:59Z", "2026-01-15T23:59:59Z", "2026-01-22T23:59:59Z"]


def test_a_source_that_reads_only_the_present_cannot_fill(client, clock, quarter, metrics):
    key_result = quarter["key_result"]["id"]
    attach(client, key_result, metrics.address)
    clock.now = "2026-02-01T08:00:00Z"
    response = client.post(f"/v1/keyresults/{key_result}/source/fill", json={})
    assert response.status_code == 400 and "query" in response.get_json()["details"]


def test_recompute_tells_whether_the_answer_still_matches(client, clock, quarter, metrics):
    key_result = quarter["key_result"]["id"]
    metrics.set("2026-01-02", 5)
    attach(client, key_result, metrics.address)
    clock.now = "2026-01-02T10:00:00Z"
    checkin = sync(client, key_result)["checkin_id"]
    same = client.post(f"/v1/checkins/{checkin}/recompute").get_json()
    assert same["matches"] is True and same["value_matches"] is True
    metrics.set("2026-01-02", 6)
    changed = client.post(f"/v1/checkins/{checkin}/recompute").get_json()
    assert changed["matches"] is False and changed["value"] == "6.00" and changed["value_then"] == "5.00"
    assert len(history(client, key_result)) == 2  # recomputing writes nothing


def test_test_shows_the_value_and_writes_nothing(client, clock, quarter, metrics):
    key_result = quarter["key_result"]["id"]
    metrics.set("2026-01-02", 8)
    attach(client, key_result, metrics.address)
    clock.now = "2026-01-02T10:00:00Z"
    tested = client.post(f"/v1/keyresults/{key_result}/source/test").get_json()
    assert tested["ok"] is True and tested["value"] == "8.00" and "8" in tested["answer_excerpt"]
    other = client.post(f"/v1/keyresults/{key_result}/source/test", json={"query": "SELECT 41 + 1"}).get_json()
    assert other["value"] == "42.00"
    broken = client.post(f"/v1/keyresults/{key_result}/source/test", json={"query": "SELECT nothing"}).get_json()
    assert broken["ok"] is False and "nothing" in broken["error"]
    assert len(history(client, key_result)) == 1
    assert source_state(client, key_result)["failures"] == 0  # a test is no run


def test_a_connection_some_source_reads_is_not_deleted(client, quarter, metrics):
    source = attach(client, quarter["key_result"]["id"], metrics.address)
    response = client.delete(f"/v1/connections/{source['connection_id']}")
    assert response.status_code == 409 and "1 key result" in response.get_json()["message"]
    assert client.delete(f"/v1/keyresults/{quarter['key_result']['id']}/source").status_code == 200
    assert client.delete(f"/v1/connections/{source['connection_id']}").status_code == 200


def test_the_schedule_runs_each_source_when_due_with_jitter_and_never_a_stopped_one(client, clock, quarter,
                                                                                     metrics, app):
    key_result = quarter["key_result"]["id"]
    metrics.set("2026-01-02", 1)
    attach(client, key_result, metrics.address)
    changed = client.put(f"/v1/keyresults/{key_result}/source", json={
        "connection_id": source_state(client, key_result)["connection_id"], "query": NOW_QUERY, "every_minutes": 30})
    assert changed.get_json().get("every_minutes") == 30, changed.get_json()
    scheduler = syncing.Scheduler(app.config)
    try:
        clock.now = "2026-01-02T10:00:00Z"
        assert scheduler.tick() == 1  # due at once, when attached
        scheduler.close()
        assert history(client, key_result)[-1][:2] == ("2026-01-02T10:00:00Z", "1.00")
        next_run = datetime.fromisoformat(source_state(client, key_result)["next_run_at"][:-1])
        assert timedelta(minutes=27) <= next_run - datetime(2026, 1, 2, 10) <= timedelta(minutes=33)

        scheduler = syncing.Scheduler(app.config)
        clock.now = "2026-01-02T10:20:00Z"
        assert scheduler.tick() == 0  # not due yet
        clock.now = "2026-01-02T10:40:00Z"
        metrics.set("2026-01-03", 2)
        assert scheduler.tick() == 1
        scheduler.close()
        assert history(client, key_result)[-1][:2] == ("2026-01-02T10:40:00Z", "2.00")

        with app.app_context(), transaction() as db:
            sources.restart(db, sources.of_key_result(db, key_result))
            db.execute("UPDATE sources SET state = 'stopped'")
        scheduler = syncing.Scheduler(app.config)
        clock.now = "2026-02-01T00:00:00Z"
        assert scheduler.tick() == 0
    finally:
        scheduler.close()


def test_the_background_process_runs_the_sources():
    assert ("sync sources", syncing.sync_sources_job) in background.JOBS


def test_a_failure_reaches_the_webhooks(client, clock, quarter, metrics, app):
    with app.app_context(), transaction() as db:
        webhooks.add(db, "https://hooks.example.com/okr", ["key_result.source_failed"], "events", False)
    key_result = quarter["key_result"]["id"]
    attach(client, key_result, metrics.address, query="SELECT missing_column FROM figures")
    clock.now = "2026-01-02T10:00:00Z"
    assert sync(client, key_result)["outcome"] == "failed"
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        queued = db.execute("SELECT e.type, e.data FROM webhook_outbox o JOIN events e ON e.seq = o.event_seq"
                            ).fetchall()
    assert [kind for kind, _ in queued] == ["key_result.source_failed"]
    assert "no such column: missing_column" in json.loads(queued[0][1])["error"]


def test_a_source_changed_while_it_was_read_writes_nothing(client, clock, quarter, metrics, monkeypatch):
    key_result = quarter["key_result"]["id"]
    metrics.set("2026-01-02", 5)
    source = attach(client, key_result, metrics.address)
    clock.now = "2026-01-02T10:00:00Z"
    real_read = syncing.reading.read

    def read_then_change(*args, **kwargs):
        found = real_read(*args, **kwargs)
        changed = client.put(f"/v1/keyresults/{key_result}/source", json={
            "connection_id": source["connection_id"], "query": "SELECT 7"})  # an editor saves another query
        assert changed.status_code == 200
        return found

    monkeypatch.setattr(syncing.reading, "read", read_then_change)
    response = client.post(f"/v1/keyresults/{key_result}/source/sync")
    assert response.status_code == 409 and "changed while it was read" in response.get_json()["message"]
    assert len(history(client, key_result)) == 1


def test_the_scheduler_s_threads_give_people_s_requests_the_cpu_first(app, monkeypatch):
    seen = []
    monkeypatch.setattr(syncing, "sync", lambda config, transactions, source_id: seen.append(
        os.sched_getscheduler(0)))
    scheduler = syncing.Scheduler(app.config)
    try:
        scheduler.pool.submit(scheduler.run, "a-source").result()
    finally:
        scheduler.close()
    assert seen == [os.SCHED_IDLE]


def test_the_scheduler_keeps_one_connection_per_thread_and_closes_them(app, monkeypatch):
    used = []
    monkeypatch.setattr(syncing, "sync", lambda config, transactions, source_id: used.append(transactions.db))
    scheduler = syncing.Scheduler(app.config, workers=1)
    try:
        for source_id in ("a", "b", "c"):
            scheduler.pool.submit(scheduler.run, source_id).result()
        assert scheduler.tick() == 0  # the ticking thread's own
    finally:
        scheduler.close()
    assert len(used) == 3 and used[0] is used[1] is used[2]
    with pytest.raises(sqlite3.ProgrammingError):  # closed
        used[0].execute("SELECT 1")


@pytest.mark.parametrize("minutes", [14, 1441, "60", 30.5])
def test_a_source_runs_from_every_15_minutes_to_once_a_day(client, quarter, metrics, minutes):
    source = attach(client, quarter["key_result"]["id"], metrics.address)
    assert source["every_minutes"] == 60  # an hour unless said
    response = client.put(f"/v1/keyresults/{quarter['key_result']['id']}/source", json={
        "connection_id": source["connection_id"], "query": NOW_QUERY, "every_minutes": minutes})
    assert response.status_code == 400 and "every_minutes" in response.get_json()["details"]


def test_a_fill_back_stops_at_the_cycle_s_end(client, clock, metrics):
    clock.now = "2026-01-01T09:00:00Z"
    cycle = client.post("/v1/cycles", json={"name": "Short", "starts_on": "2026-01-01",
                                            "ends_on": "2026-01-10"}).get_json()
    objective = client.post("/v1/objectives", json={"name": "o", "cycle_id": cycle["id"], "is_company": False,
                                                    "is_personal": False}).get_json()
    kr = client.post(f"/v1/objectives/{objective['id']}/keyresults", json={"name": "k", "type": "baseline"}).get_json()
    for day in range(1, 21):
        metrics.set(f"2026-01-{day:02}", day)
    attach(client, kr["id"], metrics.address, AS_OF_QUERY)
    clock.now = "2026-01-20T08:00:00Z"
    filled = client.post(f"/v1/keyresults/{kr['id']}/source/fill", json={"to": "2026-01-19"}).get_json()
    assert (filled["outcome"], filled["read"], filled["written"]) == ("filled", 10, 10)
    dates = [c["created_at"] for c in client.get(f"/v1/keyresults/{kr['id']}/checkins").get_json()["checkins"]]
    assert dates[-1] == "2026-01-10T23:59:59Z"
