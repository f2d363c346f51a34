"""The cycle page's review in a real browser (Debian's Chromium, through Playwright), on data made over /v1: at
1280 px every progress bar and status starts at the same x, objectives' and key results' alike, aligned
objectives' too; at 375 px nothing is wider than the screen and each row form keeps its bar in one place; the
filters work as a person uses them; axe passes in the light and the dark scheme. Screenshots go to
/tmp/okr-review-shots for a person to look at."""
from pathlib import Path

import pytest

from helpers import HttpClient, make_user, served_in_thread

pytestmark = [pytest.mark.slow,  # every test here starts a server and a browser
              pytest.mark.xdist_group("browser")]

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling modules
    import test_browser
    import test_edit_browser
except ImportError:
    from . import test_browser, test_edit_browser

chromium = test_edit_browser.chromium
SHOTS = Path("/tmp/okr-review-shots")


def lefts(page, selector):
    """The left x of each element the selector finds, rounded to a pixel."""
    return [round(box["x"]) for box in page.locator(selector).evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().toJSON())")]


def quarter(api, people):
    """A dated cycle: two company objectives, one with an aligned team objective under it and that one with an
    aligned personal one; key results of every kind, owned by Ada or Grace, checked in."""
    cycle = api.post("/v1/cycles", {"name": "2026 Q4"}).ok()
    api.request("PATCH", f"/v1/cycles/{cycle['id']}", {"starts_on": "2026-10-01", "ends_on": "2026-12-30"}).ok()

    def objective(name, **fields):
        return api.post("/v1/objectives", {"name": name, "cycle_id": cycle["id"], "is_company": False,
                                           "is_personal": False, **fields}).ok()

    def key_result(objective_id, name, owner, value, **fields):
        unit = {name: fields.pop(name) for name in ("unit", "unit_position") if name in fields}
        made = api.post(f"/v1/objectives/{objective_id}/keyresults", {"name": name, "owner_id": people[owner],
                                                                       **fields}).ok()
        if unit:
            api.request("PATCH", f"/v1/keyresults/{made['id']}", unit).ok()
        api.post(f"/v1/keyresults/{made['id']}/checkins", {"value": value, "confidence": "0.5"}).ok()
        return {**made, "owner": owner}

    revenue = objective("Grow revenue to $1M a year", is_company=True, assignee_id=people["ada"])
    platform = objective("Keep the platform fast", parent_objective_id=revenue["id"], assignee_id=people["grace"])
    mine = objective("Learn the profiler", is_personal=True, parent_objective_id=platform["id"])
    trust = objective("Earn our customers' trust", is_company=True)
    made = [
        key_result(revenue["id"], "Annual recurring revenue", "ada", "420000", type="positive",
                   current_value="300000", target_value_min="1000000", unit="$", unit_position="before"),
        key_result(revenue["id"], "Close enterprise deals", "grace", "3", type="positive", current_value="0",
                   target_value_min="10"),
        key_result(platform["id"], "p99 latency of the API", "grace", "410", type="negative", current_value="600",
                   target_value_min="250", unit="ms"),
        key_result(platform["id"], "Error budget left", "ada", "0.4", type="range", current_value="0.5",
                   target_value_min="0.25", target_value_max="1"),
        key_result(mine["id"], "Profile every endpoint", "ada", "1", type="milestone", current_value="0"),
        key_result(trust["id"], "Net promoter score", "grace", "31", type="baseline", current_value="30"),
    ]
    return cycle, made


def test_the_review_lines_up_filters_and_passes_axe_in_both_schemes(app, runner, chromium):
    people = {"ada": make_user(runner, "Ada Lovelace", "ada@example.com")["id"],
              "grace": make_user(runner, "Grace Hopper", "grace@example.com")["id"]}
    SHOTS.mkdir(exist_ok=True)
    with served_in_thread(app) as served:
        api = HttpClient(f"127.0.0.1:{served.port}")
        cycle, made = quarter(api, people)
        path = f"{served.url}/cycles/{cycle['id']}"
        problems = []
        for scheme in ("light", "dark"):
            context = chromium.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme,
                                           bypass_csp=True)  # axe's script is inline
            context.set_default_timeout(test_edit_browser.WAIT_MS)
            page = context.new_page()
            page.goto(path)
            assert page.locator(".review ul.key-results > li").count() == len(made)
            # Every bar, status and trend of every row at one x: objectives' and key results', nested or not.
            for cells in (".review .p", ".review .s"):
                assert len(set(lefts(page, cells))) == 1, (cells, lefts(page, cells))
            assert len(set(lefts(page, ".review li .t"))) == 1
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            page.screenshot(path=SHOTS / f"review-1280-{scheme}.png", full_page=True)
            problems += test_browser.check_accessibility(page, f"cycle review, {scheme}")
            context.close()

            phone = chromium.new_context(viewport={"width": 375, "height": 800}, color_scheme=scheme,
                                         bypass_csp=True)
            phone.set_default_timeout(test_edit_browser.WAIT_MS)
            small = phone.new_page()
            small.goto(path)
            assert small.evaluate("document.documentElement.scrollWidth") <= 375
            # On a phone each row stacks, its bar in the same place in every row of a form.
            assert len(set(lefts(small, ".review li .p"))) == 1 and len(set(lefts(small, ".review .g .p"))) == 1
            small.screenshot(path=SHOTS / f"review-375-{scheme}.png", full_page=True)
            problems += test_browser.check_accessibility(small, f"cycle review at 375 px, {scheme}")
            phone.close()
            if scheme == "light":  # a small laptop: the names keep their room (the trend gives way)
                laptop = chromium.new_context(viewport={"width": 900, "height": 800})
                middle = laptop.new_page()
                middle.goto(path)
                assert middle.evaluate("document.documentElement.scrollWidth") <= 900
                widths = middle.eval_on_selector_all(".review li .n", "cells => cells.map(c => c.offsetWidth)")
                assert min(widths) >= 140, widths
                assert len(set(lefts(middle, ".review .p"))) == 1
                laptop.close()
        assert problems == [], "\n".join(problems)

        # The filters as a person uses them: Ada's key results that are at risk or off track.
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(test_edit_browser.WAIT_MS)
        page = context.new_page()
        page.goto(path)
        page.get_by_label("Key-result owner").select_option(label="Ada Lovelace")
        page.get_by_role("checkbox", name="off track").check()
        page.get_by_role("checkbox", name="at risk").check()
        with page.expect_navigation():
            page.get_by_role("button", name="Filter").click()
        assert "owner_id=" in page.url and "status=at_risk" in page.url and "status=off_track" in page.url
        shown = page.locator(".review ul.key-results > li")
        names = shown.locator(".n a").all_inner_texts()
        expected = {k["name"] for k in made if k["owner"] == "ada"}
        assert names and set(names) <= expected
        assert set(shown.locator(".status").all_inner_texts()) <= {"at risk", "off track"}
        page.screenshot(path=SHOTS / "review-filtered-1280.png", full_page=True)
        page.get_by_label("Name contains").fill("nothing like this")
        with page.expect_navigation():
            page.get_by_role("button", name="Filter").click()
        assert "Nothing matches" in page.locator("section.empty").inner_text()
        with page.expect_navigation():
            page.locator("section.empty").get_by_role("link", name="Show them all").click()
        assert page.locator(".review ul.key-results > li").count() == len(made)
        context.close()
