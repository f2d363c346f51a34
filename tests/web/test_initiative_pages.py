"""Initiatives on the pages: added from the form on a key result's page (refusals beside the fields), their state set
in their row, edited and deleted; shown on the review page (done / all) and in their owner's week; a viewer sees
them but gets no form; nothing is written without the CSRF token."""
import re
import sqlite3
from contextlib import closing

import pytest

from helpers import fetch
from test_comment_pages import csrf, signed_in

pytestmark = pytest.mark.usefixtures("fast_hashing")


def stored(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT id, name, state, owner_id, due_on, link FROM initiatives ORDER BY seq").fetchall()


def section(page):
    return re.search(r'<section class="initiatives".*?</section>', page, re.S).group(0)


def add(client, key_result_id, token=None, **fields):
    page = f"/keyresults/{key_result_id}"
    form = {"csrf_token": token or csrf(client, page), "name": "Ship the signup flow", "owner_id": "",
            "state": "planned", "due_on": "", "link": "", **fields}
    return client.post(f"{page}/initiatives", data=form)


def test_the_form_adds_an_initiative_and_the_page_lists_it(app, client, key_result):
    page = f"/keyresults/{key_result['id']}"
    assert "No initiatives yet" in section(client.get(page).text)
    response = add(client, key_result["id"], due_on="2026-12-15", link="https://tracker.example.com/PROJ-12",
                   state="in_progress")
    assert response.status_code == 303
    [(initiative_id, name, state, owner, due, link)] = stored(app)
    assert response.headers["Location"].endswith(f"{page}#i-{initiative_id}")
    assert (name, state, owner, due, link) == ("Ship the signup flow", "in_progress", None, "2026-12-15",
                                               "https://tracker.example.com/PROJ-12")
    shown = section(client.get(page).text)
    assert "0 of 1 done" in shown
    assert '<a href="https://tracker.example.com/PROJ-12" rel="noopener noreferrer">Ship the signup flow</a>' in shown
    assert '<time datetime="2026-12-15">' in shown and "In progress" in shown


@pytest.mark.parametrize("fields, field, words", [
    ({"name": ""}, "name", "Fill this in."),
    ({"link": "javascript:alert(1)"}, "link", "Must be a web address starting with https:// or http://."),
    ({"due_on": "next week"}, "due_on", "Enter a date such as 2026-12-15."),
    ({"owner_id": "00000000-0000-4000-8000-000000000000"}, "owner_id", "Choose a person from the list."),
])
def test_a_bad_field_is_refused_beside_it_and_nothing_is_written(app, client, key_result, fields, field, words):
    response = add(client, key_result["id"], **fields)
    assert response.status_code == 400
    error = re.search(rf'<span class="error" id="{field}-error">([^<]*)</span>', section(response.text))
    assert error and words in error.group(1)
    assert stored(app) == []
    assert 'value="Ship the signup flow"' in section(response.text) or field == "name"  # what was typed stays


def test_the_state_is_set_in_its_row(app, client, key_result):
    add(client, key_result["id"])
    [(initiative_id, *_)] = stored(app)
    page = f"/keyresults/{key_result['id']}"
    token = csrf(client, page)
    assert client.post(f"/initiatives/{initiative_id}/state", data={"csrf_token": token, "state": "done"}
                       ).status_code == 303
    assert stored(app)[0][2] == "done"
    assert "1 of 1 done" in section(client.get(page).text)
    assert client.post(f"/initiatives/{initiative_id}/state", data={"csrf_token": token, "state": "finished"}
                       ).status_code == 400
    assert stored(app)[0][2] == "done"


def test_an_initiative_is_edited_and_deleted(app, client, key_result):
    add(client, key_result["id"])
    [(initiative_id, *_)] = stored(app)
    edit = f"/initiatives/{initiative_id}/edit"
    form = client.get(edit).text
    hidden = dict(re.findall(r'name="(csrf_token|revision|original)" value="([^"]*)"', form))
    hidden["original"] = hidden["original"].replace("&#34;", '"').replace("&quot;", '"')
    answer = client.post(edit, data={**hidden, "name": "Ship it sooner", "owner_id": "", "state": "blocked",
                                     "due_on": "2026-12-01", "link": ""})
    assert answer.status_code == 303, answer.text
    assert stored(app)[0][1:5] == ("Ship it sooner", "blocked", None, "2026-12-01")
    delete = f"/initiatives/{initiative_id}/delete"
    assert "Ship it sooner" in client.get(delete).text
    assert client.post(delete, data={"csrf_token": hidden["csrf_token"]}).status_code == 303
    assert stored(app) == []


def test_without_the_csrf_token_nothing_is_written(app, client, key_result):
    assert add(client, key_result["id"], token="wrong").status_code == 400
    assert stored(app) == []


def test_the_review_page_counts_each_key_results_initiatives(app, client, cycle, key_result):
    add(client, key_result["id"])
    add(client, key_result["id"], name="Second", state="done")
    assert "<small class=kr-initiatives>1/2 initiatives done</small>" in client.get(f"/cycles/{cycle['id']}").text
    client.patch(f"/v1/keyresults/{key_result['id']}", json={"progress_from": "initiatives"},
                 headers={"Content-Type": "application/merge-patch+json"})
    review = client.get(f"/cycles/{cycle['id']}").text
    assert "<small class=kr-initiatives>1/2 initiatives done: its progress</small>" in review
    assert fetch(client, f"/v1/cycles/{cycle['id']}/report")["progress"] == "0.50"


def test_a_viewer_sees_the_initiatives_but_no_form(app, key_result):
    admin, _ = signed_in(app, "Maya Admin", "maya@example.com", "admin")
    viewer, _ = signed_in(app, "Vi Ewer", "vi@example.com", "viewer")
    assert add(admin, key_result["id"]).status_code == 303
    [(initiative_id, *_)] = stored(app)
    page = f"/keyresults/{key_result['id']}"
    shown = section(viewer.get(page).text)
    assert "Ship the signup flow" in shown and "<form" not in shown
    token = csrf(viewer, page)
    assert add(viewer, key_result["id"], token=token).status_code == 403
    assert viewer.post(f"/initiatives/{initiative_id}/state", data={"csrf_token": token, "state": "done"}
                       ).status_code == 403
    assert viewer.get(f"/initiatives/{initiative_id}/edit").status_code == 403
    assert len(stored(app)) == 1 and stored(app)[0][2] == "planned"


def test_an_owner_finds_their_open_initiatives_in_their_week(app, client, cycle, key_result, clock):
    dated = client.patch(f"/v1/cycles/{cycle['id']}", json={"starts_on": "2026-01-01", "ends_on": "2026-12-31"},
                         headers={"Content-Type": "application/merge-patch+json"})
    assert dated.status_code == 200, dated.get_json()
    clock.now = "2026-03-01T09:00:00Z"
    editor, user = signed_in(app, "Eddie Editor", "eddie@example.com", "editor")
    assert add(editor, key_result["id"], owner_id=user["id"], due_on="2026-01-02", name="Late one").status_code == 303
    assert add(editor, key_result["id"], owner_id=user["id"], name="Finished", state="done").status_code == 303
    assert add(editor, key_result["id"], name="Nobody's").status_code == 303
    week = editor.get("/", headers={"Accept": "text/html"}).text
    found = re.search(r'<section aria-labelledby="initiatives-heading">.*?</section>', week, re.S).group(0)
    assert "Late one" in found and "overdue since" in found
    assert "Finished" not in found and "Nobody's" not in found


def test_a_closed_cycles_initiatives_are_not_changed_from_the_pages(app, client, cycle, key_result):
    add(client, key_result["id"])
    [(initiative_id, *_)] = stored(app)
    token = csrf(client, f"/keyresults/{key_result['id']}")
    assert client.post(f"/v1/cycles/{cycle['id']}/close").status_code == 200
    assert add(client, key_result["id"], token=token).status_code == 409
    assert client.post(f"/initiatives/{initiative_id}/state", data={"csrf_token": token, "state": "done"}
                       ).status_code == 409
    assert client.get(f"/initiatives/{initiative_id}/edit").status_code == 409
    assert client.post(f"/initiatives/{initiative_id}/delete", data={"csrf_token": token}).status_code == 409
    assert [row[2] for row in stored(app)] == ["planned"]
