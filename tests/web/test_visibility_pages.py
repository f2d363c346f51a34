"""Who may see an objective, on its forms: the new and edit forms offer everyone, its team or only its people (a
choice from the list, refused beside the field otherwise, nothing saved), and a form opened before the choice was
asked keeps the stored one."""
import pytest

from helpers import fetch, make_cycle
from test_objective_pages import csrf, form_of

pytestmark = pytest.mark.usefixtures("fast_hashing")


def visibility_of(client, objective_id):
    return client.patch(f"/v1/objectives/{objective_id}", json={},
                        headers={"Content-Type": "application/merge-patch+json"}).get_json()["visibility"]


def edit(client, objective_id, **changes):
    path = f"/objectives/{objective_id}/edit"
    return client.post(path, data={**form_of(client, path), **changes})


def test_a_new_objective_is_everyones_unless_the_form_says(client):
    cycle = make_cycle(client)
    page = client.get(f"/objectives/new?cycle_id={cycle['id']}").text
    assert '<option value="everyone" selected>Everyone</option>' in page
    for chosen in ("everyone", "team", "private"):
        response = client.post("/objectives/new", data={
            "csrf_token": csrf(client), "name": f"Grow {chosen}", "description": "", "kind": "team", "team_id": "",
            "assignee_id": "", "parent_objective_id": "", "cycle_id": cycle["id"], "visibility": chosen})
        assert response.status_code == 303, response.text
        objective_id = response.headers["Location"].rsplit("/", 1)[1]
        assert visibility_of(client, objective_id) == chosen


def test_the_edit_form_shows_and_sets_who_may_see_it(client, objective):
    assert edit(client, objective["id"], visibility="private").status_code == 303
    assert visibility_of(client, objective["id"]) == "private"
    assert '<option value="private" selected>Only its people</option>' in client.get(
        f"/objectives/{objective['id']}/edit").text


@pytest.mark.parametrize("typed", ["nobody", "Everyone", " team"])
def test_a_choice_not_in_the_list_is_refused_beside_the_field(client, objective, typed):
    response = edit(client, objective["id"], visibility=typed, name="Renamed")
    assert response.status_code == 400
    assert '<span class="error" id="visibility-error">Choose who may see it from the list.</span>' in response.text
    assert fetch(client, f"/v1/objectives/{objective['id']}")["name"] != "Renamed"
    assert visibility_of(client, objective["id"]) == "everyone"


def test_an_edit_form_without_the_choice_keeps_the_stored_one(client, objective):
    client.patch(f"/v1/objectives/{objective['id']}", json={"visibility": "team"},
                 headers={"Content-Type": "application/merge-patch+json"})
    path = f"/objectives/{objective['id']}/edit"
    form = {name: value for name, value in form_of(client, path).items() if name != "visibility"}
    assert client.post(path, data={**form, "name": "Renamed"}).status_code == 303
    assert visibility_of(client, objective["id"]) == "team"
    assert fetch(client, f"/v1/objectives/{objective['id']}")["name"] == "Renamed"


def test_deleting_a_cycle_says_it_takes_objectives_the_person_cannot_see(app, client, objective, cycle):
    """A cycle's delete takes every objective in it: the confirmation counts them all and says how many the person
    cannot see, as the cycle's page does."""
    from test_inbox_pages import signed_in
    client.patch(f"/v1/objectives/{objective['id']}", json={"visibility": "private"},
                 headers={"Content-Type": "application/merge-patch+json"})
    editor, _ = signed_in(app, "Eve Outside", "eve@example.com")
    page = editor.get(f"/cycles/{cycle['id']}/delete", headers={"Accept": "text/html"}).text
    assert "They include 1 objective you cannot see." in page
    assert objective["name"] not in page
