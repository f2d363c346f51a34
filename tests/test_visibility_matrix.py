"""Issue 39's visibility matrix: an objective seen by everyone, its team or only its own people, walked through every
route of the app (app.url_map: the pages and /v1, and the assistants' tools through /mcp) as each of its people
(its assignee and creator, its key result's owner, a member of its team, an outsider editor, an admin and a
service key). Whoever may not see it finds nothing of it (its name, ids, description, its key result's, check-in's,
comment's, initiative's and source's words) in any body or header, gets 404 from its own resources, its child's
parent_objective_id null, and may change nothing of it; whoever may see it finds it. The cycle's progress is the
same figure for everyone, and the outsider is told it includes an objective they cannot see.

A route added to the app fails test_every_route_is_walked_or_skipped until it is walked here or skipped with a
reason (SKIPPED)."""
import json
import re
import sqlite3
import uuid
from contextlib import closing
from dataclasses import dataclass, field

import pytest

from helpers import signed
from okr.accounts import assistant_grants
from okr.db import transaction
from okr.store import board_links, keys, users, webhooks

HTML = {"Accept": "text/html"}
VISIBILITIES = ("everyone", "team", "private")
# Who sees the target objective at each visibility (admins and service keys always do).
SEES = {
    "everyone": {"owner", "kr_owner", "member", "outsider", "admin", "service"},
    "team": {"owner", "kr_owner", "member", "admin", "service"},
    "private": {"owner", "kr_owner", "admin", "service"},
}
PEOPLE = ("owner", "kr_owner", "member", "outsider", "admin", "service")
UNKNOWN = "00000000-0000-4000-8000-000000000000"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18",
               "Content-Type": "application/json"}

# Routes (rule, method) this module does not walk, each with why. Every other rule's GET is walked as every person
# (test_the_walk), and every write on the target's own resources (an objective_id, key_result_id, checkin_id,
# comment_id or initiative_id in its path) is tried by the outsider (test_the_outsider_changes_nothing).
NOT_ABOUT_OBJECTIVES = "a write that names no objective and answers none"
SKIPPED = {
    # Signing in and out, and the assistants' OAuth sign-in: they answer tokens and forms, never OKRs (and /logout
    # would end the walking session).
    ("/login", "POST"): "signs in (the walk's sessions are opened through it)",
    ("/logout", "POST"): "would end the walking person's session",
    ("/login/oidc", "POST"): "starts an identity provider's sign-in; none is set up",
    ("/oauth/authorize", "POST"): "the consent page's answer: a redirect with a code",
    ("/oauth/register", "POST"): "OAuth client registration: answers the client",
    ("/oauth/token", "POST"): "OAuth tokens: answers a token",
    ("/oauth/revoke", "POST"): "OAuth revocation: answers nothing",
    ("/invitations/<token>", "POST"): "sets an invited person's password",
    ("/password-reset", "POST"): "asks for a reset email",
    ("/password-reset/<token>", "POST"): "sets a new password",
    # One's own account.
    ("/account/assistants", "POST"): "makes a personal token (the walk makes its own through the store)",
    ("/account/assistants/<grant_id>/disconnect", "POST"): "ends a grant",
    ("/account/password", "POST"): "changes one's password",
    ("/account/sign-out-everywhere", "POST"): "would end the walking person's session",
    ("/account/weekly-email", "POST"): "turns one's weekly email on or off",
    ("/account/notification-email", "POST"): "switches which of one's notifications come by email",
    # Marking one's own notifications read answers counts, never OKRs; what a notification shows is read through
    # GET /inbox and GET /v1/me/notifications, which the walk reads (tests/api/test_notifications.py holds that a
    # hidden objective's notifications leave them).
    ("/inbox/read", "POST"): "marks one's own notifications read",
    ("/v1/me/notifications/read", "POST"): "marks one's own notifications read; answers counts",
    # People, teams, cycles, webhooks, connections and board links: admins' or named by cycle/team, not objective.
    **{(rule, "POST"): NOT_ABOUT_OBJECTIVES for rule in (
        "/people", "/people/<user_id>/invitation", "/people/<user_id>/role", "/people/<user_id>/status",
        "/people/<user_id>/unlink", "/people/<user_id>/unlock", "/people/import", "/people/import/apply",
        "/teams/new", "/teams/<team_id>/edit", "/teams/<team_id>/delete", "/teams/<team_id>/members",
        "/teams/<team_id>/members/<user_id>/remove", "/cycles/new", "/cycles/<cycle_id>/edit",
        "/webhooks", "/webhooks/<hook_id>/delete", "/webhooks/<hook_id>/enable", "/webhooks/<hook_id>/test",
        "/connections", "/connections/<connection_id>/edit", "/connections/<connection_id>/delete",
        "/board-links", "/board-links/<link_id>/revoke", "/v1/cycles", "/v1/teams", "/v1/teams/<team_id>",
        "/v1/connections", "/v1/cycles/<cycle_id>")},
    **{(rule, method): NOT_ABOUT_OBJECTIVES for rule, method in (
        ("/v1/cycles/<cycle_id>", "PATCH"), ("/v1/teams/<team_id>/members/<user_id>", "PUT"),
        ("/v1/teams/<team_id>/members/<user_id>", "DELETE"), ("/v1/connections/<connection_id>", "PATCH"),
        ("/v1/connections/<connection_id>", "DELETE"), ("/v1/teams/<team_id>", "DELETE"))},
    # Whole cycles: deleting, closing, reopening or copying one is a cycle's operation, not the objective's. NOT
    # COVERED: whether a copy made by someone who cannot see an objective copies it (and keeps its visibility).
    ("/cycles/<cycle_id>/delete", "POST"): "deletes the whole cycle",
    ("/v1/cycles/<cycle_id>", "DELETE"): "deletes the whole cycle",
    ("/cycles/<cycle_id>/close", "POST"): "closes the cycle (its answer names the cycle)",
    ("/v1/cycles/<cycle_id>/close", "POST"): "closes the cycle (its answer names the cycle)",
    ("/cycles/<cycle_id>/reopen", "POST"): "reopens the cycle",
    ("/v1/cycles/<cycle_id>/reopen", "POST"): "reopens the cycle",
    ("/cycles/<cycle_id>/copy", "POST"): "copies the cycle: not covered here",
    # New objectives and key results: checked apart (test_a_hidden_parent_cannot_be_named), as the outsider naming
    # the hidden objective as a parent or as the key result's objective.
    ("/objectives/new", "POST"): "test_a_hidden_parent_cannot_be_named",
    ("/keyresults/new", "POST"): "test_a_hidden_parent_cannot_be_named",
    ("/v1/objectives", "POST"): "test_a_hidden_parent_cannot_be_named",
    # The assistants' endpoint: its tools are called in test_the_assistants_tools.
    ("/mcp", "POST"): "test_the_assistants_tools",
    ("/mcp", "DELETE"): "ends an MCP session; names nothing",
}
# GETs walked with a query besides their rule (the search words, the objective picker's, filters).
QUERIES = {
    "/v1/objectives": "?cycle_id={cycle}",
    "/v1/keyresults": "?cycle_id={cycle}",
    "/v1/search": "?q={name}",
    "/search": "?q={name}",
}
# Paths walked besides each rule's own: other words searched, the picker and filters that list objectives, the
# child's pages (which name their parent), the key result's comment, the other people.
EXTRA_PATHS = (
    "/v1/search?q={kr_name}", "/v1/search?q={initiative_name}", "/v1/search?q=Zebra", "/search?q={kr_name}",
    "/search?q=Zebra", "/cycles/{cycle}?q=Zebra", "/objectives/new?cycle_id={cycle}&parent_q=Zebra",
    "/objectives/new?cycle_id={cycle}&parent_objective_id={target}", "/objectives/{child}/edit?parent_q=Zebra",
    "/keyresults/new?objective_id={target}", "/objectives/{child}", "/objectives/{child}/edit",
    "/v1/objectives/{child}", "/v1/objectives/{child}/report", "/v1/objectives?cycle_id={cycle}&team_id={team}",
    "/activity?cycle_id={cycle}", "/activity?team_id={team}", "/activity?history=all", "/v1/comments/{kr_comment}",
    "/v1/users/{kr_owner_id}", "/v1/events?page_size=100", "/cycles/{cycle}/board?hold=1", "/?board=1",
    "/teams/{team}", "/v1/keyresults/{child_kr}",
)
# Where whoever sees the target must find its name (so that the walk fails both ways).
SHOWN = ("/objectives/{target}", "/v1/objectives/{target}", "/cycles/{cycle}", "/v1/cycles/{cycle}/report",
         "/v1/cycles/{cycle}/report.csv", "/cycles/{cycle}.csv", "/v1/search?q={name}", "/search?q={name}",
         "/cycles/{cycle}/board", "/activity", "/v1/events?page_size=100", "/teams/{team}", "/keyresults/{kr}",
         "/v1/objectives?cycle_id={cycle}", "/v1/cycles/{cycle}/retrospective", "/cycles/{cycle}/retrospective")
# The parameters of a rule, as the target's ids (a rule may override: OVERRIDES).
PARAMETERS = {
    "objective_id": "{target}", "key_result_id": "{kr}", "checkin_id": "{checkin}", "comment_id": "{comment}",
    "initiative_id": "{initiative}", "cycle_id": "{cycle}", "team_id": "{team}", "user_id": "{owner_id}",
    "link_id": "{link}", "hook_id": "{hook}", "connection_id": "{connection}", "grant_id": UNKNOWN,
    "filename": "style.css", "token": "{board_token}",
}
OVERRIDES = {"/invitations/<token>": "/invitations/not-a-token", "/password-reset/<token>": "/password-reset/nope"}
OWN_RESOURCES = ("objective_id", "key_result_id", "checkin_id", "comment_id", "initiative_id")


@dataclass
class Someone:
    """One of the walking people: name (owner, member...), user (None for the service key), key, page client."""
    name: str
    user: dict | None
    key: dict
    pages: object = None
    token: str | None = None

    @property
    def id(self):
        return None if self.user is None else self.user["id"]


@dataclass
class World:
    ids: dict
    people: dict
    secrets: dict = field(default_factory=dict)

    def fill(self, text):
        return text.format(**self.ids)


def csrf_of(client, path):
    page = client.get(path, headers=HTML).get_data(as_text=True)
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, f"no CSRF token on {path}"
    return found.group(1)


def pages_of(app, key):
    """A test client of its own, signed in to the pages with the API key (the login page's key form)."""
    client = app.test_client()
    answer = client.post("/login", data={"csrf_token": csrf_of(client, "/login"), "credential": key["credential"],
                                         "secret": key["secret"], "next": "/"})
    assert answer.status_code == 303, answer.get_data(as_text=True)
    return client


def api(client, someone, method, path, body=None):
    return client.open(path, method=method, headers=signed(someone.key), **({} if body is None else {"json": body}))


def ok(answer):
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return answer.get_json()


def build_world(app, client, visibility, metrics):
    """The cycle, its plain objective, the target (by its owner) with everything of it, its visible child, a board
    link, a webhook; people with keys, page sessions and assistant tokens; then the target restricted."""
    mark = uuid.uuid4().hex[:10]
    people = {}
    with app.app_context(), transaction() as db:
        for name, role in (("owner", "editor"), ("kr_owner", "editor"), ("member", "editor"),
                           ("outsider", "editor"), ("admin", "admin")):
            row = dict(users.create(db, f"{name.capitalize()} Person", f"{name}@example.com", role))
            credential, secret = keys.create(db, f"{name}'s key", False, row["id"])
            people[name] = Someone(name, row, {"credential": credential, "secret": secret})
        credential, secret = keys.create(db, "service key", False, None)
        people["service"] = Someone("service", None, {"credential": credential, "secret": secret})
        hook = webhooks.add(db, "http://192.0.2.1/hook", allow_private=True)  # its deliveries: everything
    service, owner = people["service"], people["owner"]

    def by(someone, method, path, body=None):
        return ok(api(client, someone, method, path, body))

    cycle = by(service, "POST", "/v1/cycles", {"name": "Matrix quarter", "starts_on": "2026-01-01",
                                               "ends_on": "2026-12-31"})["id"]
    team = by(service, "POST", "/v1/teams", {"name": "Matrix team"})["id"]
    for member in ("member", "owner"):  # the owner reads the team's weekly digest too
        by(service, "PUT", f"/v1/teams/{team}/members/{people[member].id}")
    plain = by(service, "POST", "/v1/objectives", {"name": "Plain-Visible-Objective", "cycle_id": cycle,
                                                  "is_company": False, "is_personal": False})["id"]
    kr_fields = {"type": "positive", "current_value": "0", "target_value_min": "10", "confidence": "0.8"}
    by(service, "POST", f"/v1/objectives/{plain}/keyresults", {"name": "Plain-KR", **kr_fields})
    secrets = {"name": f"Zebra-Secret-Name-{mark}", "description": f"Quokka-Secret-Description-{mark}",
               "kr_name": f"Narwhal-Secret-KR-{mark}", "comment_body": f"Pangolin-Secret-Comment-{mark}",
               "kr_comment_body": f"Okapi-Secret-KR-Comment-{mark}",
               "checkin_comment": f"Ocelot-Secret-Checkin-{mark}", "initiative_name": f"Axolotl-Secret-Initiative-{mark}",
               "query": f"Tapir-Secret-Query-{mark}"}
    target = by(owner, "POST", "/v1/objectives", {
        "name": secrets["name"], "description": secrets["description"], "cycle_id": cycle, "team_id": team,
        "assignee_id": owner.id, "parent_objective_id": plain, "is_company": False, "is_personal": False})["id"]
    kr = by(owner, "POST", f"/v1/objectives/{target}/keyresults", {
        "name": secrets["kr_name"], "owner_id": people["kr_owner"].id, **kr_fields})["id"]
    checkin = by(owner, "POST", f"/v1/keyresults/{kr}/checkins", {
        "value": "4", "confidence": "0.7", "comment": secrets["checkin_comment"]})["id"]
    comment = by(owner, "POST", f"/v1/objectives/{target}/comments", {"body": secrets["comment_body"]})["id"]
    kr_comment = by(owner, "POST", f"/v1/keyresults/{kr}/comments", {"body": secrets["kr_comment_body"]})["id"]
    initiative = by(owner, "POST", f"/v1/keyresults/{kr}/initiatives", {"name": secrets["initiative_name"]})["id"]
    connection = by(people["admin"], "POST", "/v1/connections", {"name": "Metrics", "kind": "sqlite",
                                                         "address": metrics.address, "secret": "s3cret"})["id"]
    by(service, "PUT", f"/v1/keyresults/{kr}/source", {
        "connection_id": connection, "query": f"SELECT value FROM figures -- {secrets['query']}"})
    child = by(service, "POST", "/v1/objectives", {"name": "Visible-Child-Objective", "cycle_id": cycle,
                                                  "parent_objective_id": target, "is_company": False,
                                                  "is_personal": False})["id"]
    child_kr = by(service, "POST", f"/v1/objectives/{child}/keyresults", {"name": "Child-KR", **kr_fields})["id"]
    with app.app_context(), transaction() as db:
        link, board_token = board_links.create(db, cycle, "Wallboard")
        tokens = {name: assistant_grants.make_personal_token(db, dict(users.find(db, p.id)), "Matrix assistant",
                                                             False, 30)
                  for name, p in people.items() if p.user is not None}
    for name, someone in people.items():
        someone.token = tokens.get(name)
    # Events written while it was everyone's; then it is restricted (the spec's PATCH, by its owner).
    by(owner, "PATCH", f"/v1/objectives/{target}", {"visibility": visibility})
    for someone in people.values():
        someone.pages = pages_of(app, someone.key)
    ids = {"cycle": cycle, "team": team, "plain": plain, "target": target, "kr": kr, "checkin": checkin,
           "comment": comment, "kr_comment": kr_comment, "initiative": initiative, "connection": connection,
           "child": child, "child_kr": child_kr, "link": link, "board_token": board_token,
           "hook": hook["id"], "owner_id": owner.id, "kr_owner_id": people["kr_owner"].id, **secrets}
    hidden = {**secrets, "target id": target, "key result id": kr, "check-in id": checkin, "comment id": comment,
              "key result comment id": kr_comment, "initiative id": initiative}
    return World(ids, people, hidden)


@pytest.fixture(params=VISIBILITIES)
def world(request, app, client, metrics):
    """(visibility, World): the target restricted to that visibility."""
    return request.param, build_world(app, client, request.param, metrics)


def rule_path(world, rule):
    """The path a rule is walked at: its parameters the target's ids, and its query (QUERIES)."""
    if rule.rule in OVERRIDES:
        return OVERRIDES[rule.rule]
    path = rule.rule
    for name in rule.arguments:
        path = re.sub(rf"<(?:[a-z]+:)?{name}>", PARAMETERS[name], path)
    return world.fill(path + QUERIES.get(rule.rule, ""))


def get_as(world, someone, path, client):
    """GET path as someone: /v1 signed with their key, /mcp with their assistant's token, pages in their session;
    / both ways."""
    if path.startswith("/v1"):
        return [client.get(path, headers=signed(someone.key))]
    if path.startswith("/mcp"):
        return [client.get(path, headers={"Authorization": f"Bearer {someone.token}"} if someone.token else {})]
    answers = [someone.pages.get(path, headers=HTML)]
    if path == "/":
        answers.append(client.get(path, headers={**signed(someone.key), "Accept": "application/json"}))
    return answers


def text_of(answer):
    headers = "\n".join(f"{name}: {value}" for name, value in answer.headers.items())
    text = headers + "\n" + answer.get_data(as_text=True)
    answer.close()
    return text


def leaks_in(world, text, asked):
    """The secrets text holds, by label; an id the request itself named (echoed in a 404) is not counted."""
    return sorted(label for label, secret in world.secrets.items() if secret in text and secret not in asked)


def walked_paths(app, world):
    """(path, rule or None): each rule with GET, then EXTRA_PATHS."""
    paths = [(rule_path(world, rule), rule) for rule in app.url_map.iter_rules() if "GET" in rule.methods]
    return paths + [(world.fill(extra), None) for extra in EXTRA_PATHS]


def json_of(answer):
    try:
        return json.loads(answer.get_data(as_text=True))
    except ValueError:
        return None


@pytest.mark.parametrize("person", PEOPLE)
def test_the_walk(app, client, world, person):
    """Every GET of the app as this person: nothing of the target for whoever may not see it (its own resources 404,
    the child's parent null); the target where it is shown for whoever may."""
    visibility, world = world
    someone = world.people[person]
    sees = person in SEES[visibility]
    problems = []
    for path, rule in walked_paths(app, world):
        for answer in get_as(world, someone, path, client):
            where = f"{person} at {visibility}: GET {path} ({answer.status_code})"
            text = text_of(answer)
            if answer.status_code >= 500:
                problems.append(f"{where}: a server error")
            if sees:
                continue
            leaked = leaks_in(world, text, path)
            if leaked:
                problems.append(f"{where} leaks {', '.join(leaked)}")
            if rule is not None and any(name in rule.arguments for name in OWN_RESOURCES):
                if answer.status_code != 404:
                    problems.append(f"{where}: the hidden objective's own resource answers {answer.status_code}, "
                                    "not 404")
    child = client.get(world.fill("/v1/objectives/{child}"), headers=signed(someone.key))
    parent = (child.get_json() or {}).get("parent_objective_id")
    expected = world.ids["target"] if sees else None
    if parent != expected:
        problems.append(f"{person} at {visibility}: /v1/objectives/:child's parent_objective_id is {parent!r}, "
                        f"not {expected!r}")
    if sees:
        for shown in SHOWN:
            path = world.fill(shown)
            answer = get_as(world, someone, path, client)[0]
            text = answer.get_data(as_text=True)
            answer.close()
            if world.ids["name"] not in text:
                problems.append(f"{person} at {visibility} may see it, but GET {path} ({answer.status_code}) does "
                                "not show its name")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def test_every_route_is_walked_or_skipped(app):
    """Each rule's GET is walked (test_the_walk); each write on the target's own resources is tried
    (test_the_outsider_changes_nothing); every other (rule, method) is in SKIPPED, with its reason."""
    unwalked = []
    for rule in app.url_map.iter_rules():
        assert set(rule.arguments) <= set(PARAMETERS), f"{rule.rule}: no id to walk it with (PARAMETERS)"
        for method in sorted(rule.methods - {"GET", "HEAD", "OPTIONS"}):
            if (rule.rule, method) not in SKIPPED and not is_own(rule):
                unwalked.append(f"{method} {rule.rule}")
    assert not unwalked, "routes neither walked nor skipped with a reason (SKIPPED): " + ", ".join(unwalked)
    rules = {(rule.rule, method) for rule in app.url_map.iter_rules() for method in rule.methods}
    stale = [f"{method} {rule}" for rule, method in SKIPPED if (rule, method) not in rules]
    assert not stale, "SKIPPED names routes the app no longer has: " + ", ".join(stale)


def is_own(rule):
    """Whether a rule's path names one of the target's own resources."""
    return any(name in rule.arguments for name in OWN_RESOURCES)


# The bodies of the writes the outsider tries: valid ones, so that what refuses them is the objective's sight.
BODIES = {
    ("/v1/objectives/<objective_id>", "POST"): {"name": "Hacked", "cycle_id": "{cycle}", "is_company": False,
                                                "is_personal": False},
    ("/v1/objectives/<objective_id>", "PATCH"): {"name": "Hacked", "visibility": "everyone"},
    ("/v1/objectives/<objective_id>/comments", "POST"): {"body": "Hacked"},
    ("/v1/objectives/<objective_id>/keyresults", "POST"): {"name": "Hacked", "type": "positive",
                                                           "target_value_min": "10"},
    ("/v1/keyresults/<key_result_id>", "POST"): {"name": "Hacked", "type": "positive", "target_value_min": "10",
                                                 "objective_id": "{target}"},
    ("/v1/keyresults/<key_result_id>", "PATCH"): {"name": "Hacked"},
    ("/v1/keyresults/<key_result_id>/checkins", "POST"): {"value": "9"},
    ("/v1/keyresults/<key_result_id>/comments", "POST"): {"body": "Hacked"},
    ("/v1/keyresults/<key_result_id>/initiatives", "POST"): {"name": "Hacked"},
    ("/v1/keyresults/<key_result_id>/source", "PUT"): {"connection_id": "{connection}", "query": "SELECT 1"},
    ("/v1/keyresults/<key_result_id>/source/fill", "POST"): {"step": "weekly"},
    ("/v1/checkins/<checkin_id>", "PATCH"): {"value": "9"},
    ("/v1/comments/<comment_id>", "PATCH"): {"body": "Hacked"},
    ("/v1/initiatives/<initiative_id>", "PATCH"): {"name": "Hacked"},
    ("/objectives/<objective_id>/edit", "POST"): {"name": "Hacked", "cycle_id": "{cycle}", "kind": "team"},
    ("/objectives/<objective_id>/comments", "POST"): {"body": "Hacked"},
    ("/keyresults/<key_result_id>", "POST"): {"value": "9"},
    ("/keyresults/<key_result_id>/comments", "POST"): {"body": "Hacked"},
    ("/keyresults/<key_result_id>/edit", "POST"): {"name": "Hacked", "type": "positive", "target_value_min": "10"},
    ("/keyresults/<key_result_id>/initiatives", "POST"): {"name": "Hacked"},
    ("/keyresults/<key_result_id>/source", "POST"): {"connection_id": "{connection}", "query": "SELECT 1"},
    ("/checkins/<checkin_id>/edit", "POST"): {"value": "9"},
    ("/comments/<comment_id>/edit", "POST"): {"body": "Hacked"},
    ("/initiatives/<initiative_id>/edit", "POST"): {"name": "Hacked"},
    ("/initiatives/<initiative_id>/state", "POST"): {"state": "done"},
}
KEPT_TABLES = ("objectives", "key_results", "checkins", "comments", "initiatives", "sources", "evidence", "events")


def filled(world, value):
    if isinstance(value, dict):
        return {name: filled(world, item) for name, item in value.items()}
    return world.fill(value) if isinstance(value, str) else value


def stored(app):
    """The tables of OKRs as stored, and what a service key reads of the target."""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return {table: db.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall() for table in KEPT_TABLES}


def service_view(world, client):
    service = world.people["service"]
    paths = ("/v1/objectives/{target}/report", "/v1/keyresults/{kr}/checkins", "/v1/objectives/{target}/comments",
             "/v1/keyresults/{kr}/comments", "/v1/keyresults/{kr}/initiatives", "/v1/keyresults/{kr}/source")
    return {path: client.get(world.fill(path), headers=signed(service.key)).get_data(as_text=True) for path in paths}


@pytest.fixture(params=("team", "private"))
def hidden_world(request, app, client, metrics):
    """(visibility, World) at the visibilities that hide the target from the outsider."""
    return request.param, build_world(app, client, request.param, metrics)


# The order deletes are tried in, last: what a key result holds, then the key result, then the objective (so that a
# delete that went through does not hide what the later writes would do).
DELETED_LAST = ("checkin_id", "comment_id", "initiative_id", "key_result_id", "objective_id")


def own_writes(app):
    """(rule, method) of every write on the target's own resources: changes first, deletes last, leaves first."""
    writes = [(rule, method) for rule in app.url_map.iter_rules() if is_own(rule)
              for method in sorted(rule.methods - {"GET", "HEAD", "OPTIONS"})]

    def order(write):
        rule, method = write
        deletes = method == "DELETE" or rule.rule.endswith("/delete")
        holder = min(DELETED_LAST.index(name) for name in rule.arguments if name in DELETED_LAST)
        return (deletes, holder if deletes else 0, rule.rule, method)
    return sorted(writes, key=order)


def test_the_outsider_changes_nothing(app, client, hidden_world):
    """Every write on the hidden target's own resources, through /v1 and the pages, by an editor who may not see
    it: 404, nothing of it in the answer, and nothing changed (as stored, and as a service key reads it)."""
    visibility, world = hidden_world
    outsider = world.people["outsider"]
    csrf = csrf_of(outsider.pages, "/account")
    problems = []
    for rule, method in own_writes(app):
        if True:
            path = rule_path(world, rule)
            body = filled(world, BODIES.get((rule.rule, method)))
            before, seen_before = stored(app), service_view(world, client)
            if path.startswith("/v1"):
                answer = api(client, outsider, method, path, body)
            else:
                answer = outsider.pages.open(path, method=method, headers=HTML,
                                             data={"csrf_token": csrf, **(body or {})})
            where = f"outsider at {visibility}: {method} {path} ({answer.status_code})"
            leaked = leaks_in(world, text_of(answer), path)
            if answer.status_code != 404:
                problems.append(f"{where}: not 404")
            if leaked:
                problems.append(f"{where} leaks {', '.join(leaked)}")
            after, seen_after = stored(app), service_view(world, client)
            changed = [table for table in KEPT_TABLES if before[table] != after[table]]
            changed += [path for path in seen_before if seen_before[path] != seen_after[path]]
            if changed:
                problems.append(f"{where} changed {', '.join(changed)}")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


@pytest.mark.parametrize("parent", ["omitted", "null"])
def test_an_update_from_who_cannot_see_the_parent_keeps_it(app, client, hidden_world, parent):
    """The outsider updates the visible child with the spec's POST, without its parent or with null: they read
    null, and the stored parent stays the hidden target."""
    visibility, world = hidden_world
    outsider, service = world.people["outsider"], world.people["service"]
    body = {"name": "Child renamed", "cycle_id": world.ids["cycle"], "is_company": False, "is_personal": False,
            **({"parent_objective_id": None} if parent == "null" else {})}
    answer = api(client, outsider, "POST", world.fill("/v1/objectives/{child}"), body)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert answer.get_json()["parent_objective_id"] is None, f"at {visibility} the outsider reads the hidden parent"
    assert world.ids["target"] not in text_of(answer)
    kept = ok(api(client, service, "GET", world.fill("/v1/objectives/{child}")))
    assert kept["name"] == "Child renamed"
    assert kept["parent_objective_id"] == world.ids["target"], (
        f"at {visibility} the outsider's update ({parent} parent) unlinked the child from the hidden parent")


def same_answer(first, second, unknown, target):
    return (first.status_code, first.get_data(as_text=True).replace(target, unknown)) == \
        (second.status_code, second.get_data(as_text=True))


def test_a_hidden_parent_cannot_be_named(app, client, hidden_world):
    """Naming the hidden target as a new objective's parent or a new key result's objective answers as an unknown
    id does (nothing made, nothing of it told), through /v1 and the pages."""
    visibility, world = hidden_world
    outsider = world.people["outsider"]
    target, cycle = world.ids["target"], world.ids["cycle"]
    csrf = csrf_of(outsider.pages, "/account")
    problems = []
    for name, send in (
            ("POST /v1/objectives", lambda parent: api(client, outsider, "POST", "/v1/objectives", {
                "name": "Probe", "cycle_id": cycle, "parent_objective_id": parent, "is_company": False,
                "is_personal": False})),
            ("POST /objectives/new", lambda parent: outsider.pages.post("/objectives/new", headers=HTML, data={
                "csrf_token": csrf, "name": "Probe", "cycle_id": cycle, "kind": "team",
                "parent_objective_id": parent})),
            ("POST /keyresults/new", lambda parent: outsider.pages.post("/keyresults/new", headers=HTML, data={
                "csrf_token": csrf, "objective_id": parent, "name": "Probe", "type": "positive",
                "target_value_min": "10"}))):
        before = stored(app)
        hidden, unknown = send(target), send(UNKNOWN)
        where = f"outsider at {visibility}: {name} naming the hidden objective ({hidden.status_code})"
        if hidden.status_code < 400:
            problems.append(f"{where}: taken")
        elif not same_answer(hidden, unknown, UNKNOWN, target):
            problems.append(f"{where}: answers otherwise than for an unknown id ({unknown.status_code})")
        leaked = leaks_in(world, text_of(hidden), target)
        if leaked:
            problems.append(f"{where} leaks {', '.join(leaked)}")
        if stored(app)["objectives"] != before["objectives"] or stored(app)["key_results"] != before["key_results"]:
            problems.append(f"{where}: something was made")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def hidden_counts(value):
    """The figures of any field whose name speaks of hidden objectives, anywhere in a JSON answer."""
    found = []
    if isinstance(value, dict):
        for name, item in value.items():
            if "hidden" in name and isinstance(item, int) and not isinstance(item, bool):
                found.append(item)
            found += hidden_counts(item)
    elif isinstance(value, list):
        for item in value:
            found += hidden_counts(item)
    return found


def test_roll_ups_count_the_hidden_objective_without_showing_it(app, client, hidden_world):
    """The cycle's progress and the parent's (the plain objective, whose child the target is) are the same figure
    for the outsider as for the admin; the outsider's report and pages say they include 1 objective they cannot
    see; the admin's do not."""
    visibility, world = hidden_world
    outsider, admin = world.people["outsider"], world.people["admin"]
    problems = []
    for path, progress in (("/v1/cycles/{cycle}/report", lambda report: report.get("progress")),
                           ("/v1/objectives/{plain}/report", lambda report: report["objective"]["progress"])):
        path = world.fill(path)
        theirs, admins = ok(api(client, outsider, "GET", path)), ok(api(client, admin, "GET", path))
        if progress(theirs) != progress(admins):
            problems.append(f"{path}: the outsider's progress {progress(theirs)} is not the admin's "
                            f"{progress(admins)}")
        if 1 not in hidden_counts(theirs):
            problems.append(f"{path}: the outsider's report says nothing of 1 hidden objective "
                            f"(no 'hidden...' field of 1): {sorted(theirs)}")
        if any(hidden_counts(admins)):
            problems.append(f"{path}: the admin's report counts hidden objectives {hidden_counts(admins)}")
    path = world.fill("/v1/cycles/{cycle}/report")
    for someone, expected in ((outsider, 2), (admin, 3)):  # the plain objective, the child (and the target)
        counts = {name: ok(api(client, someone, "GET", path)).get(name)
                  for name in ("objectives_count", "key_results_count")}
        if counts != {"objectives_count": expected, "key_results_count": expected}:
            problems.append(f"{path}: the {someone.name}'s counts are {counts}, not {expected} of each they see")
    for path in ("/cycles/{cycle}", "/objectives/{plain}"):
        path = world.fill(path)
        theirs = outsider.pages.get(path, headers=HTML).get_data(as_text=True)
        if not re.search(r"includes\s+1\s+objective\s+you\s+cannot\s+see", theirs):
            problems.append(f"{path}: the outsider's page does not say it includes 1 objective they cannot see")
        if "you cannot see" in admin.pages.get(path, headers=HTML).get_data(as_text=True):
            problems.append(f"{path}: the admin's page speaks of objectives they cannot see")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def mcp(client, someone, method, params):
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return client.post("/mcp", data=json.dumps(message), headers={**MCP_HEADERS,
                                                                  "Authorization": f"Bearer {someone.token}"})


# The assistants' tools and resources, with the target's ids: reads and writes.
TOOL_CALLS = (
    ("whoami", {}), ("my_week", {}), ("list_cycles", {}), ("cycle_summary", {"cycle_id": "{cycle}"}),
    ("quality_checks", {"cycle_id": "{cycle}"}), ("get_objective", {"objective_id": "{target}"}),
    ("get_objective", {"objective_id": "{child}"}), ("get_objective", {"objective_id": "{plain}"}),
    ("get_key_result", {"key_result_id": "{kr}"}), ("search", {"query": "{name}"}), ("search", {"query": "Zebra"}),
    ("activity", {}), ("activity", {"cycle_id": "{cycle}"}), ("activity", {"team_id": "{team}"}),
    ("check_in", {"key_result_id": "{kr}", "value": "9"}), ("comment", {"body": "Hi", "objective_id": "{target}"}),
    ("comment", {"body": "Hi", "key_result_id": "{kr}"}),
    ("create_key_result", {"objective_id": "{target}", "name": "Probe", "type": "positive", "target": "10"}),
    ("update_objective", {"objective_id": "{target}", "name": "Hacked"}),
    ("update_key_result", {"key_result_id": "{kr}", "name": "Hacked"}),
    ("create_objective", {"name": "Probe", "cycle_id": "{cycle}", "parent_objective_id": "{target}"}),
)
RESOURCES = ("okr://cycles", "okr://cycles/{cycle}", "okr://objectives/{target}", "okr://objectives/{child}",
             "okr://keyresults/{kr}")


@pytest.mark.parametrize("visibility, person", [("team", "outsider"), ("private", "member"), ("private", "outsider")])
def test_the_assistants_tools(app, client, metrics, visibility, person):
    """Every tool and resource of the assistants (MCP, through /mcp in this process), as a person who may not see
    the target: nothing of it, and nothing of it changed; list_cycles counts only the objectives they see."""
    world = build_world(app, client, visibility, metrics)
    someone = world.people[person]
    problems = []
    listed = mcp(client, someone, "tools/call", {"name": "list_cycles", "arguments": {}}).get_json()
    counts = [c["objectives_count"] for c in listed["result"]["structuredContent"]["cycles"]]
    if counts != [2]:
        problems.append(f"{person} at {visibility}: list_cycles counts {counts} objectives, not the 2 they see "
                        "(the plain one and the child)")
    before = stored(app)
    calls = [("tools/call", {"name": name, "arguments": filled(world, arguments)}) for name, arguments in TOOL_CALLS]
    calls += [("resources/read", {"uri": world.fill(uri)}) for uri in RESOURCES]
    for method, params in calls:
        answer = mcp(client, someone, method, params)
        asked = json.dumps(params)
        where = f"{person} at {visibility}: {method} {asked} ({answer.status_code})"
        leaked = leaks_in(world, text_of(answer), asked)
        if leaked:
            problems.append(f"{where} leaks {', '.join(leaked)}")
    changed = [table for table in KEPT_TABLES if table != "events" and stored(app)[table] != before[table]]
    if changed:
        problems.append(f"{person} at {visibility}: the tools changed {', '.join(changed)}")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def test_weekly_emails_tell_nothing_of_what_their_reader_cannot_see(app, client, hidden_world):
    """The weekly reminders and team digests (okr.outbound.weekly_emails.plan): none to a person who may not see
    the target names it (at private, its team's member gets the team's digest)."""
    from datetime import datetime, timezone

    from okr.db import get_db
    from okr.outbound import weekly_emails

    visibility, world = hidden_world
    names = {someone.id: name for name, someone in world.people.items() if someone.user is not None}
    with app.test_request_context():
        emails = weekly_emails.plan(get_db(), datetime.now(timezone.utc), None)
    assert any(world.ids["name"] in email.body for email in emails if names.get(email.person["id"]) == "owner"), \
        "the owner's weekly digest names the target"
    problems = []
    for email in emails:
        name = names.get(email.person["id"])
        if name in SEES[visibility]:
            continue
        leaked = leaks_in(world, email.subject + "\n" + email.body, "")
        if leaked:
            problems.append(f"{name} at {visibility}: the weekly {email.kind} leaks {', '.join(leaked)}")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
