"""Pins today's answers of the 23 spec endpoints, byte for byte.

A fixed script of requests (successes and the main errors: 404 unknown id,
400 validation with details, 405, the empty-body DELETE answer) runs through
Flask's test client with deterministic ids (okr.clock.new_id patched in the
store modules whose rows the script makes) and a fixed clock (the `clock` fixture).  Each
answer's status code, Content-Type, Allow (as a set of methods: its order
follows the hash seed today) and exact body bytes are
compared with tests/fixtures/spec_answers.json.  Any difference fails.

Later features (check-ins, reports, ETags, ...) must not change these answers.
To change them deliberately, regenerate the fixture and review the diff:

    UPDATE_SPEC_ANSWERS=1 pytest -q -p no:cacheprovider tests/api/test_spec_answers.py
    git diff tests/fixtures/spec_answers.json

Without UPDATE_SPEC_ANSWERS=1 the fixture is never written.
"""
import itertools
import json
import os
from pathlib import Path

import okr.store.common
import okr.store.cycles
import okr.store.key_results
import okr.store.objectives
import okr.store.users

from helpers import make_user

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "spec_answers.json"
# Where the resources the script makes get their ids (check-ins keep theirs: the answers do not show them).
ID_MODULES = (okr.store.common, okr.store.cycles, okr.store.objectives, okr.store.key_results, okr.store.users)


def fixed_id(n):
    return f"00000000-0000-4000-8000-{n:012d}"


C1, C2, T1, T2, U1, U2 = (fixed_id(n) for n in range(1, 7))
O1, O2, O3 = (fixed_id(n) for n in range(7, 10))
K1, K2 = fixed_id(10), fixed_id(11)
UNKNOWN = "00000000-0000-4000-8000-999999999999"

# (label, method, path, JSON body or None); ids follow creation order above.
SCRIPT = [
    # Cycles
    ("cycles create", "POST", "/v1/cycles", {"name": "Q1"}),
    ("cycles create 2", "POST", "/v1/cycles", {"name": "Q2"}),
    ("cycles create 400", "POST", "/v1/cycles", {"name": 5}),
    ("cycles list", "GET", "/v1/cycles", None),
    ("cycles get", "GET", f"/v1/cycles/{C1}", None),
    ("cycles get 404", "GET", f"/v1/cycles/{UNKNOWN}", None),
    ("cycles update", "POST", f"/v1/cycles/{C1}", {"name": "Q1 2026"}),
    ("cycles update 400", "POST", f"/v1/cycles/{C1}", {"name": ["x"]}),
    ("cycles update 404", "POST", f"/v1/cycles/{UNKNOWN}", {"name": "x"}),
    ("cycles 405", "PUT", f"/v1/cycles/{C1}", {"name": "x"}),
    ("cycles list 405", "DELETE", "/v1/cycles", None),
    # Teams
    ("teams create", "POST", "/v1/teams", {"name": "Platform"}),
    ("teams create 2", "POST", "/v1/teams", {"name": "Growth"}),
    ("teams create 400", "POST", "/v1/teams", {"name": 5}),
    ("teams list", "GET", "/v1/teams", None),
    ("teams get", "GET", f"/v1/teams/{T1}", None),
    ("teams get 404", "GET", f"/v1/teams/{UNKNOWN}", None),
    ("teams update", "POST", f"/v1/teams/{T1}", {"name": "Platform Core"}),
    ("teams update 400", "POST", f"/v1/teams/{T1}", {"name": ["x"]}),
    ("teams update 404", "POST", f"/v1/teams/{UNKNOWN}", {"name": "x"}),
    ("teams 405", "PATCH", f"/v1/teams/{T1}", {"name": "x"}),
    # Users (created through the CLI before the script: U1, U2)
    ("users list", "GET", "/v1/users", None),
    ("users get", "GET", f"/v1/users/{U1}", None),
    ("users get 404", "GET", f"/v1/users/{UNKNOWN}", None),
    ("users 405", "POST", "/v1/users", {"name": "x"}),
    ("user 405", "DELETE", f"/v1/users/{U1}", None),
    # Objectives
    ("objectives create", "POST", "/v1/objectives", {
        "name": "Grow revenue", "cycle_id": C1, "is_company": True, "is_personal": False,
        "description": "Sell more", "team_id": T1, "assignee_id": U1}),
    ("objectives create child", "POST", "/v1/objectives", {
        "name": "Win deals", "cycle_id": C1, "is_company": False, "is_personal": True,
        "parent_objective_id": O1}),
    ("objectives create other cycle", "POST", "/v1/objectives", {
        "name": "Hire", "cycle_id": C2, "is_company": False, "is_personal": False}),
    ("objectives create 400", "POST", "/v1/objectives", {"name": 1, "is_company": "maybe"}),
    ("objectives list", "GET", f"/v1/objectives?cycle_id={C1}", None),
    ("objectives list 400", "GET", "/v1/objectives", None),
    ("objectives get", "GET", f"/v1/objectives/{O1}", None),
    ("objectives get 404", "GET", f"/v1/objectives/{UNKNOWN}", None),
    ("objectives update", "POST", f"/v1/objectives/{O2}", {
        "name": "Win big deals", "cycle_id": C1, "is_company": False, "is_personal": False}),
    ("objectives update 400", "POST", f"/v1/objectives/{O2}", {"name": "x", "cycle_id": 7}),
    ("objectives update 404", "POST", f"/v1/objectives/{UNKNOWN}", {
        "name": "x", "cycle_id": C1, "is_company": False, "is_personal": False}),
    ("objectives 405", "PUT", f"/v1/objectives/{O1}", {"name": "x"}),
    # Key results
    ("keyresults create", "POST", f"/v1/objectives/{O1}/keyresults", {
        "name": "Reach 100 customers", "type": "positive", "confidence": "0.5",
        "current_value": "10", "target_value_min": "100"}),
    ("keyresults create 2", "POST", f"/v1/objectives/{O1}/keyresults", {
        "name": "Keep churn low", "type": "negative", "target_value_min": "0.05"}),
    ("keyresults create 400", "POST", f"/v1/objectives/{O1}/keyresults", {
        "name": "x", "type": "sideways", "confidence": "2"}),
    ("keyresults create 404", "POST", f"/v1/objectives/{UNKNOWN}/keyresults", {
        "name": "x", "type": "positive", "target_value_min": "1"}),
    # After the creates: a failed create may still draw an id.
    ("objectives create 400 unknown cycle", "POST", "/v1/objectives", {
        "name": "x", "cycle_id": UNKNOWN, "is_company": False, "is_personal": False}),
    ("objective keyresults list", "GET", f"/v1/objectives/{O1}/keyresults", None),
    ("objective keyresults list 404", "GET", f"/v1/objectives/{UNKNOWN}/keyresults", None),
    ("keyresults list", "GET", f"/v1/keyresults?cycle_id={C1}", None),
    ("keyresults list 400", "GET", "/v1/keyresults", None),
    ("keyresults get", "GET", f"/v1/keyresults/{K1}", None),
    ("keyresults get 404", "GET", f"/v1/keyresults/{UNKNOWN}", None),
    ("keyresults update", "POST", f"/v1/keyresults/{K1}", {
        "name": "Reach 150 customers", "type": "positive", "confidence": "0.75",
        "current_value": "20", "target_value_min": "150"}),
    ("keyresults update 400", "POST", f"/v1/keyresults/{K1}", {"name": "x", "type": 3}),
    ("keyresults update 404", "POST", f"/v1/keyresults/{UNKNOWN}", {
        "name": "x", "type": "positive", "target_value_min": "1"}),
    ("keyresults 405", "PUT", f"/v1/keyresults/{K1}", {"name": "x"}),
    ("keyresults list 405", "POST", "/v1/keyresults", {"name": "x"}),
    # Deletes, then what is left
    ("keyresults delete", "DELETE", f"/v1/keyresults/{K2}", None),
    ("keyresults delete 404", "DELETE", f"/v1/keyresults/{K2}", None),
    ("objectives delete", "DELETE", f"/v1/objectives/{O2}", None),
    ("objectives delete 404", "DELETE", f"/v1/objectives/{O2}", None),
    ("objectives list after delete", "GET", f"/v1/objectives?cycle_id={C1}", None),
    ("teams delete", "DELETE", f"/v1/teams/{T2}", None),
    ("teams delete 404", "DELETE", f"/v1/teams/{T2}", None),
    ("cycles delete", "DELETE", f"/v1/cycles/{C2}", None),
    ("cycles delete 404", "DELETE", f"/v1/cycles/{C2}", None),
    ("objectives get deleted with cycle", "GET", f"/v1/objectives/{O3}", None),
    ("cycles list after delete", "GET", "/v1/cycles", None),
    ("teams list after delete", "GET", "/v1/teams", None),
    ("keyresults list after delete", "GET", f"/v1/keyresults?cycle_id={C1}", None),
]


def answer(response):
    allow = response.headers.get("Allow")
    return {
        "status": response.status_code,
        "content_type": response.headers.get("Content-Type"),
        # Werkzeug builds Allow from a set: its order varies with the hash seed, its methods do not.
        "allow": None if allow is None else sorted(m.strip() for m in allow.split(",")),
        "body": response.get_data().decode("utf-8"),
    }


def run_script(client, runner, clock, monkeypatch):
    counter = itertools.count(1)
    for module in ID_MODULES:
        monkeypatch.setattr(module, "new_id", lambda: fixed_id(next(counter)))
    answers = []
    for n, (label, method, path, body) in enumerate(SCRIPT[:11]):
        clock.now = f"2026-01-01T00:00:{n:02d}Z"
        answers.append(step(client, label, method, path, body))
    # Ids 3..6 are teams T1, T2 then users U1, U2: teams come next in the script.
    for n, (label, method, path, body) in enumerate(SCRIPT[11:13], start=11):
        clock.now = f"2026-01-01T00:00:{n:02d}Z"
        answers.append(step(client, label, method, path, body))
    clock.now = "2026-01-01T00:00:30Z"
    assert make_user(runner, "Ada Lovelace", "ada@example.com")["id"] == U1
    assert make_user(runner, "Grace Hopper", "grace@example.com")["id"] == U2
    for n, (label, method, path, body) in enumerate(SCRIPT[13:], start=13):
        clock.now = f"2026-01-01T00:01:{n:02d}Z"
        answers.append(step(client, label, method, path, body))
    return answers


def step(client, label, method, path, body):
    kwargs = {} if body is None else {"json": body}
    response = client.open(path, method=method, **kwargs)
    return {"label": label, "request": f"{method} {path}", "sent": body, **answer(response)}


def test_spec_answers_are_unchanged(client, runner, clock, monkeypatch):
    answers = run_script(client, runner, clock, monkeypatch)
    if os.environ.get("UPDATE_SPEC_ANSWERS") == "1":
        FIXTURE.write_text(json.dumps(answers, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert [a["label"] for a in answers] == [e["label"] for e in expected]
    for got, want in zip(answers, expected):
        assert got["request"] == want["request"], got["label"]
        assert got["sent"] == want["sent"], got["label"]
        assert (got["status"], got["content_type"], got["allow"]) == (
            want["status"], want["content_type"], want["allow"]), got["label"]
        assert got["body"].encode("utf-8") == want["body"].encode("utf-8"), got["label"]


def test_script_covers_every_spec_endpoint():
    """Each of the spec's 23 method/path pairs appears in the script with a 200 expected."""
    spec = {
        ("POST", "/v1/objectives"), ("GET", "/v1/objectives"), ("GET", "/v1/objectives/:id"),
        ("POST", "/v1/objectives/:id"), ("DELETE", "/v1/objectives/:id"),
        ("POST", "/v1/objectives/:id/keyresults"), ("GET", "/v1/objectives/:id/keyresults"),
        ("GET", "/v1/keyresults"), ("GET", "/v1/keyresults/:id"), ("POST", "/v1/keyresults/:id"),
        ("DELETE", "/v1/keyresults/:id"),
        ("POST", "/v1/cycles"), ("GET", "/v1/cycles"), ("GET", "/v1/cycles/:id"),
        ("POST", "/v1/cycles/:id"), ("DELETE", "/v1/cycles/:id"),
        ("POST", "/v1/teams"), ("GET", "/v1/teams"), ("GET", "/v1/teams/:id"),
        ("POST", "/v1/teams/:id"), ("DELETE", "/v1/teams/:id"),
        ("GET", "/v1/users"), ("GET", "/v1/users/:id"),
    }
    assert len(spec) == 23
    expected = {e["label"]: e for e in json.loads(FIXTURE.read_text(encoding="utf-8"))}
    covered = set()
    for label, method, path, _ in SCRIPT:
        parts = path.partition("?")[0].split("/")
        shape = "/".join(":id" if len(p) == 36 else p for p in parts)
        if expected[label]["status"] == 200:
            covered.add((method, shape))
    assert spec <= covered, spec - covered
