"""The Activity page (issue 24): every change newest first, as sentences for people, with links to what still
exists; filters by team, person (their key and their session alike) and cycle; 50 to a page; read by
viewers; names escaped; a check-in's key result update folded into it."""
import re
from contextlib import closing

import pytest

from edit_forms import get, post_form
from helpers import TIMESTAMP, make_cycle, make_key_result, make_objective, make_team, signed
from html_tree import BROWSER
from okr.reports import activity as activity_feed
from okr.accounts import passwords
from okr.db import transaction
from okr.store.schema import connect
from okr.store import keys, users

pytestmark = pytest.mark.usefixtures("fast_hashing")

PASSWORD = "correct horse battery"


def sentences(tree):
    """The sentences of a page's events, in page order."""
    return [item.one("p", cls="what").text for item in tree.one("ol", cls="activity").find_all("li")]


def chosen(form, name):
    return [o.attrs["value"] for o in form.one("select", name=name).find_all("option") if "selected" in o.attrs]


def activity(client, query="", status=200):
    return get(client, "/activity" + query, status)


def person(app, name, email, role="editor", key=False):
    """A user with a password (and a key of theirs, {credential, secret}, when key): made through the store."""
    with app.app_context(), transaction() as db:
        user = users.create(db, name, email, role)
        users.set_password(db, user, passwords.hash_password(PASSWORD))
        made = {"id": user["id"], "name": name, "email": email}
        if key:
            credential, secret = keys.create(db, f"{name}'s key", False, user["id"])
            made["key"] = {"credential": credential, "secret": secret}
    return made


def signed_in(app, email):
    """A test client of its own with a password session of the user with email."""
    client = app.test_client()
    page = client.get("/login", headers=BROWSER).get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    response = client.post("/login", data={"csrf_token": csrf, "email": email, "password": PASSWORD, "next": "/"})
    assert response.status_code == 303
    return client


def test_changes_through_the_api_are_listed_newest_first_as_sentences(client):
    cycle = make_cycle(client, "Q3")
    team = make_team(client, "Platform")
    objective = make_objective(client, cycle["id"], "Grow revenue", team_id=team["id"])
    assert client.patch(f"/v1/objectives/{objective['id']}", json={"name": "Grow ARR"}).status_code == 200
    key_result = make_key_result(client, objective["id"], "Reach 100 customers")
    assert client.post(f"/v1/keyresults/{key_result['id']}/checkins",
                       json={"value": "42", "confidence": "0.8", "comment": "Two big deals"}).status_code == 200
    tree = activity(client)
    assert sentences(tree) == [
        "Someone (sign-in off) checked in 42 (confidence 80%) on key result “Reach 100 customers”",
        "Someone (sign-in off) added key result “Reach 100 customers” to objective “Grow ARR”",
        "Someone (sign-in off) renamed objective “Grow revenue” → “Grow ARR”",
        "Someone (sign-in off) created objective “Grow revenue”",
        "Someone (sign-in off) created team “Platform”",
        "Someone (sign-in off) created cycle “Q3”",
    ]
    first = tree.one("ol", cls="activity").find_all("li")[0]
    assert first.one("p", cls="note").text == "Two big deals"
    assert first.one("a").attrs["href"] == f"/keyresults/{key_result['id']}"
    when = first.one("time")  # as the check-in history shows times: words, the exact UTC time kept
    assert TIMESTAMP.fullmatch(when.attrs["datetime"]) and when.attrs["title"] == when.attrs["datetime"]
    assert when.text == "just now"
    assert tree.one("nav", aria_label="Site").one("a", href="/activity").text == "Activity"


def test_a_check_ins_key_result_update_reads_as_the_check_in_and_other_changes_stay(client, key_result):
    path = f"/v1/keyresults/{key_result['id']}"
    assert client.post(f"{path}/checkins", json={"value": "7"}).status_code == 200
    assert client.patch(path, json={"name": "Reach more", "current_value": "8"}).status_code == 200
    assert sentences(activity(client))[:3] == [
        "Someone (sign-in off) checked in 8 (confidence 80%) on key result “Reach more”",
        "Someone (sign-in off) renamed key result “Reach 500 customers” → “Reach more”",
        "Someone (sign-in off) checked in 7 (confidence 80%) on key result “Reach more”",
    ]


def feed_sentences(app):
    """The feed's sentences as okr.reports.activity says them, without a page (an API key makes the pages want one)."""
    with closing(connect(app.config["DATABASE"], 1000)) as db:
        entries, _ = activity_feed.feed(db)
        names = activity_feed.names(db, entries)
        return [activity_feed.text(activity_feed.sentence(event, names)) for event in entries]


def test_team_members_people_and_keys_have_their_sentences(app, client, runner):
    team = make_team(client, "Platform")
    result = runner.invoke(args=["users", "add", "--name", "Bob Builder", "--email", "bob@example.com"])
    bob = re.search(r'"id": "([^"]+)"', result.output).group(1)
    assert client.put(f"/v1/teams/{team['id']}/members/{bob}").status_code == 200
    assert client.delete(f"/v1/teams/{team['id']}/members/{bob}").status_code == 200
    with app.app_context(), transaction() as db:
        users.set_role(db, users.get(db, bob), "viewer")
        credential, _ = keys.create(db, "wallboard", True)
        keys.revoke(db, credential)
    assert feed_sentences(app) == [
        "The service revoked the API key “wallboard”",
        "The service created the API key “wallboard”",
        "The service made Bob Builder a viewer",
        "Someone (sign-in off) removed Bob Builder from team “Platform”",
        "Someone (sign-in off) added Bob Builder to team “Platform”",
        "The command “okr users add” added Bob Builder as an editor",
        "Someone (sign-in off) created team “Platform”",
    ]


def test_the_filters_keep_a_team_and_a_cycle(client):
    q1, q2 = make_cycle(client, "Q1"), make_cycle(client, "Q2")
    red, blue = make_team(client, "Red"), make_team(client, "Blue")
    make_objective(client, q1["id"], "Red in Q1", team_id=red["id"])
    blue_q2 = make_objective(client, q2["id"], "Blue in Q2", team_id=blue["id"])
    make_key_result(client, blue_q2["id"], "Blue result")
    assert sentences(activity(client, f"?team_id={red['id']}")) == [
        "Someone (sign-in off) created objective “Red in Q1”", "Someone (sign-in off) created team “Red”"]
    assert sentences(activity(client, f"?cycle_id={q2['id']}")) == [
        "Someone (sign-in off) added key result “Blue result” to objective “Blue in Q2”",
        "Someone (sign-in off) created objective “Blue in Q2”", "Someone (sign-in off) created cycle “Q2”"]
    both = activity(client, f"?team_id={blue['id']}&cycle_id={q1['id']}")
    assert both.find_all("ol", cls="activity") == []
    assert both.one("section", cls="empty").one("h2").text == "Nothing matches"
    form = both.one("form", cls="filters")
    assert form.attrs["method"] == "get"
    assert chosen(form, "team_id") == [blue["id"]] and chosen(form, "cycle_id") == [q1["id"]]


def test_the_person_filter_keeps_what_they_did_with_their_key_and_their_session(app, client, cycle):
    ada = person(app, "Ada Lovelace", "ada@example.com", key=True)
    person(app, "Bob Builder", "bob@example.com")
    objective = client.post("/v1/objectives", headers=signed(ada["key"]), json={
        "name": "Ada's by key", "cycle_id": cycle["id"], "is_company": False, "is_personal": False}).get_json()
    ada_pages, bob_pages = signed_in(app, "ada@example.com"), signed_in(app, "bob@example.com")
    assert post_form(ada_pages, f"/objectives/{objective['id']}/delete",
                     f"/objectives/{objective['id']}/delete").status_code == 303
    assert post_form(bob_pages, "/teams/new", "/teams/new", name="Bob's team").status_code == 303
    adas = sentences(activity(bob_pages, f"?person_id={ada['id']}"))
    assert adas == ["Ada Lovelace deleted objective “Ada's by key”",
                    "Ada Lovelace (with the API key “Ada Lovelace's key”) created objective “Ada's by key”"]
    assert sentences(activity(ada_pages))[0] == "Bob Builder created team “Bob's team”"
    options = activity(ada_pages).one("select", name="person_id").find_all("option")
    assert [o.text for o in options] == ["Everyone", "Ada Lovelace", "Bob Builder"]


def test_fifty_to_a_page_with_an_older_link_that_keeps_the_filter(client):
    team = make_team(client, "Busy")
    for number in range(54):
        assert client.post(f"/v1/teams/{team['id']}", json={"name": f"Busy {number}"}).status_code == 200
    make_team(client, "Other")
    first = activity(client, f"?team_id={team['id']}")
    assert len(sentences(first)) == 50
    assert sentences(first)[0] == "Someone (sign-in off) renamed team “Busy 52” → “Busy 53”"
    older = first.one("p", cls="older").one("a").attrs["href"]
    assert older.startswith("/activity?") and f"team_id={team['id']}" in older
    second = get(client, older)
    assert sentences(second)[-1] == "Someone (sign-in off) created team “Busy”"
    assert len(sentences(second)) == 5 and second.find_all("p", cls="older") == []
    assert len(sentences(activity(client))) == 50


def test_a_viewer_reads_the_activity_page(app, client, objective):
    person(app, "Vera Viewer", "vera@example.com", role="viewer")
    viewer = signed_in(app, "vera@example.com")
    tree = activity(viewer)
    assert sentences(tree)[0] == "The service added Vera Viewer as a viewer"
    assert "Someone (sign-in off) created objective “Grow revenue”" in sentences(tree)
    assert tree.find_all("form", cls="filters")
    signed_out = app.test_client().get("/activity", headers=BROWSER)
    assert signed_out.status_code in (302, 303) and "/login" in signed_out.headers["Location"]


def test_names_with_html_are_shown_as_text(client, cycle):
    make_team(client, "<script>alert(1)</script>")
    make_objective(client, cycle["id"], '<img src=x onerror="alert(2)">')
    page = client.get("/activity", headers=BROWSER).get_data(as_text=True)
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;img src=x onerror=" in page


def test_what_was_deleted_is_named_without_a_link(client, cycle):
    objective = make_objective(client, cycle["id"], "Short-lived")
    key_result = make_key_result(client, objective["id"], "Gone too")
    assert client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": "3"}).status_code == 200
    assert client.delete(f"/v1/objectives/{objective['id']}").status_code == 200
    tree = activity(client)
    assert sentences(tree)[:3] == [
        "Someone (sign-in off) deleted objective “Short-lived”",
        "Someone (sign-in off) checked in 3 (confidence 50%) on key result “Gone too”",
        "Someone (sign-in off) added key result “Gone too” to objective “Short-lived”"]
    hrefs = [a.attrs["href"] for a in tree.one("ol", cls="activity").find_all("a")]
    assert hrefs == [f"/cycles/{cycle['id']}"]  # the cycle's creation: the one thing left


def test_an_empty_feed_says_so_and_bad_links_are_refused(client):
    tree = activity(client)
    assert tree.one("section", cls="empty").one("h2").text == "Nothing has happened yet"
    assert activity(client, "?before=abc", status=400)
    assert activity(client, "?team_id=not-an-id", status=400)
