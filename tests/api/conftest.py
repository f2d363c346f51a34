import pytest

from helpers import make_key_result, make_objective, make_team, make_user, signed
from okr.db import transaction
from okr.records import user_json
from okr.store import keys, users


@pytest.fixture
def alignment(client, runner, cycle):
    """Teams Red and Blue, users Ada and Bob, and four objectives of `cycle`: root (company, Red, Ada) with
    the children child (Blue, Ada) and mine (personal, Red, Bob), and loose (none of these)."""
    red, blue = make_team(client, "Red")["id"], make_team(client, "Blue")["id"]
    ada = make_user(runner)["id"]
    bob = make_user(runner, "Bob", "bob@example.com")["id"]
    c = cycle["id"]
    o = {}
    o["root"] = make_objective(client, c, "root", team_id=red, assignee_id=ada, is_company=True)
    o["child"] = make_objective(client, c, "child", team_id=blue, assignee_id=ada,
                                parent_objective_id=o["root"]["id"])
    o["mine"] = make_objective(client, c, "mine", team_id=red, assignee_id=bob, is_personal=True,
                               parent_objective_id=o["root"]["id"])
    o["loose"] = make_objective(client, c, "loose")
    return {"cycle": c, "red": red, "blue": blue, "ada": ada, "bob": bob, "o": o}


class Person:
    """A user with a role and an API key of theirs: user (as GET /v1/users/:id gives it), id, role, key
    (credential and secret); headers() signs a request with the key, now."""

    def __init__(self, user, role, key):
        self.user, self.id, self.role, self.key = user, user["id"], role, key

    def headers(self):
        return signed(self.key)


@pytest.fixture
def make_person(app):
    """make_person(role, read_only=False, name=..., email=...): a Person made through okr.store, as the people
    pages and commands make them. Once one exists, the API wants signed requests."""
    made = []

    def make(role="editor", read_only=False, name=None, email=None):
        number = len(made) + 1
        name = name or f"{role.capitalize()} {number}"
        email = email or f"{role}{number}@example.com"
        with app.app_context(), transaction() as db:
            row = users.create(db, name, email, role)
            credential, secret = keys.create(db, f"{name}'s key", read_only, row["id"])
        person = Person(user_json(row), role, {"credential": credential, "secret": secret})
        made.append(person)
        return person

    return make


# The worked example of docs/api.md's confidence calibration: a cycle of 2026-10-01 to 2026-12-31 (its last third
# from 2026-12-01), Ada's two key results in team Red, Bob's one in team Blue, five check-ins people made, closed.
WORKED_CHECKINS = (  # key result, day, value, confidence
    ("signups", "2026-11-01", "5", "0.8"), ("signups", "2026-12-05", "8", "0.9"),
    ("churn", "2026-11-01", "3", "0.7"), ("churn", "2026-12-10", "3", "0.8"),
    ("launch", "2026-12-15", "10", "0.6"),
)


@pytest.fixture
def worked_example(client, runner, clock):
    """The worked example, closed on 2027-01-02: ids of its cycle, teams, people, objectives and key results."""
    clock.now = "2026-10-01T09:00:00Z"
    cycle = client.post("/v1/cycles", json={"name": "Q4", "starts_on": "2026-10-01", "ends_on": "2026-12-31"})
    assert cycle.status_code == 200, cycle.get_json()
    c = cycle.get_json()["id"]
    red, blue = make_team(client, "Red")["id"], make_team(client, "Blue")["id"]
    ada = make_user(runner)["id"]
    bob = make_user(runner, "Bob", "bob@example.com")["id"]
    growth = make_objective(client, c, "Grow", team_id=red)["id"]
    ship = make_objective(client, c, "Ship", team_id=blue)["id"]
    fields = {"type": "positive", "current_value": "0", "target_value_min": "10", "confidence": "0.5"}
    k = {"signups": make_key_result(client, growth, "Signups", owner_id=ada, **fields)["id"],
         "churn": make_key_result(client, growth, "Churn", owner_id=ada, **fields)["id"],
         "launch": make_key_result(client, ship, "Launch", owner_id=bob, **fields)["id"]}
    for name, day, value, confidence in WORKED_CHECKINS:
        clock.now = f"{day}T10:00:00Z"
        answer = client.post(f"/v1/keyresults/{k[name]}/checkins", json={"value": value, "confidence": confidence})
        assert answer.status_code == 200, answer.get_json()
    clock.now = "2027-01-02T09:00:00Z"
    scored = client.patch(f"/v1/keyresults/{k['launch']}", json={"score": "0.50"})  # Bob scores his launch 0.50
    assert scored.status_code == 200, scored.get_json()
    closed = client.post(f"/v1/cycles/{c}/close")
    assert closed.status_code == 200, closed.get_json()
    return {"cycle": c, "red": red, "blue": blue, "ada": ada, "bob": bob, "growth": growth, "ship": ship, **k}
