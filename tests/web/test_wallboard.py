"""The wallboard (/cycles/<id>/board): a summary, then pages of objectives that each fit a TV, each page's meta
refresh leading to the next and the last back to the summary; no navigation, no forms; every figure the report's."""
import re

import pytest

from helpers import make_cycle, make_key_result, make_objective
from html_tree import BROWSER, parse
from okr.web import board_pages, wording


def board(client, path, status=200):
    response = client.get(path, headers=BROWSER)
    assert response.status_code == status, (response.status_code, response.get_data(as_text=True)[:2000])
    return parse(response.get_data(as_text=True))


def refresh_of(doc):
    [meta] = [m for m in doc.find_all("meta") if m.attrs.get("http-equiv", "").lower() == "refresh"]
    seconds, url = re.fullmatch(r"(\d+); url=(.+)", meta.attrs["content"]).groups()
    return int(seconds), url


@pytest.fixture
def quarter(client, runner, clock):
    """On 2026-11-15, 1 Oct – 31 Dec: 9 objectives of 3 key results, one aligned under the first; Objective 2's
    key results on pace (60 of 100 on 1 Nov), the others' far behind (10)."""
    clock.now = "2026-10-01T09:00:00Z"
    cycle = make_cycle(client, "2026 Q4")
    assert client.patch(f"/v1/cycles/{cycle['id']}", json={"starts_on": "2026-10-01", "ends_on": "2026-12-31"},
                        headers={"Content-Type": "application/merge-patch+json"}).status_code == 200
    objectives, made = [], []
    for n in range(9):
        parent = {"parent_objective_id": objectives[0]["id"]} if n == 1 else {}
        objective = make_objective(client, cycle["id"], f"Objective {n}", **parent)
        objectives.append(objective)
        for k in range(3):
            made.append((n, make_key_result(client, objective["id"], f"KR {n}.{k}", current_value="0",
                                            target_value_min="100", confidence="0.9")))
    clock.now = "2026-11-01T09:00:00Z"
    for n, key_result in made:  # Objective 2's on pace, the rest far behind
        response = client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": "60" if n == 2 else "10"})
        assert response.status_code == 200
    clock.now = "2026-11-15T09:00:00Z"
    return cycle


def test_the_summary_has_the_reports_progress_counts_burn_up_and_whats_off_track(client, quarter):
    report = client.get(f"/v1/cycles/{quarter['id']}/report").get_json()
    doc = board(client, f"/cycles/{quarter['id']}/board")
    assert doc.find_all("nav") == [] and doc.find_all("form") == [] and doc.find_all("header", cls="top") == []
    assert doc.one("h1").text == "2026 Q4"
    assert f"{wording.percent(report['cycle']['elapsed'])} of the time gone" in doc.one("header", cls="board-head").text
    assert doc.one("p", cls="board-progress").one("progress").attrs["value"] == report["progress"]
    legend = {li.attrs["class"]: li.one("span", cls="count").text for li in doc.one("ul", cls="legend").find_all("li")}
    assert legend == {status: str(n) for status, n in report["cycle"]["status_counts"].items() if n}
    assert doc.one("div", cls="board-chart").find_all("svg")
    # Halfway through at a tenth: 24 off track; eight named, then how many more.
    assert report["cycle"]["status_counts"]["off_track"] == 24
    off = doc.one("div", cls="board-off-track")
    assert len(off.find_all("li")) == board_pages.OFF_TRACK_SHOWN and "and 16 more" in off.text
    assert off.find_all("li")[0].one("span", cls="kr-name").text == "KR 0.0"
    assert "Objective 0 · 10 of 100" in off.find_all("li")[0].one("span", cls="kr-meta").text
    assert "page 1 of" in doc.text


def test_the_pages_refresh_in_a_ring_and_each_holds_at_most_a_screenful(client, quarter):
    first = board(client, f"/cycles/{quarter['id']}/board")
    total = int(re.search(r"page 1 of (\d+)", first.text).group(1))
    # 9 objectives of 4 rows (heading + 3 key results), four to a page of 18 rows: 3 pages after the summary.
    assert total == 4
    path, seen = f"/cycles/{quarter['id']}/board", []
    for number in range(1, total + 1):
        doc = board(client, path)
        assert f"page {number} of {total}" in doc.text
        seconds, path = refresh_of(doc)
        assert seconds == board_pages.REFRESH_SECONDS
        if number > 1:
            rows = doc.one("section", cls="board-rows")
            assert len(rows.find_all("h2")) + len(rows.find_all("li")) <= board_pages.ROWS_PER_PAGE
            seen += [h.one("span", cls="name").text for h in rows.find_all("h2")]
    assert path == f"/cycles/{quarter['id']}/board"  # the last page leads back to the summary
    # Every objective once, the aligned one right after its parent, indented.
    assert seen == ["Objective 0", "Objective 1", *[f"Objective {n}" for n in range(2, 9)]]
    second = board(client, f"/cycles/{quarter['id']}/board?page=2")
    assert "depth-1" in second.find_all("div", cls="board-objective")[1].attrs["class"]


def test_an_objective_too_long_for_a_page_goes_on_over_the_next(client, clock):
    cycle = make_cycle(client, "Long")
    objective = make_objective(client, cycle["id"], "Many")
    for k in range(20):
        make_key_result(client, objective["id"], f"KR {k}")
    two = board(client, f"/cycles/{cycle['id']}/board?page=2").one("section", cls="board-rows")
    three = board(client, f"/cycles/{cycle['id']}/board?page=3").one("section", cls="board-rows")
    assert len(two.find_all("li")) == board_pages.ROWS_PER_PAGE - 1
    assert three.one("h2").one("span", cls="name").text == "Many (continued)"
    assert [li.one("span", cls="name").text for li in two.find_all("li") + three.find_all("li")] == \
        [f"KR {k}" for k in range(20)]


def test_packing_splits_only_an_objective_longer_than_a_page():
    node = lambda name, results: {"name": name, "key_results": list(range(results)), "children": []}  # noqa: E731
    pages = board_pages.packed([node("a", 8), node("b", 5), node("c", 0), node("d", 20)], budget=14)
    # a takes 9 rows; b's 6 do not fit in the 5 left: b starts the next page, c after it; d, 21 rows, fills
    # what is left of that page and goes on.
    assert [[(objective["name"], len(results), continued) for objective, _, results, continued in page]
            for page in pages] == [[("a", 8, False)], [("b", 5, False), ("c", 0, False), ("d", 6, False)],
                                   [("d", 13, True)], [("d", 1, True)]]


@pytest.mark.parametrize("page", ["9", "0"])
def test_a_page_past_the_last_shows_the_summary(client, quarter, page):
    assert "page 1 of 4" in board(client, f"/cycles/{quarter['id']}/board?page={page}").text


@pytest.mark.parametrize("page", ["x", "-1", "1e3", "12345678"])
def test_a_page_that_is_no_number_is_a_400_page(client, quarter, page):
    assert "not a page number" in board(client, f"/cycles/{quarter['id']}/board?page={page}", status=400).text


def test_an_unknown_cycles_board_is_a_404(client):
    board(client, "/cycles/8a4c5d3e-0000-4000-8000-000000000000/board", status=404)


def test_an_empty_cycle_has_its_summary_alone(client):
    cycle = make_cycle(client, "Empty")
    doc = board(client, f"/cycles/{cycle['id']}/board")
    assert "page 1 of 1" in doc.text and refresh_of(doc)[1] == f"/cycles/{cycle['id']}/board"
    assert "Nothing is off track." in doc.text


def test_a_big_cycles_board_is_its_summary_only(client, quarter, monkeypatch):
    monkeypatch.setattr(board_pages.spooled, "is_big", lambda count: True)
    doc = board(client, f"/cycles/{quarter['id']}/board")
    assert "page 1 of 1" in doc.text and "summary only" in doc.text and doc.find_all("ul", cls="legend")
    assert doc.find_all("div", cls="board-chart") == []


def test_hold_this_page_stops_the_turning_and_turn_again_starts_it(client, quarter):
    path = f"/cycles/{quarter['id']}/board"
    hold = board(client, f"{path}?page=2").one("a", cls="board-hold")
    assert hold.text == "Hold this page" and hold.attrs["href"] == f"{path}?page=2&hold=1"
    held = board(client, hold.attrs["href"])
    assert [m for m in held.find_all("meta") if m.attrs.get("http-equiv")] == [] and "page 2 of 4" in held.text
    again = held.one("a", cls="board-hold")
    assert again.text == "Turn the pages again" and again.attrs["href"] == f"{path}?page=2"
