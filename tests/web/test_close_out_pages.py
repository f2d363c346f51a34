"""Closing out a cycle on its pages (issue 36): the close-out form with suggested scores and outcomes, saved in
several sittings, refused beside the field, then closed; a closed cycle's pages read-only with a note saying who
closed it and when, its forms a 409 page; reopening by an admin only."""
import re
from datetime import date

import pytest

from helpers import fetch
from okr.db import transaction
from okr.reports import alignment
from people_page import sign_in

HTML = {"Accept": "text/html"}


@pytest.fixture
def key_result_fields():
    """From 30 to 100 customers."""
    return {"name": "Reach 100 customers", "type": "positive", "current_value": "30", "target_value_min": "100"}


@pytest.fixture
def key_result(key_result, client):
    """Checked in at 51: a progress of 0.30."""
    assert client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": "51"}).status_code == 200
    return key_result


def csrf(page):
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


def value_of(page, name):
    found = re.search(rf'<input id="{re.escape(name)}" name="{re.escape(name)}" type="text" value="([^"]*)"', page)
    return found.group(1)


def selected(page, name):
    select = re.search(rf'<select id="{re.escape(name)}" name="{re.escape(name)}".*?</select>', page, re.S).group(0)
    return re.search(r'<option value="([^"]*)" selected>', select).group(1)


def report_of(client, cycle):
    return client.get(f"/v1/cycles/{cycle['id']}/report").get_json()


def test_the_form_suggests_scores_and_outcomes_from_the_final_progress(client, cycle, objective, key_result):
    page = client.get(f"/cycles/{cycle['id']}/close", headers=HTML).text
    assert value_of(page, f"o-{objective['id']}-score") == "0.3"
    assert selected(page, f"o-{objective['id']}-outcome") == "partly_achieved"
    assert value_of(page, f"k-{key_result['id']}-score") == "0.3"
    assert "What worked, what did not, what next." in page
    assert report_of(client, cycle)["objectives"][0]["score"] is None  # shown, not yet saved


def test_two_sittings_keep_what_was_saved_and_close_locks(client, cycle, objective, key_result):
    path = f"/cycles/{cycle['id']}/close"
    page = client.get(path, headers=HTML).text
    first = client.post(path, data={"csrf_token": csrf(page), "action": "save",
                                    f"o-{objective['id']}-outcome": "missed", f"o-{objective['id']}-score": "20 %",
                                    f"o-{objective['id']}-reflection": "Worked: demos.",
                                    f"k-{key_result['id']}-score": "0.25"})
    assert first.status_code == 303 and "saved=1" in first.headers["Location"]
    node = report_of(client, cycle)["objectives"][0]
    assert (node["outcome"], node["score"], node["reflection"], node["key_results"][0]["score"]) == (
        "missed", "0.20", "Worked: demos.", "0.25")
    # The second sitting opens with what the first saved, and closes.
    page = client.get(path, headers=HTML).text
    assert value_of(page, f"o-{objective['id']}-score") == "0.2" and "Worked: demos." in page
    form = {name: value for name, value in re.findall(r'<input id="[^"]+" name="([^"]+)" type="text" value="([^"]*)"',
                                                       page)}
    closed = client.post(path, data={**form, "csrf_token": csrf(page), "action": "close",
                                      f"o-{objective['id']}-outcome": "missed",
                                      f"o-{objective['id']}-reflection": "Worked: demos. Next: pricing."})
    assert closed.status_code == 303
    report = report_of(client, cycle)
    assert report["cycle"]["closed_at"] is not None
    assert report["objectives"][0]["reflection"] == "Worked: demos. Next: pricing."


def test_a_bad_score_is_refused_beside_the_field_and_nothing_is_saved(client, cycle, objective, key_result):
    path = f"/cycles/{cycle['id']}/close"
    page = client.get(path, headers=HTML).text
    refused = client.post(path, data={"csrf_token": csrf(page), "action": "close",
                                      f"o-{objective['id']}-outcome": "achieved",
                                      f"o-{objective['id']}-score": "1.5", f"k-{key_result['id']}-score": "lots"})
    assert refused.status_code == 400
    for name in (f"o-{objective['id']}-score", f"k-{key_result['id']}-score"):
        assert (f'<span class="error" id="{name}-error">Enter a score from 0 to 1, such as 0.7 or 70 %.</span>'
                in refused.text)
    assert 'value="1.5"' in refused.text  # what was typed stays
    report = report_of(client, cycle)
    assert report["cycle"]["closed_at"] is None and report["objectives"][0]["outcome"] is None


def test_an_upcoming_cycle_cannot_be_closed_out(client, clock):
    clock.now = "2026-05-01T00:00:00Z"
    later = client.post("/v1/cycles", json={"name": "Q4", "starts_on": "2026-10-01"}).get_json()
    assert "Close out" not in client.get(f"/cycles/{later['id']}", headers=HTML).text
    refused = client.get(f"/cycles/{later['id']}/close", headers=HTML)
    assert refused.status_code == 409 and "has not started" in refused.text


def test_a_closed_cycles_pages_are_read_only_and_its_forms_refused(client, cycle, objective, key_result):
    comment = client.post(f"/v1/objectives/{objective['id']}/comments", json={"body": "Go"}).get_json()
    cycle_page = client.get(f"/cycles/{cycle['id']}", headers=HTML).text
    assert "Close out" in cycle_page and "Add objective" in cycle_page
    assert client.post(f"/v1/cycles/{cycle['id']}/close").status_code == 200
    cycle_page = client.get(f"/cycles/{cycle['id']}", headers=HTML).text
    assert 'class="closed-note"' in cycle_page and "is closed:" in cycle_page
    for gone in ("Close out", "Add objective", "Edit cycle"):
        assert gone not in cycle_page
    assert "Copy to next cycle" in cycle_page  # carrying over is what follows a close
    objective_page = client.get(f"/objectives/{objective['id']}", headers=HTML).text
    assert "is closed:" in objective_page and "Add key result" not in objective_page
    assert 'class="comment-form"' not in objective_page
    key_result_page = client.get(f"/keyresults/{key_result['id']}", headers=HTML).text
    assert "Record a check-in" not in key_result_page and ">Correct</a>" not in key_result_page
    for path in (f"/objectives/{objective['id']}/edit", f"/keyresults/{key_result['id']}/edit",
                 f"/keyresults/new?objective_id={objective['id']}", f"/objectives/new?cycle_id={cycle['id']}",
                 f"/cycles/{cycle['id']}/edit", f"/cycles/{cycle['id']}/delete", f"/comments/{comment['id']}/edit",
                 f"/cycles/{cycle['id']}/close"):
        refused = client.get(path, headers=HTML)
        assert refused.status_code == 409, path
        assert "<h1>This cycle is closed</h1>" in refused.text
    # A form opened before the close is refused as it is sent: nothing changes.
    sent = client.post(f"/keyresults/{key_result['id']}", data={"csrf_token": csrf(key_result_page), "value": "90"},
                       headers=HTML)
    assert sent.status_code == 409 and "This cycle is closed" in sent.text
    assert fetch(client, f"/v1/keyresults/{key_result['id']}")["current_value"] == "51.00"


def test_only_an_admin_reopens_and_the_note_says_who_closed_it(app, client, cycle, objective, maya, ed):
    sign_in(client, "ed@example.com")
    page = client.get(f"/cycles/{cycle['id']}/close", headers=HTML).text
    assert client.post(f"/cycles/{cycle['id']}/close", data={"csrf_token": csrf(page), "action": "close"}
                       ).status_code == 303
    cycle_page = client.get(f"/cycles/{cycle['id']}", headers=HTML).text
    assert "Ed Itor closed it on" in cycle_page and "Reopen this cycle" not in cycle_page
    assert client.post(f"/cycles/{cycle['id']}/reopen", data={"csrf_token": csrf(cycle_page)}).status_code == 403
    client.post("/logout", data={"csrf_token": csrf(cycle_page)})
    sign_in(client, "maya@example.com")
    cycle_page = client.get(f"/cycles/{cycle['id']}", headers=HTML).text
    assert "Reopen this cycle" in cycle_page
    reopened = client.post(f"/cycles/{cycle['id']}/reopen", data={"csrf_token": csrf(cycle_page)})
    assert reopened.status_code == 303
    cycle_page = client.get(f"/cycles/{cycle['id']}", headers=HTML).text
    assert "closed-note" not in cycle_page and "Close out" in cycle_page


def test_your_week_and_the_weekly_emails_leave_a_closed_cycle_out(app, client, cycle):
    """Both list the cycles to check in on by okr.reports.alignment.current_cycles."""
    def current():
        with app.app_context(), transaction(write=False) as db:
            return [row["id"] for row in alignment.current_cycles(db, date.today())]
    assert current() == [cycle["id"]]
    assert client.post(f"/v1/cycles/{cycle['id']}/close").status_code == 200
    assert current() == []


def test_closing_suggests_the_outcome_from_the_score_saved_with_it(client, cycle, objective, key_result):
    """A score typed on the page that closes, with no outcome chosen: the outcome follows that score (0.9:
    achieved), not the progress's suggestion (0.3: partly achieved)."""
    path = f"/cycles/{cycle['id']}/close"
    page = client.get(path, headers=HTML).text
    assert client.post(path, data={"csrf_token": csrf(page), "action": "close", f"o-{objective['id']}-outcome": "",
                                   f"o-{objective['id']}-score": "0.9"}).status_code == 303
    node = report_of(client, cycle)["objectives"][0]
    assert (node["score"], node["outcome"]) == ("0.90", "achieved")
