"""Your week at / for a signed-in person: the key results they own or whose objective is theirs, in current
cycles, those needing an update first, each with an inline check-in form; their teams' objectives; and how to
start when nothing is theirs."""
import re
import sqlite3
from contextlib import closing

import pytest

from helpers import create_key, make_cycle, make_key_result, make_objective, make_team, signed, statements_of
from html_tree import BROWSER, parse
from okr.reports import alignment
from okr.accounts import passwords
from okr.db import get_db, transaction
from okr.progress import parse_timestamp
from okr.store import team_members, users

pytestmark = pytest.mark.usefixtures("fast_hashing")

PASSWORD = "correct horse battery"
NOW = "2026-03-01T09:00:00Z"


def sql(app, statement, *params):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        return db.execute(statement, params).fetchall()


def person(app, name, email, role="editor"):
    """A user made through the store (no password yet: the API stays open while the data is made)."""
    with app.app_context(), transaction() as db:
        return dict(users.create(db, name, email, role))


def give_password(app, user):
    with app.app_context(), transaction() as db:
        users.set_password(db, user, passwords.hash_password(PASSWORD))


def csrf(client, path="/login"):
    page = client.get(path, headers=BROWSER)
    return re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True)).group(1)


def sign_in(client, email):
    response = client.post("/login", data={"csrf_token": csrf(client), "email": email, "password": PASSWORD,
                                           "next": "/"})
    assert response.status_code == 303, response.get_data(as_text=True)[:2000]


def page(client, path="/", status=200):
    response = client.get(path, headers=BROWSER)
    body = response.get_data(as_text=True)
    assert response.status_code == status, (response.status_code, body[:3000])
    return parse(body)


def dated(app, cycle, starts_on, ends_on):
    sql(app, "UPDATE cycles SET starts_on = ?, ends_on = ? WHERE id = ?", starts_on, ends_on, cycle["id"])


def own(app, key_result, user):
    sql(app, "UPDATE key_results SET owner_id = ? WHERE id = ?", user["id"], key_result["id"])


def checkin(client, key_result, value, confidence="0.8"):
    response = client.post(f"/v1/keyresults/{key_result['id']}/checkins",
                           json={"value": value, "confidence": confidence})
    assert response.status_code == 200, response.get_json()


@pytest.fixture
def week(app, client, clock):
    """Ada's week on 2026-03-01: cycle "Now" (Q1 2026) holds an objective assigned to her (key results "old",
    last checked in 10 days ago, and "fresh", yesterday), a key result she owns that nobody updated since it
    was made ("owned"), Bob's key result, and a Platform objective (Ada is in Platform); "Later" (Q2) and
    "Done" (Q4 2025) hold objectives assigned to her too."""
    clock.now = "2026-02-01T09:00:00Z"
    ada = person(app, "Ada Lovelace", "ada@example.com")
    bob = person(app, "Bob Builder", "bob@example.com")
    platform = make_team(client, "Platform")
    with app.app_context(), transaction() as db:
        team_members.add(db, platform["id"], ada["id"])
    now, later, done = (make_cycle(client, name) for name in ("Now", "Later", "Done"))
    dated(app, now, "2026-01-01", "2026-03-31")
    dated(app, later, "2026-04-01", "2026-06-30")
    dated(app, done, "2025-10-01", "2025-12-31")
    mine = make_objective(client, now["id"], "Ship the app", assignee_id=ada["id"])
    other = make_objective(client, now["id"], "Grow revenue")
    teams = make_objective(client, now["id"], "Keep servers calm", team_id=platform["id"])
    kr = {
        "old": make_key_result(client, mine["id"], "Close old bugs", current_value="0", target_value_min="10"),
        "fresh": make_key_result(client, mine["id"], "Write the docs", current_value="0", target_value_min="4"),
        "owned": make_key_result(client, other["id"], "Sign 5 customers", current_value="0",
                                 target_value_min="5"),
        "bobs": make_key_result(client, other["id"], "Bob's deal", current_value="0", target_value_min="1"),
        "team": make_key_result(client, teams["id"], "Uptime", current_value="0", target_value_min="10"),
        "later": make_key_result(client, make_objective(client, later["id"], "Later", assignee_id=ada["id"])["id"],
                                 "Next quarter's", current_value="0", target_value_min="1"),
        "done": make_key_result(client, make_objective(client, done["id"], "Done", assignee_id=ada["id"])["id"],
                                "Last quarter's", current_value="0", target_value_min="1"),
    }
    own(app, kr["owned"], ada)
    own(app, kr["bobs"], bob)
    clock.now = "2026-02-19T09:00:00Z"
    checkin(client, kr["old"], "3")
    checkin(client, kr["team"], "5")
    clock.now = "2026-02-28T09:00:00Z"
    checkin(client, kr["fresh"], "2", "0.5")
    clock.now = NOW
    give_password(app, ada)
    give_password(app, bob)
    return {"ada": ada, "bob": bob, "platform": platform, "cycles": {"now": now, "later": later, "done": done},
            "objectives": {"mine": mine, "other": other, "teams": teams}, "kr": kr}


def week_items(doc):
    return doc.one("ul", cls="week").find_all("li", prune=lambda el: el.tag == "li")


def item_of(doc, key_result):
    [item] = [li for li in week_items(doc) if li.attrs.get("id") == f"kr-{key_result['id']}"]
    return item


def test_week_shows_the_key_results_a_person_owns_or_whose_objective_is_theirs_in_current_cycles(client, week):
    sign_in(client, "ada@example.com")
    doc = page(client)
    assert "Your week" in doc.one("h1").text
    shown = {li.attrs["id"] for li in week_items(doc)}
    assert shown == {f"kr-{week['kr'][name]['id']}" for name in ("old", "fresh", "owned")}, shown
    item = item_of(doc, week["kr"]["owned"])
    assert item.find_all("a", href=f"/keyresults/{week['kr']['owned']['id']}")
    assert "Grow revenue" in item.text and "Now" in item.text


def test_week_puts_the_key_results_needing_an_update_first(client, week):
    sign_in(client, "ada@example.com")
    doc = page(client)
    order = [li.attrs["id"] for li in week_items(doc)]
    assert order[2] == f"kr-{week['kr']['fresh']['id']}", order
    assert set(order[:2]) == {f"kr-{week['kr']['old']['id']}", f"kr-{week['kr']['owned']['id']}"}
    for name, waiting in (("old", True), ("owned", True), ("fresh", False)):
        item = item_of(doc, week["kr"][name])
        assert ("needs-update" in item.classes) == waiting, name
        assert ("needs an update" in item.text) == waiting, name
    owned = item_of(doc, week["kr"]["owned"])
    assert "no_update" in owned.classes and "no update yet" in owned.text


def test_week_figures_are_the_reports(app, client, week):
    sign_in(client, "ada@example.com")
    doc = page(client)
    with app.test_request_context():
        node = alignment.key_result_report(get_db(), week["kr"]["fresh"]["id"], parse_timestamp(NOW))
    item = item_of(doc, week["kr"]["fresh"])
    assert node["progress"] == "0.50"
    assert float(item.one("progress").attrs["value"]) == float(node["progress"])
    assert "2 of 4" in re.sub(r"(\d)\.0+\b", r"\1", item.text) and "50% confidence" in item.text


def test_week_lists_the_teams_objectives_with_progress(app, client, week):
    sign_in(client, "ada@example.com")
    doc = page(client)
    [section] = doc.find_all("section", cls="team-week")
    assert "Platform" in section.one("h3").text
    assert section.find_all("a", href=f"/objectives/{week['objectives']['teams']['id']}")
    assert "Keep servers calm" in section.text and "50%" in section.text
    assert "Grow revenue" not in section.text  # not the team's
    assert section.find_all("a", href=f"/cycles/{week['cycles']['now']['id']}?team_id={week['platform']['id']}")
    assert doc.find_all("a", href="/cycles"), "no link to all cycles"


def test_an_inline_check_in_records_and_returns_to_the_week(app, client, week):
    sign_in(client, "ada@example.com")
    doc = page(client)
    form = item_of(doc, week["kr"]["old"]).one("form")
    assert form.attrs["method"] == "post" and form.attrs["action"] == f"/keyresults/{week['kr']['old']['id']}"
    for name in ("value", "confidence", "comment"):
        control = form.one("input", name=name)
        assert form.find_all("label", **{"for": control.attrs["id"]}), name
    fields = {i.attrs["name"]: i.attrs.get("value", "") for i in form.find_all("input")}
    assert fields["next"] == "/" and fields["csrf_token"]
    response = client.post(form.attrs["action"], data={**fields, "value": "7", "confidence": "60%",
                                                        "comment": "halfway"})
    assert response.status_code == 303 and response.headers["Location"] == "/"
    assert sql(app, "SELECT comment, author_id FROM checkins ORDER BY seq DESC LIMIT 1") == [
        ("halfway", week["ada"]["id"])]
    assert "needs-update" not in item_of(page(client), week["kr"]["old"]).classes


def test_a_refused_inline_check_in_shows_the_message_beside_its_field(app, client, week):
    sign_in(client, "ada@example.com")
    before = sql(app, "SELECT count(*) FROM checkins")
    response = client.post(f"/keyresults/{week['kr']['owned']['id']}",
                           data={"csrf_token": csrf(client, "/"), "next": "/", "value": "lots",
                                 "confidence": "0.7", "comment": "typed"}, headers=BROWSER)
    assert response.status_code == 400
    doc = parse(response.get_data(as_text=True))
    assert "Your week" in doc.one("h1").text
    item = item_of(doc, week["kr"]["owned"])
    value = item.one("input", name="value")
    assert value.attrs["value"] == "lots" and value.attrs.get("aria-invalid") == "true"
    [error] = item.find_all("p", cls="error")
    assert error.attrs["id"] == value.attrs["aria-describedby"]
    assert item.one("input", name="comment").attrs["value"] == "typed"
    for name in ("old", "fresh"):  # the other forms stay as they were
        other = item_of(doc, week["kr"][name])
        assert not other.find_all("p", cls="error") and other.one("input", name="value").attrs["value"] == ""
    assert sql(app, "SELECT count(*) FROM checkins") == before


@pytest.mark.parametrize("target", ["https://elsewhere.example/", "//elsewhere.example/x", "/../x"])
def test_a_check_in_returns_only_to_a_path_of_this_app(client, week, target):
    sign_in(client, "ada@example.com")
    response = client.post(f"/keyresults/{week['kr']['old']['id']}",
                           data={"csrf_token": csrf(client, "/"), "next": target, "value": "4"})
    assert response.status_code == 303 and response.headers["Location"] == "/"


def test_a_check_in_from_the_key_result_page_still_returns_there(client, week):
    sign_in(client, "ada@example.com")
    response = client.post(f"/keyresults/{week['kr']['old']['id']}", data={"csrf_token": csrf(client, "/"),
                                                                          "value": "4"})
    assert response.status_code == 303 and response.headers["Location"] == f"/keyresults/{week['kr']['old']['id']}"


def test_a_viewer_sees_the_week_without_check_in_forms(app, client, week):
    sql(app, "UPDATE users SET role = 'viewer' WHERE id = ?", week["ada"]["id"])
    sign_in(client, "ada@example.com")
    doc = page(client)
    assert len(week_items(doc)) == 3
    assert doc.one("main").find_all("form") == []


def test_with_nothing_assigned_the_week_says_how_to_start(app, client, week):
    person(app, "Cy New", "cy@example.com")
    give_password(app, users_row(app, "cy@example.com"))
    sign_in(client, "cy@example.com")
    doc = page(client)
    assert doc.find_all("ul", cls="week") == []
    text = doc.one("main").text
    assert "Nothing is yours" in text and "owner" in text
    assert doc.find_all("a", href=f"/objectives/new?cycle_id={week['cycles']['now']['id']}"), "no way to start"


def test_a_viewer_with_nothing_assigned_is_not_offered_to_create(app, client, week):
    person(app, "Vi Ewer", "vi@example.com", "viewer")
    give_password(app, users_row(app, "vi@example.com"))
    sign_in(client, "vi@example.com")
    doc = page(client)
    assert "Nothing is yours" in doc.text
    assert not [a for a in doc.find_all("a") if "/new" in (a.attrs.get("href") or "")]


def users_row(app, email):
    with app.app_context(), closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.row_factory = sqlite3.Row
        return dict(db.execute("SELECT * FROM users WHERE email = ?", (email,)).fetchone())


def test_the_week_takes_as_many_queries_for_50_key_results_as_for_3(app, client, runner, week):
    sign_in(client, "ada@example.com")
    few = statements_of(app, client, lambda: client.get("/", headers=BROWSER))
    key = create_key(runner)  # 47 more of Ada's key results, over the API (which now wants signed requests)
    for n in range(47):
        response = client.post(f"/v1/objectives/{week['objectives']['mine']['id']}/keyresults", headers=signed(key),
                               json={"name": f"More {n}", "type": "positive", "target_value_min": "5"})
        assert response.status_code == 200, response.get_json()
    doc = parse(client.get("/", headers=BROWSER).get_data(as_text=True))
    assert len(week_items(doc)) == 50
    many = statements_of(app, client, lambda: client.get("/", headers=BROWSER))
    assert len(many) == len(few), (len(few), len(many))


def upcoming_items(doc):
    return [(li.one("a").text, li.one("time").attrs["datetime"])
            for li in doc.one("ul", cls="upcoming").find_all("li", prune=lambda el: el.tag == "li")]


def test_with_none_in_a_current_cycle_the_week_lists_the_key_results_to_come_and_when(app, client, week):
    cy = person(app, "Cy New", "cy@example.com")
    own(app, week["kr"]["later"], cy)
    give_password(app, users_row(app, "cy@example.com"))
    sign_in(client, "cy@example.com")
    doc = page(client)
    assert upcoming_items(doc) == [("Next quarter's", "2026-04-01")]
    text = doc.one("main").text
    assert "None of them is in the current cycle; this one starts later." in " ".join(text.split())
    assert "starts on 1 Apr 2026" in " ".join(text.split()) and "No cycle is running" not in text


def test_with_no_cycle_running_the_week_lists_them_soonest_cycle_first(app, client, week):
    dated(app, week["cycles"]["now"], "2026-03-15", "2026-03-31")  # starts in two weeks: nothing runs today
    sign_in(client, "ada@example.com")
    doc = page(client)
    assert upcoming_items(doc) == [("Close old bugs", "2026-03-15"), ("Write the docs", "2026-03-15"),
                                   ("Sign 5 customers", "2026-03-15"), ("Next quarter's", "2026-04-01")]
    assert "No cycle is running today; these start later." in " ".join(doc.one("main").text.split())
    assert "Last quarter's" not in doc.text


def test_the_key_results_to_come_are_not_shown_beside_current_ones(client, week):
    sign_in(client, "ada@example.com")
    doc = page(client)
    assert not doc.find_all("ul", cls="upcoming") and "Next quarter's" not in doc.text
