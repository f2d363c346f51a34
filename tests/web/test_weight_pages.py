"""A key result's weight on the pages: the edit form sets it (a whole number from 0 to 100, refused beside the field
otherwise, nothing saved), and the review page and the key result's page mark a weight other than 1."""
import pytest

from helpers import fetch, make_key_result
from test_key_result_pages import form_of

pytestmark = pytest.mark.usefixtures("fast_hashing")


def edit(client, key_result_id, **changes):
    path = f"/keyresults/{key_result_id}/edit"
    return client.post(path, data={**form_of(client.get(path).text), **changes})


def weight_of(client, key_result_id):
    return client.patch(f"/v1/keyresults/{key_result_id}", json={},
                        headers={"Content-Type": "application/merge-patch+json"}).get_json()["weight"]


def test_the_edit_form_shows_and_sets_the_weight(client, key_result):
    assert 'id="weight" name="weight" type="text" value="1"' in client.get(f"/keyresults/{key_result['id']}/edit").text
    assert edit(client, key_result["id"], weight=" 4 ").status_code == 303
    assert weight_of(client, key_result["id"]) == 4
    assert 'value="4"' in client.get(f"/keyresults/{key_result['id']}/edit").text


@pytest.mark.parametrize("typed", ["", "101", "-1", "1.5", "two", "٣"])
def test_a_bad_weight_is_refused_beside_the_field(client, key_result, typed):
    response = edit(client, key_result["id"], weight=typed, name="Renamed")
    assert response.status_code == 400
    assert '<span class="error" id="weight-error">Enter a whole number from 0 to 100.</span>' in response.text
    assert fetch(client, f"/v1/keyresults/{key_result['id']}")["name"] != "Renamed"
    assert weight_of(client, key_result["id"]) == 1


def test_a_new_key_result_takes_its_weight_from_the_form(client, objective):
    page = client.get(f"/keyresults/new?objective_id={objective['id']}").text
    assert 'id="weight" name="weight" type="text" value="1"' in page


def test_the_review_page_marks_weights_other_than_one(client, cycle, objective, key_result):
    other = make_key_result(client, objective["id"], "Cut churn")
    edit(client, key_result["id"], weight="3")
    edit(client, other["id"], weight="0")
    page = client.get(f"/cycles/{cycle['id']}").text
    assert "<span class=weight>weight 3</span>" in page and "<span class=weight>not counted</span>" in page
    assert page.count("<span class=weight>") == 2
    assert "weight 3</span> in its progress" in client.get(f"/keyresults/{key_result['id']}").text


def test_an_edit_form_without_the_weight_field_keeps_the_weight(client, key_result):
    edit(client, key_result["id"], weight="5")
    path = f"/keyresults/{key_result['id']}/edit"
    sent = {name: value for name, value in form_of(client.get(path).text).items() if name != "weight"}
    assert client.post(path, data={**sent, "name": "Renamed"}).status_code == 303
    assert weight_of(client, key_result["id"]) == 5
