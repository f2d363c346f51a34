"""The objective pages (issue 23): its own page, and the new, edit and delete forms: field names, refusals
beside fields, kind and flags, the parent select (no loop, any cycle, a search), conflicts, viewers."""
import re
import sqlite3

import pytest

from helpers import fetch, make_cycle, make_key_result, make_objective, make_team, make_user
from okr.web import objective_pages

pytestmark = pytest.mark.usefixtures("fast_hashing")

HTML = {"Accept": "text/html"}
API_FIELDS = {"name", "description", "team_id", "assignee_id", "parent_objective_id", "cycle_id"}


def csrf(client, path="/objectives/new"):
    return re.search(r'name="csrf_token" value="([^"]+)"', client.get(path, headers=HTML).text).group(1)


def hidden(page, name):
    """A hidden field's value in a page, unescaped as a browser sends it."""
    import html
    return html.unescape(re.search(rf'name="{name}" value="([^"]*)"', page).group(1))


def form_of(client, path):
    """What an edit form would send as shown: its fields' values, the hidden ones included."""
    page = client.get(path).text
    form = {"csrf_token": hidden(page, "csrf_token")}
    for name in ("revision", "original"):
        if f'name="{name}"' in page:
            form[name] = hidden(page, name)
    for match in re.finditer(r'<input id="(\w+)" name="\w+" type="text" value="([^"]*)"', page):
        form[match.group(1)] = match.group(2)
    textarea = re.search(r'<textarea id="description"[^>]*>([^<]*)</textarea>', page)
    form["description"] = textarea.group(1) if textarea else ""
    kind = re.search(r'name="kind" value="(\w+)" checked', page)
    form["kind"] = kind.group(1) if kind else ""
    for select in re.finditer(r'<select id="(\w+)" name="\w+"[^>]*>(.*?)</select>', page, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected>', select.group(2))
        form[select.group(1)] = chosen.group(1) if chosen else ""
    return form


def names_in(page):
    """The name attributes of a page's edit form (not the sign-out or search forms')."""
    form = re.search(r'<form method="post" class="edit[^"]*"[^>]*>(.*?)</form>', page, re.S).group(1)
    return set(re.findall(r'\bname="([^"]+)"', form)) - {"csrf_token", "revision", "original"}


def parent_options(page):
    select = re.search(r'<select id="parent_objective_id".*?</select>', page, re.S).group(0)
    return re.findall(r'<option value="([^"]+)"', select)


def stored(app, sql, *params):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        return db.execute(sql, params).fetchall()


def test_the_forms_fields_are_the_apis_with_kind_for_the_two_flags(client, objective, cycle):
    for path in (f"/objectives/new?cycle_id={cycle['id']}", f"/objectives/{objective['id']}/edit"):
        names = names_in(client.get(path).text)
        assert names == API_FIELDS | {"kind", "visibility"}  # and who may see it, as PATCH sets it
    body = fetch(client, f"/v1/objectives/{objective['id']}")
    assert API_FIELDS <= set(body) and {"is_company", "is_personal"} <= set(body)


@pytest.mark.parametrize("kind, flags", [("company", (True, False)), ("team", (False, False)),
                                         ("personal", (False, True))])
def test_creating_from_the_form_gives_what_the_api_answers_and_kind_sets_the_flags(client, cycle, kind, flags):
    team = make_team(client)
    parent = make_objective(client, cycle["id"], "Parent")
    response = client.post("/objectives/new", data={
        "csrf_token": csrf(client), "name": "Delight customers", "description": "Two\nlines", "kind": kind,
        "team_id": team["id"], "assignee_id": "", "parent_objective_id": parent["id"], "cycle_id": cycle["id"]})
    assert response.status_code == 303
    new_id = response.headers["Location"].rsplit("/", 1)[1]
    assert response.headers["Location"].endswith(f"/objectives/{new_id}")
    body = fetch(client, f"/v1/objectives/{new_id}")
    assert (body["is_company"], body["is_personal"]) == flags
    assert body | {"id": "", "created_at": "", "modified_at": ""} == {
        "id": "", "created_at": "", "modified_at": "", "name": "Delight customers", "description": "Two\nlines",
        "team_id": team["id"], "assignee_id": None, "parent_objective_id": parent["id"], "cycle_id": cycle["id"],
        "is_company": flags[0], "is_personal": flags[1]}
    shown = client.get(f"/objectives/{new_id}/edit").text
    assert f'name="kind" value="{kind}" checked' in shown


def test_a_refused_field_says_why_beside_it_keeps_what_was_typed_and_writes_nothing(app, client, cycle):
    before = stored(app, "SELECT count(*) FROM objectives")
    response = client.post("/objectives/new", data={
        "csrf_token": csrf(client), "name": "   ", "description": "<b>kept</b>", "kind": "", "team_id": "",
        "assignee_id": "", "parent_objective_id": "", "cycle_id": cycle["id"]})
    assert response.status_code == 400
    page = response.text
    assert '<span class="error" id="name-error">Fill this in.</span>' in page
    assert '<span class="error" id="kind-error">Choose company, team or personal.</span>' in page
    assert "&lt;b&gt;kept&lt;/b&gt;</textarea>" in page
    assert stored(app, "SELECT count(*) FROM objectives") == before


def test_the_parent_select_offers_no_loop_and_spans_cycles_current_one_first(client, cycle):
    other = make_cycle(client, "Q2")
    top = make_objective(client, cycle["id"], "Top")
    middle = make_objective(client, cycle["id"], "Middle", parent_objective_id=top["id"])
    child = make_objective(client, other["id"], "Child", parent_objective_id=middle["id"])
    grandchild = make_objective(client, cycle["id"], "Grandchild", parent_objective_id=child["id"])
    elsewhere = make_objective(client, other["id"], "Elsewhere")
    page = client.get(f"/objectives/{middle['id']}/edit").text
    options = parent_options(page)
    assert middle["id"] not in options and child["id"] not in options and grandchild["id"] not in options
    assert options == [top["id"], elsewhere["id"]]  # its own cycle's first
    assert re.search(r'<optgroup label="Q1">\s*<option value="%s" selected>' % top["id"], page)
    assert '<optgroup label="Q2">' in page
    # and the store refuses a loop typed by hand, beside the field
    form = form_of(client, f"/objectives/{middle['id']}/edit")
    refused = client.post(f"/objectives/{middle['id']}/edit", data={**form, "parent_objective_id": grandchild["id"]})
    assert refused.status_code == 400 and 'id="parent_objective_id-error">Choose a parent that is not aligned' in refused.text
    assert fetch(client, f"/v1/objectives/{middle['id']}")["parent_objective_id"] == top["id"]


def test_a_new_aligned_objective_has_its_parent_chosen(client, objective, cycle):
    page = client.get(f"/objectives/new?cycle_id={cycle['id']}&parent_objective_id={objective['id']}").text
    assert f'<option value="{objective["id"]}" selected>' in page
    assert f'<option value="{cycle["id"]}" selected>' in page


def test_on_a_big_cycle_a_search_narrows_the_parents_and_keeps_the_present_one(client, cycle, monkeypatch):
    monkeypatch.setattr(objective_pages, "PARENT_CHOICES", 3)
    for name in ("Alpha one", "Alpha two", "Beta", "Gamma", "ALPHA three"):
        make_objective(client, cycle["id"], name)
    parent = make_objective(client, cycle["id"], "Zeta parent")  # past the first 3: kept all the same
    edited = make_objective(client, cycle["id"], "Edited", parent_objective_id=parent["id"])
    page = client.get(f"/objectives/{edited['id']}/edit").text
    assert 'name="parent_q"' in page and "Showing 4 of 6; type to narrow." in page  # 3, and the present parent
    assert len(parent_options(page)) == 4 and parent["id"] in parent_options(page)
    narrowed = client.get(f"/objectives/{edited['id']}/edit?parent_q=alpha").text
    names = re.findall(r'<option value="[^"]+"(?: selected)?>([^<]+)</option>',
                       re.search(r'<select id="parent_objective_id".*?</select>', narrowed, re.S).group(0))
    assert names == ["Alpha one", "Alpha two", "ALPHA three", "Zeta parent"]
    assert 'name="parent_q" value="alpha"' in narrowed
    small = client.get(f"/objectives/{edited['id']}/edit?parent_q=gamma").text
    assert "Showing the 1 whose names hold" in small


def test_the_search_box_is_not_shown_when_every_parent_fits(client, objective):
    assert 'name="parent_q"' not in client.get(f"/objectives/{objective['id']}/edit").text


def test_editing_moves_an_objective_to_another_team_cycle_and_parent_and_changes_its_kind(client, objective, cycle):
    team, other = make_team(client), make_cycle(client, "Q2")
    parent = make_objective(client, other["id"], "Over it")
    key_result = make_key_result(client, objective["id"])
    person = make_user_via_api(client)
    form = form_of(client, f"/objectives/{objective['id']}/edit")
    response = client.post(f"/objectives/{objective['id']}/edit", data={
        **form, "team_id": team["id"], "cycle_id": other["id"], "parent_objective_id": parent["id"],
        "kind": "personal", "assignee_id": person, "description": ""})
    assert response.status_code == 303 and response.headers["Location"].endswith(f"/objectives/{objective['id']}")
    body = fetch(client, f"/v1/objectives/{objective['id']}")
    assert (body["team_id"], body["cycle_id"], body["parent_objective_id"], body["assignee_id"]) == (
        team["id"], other["id"], parent["id"], person)
    assert (body["is_company"], body["is_personal"], body["description"]) == (False, True, None)
    assert fetch(client, f"/v1/keyresults/{key_result['id']}")["objective_id"] == objective["id"]


def make_user_via_api(client):
    """A user made through the app's CLI runner is not at hand here: through the store, its id."""
    from okr.db import transaction
    from okr.store import users
    with client.application.app_context(), transaction() as db:
        return users.create(db, "Olu Owner", "olu@example.com", "editor")["id"]


def test_the_owner_select_lists_active_people_and_the_present_owner_though_inactive(app, client, cycle, runner):
    active = make_user(runner, "Ada Active", "ada@example.com")
    gone = make_user(runner, "Gil Gone", "gil@example.com")
    other = make_user(runner, "Ian Inactive", "ian@example.com")
    objective = make_objective(client, cycle["id"], assignee_id=gone["id"])
    for email in ("gil@example.com", "ian@example.com"):
        assert runner.invoke(args=["users", "deactivate", email]).exit_code == 0
    page = client.get(f"/objectives/{objective['id']}/edit").text
    assert f'<option value="{active["id"]}">Ada Active</option>' in page
    assert f'<option value="{gone["id"]}" selected>Gil Gone (inactive)</option>' in page
    assert other["id"] not in page


def test_a_save_after_someone_elses_change_to_another_field_keeps_both(client, objective):
    form = form_of(client, f"/objectives/{objective['id']}/edit")
    assert client.patch(f"/v1/objectives/{objective['id']}", json={"name": "Theirs"}).status_code == 200
    saved = client.post(f"/objectives/{objective['id']}/edit", data={**form, "description": "Mine"})
    assert saved.status_code == 303
    body = fetch(client, f"/v1/objectives/{objective['id']}")
    assert (body["name"], body["description"]) == ("Theirs", "Mine")


def test_a_same_field_conflict_then_use_mine_overwrites_only_that_field(client, objective):
    form = form_of(client, f"/objectives/{objective['id']}/edit")
    assert client.patch(f"/v1/objectives/{objective['id']}",
                        json={"name": "Theirs", "description": "Their words"}).status_code == 200
    refused = client.post(f"/objectives/{objective['id']}/edit", data={**form, "name": "Mine"})
    assert refused.status_code == 409
    assert "Someone else changed the name after you opened this form, so nothing was saved." in refused.text
    assert (fetch(client, f"/v1/objectives/{objective['id']}")["name"]) == "Theirs"
    again = {**form_of_page(refused.text), "description": "Their words"}
    assert again["name"] == "Mine"
    assert client.post(f"/objectives/{objective['id']}/edit", data=again).status_code == 303
    body = fetch(client, f"/v1/objectives/{objective['id']}")
    assert (body["name"], body["description"]) == ("Mine", "Their words")


def form_of_page(page):
    """The fields a re-shown form sends (its hidden ones now the stored row's)."""
    form = {name: hidden(page, name) for name in ("csrf_token", "revision", "original")}
    form["name"] = re.search(r'<input id="name" name="name" type="text" value="([^"]*)"', page).group(1)
    form["kind"] = re.search(r'name="kind" value="(\w+)" checked', page).group(1)
    for select in re.finditer(r'<select id="(\w+)" name="\w+"[^>]*>(.*?)</select>', page, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected>', select.group(2))
        form[select.group(1)] = chosen.group(1) if chosen else ""
    return form


def test_an_unchanged_revision_saves(client, objective):
    form = form_of(client, f"/objectives/{objective['id']}/edit")
    assert client.post(f"/objectives/{objective['id']}/edit", data={**form, "name": "Renamed"}).status_code == 303
    assert fetch(client, f"/v1/objectives/{objective['id']}")["name"] == "Renamed"


def test_delete_asks_first_with_what_goes_and_cancel_keeps_it(client, objective, cycle):
    key_result = make_key_result(client, objective["id"])
    client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": "5"})
    make_key_result(client, objective["id"], "Second")
    make_objective(client, cycle["id"], "Child 1", parent_objective_id=objective["id"])
    make_objective(client, cycle["id"], "Child 2", parent_objective_id=objective["id"])
    edit = client.get(f"/objectives/{objective['id']}/edit").text
    assert f'href="/objectives/{objective["id"]}/delete"' in edit
    page = client.get(f"/objectives/{objective['id']}/delete")
    assert page.status_code == 200
    assert "2 key results and 3 check-ins will be deleted." in page.text
    assert "2 aligned objectives will lose their parent." in page.text
    assert f'href="/objectives/{objective["id"]}/edit" class="cancel">Cancel</a>' in page.text
    assert client.get(f"/v1/objectives/{objective['id']}").status_code == 200  # asking deleted nothing
    done = client.post(f"/objectives/{objective['id']}/delete", data={"csrf_token": csrf(client)})
    assert done.status_code == 303 and done.headers["Location"].endswith(f"/cycles/{cycle['id']}")
    assert client.get(f"/v1/objectives/{objective['id']}").status_code == 404


def test_deleting_without_the_csrf_token_is_refused(client, objective):
    assert client.post(f"/objectives/{objective['id']}/delete", data={}).status_code == 400
    assert client.get(f"/v1/objectives/{objective['id']}").status_code == 200


def test_the_objective_page_shows_what_it_is_its_key_results_and_aligned_objectives(client, cycle, runner):
    team = make_team(client, "Growth")
    owner = make_user(runner, "Olu Owner", "olu@example.com")
    parent = make_objective(client, cycle["id"], "Company goal", is_company=True)
    objective = make_objective(client, cycle["id"], "Team goal", description="First <line>\nsecond",
                               team_id=team["id"], assignee_id=owner["id"], parent_objective_id=parent["id"])
    key_result = make_key_result(client, objective["id"], "Reach 100", current_value="50")
    child = make_objective(client, cycle["id"], "Aligned one", parent_objective_id=objective["id"])
    page = client.get(f"/objectives/{objective['id']}").text
    assert "<h1>Team goal</h1>" in page and '<span class="badge">Team</span>' in page
    assert '<p class="objective-description">First &lt;line&gt;\nsecond</p>' in page
    assert "Olu Owner" in page and f'href="/teams/{team["id"]}">Growth</a>' in page
    assert f'href="/cycles/{cycle["id"]}">Q1</a>' in page
    assert f'href="/objectives/{parent["id"]}">Company goal</a>' in page
    assert f'href="/keyresults/{key_result["id"]}">Reach 100</a>' in page
    assert f'href="/objectives/{child["id"]}">Aligned one</a>' in page
    assert "50%" in page
    assert f'href="/objectives/{objective["id"]}/edit">Edit</a>' in page
    assert f'href="/keyresults/new?objective_id={objective["id"]}">Add key result</a>' in page
    assert (f'href="/objectives/new?cycle_id={cycle["id"]}&amp;parent_objective_id={objective["id"]}">'
            "Add aligned objective</a>") in page
    rolled = client.get(f"/objectives/{parent['id']}").text
    assert "from aligned objectives" in rolled


def test_a_missing_objective_is_a_404_page(client):
    assert client.get("/objectives/nope", headers=HTML).status_code == 404
    assert client.get("/objectives/nope/edit", headers=HTML).status_code == 404


# --- viewers -------------------------------------------------------------------------------------------------

def sign_in_as(app, client, role):
    """An admin (so sign-in is needed) and a person of this role, signed in on client."""
    from test_accounts import person, sign_in
    person(app)
    person(app, "Vi Ewer", "vi@example.com", role)
    assert sign_in(client, "vi@example.com").status_code == 303


def test_a_viewer_gets_403_on_each_form_and_sees_no_edit_links(app, client, objective, cycle):
    sign_in_as(app, client, "viewer")
    token = csrf(client, "/cycles")
    for path in (f"/objectives/new?cycle_id={cycle['id']}", f"/objectives/{objective['id']}/edit",
                 f"/objectives/{objective['id']}/delete"):
        assert client.get(path).status_code == 403
        assert client.post(path, data={"csrf_token": token, "name": "x", "kind": "team",
                                       "cycle_id": cycle["id"]}).status_code == 403
    page = client.get(f"/objectives/{objective['id']}")
    assert page.status_code == 200 and "/edit" not in page.text and "Add key result" not in page.text
    assert fetch_name(app, objective["id"]) == objective["name"]


def fetch_name(app, objective_id):
    return stored(app, "SELECT name FROM objectives WHERE id = ?", objective_id)[0][0]


def test_an_editor_opens_the_forms(app, client, objective):
    sign_in_as(app, client, "editor")
    assert client.get(f"/objectives/{objective['id']}/edit").status_code == 200
    assert "Add key result" in client.get(f"/objectives/{objective['id']}").text
