"""The key result pages (issue 23): new, edit and delete forms: field names, the target rules per type with
refusals beside the fields, the owner, a new value as a check-in, conflicts, viewers."""
import re
import sqlite3

import pytest

from helpers import fetch, make_user

pytestmark = pytest.mark.usefixtures("fast_hashing")

HTML = {"Accept": "text/html"}
API_FIELDS = {"name", "type", "target_value_min", "target_value_max", "current_value", "confidence", "owner_id",
              "unit", "unit_position", "weight", "progress_from"}


def csrf(client, objective_id):
    page = client.get(f"/keyresults/new?objective_id={objective_id}", headers=HTML).text
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


def hidden(page, name):
    import html
    return html.unescape(re.search(rf'name="{name}" value="([^"]*)"', page).group(1))


def form_of(page):
    """What a key result form sends as shown."""
    form = {name: hidden(page, name) for name in ("csrf_token", "revision", "original") if f'name="{name}"' in page}
    for match in re.finditer(r'<input id="(\w+)" name="\w+" type="text" value="([^"]*)"', page):
        form[match.group(1)] = match.group(2)
    form["type"] = re.search(r'name="type" value="(\w+)" checked', page).group(1)
    owner = re.search(r'<select id="owner_id".*?</select>', page, re.S).group(0)
    chosen = re.search(r'<option value="([^"]*)" selected>', owner)
    form["owner_id"] = chosen.group(1) if chosen else ""
    return form


def names_in(page):
    form = re.search(r'<form method="post" class="edit[^"]*"[^>]*>(.*?)</form>', page, re.S).group(1)
    return set(re.findall(r'\bname="([^"]+)"', form)) - {"csrf_token", "revision", "original"}


def count(app, sql, *params):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        return db.execute(sql, params).fetchone()[0]


def new(client, objective_id, **fields):
    body = {"csrf_token": csrf(client, objective_id), "name": "Win customers", "type": "positive",
            "target_value_min": "", "target_value_max": "", "current_value": "", "confidence": "", "owner_id": "",
            **fields}
    return client.post(f"/keyresults/new?objective_id={objective_id}", data=body)


def test_the_forms_fields_are_the_apis(client, objective, key_result):
    for path in (f"/keyresults/new?objective_id={objective['id']}", f"/keyresults/{key_result['id']}/edit"):
        assert names_in(client.get(path).text) == API_FIELDS
    body = client.patch(f"/v1/keyresults/{key_result['id']}", json={}).get_json()
    assert API_FIELDS <= set(body)


def test_creating_from_the_form_gives_what_the_api_answers(client, objective, runner):
    owner = make_user(runner)
    response = new(client, objective["id"], target_value_min="500", current_value="120", confidence="80 %",
                   owner_id=owner["id"])
    assert response.status_code == 303
    new_id = response.headers["Location"].rsplit("/", 1)[1]
    assert response.headers["Location"].endswith(f"/keyresults/{new_id}")
    body = fetch(client, f"/v1/keyresults/{new_id}")
    assert {k: body[k] for k in ("name", "type", "objective_id", "target_value_min", "target_value_max",
                                 "current_value", "confidence")} == {
        "name": "Win customers", "type": "positive", "objective_id": objective["id"], "target_value_min": "500.00",
        "target_value_max": None, "current_value": "120.00", "confidence": "0.80"}
    assert client.patch(f"/v1/keyresults/{new_id}", json={}).get_json()["owner_id"] == owner["id"]
    checkins = fetch(client, f"/v1/keyresults/{new_id}/checkins")
    assert [c["value"] for c in checkins["checkins"]] == ["120.00"]


def test_a_new_key_result_left_at_its_defaults_starts_at_0_with_50_percent(client, objective):
    response = new(client, objective["id"], type="milestone")
    body = fetch(client, response.headers["Location"].replace("http://localhost", "").replace("/keyresults", "/v1/keyresults"))
    assert (body["current_value"], body["confidence"], body["target_value_min"]) == ("0.00", "0.50", "1.00")


@pytest.mark.parametrize("kind, fields, refused", [
    ("baseline", {"target_value_min": "10"},
     {"target_value_min": "A baseline key result has no target: leave this empty."}),
    ("baseline", {"target_value_max": "10"},
     {"target_value_max": "Only a range key result has a highest target: leave this empty."}),
    ("milestone", {"target_value_min": "2"},
     {"target_value_min": "A milestone&#39;s target is always 1: leave this empty."}),
    ("positive", {}, {"target_value_min": "A positive key result needs a target: fill this in."}),
    ("negative", {"target_value_min": "5", "target_value_max": "9"},
     {"target_value_max": "Only a range key result has a highest target: leave this empty."}),
    ("range", {"target_value_min": "5"}, {"target_value_max": "A range key result needs a highest target: fill this in."}),
    ("range", {"target_value_min": "9", "target_value_max": "5"},
     {"target_value_min": "Make this no greater than the highest target."}),
    ("positive", {"target_value_min": "lots"}, {"target_value_min": "Write a number such as 60000, 60,000, 60k or 1.5M."}),
    ("positive", {"target_value_min": "5", "confidence": "180 %"},
     {"confidence": "Enter a number such as 0.8 or 80 %."}),
])
def test_targets_the_type_forbids_or_needs_are_refused_beside_the_field(app, client, objective, kind, fields, refused):
    before = count(app, "SELECT count(*) FROM key_results")
    response = new(client, objective["id"], type=kind, name="Typed <name>", **fields)
    assert response.status_code == 400
    for field, sentence in refused.items():
        assert f'<span class="error" id="{field}-error">{sentence}</span>' in response.text
        assert f'id="{field}" name="{field}" type="text" value="{fields.get(field, "")}"' in response.text
    assert 'value="Typed &lt;name&gt;"' in response.text
    assert f'name="type" value="{kind}" checked' in response.text
    assert count(app, "SELECT count(*) FROM key_results") == before


@pytest.mark.parametrize("kind, fields, stored", [
    ("baseline", {}, (None, None)),
    ("milestone", {}, ("1.00", None)),
    ("milestone", {"target_value_min": "1"}, ("1.00", None)),
    ("positive", {"target_value_min": "10"}, ("10.00", None)),
    ("negative", {"target_value_min": "2"}, ("2.00", None)),
    ("range", {"target_value_min": "2", "target_value_max": "4.5"}, ("2.00", "4.50")),
])
def test_targets_each_type_takes(client, objective, kind, fields, stored):
    response = new(client, objective["id"], type=kind, **fields)
    assert response.status_code == 303, response.text
    body = fetch(client, "/v1/keyresults/" + response.headers["Location"].rsplit("/", 1)[1])
    assert (body["type"], body["target_value_min"], body["target_value_max"]) == (kind, *stored)


def test_editing_changes_the_type_and_a_new_value_is_a_check_in(app, client, key_result):
    page = client.get(f"/keyresults/{key_result['id']}/edit").text
    assert "Changing it records a check-in" in page
    form = form_of(page)
    assert (form["target_value_min"], form["current_value"], form["confidence"]) == ("500", "100", "80 %")
    response = client.post(f"/keyresults/{key_result['id']}/edit", data={
        **form, "type": "range", "target_value_min": "400", "target_value_max": "600", "current_value": "150"})
    assert response.status_code == 303 and response.headers["Location"].endswith(f"/keyresults/{key_result['id']}")
    body = fetch(client, f"/v1/keyresults/{key_result['id']}")
    assert (body["type"], body["target_value_min"], body["target_value_max"], body["current_value"],
            body["confidence"]) == ("range", "400.00", "600.00", "150.00", "0.80")
    assert count(app, "SELECT count(*) FROM checkins") == 2
    unchanged = form_of(client.get(f"/keyresults/{key_result['id']}/edit").text)
    assert client.post(f"/keyresults/{key_result['id']}/edit", data={**unchanged, "name": "Renamed"}).status_code == 303
    assert count(app, "SELECT count(*) FROM checkins") == 2  # a new name is no check-in


def test_an_edited_key_results_value_and_confidence_must_be_filled_in(app, client, key_result):
    form = form_of(client.get(f"/keyresults/{key_result['id']}/edit").text)
    response = client.post(f"/keyresults/{key_result['id']}/edit", data={**form, "current_value": " ",
                                                                         "confidence": ""})
    assert response.status_code == 400
    assert '<span class="error" id="current_value-error">Fill this in.</span>' in response.text
    assert '<span class="error" id="confidence-error">' in response.text
    assert fetch(client, f"/v1/keyresults/{key_result['id']}")["current_value"] == "100.00"


def test_the_owner_is_set_and_cleared(client, runner, key_result):
    owner = make_user(runner, "Olu Owner", "olu@example.com")
    edit = f"/keyresults/{key_result['id']}/edit"
    assert client.post(edit, data={**form_of(client.get(edit).text), "owner_id": owner["id"]}).status_code == 303
    assert client.patch(f"/v1/keyresults/{key_result['id']}", json={}).get_json()["owner_id"] == owner["id"]
    page = client.get(f"/keyresults/{key_result['id']}").text
    assert "Owner: Olu Owner" in page
    assert f'<option value="{owner["id"]}" selected>Olu Owner</option>' in client.get(edit).text
    assert client.post(edit, data={**form_of(client.get(edit).text), "owner_id": ""}).status_code == 303
    assert client.patch(f"/v1/keyresults/{key_result['id']}", json={}).get_json()["owner_id"] is None
    assert "Owner: nobody" in client.get(f"/keyresults/{key_result['id']}").text


def test_an_owner_who_is_no_user_is_refused_beside_the_field(client, key_result):
    edit = f"/keyresults/{key_result['id']}/edit"
    response = client.post(edit, data={**form_of(client.get(edit).text), "owner_id": "nobody-at-all"})
    assert response.status_code == 400
    assert '<span class="error" id="owner_id-error">Choose a person from the list.</span>' in response.text


def test_a_save_after_someone_elses_change_to_another_field_keeps_both(client, key_result):
    edit = f"/keyresults/{key_result['id']}/edit"
    form = form_of(client.get(edit).text)
    assert client.patch(f"/v1/keyresults/{key_result['id']}", json={"target_value_min": "900"}).status_code == 200
    assert client.post(edit, data={**form, "name": "Mine"}).status_code == 303
    body = fetch(client, f"/v1/keyresults/{key_result['id']}")
    assert (body["name"], body["target_value_min"]) == ("Mine", "900.00")


def test_a_check_in_meanwhile_is_kept_by_a_save_of_the_form(client, key_result):
    edit = f"/keyresults/{key_result['id']}/edit"
    form = form_of(client.get(edit).text)
    client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": "300"})
    assert client.post(edit, data={**form, "name": "Mine"}).status_code == 303
    body = fetch(client, f"/v1/keyresults/{key_result['id']}")
    assert (body["name"], body["current_value"]) == ("Mine", "300.00")


def test_delete_asks_first_with_the_check_ins_and_cancel_keeps_it(client, objective, key_result):
    for value in ("110", "120"):
        client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": value})
    edit = client.get(f"/keyresults/{key_result['id']}/edit").text
    assert f'href="/keyresults/{key_result["id"]}/delete"' in edit
    page = client.get(f"/keyresults/{key_result['id']}/delete").text
    assert "3 check-ins will be deleted." in page
    assert f'href="/keyresults/{key_result["id"]}/edit" class="cancel">Cancel</a>' in page
    assert client.get(f"/v1/keyresults/{key_result['id']}").status_code == 200
    done = client.post(f"/keyresults/{key_result['id']}/delete", data={"csrf_token": csrf(client, objective["id"])})
    assert done.status_code == 303 and done.headers["Location"].endswith(f"/objectives/{objective['id']}")
    assert client.get(f"/v1/keyresults/{key_result['id']}").status_code == 404


def test_a_new_key_result_needs_an_objective_that_exists(client):
    assert client.get("/keyresults/new?objective_id=nope", headers=HTML).status_code == 404
    assert client.get("/keyresults/new", headers=HTML).status_code == 404


def test_a_key_results_page_links_to_its_edit_form(client, key_result):
    assert f'href="/keyresults/{key_result["id"]}/edit">Edit</a>' in client.get(f"/keyresults/{key_result['id']}").text


def test_a_viewer_gets_403_on_each_form_and_sees_no_edit_link(app, client, objective, key_result):
    from test_accounts import person, sign_in
    person(app)
    person(app, "Vi Ewer", "vi@example.com", "viewer")
    assert sign_in(client, "vi@example.com").status_code == 303
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/cycles", headers=HTML).text).group(1)
    for path in (f"/keyresults/new?objective_id={objective['id']}", f"/keyresults/{key_result['id']}/edit",
                 f"/keyresults/{key_result['id']}/delete"):
        assert client.get(path).status_code == 403
        assert client.post(path, data={"csrf_token": token, "name": "x", "type": "baseline"}).status_code == 403
    page = client.get(f"/keyresults/{key_result['id']}")
    assert page.status_code == 200 and "/edit" not in page.text
    assert count(app, "SELECT count(*) FROM key_results") == 1
