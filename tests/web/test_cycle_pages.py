"""The cycle edit pages (issue 23): /cycles/new, /cycles/<id>/edit with its revision conflict, /cycles/<id>/delete
with its confirmation, and /cycles/<id>/copy with its closing page; refusals beside their fields, viewers
refused, CSRF checked."""
import re
import sqlite3

import pytest

from helpers import make_cycle, make_key_result, make_objective
from edit_forms import get, hidden, post_form
from html_tree import BROWSER, parse
from okr.accounts import passwords
from okr.db import transaction
from okr.store import users
from okr.web.cycle_pages import next_dates

pytestmark = pytest.mark.usefixtures("fast_hashing")

PASSWORD = "correct horse battery"


def post(client, path, **fields):
    return post_form(client, path, "/cycles/new", **fields)


def value(tree, name):
    return tree.one("input", name=name).attrs["value"]


def rows(app, sql, *params):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        return db.execute(sql, params).fetchall()


def person(app, name, email, role):
    with app.app_context(), transaction() as db:
        user = users.create(db, name, email, role)
        users.set_password(db, user, passwords.hash_password(PASSWORD))
        return dict(user)


def sign_in(client, email):
    page = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    response = client.post("/login", data={"csrf_token": csrf, "email": email, "password": PASSWORD, "next": "/"})
    assert response.status_code == 303


def dated(client, name="2026 Q4", starts_on="2026-10-01", ends_on="2026-12-31"):
    cycle = make_cycle(client, name)
    response = client.patch(f"/v1/cycles/{cycle['id']}", json={"starts_on": starts_on, "ends_on": ends_on})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


# --- new -------------------------------------------------------------------------------------------------


def test_the_new_cycle_form_has_labelled_name_and_date_fields(client):
    tree = get(client, "/cycles/new")
    form = tree.one("form", method="post")
    for name, kind in (("name", "text"), ("starts_on", "date"), ("ends_on", "date")):
        assert form.one("input", name=name).attrs["type"] == kind
        assert form.one("label", **{"for": name}).text
    assert "csrf_token" in hidden(form)


def test_a_cycle_is_created_with_its_dates_and_the_browser_goes_to_its_page(app, client):
    response = post(client, "/cycles/new", name="2026 Q4", starts_on="2026-10-01", ends_on="2026-12-31")
    assert response.status_code == 303
    [(cycle_id, name, starts_on, ends_on)] = rows(app, "SELECT id, name, starts_on, ends_on FROM cycles")
    assert (name, starts_on, ends_on) == ("2026 Q4", "2026-10-01", "2026-12-31")
    assert response.headers["Location"] == f"/cycles/{cycle_id}"
    assert "2026 Q4" in get(client, f"/cycles/{cycle_id}").text


def test_empty_dates_make_a_cycle_with_open_ends(app, client):
    assert post(client, "/cycles/new", name="Someday", starts_on="", ends_on="").status_code == 303
    assert rows(app, "SELECT name, starts_on, ends_on FROM cycles") == [("Someday", None, None)]


@pytest.mark.parametrize("starts_on, ends_on, field, words", [
    ("2026-13-01", "2026-12-31", "starts_on", "Enter a date such as 2026-10-01."),
    ("next week", "", "starts_on", "Enter a date such as 2026-10-01."),
    ("2026-10-01", "2026-09-30", "ends_on", "Choose an end date on or after the start date."),
])
def test_a_bad_date_is_refused_beside_its_field_with_what_was_typed_kept(app, client, starts_on, ends_on, field,
                                                                         words):
    response = post(client, "/cycles/new", name="2026 Q4", starts_on=starts_on, ends_on=ends_on)
    assert response.status_code == 400
    tree = parse(response.get_data(as_text=True))
    assert tree.one(id=f"{field}-error").text == words
    assert tree.one("input", name=field).attrs["aria-invalid"] == "true"
    assert (value(tree, "name"), value(tree, "starts_on"), value(tree, "ends_on")) == ("2026 Q4", starts_on, ends_on)
    assert rows(app, "SELECT * FROM cycles") == []


def test_a_name_too_long_is_refused_beside_it(app, client):
    response = post(client, "/cycles/new", name="x" * 201)
    assert response.status_code == 400
    assert "at most 200 characters" in parse(response.get_data(as_text=True)).one(id="name-error").text
    assert rows(app, "SELECT * FROM cycles") == []


def test_a_form_without_its_csrf_token_is_refused_and_nothing_is_written(app, client, cycle):
    for path in ("/cycles/new", f"/cycles/{cycle['id']}/edit", f"/cycles/{cycle['id']}/delete",
                 f"/cycles/{cycle['id']}/copy"):
        response = client.post(path, data={"name": "Forged", "starts_on": "", "ends_on": ""}, headers=BROWSER)
        assert response.status_code == 400, path
        assert "Form not accepted" in parse(response.get_data(as_text=True)).text
    assert rows(app, "SELECT name FROM cycles") == [("Q1",)]


# --- edit ------------------------------------------------------------------------------------------------


def test_the_edit_form_shows_the_cycle_and_saves_a_change(app, client):
    cycle = dated(client)
    tree = get(client, f"/cycles/{cycle['id']}/edit")
    assert (value(tree, "name"), value(tree, "starts_on"), value(tree, "ends_on")) == \
        ("2026 Q4", "2026-10-01", "2026-12-31")
    form = hidden(tree)
    assert form["revision"] == "1" and '"ends_on":"2026-12-31"' in form["original"]
    response = post(client, f"/cycles/{cycle['id']}/edit", **form, name="2026 Q4 (platform)", starts_on="2026-10-05",
                    ends_on="")
    assert response.status_code == 303 and response.headers["Location"] == f"/cycles/{cycle['id']}"
    assert rows(app, "SELECT name, starts_on, ends_on, revision FROM cycles") == \
        [("2026 Q4 (platform)", "2026-10-05", None, 2)]


def test_the_cycle_page_links_to_edit_and_copy_and_the_cycles_page_to_new(client, cycle):
    tree = get(client, f"/cycles/{cycle['id']}")
    hrefs = {a.attrs.get("href") for a in tree.find_all("a")}
    assert {f"/cycles/{cycle['id']}/edit", f"/cycles/{cycle['id']}/copy"} <= hrefs
    assert "/cycles/new" in {a.attrs.get("href") for a in get(client, "/cycles").find_all("a")}


def test_a_bad_edit_is_refused_beside_its_field_and_nothing_is_written(app, client):
    cycle = dated(client)
    form = hidden(get(client, f"/cycles/{cycle['id']}/edit"))
    response = post(client, f"/cycles/{cycle['id']}/edit", **form, name="Renamed", starts_on="2026-10-01",
                    ends_on="2026-01-01")
    assert response.status_code == 400
    tree = parse(response.get_data(as_text=True))
    assert tree.one(id="ends_on-error").text == "Choose an end date on or after the start date."
    assert value(tree, "name") == "Renamed" and hidden(tree)["revision"] == form["revision"]
    assert rows(app, "SELECT name, ends_on FROM cycles") == [("2026 Q4", "2026-12-31")]


def test_a_change_made_meanwhile_to_another_field_is_kept(app, client):
    cycle = dated(client)
    form = hidden(get(client, f"/cycles/{cycle['id']}/edit"))
    assert client.patch(f"/v1/cycles/{cycle['id']}", json={"ends_on": "2027-01-15"}).status_code == 200
    response = post(client, f"/cycles/{cycle['id']}/edit", **form, name="Mine", starts_on="2026-10-01",
                    ends_on="2026-12-31")
    assert response.status_code == 303
    assert rows(app, "SELECT name, ends_on FROM cycles") == [("Mine", "2027-01-15")]


def test_an_unknown_cycle_has_no_edit_page(client):
    get(client, "/cycles/00000000-0000-4000-8000-999999999999/edit", status=404)


# --- delete ----------------------------------------------------------------------------------------------


def test_the_delete_confirmation_names_what_goes_and_cancel_deletes_nothing(app, client, key_result):
    cycle_id = rows(app, "SELECT id FROM cycles")[0][0]
    client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": "120"})
    checkins = rows(app, "SELECT count(*) FROM checkins")[0][0]
    edit = get(client, f"/cycles/{cycle_id}/edit")
    assert edit.one("a", href=f"/cycles/{cycle_id}/delete").text == "Delete this cycle"
    tree = get(client, f"/cycles/{cycle_id}/delete")
    assert tree.one(cls="consequence").text == \
        f"1 objective, 1 key result and {checkins} check-ins will be deleted."
    assert tree.one("a", cls="cancel").attrs["href"] == f"/cycles/{cycle_id}/edit"
    assert rows(app, "SELECT count(*) FROM cycles")[0][0] == 1
    response = post(client, f"/cycles/{cycle_id}/delete")
    assert response.status_code == 303 and response.headers["Location"] == "/cycles"
    assert [rows(app, f"SELECT count(*) FROM {table}")[0][0] for table in ("cycles", "objectives", "key_results",
                                                                            "checkins")] == [0, 0, 0, 0]


def test_an_empty_cycle_asks_without_counting_anything(client, cycle):
    tree = get(client, f"/cycles/{cycle['id']}/delete")
    assert tree.find_all(cls="consequence") == [] and "Delete the cycle “Q1”?" in tree.text


# --- copy ------------------------------------------------------------------------------------------------


def test_the_copy_form_suggests_the_next_quarter(client):
    cycle = dated(client)
    tree = get(client, f"/cycles/{cycle['id']}/copy")
    assert (value(tree, "name"), value(tree, "starts_on"), value(tree, "ends_on")) == \
        ("2027 Q1", "2027-01-01", "2027-03-31")


def test_the_copy_form_suggests_a_copy_of_the_same_length_after_an_odd_cycle(client):
    cycle = dated(client, "Launch sprint", "2026-01-05", "2026-01-18")
    tree = get(client, f"/cycles/{cycle['id']}/copy")
    assert (value(tree, "name"), value(tree, "starts_on"), value(tree, "ends_on")) == \
        ("Launch sprint (copy)", "2026-01-19", "2026-02-01")


@pytest.mark.parametrize("starts_on, ends_on, after", [
    ("2026-01-01", "2026-03-31", ("2026-04-01", "2026-06-30")),
    ("2026-07-01", "2026-12-31", ("2027-01-01", "2027-06-30")),
    ("2026-11-01", "2026-11-30", ("2026-12-01", "2026-12-31")),
    ("2026-01-10", "2026-01-19", ("2026-01-20", "2026-01-29")),
    (None, "2026-06-30", ("2026-07-01", "")),
    ("2026-01-01", None, ("", "")),
])
def test_the_next_cycles_dates(starts_on, ends_on, after):
    assert next_dates(starts_on, ends_on) == after


def test_a_copy_holds_the_objectives_and_key_results_and_its_closing_page_links_to_it(app, client):
    cycle = dated(client)
    objective = make_objective(client, cycle["id"], "Grow revenue")
    make_objective(client, cycle["id"], "Ship it", parent_objective_id=objective["id"])
    make_key_result(client, objective["id"], "Reach 100 customers")
    form = {}
    for el in get(client, f"/cycles/{cycle['id']}/copy").one("form", method="post").find_all("input"):
        if el.attrs.get("type") != "checkbox" or "checked" in el.attrs:  # what a browser sends
            form.setdefault(el.attrs["name"], []).append(el.attrs.get("value", ""))
    response = post(client, f"/cycles/{cycle['id']}/copy", **form)
    assert response.status_code == 200
    [(new_id,)] = rows(app, "SELECT id FROM cycles WHERE name = '2027 Q1' AND starts_on = '2027-01-01'")
    tree = parse(response.get_data(as_text=True))
    assert "2 objectives and 1 key result were copied from 2026 Q4" in tree.text
    assert tree.find_all("a", href=f"/cycles/{new_id}")
    assert rows(app, "SELECT name FROM objectives WHERE cycle_id = ? ORDER BY seq", new_id) == \
        [("Grow revenue",), ("Ship it",)]
    assert rows(app, "SELECT name FROM key_results WHERE cycle_id = ?", new_id) == [("Reach 100 customers",)]


def test_a_bad_copy_is_refused_beside_its_field_and_makes_nothing(app, client):
    cycle = dated(client)
    make_objective(client, cycle["id"])
    response = post(client, f"/cycles/{cycle['id']}/copy", name="2027 Q1", starts_on="2027-04-01",
                    ends_on="2027-01-01")
    assert response.status_code == 400
    tree = parse(response.get_data(as_text=True))
    assert tree.one(id="ends_on-error").text == "Choose an end date on or after the start date."
    assert value(tree, "starts_on") == "2027-04-01"
    assert rows(app, "SELECT count(*) FROM cycles")[0][0] == 1
    assert rows(app, "SELECT count(*) FROM objectives")[0][0] == 1


def test_a_signed_in_editors_copy_starts_its_key_results_with_their_check_in(app, client, key_result):
    cycle_id = rows(app, "SELECT id FROM cycles")[0][0]
    editor = person(app, "Ed Itor", "ed@example.com", "editor")
    sign_in(client, "ed@example.com")
    response = post(client, f"/cycles/{cycle_id}/copy", name="Q2", starts_on="", ends_on="")
    assert response.status_code == 200
    assert rows(app, """SELECT c.author_id FROM checkins c JOIN key_results k ON k.seq = c.key_result_seq
                        JOIN cycles y ON y.id = k.cycle_id WHERE y.name = 'Q2'""") == [(editor["id"],)]


# --- who may ---------------------------------------------------------------------------------------------


def test_a_viewer_is_refused_every_cycle_edit_page_and_sees_no_links_to_them(app, client, cycle):
    person(app, "Maya Admin", "maya@example.com", "admin")
    person(app, "Vi Ewer", "vi@example.com", "viewer")
    sign_in(client, "vi@example.com")
    paths = ["/cycles/new"] + [f"/cycles/{cycle['id']}/{page}" for page in ("edit", "delete", "copy")]
    for path in paths:
        refused = client.get(path, headers=BROWSER)
        assert refused.status_code == 403 and "viewer" in parse(refused.get_data(as_text=True)).text, path
        assert post(client, path, name="Viewer's", starts_on="", ends_on="").status_code == 403, path
    assert rows(app, "SELECT name FROM cycles") == [("Q1",)]
    hrefs = {a.attrs.get("href") for a in get(client, f"/cycles/{cycle['id']}").find_all("a")}
    hrefs |= {a.attrs.get("href") for a in get(client, "/cycles").find_all("a")}
    assert not hrefs & set(paths)


def test_an_editor_opens_and_uses_the_cycle_edit_pages(app, client, cycle):
    person(app, "Maya Admin", "maya@example.com", "admin")
    person(app, "Ed Itor", "ed@example.com", "editor")
    sign_in(client, "ed@example.com")
    form = hidden(get(client, f"/cycles/{cycle['id']}/edit"))
    assert post(client, f"/cycles/{cycle['id']}/edit", **form, name="Q1 renamed", starts_on="",
                ends_on="").status_code == 303
    assert rows(app, "SELECT name FROM cycles") == [("Q1 renamed",)]
