"""Carry over by choice in a real browser (Debian's Chromium, through Playwright, as tests/web/test_browser.py
drives it) against the app on loopback: the copy page's boxes start as the rule says, a person unchecks and checks
some, copies, and the new cycle holds exactly what was picked, each objective linked to its source. The page
passes axe-core at both widths and fits a phone's 375 px; its screenshots are kept with OKR_SCREENSHOTS=DIR."""
import os
from pathlib import Path

import pytest

from helpers import HttpClient, screenshots_in, served_in_thread

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling module
    import test_browser
except ImportError:
    from . import test_browser

pytestmark = [pytest.mark.slow,  # every test here starts a server and a browser
              pytest.mark.xdist_group("carry-browser")]  # in one xdist worker, with its Chromium

WAIT_MS = 10_000


@pytest.fixture
def chromium(request):
    yield from test_browser.closing_contexts(test_browser.chromium_or_skip(request))


@pytest.fixture
def screenshots(request, tmp_path):
    chosen = os.environ.get("OKR_SCREENSHOTS")
    folder = Path(chosen).resolve() if chosen else tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    screenshots_in(request.config, folder)
    return folder


def quarter(api):
    """2026 Q1: Grow (missed) with a key result at 40 % and one done; its child Learn (partly achieved) with one
    key result; Ship (achieved) with a milestone not done; Tidy (dropped)."""
    cycle = api.post("/v1/cycles", {"name": "2026 Q1"}).ok()

    def objective(name, outcome, **fields):
        made = api.post("/v1/objectives", {"name": name, "cycle_id": cycle["id"], "is_company": False,
                                           "is_personal": False, **fields}).ok()
        assert api.request("PATCH", f"/v1/objectives/{made['id']}", {"outcome": outcome}).status == 200
        return made

    def key_result(objective_id, name, value=None, **fields):
        made = api.post(f"/v1/objectives/{objective_id}/keyresults", {"name": name, **fields}).ok()
        if value is not None:
            api.post(f"/v1/keyresults/{made['id']}/checkins", {"value": value}).ok()
        return made

    grow = objective("Grow revenue in Europe and the Nordics", "missed")
    learn = objective("Learn", "partly_achieved", parent_objective_id=grow["id"])
    ship = objective("Ship the v2 API", "achieved")
    tidy = objective("Tidy the backlog", "dropped")
    return {"cycle": cycle, "grow": grow, "learn": learn, "ship": ship, "tidy": tidy,
            "reach": key_result(grow["id"], "Reach 100 paying customers", "40", type="positive",
                                current_value="0", target_value_min="100"),
            "hire": key_result(grow["id"], "Hire two", "2", type="positive", current_value="0",
                               target_value_min="2"),
            "read": key_result(learn["id"], "Read 5 books", type="positive", current_value="0",
                               target_value_min="5"),
            "launch": key_result(ship["id"], "Launch", type="milestone")}


def box(page, kind, row):
    return page.locator(f"#{kind}-{row['id']}")


def test_a_person_picks_what_goes_and_the_new_cycle_holds_exactly_that(app, chromium, screenshots):
    with served_in_thread(app) as served:
        api = HttpClient(f"127.0.0.1:{served.port}")
        q1 = quarter(api)
        copy_url = f"{served.url}/cycles/{q1['cycle']['id']}/copy"
        context = chromium.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        page.goto(copy_url)
        # As the rule says: achieved and dropped objectives, and the key result at 100 %, start unchecked.
        states = {name: box(page, "objective", q1[name]).is_checked() for name in ("grow", "learn", "ship", "tidy")}
        states.update({name: box(page, "key-result", q1[name]).is_checked()
                       for name in ("reach", "hire", "read", "launch")})
        assert states == {"grow": True, "learn": True, "ship": False, "tidy": False,
                          "reach": True, "hire": False, "read": True, "launch": True}
        assert page.get_by_role("checkbox", name="Ship the v2 API (achieved)").count() == 1  # labelled
        problems = test_browser.check_accessibility(page, "copy page")
        page.screenshot(path=screenshots / "cycle-copy-picks-1280.png", full_page=True)

        # Ship goes after all, without its milestone; Learn stays (its key result's box is left checked);
        # Hire two goes though done.
        box(page, "objective", q1["ship"]).check()
        box(page, "key-result", q1["launch"]).uncheck()
        box(page, "objective", q1["learn"]).uncheck()
        box(page, "key-result", q1["hire"]).check()
        page.get_by_label("Name of the new cycle").fill("2026 Q2")
        with page.expect_navigation() as copied:
            page.get_by_role("button", name="Copy cycle").click()
        assert copied.value.status == 200
        assert "2 objectives and 2 key results were copied from 2026 Q1" in page.inner_text("main")
        with page.expect_navigation():
            page.get_by_role("link", name="Open 2026 Q2").click()
        new_id = page.url.rstrip("/").split("/")[-1]

        report = api.get(f"/v1/cycles/{new_id}/report").ok()
        nodes = {node["name"]: node for node in report["objectives"]}
        assert set(nodes) == {"Grow revenue in Europe and the Nordics", "Ship the v2 API"}
        assert nodes["Grow revenue in Europe and the Nordics"]["carried_from_id"] == q1["grow"]["id"]
        assert nodes["Ship the v2 API"]["carried_from_id"] == q1["ship"]["id"]
        assert [kr["name"] for kr in nodes["Grow revenue in Europe and the Nordics"]["key_results"]] == [
            "Reach 100 paying customers", "Hire two"]
        assert nodes["Ship the v2 API"]["key_results"] == []
        assert report["objectives_count"] == 2 and report["key_results_count"] == 2

        # On a phone: the same page fits 375 px, and passes axe there too.
        phone = chromium.new_context(viewport={"width": 375, "height": 800}, bypass_csp=True)
        phone.set_default_timeout(WAIT_MS)
        small = phone.new_page()
        small.goto(copy_url)
        assert small.evaluate("document.documentElement.scrollWidth") <= 375
        problems += test_browser.check_accessibility(small, "copy page at 375 px")
        small.screenshot(path=screenshots / "cycle-copy-picks-375.png", full_page=True)
        assert problems == [], "\n".join(problems)
