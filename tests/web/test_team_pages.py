"""The team pages (issue 23): /teams, /teams/new, a team's page with its members added and removed and its
objectives, /teams/<id>/edit with its revision conflict and /teams/<id>/delete with its confirmation; viewers
refused, CSRF checked."""
import re
import sqlite3

import pytest

from helpers import make_cycle, make_objective, make_team, statements_of
from edit_forms import get, hidden, post_form
from html_tree import BROWSER, parse
from okr.accounts import passwords
from okr.db import transaction
from okr.store import team_members, users

pytestmark = pytest.mark.usefixtures("fast_hashing")

PASSWORD = "correct horse battery"


def post(client, path, **fields):
    return post_form(client, path, "/teams/new", **fields)


def rows(app, sql, *params):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        return db.execute(sql, params).fetchall()


def person(app, name, email, role="editor", password=True, active=True):
    with app.app_context(), transaction() as db:
        user = users.create(db, name, email, role)
        if password:
            users.set_password(db, user, passwords.hash_password(PASSWORD))
        if not active:
            users.set_active(db, user, False)
        return dict(user)


def member(app, team_id, user_id):
    with app.app_context(), transaction() as db:
        team_members.add(db, team_id, user_id)


def sign_in(client, email):
    page = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    response = client.post("/login", data={"csrf_token": csrf, "email": email, "password": PASSWORD, "next": "/"})
    assert response.status_code == 303


# --- /teams ----------------------------------------------------------------------------------------------


def test_the_teams_page_lists_teams_with_members_and_objective_counts(app, client):
    platform, growth = make_team(client, "Platform"), make_team(client, "Growth")
    cycle = make_cycle(client)
    for name in ("One", "Two"):
        make_objective(client, cycle["id"], name, team_id=platform["id"])
    for number in range(7):
        user = person(app, f"Person {number}", f"p{number}@example.com", password=False)
        member(app, platform["id"], user["id"])
    tree = get(client, "/teams")
    cards = tree.find_all("article", cls="team")
    assert [card.one("h2").text for card in cards] == ["Platform", "Growth"]
    assert cards[0].one("a").attrs["href"] == f"/teams/{platform['id']}"
    assert cards[0].one(cls="counts").text == "7 members, 2 objectives"
    assert cards[0].one(cls="member-names").text == "Person 0, Person 1, Person 2, Person 3, Person 4 and 2 more"
    assert cards[1].one(cls="counts").text == "0 members, 0 objectives"
    assert tree.one("a", href="/teams/new").text == "New team"
    assert growth["id"]


def test_the_teams_page_runs_as_many_queries_for_many_teams_as_for_one(app, client):
    cycle = make_cycle(client)
    team = make_team(client, "First")
    make_objective(client, cycle["id"], team_id=team["id"])
    few = statements_of(app, client, lambda: client.get("/teams", headers=BROWSER))
    for number in range(5):
        team = make_team(client, f"Team {number}")
        make_objective(client, cycle["id"], team_id=team["id"])
        user = person(app, f"Person {number}", f"p{number}@example.com", password=False)
        member(app, team["id"], user["id"])
    many = statements_of(app, client, lambda: client.get("/teams", headers=BROWSER))
    assert len(many) == len(few)


def test_no_teams_yet_says_so(client):
    assert "No teams yet" in get(client, "/teams").text


# --- new -------------------------------------------------------------------------------------------------


def test_a_team_is_created_and_the_browser_goes_to_its_page(app, client):
    form = get(client, "/teams/new").one("form", method="post")
    assert form.one("input", name="name") and form.one("label", **{"for": "name"}).text == "Name"
    response = post(client, "/teams/new", name="Platform")
    [(team_id, name)] = rows(app, "SELECT id, name FROM teams")
    assert response.status_code == 303 and response.headers["Location"] == f"/teams/{team_id}"
    assert name == "Platform" and get(client, f"/teams/{team_id}").one("h1").text == "Platform"


def test_a_name_too_long_is_refused_beside_it_with_what_was_typed_kept(app, client):
    response = post(client, "/teams/new", name="x" * 201)
    assert response.status_code == 400
    tree = parse(response.get_data(as_text=True))
    assert "at most 200 characters" in tree.one(id="name-error").text
    assert tree.one("input", name="name").attrs["value"] == "x" * 201
    assert rows(app, "SELECT * FROM teams") == []


def test_a_form_without_its_csrf_token_is_refused_and_nothing_is_written(app, client):
    team = make_team(client)
    user = person(app, "Ed Itor", "ed@example.com", password=False)
    for path, fields in (("/teams/new", {"name": "Forged"}), (f"/teams/{team['id']}/edit", {"name": "Forged"}),
                         (f"/teams/{team['id']}/delete", {}),
                         (f"/teams/{team['id']}/members", {"user_id": user["id"]})):
        response = client.post(path, data=fields, headers=BROWSER)
        assert response.status_code == 400, path
        assert "Form not accepted" in parse(response.get_data(as_text=True)).text
    assert rows(app, "SELECT name FROM teams") == [("Platform",)]
    assert rows(app, "SELECT * FROM team_members") == []


# --- a team's page: members and objectives ---------------------------------------------------------------


def found(tree):
    """The people a team page's search lists: (name, the Add form's user_id)."""
    lists = tree.find_all("ul", cls="candidates")
    return [(li.one("span", cls="member-name").own_text("meta"), li.one("input", name="user_id").attrs["value"])
            for li in lists[0].find_all("li")] if lists else []


def test_members_are_found_by_name_or_email_added_and_removed(app, client):
    team = make_team(client)
    ada = person(app, "Ada", "ada@example.com", password=False)
    bob = person(app, "Bob", "bob@example.org", password=False)
    person(app, "Gone Adams", "gone@example.com", password=False, active=False)
    tree = get(client, f"/teams/{team['id']}")
    search = tree.one("form", cls="member-search")
    assert search.attrs["method"] == "get" and search.one("label", **{"for": "q"}).text == "Find people by name or email"
    assert found(tree) == [] and not tree.find_all("select")  # nobody is listed until searched for
    assert found(get(client, f"/teams/{team['id']}?q=AD")) == [("Ada", ada["id"])]  # not the deactivated one
    assert found(get(client, f"/teams/{team['id']}?q=example.org")) == [("Bob", bob["id"])]  # by email too
    assert found(get(client, f"/teams/{team['id']}?q=_")) == []  # LIKE's wildcards are letters here
    add = get(client, f"/teams/{team['id']}?q=ad").one("ul", cls="candidates").one("form")
    assert add.one("button").attrs["aria-label"] == "Add Ada"
    response = post(client, add.attrs["action"], **hidden(add))
    assert response.status_code == 303 and response.headers["Location"] == f"/teams/{team['id']}?q=ad#add-heading"
    tree = get(client, f"/teams/{team['id']}?q=ad")
    assert "Ada" in tree.one("ul", cls="members").text and found(tree) == []  # a member is found no more
    assert "No active person outside the team has “ad” in their name or email." in tree.text
    remove = tree.one("form", action=f"/teams/{team['id']}/members/{ada['id']}/remove")
    assert remove.one("button").text == "Remove"
    assert post(client, remove.attrs["action"]).status_code == 303
    assert rows(app, "SELECT * FROM team_members") == []
    assert "No members yet" in get(client, f"/teams/{team['id']}").text


def test_a_search_lists_at_most_twenty_people_by_name_and_says_there_are_more(app, client):
    team = make_team(client)
    with app.app_context(), transaction() as db:
        for n in range(250, 0, -1):
            users.create(db, f"Person {n:03}", f"p{n}@example.com")
        users.create(db, "Zoë Ñúñez", "zoe@example.com")
    tree = get(client, f"/teams/{team['id']}?q=person")
    assert [name for name, _ in found(tree)] == [f"Person {n:03}" for n in range(1, 21)]
    assert "The first 20 who match, by name: type more of a name or an email to find the others." in tree.text
    assert [name for name, _ in found(get(client, f"/teams/{team['id']}?q=person 137"))] == ["Person 137"]
    assert [name for name, _ in found(get(client, f"/teams/{team['id']}?q=ZOË"))] == ["Zoë Ñúñez"]


def test_a_search_of_too_many_characters_is_refused_beside_its_field(app, client):
    team = make_team(client)
    person(app, "Ada", "ada@example.com", password=False)
    response = client.get(f"/teams/{team['id']}?q=" + "a" * 201, headers=BROWSER)
    assert response.status_code == 400
    tree = parse(response.get_data(as_text=True))
    assert tree.one(id="q-error").text == "At most 200 characters." and found(tree) == []
    assert found(get(client, f"/teams/{team['id']}?q=%20%20")) == []  # blank: no search


def test_adding_nobody_or_a_deactivated_person_is_refused_beside_the_search(app, client):
    team = make_team(client)
    gone = person(app, "Gone", "gone@example.com", password=False, active=False)
    person(app, "Ada", "ada@example.com", password=False)
    for chosen, words in (("", "Find the person by name or email, then choose Add."),
                          (gone["id"], "Gone is deactivated")):
        response = post(client, f"/teams/{team['id']}/members", user_id=chosen, q="ad")
        assert response.status_code == 400
        tree = parse(response.get_data(as_text=True))
        assert words in tree.one(id="user_id-error").text
        assert tree.one("input", id="q").attrs["value"] == "ad" and [name for name, _ in found(tree)] == ["Ada"]
    assert rows(app, "SELECT * FROM team_members") == []


def test_removing_someone_who_is_not_a_member_is_a_404(app, client):
    team = make_team(client)
    ada = person(app, "Ada", "ada@example.com", password=False)
    assert post(client, f"/teams/{team['id']}/members/{ada['id']}/remove").status_code == 404


def test_a_team_page_lists_its_objectives_with_their_cycles_current_first(client):
    team = make_team(client)
    old = make_cycle(client, "2025 Q4")
    assert client.patch(f"/v1/cycles/{old['id']}", json={"starts_on": "2025-10-01",
                                                         "ends_on": "2025-12-31"}).status_code == 200
    now = make_cycle(client, "Now")
    make_objective(client, old["id"], "Old aim", team_id=team["id"])
    make_objective(client, now["id"], "Present aim", team_id=team["id"])
    make_objective(client, now["id"], "Not ours")
    tree = get(client, f"/teams/{team['id']}")
    listed = tree.one("ul", cls="team-objectives").find_all("li")
    assert [item.text for item in listed] == ["Present aim in Now · current", "Old aim in 2025 Q4 · finished"]
    assert listed[0].one("a", href=f"/cycles/{now['id']}").text == "Now"


# --- edit ------------------------------------------------------------------------------------------------


def test_a_rename_made_meanwhile_is_not_overwritten_until_saved_again(app, client):
    team = make_team(client)
    tree = get(client, f"/teams/{team['id']}")
    assert tree.one("a", href=f"/teams/{team['id']}/edit").text == "Edit team"
    form = hidden(get(client, f"/teams/{team['id']}/edit"))
    assert client.post(f"/v1/teams/{team['id']}", json={"name": "Platform core"}).status_code == 200
    response = post(client, f"/teams/{team['id']}/edit", **form, name="Infrastructure")
    assert response.status_code == 409
    tree = parse(response.get_data(as_text=True))
    assert "Someone else changed the name" in tree.one(cls="conflict").text
    assert tree.one("input", name="name").attrs["value"] == "Infrastructure"
    assert rows(app, "SELECT name FROM teams") == [("Platform core",)]
    saved = post(client, f"/teams/{team['id']}/edit", **hidden(tree), name="Infrastructure")
    assert saved.status_code == 303 and saved.headers["Location"] == f"/teams/{team['id']}"
    assert rows(app, "SELECT name FROM teams") == [("Infrastructure",)]


def test_a_bad_rename_is_refused_beside_its_field(app, client):
    team = make_team(client)
    form = hidden(get(client, f"/teams/{team['id']}/edit"))
    response = post(client, f"/teams/{team['id']}/edit", **form, name="y" * 300)
    assert response.status_code == 400
    assert "at most 200 characters" in parse(response.get_data(as_text=True)).one(id="name-error").text
    assert rows(app, "SELECT name FROM teams") == [("Platform",)]


# --- delete ----------------------------------------------------------------------------------------------


def test_the_delete_confirmation_names_what_changes_and_cancel_deletes_nothing(app, client):
    team = make_team(client)
    cycle = make_cycle(client)
    for name in ("One", "Two"):
        make_objective(client, cycle["id"], name, team_id=team["id"])
    member(app, team["id"], person(app, "Ada", "ada@example.com", password=False)["id"])
    assert get(client, f"/teams/{team['id']}/edit").one("a", href=f"/teams/{team['id']}/delete").text == \
        "Delete this team"
    tree = get(client, f"/teams/{team['id']}/delete")
    assert [p.text for p in tree.find_all(cls="consequence")] == [
        "2 objectives will lose their team (they stay, with no team).", "1 membership will end (the people stay)."]
    assert tree.one("a", cls="cancel").attrs["href"] == f"/teams/{team['id']}/edit"
    assert rows(app, "SELECT count(*) FROM teams")[0][0] == 1
    response = post(client, f"/teams/{team['id']}/delete")
    assert response.status_code == 303 and response.headers["Location"] == "/teams"
    assert rows(app, "SELECT count(*) FROM teams")[0][0] == 0
    assert rows(app, "SELECT name, team_id FROM objectives ORDER BY seq") == [("One", None), ("Two", None)]
    assert rows(app, "SELECT count(*) FROM users")[0][0] == 1


# --- who may ---------------------------------------------------------------------------------------------


def test_a_viewer_is_refused_every_team_edit_page_and_sees_no_edit_links_or_forms(app, client):
    team = make_team(client)
    person(app, "Maya Admin", "maya@example.com", "admin")
    person(app, "Vi Ewer", "vi@example.com", "viewer")
    ada = person(app, "Ada", "ada@example.com", password=False)
    member(app, team["id"], ada["id"])
    sign_in(client, "vi@example.com")
    pages = ["/teams/new", f"/teams/{team['id']}/edit", f"/teams/{team['id']}/delete"]
    for path in pages:
        refused = client.get(path, headers=BROWSER)
        assert refused.status_code == 403 and "viewer" in parse(refused.get_data(as_text=True)).text, path
    for path in pages + [f"/teams/{team['id']}/members", f"/teams/{team['id']}/members/{ada['id']}/remove"]:
        assert post(client, path, name="Viewer's", user_id=ada["id"]).status_code == 403, path
    assert rows(app, "SELECT name FROM teams") == [("Platform",)]
    assert len(rows(app, "SELECT * FROM team_members")) == 1
    listing = get(client, "/teams")
    assert "Platform" in listing.text and not listing.find_all("a", href="/teams/new")
    page = get(client, f"/teams/{team['id']}")
    assert "Ada" in page.text
    assert not page.find_all("form", method="post", prune=lambda el: el.tag == "header")
    assert not page.find_all("a", href=f"/teams/{team['id']}/edit")
    searched = get(client, f"/teams/{team['id']}?q=a")
    assert not searched.find_all("form", cls="member-search") and found(searched) == []


def test_an_editor_adds_a_member_when_sign_in_is_on(app, client):
    team = make_team(client)
    person(app, "Maya Admin", "maya@example.com", "admin")
    ed = person(app, "Ed Itor", "ed@example.com")
    sign_in(client, "ed@example.com")
    assert post(client, f"/teams/{team['id']}/members", user_id=ed["id"]).status_code == 303
    assert rows(app, "SELECT user_id FROM team_members") == [(ed["id"],)]
