"""Big reports and exports are bounded (issue 25): built from cursors into a file, the same bytes as the
reports built in memory; at most REPORT_SLOTS at once across processes, the others waiting REPORT_WAIT
seconds, then 503 with Retry-After."""
import fcntl
import os
import sqlite3
import threading
import time
from contextlib import closing, contextmanager

import pytest

from helpers import (
    ENV_WITHOUT_OKR,
    assert_error,
    free_port,
    make_cycle,
    make_key_result,
    make_objective,
    make_team,
    make_user,
    start_service,
    stop_process,
)
from okr.clock import utc_now
from okr.progress import parse_timestamp
from okr.reports.slots import lock_path
from okr.reports.streaming import cycle_summary

KINDS = [("positive", "100", None), ("negative", "10", None), ("range", "5", "50"), ("milestone", "1", None),
         ("baseline", None, None)]


def streamed(app, client, path, **query):
    """The answer to path built by okr.reports.streaming (every report is big), and the one built in memory."""
    app.config["BIG_REPORT_OBJECTIVES"] = 0
    big = client.get(path, query_string=query)
    app.config["BIG_REPORT_OBJECTIVES"] = 10**9
    small = client.get(path, query_string=query)
    for response in (big, small):
        response.get_data()  # read whole, then closed, as a server closes a body it has sent
        response.close()
    return big, small


def assert_same(big, small):
    assert big.status_code == small.status_code == 200, (big.get_data()[:300], small.get_data()[:300])
    assert big.headers["Content-Type"] == small.headers["Content-Type"]
    assert big.get_data() == small.get_data()
    assert int(big.headers["Content-Length"]) == len(big.get_data())
    assert "ETag" not in big.headers and "ETag" not in small.headers  # reports carry none


@pytest.fixture
def varied(app, client, runner):
    """Three cycles: one current, with every kind of key result, objectives without key results or with
    baselines only, alignment trees several levels deep that reach into another cycle and come back, teams,
    assignees, Unicode and quotes in names; one finished; and check-ins in between."""
    red, blue = make_team(client, "Red")["id"], make_team(client, "Blue")["id"]
    ada = make_user(runner)["id"]
    grace = make_user(runner, "Grace \"Amazing\" Hopper", "grace@example.com")["id"]
    now, later = make_cycle(client, "Q1 ✓ “now”"), make_cycle(client, "Q2")
    objectives = []
    for i in range(40):
        parent = objectives[(i * 7) % i]["id"] if i and i % 4 else None
        fields = {"team_id": [None, red, blue][i % 3], "assignee_id": [ada, None, grace][i % 3 - (i % 2)],
                  "is_company": i % 5 == 0, "is_personal": i % 7 == 3 and i % 5 != 0}
        if i % 6 == 1:
            fields["description"] = f"Why #{i}: \"quotes\", \\backslashes\\, tabs\t and ünïcode ✓"
        cycle = later if i % 13 == 12 else now  # some in the other cycle, aligned to this one's and back
        objectives.append(make_objective(client, cycle["id"], f'objective {i} — «{i}» ,{{"id":',
                                         parent_objective_id=parent, **fields))
        for j in range(i % 5):  # none for some
            kind, low, high = KINDS[(i + j) % len(KINDS)] if i % 9 else KINDS[4]  # baselines only for some
            name = f"kr {i}.{j} ✓" if j else f'kr {i}.{j},{{"id":"x"}} ✓'  # what separates two in a list
            key_result = make_key_result(client, objectives[-1]["id"], name, type=kind,
                                         current_value=str(3 * i + j), target_value_min=low, target_value_max=high)
            for n in range((i + j) % 4):
                response = client.post(f"/v1/keyresults/{key_result['id']}/checkins",
                                       json={"value": str(i * n - j), "confidence": f"0.{(i + n) % 10}"})
                assert response.status_code == 200, response.get_json()
    finished = make_cycle(client, "Q0")
    response = client.patch(f"/v1/cycles/{finished['id']}", json={"starts_on": "2020-01-01", "ends_on": "2020-03-31"})
    assert response.status_code == 200, response.get_json()
    for i in range(5):
        objective = make_objective(client, finished["id"], f"old {i}",
                                   parent_objective_id=objectives[i]["id"] if i % 2 else None)
        make_key_result(client, objective["id"], f"old kr {i}", current_value=str(i * 20), target_value_min="100")
    return {"now": now, "later": later, "finished": finished, "objectives": objectives, "red": red, "ada": ada}


def test_streamed_reports_and_exports_are_the_ones_built_in_memory_byte_for_byte(app, client, varied):
    """One test over one fixture, which takes a few seconds to make: every cycle's report, the filtered
    reports, objective reports at several depths, and both CSV downloads."""
    for cycle in ("now", "later", "finished"):
        big, small = streamed(app, client, f"/v1/cycles/{varied[cycle]['id']}/report")
        assert_same(big, small)
    assert big.get_json()["cycle"]["state"] == "finished"
    now = varied["now"]["id"]
    assert streamed(app, client, f"/v1/cycles/{now}/report")[0].get_json()["objectives_count"] == 37
    for query in ({"team_id": "red"}, {"assignee_id": "ada"}, {"team_id": "red", "assignee_id": "ada"}):
        query = {name: varied[value] for name, value in query.items()}
        big, small = streamed(app, client, f"/v1/cycles/{now}/report", **query)
        assert_same(big, small)
        assert 0 < big.get_json()["objectives_count"] < 37
    for objective in varied["objectives"][:9]:
        assert_same(*streamed(app, client, f"/v1/objectives/{objective['id']}/report"))
    for path in (f"/v1/cycles/{now}/report.csv", f"/cycles/{now}.csv"):
        big, small = streamed(app, client, path)
        assert big.status_code == small.status_code == 200
        assert big.get_data() == small.get_data() and big.get_data().startswith(b"\xef\xbb\xbf")
        assert big.headers["Content-Type"] == small.headers["Content-Type"] == "text/csv; charset=utf-8"
        assert big.headers["Content-Disposition"] == small.headers["Content-Disposition"]
        assert int(big.headers["Content-Length"]) == len(big.get_data())
    for cycle in ("now", "later", "finished"):
        assert_summary_of_report(app, varied[cycle])


def assert_summary_of_report(app, cycle):
    """The cycles list's entry of a cycle (okr.reports.streaming.cycle_summary) has the figures of its report."""
    report = cycle_report_of(app, cycle)
    statuses, stale = [], 0
    stack = list(report["objectives"])
    while stack:
        objective = stack.pop()
        stack.extend(objective["children"])
        statuses += [key_result["status"] for key_result in objective["key_results"]]
        stale += sum(key_result["stale"] for key_result in objective["key_results"])
    expected = {name: report[name] for name in ("cycle", "progress", "objectives_count", "key_results_count",
                                               "hidden_objectives_count")}
    expected.update(at_risk=statuses.count("at_risk") + statuses.count("off_track"), stale=stale,
                    no_update=statuses.count("no_update"))
    with app.app_context(), closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.row_factory = sqlite3.Row
        row = db.execute("SELECT * FROM cycles WHERE id = ?", (cycle["id"],)).fetchone()
        assert cycle_summary(db, row, parse_timestamp(utc_now())) == expected


def cycle_report_of(app, cycle):
    with app.test_client() as client:
        response = client.get(f"/v1/cycles/{cycle['id']}/report")
        assert response.status_code == 200
        return response.get_json()


def test_an_objective_report_on_a_loop_written_behind_the_apis_back_is_the_same_too(app, client):
    cycle = make_cycle(client)["id"]
    first = make_objective(client, cycle, "A")
    second = make_objective(client, cycle, "B", parent_objective_id=first["id"])
    make_objective(client, cycle, "C", parent_objective_id=second["id"])
    make_key_result(client, second["id"], current_value="5", target_value_min="10")
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.execute("UPDATE objectives SET parent_objective_id = ? WHERE id = ?", (second["id"], first["id"]))
        db.commit()
    assert_same(*streamed(app, client, f"/v1/objectives/{first['id']}/report"))
    assert_same(*streamed(app, client, f"/v1/objectives/{second['id']}/report"))
    big, small = streamed(app, client, f"/v1/cycles/{cycle}/report")
    assert_same(big, small)
    assert big.get_json()["objectives"] == []  # the loop has no root


def test_streamed_reports_of_empty_and_missing_things(app, client):
    empty = make_cycle(client, "empty")
    assert_same(*streamed(app, client, f"/v1/cycles/{empty['id']}/report"))
    unknown = "0b0e7f4a-3c1d-4e2f-8a9b-0c1d2e3f4a5b"
    for path in (f"/v1/cycles/{unknown}/report", f"/v1/objectives/{unknown}/report"):
        big, small = streamed(app, client, path)
        assert big.status_code == small.status_code == 404
        assert big.get_json() == small.get_json()


def test_a_streamed_report_of_seeded_data_is_the_same(tmp_path):
    """A cycle made like real data by the bench's own seeding: 150 objectives, 600 key results."""
    import importlib.util
    from pathlib import Path
    from okr import create_app
    spec = importlib.util.spec_from_file_location("bench", Path(__file__).parents[1] / "perf" / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    database = str(tmp_path / "seeded.db")
    (cycle, _), = bench.seed_report_cycles(database, (150,))
    app = create_app({"TESTING": True, "DATABASE": database})
    big, small = streamed(app, app.test_client(), f"/v1/cycles/{cycle}/report")
    assert_same(big, small)
    assert big.get_json()["key_results_count"] > 500


# --- slots ---------------------------------------------------------------------------------------------


@contextmanager
def slots_taken(database, count):
    """Holds the first `count` report slots' lock files, as other processes' reports would."""
    files = []
    try:
        for index in range(count):
            fd = os.open(lock_path(database, index), os.O_RDWR | os.O_CREAT, 0o600)
            files.append(fd)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        for fd in files:
            os.close(fd)


@pytest.fixture
def bounded(app, client):
    """A cycle whose every report counts as big, two slots, and waits of a fifth of a second."""
    app.config.update(BIG_REPORT_OBJECTIVES=3, REPORT_SLOTS=2, REPORT_WAIT=0.2)
    cycle = make_cycle(client)
    objectives = [make_objective(client, cycle["id"], f"o{i}") for i in range(3)]
    return {"cycle": cycle["id"], "objective": objectives[0]["id"], "database": app.config["DATABASE"]}


def big_paths(bounded):
    return [f"/v1/cycles/{bounded['cycle']}/report", f"/v1/cycles/{bounded['cycle']}/report.csv"]


def test_with_every_slot_taken_a_big_report_waits_then_answers_503_with_retry_after(client, bounded):
    with slots_taken(bounded["database"], 2):
        for path in big_paths(bounded):
            started = time.monotonic()
            response = client.get(path)
            assert time.monotonic() - started >= 0.2
            body = assert_error(response, 503)
            assert "retry" in body["message"]
            assert response.headers["Retry-After"] == "5"
        for page in (f"/cycles/{bounded['cycle']}.csv", f"/cycles/{bounded['cycle']}"):
            page = client.get(page, headers={"Accept": "text/html"})
            assert page.status_code == 503 and page.mimetype == "text/html" and page.headers["Retry-After"] == "5"
            assert "Try again in a moment" in page.get_data(as_text=True)
    assert client.get(f"/cycles/{bounded['cycle']}", headers={"Accept": "text/html"}).status_code == 200


def test_past_half_the_threads_a_big_report_is_refused_at_once_without_waiting(app, client, bounded):
    app.config.update(THREADS=4, REPORT_WAIT=10)
    with client.get(big_paths(bounded)[0]) as response:  # made the count of this process's threads: 2
        assert response.status_code == 200
    admissions = app.extensions["okr_report_admissions"]
    assert admissions.acquire(blocking=False) and admissions.acquire(blocking=False)  # two others building
    try:
        started = time.monotonic()
        response = client.get(big_paths(bounded)[0])
        assert time.monotonic() - started < 2
        assert_error(response, 503)
        assert response.headers["Retry-After"] == "5"
    finally:
        admissions.release()
        admissions.release()
    with client.get(big_paths(bounded)[0]) as response:
        assert response.status_code == 200


def test_one_free_slot_is_enough(client, bounded):
    with slots_taken(bounded["database"], 1):
        for path in big_paths(bounded):
            with client.get(path) as response:
                assert response.status_code == 200


def test_a_slot_freed_during_the_wait_is_taken(app, client, bounded):
    app.config["REPORT_WAIT"] = 10
    # Taken in a thread that lets go after 0.3 s: the report waits for a slot rather than failing.
    ready, done = threading.Event(), threading.Event()

    def hold():
        with slots_taken(bounded["database"], 2):
            ready.set()
            time.sleep(0.3)
        done.set()

    threading.Thread(target=hold).start()
    ready.wait(5)
    started = time.monotonic()
    with client.get(big_paths(bounded)[0]) as response:
        assert response.status_code == 200 and done.is_set()
    assert 0.2 < time.monotonic() - started < 5


def test_small_reports_never_wait_for_a_slot(app, client, bounded):
    app.config["BIG_REPORT_OBJECTIVES"] = 4  # the cycle has 3
    with slots_taken(bounded["database"], 2):
        for path in [*big_paths(bounded), f"/v1/objectives/{bounded['objective']}/report"]:
            with client.get(path) as response:
                assert response.status_code == 200


def test_the_slot_is_given_back_when_the_report_is_built(app, client, bounded):
    app.config["REPORT_SLOTS"] = 1
    for _ in range(3):
        with client.get(big_paths(bounded)[0]) as response:
            assert response.status_code == 200
    with slots_taken(bounded["database"], 1):  # free again: not kept by the requests above
        pass


@pytest.mark.slow
def test_a_real_server_answers_503_with_retry_after_when_every_slot_is_taken(tmp_path):
    database, port = str(tmp_path / "okr.db"), free_port()
    env = {**ENV_WITHOUT_OKR, "OKR_BIG_REPORT_OBJECTIVES": "1", "OKR_REPORT_SLOTS": "3", "OKR_REPORT_WAIT": "0.5"}
    process, http = start_service(port, "--database", database, env=env)
    try:
        cycle = http.post("/v1/cycles", {"name": "Q1"}).ok()["id"]
        http.post("/v1/objectives", {"name": "o", "cycle_id": cycle, "is_company": False, "is_personal": False}).ok()
        assert http.get(f"/v1/cycles/{cycle}/report").ok()["objectives_count"] == 1
        with slots_taken(database, 3):
            response = http.get(f"/v1/cycles/{cycle}/report")
            assert response.status == 503 and response.headers["Retry-After"] == "5"
            assert response.json()["code"] == 503
            assert http.get(f"/v1/cycles/{cycle}").status == 200  # small reads go on
        assert http.get(f"/v1/cycles/{cycle}/report").status == 200
    finally:
        stop_process(process)


def test_the_api_description_gives_the_reports_503_with_retry_after(client):
    paths = client.get("/v1/openapi.json").get_json()["paths"]
    for path in ("/v1/cycles/{cycle_id}/report", "/v1/cycles/{cycle_id}/report.csv",
                 "/v1/objectives/{objective_id}/report"):
        busy = paths[path]["get"]["responses"]["503"]
        assert "slots for big reports" in busy["description"] and "Retry-After" in busy["headers"]
    assert "slots" not in paths["/v1/cycles/{cycle_id}"]["get"]["responses"]["503"]["description"]
