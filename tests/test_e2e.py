"""End to end: the real waitress server over real HTTP on loopback."""
import base64
import os
import signal
import threading

import pytest

from helpers import KEY_RESULT_FIELDS, OBJECTIVE_FIELDS, free_port, make_user, start_service

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser


def test_a_users_day(live_server, runner):
    """Cycle, team, aligned objectives, key results of every type, paging, update, cascade."""
    http = live_server
    owner = make_user(runner, "Grace Hopper", "grace@example.com")
    cycle = http.post("/v1/cycles", {"name": "2026 Q4"}).ok()
    team = http.post("/v1/teams", {"name": "Compilers"}).ok()

    company = http.post("/v1/objectives", {
        "name": "Ship the compiler", "cycle_id": cycle["id"], "is_company": True, "is_personal": False,
    }).ok()
    team_goal = http.post("/v1/objectives", {
        "name": "Fast builds", "cycle_id": cycle["id"], "is_company": False, "is_personal": False,
        "team_id": team["id"], "assignee_id": owner["id"], "parent_objective_id": company["id"],
        "description": "Make every build under a minute",
    }).ok()
    assert set(team_goal) == OBJECTIVE_FIELDS
    assert team_goal["parent_objective_id"] == company["id"]

    bodies = [
        {"name": "Release", "type": "milestone"},
        {"name": "Build minutes", "type": "negative", "current_value": "12.5", "target_value_min": "1"},
        {"name": "Tests", "type": "positive", "target_value_min": 1000, "confidence": "0.9"},
        {"name": "Latency", "type": "range", "target_value_min": "0.1", "target_value_max": "0.25"},
        {"name": "Crash rate", "type": "baseline", "current_value": "0.001"},
    ]
    created = [http.post(f"/v1/objectives/{team_goal['id']}/keyresults", body).ok() for body in bodies]
    assert all(set(kr) == KEY_RESULT_FIELDS for kr in created)
    assert [kr["target_value_min"] for kr in created] == ["1.00", "1.00", "1000.00", "0.10", None]
    assert created[1]["current_value"] == "12.50" and created[2]["confidence"] == "0.90"

    # Paging through the cycle's key results two at a time returns each once, in order.
    seen, token = [], None
    while True:
        path = f"/v1/keyresults?cycle_id={cycle['id']}&page_size=2"
        page = http.get(path + (f"&page_token={token}" if token else "")).ok()
        seen += [kr["id"] for kr in page["keyresults"]]
        token = page["next_page_token"]
        if token is None:
            break
        int(base64.urlsafe_b64decode(token))
    assert seen == [kr["id"] for kr in created]

    updated = http.post(f"/v1/keyresults/{created[2]['id']}", {
        **created[2], "current_value": "640", "confidence": "0.75",
    }).ok()
    assert (updated["current_value"], updated["confidence"]) == ("640.00", "0.75")
    assert updated["created_at"] == created[2]["created_at"]

    renamed = http.post(f"/v1/objectives/{team_goal['id']}", {**team_goal, "name": "Faster builds"}).ok()
    assert renamed["name"] == "Faster builds" and renamed["team_id"] == team["id"]

    # Deleting the parent keeps the child, unaligned; deleting the cycle takes everything.
    assert http.delete(f"/v1/objectives/{company['id']}").status == 200
    assert http.get(f"/v1/objectives/{team_goal['id']}").ok()["parent_objective_id"] is None
    response = http.delete(f"/v1/cycles/{cycle['id']}")
    assert (response.status, response.payload) == (200, b"")
    assert http.get(f"/v1/objectives/{team_goal['id']}").status == 404
    assert all(http.get(f"/v1/keyresults/{kr['id']}").status == 404 for kr in created)
    assert http.get(f"/v1/teams/{team['id']}").ok()["name"] == "Compilers"
    assert http.delete(f"/v1/cycles/{cycle['id']}").json()["code"] == 404


def test_sixteen_threads_create_and_update_at_once(live_server):
    """No 5xx, no lost rows and no 'database is locked' under concurrent writes."""
    http = live_server
    cycle = http.post("/v1/cycles", {"name": "busy"}).ok()
    failures, created = [], []
    lock = threading.Lock()

    def worker(n):
        for i in range(15):
            response = http.post("/v1/objectives", {
                "name": f"w{n}-{i}", "cycle_id": cycle["id"], "is_company": False, "is_personal": True,
            })
            if response.status != 200:
                failures.append((response.status, response.payload))
                continue
            objective = response.json()
            kr = http.post(f"/v1/objectives/{objective['id']}/keyresults",
                           {"name": "kr", "type": "positive", "target_value_min": str(i)})
            again = http.post(f"/v1/objectives/{objective['id']}", {**objective, "name": f"w{n}-{i}!"})
            for r in (kr, again):
                if r.status != 200:
                    failures.append((r.status, r.payload))
            with lock:
                created.append(objective["id"])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    listed = http.get(f"/v1/objectives?cycle_id={cycle['id']}&page_size=1000").ok()["objectives"]
    assert sorted(o["id"] for o in listed) == sorted(created) and len(created) == 16 * 15
    assert all(o["name"].endswith("!") for o in listed)
    key_results = http.get(f"/v1/keyresults?cycle_id={cycle['id']}&page_size=1000").ok()["keyresults"]
    assert len(key_results) == 16 * 15


TRICKY_TEXT = [
    "Launch 🚀 with 👩🏽‍💻 and 🇳🇿",
    "מטרה: להגדיל הכנסות",  # Hebrew, right to left
    "هدف الربع الأول",  # Arabic
    "Zoë, Zoë and Z\u0308oe\u0301",  # precomposed and combining marks
    "提高客户满意度 顧客満足度を上げる",  # CJK
    "  leading and trailing spaces kept  ",
    "'; DROP TABLE objectives; --",
    "Robert'); DELETE FROM cycles WHERE ('1'='1",
    "\" OR 1=1 -- %s ? :name $1",
]


@pytest.mark.parametrize("text", TRICKY_TEXT)
def test_text_round_trips_exactly_over_http(live_server, text):
    http = live_server
    cycle = http.post("/v1/cycles", {"name": text}).ok()
    objective = http.post("/v1/objectives", {
        "name": text, "description": text, "cycle_id": cycle["id"], "is_company": False, "is_personal": False,
    }).ok()
    kr = http.post(f"/v1/objectives/{objective['id']}/keyresults", {"name": text, "type": "baseline"}).ok()
    assert http.get(f"/v1/cycles/{cycle['id']}").ok()["name"] == text
    fetched = http.get(f"/v1/objectives/{objective['id']}").ok()
    assert (fetched["name"], fetched["description"]) == (text, text)
    assert http.get(f"/v1/keyresults/{kr['id']}").ok()["name"] == text
    # The SQL-looking strings were stored, not run: everything is still there.
    assert len(http.get("/v1/cycles").ok()["cycles"]) == 1


def test_errors_over_http_are_json(live_server):
    http = live_server
    for response, status in [
        (http.get("/v1/nowhere"), 404),
        (http.request("PUT", "/v1/cycles"), 405),
        (http.post("/v1/cycles", raw=b"{not json"), 400),
        (http.post("/v1/cycles", raw=b"x" * (1024 * 1024 + 1)), 413),
    ]:
        assert response.status == status
        assert response.headers["Content-Type"] == "application/json"
        assert response.json()["code"] == status


def start_with_env_database(database, port):
    # The database comes from OKR_DATABASE here, to run that path for real too.
    return start_service(port, env={**os.environ, "OKR_DATABASE": str(database)})


def test_app_py_serves_stops_on_sigterm_and_keeps_data(tmp_path):
    database, port = tmp_path / "fresh.db", free_port()
    process, http = start_with_env_database(database, port)
    try:
        cycle = http.post("/v1/cycles", {"name": "kept"}).ok()
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=15)[0].decode()
    assert process.returncode == 0, output
    assert oct(database.stat().st_mode & 0o777) == oct(0o600)

    process, http = start_with_env_database(database, port)
    try:
        assert http.get(f"/v1/cycles/{cycle['id']}").ok()["name"] == "kept"
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=15)
