"""The quality checks on the pages (docs/quality.md): the cycle page's Quality panel (its items and links, calm when
there is nothing to fix, the first findings only) and the hints beside the edit forms' fields, which never stop a
save."""
import re

import pytest

from helpers import make_cycle, make_key_result, make_objective, make_team, make_user
from okr.web import views

pytestmark = pytest.mark.usefixtures("fast_hashing")

HTML = {"Accept": "text/html"}


def panel(client, cycle_id, query=""):
    page = client.get(f"/cycles/{cycle_id}{query}", headers=HTML)
    assert page.status_code == 200
    return re.search(r'<section class="quality".*?</section>', page.text, re.S).group(0)


def items(html):
    """Each item of a Quality panel as (its link, its text without tags)."""
    return [(re.search(r'href="([^"]+)"', item).group(1), re.sub(r"<[^>]+>", "", item).strip())
            for item in re.findall(r"<li[^>]*>(.*?)</li>", html, re.S)]


@pytest.fixture
def mixed(client, runner):
    """A cycle with an objective nobody answers for and one key result, "Launch the app", without an owner; and
    Grace, who owns 6 key results under a second objective."""
    cycle = make_cycle(client, "2026 Q4")
    grace = make_user(runner, "Grace Hopper", "grace@example.com")
    loose = make_objective(client, cycle["id"], "Grow revenue")
    task = make_key_result(client, loose["id"], "Launch the app", type="milestone", target_value_min=None)
    busy = make_objective(client, cycle["id"], "Keep customers", team_id=make_team(client)["id"])
    owned = [make_key_result(client, busy["id"], f"Reach {n} renewals", owner_id=grace["id"]) for n in range(6)]
    return {"cycle": cycle, "loose": loose, "task": task, "busy": busy, "owned": owned, "grace": grace}


def test_the_panel_lists_what_to_fix_each_linked_to_the_form_that_fixes_it(client, mixed):
    html = panel(client, mixed["cycle"]["id"])
    assert "<details>" in html and "Quality</strong>: 6 things to fix in this cycle" in html
    loose, task, busy = mixed["loose"]["id"], mixed["task"]["id"], mixed["busy"]["id"]
    assert items(html) == [
        (f"/objectives/{loose}/edit", "Objective Grow revenue: no team and no owner: choose a team or an owner"),
        (f"/objectives/{loose}/edit", "Objective Grow revenue: 1 key result: an objective has 2 to 5"),
        (f"/keyresults/{task}/edit", "Key result Launch the app: no owner: choose who updates it"),
        (f"/keyresults/{task}/edit",
         "Key result Launch the app: reads like a task: consider making it an initiative (a suggestion)"),
        (f"/objectives/{busy}/edit", "Objective Keep customers: 6 key results: keep the 5 that matter most"),
        (f"/cycles/{mixed['cycle']['id']}?owner_id={mixed['grace']['id']}",
         "Person Grace Hopper: Grace Hopper owns 6 key results in this cycle, more than 5: hand some on"),
    ]
    # The whole cycle's, whatever the filters.
    assert items(panel(client, mixed["cycle"]["id"], f"?team_id={mixed['busy']['team_id']}")) == items(html)


def test_a_cycle_with_nothing_to_fix_says_so_calmly(client, runner):
    cycle = make_cycle(client, "Empty")
    assert "Quality</strong>: no issues found." in panel(client, cycle["id"])
    ada = make_user(runner)
    objective = make_objective(client, cycle["id"], "Grow revenue", assignee_id=ada["id"])
    for name in ("Reach 100 customers", "Keep churn under 2 %"):
        make_key_result(client, objective["id"], name, owner_id=ada["id"])
    html = panel(client, cycle["id"])
    assert "no issues found" in html and "<details>" not in html and "<li" not in html


def test_a_viewer_is_led_to_the_pages_not_the_forms(app, client, mixed):
    from test_objective_pages import sign_in_as
    sign_in_as(app, client, "viewer")
    links = [link for link, _ in items(panel(client, mixed["cycle"]["id"]))]
    assert links[0] == f"/objectives/{mixed['loose']['id']}" and links[2] == f"/keyresults/{mixed['task']['id']}"
    assert not any(link.endswith("/edit") for link in links)


def test_the_panel_lists_the_first_findings_and_says_how_many_more(client, mixed, monkeypatch):
    monkeypatch.setattr(views, "QUALITY_SHOWN", 2)
    html = panel(client, mixed["cycle"]["id"])
    assert len(items(html)) == 2 and "6 things to fix" in html
    assert "…and 4 more, not listed here." in html


def advice_of(page, field):
    """The quality hint beside a form's field, and whether the field names it in aria-describedby."""
    found = re.search(rf'<span class="advice" id="{field}-advice">([^<]*)</span>', page)
    described = re.search(rf'id="{field}"[^>]*aria-describedby="[^"]*\b{field}-advice\b', page)
    return found and found.group(1), bool(described)


def test_a_key_results_form_shows_its_findings_beside_the_fields(client, mixed):
    page = client.get(f"/keyresults/{mixed['task']['id']}/edit", headers=HTML).text
    assert advice_of(page, "name") == ("Reads like a task: consider making it an initiative.", True)
    assert advice_of(page, "owner_id") == ("No owner: choose who updates it.", True)
    assert advice_of(page, "target_value_min") == (None, False)
    page = client.get(f"/keyresults/{mixed['owned'][0]['id']}/edit", headers=HTML).text
    assert advice_of(page, "owner_id") == (
        "Grace Hopper owns 6 key results in this cycle, more than 5: hand some on.", True)
    assert advice_of(page, "name") == (None, False)
    fresh = client.get(f"/keyresults/new?objective_id={mixed['loose']['id']}", headers=HTML).text
    assert 'class="advice"' not in fresh  # a new one has no findings yet


def test_a_baselines_form_asks_for_a_target_after_the_first_third(client, runner, clock):
    clock.now = "2026-01-20T09:00:00Z"
    made = client.post("/v1/cycles", json={"name": "January", "starts_on": "2026-01-01", "ends_on": "2026-01-31"})
    ada = make_user(runner)
    objective = make_objective(client, made.get_json()["id"], "Grow", assignee_id=ada["id"])
    baseline = make_key_result(client, objective["id"], "Weekly active users", type="baseline", target_value_min=None,
                               owner_id=ada["id"])
    page = client.get(f"/keyresults/{baseline['id']}/edit", headers=HTML).text
    assert advice_of(page, "target_value_min") == (
        "No target, and a third of the cycle has gone by: choose a type with a target and set it.", True)
    clock.now = "2026-01-05T09:00:00Z"
    page = client.get(f"/keyresults/{baseline['id']}/edit", headers=HTML).text
    assert advice_of(page, "target_value_min") == (None, False)


def form_fields(page):
    """What an edit form sends as shown: its hidden fields, text inputs, checked radios and selected options."""
    form = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page))
    form.update(re.findall(r'<input id="\w+" name="(\w+)" type="text" value="([^"]*)"', page))
    form.update(re.findall(r'name="(\w+)" value="(\w+)" checked', page))
    for name, options in re.findall(r'<select id="(\w+)" name="\w+"[^>]*>(.*?)</select>', page, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected>', options)
        form[name] = chosen.group(1) if chosen else ""
    import html
    return {name: html.unescape(value) for name, value in form.items()}


def test_hints_never_stop_a_save(client, mixed):
    path = f"/keyresults/{mixed['task']['id']}/edit"
    form = form_fields(client.get(path, headers=HTML).text)
    saved = client.post(path, data={**form, "name": "Ship the app", "confidence": "60 %"})
    assert saved.status_code == 303, saved.text
    assert client.get(f"/v1/keyresults/{mixed['task']['id']}").get_json()["name"] == "Ship the app"
    assert advice_of(client.get(path, headers=HTML).text, "name")[0].startswith("Reads like a task")


def test_an_objectives_form_shows_its_findings_and_they_go_once_fixed(client, mixed):
    path = f"/objectives/{mixed['loose']['id']}/edit"
    page = client.get(path, headers=HTML).text
    assert advice_of(page, "assignee_id") == ("No team and no owner: choose a team or an owner.", True)
    assert re.search(r'<ul class="advice"[^>]*><li>1 key result: an objective has 2 to 5.</li></ul>', page)
    form = form_fields(page)
    saved = client.post(path, data={**form, "team_id": mixed["busy"]["team_id"]})
    assert saved.status_code == 303, saved.text
    page = client.get(path, headers=HTML).text
    assert advice_of(page, "assignee_id") == (None, False) and 'class="advice"' in page  # still 1 key result
    busy = client.get(f"/objectives/{mixed['busy']['id']}/edit", headers=HTML).text
    assert "<li>6 key results: keep the 5 that matter most.</li>" in busy
