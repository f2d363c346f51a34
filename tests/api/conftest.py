from types import SimpleNamespace

import pytest

from helpers import make_objective, make_team, make_user, signed
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



@pytest.fixture
def cast(app, client, make_person):
    """Issue 39's people (tests/api/test_visibility.py), each a Person with a key of their own: the editors creator,
    assignee, kr_owner, member (of team red), other_member (of team blue) and outsider; admin; read_only_admin (an
    admin whose key is read-only); service (a key of no user: its id and user None). red and blue are team ids."""
    people = {name: make_person("editor", name=name.replace("_", " ").title(), email=f"{name}@example.com")
              for name in ("creator", "assignee", "kr_owner", "member", "other_member", "outsider")}
    people["admin"] = make_person("admin", name="Admin", email="admin@example.com")
    people["read_only_admin"] = make_person("admin", read_only=True, name="Reader", email="reader@example.com")
    with app.app_context(), transaction() as db:
        credential, secret = keys.create(db, "service key", False, None)
    people["service"] = SimpleNamespace(user=None, id=None, role=None, key={"credential": credential,
                                                                           "secret": secret},
                                        headers=lambda: signed({"credential": credential, "secret": secret}))
    service = people["service"].headers
    teams = {}
    for name, member in (("red", "member"), ("blue", "other_member")):
        answer = client.post("/v1/teams", json={"name": name.title()}, headers=service())
        assert answer.status_code == 200, answer.get_json()
        teams[name] = answer.get_json()["id"]
        joined = client.put(f"/v1/teams/{teams[name]}/members/{people[member].id}", headers=service())
        assert joined.status_code == 200, joined.get_json()
    return SimpleNamespace(**people, **teams, people=people)
