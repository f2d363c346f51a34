"""Correcting and deleting a check-in on the key result's page (issue 36): Correct and Delete beside the check-ins
this person may change, a form with the check-in form's rules and messages, a confirm page before a delete."""
import re

import pytest

from helpers import fetch

pytestmark = pytest.mark.usefixtures("fast_hashing")

HTML = {"Accept": "text/html"}


def csrf(page):
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


def check_in(client, key_result, value):
    response = client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": value})
    assert response.status_code == 200
    return response.get_json()


def test_the_history_links_each_check_in_but_the_starting_one(client, key_result):
    made = check_in(client, key_result, "200")
    start = client.get(f"/v1/keyresults/{key_result['id']}/checkins").get_json()["checkins"][0]
    page = client.get(f"/keyresults/{key_result['id']}", headers=HTML).text
    assert f'href="/checkins/{made["id"]}/edit">Correct</a>' in page
    assert f'href="/checkins/{made["id"]}/delete">Delete</a>' in page
    assert f"/checkins/{start['id']}/" not in page
    assert client.get(f"/checkins/{start['id']}/edit", headers=HTML).status_code == 409


def test_a_correction_saves_and_the_key_result_follows(client, key_result):
    made = check_in(client, key_result, "200")
    edit = f"/checkins/{made['id']}/edit"
    page = client.get(edit, headers=HTML).text
    assert 'value="200"' in page
    saved = client.post(edit, data={"csrf_token": csrf(page), "value": "250", "confidence": "70 %",
                                    "comment": "miscounted"})
    assert saved.status_code == 303
    body = fetch(client, f"/v1/keyresults/{key_result['id']}")
    assert (body["current_value"], body["confidence"]) == ("250.00", "0.70")
    assert fetch(client, f"/v1/checkins/{made['id']}")["comment"] == "miscounted"


def test_a_bad_value_is_refused_beside_the_field_and_nothing_changes(client, key_result):
    made = check_in(client, key_result, "200")
    edit = f"/checkins/{made['id']}/edit"
    page = client.get(edit, headers=HTML).text
    refused = client.post(edit, data={"csrf_token": csrf(page), "value": "lots", "confidence": "", "comment": ""})
    assert refused.status_code == 400
    assert 'id="value-error"' in refused.text and 'value="lots"' in refused.text
    assert fetch(client, f"/v1/checkins/{made['id']}") == made


def test_delete_asks_first_and_a_second_delete_is_a_404_page(client, key_result):
    check_in(client, key_result, "200")
    wrong = check_in(client, key_result, "9000")
    page = client.get(f"/checkins/{wrong['id']}/delete", headers=HTML)
    assert page.status_code == 200 and "Delete" in page.text
    assert fetch(client, f"/v1/checkins/{wrong['id']}") == wrong
    done = client.post(f"/checkins/{wrong['id']}/delete", data={"csrf_token": csrf(page.text)})
    assert done.status_code == 303
    assert fetch(client, f"/v1/keyresults/{key_result['id']}")["current_value"] == "200.00"
    again = client.post(f"/checkins/{wrong['id']}/delete", data={"csrf_token": csrf(page.text)}, headers=HTML)
    assert again.status_code == 404
