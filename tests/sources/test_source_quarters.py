"""Each kind of source through a simulated quarter, on a faked clock, against the real servers of conftest (a
local HTTP server that answers as GitHub does, a CSV of the day, PostgreSQL, SQLite, Prometheus): synced at the
end of every day from week 1, its history is the figure of each day; attached in week 8 and filled back, a second
key result gets the very same history; the last value's evidence recomputes to a match. And every way a source
fails leaves the last good value and reaches the feed, the webhooks and the owner's mail."""
import json
import sqlite3
import threading
from contextlib import closing
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from source_servers import ISSUES, PG_PASSWORD, github_count, seeded_value
from okr.db import transaction
from okr.outbound import smtp
from okr.store import users, webhooks

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("postgresql")]  # servers in threads, PostgreSQL's worker

DAYS_SYNCED = 49  # seven weeks synced at the end of each day; the second key result is attached in week 8


def end_of(day):
    return day.strftime("%Y-%m-%dT23:59:59Z")


def signups(moment):
    """The CSV's figure for a moment: it grows on weekdays."""
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    days = (moment - start).days
    return sum(1 for n in range(days + 1) if (start + timedelta(days=n)).weekday() < 5) * 3


class DailySheet(BaseHTTPRequestHandler):
    """A spreadsheet published as CSV whose one row is the figure as of ?as_of=."""

    def do_GET(self):
        query = parse_qs(urlsplit(self.path).query)
        moment = datetime.fromisoformat(query["as_of"][0].replace("Z", "+00:00"))
        body = f"Day,Signups\r\n{moment.date()},\"{signups(moment):,}\"\r\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/csv")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def sheet():
    server = ThreadingHTTPServer(("127.0.0.1", 0), DailySheet)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def figures_file(tmp_path):
    """An SQLite file of a daily figure (the day's number of the year times 1.5)."""
    path = tmp_path / "figures.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE figures (day TEXT, value REAL)")
        day = datetime(2026, 1, 1)
        db.executemany("INSERT INTO figures VALUES (?, ?)",
                       [((day + timedelta(days=n)).strftime("%Y-%m-%d"), n * 1.5) for n in range(120)])
        db.commit()
    return str(path)


def open_issues(moment):
    return sum(1 for _, opened, closed in ISSUES if opened <= moment and (closed is None or closed > moment))


def kinds(web, sheet, postgresql, prometheus_server, figures_file):
    """Per kind: (connection, source, first day of its quarter, the figure at a moment)."""
    return {
        "http_json": ({"kind": "http_json", "address": f"http://127.0.0.1:{web.port}", "secret": "ghp_token",
                       "inside_network": True, "headers": {"Authorization": "Bearer {secret}"}},
                      {"query": "/search/issues?q=repo:acme/app+created:<={as_of}", "path": "$.total_count"},
                      datetime(2026, 1, 1, tzinfo=timezone.utc),
                      lambda moment: github_count(f"repo:acme/app created:<={end_of(moment)}")),
        "csv": ({"kind": "csv", "address": sheet, "inside_network": True},
                {"query": "/signups.csv?as_of={as_of}", "path": "B2"},
                datetime(2026, 1, 1, tzinfo=timezone.utc), signups),
        "postgresql": ({"kind": "postgresql", "address": postgresql, "secret": PG_PASSWORD},
                       {"query": "SELECT count(*) FROM issues WHERE opened_at <= :as_of "
                                 "AND (closed_at IS NULL OR closed_at > :as_of)"},
                       datetime(2026, 1, 1, tzinfo=timezone.utc), open_issues),
        "sqlite": ({"kind": "sqlite", "address": figures_file},
                   {"query": "SELECT value FROM figures WHERE day <= substr(:as_of, 1, 10) ORDER BY day DESC LIMIT 1"},
                   datetime(2026, 1, 1, tzinfo=timezone.utc), lambda moment: (moment.timetuple().tm_yday - 1) * 1.5),
        "prometheus": ({"kind": "prometheus", "address": prometheus_server, "inside_network": True},
                       {"query": "last_over_time(okr_open_issues[1h])"},
                       datetime(2026, 7, 1, tzinfo=timezone.utc),
                       lambda moment: seeded_value(moment.replace(minute=0, second=0))),
    }


def make_key_result(client, objective, name):
    return client.post(f"/v1/objectives/{objective}/keyresults", json={
        "name": name, "type": "positive", "current_value": "0", "target_value_min": "1000"}).get_json()["id"]


def history(client, key_result):
    return [(c["created_at"], c["value"], c["confidence"])
            for c in client.get(f"/v1/keyresults/{key_result}/checkins?page_size=1000").get_json()["checkins"]]


@pytest.mark.parametrize("kind", ["http_json", "csv", "postgresql", "sqlite", "prometheus"])
def test_a_key_result_follows_its_source_through_a_quarter_and_a_late_one_fills_back_the_same(
        client, clock, kind, web, sheet, postgresql, prometheus_server, figures_file):
    connection, source, start, figure = kinds(web, sheet, postgresql, prometheus_server, figures_file)[kind]
    clock.now = start.strftime("%Y-%m-%dT00:00:00Z")
    end = start + timedelta(days=90)
    cycle = client.post("/v1/cycles", json={"name": kind, "starts_on": start.strftime("%Y-%m-%d"),
                                            "ends_on": end.strftime("%Y-%m-%d")}).get_json()["id"]
    objective = client.post("/v1/objectives", json={"name": "o", "cycle_id": cycle, "is_company": False,
                                                    "is_personal": False}).get_json()["id"]
    early, late = make_key_result(client, objective, "early"), make_key_result(client, objective, "late")
    made = client.post("/v1/connections", json={"name": f"The {kind}", **connection})
    assert made.status_code == 200, made.get_json()
    attached = client.put(f"/v1/keyresults/{early}/source", json={"connection_id": made.get_json()["id"], **source})
    assert attached.status_code == 200, attached.get_json()
    assert attached.get_json()["takes_as_of"] is True

    expected, last = [], Decimal(0)
    for number in range(DAYS_SYNCED):
        day = start + timedelta(days=number)
        clock.now = end_of(day)
        run = client.post(f"/v1/keyresults/{early}/source/sync").get_json()
        assert run["outcome"] in ("written", "unchanged"), run
        value = Decimal(str(figure(day.replace(hour=23, minute=59, second=59))))
        if value != last:
            expected.append((end_of(day), value))
            last = value
    written = [(at, Decimal(value)) for at, value, _ in history(client, early)[1:]]
    assert written == expected and len(expected) >= 5  # the figure moved, and only its moves were written

    clock.now = (start + timedelta(days=DAYS_SYNCED, hours=8)).strftime("%Y-%m-%dT%H:%M:%SZ")  # week 8
    assert client.put(f"/v1/keyresults/{late}/source",
                      json={"connection_id": made.get_json()["id"], **source}).status_code == 200
    filled = client.post(f"/v1/keyresults/{late}/source/fill", json={"step": "daily"}).get_json()
    assert (filled["outcome"], filled["read"]) == ("filled", DAYS_SYNCED), filled
    assert history(client, late) == history(client, early)

    checkins = client.get(f"/v1/keyresults/{late}/checkins?page_size=1000").get_json()["checkins"]
    evidence = client.get(f"/v1/checkins/{checkins[-1]['id']}/evidence").get_json()
    assert evidence["source_name"] == f"The {kind}" and evidence["value"] == checkins[-1]["value"]
    assert "ghp_token" not in json.dumps(evidence) and PG_PASSWORD not in json.dumps(evidence)
    again = client.post(f"/v1/checkins/{checkins[-1]['id']}/recompute").get_json()
    assert again["matches"] is True and again["value_matches"] is True, again


# (connection, source, words of the reason): each way a source fails.
FAILURES = {
    "unreachable": ({"kind": "http_json", "address": "http://127.0.0.1:9", "inside_network": True},
                    {"query": "/search/issues?q=x", "path": "$.total_count"}, "127.0.0.1"),
    "timeout": ({"kind": "http_json", "address": "WEB", "inside_network": True},
                {"query": "/trickle", "path": "$.n"}, "timed out"),
    "not a number": ({"kind": "http_json", "address": "WEB", "inside_network": True},
                     {"query": "/html", "path": "$.n"}, "JSON"),
    "a path that selects nothing": ({"kind": "http_json", "address": "WEB", "inside_network": True},
                                    {"query": "/values.json", "path": "$.absent"}, "nothing"),
    "a path that selects several": ({"kind": "http_json", "address": "WEB", "inside_network": True},
                                    {"query": "/values.json", "path": "$.items[*]"}, "2"),
    "an error answer": ({"kind": "http_json", "address": "WEB", "inside_network": True},
                        {"query": "/error", "path": "$.n"}, "500"),
    "a query error": ({"kind": "postgresql", "address": "PG", "secret": PG_PASSWORD},
                      {"query": "SELECT count(*) FROM no_such_table"}, "no_such_table"),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_every_failure_keeps_the_last_value_and_reaches_the_feed_the_webhooks_and_the_owner(
        app, client, clock, failure, web, postgresql, monkeypatch):
    sent = []
    monkeypatch.setattr(smtp, "send", lambda settings, message: sent.append(message))
    app.config.update(SMTP_URL="smtp://127.0.0.1:2525", MAIL_FROM="okr@example.com", SOURCE_TIMEOUT=1)
    connection, source, words = FAILURES[failure]
    connection = {**connection, "address": {"WEB": f"http://127.0.0.1:{web.port}", "PG": postgresql}.get(
        connection["address"], connection["address"])}
    with app.app_context(), transaction() as db:
        owner = users.create(db, "Ola Owner", "ola@example.com", "editor")
        webhooks.add(db, "https://hooks.example.com/okr", ["key_result.*"], "events", False)
    clock.now = "2026-01-05T10:00:00Z"
    cycle = client.post("/v1/cycles", json={"name": "Q1", "starts_on": "2026-01-01"}).get_json()["id"]
    objective = client.post("/v1/objectives", json={"name": "o", "cycle_id": cycle, "is_company": False,
                                                    "is_personal": False}).get_json()["id"]
    key_result = make_key_result(client, objective, "k")
    client.patch(f"/v1/keyresults/{key_result}", json={"owner_id": owner["id"]})
    good = client.post("/v1/connections", json={"name": "Good", "kind": "http_json", "inside_network": True,
                                                "address": f"http://127.0.0.1:{web.port}"}).get_json()
    client.put(f"/v1/keyresults/{key_result}/source", json={"connection_id": good["id"], "query": "/values.json",
                                                            "path": "$.count"})
    assert client.post(f"/v1/keyresults/{key_result}/source/sync").get_json()["value"] == "7.00"

    bad = client.post("/v1/connections", json={"name": "Bad", **connection}).get_json()
    assert client.put(f"/v1/keyresults/{key_result}/source",
                      json={"connection_id": bad["id"], **source}).status_code == 200
    for run in (1, 2, 3):
        clock.now = f"2026-01-05T1{run}:00:00Z"
        failed = client.post(f"/v1/keyresults/{key_result}/source/sync").get_json()
        assert (failed["outcome"], failed["failures"]) == ("failed", run), failed
        assert words in failed["error"], failed
    assert client.get(f"/v1/keyresults/{key_result}").get_json()["current_value"] == "7.00"
    feed = client.get("/v1/events?type=key_result.source_failed").get_json()["events"]
    assert len(feed) == 3 and all(words in event["data"]["error"] for event in feed)
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        queued = db.execute("SELECT count(*) FROM webhook_outbox o JOIN events e ON e.seq = o.event_seq "
                            "WHERE e.type = 'key_result.source_failed'").fetchone()[0]
    assert queued == 3
    [mail] = sent
    assert mail["To"] == "Ola Owner <ola@example.com>" and words in mail.get_content()
    assert PG_PASSWORD not in mail.get_content() and PG_PASSWORD not in json.dumps(feed)
