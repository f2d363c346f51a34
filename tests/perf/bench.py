"""Benchmark: the real server under wrk on loopback, against a bare Flask "hello" ceiling.

    python tests/perf/bench.py [--rounds 5] [--seconds 5] [--objectives 100000]
                               [--report-objectives 1000] [--report-repetitions 5]
                               [--sign-ins 20] [--pin] [--webhooks-only | --replicate-only]
                               [--sign-in-flood-only [--flood-seconds 10]]
                               [--events-only [--large-events 4000]] [--retrospective-only] [--sources-only]
                               [--assistants-only] [--visibility-only]

Needs wrk (apt-get install wrk), but for --events-only, --sign-in-flood-only, --retrospective-only,
--assistants-only and --visibility-only. Seeds a fresh database in a temporary folder through the project's own code, starts `app.py` and a bare Flask app
("hello", 4 waitress threads) as separate processes, and prints a table.
Throughput and latency goals are ratios to figures taken in the same round,
because the machines are noisy; each is the median over the rounds, as are
the figures themselves. Memory is the peak over all rounds.

The access log's cost is GET by id at 8 connections against the service as
started by default (access log on) over a second service process started with
--no-access-log, on the same database, in the same rounds. Both write their log
to a file in the temporary folder, as a server's log usually goes.

Check-ins and reports: a check-in POST at 8 connections against the hello
ceiling, rotating over the 400 key results of a cycle of their own. The report
of a cycle of --report-objectives objectives (4 key results and 40 check-ins
each on average) is timed from a Python client over one keep-alive connection
against listing the same cycle's objectives and key results at page_size=1000
over that connection, and the report of a cycle ten times as big against it;
all timed in turn, --report-repetitions times in every round: the big report,
the listing, the report, the page (gzipped, then not), or the reverse, so that
the report is timed right beside the listing and the page. A ratio is the
median, over every repetition of every round, of its two timings in that
repetition: this machine's speed swings within a round, so that the medians of
a round's three timings of each had the page both 0.95 and 2.0 times the
report in one run. The reports are served by a third service process on the
same database, so that their memory does not count in the figure under the wrk
load. The seeded data is made like real data (see seed_report_cycles), the same
for every run.

The dashboard: the page of the smaller cycle (GET /cycles/:id, Accept: text/html,
its review: the whole cycle's figures and burn-up, and the rows of its first 50 top
objectives with everything aligned below them) is timed the same way, over the same
connection, in turn with the listing and the reports, against that cycle's
report: as a browser gets it (Accept-Encoding: gzip, which the service honours
for big pages, the client reading and gunzipping the whole body), and
uncompressed (Accept-Encoding: identity, as the report is sent). Its size is
printed both ways, in bytes, with the report's. The report is timed end to end
too, the client reading the whole body and parsing the JSON, as it always was:
the time the parsing takes is printed below the table.

People: a fourth service process serves a copy of the seeded database to which
an editor with a password, an API key of that editor's and a service key (one
without a user) were added; the copy, because a key or a password anywhere turns
sign-in on, and the other figures are of the open service. A sign-in is POST
/login with the editor's email and password (and the CSRF token and session
cookie a GET /login gave, untimed, as a browser first opens the page), timed to
its 303 over one keep-alive connection, --sign-ins times in every round: the
figure is the median of the rounds' medians, against a goal of 250 ms (the
argon2id check of the password is nearly all of it). A signed GET by id at 8
connections signed with the editor's key is measured against the same GET
signed with the service key, in the same round, in turn as the access log's
pair is; a signature is good for 10 minutes, so each wrk run gets a fresh one.

Issue 23's pages, timed in turn with the listing, the reports and the cycle page, over
their own keep-alive connections, each as a ratio to the smaller cycle's report in the
same repetition: the edit page of an objective of that cycle (GET /objectives/:id/edit,
HTML, by the open service that serves the reports), against a goal of 1.0 x the report,
and "Your week" (GET / as a browser, with the session cookie a POST /login with the
editor's email and password gave, from the signed service), for the editor, who owns 50
key results of that cycle (set in the copy), against a goal of 0.2 x the report. Until
the edit page exists (it answers 404) its row says "not measured" and has no verdict.

Export and import: `python app.py export` of a database of --objectives objectives
with 4 key results each (and each key result's first check-in) to JSON, and of
its cycle with --format csv, each timed to its end with the process's peak
resident memory (the kernel's high-water mark), against a goal of 150 MB; then
`python app.py import` of that JSON into a new database, timed the same way.

Webhooks (issue 24): a fifth service process, on a database of its own, takes object-
ive POSTs from wrk (8 connections) in three states per round, in turn, the order
reversed every other round: with no webhooks; with three webhooks matching every
objective event, whose receiver (in this script, on loopback) answers each delivery
after 1 ms; and with the same three hooks while their receiver is down (nothing
listens: every attempt fails and the events wait in the outbox). Each ratio is the
median over the rounds of that round's throughput over the same round's without
hooks, against a goal of 0.90. Then 1,000 objectives are POSTed one at a time
(2 ms apart) with the receiver up, and the time from each POST's start (the commit
is within it) to its event's arrival at each of the three hooks gives p50 and p99.
--webhooks-only runs this section alone.

Replication (issue 25): two more service processes, each on a database of its own, one started with
--replicate file://FOLDER (Litestream beside it, shipping the WAL to a folder of the temporary folder), one
without; wrk POSTs objectives to each in turn (8 connections), the order reversed every other round, each
after a second of load. The ratio is the median over the rounds of that round's throughput with replication
over the same round's without, against a goal of 0.90. --replicate-only runs this section alone.

Concurrent reports (issue 25), run alone with --reports-only: a server started as a user
starts it, on a database with one cycle of --concurrent-report-objectives objectives
(100,000; made like the report cycles above; --reports-database reuses one seeded by an
earlier run); 8 clients ask for that cycle's report at the same moment, each a polite
client that waits the Retry-After of a 503 and asks again, reading the body in chunks,
while one client reads objectives by id over one keep-alive connection, one every 10 ms.
The server's resident memory, with its children's, is sampled every 50 ms: its peak
against a goal of 1 GB, with the idle figure beside it; the small reads' p99 against a goal
of 1 s, with their p50 and p99 before the reports beside it. --reports-unbounded has the
server build every report in memory, as before, for comparison.
The cycle page (issue 35), run alone with --review-only: a server as users start it, on the database of the
concurrent reports (--concurrent-report-objectives objectives, 4 key results each; --reports-database reuses
one); its page (GET /cycles/:id, as a browser asks, gzip taken) first shown, shown again, its next page (the
page's own link) and its key results at risk or off track, each over a new connection: seconds to the body's
first byte (goal: under 1 s on the first view) and to its end, and the server's peak resident memory with its
children above its idle figure (goal: under 200 MB).
A cycle's retrospective and calibration (issue 36), run alone with --retrospective-only: a server as users start
it, on a cycle of --report-objectives objectives seeded as the reports' (4 key results and 40 check-ins each on
average); its report, its retrospective and its calibration (the API's JSON, read and parsed), timed in turn over
one keep-alive connection, --report-repetitions times a round, the order reversed every other time: each ratio is
the median of its time over the report's in the same repetition (goal: at most 1.5 each).
Hidden objectives (issue 39), run alone with --visibility-only: a server as users start it, on a cycle of
--report-objectives objectives seeded as the reports' (4 key results and 40 check-ins each on average), a fifth of
them restricted (half 'team', each of a team, half 'private'; set in the database before the server starts, with
each objective's creator, one of the seeded users), a service key (it sees everything) and a viewer's key (a person
with role viewer, a member of 2 of the 20 teams who owns a few key results: some restricted objectives are theirs
to see, most are not). Over one keep-alive connection per key, signed as the other sections sign, the listing
(every page of GET /v1/objectives?cycle_id=...&page_size=100, following next_page_token) and the cycle's report
(read and parsed as a client does), each asked by the two keys in turn, --report-repetitions times a round, the
order reversed every other time. Each ratio is the median over the repetitions of the viewer's time over the
service key's in the same repetition (goal: at most 1.2 each). The section fails unless the viewer's report hides
objectives and shows fewer than the service key's, and each key's report has the objectives its listing has. A
missed goal makes the exit status 1.
Worker processes (issue 25; --workers-only runs this section alone): on a database of 1,000
objectives with a service key, the service as users start it (default workers: one per CPU, at most
8) and the same with --workers 1, on the same file; in each round a signed GET by id at 8 connections
against each (in turn, the order reversed every other round), between two runs of the hello ceiling,
whose mean is the GETs' ceiling; GET by id at 1 and 32 connections against the default service; and
objective POSTs at 8 connections against each. Goals: the default workers' GET at least 0.9 x hello
and 1.4 x --workers 1, POST 1.1 x --workers 1 with no error and no "database busy" in the logs, and
32 connections 0.9 x 1. In this section wrk runs where the system puts it, hello and --workers 1 included:
the default service spreads over every CPU, and wrk pinned to one would share it with a worker
that cannot move. Memory and threads elsewhere are counted over the server's processes: the
largest process's memory, all their threads.

The activity feed's memory (issue 32; --events-only runs this section alone): a server as users start
it (default workers), on a database of --large-events events of about 30 KB each (objective updates whose
10,000-character descriptions changed: the event holds the description, and its change before and after),
written through okr.store.events. In each round a fresh server gets small requests to warm up; then
16 clients at once each ask for a page of 1,000 events (page_size=1000, each from its own start) and read
it whole; then the same 16 clients each read 1,000 events however many pages that takes (following
next_page_token). Each worker's resident memory (VmRSS of the processes holding the listening socket) is
sampled every 50 ms: before the first burst, its peak in each, and 3 s after each one's last answer. The
goals: each worker back within 100 MB of its memory before the first burst, after each. A page's size in
bytes and events is printed beside it.

Metric sources (issue 37; --sources-only runs this section alone, and needs no wrk): a server as users
start it, a fresh database each round, 200 key results each reading a local JSON API (http_json, inside our
network; it answers in 20 ms, a new number each time, and says when it answered). One client reads key
results by id over one keep-alive connection, one every 10 ms, for --seconds x 3 with no source; then the
200 sources are attached (due at once) and, 4 times, waited for (each bursts of 200 syncs at once, at the
background process's next look) and made due again all at once, as after a downtime. A read is "while the
sources sync" when it was asked between the first and the last answer of a burst. Goals: those reads' p99
within 1.5 x the idle reads' p99 (the reads of every round together), and the server's peak resident memory
with its children (sampled by a process of its own) within 100 MB of its idle figure.

A flood of wrong passwords (issue 32; --sign-in-flood-only runs this section alone, and
needs no wrk): a server as users start it, on a database of 100 key results with a
password and a service key (so sign-in is on). In each round, 2 clients check in
(signed POST /v1/keyresults/:id/checkins, one after another over a keep-alive
connection, 10 ms apart) for --flood-seconds without the flood, then as long with it:
4 addresses (127.0.0.2 to .5) x 4 connections, from a process of their own, POSTing
wrong passwords for made-up emails to /login as fast as the answers come, each
address moving on to another (127.1.0.2, ...) after 80 of its failures were checked
or at a 429, so that the throttle (100 per address) lets the flood be hashed. Goals:
no check-in refused under the flood, and its p99 at most 2 x the p99 without it
+ 100 ms (each the median of the rounds' p99s).

AI assistants (--assistants-only, needs no wrk): a server as users start it, on a
database with an editor, the editor's API key and a personal token of theirs (so
sign-in is on). Over one keep-alive connection, in turns, ASSISTANT_CALLS times a
round: a signed GET /v1/keyresults/:id of a key result with 20 check-ins, then the
get_key_result tool on it over /mcp (its progress, check-ins and comments), then a
signed check-in POST on another key result, then the check_in tool on a third, each
/mcp call a JSON-RPC tools/call with the bearer token. Goals: each tool's median
latency at most 5 x the median of its signed request's (the median of the rounds'
ratios). The SDK is imported at a first call before the rounds, as a server's first
assistant would.

The service runs as a user starts it: default settings, placed by nobody but
itself. wrk runs on the last CPU, as if the clients were on other machines,
and the hello ceiling is pinned to the first CPU. --pin also pins the service
to the first CPU from outside, as earlier versions of this script did.
"""
import argparse
import base64
import gzip
import http.client
import json
import os
import random
import re
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # the tests' helpers

from okr import create_app  # noqa: E402
from okr.accounts import assistant_grants  # noqa: E402
from okr.accounts.passwords import hash_password  # noqa: E402
from okr.clock import new_id, utc_now  # noqa: E402
from okr.reports.review import PER_PAGE as REVIEW_PER_PAGE  # noqa: E402
from okr.db import init_db, transaction  # noqa: E402
from okr.rules.email_addresses import email_key  # noqa: E402
from okr.rules.request_signature import authorization_header  # noqa: E402
from okr.server.workers import worker_count  # noqa: E402
from okr.store import events, keys, users, webhooks  # noqa: E402
from okr.store.schema import connect  # noqa: E402

from helpers import process_tree, worker_pids  # noqa: E402

HELLO_APP = """
import sys
from flask import Flask
from waitress import serve
app = Flask(__name__)

@app.get("/hello")
def hello():
    return {"hello": "world"}

serve(app, host="127.0.0.1", port=int(sys.argv[1]), threads=4)
"""


# The CPUs that each process runs on; None leaves it to the scheduler (or to itself).
PLACEMENT = {"okr": None, "hello": None, "wrk": None}


@contextmanager
def running_on(cpus):
    """Processes started inside the block inherit these CPUs (affinity is per thread, and inherited)."""
    if cpus is None:
        yield
        return
    previous = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, previous)


def place_processes(pin):
    """Splits the CPUs between the servers and wrk; returns a line saying how."""
    if not hasattr(os, "sched_getaffinity"):
        return "nothing pinned"
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return "nothing pinned (one CPU available)"
    PLACEMENT.update(hello={cpus[0]}, wrk={cpus[-1]})
    if pin:
        PLACEMENT["okr"] = {cpus[0]}
        return f"service and hello pinned to CPU {cpus[0]}, wrk to CPU {cpus[-1]}"
    return f"service placed by itself (defaults), hello pinned to CPU {cpus[0]}, wrk to CPU {cpus[-1]}"


@contextmanager
def clients_placed_by_the_system():
    """wrk unpinned within the block. Where the service spreads over every CPU (its worker processes), wrk
    pinned to one of them would share it with a worker that cannot move: the two would take turns on it at
    every request, a cost that clients on other machines never add."""
    pinned, PLACEMENT["wrk"] = PLACEMENT["wrk"], None
    try:
        yield
    finally:
        PLACEMENT["wrk"] = pinned


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, method="GET", body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request(method, path, body=body)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def wait_until_up(port, path, started):
    while True:
        try:
            if get(port, path)[0] == 200:
                return time.perf_counter() - started
        except OSError:
            time.sleep(0.005)
        if time.perf_counter() - started > 30:
            raise RuntimeError(f"nothing answered on port {port}")


def seed_objectives(database, count, key_results_each=0):
    """A cycle with count objectives (and key results), written straight with SQL.

    Each key result gets its first check-in, as creating it through the API
    records one, so that deleting the cycle cascades to check-ins too.
    """
    app = create_app({"DATABASE": database})
    with app.app_context():
        init_db()
    db = connect(database, 5000)
    db.execute("PRAGMA cache_size = -131072")  # random UUIDs: index pages are hit all over
    cycle, now = new_id(), utc_now()
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO cycles (id, name, created_at) VALUES (?, ?, ?)", (cycle, "bench", now))
    objectives = [(new_id(), f"objective {i}", cycle, now, now) for i in range(count)]
    db.executemany(
        "INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, created_at, modified_at) "
        "VALUES (?, ?, 0, 0, ?, ?, ?)", objectives)
    db.executemany(
        "INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value, "
        "target_value_min, created_at, modified_at) VALUES (?, ?, ?, 'kr', 'positive', '0.50', '0.00', "
        "'10.00', ?, ?)",
        ((new_id(), o[0], cycle, now, now) for o in objectives for _ in range(key_results_each)))
    db.create_function("bench_new_id", 0, new_id)
    db.execute(
        "INSERT INTO checkins (id, key_result_seq, value, confidence, comment, author_id, created_at) "
        "SELECT bench_new_id(), seq, current_value, confidence, NULL, NULL, created_at "
        "FROM key_results WHERE cycle_id = ? ORDER BY seq", (cycle,))
    db.execute("COMMIT")
    seqs = [row[0] for row in db.execute("SELECT seq FROM objectives WHERE cycle_id = ? ORDER BY seq", (cycle,))]
    db.close()
    return cycle, [o[0] for o in objectives], seqs


# Key-result types, with how often each is drawn.
KEY_RESULT_MIX = {"positive": 40, "negative": 15, "range": 15, "milestone": 15, "baseline": 15}
DAY = 86_400
COMMENTS = ("weekly", "on plan", "slipped: waiting on the vendor", "ahead after the launch",
            "numbers from the dashboard", "blocked by hiring; see the team notes")


def decimal_text(cents):
    """Cents as the canonical decimal string the service stores ("12.50", "-0.75")."""
    sign, cents = ("-" if cents < 0 else ""), abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d}"


def stamp(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def key_result_values(rng, kind, count):
    """A key result's targets and the values of its count check-ins, in cents; the first value is the start."""
    high = None
    if kind == "positive":
        start = rng.randrange(0, 10_000)
        low = start + rng.randrange(1_000, 100_000)
        end = start + round(rng.uniform(0, 1.2) * (low - start))
    elif kind == "negative":
        start = rng.randrange(5_000, 100_000)
        low = rng.randrange(0, start - 1_000)
        end = max(0, start - round(rng.uniform(0, 1.2) * (start - low)))
    elif kind == "range":
        low = rng.randrange(0, 50_000)
        high = low + rng.randrange(500, 20_000)
        start, end = max(0, low - rng.randrange(0, 10_000)), rng.randrange(max(0, low - 5_000), high + 5_000)
    elif kind == "milestone":
        low, start = 100, 0
        done_from = rng.randrange(1, count) if count > 1 and rng.random() < 0.4 else count
        return low, high, [100 if j >= done_from else 0 for j in range(count)]
    else:  # baseline
        low, start = None, rng.randrange(0, 100_000)
        end = start + rng.randrange(-start, 50_000)
    if count == 1:
        return low, high, [start]
    noise = max(1, abs(end - start) // 30)
    values = [max(0, start + (end - start) * j // (count - 1) + rng.randrange(-noise, noise + 1))
              for j in range(1, count - 1)]
    return low, high, [start, *values, end]


def seed_report_cycles(database, sizes, seed=11):
    """Cycles of sizes[i] objectives each, made like real data; returns [(cycle id, its key-result ids)].

    Each cycle holds 4 key results and 40 check-ins per objective on average:
    a mix of the five key-result types with valid targets; at least one check-in
    per key result, the first being its start value and the last its current
    value and confidence; check-ins spread over the twelve weeks of the cycle
    and stored in the order they were made, a fifth of key results stale (no
    check-in for over 14 days); a third of objectives aligned to an older one
    of the same cycle, half owned by one of 20 teams, 60% assigned to one of
    200 users. Written straight with SQL, drawn from a fixed seed: every run
    reports data of the same shape (only ids and dates differ).
    """
    rng = random.Random(seed)
    app = create_app({"DATABASE": database})
    with app.app_context():
        init_db()
    db = connect(database, 5000)
    db.execute("PRAGMA cache_size = -131072")  # random UUIDs: index pages are hit all over
    db.execute("BEGIN IMMEDIATE")
    now = int(time.time())
    teams = [new_id() for _ in range(20)]
    db.executemany("INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?)",
                   ((team, f"team {i}", stamp(now - 400 * DAY)) for i, team in enumerate(teams)))
    users = [new_id() for _ in range(200)]
    emails = [f"user{i}.{user[:8]}@example.com" for i, user in enumerate(users)]
    db.executemany("INSERT INTO users (id, name, email, email_key, is_active, created_at) VALUES (?, ?, ?, ?, 1, ?)",
                   ((user, f"user {i}", email, email_key(email), stamp(now - 400 * DAY))
                    for i, (user, email) in enumerate(zip(users, emails))))
    kinds, weights = list(KEY_RESULT_MIX), list(KEY_RESULT_MIX.values())
    cycles = []
    for count in sizes:
        cycle, begins = new_id(), now - 84 * DAY
        db.execute("INSERT INTO cycles (id, name, created_at) VALUES (?, ?, ?)",
                   (cycle, f"report {count}", stamp(begins - DAY)))
        objectives = []  # (id, created, assignee), in creation order
        for created in sorted(begins + rng.randrange(14 * DAY) for _ in range(count)):
            objective = new_id()
            company = rng.random() < 0.05
            personal = not company and rng.random() < 0.15
            parent = objectives[rng.randrange(len(objectives))][0] if objectives and rng.random() < 1 / 3 else None
            team = rng.choice(teams) if rng.random() < 0.5 else None
            assignee = rng.choice(users) if rng.random() < 0.6 else None
            description = f"Why objective {len(objectives)} matters, and how we will know." if rng.random() < 0.3 \
                else None
            db.execute(
                "INSERT INTO objectives (id, name, description, is_company, is_personal, cycle_id, team_id, "
                "assignee_id, parent_objective_id, created_at, modified_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (objective, f"objective {len(objectives)} of {count}", description, int(company), int(personal),
                 cycle, team, assignee, parent, stamp(created), stamp(created)))
            objectives.append((objective, created, assignee))
        key_result_count = 4 * count
        owners = sorted(rng.randrange(count) for _ in range(key_result_count))
        extra = [0] * key_result_count  # check-ins beyond the first: 9 per key result on average
        for _ in range(9 * key_result_count):
            extra[rng.randrange(key_result_count)] += 1
        key_results, checkins = [], []  # checkins: (created, key result index, j, cents, confidence cents)
        for index, owner in enumerate(owners):
            objective, objective_created, assignee = objectives[owner]
            kind = rng.choices(kinds, weights)[0]
            n = 1 + extra[index]
            low, high, values = key_result_values(rng, kind, n)
            created = objective_created + rng.randrange(3 * DAY)
            last = max(created, now - (rng.randrange(15 * DAY, 40 * DAY) if rng.random() < 0.2
                                       else rng.randrange(13 * DAY)))
            moments = [created, *sorted(rng.randrange(created, last + 1) for _ in range(n - 2)), last][:n]
            trust = rng.randrange(20, 96)
            confidences = [min(100, max(0, trust + rng.randrange(-10, 11))) for _ in range(n)]
            key_results.append((new_id(), objective, kind, confidences[-1], values[-1], low, high, created,
                                moments[-1], assignee))
            checkins += ((moment, index, j, value, confidence)
                         for j, (moment, value, confidence) in enumerate(zip(moments, values, confidences)))
        # Key results in the order they were made, each with its objective's cycle.
        db.executemany(
            "INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value, "
            "target_value_min, target_value_max, created_at, modified_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ((kr[0], kr[1], cycle, f"key result {i}", kr[2], decimal_text(kr[3]), decimal_text(kr[4]),
              None if kr[5] is None else decimal_text(kr[5]), None if kr[6] is None else decimal_text(kr[6]),
              stamp(kr[7]), stamp(kr[8]))
             for i, kr in sorted(enumerate(key_results), key=lambda pair: pair[1][7])))
        checkins.sort()
        seq_of = dict(db.execute("SELECT id, seq FROM key_results WHERE cycle_id = ?", (cycle,)))

        def checkin_rows():
            for moment, index, j, value, confidence in checkins:
                key_result, assignee = seq_of[key_results[index][0]], key_results[index][9]
                if j == 0:  # recorded by creating the key result
                    comment = author = None
                else:
                    comment = rng.choice(COMMENTS) if rng.random() < 0.5 else None
                    draw = rng.random()
                    author = (assignee if assignee and draw < 0.7 else rng.choice(users) if draw < 0.9 else None)
                yield (new_id(), key_result, decimal_text(value), decimal_text(confidence), comment, author,
                       stamp(moment))

        db.executemany(
            "INSERT INTO checkins (id, key_result_seq, value, confidence, comment, author_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", checkin_rows())
        cycles.append((cycle, [kr[0] for kr in key_results]))
    db.execute("COMMIT")
    db.close()
    return cycles


class Process:
    """A server process, with its resident memory sampled while it runs."""

    def __init__(self, args, port, probe, cpus=None, log=None):
        self.port = port
        started = time.perf_counter()
        with running_on(cpus), open(log or os.devnull, "ab") as output:
            self.process = subprocess.Popen(args, stdout=output, stderr=output)
        self.startup = wait_until_up(port, probe, started)
        self.peak_rss = 0
        self.sampling = True
        self.sampler = threading.Thread(target=self.sample, daemon=True)
        self.sampler.start()

    def pids(self):
        """The server's process and its children, worker processes and the background one (Linux)."""
        pids, index = [self.process.pid], 0
        while index < len(pids):
            try:
                pids += map(int, Path(f"/proc/{pids[index]}/task/{pids[index]}/children").read_text().split())
            except (FileNotFoundError, ProcessLookupError):
                pass
            index += 1
        return pids

    def rss(self):
        """The resident memory of the server's largest process (each worker is one, with --workers)."""
        sizes = [0]
        for pid in self.pids():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except (FileNotFoundError, ProcessLookupError):
                continue
            match = re.search(r"VmRSS:\s+(\d+) kB", status)
            if match:
                sizes.append(int(match.group(1)) * 1024)
        return max(sizes)

    def sample(self):
        while self.sampling:
            self.peak_rss = max(self.peak_rss, self.rss())
            time.sleep(0.05)

    def thread_count(self):
        """The threads of all the server's processes."""
        count = 0
        for pid in self.pids():
            try:
                count += len(os.listdir(f"/proc/{pid}/task"))
            except FileNotFoundError:
                pass
        return count

    def wait_for_threads(self, count, timeout=120):
        """The time at which the process is back to `count` threads (a background checkpoint has ended)."""
        deadline = time.perf_counter() + timeout
        while self.thread_count() > count:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"the server still has {self.thread_count()} threads after {timeout} s")
            time.sleep(0.005)
        return time.perf_counter()

    def stop(self):
        self.sampling = False
        self.sampler.join()
        self.process.terminate()
        self.process.wait(timeout=30)


def wrk(port, path, seconds, connections, script=None, headers=()):
    """Runs wrk; returns requests/s, p50 latency in ms and the count of non-2xx answers.

    headers: (name, value) pairs every request carries, such as a signature's Authorization.
    """
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency"]
    if script:
        command += ["-s", script]
    for name, value in headers:
        command += ["-H", f"{name}: {value}"]
    with running_on(PLACEMENT["wrk"]):
        output = subprocess.run(command + [f"http://127.0.0.1:{port}{path}"],
                                capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    value, unit = re.search(r"50%\s+([\d.]+)(us|ms|s)", output).groups()
    p50 = float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    failures = (int(bad.group(1)) if bad else 0) + (sum(map(int, errors.groups())) if errors else 0)
    return rate, p50, failures


def post_script(folder, cycle):
    body = json.dumps({"name": "bench", "cycle_id": cycle, "is_company": False, "is_personal": False})
    path = Path(folder) / "post.lua"
    path.write_text(f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\n'
                    'wrk.headers["Content-Type"] = "application/json"\n')
    return str(path)


def checkin_script(folder, key_results):
    """POSTs a check-in to each of key_results in turn."""
    body = json.dumps({"value": "12.5", "comment": "weekly"})
    ids = ", ".join(json.dumps(key_result) for key_result in key_results)
    path = Path(folder) / "checkin.lua"
    path.write_text(f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\n'
                    'wrk.headers["Content-Type"] = "application/json"\n'
                    f"local ids = {{{ids}}}\n"
                    "local i = 0\n"
                    "request = function()\n"
                    "  i = i % #ids + 1\n"
                    '  return wrk.format(nil, "/v1/keyresults/" .. ids[i] .. "/checkins")\n'
                    "end\n")
    return str(path)


def keep_alive(port):
    """An open HTTP/1.1 connection, which the service keeps alive between requests."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    connection.connect()
    return connection


def fetch_body(connection, path, accept="application/json", encoding="identity"):
    """GETs path over an open keep-alive connection; the whole body of a 200 of that type, as bytes, and its
    Content-Encoding ("identity" when none)."""
    connection.request("GET", path, headers={"Accept": accept, "Accept-Encoding": encoding})
    response = connection.getresponse()
    body = response.read()
    if response.status != 200:
        raise RuntimeError(f"GET {path} answered {response.status}: {body[:200]!r}")
    kind = response.getheader("Content-Type", "")
    if not kind.startswith(accept):
        raise RuntimeError(f"GET {path} answered {kind!r}, asked for {accept}")
    return body, response.getheader("Content-Encoding", "identity")


def fetch(connection, path):
    """GETs path over an open keep-alive connection; returns the parsed JSON body."""
    return json.loads(fetch_body(connection, path)[0])


BENCH_EDITOR = ("bench editor", "editor@example.com", "a bench of quiet measurements")


WEEK_KEY_RESULTS = 50  # the key results the bench editor owns, for "Your week"


def add_people(source, database, cycle):
    """A copy of the database source with an editor who has a password and a key, and a service key; the editor
    owns WEEK_KEY_RESULTS key results of cycle, spread over it.

    Returns {"user": (credential, secret), "service": (credential, secret)}.
    """
    with closing_db(source) as original, closing_db(database) as copy:
        original.backup(copy)
    name, email, password = BENCH_EDITOR
    password_hash = hash_password(password)
    app = create_app({"DATABASE": database})
    with app.app_context(), transaction() as db:
        editor = users.create(db, name, email, "editor")
        users.set_password(db, editor, password_hash)
        count = db.execute("SELECT count(*) FROM key_results WHERE cycle_id = ?", (cycle,)).fetchone()[0]
        db.execute(
            """UPDATE key_results SET owner_id = ? WHERE seq IN (
                   SELECT seq FROM (SELECT seq, row_number() OVER (ORDER BY seq) AS n FROM key_results
                                    WHERE cycle_id = ?)
                   WHERE (n - 1) % ? = 0 ORDER BY seq LIMIT ?)""",
            (editor["id"], cycle, max(1, count // WEEK_KEY_RESULTS), WEEK_KEY_RESULTS))
        return {"user": keys.create(db, "bench editor's key", user_id=editor["id"]),
                "service": keys.create(db, "bench service key")}


@contextmanager
def closing_db(path):
    db = sqlite3.connect(path)
    try:
        yield db
    finally:
        db.close()


def signature(key):
    """The Authorization header of a request signed with key (credential, secret) now; good for 10 minutes."""
    return [("Authorization", authorization_header(*key))]


def check_signed_get(port, path, signing_keys):
    """The signed service refuses path unsigned, and answers it signed with each key."""
    status = get(port, path)[0]
    if status != 401:
        raise RuntimeError(f"GET {path} unsigned answered {status}, not 401: sign-in is not on")
    for name, key in signing_keys.items():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            connection.request("GET", path, headers=dict(signature(key)))
            response = connection.getresponse()
            body = response.read()
        finally:
            connection.close()
        if response.status != 200:
            raise RuntimeError(f"GET {path} signed with the {name} key answered {response.status}: {body[:200]!r}")


CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


def time_sign_in(connection):
    """Seconds for one sign-in with the bench editor's email and password: POST /login, to its 303."""
    return sign_in(connection)[0]


def sign_in(connection):
    """One sign-in with the bench editor's email and password: the seconds of POST /login, to its 303, and the
    session cookie it set.

    First, untimed, GET /login without a cookie, as a browser opens the page: its session cookie and CSRF token.
    """
    connection.request("GET", "/login", headers={"Accept": "text/html"})
    response = connection.getresponse()
    page = response.read().decode()
    cookie = (response.getheader("Set-Cookie") or "").partition(";")[0]
    token = CSRF_FIELD.search(page)
    if response.status != 200 or not cookie.startswith("okr_session=") or token is None:
        raise RuntimeError(f"GET /login answered {response.status} without a session cookie or a CSRF token")
    form = urlencode({"csrf_token": token.group(1), "next": "/", "email": BENCH_EDITOR[1],
                      "password": BENCH_EDITOR[2]})
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie, "Accept": "text/html"}
    started = time.perf_counter()
    connection.request("POST", "/login", body=form, headers=headers)
    response = connection.getresponse()
    response.read()
    seconds = time.perf_counter() - started
    session = (response.getheader("Set-Cookie") or "").partition(";")[0]
    if response.status != 303 or response.getheader("Location") != "/" or not session.startswith("okr_session="):
        raise RuntimeError(f"POST /login answered {response.status} to {response.getheader('Location')!r}, "
                           "not a 303 to / with a session")
    return seconds, session


def get_page(connection, path, cookie=None):
    """GETs a page as a browser (without gzip) over an open keep-alive connection: status and HTML."""
    headers = {"Accept": "text/html", "Accept-Encoding": "identity", **({"Cookie": cookie} if cookie else {})}
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    return response.status, response.read()


def time_week(connection, cookie):
    """Seconds to get "Your week" (/ for a signed-in person), read whole; and the key results it lists."""
    started = time.perf_counter()
    status, html = get_page(connection, "/", cookie)
    seconds = time.perf_counter() - started
    if status != 200:
        raise RuntimeError(f"GET / signed in answered {status}: {html[:200]!r}")
    return seconds, [len(re.findall(rb'id="kr-[0-9a-f-]{36}"', html))]


def time_edit_page(connection, objective):
    """Seconds to get an objective's edit page, read whole; None while that page does not exist (a 404)."""
    started = time.perf_counter()
    status, html = get_page(connection, f"/objectives/{objective}/edit")
    seconds = time.perf_counter() - started
    if status == 404:
        return None, []
    if status != 200:
        raise RuntimeError(f"GET /objectives/{objective}/edit answered {status}: {html[:200]!r}")
    return seconds, [1]


def time_listing(connection, cycle):
    """Seconds to list a cycle's objectives, then its key results, at page_size=1000; and the counts."""
    started = time.perf_counter()
    counts = []
    for resource in ("objectives", "keyresults"):
        count, page_token = 0, None
        while True:
            path = f"/v1/{resource}?cycle_id={cycle}&page_size=1000"
            page = fetch(connection, path + (f"&page_token={page_token}" if page_token else ""))
            count += len(page[resource])
            page_token = page["next_page_token"]
            if not page_token:
                break
        counts.append(count)
    return time.perf_counter() - started, counts


def time_report(connection, cycle, sizes=None):
    """Seconds to get a cycle's report, parsed; and its objectives_count and key_results_count.

    sizes, when given, keeps the largest body seen, in bytes, under "report".
    """
    started = time.perf_counter()
    body = fetch_body(connection, f"/v1/cycles/{cycle}/report")[0]
    report = json.loads(body)
    seconds = time.perf_counter() - started
    if sizes is not None:
        sizes["report"] = max(sizes.get("report", 0), len(body))
    return seconds, [report["objectives_count"], report["key_results_count"]]


def time_page(connection, cycle, sizes, encoding):
    """Seconds to get a cycle's dashboard page, read whole (and gunzipped if it came so); and the objectives
    and key results it shows.

    encoding is the Accept-Encoding sent: "gzip" as a browser, or "identity". sizes keeps the largest body
    seen, in bytes, under "page " + encoding; and the HTML's, uncompressed, under "page".
    """
    started = time.perf_counter()
    body, coding = fetch_body(connection, f"/cycles/{cycle}", accept="text/html", encoding=encoding)
    html = gzip.decompress(body) if coding == "gzip" else body
    seconds = time.perf_counter() - started
    if coding not in (encoding, "identity"):
        raise RuntimeError(f"GET /cycles/{cycle} answered Content-Encoding {coding}, asked for {encoding}")
    sizes["page " + encoding] = max(sizes.get("page " + encoding, 0), len(body))
    sizes["page"] = max(sizes.get("page", 0), len(html))
    objectives = re.findall(rb'id="?o-[0-9a-f-]{36}', html)
    key_results = re.findall(rb'href="?[^"> ]*/keyresults/[0-9a-f-]{36}', html)
    return seconds, [len(objectives), len(key_results)]


def report_nodes(report):
    """The objective and key-result nodes in a report's tree."""
    objectives = key_results = 0
    stack = list(report["objectives"])
    while stack:
        node = stack.pop()
        objectives += 1
        key_results += len(node["key_results"])
        stack += node["children"]
    return objectives, key_results


def token(seq):
    return base64.urlsafe_b64encode(str(seq).encode()).decode()


def okr_command(database, port, threads, access_log=True, workers=None):
    """app.py with its defaults, but for the database, the port and any --threads and --workers asked for."""
    command = [sys.executable, str(REPO / "app.py"), "--database", database, "--port", str(port)]
    return (command + (["--threads", str(threads)] if threads else []) + ([] if access_log else ["--no-access-log"])
            + (["--workers", str(workers)] if workers else []))


def time_cycle_delete(folder, objectives, key_results_each, threads, rounds):
    """Times DELETE /v1/cycles/:id through the real server, on a fresh copy of one seeded database per round.

    Returns, per round: seconds to the answer, seconds until the server's
    background checkpoint of the WAL ended, and the peak and after-delete
    resident memory.
    """
    seeded = os.path.join(folder, "delete-seed.db")
    cycle, _, _ = seed_objectives(seeded, objectives, key_results_each)
    results = []
    for _ in range(rounds):
        database = os.path.join(folder, "delete.db")
        shutil.copyfile(seeded, database)
        port = free_port()
        # One worker process: the background checkpoint is watched for as the return to its idle threads,
        # which a second worker starting its access log's thread on its first request would blur.
        server = Process(okr_command(database, port, threads, workers=1), port, "/healthz", PLACEMENT["okr"])
        try:
            idle_threads = server.thread_count()
            started = time.perf_counter()
            status, _ = get(port, f"/v1/cycles/{cycle}", method="DELETE")
            answered = time.perf_counter() - started
            assert status == 200, status
            checkpointed = server.wait_for_threads(idle_threads) - started
            assert get(port, f"/v1/objectives?cycle_id={cycle}")[0] == 404
            after = server.rss()  # the sampler, every 50 ms, may have missed the last rise
            results.append((answered, checkpointed, max(server.peak_rss, after), after))
        finally:
            server.stop()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(database + suffix):
                os.remove(database + suffix)
    return results


def run_measured(args):
    """Runs a command to its end; returns its time and peak resident memory (VmHWM, read every 20 ms)."""
    started = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while process.poll() is None:
        try:
            status = Path(f"/proc/{process.pid}/status").read_text()
        except (FileNotFoundError, ProcessLookupError):
            break
        match = re.search(r"VmHWM:\s+(\d+) kB", status)  # the kernel's own high-water mark: no peak is missed
        if match:
            peak = max(peak, int(match.group(1)) * 1024)
        time.sleep(0.02)
    stderr = process.communicate()[1]
    seconds = time.perf_counter() - started
    if process.returncode:
        raise RuntimeError(f"{' '.join(map(str, args))} failed: {stderr.decode(errors='replace')}")
    return seconds, peak


def time_export(folder, objectives, key_results_each):
    """Times `python app.py export` (JSON, everything) and `export --format csv` of a cycle of `objectives`
    objectives with key_results_each key results each (and their first check-ins), and `import` of the JSON
    into a new database; each with its process's peak resident memory, and the files' sizes."""
    database = os.path.join(folder, "export.db")
    cycle = seed_objectives(database, objectives, key_results_each)[0]
    app_py = [sys.executable, str(REPO / "app.py")]
    results = {}
    json_file, csv_file = os.path.join(folder, "export.json"), os.path.join(folder, "export.csv")
    results["json"] = (*run_measured(app_py + ["--database", database, "export", json_file]),
                       os.path.getsize(json_file))
    results["csv"] = (*run_measured(app_py + ["--database", database, "export", "--format", "csv", "--cycle",
                                              cycle, csv_file]), os.path.getsize(csv_file))
    imported = os.path.join(folder, "imported.db")
    run_measured(app_py + ["--database", imported, "init-db"])
    results["import"] = (*run_measured(app_py + ["--database", imported, "import", json_file]),
                         os.path.getsize(imported))
    for path in (database, json_file, csv_file, imported):
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
    return results


# --- webhooks ------------------------------------------------------------------------------------------------

WEBHOOK_HOOKS = 3
WEBHOOK_EVENTS = 1_000


class WebhookReceiver:
    """A receiver on loopback that answers each delivery after 1 ms, keeping connections alive; while
    `watching`, it notes when each objective.created event arrives at each hook (its path)."""

    def __init__(self):
        self.count, self.watching, self.arrivals = 0, False, {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                arrived = time.perf_counter()
                time.sleep(0.001)
                receiver.count += 1
                if receiver.watching:
                    event = json.loads(body)
                    if event["type"] == "objective.created" and event["data"]["name"] == "latency":
                        receiver.arrivals[(self.path, event["data"]["id"])] = arrived
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.serve, daemon=True).start()
        self.port = self.server.server_address[1]

    def serve(self):
        # On wrk's CPU, as if on another machine: its connections' threads inherit it.
        if PLACEMENT["wrk"] is not None:
            os.sched_setaffinity(0, PLACEMENT["wrk"])
        self.server.serve_forever()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def set_hooks(app, urls):
    """Removes every webhook of the app's database (their waiting events with them), then adds one per url,
    matching objective events."""
    with app.app_context(), transaction() as db:
        db.execute("DELETE FROM webhooks")
        for url in urls:
            webhooks.add(db, url, "objective.*", allow_private=True)


def outbox_size(database):
    with closing_db(database) as db:
        return db.execute("SELECT count(*) FROM webhook_outbox").fetchone()[0]


def time_webhook_latency(port, cycle, receiver, urls):
    """POSTs WEBHOOK_EVENTS objectives one at a time; the seconds from each POST's start to its event's arrival
    at each hook, for every (event, hook)."""
    connection = keep_alive(port)
    body = json.dumps({"name": "latency", "cycle_id": cycle, "is_company": False, "is_personal": False})
    sent = {}
    receiver.arrivals.clear()
    receiver.watching = True
    try:
        for _ in range(WEBHOOK_EVENTS):
            started = time.perf_counter()
            connection.request("POST", "/v1/objectives", body=body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            payload = response.read()
            if response.status != 200:
                raise RuntimeError(f"POST /v1/objectives answered {response.status}: {payload[:200]!r}")
            sent[json.loads(payload)["id"]] = started
            time.sleep(0.002)
        paths = ["/" + url.rsplit("/", 1)[1] for url in urls]
        deadline = time.perf_counter() + 60
        while (not all((path, objective) in receiver.arrivals for objective in sent for path in paths)
               and time.perf_counter() < deadline):
            time.sleep(0.05)
    finally:
        receiver.watching = False
        connection.close()
    arrivals = {(path, objective): receiver.arrivals.get((path, objective))
                for objective in sent for path in paths}
    missing = sum(1 for arrived in arrivals.values() if arrived is None)
    if missing:
        raise RuntimeError(f"{missing} webhook deliveries did not arrive within a minute")
    return sorted(arrivals[(path, objective)] - started for objective, started in sent.items() for path in paths)


def time_webhooks(folder, args):
    """The webhooks section (see the module's doc): {state: [(req/s, p50 ms, failures), ...]}, the waiting
    events after each run with hooks up, and the commit-to-arrival latencies."""
    database = os.path.join(folder, "hooks.db")
    cycle = seed_objectives(database, 0)[0]
    app = create_app({"DATABASE": database})
    receiver = WebhookReceiver()
    up = [f"http://127.0.0.1:{receiver.port}/hook{index}" for index in range(WEBHOOK_HOOKS)]
    dead_port = free_port()  # nothing listens there
    down = [f"http://127.0.0.1:{dead_port}/hook{index}" for index in range(WEBHOOK_HOOKS)]
    port = free_port()
    service = Process(okr_command(database, port, args.threads), port, "/healthz", PLACEMENT["okr"],
                      log=os.path.join(folder, "hooks.log"))
    script = post_script(folder, cycle)
    runs = {"none": [], "up": [], "down": []}
    backlog = []
    try:
        for round_number in range(1, args.rounds + 1):
            print(f"webhooks round {round_number}/{args.rounds} ...", flush=True)
            for state in ("none", "up", "down")[::1 if round_number % 2 else -1]:
                set_hooks(app, {"none": [], "up": up, "down": down}[state])
                wrk(port, "/v1/objectives", 1, 8, script)
                runs[state].append(wrk(port, "/v1/objectives", args.seconds, 8, script))
                if state == "up":
                    backlog.append(outbox_size(database))
        set_hooks(app, up)
        latencies = time_webhook_latency(port, cycle, receiver, up)
    finally:
        service.stop()
        receiver.close()
    return runs, backlog, latencies


def webhook_rows(runs, backlog, latencies, seconds):
    """The table's rows of the webhooks section, and their goals' verdicts."""
    rate = {state: statistics.median(r[0] for r in rs) for state, rs in runs.items()}
    ratio = {state: statistics.median(r[0] / n[0] for r, n in zip(runs[state], runs["none"]))
             for state in ("up", "down")}
    p50, p99 = (latencies[int(len(latencies) * q)] * 1000 for q in (0.5, 0.99))
    failures = sum(r[2] for rs in runs.values() for r in rs)
    rows = [
        ("POST /v1/objectives, no webhooks (8 connections)", f"{rate['none']:,.0f} req/s", "", ""),
        (f"  ... {WEBHOOK_HOOKS} matching webhooks, receiver answering in 1 ms", f"{rate['up']:,.0f} req/s",
         f"{ratio['up']:.2f} x no hooks", ">= 0.90"),
        (f"  ... events waiting after each {seconds} s run (median)", f"{statistics.median(backlog):,.0f}", "", ""),
        (f"  ... {WEBHOOK_HOOKS} matching webhooks, receiver down", f"{rate['down']:,.0f} req/s",
         f"{ratio['down']:.2f} x no hooks", ">= 0.90"),
        ("  ... non-2xx answers and socket errors", f"{failures}", "", "0"),
        (f"commit to webhook arrival, {WEBHOOK_EVENTS:,} events x {WEBHOOK_HOOKS} hooks",
         f"p50 {p50:.1f} ms", f"p99 {p99:.1f} ms", ""),
    ]
    return rows, [ratio["up"] >= 0.9, ratio["down"] >= 0.9, failures == 0]


def print_table(rows, goals):
    """Prints rows (measure, figure, ratio, goal), marking each missed goal (goals: the verdicts, in order)."""
    assert len(goals) == sum(1 for row in rows if row[3])
    verdicts = iter(goals)
    width = max(len(r[0]) for r in rows)
    print(f"\n{'measure':{width}}  {'figure':>16}  {'ratio':>20}  goal")
    for name, figure, ratio, goal in rows:
        missed = "  MISSED" if goal and not next(verdicts) else ""
        print(f"{name:{width}}  {figure:>16}  {ratio:>20}  {goal}{missed}")


def time_replication(folder, args):
    """The replication section (see the module's doc): {"with": [(req/s, p50 ms, failures), ...], "without": ...}."""
    services, runs = {}, {"without": [], "with": []}
    try:
        for state in runs:
            database = os.path.join(folder, f"replication-{state}.db")
            cycle = seed_objectives(database, 0)[0]
            port = free_port()
            replica = ["--replicate", f"file://{os.path.join(folder, 'replica')}"] if state == "with" else []
            scripts = os.path.join(folder, f"replication-{state}")  # each its own post.lua, of its own cycle
            os.makedirs(scripts)
            services[state] = (Process(okr_command(database, port, args.threads) + replica, port, "/healthz",
                                       PLACEMENT["okr"], log=os.path.join(folder, f"replication-{state}.log")),
                               post_script(scripts, cycle))
        for round_number in range(1, args.rounds + 1):
            print(f"replication round {round_number}/{args.rounds} ...", flush=True)
            for state in ("without", "with")[::1 if round_number % 2 else -1]:
                service, script = services[state]
                wrk(service.port, "/v1/objectives", 1, 8, script)
                runs[state].append(wrk(service.port, "/v1/objectives", args.seconds, 8, script))
        health = json.loads(get(services["with"][0].port, "/healthz")[1])
    finally:
        for service, _ in services.values():
            service.stop()
    return runs, health


def replication_rows(runs, health):
    """The table's rows of the replication section, and their goals' verdicts."""
    rate = {state: statistics.median(r[0] for r in rs) for state, rs in runs.items()}
    ratio = statistics.median(w[0] / n[0] for w, n in zip(runs["with"], runs["without"]))
    failures = sum(r[2] for rs in runs.values() for r in rs)
    lag = health.get("details", {}).get("replication_lag_seconds", "?")
    rows = [
        ("POST /v1/objectives (8 connections), no replication", f"{rate['without']:,.0f} req/s", "", ""),
        ("  ... with --replicate file://... (Litestream)", f"{rate['with']:,.0f} req/s",
         f"{ratio:.2f} x without", ">= 0.90"),
        ("  ... non-2xx answers and socket errors", f"{failures}", "", "0"),
        ("  ... replication lag in /healthz after the last run", f"{lag} s", "", ""),
    ]
    return rows, [ratio >= 0.9, failures == 0]


def replicate_only(args, placement):
    folder = tempfile.mkdtemp(prefix="okr-bench-")
    try:
        runs, health = time_replication(folder, args)
    finally:
        shutil.rmtree(folder)
    rows, goals = replication_rows(runs, health)
    print_table(rows, goals)
    print(f"\n{sum(goals)} of {len(goals)} goals met; medians of {args.rounds} rounds of {args.seconds} s, {placement}")
    for name, rs in runs.items():
        print(f"  replication {name:7} rounds: " + ", ".join(f"{r[0]:,.0f} req/s p50 {r[1]:.2f} ms" for r in rs))


def webhooks_only(args, placement):
    folder = tempfile.mkdtemp(prefix="okr-bench-")
    try:
        runs, backlog, latencies = time_webhooks(folder, args)
    finally:
        shutil.rmtree(folder)
    rows, goals = webhook_rows(runs, backlog, latencies, args.seconds)
    print_table(rows, goals)
    print(f"\n{sum(goals)} of {len(goals)} goals met; medians of {args.rounds} rounds of {args.seconds} s, {placement}")
    for name, rs in runs.items():
        print(f"  hooks {name:5} rounds: " + ", ".join(f"{r[0]:,.0f} req/s p50 {r[1]:.2f} ms" for r in rs))


# Concurrent reports (issue 25): REPORT_CLIENTS clients ask at once for the report of one cycle of
# --concurrent-report-objectives objectives, while one client reads objectives by id, one at a time.
REPORT_CLIENTS = 8
SMALL_READS_PAUSE = 0.01  # between two small reads: a steady trickle, not a flood


def tree_rss(pid):
    """The resident memory of a process and of all its descendants (worker processes, the background one)."""
    total = 0
    for member in process_tree(pid):
        try:
            status = Path(f"/proc/{member}/status").read_text()
        except OSError:
            continue
        match = re.search(r"VmRSS:\s+(\d+) kB", status)
        total += int(match.group(1)) * 1024 if match else 0
    return total


# Samples a process tree's resident memory every 50 ms until its stdin closes, then prints the peak (bytes). A
# process of its own: in the measuring one, its reads of /proc would hold the GIL while a client waits to time
# an answer, and only while it samples (the busy phases), which made those answers look slower than they were.
TREE_SAMPLER = r"""
import os, re, sys, threading
pid, peak, done = int(sys.argv[1]), 0, threading.Event()
def tree(pid):
    members, stack = [], [pid]
    while stack:
        member = stack.pop()
        members.append(member)
        try:
            tasks = os.listdir(f"/proc/{member}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{member}/task/{task}/children") as children:
                    stack += [int(child) for child in children.read().split()]
            except OSError:
                pass
    return members
def rss():
    total = 0
    for member in tree(pid):
        try:
            with open(f"/proc/{member}/status") as status:
                match = re.search(r"VmRSS:\s+(\d+) kB", status.read())
        except OSError:
            continue
        total += int(match.group(1)) * 1024 if match else 0
    return total
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
while not done.is_set():
    peak = max(peak, rss())
    done.wait(0.05)
print(max(peak, rss()), flush=True)
"""


class TreeSampler:
    """The peak of tree_rss(pid), sampled every 50 ms while it runs, by a process of its own."""

    def __init__(self, pid):
        self.process = subprocess.Popen([sys.executable, "-c", TREE_SAMPLER, str(pid)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)

    def stop(self):
        out, _ = self.process.communicate(timeout=30)
        return int(out)


def fetch_report_politely(port, path, results):
    """GETs path as a well-behaved client: on a 503, waits its Retry-After and asks again. Appends (seconds to
    the whole body, 503s met, body size, body digest) to results; reads the body in chunks, holding none of it."""
    import hashlib
    started, refused = time.perf_counter(), 0
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        while True:
            connection.request("GET", path)
            response = connection.getresponse()
            if response.status == 503:
                response.read()
                refused += 1
                time.sleep(float(response.getheader("Retry-After", "1")))
                continue
            if response.status != 200:
                raise RuntimeError(f"GET {path} answered {response.status}: {response.read()[:200]!r}")
            digest, size = hashlib.blake2b(digest_size=16), 0
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
            results.append((time.perf_counter() - started, refused, size, digest.hexdigest()))
            return
    finally:
        connection.close()


def small_reads(port, paths, stop, latencies, stamped=False):
    """GETs paths in turn over one keep-alive connection until stop is set; appends each one's seconds (stamped:
    with the moment it was asked, time.time(), the counting API's clock)."""
    connection = keep_alive(port)
    try:
        index = 0
        while not stop.is_set():
            asked, started = time.time(), time.perf_counter()
            body = fetch_body(connection, paths[index % len(paths)])[0]
            seconds = time.perf_counter() - started
            latencies.append((asked, seconds) if stamped else seconds)
            assert body
            index += 1
            time.sleep(SMALL_READS_PAUSE)
    finally:
        connection.close()


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def time_concurrent_reports(folder, args, env=None):
    """One round per --rounds: REPORT_CLIENTS reports of the big cycle at once against a fresh server, with
    small reads beside them. Returns per round: the server's idle and peak resident memory (with its children),
    the small reads' p50 and p99 (and the same before the reports), the reports' times and 503s."""
    database = args.reports_database or os.path.join(folder, "reports.db")
    if not os.path.exists(database):
        print(f"seeding a cycle of {args.concurrent_report_objectives:,} objectives to report ...", flush=True)
        started = time.perf_counter()
        seed_report_cycles(database, (args.concurrent_report_objectives,))
        print(f"  seeded in {time.perf_counter() - started:.1f} s", flush=True)
    with closing_db(database) as db:
        cycle = db.execute("SELECT cycle_id FROM objectives GROUP BY cycle_id ORDER BY count(*) DESC LIMIT 1"
                           ).fetchone()[0]
        ids = [row[0] for row in db.execute("SELECT id FROM objectives WHERE cycle_id = ? ORDER BY random() LIMIT 200",
                                            (cycle,))]
    small = [f"/v1/objectives/{objective}" for objective in ids]
    results = []
    for round_number in range(1, args.rounds + 1):
        print(f"concurrent reports round {round_number}/{args.rounds} ...", flush=True)
        port = free_port()
        command = okr_command(database, port, args.threads)
        with running_on(PLACEMENT["okr"]), open(os.path.join(folder, "reports.log"), "ab") as log:
            server = subprocess.Popen(command, stdout=log, stderr=log, env={**os.environ, **(env or {})})
        try:
            wait_until_up(port, "/healthz", time.perf_counter())
            for path in small[:20]:
                get(port, path)
            time.sleep(1)
            idle = tree_rss(server.pid)
            stop, quiet, busy = threading.Event(), [], []
            reader = threading.Thread(target=small_reads, args=(port, small, stop, quiet))
            reader.start()
            time.sleep(3)
            stop.set()
            reader.join()
            sampler = TreeSampler(server.pid)
            stop = threading.Event()
            reader = threading.Thread(target=small_reads, args=(port, small, stop, busy))
            reader.start()
            done = []
            started = time.perf_counter()
            clients = [threading.Thread(target=fetch_report_politely, args=(port, f"/v1/cycles/{cycle}/report", done))
                       for _ in range(REPORT_CLIENTS)]
            for client in clients:
                client.start()
            for client in clients:
                client.join()
            elapsed = time.perf_counter() - started
            stop.set()
            reader.join()
            peak = sampler.stop()
        finally:
            server.terminate()
            server.wait(timeout=60)
        if len(done) != REPORT_CLIENTS or len({d[3] for d in done}) != 1:
            raise RuntimeError(f"the reports differ or some failed: {[(d[2], d[3]) for d in done]}")
        results.append({"idle": idle, "peak": peak, "quiet p50": percentile(quiet, 0.5),
                        "quiet p99": percentile(quiet, 0.99), "p50": percentile(busy, 0.5),
                        "p99": percentile(busy, 0.99), "max": max(busy), "reads": len(busy), "elapsed": elapsed,
                        "report seconds": sorted(d[0] for d in done), "refused": sum(d[1] for d in done),
                        "size": done[0][2]})
    return results


def concurrent_report_rows(results, objectives):
    """The table's rows of the concurrent reports section, and their goals' verdicts."""
    peak = max(r["peak"] for r in results)
    idle = statistics.median(r["idle"] for r in results)
    p99 = statistics.median(r["p99"] for r in results)
    rows = [
        ("server resident memory, idle (with its children)", f"{idle / 2**20:,.0f} MB", "", ""),
        (f"  ... peak, {REPORT_CLIENTS} concurrent reports of {objectives:,} objectives",
         f"{peak / 2**20:,.0f} MB", f"{peak / idle:.1f} x idle", "< 1024 MB"),
        ("small reads (GET /v1/objectives/:id) before the reports",
         f"p50 {statistics.median(r['quiet p50'] for r in results) * 1000:.1f} ms",
         f"p99 {statistics.median(r['quiet p99'] for r in results) * 1000:.1f} ms", ""),
        ("  ... while the reports are built and sent",
         f"p50 {statistics.median(r['p50'] for r in results) * 1000:.1f} ms", f"p99 {p99 * 1000:.1f} ms", "< 1000 ms"),
        ("  ... slowest", f"{max(r['max'] for r in results) * 1000:,.0f} ms", "", ""),
        (f"all {REPORT_CLIENTS} reports received (retrying after each 503)",
         f"{statistics.median(r['elapsed'] for r in results):.1f} s",
         f"{statistics.median(r['refused'] for r in results):.0f} x 503", ""),
        ("  ... one report's body", f"{results[0]['size'] / 2**20:,.1f} MB", "", ""),
    ]
    return rows, [peak < 2**30, p99 < 1]


def reports_only(args, placement):
    folder = tempfile.mkdtemp(prefix="okr-bench-")
    env = {"OKR_BIG_REPORT_OBJECTIVES": str(10**9)} if args.reports_unbounded else None
    try:
        results = time_concurrent_reports(folder, args, env)
    finally:
        shutil.rmtree(folder)
    rows, goals = concurrent_report_rows(results, args.concurrent_report_objectives)
    print_table(rows, goals)
    print(f"\n{sum(goals)} of {len(goals)} goals met; {args.rounds} rounds, {placement}"
          + (" (every report built in memory, unbounded)" if args.reports_unbounded else ""))
    for r in results:
        print(f"  round: idle {r['idle'] / 2**20:,.0f} MB, peak {r['peak'] / 2**20:,.0f} MB, small reads p99 "
              f"{r['p99'] * 1000:.0f} ms (max {r['max'] * 1000:,.0f} ms, {r['reads']} reads), reports in "
              + ", ".join(f"{seconds:.1f}" for seconds in r["report seconds"]) + f" s, {r['refused']} x 503")
# --- the cycle page of a 100,000-objective cycle (issue 35) ------------------------------------------------------


def fetch_page_timed(port, path, sampler=None):
    """GETs path as a browser does (gzip taken) over a new connection: seconds to the first byte of the body and
    to its end, the status, the body (gunzipped) and the link to the next page, if any."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        started = time.perf_counter()
        connection.request("GET", path, headers={"Accept": "text/html", "Accept-Encoding": "gzip"})
        response = connection.getresponse()
        first = response.read(1)
        to_first = time.perf_counter() - started
        body = first + response.read()
        whole = time.perf_counter() - started
        if response.getheader("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        following = re.search(rb'rel="next" href="([^"]+)"', body)
        return to_first, whole, response.status, body, following and following.group(1).decode().replace("&amp;", "&")
    finally:
        connection.close()


def time_review_pages(folder, args):
    """Per round, against a fresh server on a cycle of --concurrent-report-objectives objectives (4 key results
    each; --reports-database reuses one): its page (GET /cycles/:id) first shown, shown again, its second page, and
    its key results at risk or off track; each one's seconds to the first byte and to the end, and the server's
    peak resident memory (with its children) over its idle figure."""
    database = args.reports_database or os.path.join(folder, "reports.db")
    if not os.path.exists(database):
        print(f"seeding a cycle of {args.concurrent_report_objectives:,} objectives to page ...", flush=True)
        seed_report_cycles(database, (args.concurrent_report_objectives,))
    with closing_db(database) as db:
        cycle = db.execute("SELECT cycle_id FROM objectives GROUP BY cycle_id ORDER BY count(*) DESC LIMIT 1"
                           ).fetchone()[0]
    results = []
    for round_number in range(1, args.rounds + 1):
        print(f"cycle page round {round_number}/{args.rounds} ...", flush=True)
        port = free_port()
        with running_on(PLACEMENT["okr"]), open(os.path.join(folder, "review.log"), "ab") as log:
            server = subprocess.Popen(okr_command(database, port, args.threads), stdout=log, stderr=log)
        try:
            wait_until_up(port, "/healthz", time.perf_counter())
            get(port, "/cycles")
            time.sleep(1)
            idle = tree_rss(server.pid)
            sampler = TreeSampler(server.pid)
            found = {}
            path = f"/cycles/{cycle}"
            for name, asked in (("first view", path), ("again", path), ("next page", None),
                                ("at risk or off track", f"{path}?status=at_risk&status=off_track")):
                to_first, whole, status, body, following = fetch_page_timed(port, asked or found["again"][4])
                if status != 200:
                    raise RuntimeError(f"GET {asked} answered {status}: {body[:300]!r}")
                found[name] = (to_first, whole, len(body), body.count(b"<li class="), following)
            peak = sampler.stop()
        finally:
            server.terminate()
            server.wait(timeout=60)
        results.append({"idle": idle, "peak": peak, "pages": found})
    return results


def review_rows(results, objectives):
    """The table's rows of the cycle page section, and their goals' verdicts."""
    grown = max(r["peak"] - r["idle"] for r in results)
    rows = [("server resident memory, idle (with its children)",
             f"{statistics.median(r['idle'] for r in results) / 2**20:,.0f} MB", "", ""),
            (f"  ... peak above idle, the pages of a cycle of {objectives:,} objectives", f"{grown / 2**20:,.0f} MB",
             "", "< 200 MB")]
    goals = [grown < 200 * 2**20]
    for name in results[0]["pages"]:
        first = statistics.median(r["pages"][name][0] for r in results)
        whole = statistics.median(r["pages"][name][1] for r in results)
        size, rows_count = results[0]["pages"][name][2], results[0]["pages"][name][3]
        rows.append((f"GET /cycles/:id, {name}: first byte, whole page ({size / 2**10:,.0f} KB, {rows_count:,} key "
                     "results)", f"{first * 1000:,.0f} ms", f"{whole * 1000:,.0f} ms",
                     "< 1000 ms" if name == "first view" else ""))
        if name == "first view":
            goals.append(first < 1)
    return rows, goals


def review_only(args, placement):
    folder = tempfile.mkdtemp(prefix="okr-bench-")
    try:
        results = time_review_pages(folder, args)
    finally:
        shutil.rmtree(folder)
    rows, goals = review_rows(results, args.concurrent_report_objectives)
    print_table(rows, goals)
    print(f"\n{sum(goals)} of {len(goals)} goals met; {args.rounds} rounds, {placement}")


# --- a cycle's retrospective and calibration (issue 36) --------------------------------------------------------


def time_json(connection, path):
    """Seconds to GET path over an open keep-alive connection and parse its JSON; and the parsed body."""
    started = time.perf_counter()
    body = json.loads(fetch_body(connection, path)[0])
    return time.perf_counter() - started, body


@contextmanager
def served(folder, database, args, name):
    """A fresh server on database, as users start it (its log in folder, under name): its port, within the
    block; stopped at the block's end."""
    port = free_port()
    with running_on(PLACEMENT["okr"]), open(os.path.join(folder, f"{name}.log"), "ab") as log:
        server = subprocess.Popen(okr_command(database, port, args.threads), stdout=log, stderr=log)
    try:
        wait_until_up(port, "/healthz", time.perf_counter())
        yield port
    finally:
        server.terminate()
        server.wait(timeout=60)


def in_turns(steps, repetitions):
    """Each repetition's order of steps: as given, then reversed, in turn."""
    for repetition in range(repetitions):
        yield list(steps) if repetition % 2 == 0 else list(reversed(steps))


def time_retrospectives(folder, args):
    """Per round, against a fresh server on the --report-objectives cycle (seeded as the reports' section seeds
    it): the cycle's report, its retrospective and its calibration (API JSON, read and parsed as a client does),
    timed in turn over one keep-alive connection, --report-repetitions times, the order reversed every other
    repetition. Returns {name: [seconds, ...]} and the retrospective's counts."""
    database = os.path.join(folder, "retrospective.db")
    print(f"seeding a cycle of {args.report_objectives:,} objectives ...", flush=True)
    [(cycle, _)] = seed_report_cycles(database, (args.report_objectives,))
    paths = {"report": f"/v1/cycles/{cycle}/report", "retrospective": f"/v1/cycles/{cycle}/retrospective",
             "calibration": f"/v1/cycles/{cycle}/calibration"}
    timings, counts = {name: [] for name in paths}, None
    for round_number in range(1, args.rounds + 1):
        print(f"retrospective round {round_number}/{args.rounds} ...", flush=True)
        with served(folder, database, args, "retrospective") as port:
            connection = keep_alive(port)
            for path in paths.values():  # warm: the first request of a process pays for its imports
                time_json(connection, path)
            for order in in_turns(paths, args.report_repetitions):
                for name in order:
                    seconds, body = time_json(connection, paths[name])
                    timings[name].append(seconds)
                    if name == "retrospective":
                        counts = (body["objectives_count"], body["key_results_count"])
            connection.close()
    return timings, counts


def retrospective_rows(timings, counts):
    """The table's rows of the retrospective section, and their goals' verdicts: each ratio is the median over the
    repetitions of its time over the report's in the same repetition."""
    report = statistics.median(timings["report"])
    rows = [(f"GET /v1/cycles/:id/report, {counts[0]:,} objectives, {counts[1]:,} key results",
             f"{report * 1000:,.0f} ms", "", "")]
    goals = []
    for name in ("retrospective", "calibration"):
        ratio = statistics.median(mine / theirs for mine, theirs in zip(timings[name], timings["report"]))
        rows.append((f"GET /v1/cycles/:id/{name}", f"{statistics.median(timings[name]) * 1000:,.0f} ms",
                     f"{ratio:.2f} x report", "<= 1.5 x report"))
        goals.append(ratio <= 1.5)
    return rows, goals


def repetitions_alone(args, placement, measure, rows_of):
    """Runs a section timed in repetitions alone, in a temporary folder: measure(folder, args) gives what
    rows_of(*it) makes the table's rows and verdicts of; prints the table. Returns the verdicts."""
    folder = tempfile.mkdtemp(prefix="okr-bench-")
    try:
        measured = measure(folder, args)
    finally:
        shutil.rmtree(folder)
    rows, goals = rows_of(*measured)
    print_table(rows, goals)
    print(f"\n{sum(goals)} of {len(goals)} goals met; {args.rounds} rounds of {args.report_repetitions} "
          f"repetitions, {placement}")
    return goals


def retrospective_only(args, placement):
    repetitions_alone(args, placement, time_retrospectives, retrospective_rows)


# --- hidden objectives (issue 39) -------------------------------------------------------------------------------


VISIBILITY_SHARE = 0.2  # of the cycle's objectives restricted: half 'team', half 'private'
VIEWER_TEAMS = 2  # of the seeded 20, the viewer is a member of
VIEWER_KEY_RESULTS = {"private": 3, "team": 2, "everyone": 5}  # key results the viewer owns, by objective visibility
VISIBILITY_PAGE_SIZE = 100


def restrict_objectives(database, cycle, seed=39):
    """Makes a VISIBILITY_SHARE of the cycle's objectives restricted, half 'team' (of those that have a team),
    half 'private', straight in the database, and gives each objective a creator (one of the seeded users, as an
    objective made through the API has); adds a viewer (role viewer) who is a member of VIEWER_TEAMS of the teams
    those belong to and owns VIEWER_KEY_RESULTS key results, with a key, and a service key.

    Returns {"viewer": (credential, secret), "service": (credential, secret)}."""
    rng = random.Random(seed)
    app = create_app({"DATABASE": database})
    with app.app_context(), transaction() as db:
        rows = db.execute("SELECT id, team_id FROM objectives WHERE cycle_id = ? ORDER BY seq", (cycle,)).fetchall()
        people = [row[0] for row in db.execute("SELECT id FROM users ORDER BY seq")]
        db.executemany("UPDATE objectives SET created_by = ? WHERE id = ?",
                       [(rng.choice(people), row["id"]) for row in rows])
        restricted = round(len(rows) * VISIBILITY_SHARE)
        of_teams = [row["id"] for row in rows if row["team_id"] is not None]
        team = set(rng.sample(of_teams, restricted // 2))
        private = set(rng.sample([row["id"] for row in rows if row["id"] not in team], restricted - len(team)))
        db.executemany("UPDATE objectives SET visibility = ? WHERE id = ?",
                       [("team", objective) for objective in sorted(team)]
                       + [("private", objective) for objective in sorted(private)])
        viewer = users.create(db, "bench viewer", "viewer@example.com", "viewer")
        teams = list(dict.fromkeys(row["team_id"] for row in rows if row["id"] in team))  # all drawn by seq
        for team_id in rng.sample(teams, VIEWER_TEAMS):
            db.execute("INSERT INTO team_members (team_id, user_id, joined_at) VALUES (?, ?, ?)",
                       (team_id, viewer["id"], utc_now()))
        mine = {row[0] for row in db.execute("SELECT team_id FROM team_members WHERE user_id = ?", (viewer["id"],))}
        with_key_results = {row[0] for row in db.execute("SELECT objective_id FROM key_results WHERE cycle_id = ?",
                                                         (cycle,))}
        owned = [row for row in rows if row["id"] in with_key_results]
        pools = {"private": [row["id"] for row in owned if row["id"] in private],
                 "team": [row["id"] for row in owned if row["id"] in team and row["team_id"] not in mine],
                 "everyone": [row["id"] for row in owned if row["id"] not in team | private]}
        for kind, count in VIEWER_KEY_RESULTS.items():
            for objective in rng.sample(pools[kind], count):
                db.execute("UPDATE key_results SET owner_id = ? WHERE seq = (SELECT min(seq) FROM key_results "
                           "WHERE objective_id = ?)", (viewer["id"], objective))
        return {"viewer": keys.create(db, "bench viewer's key", user_id=viewer["id"]),
                "service": keys.create(db, "bench service key")}


def signed_json(connection, path, header):
    """GETs path over an open keep-alive connection with the Authorization header given; the parsed JSON."""
    connection.request("GET", path, headers={"Accept": "application/json", "Accept-Encoding": "identity",
                                             "Authorization": header})
    response = connection.getresponse()
    body = response.read()
    if response.status != 200:
        raise RuntimeError(f"GET {path} answered {response.status}: {body[:200]!r}")
    return json.loads(body)


def time_signed_listing(connection, key, cycle):
    """Seconds to list a cycle's objectives, every page at page_size=VISIBILITY_PAGE_SIZE, signed with key (one
    signature, made before the clock starts, good for them all); and the objectives listed."""
    header = authorization_header(*key)
    started = time.perf_counter()
    count, page_token = 0, None
    while True:
        path = f"/v1/objectives?cycle_id={cycle}&page_size={VISIBILITY_PAGE_SIZE}"
        page = signed_json(connection, path + (f"&page_token={page_token}" if page_token else ""), header)
        count += len(page["objectives"])
        page_token = page["next_page_token"]
        if not page_token:
            break
    return time.perf_counter() - started, count


def time_signed_report(connection, key, cycle):
    """Seconds to get a cycle's report signed with key, read and parsed; and the report."""
    header = authorization_header(*key)
    started = time.perf_counter()
    report = signed_json(connection, f"/v1/cycles/{cycle}/report", header)
    return time.perf_counter() - started, report


def check_visibility_seen(listed, reports):
    """Fails loudly unless the viewer sees fewer objectives than the service key, in the listing and the report,
    the viewer's report says it hides some, and each report has the objectives its listing has: else the section
    measures nothing, or the wrong thing."""
    viewer, service = reports["viewer"], reports["service"]
    if service["hidden_objectives_count"] != 0:
        raise RuntimeError(f"the service key's report hides {service['hidden_objectives_count']} objectives")
    if viewer["hidden_objectives_count"] <= 0:
        raise RuntimeError("the viewer's report hides no objective: the visibility rule is not measured")
    if viewer["objectives_count"] >= service["objectives_count"] or \
            report_nodes(viewer)[0] >= report_nodes(service)[0]:
        raise RuntimeError(f"the viewer's report has {viewer['objectives_count']} objectives, the service key's "
                           f"{service['objectives_count']}: the viewer should see fewer")
    if listed["viewer"] >= listed["service"]:
        raise RuntimeError(f"the viewer lists {listed['viewer']} objectives, the service key {listed['service']}: "
                           "the viewer should see fewer")
    for who in listed:
        if reports[who]["objectives_count"] != listed[who] or report_nodes(reports[who])[0] != listed[who]:
            raise RuntimeError(f"the {who}'s report has {reports[who]['objectives_count']} objectives "
                               f"({report_nodes(reports[who])[0]} in its tree), its listing {listed[who]}: "
                               "both should be those it may see")


def time_visibility(folder, args):
    """Per round, against a fresh server on the --report-objectives cycle (seeded as the reports' section seeds it,
    a fifth of its objectives restricted): the listing and the report, each asked by the service key and the
    viewer in turn over one keep-alive connection per key, --report-repetitions times, the order reversed every
    other repetition. Returns {(name, who): [seconds, ...]} and what each saw:
    {"listed": {who: count}, "reports": {who: report}}."""
    database = os.path.join(folder, "visibility.db")
    print(f"seeding a cycle of {args.report_objectives:,} objectives, a fifth of them restricted ...", flush=True)
    [(cycle, _)] = seed_report_cycles(database, (args.report_objectives,))
    signing_keys = restrict_objectives(database, cycle)
    measures = {"listing": time_signed_listing, "report": time_signed_report}
    steps = [(name, who) for name in measures for who in ("service", "viewer")]
    timings, seen = {step: [] for step in steps}, {"listed": {}, "reports": {}}
    for round_number in range(1, args.rounds + 1):
        print(f"visibility round {round_number}/{args.rounds} ...", flush=True)
        with served(folder, database, args, "visibility") as port:
            check_signed_get(port, f"/v1/cycles/{cycle}/report", signing_keys)
            connections = {who: keep_alive(port) for who in signing_keys}
            for name, who in steps:  # warm: the first request of a process pays for its imports
                measures[name](connections[who], signing_keys[who], cycle)
            # service, viewer, service, viewer; then viewer, service, viewer, service
            for order in in_turns(steps, args.report_repetitions):
                for name, who in order:
                    seconds, what = measures[name](connections[who], signing_keys[who], cycle)
                    timings[name, who].append(seconds)
                    seen["listed" if name == "listing" else "reports"][who] = what
                check_visibility_seen(seen["listed"], seen["reports"])
            for connection in connections.values():
                connection.close()
    return timings, seen


def visibility_rows(timings, seen):
    """The table's rows of the visibility section, and their goals' verdicts: each ratio is the median over the
    repetitions of the viewer's time over the service key's in the same repetition."""
    listed, reports = seen["listed"], seen["reports"]
    rows, goals = [], []
    for name, label in (("listing", f"GET /v1/objectives?cycle_id=..., every page of {VISIBILITY_PAGE_SIZE}"),
                        ("report", "GET /v1/cycles/:id/report")):
        service, viewer = timings[name, "service"], timings[name, "viewer"]
        ratio = statistics.median(mine / theirs for mine, theirs in zip(viewer, service))
        if name == "listing":
            shows = {who: f"{listed[who]:,} objectives" for who in listed}
        else:
            shows = {who: f"{reports[who]['objectives_count']:,} objectives, "
                          f"{reports[who]['hidden_objectives_count']:,} hidden" for who in reports}
        rows.append((label, "", "", ""))
        rows.append((f"  ... service key ({shows['service']})", f"{statistics.median(service) * 1000:,.0f} ms", "",
                     ""))
        rows.append((f"  ... viewer ({shows['viewer']})", f"{statistics.median(viewer) * 1000:,.0f} ms",
                     f"{ratio:.2f} x service key", "<= 1.2 x service key"))
        goals.append(ratio <= 1.2)
    return rows, goals


def visibility_only(args, placement):
    if not all(repetitions_alone(args, placement, time_visibility, visibility_rows)):
        sys.exit(1)


# --- worker processes (issue 25) -------------------------------------------------------------------------------


def time_workers(folder, args):
    """The worker processes' section (see the module's doc): {name: [(req/s, p50 ms, failures), ...]}."""
    signed_database, open_database = os.path.join(folder, "workers-signed.db"), os.path.join(folder, "workers.db")
    cycle, ids, _ = seed_objectives(open_database, 1_000)
    with closing_db(open_database) as source, closing_db(signed_database) as copy:
        source.backup(copy)
    app = create_app({"DATABASE": signed_database})
    with app.app_context(), transaction() as db:
        key = keys.create(db, "bench service key")
    one = f"/v1/objectives/{ids[len(ids) // 2]}"
    script = post_script(folder, cycle)
    hello_port = free_port()
    hello = Process([sys.executable, "-c", HELLO_APP, str(hello_port)], hello_port, "/hello", PLACEMENT["hello"])
    servers = {}
    try:
        # The service as users start it (default workers), and the same with --workers 1, on each database.
        for name, database, workers in (("signed", signed_database, None), ("signed 1", signed_database, 1),
                                        ("open", open_database, None), ("open 1", open_database, 1)):
            port = free_port()
            servers[name] = Process(okr_command(database, port, args.threads, workers=workers), port, "/healthz",
                                    PLACEMENT["okr"], log=os.path.join(folder, f"workers-{name}.log"))
        check_signed_get(servers["signed"].port, one, {"service": key})
        runs = {name: [] for name in ("hello", "get", "get 1 worker", "hello after get", "get c1", "get c32", "post",
                                      "post 1 worker")}
        for round_number in range(1, args.rounds + 1):
            print(f"workers round {round_number}/{args.rounds} ...", flush=True)
            s, order = args.seconds, (slice(None) if round_number % 2 else slice(None, None, -1))
            runs["hello"].append(wrk(hello_port, "/hello", s, 8))
            # Each pair in turn, the order reversed every other round, each run after a second of load.
            for name in ("get", "get 1 worker")[order]:
                port = servers["signed" if name == "get" else "signed 1"].port
                wrk(port, one, 1, 8, headers=signature(key))
                runs[name].append(wrk(port, one, s, 8, headers=signature(key)))
            # The ceiling again right after: the GETs' ratio to hello is to the mean of the two beside them.
            runs["hello after get"].append(wrk(hello_port, "/hello", s, 8))
            for name, connections in (("get c1", 1), ("get c32", 32))[order]:
                wrk(servers["open"].port, one, 1, connections)
                runs[name].append(wrk(servers["open"].port, one, s, connections))
            for name in ("post", "post 1 worker")[order]:
                port = servers["open" if name == "post" else "open 1"].port
                wrk(port, "/v1/objectives", 1, 8, script)
                runs[name].append(wrk(port, "/v1/objectives", s, 8, script))
        busy = sum(Path(os.path.join(folder, f"workers-{name}.log")).read_text().count("database busy")
                   for name in servers)
    finally:
        for server in servers.values():
            server.stop()
        hello.stop()
    return runs, busy


def workers_rows(runs, busy):
    """The table's rows of the worker processes' section, and their goals' verdicts."""
    ceilings = [(a[0] + b[0]) / 2 for a, b in zip(runs["hello"], runs["hello after get"])]
    rate = {name: statistics.median(r[0] for r in rs) for name, rs in runs.items()}
    within = {  # each a median of the rounds' ratios
        "hello": statistics.median(r[0] / h for r, h in zip(runs["get"], ceilings)),
        "one worker": statistics.median(r[0] / o[0] for r, o in zip(runs["get"], runs["get 1 worker"])),
        "one worker hello": statistics.median(o[0] / h for o, h in zip(runs["get 1 worker"], ceilings)),
        "post": statistics.median(r[0] / o[0] for r, o in zip(runs["post"], runs["post 1 worker"])),
        "c32": statistics.median(r[0] / o[0] for r, o in zip(runs["get c32"], runs["get c1"])),
    }
    failures = {name: sum(r[2] for r in rs) for name, rs in runs.items()}
    errors = sum(failures[name] for name in ("get", "get 1 worker", "get c1", "get c32", "post", "post 1 worker"))
    rows = [
        ("hello ceiling (bare Flask on waitress, one process), beside the GETs",
         f"{statistics.median(ceilings):,.0f} req/s", "", ""),
        ("signed GET /v1/objectives/:id (8 conn.), default workers", f"{rate['get']:,.0f} req/s",
         f"{within['hello']:.2f} x hello", ">= 0.90"),
        ("  ... the same server with --workers 1", f"{rate['get 1 worker']:,.0f} req/s",
         f"{within['one worker hello']:.2f} x hello", ""),
        ("  ... default workers over --workers 1", "", f"{within['one worker']:.2f} x", ">= 1.40"),
        ("POST /v1/objectives (8 conn.), default workers", f"{rate['post']:,.0f} req/s",
         f"{within['post']:.2f} x workers 1", ">= 1.10"),
        ("  ... with --workers 1", f"{rate['post 1 worker']:,.0f} req/s", "", ""),
        ("  ... non-2xx answers and socket errors (every run above)", f"{errors}",
         f"{busy} 'database busy' logged", "0"),
        ("GET /v1/objectives/:id, default workers, 32 connections", f"{rate['get c32']:,.0f} req/s",
         f"{within['c32']:.2f} x 1 connection", ">= 0.90"),
        ("  ... 1 connection", f"{rate['get c1']:,.0f} req/s", "", ""),
    ]
    goals = [within["hello"] >= 0.9, within["one worker"] >= 1.4, within["post"] >= 1.1, errors + busy == 0,
             within["c32"] >= 0.9]
    return rows, goals


def workers_only(args, placement):
    folder = tempfile.mkdtemp(prefix="okr-bench-")
    try:
        with clients_placed_by_the_system():
            runs, busy = time_workers(folder, args)
    finally:
        shutil.rmtree(folder)
    rows, goals = workers_rows(runs, busy)
    print_table(rows, goals)
    print(f"\n{sum(goals)} of {len(goals)} goals met; medians of {args.rounds} rounds of {args.seconds} s, "
          f"default workers: {worker_count('auto')}, {placement.split(', wrk')[0]}, wrk placed by the system")
    for name, rs in runs.items():
        print(f"  {name:13} rounds: " + ", ".join(f"{r[0]:,.0f} req/s p50 {r[1]:.2f} ms" for r in rs))


# --- the activity feed's memory (issue 32) --------------------------------------------------------------------

EVENT_CLIENTS = 16  # pages asked for at once
EVENT_PAGE = 1_000  # the largest page_size
AFTER_SECONDS = 3  # how long after the burst a worker's memory is read again
WORDS = ("quarterly", "revenue", "onboarding", "latency", "customers", "retention", "pipeline", "hiring",
         "roadmap", "migration", "the", "and", "of", "to", "with", "by", "support", "launch", "churn", "margin")


def description(rng, length=10_000):
    """Text of length characters, words drawn from WORDS, as a long description is."""
    words, size = [], 0
    while size < length:
        words.append(rng.choice(WORDS))
        size += len(words[-1]) + 1
    return " ".join(words)[:length]


def seed_large_events(database, count, seed=13):
    """count objective.updated events of about 30 KB each, recorded by okr.store.events as an update of an
    objective's 10,000-character description records them."""
    app = create_app({"DATABASE": database})
    with app.app_context():
        init_db()
    rng = random.Random(seed)
    cycle, now = new_id(), utc_now()
    texts = [description(rng) for _ in range(50)]
    with app.app_context(), transaction() as db:
        for index in range(count):
            objective = {"id": new_id(), "name": f"objective {index}", "created_at": now, "modified_at": now,
                         "team_id": None, "assignee_id": None, "description": texts[index % 50],
                         "is_personal": False, "is_company": False, "parent_objective_id": None, "cycle_id": cycle}
            events.record(db, "objective", "updated", objective["id"],
                          {**objective, "description": texts[(index + 1) % 50]}, before=objective, cycle_id=cycle)
    with closing_db(database) as db:
        return [row[0] for row in db.execute("SELECT seq FROM events ORDER BY seq")]


def worker_rss(server_pid, port):
    """{pid: resident bytes} of each worker process of the server."""
    sizes = {}
    for pid in worker_pids(server_pid, port):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        match = re.search(r"VmRSS:\s+(\d+) kB", status)
        if match:
            sizes[pid] = int(match.group(1)) * 1024
    return sizes


class WorkerSampler:
    """The peak resident memory of each worker of a server, sampled every 50 ms while it runs."""

    def __init__(self, server_pid, port):
        self.server_pid, self.port, self.peaks, self.running = server_pid, port, {}, True
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def sample(self):
        while self.running:
            for pid, size in worker_rss(self.server_pid, self.port).items():
                self.peaks[pid] = max(self.peaks.get(pid, 0), size)
            time.sleep(0.05)

    def stop(self):
        self.running = False
        self.thread.join()
        return self.peaks


def fetch_events_page(port, path, results, wanted=1):
    """GETs a page of events and reads it whole; appends (bytes, events in it, whether a token came). With
    wanted, follows next_page_token over one keep-alive connection until that many events came (appending
    each page)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        got, token = 0, None
        while True:
            connection.request("GET", path + (f"&page_token={token}" if token else ""))
            response = connection.getresponse()
            body = response.read()
            if response.status != 200:
                raise RuntimeError(f"GET {path} answered {response.status}: {body[:200]!r}")
            page = json.loads(body)
            results.append((len(body), len(page["events"]), page["next_page_token"] is not None))
            got, token = got + len(page["events"]), page["next_page_token"]
            if got >= wanted or token is None:
                return
            path = path.split("&page_token=")[0]
    finally:
        connection.close()


def burst(server_pid, port, paths, wanted=1):
    """EVENT_CLIENTS clients at once, each reading paths[i] (and its next pages until wanted events came):
    ({worker pid: peak bytes}, {worker pid: bytes AFTER_SECONDS later}, the pages, seconds)."""
    sampler = WorkerSampler(server_pid, port)
    pages = []
    started = time.perf_counter()
    clients = [threading.Thread(target=fetch_events_page, args=(port, path, pages, wanted)) for path in paths]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    elapsed = time.perf_counter() - started
    peaks = sampler.stop()
    time.sleep(AFTER_SECONDS)
    return peaks, worker_rss(server_pid, port), pages, elapsed


def time_event_pages(folder, args):
    """One round per --rounds: EVENT_CLIENTS pages of EVENT_PAGE large events at once against a fresh server as
    users start it. Returns per round: each worker's memory before, at peak and after, and the pages' sizes."""
    database = os.path.join(folder, "events.db")
    print(f"seeding {args.large_events:,} events of about 30 KB ...", flush=True)
    seqs = seed_large_events(database, args.large_events)
    step = max(1, (len(seqs) - EVENT_PAGE) // EVENT_CLIENTS)
    starts = [0] + [seqs[min(index * step, len(seqs) - 1) - 1] for index in range(1, EVENT_CLIENTS)]
    paths = [f"/v1/events?page_size={EVENT_PAGE}" + (f"&page_token={token(start)}" if start else "")
             for start in starts]
    results = []
    for round_number in range(1, args.rounds + 1):
        print(f"activity feed round {round_number}/{args.rounds} ...", flush=True)
        port = free_port()
        with running_on(PLACEMENT["okr"]), open(os.path.join(folder, "events.log"), "ab") as log:
            server = subprocess.Popen(okr_command(database, port, args.threads), stdout=log, stderr=log)
        try:
            wait_until_up(port, "/healthz", time.perf_counter())
            for _ in range(40):  # every worker warmed up: its imports, its connection, a small page
                get(port, "/v1/events?page_size=5")
            time.sleep(1)
            before = worker_rss(server.pid, port)
            peaks, after, pages, elapsed = burst(server.pid, port, paths)
            # The same clients each reading EVENT_PAGE events however many pages that takes.
            walk_peaks, walk_after, walked, walk_elapsed = burst(server.pid, port, paths, EVENT_PAGE)
        finally:
            server.terminate()
            server.wait(timeout=60)
        if len(pages) != EVENT_CLIENTS or sum(page[1] for page in walked) < EVENT_CLIENTS * EVENT_PAGE:
            raise RuntimeError("some pages failed, or came short")
        workers = sorted(before)
        results.append({"workers": [(before[pid], peaks.get(pid, before[pid]), after.get(pid, 0))
                                    for pid in workers],
                        "walk": [(before[pid], walk_peaks.get(pid, before[pid]), walk_after.get(pid, 0))
                                 for pid in workers],
                        "pages": pages, "elapsed": elapsed, "walked": len(walked), "walk elapsed": walk_elapsed})
    return results


def event_page_rows(results):
    """The table's rows of the activity feed's section, and their goals' verdicts."""
    mb = 2**20
    workers = [worker for r in results for worker in r["workers"]]
    walks = [worker for r in results for worker in r["walk"]]
    grown = max(after - before for before, _, after in workers)
    walk_grown = max(after - before for before, _, after in walks)
    pages = [page for r in results for page in r["pages"]]
    rows = [
        ("worker resident memory before the burst (largest)", f"{max(w[0] for w in workers) / mb:,.0f} MB", "", ""),
        (f"  ... peak, {EVENT_CLIENTS} pages of page_size={EVENT_PAGE} large events at once",
         f"{max(w[1] for w in workers) / mb:,.0f} MB", "", ""),
        (f"  ... {AFTER_SECONDS} s after the burst, over before (the worst worker)", f"{grown / mb:+,.0f} MB", "",
         "< 100 MB"),
        ("  ... a page's body (largest)", f"{max(p[0] for p in pages) / mb:,.2f} MB",
         f"{max(p[1] for p in pages)} events", ""),
        ("  ... all pages received", f"{statistics.median(r['elapsed'] for r in results):.1f} s", "", ""),
        (f"peak, the {EVENT_CLIENTS} clients each reading {EVENT_PAGE:,} events page by page",
         f"{max(w[1] for w in walks) / mb:,.0f} MB", f"{statistics.median(r['walked'] for r in results):.0f} pages",
         ""),
        (f"  ... {AFTER_SECONDS} s after, over before the first burst (the worst worker)",
         f"{walk_grown / mb:+,.0f} MB", f"{statistics.median(r['walk elapsed'] for r in results):.1f} s", "< 100 MB"),
    ]
    return rows, [grown < 100 * mb, walk_grown < 100 * mb]


def events_only(args, placement):
    folder = tempfile.mkdtemp(prefix="okr-bench-")
    try:
        results = time_event_pages(folder, args)
    finally:
        shutil.rmtree(folder)
    rows, goals = event_page_rows(results)
    print_table(rows, goals)
    print(f"\n{sum(goals)} of {len(goals)} goals met; {args.rounds} rounds, default workers: "
          f"{worker_count('auto')}, {placement}")
    for number, r in enumerate(results, 1):
        print(f"  round {number}: " + "; ".join(
            f"worker {index}: {before / 2**20:,.0f} MB before, {peak / 2**20:,.0f} peak, {after / 2**20:,.0f} after"
            for index, (before, peak, after) in enumerate(r["workers"], 1))
            + f"; pages {min(p[0] for p in r['pages']) / 2**20:,.2f}-{max(p[0] for p in r['pages']) / 2**20:,.2f} MB"
            f" ({min(p[1] for p in r['pages'])}-{max(p[1] for p in r['pages'])} events) in {r['elapsed']:.1f} s")
        print("           page by page: " + "; ".join(
            f"worker {index}: {peak / 2**20:,.0f} MB peak, {after / 2**20:,.0f} after"
            for index, (_, peak, after) in enumerate(r["walk"], 1)) + f"; {r['walked']} pages in "
            f"{r['walk elapsed']:.1f} s")


# --- a flood of wrong passwords (issue 32) ---------------------------------------------------------------------
# Check-ins from CHECKIN_CLIENTS keep-alive connections, one after another with FLOOD_CHECKIN_PAUSE between, without
# and with FLOOD_ADDRESSES x FLOOD_CONNECTIONS connections POSTing wrong passwords to /login as fast as answers come.
CHECKIN_CLIENTS = 2
FLOOD_CHECKIN_PAUSE = 0.01
FLOOD_ADDRESSES = 4
FLOOD_CONNECTIONS = 4
# Each flooding address moves to another after this many of its wrong passwords were checked (401), under the
# throttle's 100 per address, so that the flood is hashed rather than held (429) at once.
FLOOD_ROTATE_AFTER = 80


class FloodSlot:
    """One flooding address and its connections: 127.0.0.(2 + slot) first, then 127.1.0.(2 + slot), and so on (every
    127.x.y.z is this machine's). It moves on after FLOOD_ROTATE_AFTER of its wrong passwords were checked, or at a
    429."""

    def __init__(self, slot):
        self.slot, self.turn, self.checked = slot, 0, 0
        self.lock = threading.Lock()

    def address_now(self):
        return f"127.{self.turn % 250}.{self.turn // 250 % 250}.{self.slot + 2}"

    def address(self):
        with self.lock:
            return self.address_now()

    def answered(self, address, status):
        with self.lock:
            if address != self.address_now():
                return  # the slot has moved on already
            self.checked += status == 401
            if status == 429 or self.checked >= FLOOD_ROTATE_AFTER:
                self.turn, self.checked = self.turn + 1, 0


def flood_connection(port, slot, stop, outcomes):
    """One flooding connection: wrong passwords for made-up emails, one after another, from its slot's address;
    counts each answer's status in outcomes."""
    connection = address = None
    while not stop.is_set():
        try:
            if connection is None or slot.address() != address:
                if connection is not None:
                    connection.close()
                address = slot.address()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(address, 0))
                connection.request("GET", "/login", headers={"Accept": "text/html"})
                response = connection.getresponse()
                page = response.read().decode()
                token = CSRF_FIELD.search(page)
                if token is None:
                    raise OSError(f"GET /login answered {response.status} without a form")
                headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html",
                           "Cookie": (response.getheader("Set-Cookie") or "").partition(";")[0]}
                csrf = token.group(1)
            form = urlencode({"csrf_token": csrf, "next": "/", "password": "not the password, surely",
                              "email": f"guess-{random.randrange(10**12)}@example.com"})
            connection.request("POST", "/login", body=form, headers=headers)
            response = connection.getresponse()
            response.read()
            status = response.status
        except OSError:
            status = "socket error"
            if connection is not None:
                connection.close()
            connection = None
            time.sleep(0.01)
        outcomes[status] = outcomes.get(status, 0) + 1
        slot.answered(address, status)
    if connection is not None:
        connection.close()


def flood(port, stop, results):
    """The flood, in a process of its own (its clients' Python does not slow the check-ins' clients): FLOOD_ADDRESSES
    x FLOOD_CONNECTIONS connections until stop is set; puts {status: count, "addresses": used, "seconds": its
    length} on results."""
    random.seed()  # not the parent's sequence
    slots, halt, threads, outcomes = [FloodSlot(n) for n in range(FLOOD_ADDRESSES)], threading.Event(), [], []
    for slot in slots:
        for _ in range(FLOOD_CONNECTIONS):
            outcomes.append({})
            threads.append(threading.Thread(target=flood_connection, args=(port, slot, halt, outcomes[-1]),
                                            daemon=True))
    started = time.monotonic()
    for thread in threads:
        thread.start()
    stop.wait()
    halt.set()
    seconds = time.monotonic() - started
    for thread in threads:
        thread.join(timeout=90)
    total = {"addresses": sum(slot.turn + 1 for slot in slots), "seconds": round(seconds, 1)}
    for each in outcomes:
        for status, count in each.items():
            total[str(status)] = total.get(str(status), 0) + count
    results.put(total)


def check_in_steadily(port, key, key_results, until, samples):
    """Check-ins over one keep-alive connection, one after another, until the monotonic time until; appends
    (seconds, status) for each (status "socket error" when the connection failed)."""
    body = json.dumps({"value": "12.5", "comment": "weekly"})
    headers = {"Content-Type": "application/json", **dict(signature(key))}
    connection, index = keep_alive(port), random.randrange(len(key_results))
    try:
        while time.monotonic() < until:
            index += 1
            started = time.perf_counter()
            try:
                connection.request("POST", f"/v1/keyresults/{key_results[index % len(key_results)]}/checkins",
                                   body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                status = response.status
            except OSError:
                status = "socket error"
                connection.close()
                connection = keep_alive(port)
            samples.append((time.perf_counter() - started, status))
            time.sleep(FLOOD_CHECKIN_PAUSE)
    finally:
        connection.close()


def check_ins_for(port, key, key_results, seconds):
    """CHECKIN_CLIENTS clients checking in steadily for seconds: every (seconds, status)."""
    samples, until = [], time.monotonic() + seconds
    clients = [threading.Thread(target=check_in_steadily, args=(port, key, key_results, until, samples))
               for _ in range(CHECKIN_CLIENTS)]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    return samples


def time_sign_in_flood(folder, args):
    """Per round: the check-ins' samples without the flood and with it, and the flood's answers by status."""
    import multiprocessing
    database = os.path.join(folder, "flood.db")
    cycle, _, _ = seed_objectives(database, 100, key_results_each=1)
    with closing_db(database) as db:
        key_results = [row[0] for row in db.execute("SELECT id FROM key_results WHERE cycle_id = ?", (cycle,))]
    name, email, password = BENCH_EDITOR
    app = create_app({"DATABASE": database})
    with app.app_context(), transaction() as db:
        users.set_password(db, users.create(db, name, email, "editor"), hash_password(password))
        key = keys.create(db, "bench service key")
    port = free_port()
    log = os.path.join(folder, "flood.log")
    server = Process(okr_command(database, port, args.threads), port, "/healthz", PLACEMENT["okr"], log=log)
    rounds = []
    try:
        check_ins_for(port, key, key_results, 1)  # warms every worker up
        for round_number in range(1, args.rounds + 1):
            print(f"sign-in flood round {round_number}/{args.rounds} ...", flush=True)
            quiet = check_ins_for(port, key, key_results, args.flood_seconds)
            stop, results = multiprocessing.Event(), multiprocessing.Queue()
            flooding = multiprocessing.Process(target=flood, args=(port, stop, results))
            flooding.start()
            try:
                time.sleep(1)  # the flood under way
                busy = check_ins_for(port, key, key_results, args.flood_seconds)
            finally:
                stop.set()
                outcomes = results.get(timeout=120)
                flooding.join(timeout=30)
            rounds.append({"quiet": quiet, "busy": busy, "flood": outcomes})
        busy_logged = Path(log).read_text(errors="replace").count("database busy")
    finally:
        server.stop()
    return rounds, busy_logged


def check_in_figures(samples):
    """p50 and p99 in seconds of the 200s' times, and the count of everything else (refusals, errors)."""
    times = [seconds for seconds, status in samples if status == 200]
    refused = sum(1 for _, status in samples if status != 200)
    if not times:
        return float("inf"), float("inf"), refused
    return percentile(times, 0.5), percentile(times, 0.99), refused


def sign_in_flood_rows(rounds):
    """The table's rows of the sign-in flood section, and their goals' verdicts."""
    quiet = [check_in_figures(r["quiet"]) for r in rounds]
    busy = [check_in_figures(r["busy"]) for r in rounds]
    quiet_p99 = statistics.median(q[1] for q in quiet)
    busy_p99 = statistics.median(b[1] for b in busy)
    refused = sum(b[2] for b in busy)
    limit = 2 * quiet_p99 + 0.1
    checked = statistics.median(r["flood"].get("401", 0) / r["flood"]["seconds"] for r in rounds)
    rows = [
        (f"check-ins ({CHECKIN_CLIENTS} clients), no flood",
         f"p50 {statistics.median(q[0] for q in quiet) * 1000:,.1f} ms", f"p99 {quiet_p99 * 1000:,.1f} ms", ""),
        ("  ... refused (non-200 or socket error)", f"{sum(q[2] for q in quiet)}", "", ""),
        (f"check-ins under {FLOOD_ADDRESSES} x {FLOOD_CONNECTIONS} connections of wrong passwords",
         f"p50 {statistics.median(b[0] for b in busy) * 1000:,.1f} ms", f"p99 {busy_p99 * 1000:,.1f} ms",
         f"<= {limit * 1000:,.0f} ms (2 x p99 + 100)"),
        ("  ... refused (non-200 or socket error)", f"{refused}", f"of {sum(len(r['busy']) for r in rounds)}", "0"),
        ("wrong passwords checked (401)", f"{checked:,.1f} /s", "", ""),
    ]
    return rows, [busy_p99 <= limit, refused == 0]


def sign_in_flood_only(args, placement):
    folder = tempfile.mkdtemp(prefix="okr-bench-")
    try:
        with clients_placed_by_the_system():
            rounds, busy_logged = time_sign_in_flood(folder, args)
    finally:
        shutil.rmtree(folder)
    rows, goals = sign_in_flood_rows(rounds)
    print_table(rows, goals)
    print(f"\n{sum(goals)} of {len(goals)} goals met; medians of {args.rounds} rounds of {args.flood_seconds} s each "
          f"way, default workers: {worker_count('auto')}, {placement.split(',')[0]}; "
          f"{busy_logged} 'database busy' logged")
    for r in rounds:
        quiet, busy = check_in_figures(r["quiet"]), check_in_figures(r["busy"])
        flood = ", ".join(f"{status}: {count}" for status, count in sorted(r["flood"].items()))
        print(f"  round: check-ins p50/p99 {quiet[0] * 1000:,.1f}/{quiet[1] * 1000:,.1f} ms ({len(r['quiet'])}, "
              f"{quiet[2]} refused), flooded {busy[0] * 1000:,.1f}/{busy[1] * 1000:,.1f} ms ({len(r['busy'])}, "
              f"{busy[2]} refused); the flood's answers {{{flood}}}")


SOURCES = 200  # key results reading a source, all due at once
SOURCE_ANSWER_DELAY = 0.02  # seconds the local JSON API takes to answer, as a real one takes some


# A JSON API that answers {"total": n}, n one more at each request (every sync reads a new value), after a
# delay as a real one takes; a process of its own, so that its threads never share the measuring client's GIL.
# GET /bench/count answers how many times it has answered, /bench/stamps when (time.time()): when sources synced.
COUNTING_API = """
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
count, lock, stamps = 0, threading.Lock(), []
class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        global count
        if self.path == "/bench/count":
            body = json.dumps({"count": count}).encode()
        elif self.path == "/bench/stamps":
            with lock:
                body = json.dumps({"stamps": stamps}).encode()
        else:
            time.sleep(float(sys.argv[2]))
            with lock:
                count += 1
                stamps.append(time.time())
                body = json.dumps({"total": count, "path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
server.daemon_threads = True
server.serve_forever()
"""
SOURCE_BURSTS = 4  # per round: every source made due at once, then waited for, this many times
BURST_GAP = 0.3  # seconds: answers this close together (or closer) belong to one burst


def send_json(port, path, method, value):
    """(status, body) of a request with value as its JSON body."""
    return get(port, path, method, json.dumps(value).encode())


def make_all_due(database):
    """Every source due now, as after a server's downtime: the background process starts them all at once."""
    with closing_db(database) as db:
        db.execute("UPDATE sources SET next_run_at = '2000-01-01T00:00:00Z'")
        db.commit()


def checkin_count(database):
    with closing_db(database) as db:
        return db.execute("SELECT count(*) FROM evidence").fetchone()[0]


def answered(api_port):
    """How many times the counting API has answered."""
    return json.loads(get(api_port, "/bench/count")[1])["count"]


def answer_times(api_port):
    """When the counting API answered (time.time() of each)."""
    return json.loads(get(api_port, "/bench/stamps")[1])["stamps"]


def bursts(stamps):
    """The moments (start, end) when sources synced: the counting API's answers grouped, BURST_GAP apart."""
    windows = []
    for stamp in sorted(stamps):
        if windows and stamp - windows[-1][1] <= BURST_GAP:
            windows[-1][1] = stamp
        else:
            windows.append([stamp, stamp])
    return [(first - SOURCE_ANSWER_DELAY, last + 0.05) for first, last in windows]


def time_sources(folder, args):
    """One round per --rounds: a fresh server as users start it, with SOURCES key results each reading a local
    JSON API (http_json, inside our network); small reads alone for --seconds x 3, then while every source is
    made due at once and synced, SOURCE_BURSTS times. Returns per round: idle and peak resident memory (with the
    background process), the small reads' seconds idle, during the bursts and between them, the bursts' lengths,
    and the values the sources wrote."""
    api_port = free_port()
    api = subprocess.Popen([sys.executable, "-c", COUNTING_API, str(api_port), str(SOURCE_ANSWER_DELAY)])
    results = []
    try:
        for round_number in range(1, args.rounds + 1):
            print(f"sources round {round_number}/{args.rounds} ...", flush=True)
            database = os.path.join(folder, f"sources-{round_number}.db")
            port = free_port()
            with running_on(PLACEMENT["okr"]), open(os.path.join(folder, "sources.log"), "ab") as log:
                server = subprocess.Popen(okr_command(database, port, args.threads), stdout=log, stderr=log)
            try:
                wait_until_up(port, "/healthz", time.perf_counter())
                cycle = json.loads(send_json(port, "/v1/cycles", "POST", {"name": "Q"})[1])["id"]
                objective = json.loads(send_json(port, "/v1/objectives", "POST", {
                    "name": "o", "cycle_id": cycle, "is_company": False, "is_personal": False})[1])["id"]
                connection = json.loads(send_json(port, "/v1/connections", "POST", {
                    "name": "Counting API", "kind": "http_json", "inside_network": True,
                    "address": f"http://127.0.0.1:{api_port}"})[1])["id"]
                key_results = []
                for number in range(SOURCES):
                    kr = json.loads(send_json(port, f"/v1/objectives/{objective}/keyresults", "POST",
                                        {"name": f"k{number}", "type": "baseline"})[1])["id"]
                    key_results.append(kr)
                small = [f"/v1/keyresults/{kr}" for kr in key_results]
                for path in small * 2:  # warm: every one read before the idle reads are timed
                    get(port, path)
                time.sleep(1)
                idle = tree_rss(server.pid)
                stop, quiet, busy = threading.Event(), [], []
                reader = threading.Thread(target=small_reads, args=(port, small, stop, quiet, True))
                reader.start()
                time.sleep(args.seconds * 3)
                stop.set()
                reader.join()
                synced = answered(api_port)
                for number, kr in enumerate(key_results):  # attached: each due at once
                    status, body = send_json(port, f"/v1/keyresults/{kr}/source", "PUT", {
                        "connection_id": connection, "query": f"/count?kr={number}", "path": "$.total"})
                    assert status == 200, body
                sampler = TreeSampler(server.pid)
                stop = threading.Event()
                reader = threading.Thread(target=small_reads, args=(port, small, stop, busy, True))
                reader.start()
                for burst in range(SOURCE_BURSTS):
                    deadline = time.monotonic() + 30
                    while answered(api_port) < synced + SOURCES and time.monotonic() < deadline:
                        time.sleep(0.2)
                    time.sleep(1)  # the last runs' writes, then quiet, before all are due again
                    synced = answered(api_port)
                    if burst < SOURCE_BURSTS - 1:
                        make_all_due(database)
                stop.set()
                reader.join()
                peak = sampler.stop()
                written = checkin_count(database)
            finally:
                server.terminate()
                server.wait(timeout=60)
            windows = [window for window in bursts(answer_times(api_port)) if window[1] >= busy[0][0]]
            during = [seconds for asked, seconds in busy if any(a <= asked <= b for a, b in windows)]
            between = [seconds for asked, seconds in busy if not any(a <= asked <= b for a, b in windows)]
            results.append({"idle": idle, "peak": peak, "quiet": [seconds for _, seconds in quiet],
                            "during": during, "between": between, "bursts": [b - a for a, b in windows],
                            "written": written})
    finally:
        api.terminate()
        api.wait(timeout=30)
    return results


def sources_rows(results):
    """The table's rows of the metric sources section, and their goals' verdicts. The small reads' percentiles
    are of every round's reads together: a burst holds few, and the p99 of one round's would be its 2nd slowest."""
    idle = statistics.median(r["idle"] for r in results)
    peak = max(r["peak"] for r in results)
    quiet = [seconds for r in results for seconds in r["quiet"]]
    during = [seconds for r in results for seconds in r["during"]]
    between = [seconds for r in results for seconds in r["between"]]
    lengths = [length for r in results for length in r["bursts"]]
    quiet99 = percentile(quiet, 0.99)

    def reads(label, latencies, goal):
        p99 = percentile(latencies, 0.99)
        return (label, f"p50 {percentile(latencies, 0.5) * 1000:.1f} ms",
                f"p99 {p99 * 1000:.1f} ms ({p99 / quiet99:.2f} x idle; {len(latencies):,})", goal)

    rows = [
        ("server resident memory, idle (with the background process)", f"{idle / 2**20:,.0f} MB", "", ""),
        (f"  ... peak, {SOURCES} sources syncing at once, again and again", f"{peak / 2**20:,.0f} MB",
         f"+{(peak - idle) / 2**20:,.0f} MB", "< +100 MB"),
        (f"small reads (GET /v1/keyresults/:id), idle", f"p50 {percentile(quiet, 0.5) * 1000:.1f} ms",
         f"p99 {quiet99 * 1000:.1f} ms ({len(quiet):,})", ""),
        reads(f"  ... while {SOURCES} sources sync at once", during, "p99 < 1.5 x idle"),
        reads("  ... between those bursts", between, ""),
        (f"a burst of {SOURCES} syncs, first to last answer",
         f"median {statistics.median(lengths):.2f} s", f"{len(lengths)} bursts", ""),
        ("values the sources wrote per round (each with its evidence)",
         f"{statistics.median(r['written'] for r in results):,.0f}", "", ""),
    ]
    return rows, [peak - idle < 100 * 2**20, percentile(during, 0.99) <= 1.5 * quiet99]


def sources_only(args, placement):
    folder = tempfile.mkdtemp(prefix="okr-bench-")
    try:
        results = time_sources(folder, args)
    finally:
        shutil.rmtree(folder)
    rows, goals = sources_rows(results)
    print_table(rows, goals)


ASSISTANT_CALLS = 200  # per round, of each of the four requests, in turns over one connection each


def mcp_call(connection, token, tool, arguments):
    """Seconds for one tools/call over /mcp on an open connection, the answer checked."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments}})
    started = time.perf_counter()
    connection.request("POST", "/mcp", body=body, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"})
    response = connection.getresponse()
    answer = response.read()
    took = time.perf_counter() - started
    if response.status != 200 or json.loads(answer)["result"]["isError"]:
        raise RuntimeError(f"/mcp {tool} answered {response.status}: {answer[:300]!r}")
    return took


def signed_call(connection, key, method, path, body=None):
    """Seconds for one signed request on an open connection, the answer checked."""
    headers = dict(signature(key))
    if body is not None:
        headers["Content-Type"] = "application/json"
    started = time.perf_counter()
    connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    response = connection.getresponse()
    answer = response.read()
    took = time.perf_counter() - started
    if response.status != 200:
        raise RuntimeError(f"{method} {path} answered {response.status}: {answer[:300]!r}")
    return took


def time_assistants(folder, args):
    """The assistants' section (see the module's doc): per round, the medians of each request's latency."""
    database = os.path.join(folder, "assistants.db")
    app = create_app({"DATABASE": database})
    with app.app_context():
        init_db()
    with app.app_context(), transaction() as db:
        editor = users.create(db, *BENCH_EDITOR[:2], "editor")
        key = keys.create(db, "bench editor's key", user_id=editor["id"])
        token = assistant_grants.make_personal_token(db, editor, "bench assistant", False, 30)
    port = free_port()
    server = Process(okr_command(database, port, args.threads), port, "/healthz",
                     log=os.path.join(folder, "assistants.log"))
    rounds = []
    try:
        connection = keep_alive(port)
        cycle = json.loads(send_json_on(connection, key, "/v1/cycles", {"name": "Q3"}))
        objective = json.loads(send_json_on(connection, key, "/v1/objectives", {
            "name": "Grow", "cycle_id": cycle["id"], "is_company": False, "is_personal": False}))
        key_results = [json.loads(send_json_on(connection, key, f"/v1/objectives/{objective['id']}/keyresults", {
            "name": f"KR {n}", "type": "positive", "target_value_min": "1000"}))["id"] for n in range(4)]
        for n in range(20):  # a key result with a history, as one mid-quarter has
            signed_call(connection, key, "POST", f"/v1/keyresults/{key_results[0]}/checkins", {"value": str(n)})
        mcp_call(connection, token, "get_key_result", {"key_result_id": key_results[0]})  # imports the SDK
        for _ in range(args.rounds):
            timings = {"get": [], "mcp get": [], "check-in": [], "mcp check-in": []}
            for n in range(ASSISTANT_CALLS):
                value = str(n % 1000)
                timings["get"].append(signed_call(connection, key, "GET", f"/v1/keyresults/{key_results[0]}"))
                timings["mcp get"].append(mcp_call(connection, token, "get_key_result",
                                                   {"key_result_id": key_results[0]}))
                timings["check-in"].append(signed_call(connection, key, "POST",
                                                       f"/v1/keyresults/{key_results[1]}/checkins", {"value": value}))
                timings["mcp check-in"].append(mcp_call(connection, token, "check_in",
                                                        {"key_result_id": key_results[2], "value": value}))
            rounds.append({name: statistics.median(values) for name, values in timings.items()})
        connection.close()
    finally:
        server.stop()
    return rounds, server.peak_rss


def send_json_on(connection, key, path, body):
    """A signed POST on an open connection; its body."""
    headers = {**dict(signature(key)), "Content-Type": "application/json"}
    connection.request("POST", path, body=json.dumps(body), headers=headers)
    response = connection.getresponse()
    answer = response.read()
    if response.status != 200:
        raise RuntimeError(f"POST {path} answered {response.status}: {answer[:300]!r}")
    return answer


def assistants_rows(rounds):
    """The table's rows of the assistants' section, and their goals' verdicts."""
    rows, goals = [], []
    for call, plain, label in (("mcp get", "get", "get_key_result over /mcp / signed GET /v1/keyresults/:id"),
                               ("mcp check-in", "check-in", "check_in over /mcp / signed POST of a check-in")):
        ratio = statistics.median(r[call] / r[plain] for r in rounds)
        figure = f"{statistics.median(r[call] for r in rounds) * 1000:.2f} ms"
        base = f"{statistics.median(r[plain] for r in rounds) * 1000:.2f} ms"
        rows.append((label, figure, f"{ratio:.2f}x of {base}", "<= 5x"))
        goals.append(ratio <= 5)
    return rows, goals


def assistants_only(args, placement):
    folder = tempfile.mkdtemp(prefix="okr-bench-")
    try:
        rounds, peak = time_assistants(folder, args)
    finally:
        shutil.rmtree(folder)
    rows, goals = assistants_rows(rounds)
    print_table(rows, goals)
    print(f"\n{sum(goals)} of {len(goals)} goals met; medians of {args.rounds} rounds of {ASSISTANT_CALLS} calls of "
          f"each, in turns over one keep-alive connection; the server's peak resident memory {peak / 1e6:.0f} MB")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--objectives", type=int, default=100_000)
    parser.add_argument("--report-objectives", type=int, default=1_000,
                        help="objectives of the reported cycle (4 key results, 40 check-ins each on average); "
                             "the big one has ten times as many")
    parser.add_argument("--report-repetitions", type=int, default=5,
                        help="timings of the listing, each report and the page per round, back to back")
    parser.add_argument("--sign-ins", type=int, default=20,
                        help="sign-ins with an email and password timed per round (their median is the round's)")
    parser.add_argument("--threads", type=int, help="the service's waitress threads (default: its own)")
    parser.add_argument("--webhooks-only", action="store_true", help="run the webhooks section alone")
    parser.add_argument("--replicate-only", action="store_true", help="run the replication section alone")
    parser.add_argument("--reports-only", action="store_true", help="run the concurrent reports section alone")
    parser.add_argument("--concurrent-report-objectives", type=int, default=100_000,
                        help="objectives of the cycle whose report 8 clients ask for at once")
    parser.add_argument("--reports-database", help="a database seeded by an earlier run to use (else one is seeded)")
    parser.add_argument("--reports-unbounded", action="store_true",
                        help="build every report in memory, as before issue 25, for comparison")
    parser.add_argument("--workers-only", action="store_true", help="run the worker processes' section alone")
    parser.add_argument("--review-only", action="store_true",
                        help="run the section of the cycle page of a --concurrent-report-objectives cycle alone")
    parser.add_argument("--events-only", action="store_true", help="run the activity feed's memory section alone")
    parser.add_argument("--retrospective-only", action="store_true",
                        help="run the section of the retrospective and calibration of a --report-objectives cycle "
                             "alone (needs no wrk)")
    parser.add_argument("--visibility-only", action="store_true",
                        help="run the section of a viewer's listing and report of a --report-objectives cycle with a "
                             "fifth of its objectives restricted alone (needs no wrk)")
    parser.add_argument("--sources-only", action="store_true",
                        help=f"run the section of {SOURCES} metric sources syncing at once alone (needs no wrk)")
    parser.add_argument("--assistants-only", action="store_true",
                        help="run the section of the assistants' MCP calls against the API's own alone (needs no wrk)")
    parser.add_argument("--sign-in-flood-only", action="store_true",
                        help="run the section of check-ins under a flood of wrong passwords alone (needs no wrk)")
    parser.add_argument("--flood-seconds", type=int, default=10,
                        help="seconds of check-ins without the flood, and as many with it, per round")
    parser.add_argument("--large-events", type=int, default=4_000,
                        help="events of about 30 KB each in the activity feed's section")
    parser.add_argument("--pin", action="store_true",
                        help="pin the service to the first CPU from outside, as the hello ceiling is")
    args = parser.parse_args()
    placement = place_processes(args.pin)
    if args.events_only:  # the sections that need no wrk
        events_only(args, placement)
        return
    if args.review_only:
        review_only(args, placement)
        return
    if args.retrospective_only:
        retrospective_only(args, placement)
        return
    if args.visibility_only:
        visibility_only(args, placement)
        return
    if args.sign_in_flood_only:
        sign_in_flood_only(args, placement)
        return
    if args.sources_only:
        sources_only(args, placement)
        return
    if args.assistants_only:
        assistants_only(args, placement)
        return
    if not shutil.which("wrk"):
        sys.exit("wrk is needed: apt-get install wrk")

    if args.webhooks_only:
        webhooks_only(args, placement)
        return
    if args.replicate_only:
        replicate_only(args, placement)
        return
    if args.reports_only:
        reports_only(args, placement)
        return
    if args.workers_only:
        workers_only(args, placement)
        return
    folder = tempfile.mkdtemp(prefix="okr-bench-")
    database = os.path.join(folder, "bench.db")
    print(f"seeding {args.objectives} objectives ...", flush=True)
    cycle, ids, seqs = seed_objectives(database, args.objectives)
    post_cycle = seed_objectives(database, 0)[0]
    deep = token(seqs[int(len(seqs) * 0.9) - 1])
    small, big = args.report_objectives, 10 * args.report_objectives
    print(f"seeding cycles of {small:,} and {big:,} objectives to report, and 100 to check in to ...", flush=True)
    started = time.perf_counter()
    (small_cycle, _), (big_cycle, _), (_, checkin_key_results) = seed_report_cycles(database, (small, big, 100))
    print(f"  seeded in {time.perf_counter() - started:.1f} s", flush=True)
    print("copying it, with an editor who has a password and a key, and a service key, to sign in to ...", flush=True)
    signed_database = os.path.join(folder, "signed.db")
    signing_keys = add_people(database, signed_database, small_cycle)
    with closing_db(database) as db:  # an objective of the smaller cycle, halfway through it, to edit
        small_objectives = [row[0] for row in db.execute(
            "SELECT id FROM objectives WHERE cycle_id = ? ORDER BY seq", (small_cycle,))]
    edited = small_objectives[len(small_objectives) // 2]

    okr_port, hello_port, quiet_port, report_port = free_port(), free_port(), free_port(), free_port()
    okr = Process(okr_command(database, okr_port, args.threads), okr_port, "/healthz", PLACEMENT["okr"],
                  log=os.path.join(folder, "okr.log"))
    quiet = Process(okr_command(database, quiet_port, args.threads, access_log=False), quiet_port, "/healthz",
                    PLACEMENT["okr"], log=os.path.join(folder, "quiet.log"))
    reporter = Process(okr_command(database, report_port, args.threads), report_port, "/healthz",
                       PLACEMENT["okr"], log=os.path.join(folder, "report.log"))
    signed_port = free_port()
    signed = Process(okr_command(signed_database, signed_port, args.threads), signed_port, "/healthz",
                     PLACEMENT["okr"], log=os.path.join(folder, "signed.log"))
    hello = Process([sys.executable, "-c", HELLO_APP, str(hello_port)], hello_port, "/hello", PLACEMENT["hello"])
    script = post_script(folder, post_cycle)
    checkins = checkin_script(folder, checkin_key_results)
    names = ("hello", "get 1", "get", "get quiet", "get service", "get user", "get 32", "first", "deep", "post",
             "checkin", "hello again")
    runs = {name: [] for name in names}
    reports = {name: [] for name in ("listing", "report", "big report", "page", "page raw", "edit", "week")}
    # per round: median, s
    repetitions = []  # {name: seconds}, one per repetition of every round, timed back to back
    sizes = {}  # the largest body of the smaller cycle's report and page, in bytes
    sign_ins = []  # per round: the median sign-in, s
    one = f"/v1/objectives/{ids[len(ids) // 2]}"
    # A keep-alive connection per round: the service closes one idle for its channel timeout (30 s).
    client = keep_alive(report_port)
    signer = keep_alive(signed_port)  # the sign-ins', likewise
    editor = keep_alive(report_port)  # the edit page's, beside the reports' (the same open service)
    weeker = keep_alive(signed_port)  # "Your week"'s, signed in on the signed service
    connections = {"editor": editor, "weeker": weeker}
    week_cookie = [None]
    # In this order or its reverse: the report is timed next to the listing and to the page.
    timers = {"big report": lambda client: time_report(client, big_cycle),
              "listing": lambda client: time_listing(client, small_cycle),
              "report": lambda client: time_report(client, small_cycle, sizes),
              "page": lambda client: time_page(client, small_cycle, sizes, "gzip"),
              "page raw": lambda client: time_page(client, small_cycle, sizes, "identity"),
              "edit": lambda client: time_edit_page(connections["editor"], edited),
              "week": lambda client: time_week(connections["weeker"], week_cookie[0])}
    expected = {"listing": [small, 4 * small], "report": [small, 4 * small], "big report": [big, 4 * big],
                "edit": [1], "week": [WEEK_KEY_RESULTS]}
    try:
        # Once untimed: checks the answers, and warms the reporting process up.
        nodes = report_nodes(fetch(client, f"/v1/cycles/{small_cycle}/report"))
        if list(nodes) != expected["report"]:
            print(f"NOTE: the report's tree holds {nodes} objectives and key results, seeded {expected['report']}")
        # The page (the review) shows the tree of the first REVIEW_PER_PAGE top objectives, with the whole cycle's
        # figures above them (its progress, counts by status and burn-up, read from all of it).
        first = {"objectives": fetch(client, f"/v1/cycles/{small_cycle}/report")["objectives"][:REVIEW_PER_PAGE]}
        expected["page"] = expected["page raw"] = list(report_nodes(first))
        week_cookie[0] = sign_in(signer)[1]
        if time_edit_page(editor, edited)[0] is None:
            print("NOTE: /objectives/:id/edit answers 404: its row is not measured")
            del timers["edit"]
        for name, timer in timers.items():
            counts = timer(client)[1]
            if counts != expected[name]:
                raise RuntimeError(f"{name}: counted {counts} objectives and key results, expected {expected[name]}")
        body = fetch_body(client, f"/v1/cycles/{small_cycle}/report")[0]
        started = time.perf_counter()
        json.loads(body)
        report_parse = time.perf_counter() - started  # the client's share of the report's time
        check_signed_get(signed_port, one, signing_keys)
        time_sign_in(signer)  # once untimed: checks the answers, and warms the signed process up
        for round_number in range(1, args.rounds + 1):
            print(f"round {round_number}/{args.rounds} ...", flush=True)
            s = args.seconds
            runs["hello"].append(wrk(hello_port, "/hello", s, 8))
            runs["get 1"].append(wrk(okr_port, one, s, 1))
            # Which of the two goes first alternates, and each has a second of load
            # first: the run just after another ran up to a sixth faster without.
            for name in ("get", "get quiet")[::1 if round_number % 2 else -1]:
                port = okr_port if name == "get" else quiet_port
                wrk(port, one, 1, 8)
                runs[name].append(wrk(port, one, s, 8))
            # Signed with a user's key, against the same signed with a service key, the same way.
            for name in ("get service", "get user")[::1 if round_number % 2 else -1]:
                key = signing_keys["service" if name == "get service" else "user"]
                wrk(signed_port, one, 1, 8, headers=signature(key))
                runs[name].append(wrk(signed_port, one, s, 8, headers=signature(key)))
            runs["get 32"].append(wrk(okr_port, one, s, 32))
            runs["first"].append(wrk(okr_port, f"/v1/objectives?cycle_id={cycle}", s, 8))
            runs["deep"].append(wrk(okr_port, f"/v1/objectives?cycle_id={cycle}&page_token={deep}", s, 8))
            runs["post"].append(wrk(okr_port, "/v1/objectives", s, 8, script))
            runs["checkin"].append(wrk(okr_port, "/v1/keyresults", s, 8, checkins))
            runs["hello again"].append(wrk(hello_port, "/hello", s, 8))
            # The listing and the two reports in turn, in reverse order every other time.
            timings = {name: [] for name in timers}
            client.close()
            client = keep_alive(report_port)
            for name, port in (("editor", report_port), ("weeker", signed_port)):
                connections[name].close()
                connections[name] = keep_alive(port)
            for repetition in range(args.report_repetitions):
                timed = {}
                for name in list(timers)[::1 if (round_number + repetition) % 2 else -1]:
                    timed[name] = timers[name](client)[0]
                    timings[name].append(timed[name])
                repetitions.append(timed)
            for name, seconds in timings.items():
                reports[name].append(statistics.median(seconds))
            signer.close()
            signer = keep_alive(signed_port)
            sign_ins.append(statistics.median(time_sign_in(signer) for _ in range(args.sign_ins)))
        okr_startup, okr_rss, report_rss = okr.startup, okr.peak_rss, reporter.peak_rss
    finally:
        client.close()
        signer.close()
        for connection in connections.values():
            connection.close()
        signed.stop()
        okr.stop()
        quiet.stop()
        reporter.stop()
        hello.stop()
    # A fresh process for the start-up figure: the first one also compiled bytecode.
    port = free_port()
    fresh = Process(okr_command(database, port, args.threads), port, "/healthz", PLACEMENT["okr"])
    fresh.stop()
    print(f"seeding {args.objectives} objectives and {3 * args.objectives} key results (and their first "
          "check-ins) to delete ...", flush=True)
    deletes = time_cycle_delete(folder, args.objectives, 3, args.threads, args.rounds)
    print(f"seeding {args.objectives} objectives and {4 * args.objectives} key results to export ...", flush=True)
    exports = time_export(folder, args.objectives, 4)
    print("webhooks ...", flush=True)
    hook_runs, hook_backlog, hook_latencies = time_webhooks(folder, args)
    print("replication ...", flush=True)
    replication_runs, replication_health = time_replication(folder, args)
    shutil.rmtree(folder)
    delete_seconds, delete_checkpointed = (statistics.median(d[i] for d in deletes) for i in (0, 1))
    delete_peak_rss, delete_after_rss = max(d[2] for d in deletes), max(d[3] for d in deletes)

    median = {name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs),
                     sum(r[2] for r in rs)) for name, rs in runs.items()}
    hello_rate = statistics.median(r[0] for r in runs["hello"] + runs["hello again"])
    # wrk's ratios are taken within each round, then their median: the machine's speed
    # drifts between rounds. The reports' are taken within each repetition (above).
    ceilings = [(a[0] + b[0]) / 2 for a, b in zip(runs["hello"], runs["hello again"])]
    ratio = {
        "get": statistics.median(r[0] / h for r, h in zip(runs["get"], ceilings)),
        "get 32": statistics.median(r32[0] / r1[0] for r32, r1 in zip(runs["get 32"], runs["get 1"])),
        "post": statistics.median(r[0] / h for r, h in zip(runs["post"], ceilings)),
        "checkin": statistics.median(r[0] / h for r, h in zip(runs["checkin"], ceilings)),
        "report": statistics.median(t["report"] / t["listing"] for t in repetitions),
        "big report": statistics.median(t["big report"] / t["report"] for t in repetitions),
        "page": statistics.median(t["page"] / t["report"] for t in repetitions),
        "page raw": statistics.median(t["page raw"] / t["report"] for t in repetitions),
        "edit": statistics.median(t["edit"] / t["report"] for t in repetitions) if "edit" in timers else None,
        "week": statistics.median(t["week"] / t["report"] for t in repetitions),
        "deep": statistics.median(d[1] / f[1] for d, f in zip(runs["deep"], runs["first"])),
        "log": statistics.median(g[0] / q[0] for g, q in zip(runs["get"], runs["get quiet"])),
        "user key": statistics.median(u[0] / k[0] for u, k in zip(runs["get user"], runs["get service"])),
    }
    rows = [
        ("hello ceiling (bare Flask on waitress)", f"{hello_rate:,.0f} req/s", "", ""),
        ("GET /v1/objectives/:id, 1 connection", f"{median['get 1'][0]:,.0f} req/s", "", ""),
        ("  ... 8 connections", f"{median['get'][0]:,.0f} req/s", f"{ratio['get']:.2f} x hello", ">= 0.60"),
        ("  ... 8 connections, access log off", f"{median['get quiet'][0]:,.0f} req/s",
         f"{ratio['log']:.2f} on / off", ">= 0.95"),
        ("  ... 8 connections, signed with a service key", f"{median['get service'][0]:,.0f} req/s", "", ""),
        ("  ... 8 connections, signed with an editor's key", f"{median['get user'][0]:,.0f} req/s",
         f"{ratio['user key']:.2f} x service key", ">= 0.95"),
        ("  ... signed: non-2xx answers and socket errors",
         f"{median['get service'][2] + median['get user'][2]}", "", "0"),
        ("  ... 32 connections", f"{median['get 32'][0]:,.0f} req/s",
         f"{ratio['get 32']:.2f} x 1 connection", ">= 0.90"),
        ("list, first page of 100", f"p50 {median['first'][1]:.2f} ms", f"{median['first'][0]:,.0f} req/s", ""),
        ("list, page 90% deep", f"p50 {median['deep'][1]:.2f} ms",
         f"{ratio['deep']:.2f} x first", "<= 1.25"),
        ("POST /v1/objectives (8 connections)", f"{median['post'][0]:,.0f} req/s",
         f"{ratio['post']:.2f} x hello", ">= 0.30"),
        ("POST non-2xx answers and socket errors", f"{median['post'][2]}", "", "0"),
        ("POST /v1/keyresults/:id/checkins (8 connections)", f"{median['checkin'][0]:,.0f} req/s",
         f"{ratio['checkin']:.2f} x hello", ">= 0.30"),
        ("check-in non-2xx answers and socket errors", f"{median['checkin'][2]}", "", "0"),
        ("POST /login, a sign-in with email and password (1 connection)",
         f"{statistics.median(sign_ins) * 1000:,.0f} ms", f"median of {args.sign_ins}", "< 250 ms"),
        (f"list a cycle of {small:,} objectives + {4 * small:,} key results, pages of 1000",
         f"{statistics.median(reports['listing']) * 1000:,.0f} ms", "", ""),
        (f"GET its report ({40 * small:,} check-ins)", f"{statistics.median(reports['report']) * 1000:,.0f} ms",
         f"{ratio['report']:.2f} x listing", "<= 1.00"),
        (f"GET the report of {big:,} objectives + {4 * big:,} key results + {40 * big:,} check-ins",
         f"{statistics.median(reports['big report']) * 1000:,.0f} ms",
         f"{ratio['big report']:.2f} x {small:,}", "<= 12"),
        (f"GET /cycles/:id, the page of the {small:,}-objective cycle (HTML, gzip)",
         f"{statistics.median(reports['page']) * 1000:,.0f} ms", f"{ratio['page']:.2f} x report", "<= 1.50"),
        ("  ... uncompressed (Accept-Encoding: identity)", f"{statistics.median(reports['page raw']) * 1000:,.0f} ms",
         f"{ratio['page raw']:.2f} x report", ""),
        ("  ... its size as sent gzipped, and its HTML", f"{sizes['page gzip']:,} B", f"HTML {sizes['page']:,} B",
         "< 1,500,000 B"),
        ("  ... the report's size (JSON, not compressed)", f"{sizes['report']:,} B", "", ""),
        ("GET /objectives/:id/edit, an objective of that cycle (HTML)",
         *((f"{statistics.median(reports['edit']) * 1000:,.0f} ms", f"{ratio['edit']:.2f} x report", "<= 1.00")
           if ratio["edit"] is not None else ("not measured", "the page answers 404", ""))),
        (f"GET / as a signed-in person, \"Your week\" of {WEEK_KEY_RESULTS} key results (HTML)",
         f"{statistics.median(reports['week']) * 1000:,.0f} ms", f"{ratio['week']:.2f} x report", "<= 0.20"),
        (f"DELETE a cycle of {args.objectives:,} objectives + {3 * args.objectives:,} key results + check-ins",
         f"{delete_seconds:.2f} s", f"checkpointed {delete_checkpointed:.2f} s", "< 3 s"),
        ("server resident memory, peak under the wrk load", f"{okr_rss / 2**20:.1f} MB", "", "< 80 MB"),
        ("  ... peak of the process serving the reports and pages", f"{report_rss / 2**20:.1f} MB", "", ""),
        ("  ... peak during the deletes", f"{delete_peak_rss / 2**20:.1f} MB",
         f"{delete_after_rss / 2**20:.1f} MB after", "< 80 MB"),
        ("start-up to first answer", f"{fresh.startup:.2f} s", f"(first start {okr_startup:.2f} s)", "< 1 s"),
        (f"okr export of {args.objectives:,} objectives + {4 * args.objectives:,} key results + check-ins (JSON)",
         f"{exports['json'][0]:.1f} s", f"{exports['json'][2] / 2**20:,.0f} MB file", ""),
        ("  ... its peak resident memory", f"{exports['json'][1] / 2**20:.1f} MB", "", "< 150 MB"),
        ("  ... the cycle's key results as CSV (okr export --format csv)", f"{exports['csv'][0]:.1f} s",
         f"{exports['csv'][2] / 2**20:,.0f} MB file", ""),
        ("  ... its peak resident memory", f"{exports['csv'][1] / 2**20:.1f} MB", "", "< 150 MB"),
        ("okr import of that JSON into an empty database", f"{exports['import'][0]:.1f} s",
         f"peak {exports['import'][1] / 2**20:,.0f} MB", ""),
    ]
    goals = [
        ratio["get"] >= 0.6,
        ratio["log"] >= 0.95,
        ratio["user key"] >= 0.95,
        median["get service"][2] + median["get user"][2] == 0,
        ratio["get 32"] >= 0.9,
        ratio["deep"] <= 1.25,
        ratio["post"] >= 0.3,
        median["post"][2] == 0,
        ratio["checkin"] >= 0.3,
        median["checkin"][2] == 0,
        statistics.median(sign_ins) < 0.25,
        ratio["report"] <= 1.0,
        ratio["big report"] <= 12,
        ratio["page"] <= 1.5,
        sizes["page gzip"] < 1_500_000,
        *([ratio["edit"] <= 1.0] if ratio["edit"] is not None else []),
        ratio["week"] <= 0.2,
        delete_seconds < 3,
        okr_rss < 80 * 2**20,
        delete_peak_rss < 80 * 2**20,
        fresh.startup < 1,
        exports["json"][1] < 150 * 2**20,
        exports["csv"][1] < 150 * 2**20,
    ]
    hook_rows, hook_goals = webhook_rows(hook_runs, hook_backlog, hook_latencies, args.seconds)
    rows += hook_rows
    goals += hook_goals
    replica_rows, replica_goals = replication_rows(replication_runs, replication_health)
    rows += replica_rows
    goals += replica_goals
    # goals holds the verdicts of the rows that have a goal, in their order; a missed one is marked,
    # since a ratio printed to two places may round up to its goal.
    print_table(rows, goals)
    print(f"\n{sum(goals)} of {len(goals)} goals met; medians of {args.rounds} rounds of {args.seconds} s, "
          f"wrk -t1 -c8 unless said, service threads {args.threads or 'default'}, {placement}")
    for name, rs in runs.items():
        print(f"  {name:11} rounds: " + ", ".join(f"{r[0]:,.0f} req/s p50 {r[1]:.2f} ms" for r in rs))
    for name, rs in hook_runs.items():
        print(f"  hooks {name:5} rounds: " + ", ".join(f"{r[0]:,.0f} req/s p50 {r[1]:.2f} ms" for r in rs))
    for name, rs in replication_runs.items():
        print(f"  replication {name:7} rounds: " + ", ".join(f"{r[0]:,.0f} req/s p50 {r[1]:.2f} ms" for r in rs))
    for name, seconds in reports.items():
        print(f"  {name:11} rounds: " + ", ".join(f"{s * 1000:,.0f} ms" for s in seconds)
              + f" (each the median of {args.report_repetitions})")
    print("  sign-in     rounds: " + ", ".join(f"{s * 1000:,.0f} ms" for s in sign_ins)
          + f" (each the median of {args.sign_ins})")
    print(f"  report, big report and page ratios: medians over {len(repetitions)} repetitions, the report timed beside the listing and the page")
    print(f"  the client's json.loads of the {small:,}-objective report ({sizes['report']:,} B): "
          f"{report_parse * 1000:,.1f} ms, counted in its time")
    print("  delete      rounds: " + ", ".join(f"{d[0]:.2f} s (checkpointed {d[1]:.2f} s)" for d in deletes))


if __name__ == "__main__":
    main()
