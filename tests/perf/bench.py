"""Benchmark: the real server under wrk on loopback, against a bare Flask "hello" ceiling.

    python tests/perf/bench.py [--rounds 5] [--seconds 5] [--objectives 100000] [--pin]

Needs wrk (apt-get install wrk). Seeds a fresh database in a temporary
folder through the project's own code, starts `app.py` and a bare Flask app
("hello", 4 waitress threads) as separate processes, and prints a table.
Throughput and latency goals are ratios to figures taken in the same round,
because the machines are noisy; each is the median over the rounds, as are
the figures themselves. Memory is the peak over all rounds.

The access log's cost is GET by id at 8 connections against the service as
started by default (access log on) over a second service process started with
--no-access-log, on the same database, in the same rounds. Both write their log
to a file in the temporary folder, as a server's log usually goes.

The service runs as a user starts it: default settings, placed by nobody but
itself. wrk runs on the last CPU, as if the clients were on other machines,
and the hello ceiling is pinned to the first CPU. --pin also pins the service
to the first CPU from outside, as earlier versions of this script did.
"""
import argparse
import base64
import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from okr import create_app  # noqa: E402
from okr.db import connect, init_db, new_id, utc_now  # noqa: E402

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
    """A cycle with count objectives (and key results), written straight with SQL."""
    app = create_app({"DATABASE": database})
    with app.app_context():
        init_db()
    db = connect(database, 5000)
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
    db.execute("COMMIT")
    seqs = [row[0] for row in db.execute("SELECT seq FROM objectives WHERE cycle_id = ? ORDER BY seq", (cycle,))]
    db.close()
    return cycle, [o[0] for o in objectives], seqs


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

    def rss(self):
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024

    def sample(self):
        while self.sampling:
            self.peak_rss = max(self.peak_rss, self.rss())
            time.sleep(0.05)

    def thread_count(self):
        return len(os.listdir(f"/proc/{self.process.pid}/task"))

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


def wrk(port, path, seconds, connections, script=None):
    """Runs wrk; returns requests/s, p50 latency in ms and the count of non-2xx answers."""
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency"]
    if script:
        command += ["-s", script]
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


def token(seq):
    return base64.urlsafe_b64encode(str(seq).encode()).decode()


def okr_command(database, port, threads, access_log=True):
    """app.py with its defaults, but for the database, the port and any --threads asked for."""
    command = [sys.executable, str(REPO / "app.py"), "--database", database, "--port", str(port)]
    return command + (["--threads", str(threads)] if threads else []) + ([] if access_log else ["--no-access-log"])


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
        server = Process(okr_command(database, port, threads), port, "/healthz", PLACEMENT["okr"])
        try:
            idle_threads = server.thread_count()
            started = time.perf_counter()
            status, _ = get(port, f"/v1/cycles/{cycle}", method="DELETE")
            answered = time.perf_counter() - started
            assert status == 200, status
            checkpointed = server.wait_for_threads(idle_threads) - started
            assert get(port, f"/v1/objectives?cycle_id={cycle}")[0] == 404
            results.append((answered, checkpointed, server.peak_rss, server.rss()))
        finally:
            server.stop()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(database + suffix):
                os.remove(database + suffix)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--objectives", type=int, default=100_000)
    parser.add_argument("--threads", type=int, help="the service's waitress threads (default: its own)")
    parser.add_argument("--pin", action="store_true",
                        help="pin the service to the first CPU from outside, as the hello ceiling is")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is needed: apt-get install wrk")

    placement = place_processes(args.pin)
    folder = tempfile.mkdtemp(prefix="okr-bench-")
    database = os.path.join(folder, "bench.db")
    print(f"seeding {args.objectives} objectives ...", flush=True)
    cycle, ids, seqs = seed_objectives(database, args.objectives)
    post_cycle = seed_objectives(database, 0)[0]
    deep = token(seqs[int(len(seqs) * 0.9) - 1])

    okr_port, hello_port, quiet_port = free_port(), free_port(), free_port()
    okr = Process(okr_command(database, okr_port, args.threads), okr_port, "/healthz", PLACEMENT["okr"],
                  log=os.path.join(folder, "okr.log"))
    quiet = Process(okr_command(database, quiet_port, args.threads, access_log=False), quiet_port, "/healthz",
                    PLACEMENT["okr"], log=os.path.join(folder, "quiet.log"))
    hello = Process([sys.executable, "-c", HELLO_APP, str(hello_port)], hello_port, "/hello", PLACEMENT["hello"])
    script = post_script(folder, post_cycle)
    names = ("hello", "get 1", "get", "get quiet", "get 32", "first", "deep", "post", "hello again")
    runs = {name: [] for name in names}
    one = f"/v1/objectives/{ids[len(ids) // 2]}"
    try:
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
            runs["get 32"].append(wrk(okr_port, one, s, 32))
            runs["first"].append(wrk(okr_port, f"/v1/objectives?cycle_id={cycle}", s, 8))
            runs["deep"].append(wrk(okr_port, f"/v1/objectives?cycle_id={cycle}&page_token={deep}", s, 8))
            runs["post"].append(wrk(okr_port, "/v1/objectives", s, 8, script))
            runs["hello again"].append(wrk(hello_port, "/hello", s, 8))
        okr_startup, okr_rss = okr.startup, okr.peak_rss
    finally:
        okr.stop()
        quiet.stop()
        hello.stop()
    # A fresh process for the start-up figure: the first one also compiled bytecode.
    port = free_port()
    fresh = Process(okr_command(database, port, args.threads), port, "/healthz", PLACEMENT["okr"])
    fresh.stop()
    print(f"seeding {args.objectives} objectives and {3 * args.objectives} key results to delete ...", flush=True)
    deletes = time_cycle_delete(folder, args.objectives, 3, args.threads, args.rounds)
    shutil.rmtree(folder)
    delete_seconds, delete_checkpointed = (statistics.median(d[i] for d in deletes) for i in (0, 1))
    delete_peak_rss, delete_after_rss = max(d[2] for d in deletes), max(d[3] for d in deletes)

    median = {name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs),
                     sum(r[2] for r in rs)) for name, rs in runs.items()}
    hello_rate = statistics.median(r[0] for r in runs["hello"] + runs["hello again"])
    # Ratios are taken within each round, then their median: the machine's speed
    # drifts between rounds, but little within the half minute of one round.
    ceilings = [(a[0] + b[0]) / 2 for a, b in zip(runs["hello"], runs["hello again"])]
    ratio = {
        "get": statistics.median(r[0] / h for r, h in zip(runs["get"], ceilings)),
        "get 32": statistics.median(r32[0] / r1[0] for r32, r1 in zip(runs["get 32"], runs["get 1"])),
        "post": statistics.median(r[0] / h for r, h in zip(runs["post"], ceilings)),
        "deep": statistics.median(d[1] / f[1] for d, f in zip(runs["deep"], runs["first"])),
        "log": statistics.median(g[0] / q[0] for g, q in zip(runs["get"], runs["get quiet"])),
    }
    rows = [
        ("hello ceiling (bare Flask on waitress)", f"{hello_rate:,.0f} req/s", "", ""),
        ("GET /v1/objectives/:id, 1 connection", f"{median['get 1'][0]:,.0f} req/s", "", ""),
        ("  ... 8 connections", f"{median['get'][0]:,.0f} req/s", f"{ratio['get']:.2f} x hello", ">= 0.60"),
        ("  ... 8 connections, access log off", f"{median['get quiet'][0]:,.0f} req/s",
         f"{ratio['log']:.2f} on / off", ">= 0.95"),
        ("  ... 32 connections", f"{median['get 32'][0]:,.0f} req/s",
         f"{ratio['get 32']:.2f} x 1 connection", ">= 0.90"),
        ("list, first page of 100", f"p50 {median['first'][1]:.2f} ms", f"{median['first'][0]:,.0f} req/s", ""),
        ("list, page 90% deep", f"p50 {median['deep'][1]:.2f} ms",
         f"{ratio['deep']:.2f} x first", "<= 1.25"),
        ("POST /v1/objectives (8 connections)", f"{median['post'][0]:,.0f} req/s",
         f"{ratio['post']:.2f} x hello", ">= 0.30"),
        ("POST non-2xx answers and socket errors", f"{median['post'][2]}", "", "0"),
        (f"DELETE a cycle of {args.objectives:,} objectives + {3 * args.objectives:,} key results",
         f"{delete_seconds:.2f} s", f"checkpointed {delete_checkpointed:.2f} s", "< 3 s"),
        ("server resident memory, peak under the wrk load", f"{okr_rss / 2**20:.1f} MB", "", "< 80 MB"),
        ("  ... peak during the deletes", f"{delete_peak_rss / 2**20:.1f} MB",
         f"{delete_after_rss / 2**20:.1f} MB after", "< 80 MB"),
        ("start-up to first answer", f"{fresh.startup:.2f} s", f"(first start {okr_startup:.2f} s)", "< 1 s"),
    ]
    goals = [
        ratio["get"] >= 0.6,
        ratio["log"] >= 0.95,
        ratio["get 32"] >= 0.9,
        ratio["deep"] <= 1.25,
        ratio["post"] >= 0.3,
        median["post"][2] == 0,
        delete_seconds < 3,
        okr_rss < 80 * 2**20,
        delete_peak_rss < 80 * 2**20,
        fresh.startup < 1,
    ]
    width = max(len(r[0]) for r in rows)
    print(f"\n{'measure':{width}}  {'figure':>16}  {'ratio':>20}  goal")
    for name, figure, ratio, goal in rows:
        print(f"{name:{width}}  {figure:>16}  {ratio:>20}  {goal}")
    print(f"\n{sum(goals)} of {len(goals)} goals met; medians of {args.rounds} rounds of {args.seconds} s, "
          f"wrk -t1 -c8 unless said, service threads {args.threads or 'default'}, {placement}")
    for name, rs in runs.items():
        print(f"  {name:11} rounds: " + ", ".join(f"{r[0]:,.0f} req/s p50 {r[1]:.2f} ms" for r in rs))
    print("  delete      rounds: " + ", ".join(f"{d[0]:.2f} s (checkpointed {d[1]:.2f} s)" for d in deletes))


if __name__ == "__main__":
    main()
