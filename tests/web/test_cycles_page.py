"""The cycles list (/cycles, and / without a person) grouped by state with dates, and the cycle page's
dates, state, descriptions, owners, "no update yet", progress from aligned objectives and links."""
import re
import sqlite3
from contextlib import closing

import pytest

from helpers import create_key, make_cycle, make_key_result, make_objective, make_user
from html_tree import BROWSER, parse
from okr.accounts import passwords
from okr.db import transaction
from okr.store import users
from okr.web import wording

PASSWORD = "correct horse battery"
pytestmark = pytest.mark.usefixtures("fast_hashing")


def sql(app, statement, *params):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        return db.execute(statement, params).fetchall()


def page(client, path, status=200, **kwargs):
    response = client.get(path, headers=BROWSER, **kwargs)
    body = response.get_data(as_text=True)
    assert response.status_code == status, (response.status_code, body[:3000])
    return parse(body)


def dated(app, cycle, starts_on, ends_on):
    sql(app, "UPDATE cycles SET starts_on = ?, ends_on = ? WHERE id = ?", starts_on, ends_on, cycle["id"])


def signed_in_as(app, client, role):
    """A person of this role, signed in (which turns sign-in on)."""
    with app.app_context(), transaction() as db:
        user = users.create(db, f"A {role}", f"{role}@example.com", role)
        users.set_password(db, user, passwords.hash_password(PASSWORD))
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").get_data(as_text=True)).group(1)
    response = client.post("/login", data={"csrf_token": token, "email": f"{role}@example.com",
                                           "password": PASSWORD})
    assert response.status_code == 303


@pytest.fixture
def three(app, client, clock):
    """On 2026-11-15: "Q4" (1 Oct – 31 Dec 2026) current, "2027 Q1" upcoming, "Q3" finished, "Open" undated."""
    clock.now = "2026-11-01T00:00:00Z"
    made = {name: make_cycle(client, name) for name in ("Q3", "Q4", "2027 Q1", "Open")}
    dated(app, made["Q3"], "2026-07-01", "2026-09-30")
    dated(app, made["Q4"], "2026-10-01", "2026-12-31")
    dated(app, made["2027 Q1"], "2027-01-01", None)
    clock.now = "2026-11-15T09:00:00Z"
    return made


def group(doc, heading):
    [section] = [s for s in doc.find_all("section", cls="cycle-group") if s.one("h2").text == heading]
    return section


def test_the_cycles_are_grouped_current_upcoming_finished_with_their_dates(client, three):
    doc = page(client, "/cycles")
    assert [h.text for h in doc.find_all("h2") if h.parent.tag == "section"] == ["Current", "Upcoming", "Finished"]
    current = group(doc, "Current")
    assert current.find_all("a", href=f"/cycles/{three['Q4']['id']}")
    assert current.find_all("a", href=f"/cycles/{three['Open']['id']}")  # an undated cycle is current
    assert "1 Oct – 31 Dec 2026" in current.text
    upcoming = group(doc, "Upcoming")
    assert upcoming.find_all("a", href=f"/cycles/{three['2027 Q1']['id']}") and "from 1 Jan 2027" in upcoming.text
    assert group(doc, "Finished").find_all("a", href=f"/cycles/{three['Q3']['id']}")


def test_the_dashboard_shows_the_grouped_cycles_without_a_person(client, runner, three):
    assert [h.text for h in page(client, "/").find_all("h2")][:3] == ["Current", "Upcoming", "Finished"]
    # A session opened with an API key has no person either.
    key = create_key(runner)
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").get_data(as_text=True)).group(1)
    client.post("/login", data={"csrf_token": token, "credential": key["credential"], "secret": key["secret"]})
    doc = page(client, "/")
    assert doc.one("h1").text == "Cycles" and group(doc, "Current")


def test_at_risk_counts_leave_out_key_results_with_no_update_yet(client, clock, three):
    objective = make_objective(client, three["Q4"]["id"], "Grow")
    make_key_result(client, objective["id"], "Untouched", confidence="0.2")  # never updated since made
    risky = make_key_result(client, objective["id"], "Risky", confidence="0.9")
    clock.now = "2026-11-15T10:00:00Z"
    response = client.post(f"/v1/keyresults/{risky['id']}/checkins", json={"value": "10", "confidence": "0.5"})
    assert response.status_code == 200
    [card] = [a for a in group(page(client, "/cycles"), "Current").find_all("article", cls="cycle")
              if a.find_all("a", href=f"/cycles/{three['Q4']['id']}")]
    assert "1 at risk or off track" in card.text and "1 with no update yet" in card.text


def test_a_current_cycles_card_shows_the_time_gone_and_its_key_results_by_status(client, clock, three):
    objective = make_objective(client, three["Q4"]["id"], "Grow")
    make_key_result(client, objective["id"], "Untouched", confidence="0.9")
    behind = make_key_result(client, objective["id"], "Behind", current_value="0", target_value_min="100")
    shipped = make_key_result(client, objective["id"], "Shipped", type="milestone", current_value="0",
                              target_value_min=None)
    clock.now = "2026-11-15T10:00:00Z"
    for key_result, value in ((behind, "5"), (shipped, "1")):
        response = client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": value})
        assert response.status_code == 200
    report = client.get(f"/v1/cycles/{three['Q4']['id']}/report").get_json()
    doc = page(client, "/cycles")
    [card] = [a for a in group(doc, "Current").find_all("article", cls="cycle")
              if a.find_all("a", href=f"/cycles/{three['Q4']['id']}")]
    # 45 of the 91 days from 1 Oct to 31 Dec: the report's own elapsed, as the card words it.
    assert f"{wording.percent(report['cycle']['elapsed'])} of the time gone" in card.one("p", cls="dates").text
    legend = {li.attrs["class"]: li.one("span", cls="count").text for li in card.one("ul", cls="legend").find_all("li")}
    assert legend == {status: str(count) for status, count in report["cycle"]["status_counts"].items() if count}
    assert legend == {"off_track": "1", "no_update": "1", "done": "1"}
    # Only a current cycle says how much of its time has gone.
    assert "of the time gone" not in group(doc, "Upcoming").text + group(doc, "Finished").text


def test_older_cycles_page_on_under_cycles(client, clock):
    ids = []
    for n in range(23):
        clock.now = f"2026-01-{n + 1:02d}T00:00:00Z"
        ids.append(make_cycle(client, f"C{n}")["id"])
    doc = page(client, "/cycles")
    assert len(doc.find_all("article", cls="cycle")) == 20
    [older] = [a for a in doc.find_all("a") if a.text == "Older cycles"]
    assert older.attrs["href"].startswith("/cycles?before=")
    rest = page(client, older.attrs["href"])
    assert {a.attrs["href"] for art in rest.find_all("article", cls="cycle") for a in art.find_all("a")} == \
        {f"/cycles/{i}" for i in ids[:3]}
    # / pages the same way, to / .
    [older] = [a for a in page(client, "/").find_all("a") if a.text == "Older cycles"]
    assert older.attrs["href"].startswith("/?before=")


def test_a_bad_page_link_is_a_400_under_cycles_too(client):
    page(client, "/cycles?before=x", status=400)


def test_an_editor_sees_new_cycle_and_a_viewer_does_not(app, client, three):
    assert page(client, "/cycles").find_all("a", href="/cycles/new")  # open mode: anyone may write
    signed_in_as(app, client, "viewer")
    assert not page(client, "/cycles").find_all("a", href="/cycles/new")


# --- the cycle page -----------------------------------------------------------------------------------


@pytest.fixture
def rich(app, client, runner, clock, three):
    ada = make_user(runner, "Ada Lovelace", "ada@example.com")
    cycle = three["Q4"]
    parent = make_objective(client, cycle["id"], "Grow <b>revenue</b>",
                            description="First line & more.\nSecond line.\n\n" + "x" * 400)
    child = make_objective(client, cycle["id"], "Sell more", parent_objective_id=parent["id"])
    kr = make_key_result(client, child["id"], "Sign deals", current_value="0", target_value_min="10")
    clock.now = "2026-11-15T10:00:00Z"
    response = client.post(f"/v1/keyresults/{kr['id']}/checkins", json={"value": "5", "confidence": "0.8"})
    assert response.status_code == 200
    waiting = make_key_result(client, child["id"], "Untouched")
    sql(app, "UPDATE key_results SET owner_id = ? WHERE id = ?", ada["id"], kr["id"])
    return {"cycle": cycle, "parent": parent, "child": child, "kr": kr, "waiting": waiting}


def kr_item(doc, key_result):
    [item] = [li for li in doc.find_all("li") if li.find_all("a", href=f"/keyresults/{key_result['id']}")]
    return item


def test_the_cycle_page_shows_its_dates_and_state(client, rich):
    doc = page(client, f"/cycles/{rich['cycle']['id']}")
    facts = doc.one("p", cls="cycle-facts")
    assert "Current" in facts.text and "1 Oct – 31 Dec 2026" in facts.text


def test_objective_headings_link_to_their_page_and_show_the_descriptions_start(client, rich):
    doc = page(client, f"/cycles/{rich['cycle']['id']}")
    article = doc.one("article", cls="objective", id=f"o-{rich['parent']['id']}")
    heading = article.find_all("h3")[0]
    assert heading.find_all("a", href=f"/objectives/{rich['parent']['id']}")
    assert "Grow <b>revenue</b>" in heading.text and not doc.find_all("b")
    [description] = article.find_all("p", cls="description", prune=lambda el: "children" in el.classes)
    assert description.text.startswith("First line & more. Second line.")
    assert len(description.text) <= 201 and description.text.endswith("…")


def test_a_key_result_shows_its_owner_and_no_update_yet(client, rich):
    doc = page(client, f"/cycles/{rich['cycle']['id']}")
    assert "owner Ada Lovelace" in kr_item(doc, rich["kr"]).text
    waiting = kr_item(doc, rich["waiting"])
    assert "no update yet" in waiting.text and "no_update" in waiting.classes
    assert "owner" not in waiting.text


def test_an_objective_without_key_results_says_its_progress_is_from_aligned_objectives(client, rich):
    doc = page(client, f"/cycles/{rich['cycle']['id']}")
    parent = doc.one("article", cls="objective", id=f"o-{rich['parent']['id']}")
    own = parent.own_text("children")
    assert "from aligned objectives" in own and parent.find_all("progress")
    child = doc.one("article", cls="objective", id=f"o-{rich['child']['id']}")
    assert "from aligned objectives" not in child.text


def test_the_cycle_page_links_its_csv_and_an_editors_pages(app, client, rich):
    cycle_id = rich["cycle"]["id"]
    doc = page(client, f"/cycles/{cycle_id}")
    assert doc.find_all("a", href=f"/cycles/{cycle_id}.csv")
    for href in (f"/objectives/new?cycle_id={cycle_id}", f"/cycles/{cycle_id}/edit", f"/cycles/{cycle_id}/copy"):
        assert doc.find_all("a", href=href), href
    signed_in_as(app, client, "viewer")
    doc = page(client, f"/cycles/{cycle_id}")
    assert doc.find_all("a", href=f"/cycles/{cycle_id}.csv")
    assert not [a for a in doc.find_all("a") if re.search(r"/(new|edit|copy)\b", a.attrs.get("href") or "")]


@pytest.mark.parametrize("starts_on, ends_on, said", [
    ("2026-10-01", "2026-12-31", "1 Oct – 31 Dec 2026"),
    ("2026-12-01", "2027-02-28", "1 Dec 2026 – 28 Feb 2027"),
    ("2026-10-01", None, "from 1 Oct 2026"),
    (None, "2026-12-31", "until 31 Dec 2026"),
    (None, None, ""),
])
def test_dates_in_words(starts_on, ends_on, said):
    assert wording.date_range(starts_on, ends_on) == said


def test_links_to_pages_that_are_not_there_are_left_out(app, client, three):
    """The pages link to an edit page only when the app has it (an app embedding the dashboard may drop them)."""
    for endpoint in ("web.new_cycle", "web.edit_cycle", "web.copy_cycle", "web.new_objective", "web.show_objective"):
        app.view_functions.pop(endpoint)
    cycle_id = three["Q4"]["id"]
    objective = make_objective(client, cycle_id, "Grow")
    for path in ("/cycles", f"/cycles/{cycle_id}"):
        hrefs = [a.attrs.get("href") or "" for a in page(client, path).find_all("a")]
        assert not [h for h in hrefs if re.search(r"/(new|edit|copy)\b|/objectives/", h)], (path, hrefs)
    assert objective["name"] in page(client, f"/cycles/{cycle_id}").one("h3").text
