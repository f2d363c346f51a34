"""Concurrent edits merge by field (issue 36): a form carries what it showed; fields only the other person
changed are kept, fields only I changed are applied; only a field both changed differently refuses the save (409),
the page naming their value, who changed it and when, and mine; saving that form (Use mine) overwrites only those.
"""
import html
import re

import pytest

from helpers import fetch
from okr.db import transaction
from okr.rules.merging import merge
from okr.store import users

pytestmark = pytest.mark.usefixtures("fast_hashing")


def hidden(page, name):
    return html.unescape(re.search(rf'name="{name}" value="([^"]*)"', page).group(1))


def form_of(page):
    """What a key result form sends as shown."""
    form = {name: hidden(page, name) for name in ("csrf_token", "revision", "original")}
    for match in re.finditer(r'<input id="(\w+)" name="\w+" type="text" value="([^"]*)"', page):
        form[match.group(1)] = html.unescape(match.group(2))
    form["type"] = re.search(r'name="type" value="(\w+)" checked', page).group(1)
    owner = re.search(r'<select id="owner_id".*?</select>', page, re.S).group(0)
    chosen = re.search(r'<option value="([^"]*)" selected>', owner)
    form["owner_id"] = chosen.group(1) if chosen else ""
    return form


def test_the_merge_rule_takes_each_sides_own_changes_and_names_the_clashes():
    base = {"a": "1", "b": "2", "c": "3", "d": "4"}
    theirs = {"a": "1", "b": "20", "c": "30", "d": "40"}
    mine = {"a": "10", "b": "2", "c": "30", "d": "44"}
    assert merge(base, theirs, mine) == ({"a": "10", "b": "20", "c": "30", "d": "44"}, ["d"])


def test_maya_raises_the_target_and_sams_owner_change_keeps_it(app, client, key_result):
    with app.app_context(), transaction() as db:
        sam = users.create(db, "Sam Stone", "sam@example.com", "editor")
    edit = f"/keyresults/{key_result['id']}/edit"
    sams_form = form_of(client.get(edit).text)
    mayas_form = form_of(client.get(edit).text)
    assert client.post(edit, data={**mayas_form, "target_value_min": "65,000"}).status_code == 303
    saved = client.post(edit, data={**sams_form, "owner_id": sam["id"]})
    assert saved.status_code == 303
    body = fetch(client, f"/v1/keyresults/{key_result['id']}")
    with app.app_context(), transaction() as db:
        owner = db.execute("SELECT owner_id FROM key_results WHERE id = ?", (key_result["id"],)).fetchone()[0]
    assert (body["target_value_min"], owner) == ("65000.00", sam["id"])


def test_the_same_field_changed_on_both_sides_is_refused_with_theirs_who_when_and_mine(client, key_result):
    edit = f"/keyresults/{key_result['id']}/edit"
    form = form_of(client.get(edit).text)
    assert client.patch(f"/v1/keyresults/{key_result['id']}",
                        json={"target_value_min": "900", "name": "Their name"}).status_code == 200
    refused = client.post(edit, data={**form, "target_value_min": "700"})
    assert refused.status_code == 409
    assert "Someone else changed the target after you opened this form, so nothing was saved." in refused.text
    row = re.search(r'<tr id="conflict-target_value_min">(.*?)</tr>', refused.text, re.S).group(1)
    cells = re.findall(r'data-label="([^"]+)">([^<]*)<', row)
    event = fetch(client, "/v1/events?page_size=100")["events"][-1]
    assert dict(cells) == {"Field": "the target", "Theirs": "900", "Changed by": event["actor"]["name"],
                           "When": event["created_at"], "Yours": "700"}
    assert "conflict-name" not in refused.text
    assert ">Use mine</button>" in refused.text
    assert fetch(client, f"/v1/keyresults/{key_result['id']}")["target_value_min"] == "900.00"
    again = form_of(refused.text)
    assert (again["target_value_min"], again["name"]) == ("700", "Their name")  # mine, and their other change
    assert client.post(edit, data=again).status_code == 303
    body = fetch(client, f"/v1/keyresults/{key_result['id']}")
    assert (body["target_value_min"], body["name"]) == ("700.00", "Their name")


def test_the_same_value_typed_on_both_sides_is_no_conflict(client, key_result):
    edit = f"/keyresults/{key_result['id']}/edit"
    form = form_of(client.get(edit).text)
    assert client.patch(f"/v1/keyresults/{key_result['id']}", json={"target_value_min": "900"}).status_code == 200
    assert client.post(edit, data={**form, "target_value_min": "900"}).status_code == 303


def test_a_team_renamed_on_both_sides_is_a_conflict_with_the_table(client):
    team = client.post("/v1/teams", json={"name": "Platform"}).get_json()
    edit = f"/teams/{team['id']}/edit"
    page = client.get(edit).text
    form = {name: hidden(page, name) for name in ("csrf_token", "revision", "original")}
    assert client.post(f"/v1/teams/{team['id']}", json={"name": "Theirs"}).status_code == 200
    refused = client.post(edit, data={**form, "name": "Mine"})
    assert refused.status_code == 409 and 'id="conflict-name"' in refused.text
    assert fetch(client, f"/v1/teams/{team['id']}")["name"] == "Theirs"
