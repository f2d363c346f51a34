"""The change history on an objective's and a key result's pages (issue 24): their own changes newest first,
the latest 20 with a link to all of them; an objective's key results coming and going; a key result's
check-ins with their comments."""
import pytest

from edit_forms import get
from helpers import make_key_result, make_objective
from okr.db import transaction
from okr.store import events

pytestmark = pytest.mark.usefixtures("fast_hashing")


def history(client, path, status=200):
    """The sentences of the page's change history, and the section."""
    section = get(client, path, status).one("section", cls="change-history")
    items = section.find_all("li")
    # The tree's text puts a space after each element: "<a>“A”</a>: name" reads “A” : name there.
    return [item.one("p", cls="what").text.replace("” :", "”:") for item in items], section


def test_an_objectives_history_has_its_own_changes_and_its_key_results_coming_and_going(client, cycle):
    objective = make_objective(client, cycle["id"], "Grow revenue")
    other = make_objective(client, cycle["id"], "Someone else's")
    path = f"/v1/objectives/{objective['id']}"
    assert client.patch(path, json={"description": "Why it matters"}).status_code == 200
    kept = make_key_result(client, objective["id"], "Kept")
    dropped = make_key_result(client, objective["id"], "Dropped")
    assert client.delete(f"/v1/keyresults/{dropped['id']}").status_code == 200
    assert client.post(f"/v1/keyresults/{kept['id']}/checkins", json={"value": "4"}).status_code == 200
    assert client.patch(f"/v1/objectives/{other['id']}", json={"name": "Not here"}).status_code == 200
    said, section = history(client, f"/objectives/{objective['id']}")
    assert section.one("h2").text == "Change history"
    assert said == [
        "Someone (sign-in off) deleted key result “Dropped”",
        "Someone (sign-in off) added key result “Dropped” to objective “Grow revenue”",
        "Someone (sign-in off) added key result “Kept” to objective “Grow revenue”",
        "Someone (sign-in off) changed objective “Grow revenue”: description",
        "Someone (sign-in off) created objective “Grow revenue”",
    ]
    links = [a.attrs["href"] for a in section.find_all("a")]
    assert f"/keyresults/{kept['id']}" in links and f"/keyresults/{dropped['id']}" not in links
    assert section.find_all("p", cls="all-history") == []


def test_an_objectives_history_shows_20_and_links_to_all(client, cycle):
    objective = make_objective(client, cycle["id"], "Name 0")
    for number in range(1, 25):
        assert client.patch(f"/v1/objectives/{objective['id']}", json={"name": f"Name {number}"}).status_code == 200
    said, section = history(client, f"/objectives/{objective['id']}")
    assert len(said) == 20 and said[0] == "Someone (sign-in off) renamed objective “Name 23” → “Name 24”"
    link = section.one("p", cls="all-history").one("a").attrs["href"]
    assert link == f"/objectives/{objective['id']}?history=all#change-history"
    everything, section = history(client, link.split("#")[0])
    assert len(everything) == 25 and everything[-1] == "Someone (sign-in off) created objective “Name 0”"
    assert section.find_all("p", cls="all-history") == []


def test_a_key_results_history_has_its_check_ins_with_their_comments_and_its_edits(client, objective, key_result):
    other = make_key_result(client, objective["id"], "Another")
    assert client.post(f"/v1/keyresults/{other['id']}/checkins", json={"value": "1"}).status_code == 200
    path = f"/v1/keyresults/{key_result['id']}"
    assert client.post(f"{path}/checkins", json={"value": "120", "confidence": "0.7",
                                                 "comment": "A <b>good</b> week"}).status_code == 200
    assert client.patch(path, json={"target_value_min": "600"}).status_code == 200
    page = client.get(f"/keyresults/{key_result['id']}", headers={"Accept": "text/html"}).get_data(as_text=True)
    assert "A &lt;b&gt;good&lt;/b&gt; week" in page
    said, section = history(client, f"/keyresults/{key_result['id']}")
    assert said == [
        "Someone (sign-in off) changed key result “Reach 500 customers”: target 500 → 600",
        "Someone (sign-in off) checked in 120 (confidence 70%) on key result “Reach 500 customers”",
        f"Someone (sign-in off) added key result “Reach 500 customers” to objective “{objective['name']}”",
    ]
    assert section.find_all("li")[1].one("p", cls="note").text == "A <b>good</b> week"
    # The check-ins table keeps its own History heading; the changes are a section of their own.
    assert get(client, f"/keyresults/{key_result['id']}").one("table", cls="history")


def test_a_viewer_sees_the_history(app, client, key_result):
    from test_activity_page import person, signed_in
    person(app, "Vera Viewer", "vera@example.com", role="viewer")
    said, _ = history(signed_in(app, "vera@example.com"), f"/keyresults/{key_result['id']}")
    assert said[-1].startswith("Someone (sign-in off) added key result “Reach 500 customers”")


def test_comments_show_in_the_history_of_what_they_are_on(app, client, objective, key_result):
    # Recorded as the comments' store will record them (okr.store.events), ahead of it.
    with app.app_context(), transaction() as db:
        events.record(db, "comment", "created", "c1", {"id": "c1", "body": "Looks <i>right</i>"},
                      parent_id=objective["id"])
        events.record(db, "comment", "deleted", "c2", {"id": "c2", "body": "Gone"}, parent_id=key_result["id"])
    said, section = history(client, f"/objectives/{objective['id']}")
    assert said[0] == f"The service commented on objective “{objective['name']}”"
    assert section.find_all("li")[0].one("p", cls="note").text == "Looks <i>right</i>"
    said, section = history(client, f"/keyresults/{key_result['id']}")
    assert said[0] == "The service deleted a comment on key result “Reach 500 customers”"
    assert section.find_all("li")[0].find_all("p", cls="note") == []  # a deleted comment's text is not shown
