"""The cycle page as a review (issue 35): aligned rows of the same columns, the cycle's facts, a legend, filters
by team, key-result owner, status and words, and pages of top objectives with the whole cycle's figures."""
import base64
import sqlite3

import pytest

from helpers import make_cycle, make_key_result, make_objective, make_team, make_user
from html_tree import BROWSER, parse
from okr.reports import review

KEY_RESULT_CELLS = ["n", "w", "v", "p", "s", "t", "u"]  # name, owner, value, progress, status, trend, update


def page(client, path, expect=200, **query):
    response = client.get(path, headers=BROWSER, query_string=query or None)
    assert response.status_code == expect, response.get_data(as_text=True)[:2000]
    return parse(response.get_data(as_text=True))


def checkin(client, key_result_id, value, confidence):
    response = client.post(f"/v1/keyresults/{key_result_id}/checkins", json={"value": value, "confidence": confidence})
    assert response.status_code == 200, response.get_json()


def cells(element):
    """The classes of an element's direct <span>/<div> cells, in order."""
    return [child.classes and sorted(child.classes)[0] for child in element.children
            if getattr(child, "tag", None) in ("span", "div")]


def rows_of(doc):
    """{key result id: its row} of a cycle page."""
    found = {}
    for item in doc.find_all("li"):
        for link in item.find_all("a"):
            href = link.attrs.get("href") or ""
            if href.startswith("/keyresults/"):
                found[href.rsplit("/", 1)[1]] = item
    return found


def report(client, cycle_id):
    response = client.get(f"/v1/cycles/{cycle_id}/report")
    assert response.status_code == 200
    return response.get_json()


def tops(doc):
    return [a.attrs["id"][2:] for a in doc.one("section", cls="review").children
            if getattr(a, "tag", None) == "article"]


@pytest.fixture
def quarter(app, client, runner, clock):
    """A dated cycle: Ada's company objective with Grace's aligned team objective under it; Grace owns a key
    result under Ada's objective and Ada one under Grace's; statuses on track, at risk and off track."""
    clock.now = "2026-10-01T09:00:00Z"
    ada, grace = make_user(runner, "Ada Lovelace", "ada@example.com"), make_user(runner, "Grace Hopper",
                                                                                   "grace@example.com")
    platform = make_team(client, "Platform")
    cycle = make_cycle(client, "2026 Q4")
    assert client.patch(f"/v1/cycles/{cycle['id']}", json={"starts_on": "2026-10-01",
                                                           "ends_on": "2026-12-30"}).status_code == 200
    company = make_objective(client, cycle["id"], "Grow revenue", is_company=True, assignee_id=ada["id"])
    aligned = make_objective(client, cycle["id"], "Keep servers calm", team_id=platform["id"],
                             assignee_id=grace["id"], parent_objective_id=company["id"])
    kr = {
        "revenue": make_key_result(client, company["id"], "Reach 500 customers", current_value="100",
                                   target_value_min="500", confidence="0.8", owner_id=ada["id"]),
        "deals": make_key_result(client, company["id"], "Close ten deals", current_value="0",
                                 target_value_min="10", confidence="0.8", owner_id=grace["id"]),
        "latency": make_key_result(client, aligned["id"], "Cut p99 latency", type="negative", current_value="900",
                                   target_value_min="300", confidence="0.8", owner_id=ada["id"]),
    }
    assert client.patch(f"/v1/keyresults/{kr['latency']['id']}", json={"unit": "ms"}).status_code == 200
    clock.now = "2026-10-20T09:00:00Z"
    checkin(client, kr["revenue"]["id"], "450", "0.9")   # on track
    checkin(client, kr["deals"]["id"], "4", "0.5")       # at risk
    checkin(client, kr["latency"]["id"], "890", "0.2")   # off track
    clock.now = "2026-11-12T09:00:00Z"
    return {"cycle": cycle, "ada": ada, "grace": grace, "platform": platform, "company": company,
            "aligned": aligned, "kr": kr}


def test_every_key_result_row_has_the_same_cells_in_the_same_order(client, quarter):
    doc = page(client, f"/cycles/{quarter['cycle']['id']}")
    rows = rows_of(doc)
    assert set(rows) == {k["id"] for k in quarter["kr"].values()}
    for row in rows.values():
        assert cells(row) == KEY_RESULT_CELLS, cells(row)
    head = doc.one("div", cls="review-head")
    assert cells(head) == KEY_RESULT_CELLS
    for article in doc.find_all("article", cls="objective"):
        [group] = [child for child in article.children if getattr(child, "tag", None) == "div"]
        assert cells(group) == ["n", "p", "s", "x"], cells(group)


def test_a_row_says_name_owner_value_with_units_bar_status_trend_and_age(client, quarter):
    nodes = {k["id"]: k for o in report(client, quarter["cycle"]["id"])["objectives"]
             for n in [o, *o["children"]] for k in n["key_results"]}
    row = rows_of(page(client, f"/cycles/{quarter['cycle']['id']}"))[quarter["kr"]["latency"]["id"]]
    by = {cls: row.one("span", cls=cls) for cls in KEY_RESULT_CELLS}
    assert "Cut p99 latency" in by["n"].text and "Ada Lovelace" in by["w"].text
    assert by["v"].text == "from 900 ms down to 300 ms: now 890 ms"
    bar = by["p"].one("progress")
    assert bar.attrs["value"] == nodes[quarter["kr"]["latency"]["id"]]["progress"]
    assert "off track" in by["s"].text and "off_track" in row.classes and "20% confidence" in by["s"].text
    assert by["t"].find_all("svg") and by["t"].one("small").text == "1 Oct – 20 Oct"  # the trend's dates
    assert by["u"].one("time").text == "23 days ago" and "stale" in by["u"].text


def test_the_cycles_facts_say_how_much_time_has_gone_and_the_whole_progress(client, quarter):
    doc = page(client, f"/cycles/{quarter['cycle']['id']}")
    expected = report(client, quarter["cycle"]["id"])
    assert doc.one("span", cls="time-gone").text == "Week 7 of 13 · 47% of the time gone"
    assert expected["cycle"]["elapsed"] == "0.47"
    assert doc.one("p", cls="cycle-progress").one("progress").attrs["value"] == expected["progress"]
    counts = {li.text.rsplit(" ", 1)[0]: int(li.text.rsplit(" ", 1)[1])
              for li in doc.one("div", cls="status-counts").find_all("li")}
    assert counts == {"off track": 1, "at risk": 1, "on track": 1}


def test_an_owner_made_a_viewer_is_marked_as_needing_a_new_owner(app, client, quarter):
    page_path = f"/cycles/{quarter['cycle']['id']}"
    assert "needs a new owner" not in rows_of(page(client, page_path))[quarter["kr"]["deals"]["id"]].text
    with sqlite3.connect(app.config["DATABASE"]) as db:
        db.execute("UPDATE users SET role = 'viewer' WHERE id = ?", (quarter["grace"]["id"],))
    rows = rows_of(page(client, page_path))
    assert rows[quarter["kr"]["deals"]["id"]].one("strong", cls="wants-owner").text == "needs a new owner"
    assert "needs a new owner" not in rows[quarter["kr"]["revenue"]["id"]].text


def test_the_legend_names_every_status_and_mark(client, quarter):
    legend = page(client, f"/cycles/{quarter['cycle']['id']}").one("details", cls="legend-box")
    for word in ("on track", "at risk", "off track", "no update yet", "done", "stale", "needs a new owner",
                 "from aligned objectives"):
        assert word in legend.text, word
    assert {"on_track", "at_risk", "off_track", "no_update", "done"} <= {c for li in legend.find_all("li")
                                                                          for c in li.classes}


def test_aligned_objectives_fold_under_their_parent_and_many_start_folded(client, quarter):
    doc = page(client, f"/cycles/{quarter['cycle']['id']}")
    assert tops(doc) == [quarter["company"]["id"]]
    [folded] = doc.one("article", id=f"o-{quarter['company']['id']}").find_all("details", cls="children")
    assert "open" in folded.attrs and folded.one("summary").text == "1 aligned objective"
    assert folded.find_all("article", id=f"o-{quarter['aligned']['id']}")
    for n in range(6):
        make_objective(client, quarter["cycle"]["id"], f"Aligned {n}", parent_objective_id=quarter["company"]["id"])
    folded = page(client, f"/cycles/{quarter['cycle']['id']}").one("details", cls="children")
    assert "open" not in folded.attrs and folded.one("summary").text == "7 aligned objectives"


def test_the_owner_filter_shows_a_persons_key_results_wherever_they_sit(client, quarter):
    doc = page(client, f"/cycles/{quarter['cycle']['id']}", owner_id=quarter["ada"]["id"])
    assert set(rows_of(doc)) == {quarter["kr"]["revenue"]["id"], quarter["kr"]["latency"]["id"]}
    # Each under its own objective, as a group row of its own (Grace's objective too).
    assert set(tops(doc)) == {quarter["company"]["id"], quarter["aligned"]["id"]}
    nodes = report(client, quarter["cycle"]["id"])["objectives"]
    company = doc.one("article", id=f"o-{quarter['company']['id']}")
    assert company.one("div", cls="g").one("progress").attrs["value"] == nodes[0]["progress"]  # the report's, not recomputed
    # at risk for Grace's key result, which this page leaves out: the report's status, not the rows' shown
    assert "at_risk" in company.classes and nodes[0]["status"] == "at_risk"
    grace = page(client, f"/cycles/{quarter['cycle']['id']}", owner_id=quarter["grace"]["id"])
    assert set(rows_of(grace)) == {quarter["kr"]["deals"]["id"]}
    select = doc.one("select", name="owner_id")
    assert [o.attrs["value"] for o in select.find_all("option") if "selected" in o.attrs] == [quarter["ada"]["id"]]


def test_the_status_filter_keeps_the_key_results_of_the_chosen_statuses(client, quarter):
    path = f"/cycles/{quarter['cycle']['id']}"
    risky = page(client, path + "?status=at_risk&status=off_track")
    assert set(rows_of(risky)) == {quarter["kr"]["deals"]["id"], quarter["kr"]["latency"]["id"]}
    assert {box.attrs["value"] for box in risky.find_all("input", type="checkbox") if "checked" in box.attrs} == \
        {"at_risk", "off_track"}
    assert "2 key results match, under 2 objectives." in risky.text
    assert set(rows_of(page(client, path, status="on_track"))) == {quarter["kr"]["revenue"]["id"]}


def test_the_text_filter_finds_key_results_and_objectives_by_name_in_any_case(client, quarter):
    path = f"/cycles/{quarter['cycle']['id']}"
    assert set(rows_of(page(client, path, q="LATENCY"))) == {quarter["kr"]["latency"]["id"]}
    # An objective's name: all its key results.
    assert set(rows_of(page(client, path, q="grow rev"))) == {quarter["kr"]["revenue"]["id"],
                                                               quarter["kr"]["deals"]["id"]}
    assert page(client, path, q="grow rev").one("input", id="q").attrs["value"] == "grow rev"


def test_filters_combine(client, quarter):
    path = f"/cycles/{quarter['cycle']['id']}"
    assert set(rows_of(page(client, path + f"?owner_id={quarter['ada']['id']}&status=off_track"))) == \
        {quarter["kr"]["latency"]["id"]}
    assert set(rows_of(page(client, path, owner_id=quarter["ada"]["id"], q="customers"))) == \
        {quarter["kr"]["revenue"]["id"]}
    # The team filter keeps the team's objectives (the old filter), the owner filter then their key results.
    assert set(rows_of(page(client, path, team_id=quarter["platform"]["id"], owner_id=quarter["ada"]["id"]))) == \
        {quarter["kr"]["latency"]["id"]}
    assert set(rows_of(page(client, path, assignee_id=quarter["grace"]["id"]))) == {quarter["kr"]["latency"]["id"]}


def test_a_filter_that_matches_nothing_says_so_and_links_to_everything(client, quarter):
    doc = page(client, f"/cycles/{quarter['cycle']['id']}" + f"?owner_id={quarter['grace']['id']}&status=done")
    empty = doc.one("section", cls="empty")
    assert "Nothing matches" in empty.text and "that owner" in empty.text and "the status done" in empty.text
    assert empty.find_all("a", href=f"/cycles/{quarter['cycle']['id']}")
    assert rows_of(doc) == {}


@pytest.mark.parametrize("query, words", [
    ("status=late", "status"), ("owner_id=12", "owner"), ("q=" + "x" * 201, "longer than 200"),
    ("page=!!", "page"), ("page=" + base64.urlsafe_b64encode(b"-4").decode(), "page"),
])
def test_a_bad_filter_or_page_is_a_400_page_that_says_what(client, quarter, query, words):
    doc = page(client, f"/cycles/{quarter['cycle']['id']}?{query}", expect=400)
    assert words in doc.text and not rows_of(doc)


@pytest.fixture
def many(client, clock, monkeypatch):
    """A cycle of 120 top objectives (one key result each), the 7th with two aligned below it."""
    clock.now = "2026-10-01T09:00:00Z"
    cycle = make_cycle(client, "Big")
    made = []
    for n in range(120):
        objective = make_objective(client, cycle["id"], f"Objective {n}")
        make_key_result(client, objective["id"], f"Key result {n}", current_value="0", target_value_min="10")
        made.append(objective["id"])
    for n in range(2):
        child = make_objective(client, cycle["id"], f"Aligned {n}", parent_objective_id=made[6])
        make_key_result(client, child["id"], f"Aligned key result {n}", current_value="5", target_value_min="10")
    return cycle, made


def test_a_big_cycle_pages_by_top_objectives_with_the_whole_cycles_figures(client, many):
    cycle, made = many
    assert review.PER_PAGE == 50
    path = f"/cycles/{cycle['id']}"
    seen, doc, pages = [], page(client, path), 0
    while True:
        pages += 1
        seen += tops(doc)
        assert "122 objectives, 122 key results" in doc.one("p", cls="cycle-progress").text
        assert doc.one("p", cls="cycle-progress").one("progress").attrs["value"] == report(client,
                                                                                           cycle["id"])["progress"]
        nav = doc.find_all("nav", cls="pages")
        following = [a for n in nav for a in n.find_all("a", rel="next")]
        if not following:
            break
        doc = parse(client.get(following[0].attrs["href"], headers=BROWSER).get_data(as_text=True))
    assert pages == 3 and seen == made  # every top objective once, in order
    assert len(tops(doc)) == 20
    # The aligned objectives sit under their parent, on its page.
    first = page(client, path)
    assert len(first.one("article", id=f"o-{made[6]}").find_all("article", cls="objective")) == 2
    [back] = doc.one("nav", cls="pages").find_all("a", rel="prev")
    middle = parse(client.get(back.attrs["href"], headers=BROWSER).get_data(as_text=True))
    assert tops(middle) == made[50:100]
    [back] = middle.one("nav", cls="pages").find_all("a", rel="prev")
    assert back.attrs["href"] == path  # the first page has no token
    assert not first.one("nav", cls="pages").find_all("a", rel="prev")


def test_a_filtered_big_cycle_pages_too(client, many):
    cycle, made = many
    doc = page(client, f"/cycles/{cycle['id']}", q="key result")
    assert len(tops(doc)) == 50 and "122 key results match, under 122 objectives." in doc.text
    [following] = doc.one("nav", cls="pages").find_all("a", rel="next")
    assert "q=key+result" in following.attrs["href"]
    second = parse(client.get(following.attrs["href"], headers=BROWSER).get_data(as_text=True))
    assert len(tops(second)) == 50 and not set(tops(second)) & set(tops(doc))


def test_a_big_cycles_page_streams_the_same_rows_and_gives_its_report_slot_back(app, client, quarter):
    path = f"/cycles/{quarter['cycle']['id']}"
    small = page(client, path)
    app.config.update(BIG_REPORT_OBJECTIVES=1, REPORT_SLOTS=1, REPORT_WAIT=0.2)
    for _ in range(3):  # with one slot, each page must give it back for the next to be served
        response = client.get(path, headers=BROWSER)
        assert response.status_code == 200 and response.is_streamed
        assert client.get(path, headers=BROWSER).status_code == 503  # its slot is held while it is sent
        big = parse(response.get_data(as_text=True))
        response.close()
        assert {k: row.text for k, row in rows_of(big).items()} == {k: row.text for k, row in rows_of(small).items()}
        assert big.one("p", cls="cycle-progress").text == small.one("p", cls="cycle-progress").text
        # Its burn-up read as the check-ins stream, a point a week: the last is today's, as the small page's.
        [streamed, replayed] = [doc.one("section", cls="burn-up").one("svg", cls="chart") for doc in (big, small)]
        assert streamed.attrs["aria-label"].split(";")[0] == replayed.attrs["aria-label"].split(";")[0]
        assert len(big.one("section", cls="burn-up").find_all("tr")) < len(small.one("section", cls="burn-up")
                                                                            .find_all("tr"))


def test_a_page_reads_the_cycles_fingerprint_once_for_its_figures_and_its_burn_up(client, quarter, monkeypatch):
    from okr.store import timelines as stored
    calls, real = [], stored.cycle_fingerprint
    monkeypatch.setattr(stored, "cycle_fingerprint", lambda db, cycle_id: calls.append(cycle_id) or real(db, cycle_id))
    doc = page(client, f"/cycles/{quarter['cycle']['id']}")
    assert doc.find_all("section", cls="burn-up") and doc.find_all("div", cls="status-counts")
    assert calls == [quarter["cycle"]["id"]]
