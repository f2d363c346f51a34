"""Only editors and admins own key results (okr.store.key_results.check_owner): a viewer named as a new owner
is refused, by PATCH with a 400 naming owner_id, on the pages beside the field, whose pick-list offers only
editors and admins; an owner made a viewer later is kept, shown as needing a new owner."""
import re
import sqlite3

import pytest

from helpers import assert_error
from html_tree import parse
from okr.db import transaction
from okr.store import key_results, users

HTML = {"Accept": "text/html"}


def user(app, name, role):
    """A user without a password (the server stays open), its id."""
    with app.app_context(), transaction() as db:
        return users.create(db, name, f"{name.split()[0].lower()}@example.com", role)["id"]


def set_role(app, user_id, role):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        db.execute("UPDATE users SET role = ? WHERE id = ?", (role, user_id))


def owner_of(app, key_result):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        return db.execute("SELECT owner_id FROM key_results WHERE id = ?", (key_result["id"],)).fetchone()[0]


def edit_form(client, key_result):
    """The edit form's fields as the page fills them in, and the owner select's options (value, text)."""
    page = client.get(f"/keyresults/{key_result['id']}/edit", headers=HTML).get_data(as_text=True)
    doc = parse(page)
    form = {el.attrs["name"]: el.attrs.get("value", "") for el in doc.find_all("input")
            if "name" in el.attrs and el.attrs.get("type") != "radio"}
    form["type"] = [el.attrs["value"] for el in doc.find_all("input", type="radio") if "checked" in el.attrs][0]
    select = doc.one("select", id="owner_id")
    options = [(o.attrs.get("value"), o.text.strip()) for o in select.find_all("option")]
    form["owner_id"] = next((o.attrs["value"] for o in select.find_all("option") if "selected" in o.attrs), "")
    return form, options


@pytest.fixture
def people(app):
    return {"ed": user(app, "Ed Itor", "editor"), "ann": user(app, "Ann Admin", "admin"),
            "vi": user(app, "Vi Ewer", "viewer")}


def test_patch_refuses_a_viewer_as_owner_naming_owner_id(app, client, key_result, people):
    response = client.patch(f"/v1/keyresults/{key_result['id']}", json={"owner_id": people["vi"]})
    body = assert_error(response, 400, "owner_id")
    assert "viewer" in body["details"]["owner_id"]
    assert owner_of(app, key_result) is None


@pytest.mark.parametrize("who", ["ed", "ann"])
def test_patch_takes_an_editor_or_an_admin(app, client, key_result, people, who):
    response = client.patch(f"/v1/keyresults/{key_result['id']}", json={"owner_id": people[who]})
    assert response.status_code == 200 and response.get_json()["owner_id"] == people[who]


def test_a_new_key_result_with_a_viewer_as_owner_is_refused(client, objective, people):
    response = client.post(f"/v1/objectives/{objective['id']}/keyresults",
                           json={"name": "Win", "type": "positive", "target_value_min": "5",
                                 "owner_id": people["vi"]})
    assert_error(response, 400, "owner_id")


def test_the_pick_list_offers_only_editors_and_admins(client, key_result, people):
    _, options = edit_form(client, key_result)
    assert [text for _, text in options] == ["Nobody", "Ann Admin", "Ed Itor"]


def test_the_page_refuses_a_viewer_beside_the_field(app, client, key_result, people):
    form, _ = edit_form(client, key_result)
    response = client.post(f"/keyresults/{key_result['id']}/edit", data={**form, "owner_id": people["vi"]})
    assert response.status_code == 400
    error = parse(response.get_data(as_text=True)).one(id="owner_id-error")
    assert "A viewer cannot own a key result" in error.text
    assert owner_of(app, key_result) is None


def test_an_owner_made_a_viewer_is_kept_and_shown_as_needing_a_new_owner(app, client, key_result, people):
    assert client.patch(f"/v1/keyresults/{key_result['id']}", json={"owner_id": people["ed"]}).status_code == 200
    set_role(app, people["ed"], "viewer")
    page = client.get(f"/keyresults/{key_result['id']}", headers=HTML).get_data(as_text=True)
    assert "needs a new owner" in parse(page).one("p", cls="kr-owner").text
    form, options = edit_form(client, key_result)
    assert form["owner_id"] == people["ed"] and (people["ed"], "Ed Itor (a viewer: choose a new owner)") in options
    saved = client.post(f"/keyresults/{key_result['id']}/edit", data={**form, "name": "Renamed"})
    assert saved.status_code == 303 and owner_of(app, key_result) == people["ed"]  # other changes still save
    assert client.patch(f"/v1/keyresults/{key_result['id']}", json={"name": "Again"}).status_code == 200
    assert client.patch(f"/v1/keyresults/{key_result['id']}", json={"owner_id": people["ann"]}).status_code == 200
    assert "needs a new owner" not in client.get(f"/keyresults/{key_result['id']}", headers=HTML).get_data(
        as_text=True)


@pytest.mark.parametrize("path, method", [("/v1/objectives/{objective_id}/keyresults", "post"),
                                          ("/v1/keyresults/{key_result_id}", "patch")])
def test_the_api_document_states_who_may_own_a_key_result(client, path, method):
    description = client.get("/v1/openapi.json").get_json()["paths"][path][method]["description"]
    assert "editor or an admin" in description and key_results.NOT_AN_OWNER_ROLE in description
