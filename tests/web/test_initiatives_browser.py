"""Initiatives and weights in a real browser (Debian's Chromium, through Playwright), on a phone's width in the dark
scheme: an initiative added from the form on a key result's page, set to done in its row, the key result's weight
and progress source chosen on its edit form, and the review page showing both; axe passes on the pages and nothing
is wider than the screen. Skipped like tests/web/test_browser.py's tests without Chromium or Playwright (failed
under CI)."""
import pytest

from helpers import HttpClient, served_in_thread

pytestmark = [pytest.mark.slow,  # it starts a server and a browser
              pytest.mark.xdist_group("browser")]

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling modules
    import test_browser
    import test_edit_browser
except ImportError:
    from . import test_browser, test_edit_browser

chromium = test_edit_browser.chromium


def test_an_initiative_is_added_and_done_and_makes_a_weighted_key_results_progress(app, chromium):
    with served_in_thread(app) as served:
        api = HttpClient(f"127.0.0.1:{served.port}")
        cycle = api.post("/v1/cycles", {"name": "2026 Q4"}).ok()
        objective = api.post("/v1/objectives", {"name": "Grow revenue", "cycle_id": cycle["id"], "is_company": False,
                                                "is_personal": False}).ok()
        signups = api.post(f"/v1/objectives/{objective['id']}/keyresults",
                           {"name": "Reach 100 signups", "type": "positive", "target_value_min": "100"}).ok()
        api.post(f"/v1/objectives/{objective['id']}/keyresults",
                 {"name": "Keep churn low", "type": "negative", "target_value_min": "2", "current_value": "5"}).ok()
        context = chromium.new_context(viewport={"width": 375, "height": 800}, color_scheme="dark",
                                       bypass_csp=True)  # axe's script is inline
        context.set_default_timeout(test_edit_browser.WAIT_MS)
        page = context.new_page()
        page.goto(f"{served.url}/keyresults/{signups['id']}")
        form = page.locator("form.initiative-form")
        form.get_by_label("Add an initiative").fill("Ship the signup flow")
        form.get_by_label("Link").fill("https://tracker.example.com/PROJ-12")
        form.get_by_label("Due").fill("2026-12-15")
        with page.expect_navigation():
            form.get_by_role("button", name="Add initiative").click()
        row = page.locator("li.initiative", has_text="Ship the signup flow")
        assert row.get_by_role("link", name="Ship the signup flow", exact=True).get_attribute("href") == (
            "https://tracker.example.com/PROJ-12")
        row.get_by_label("State of Ship the signup flow").select_option("done")
        with page.expect_navigation():
            row.get_by_role("button", name="Set the state of Ship the signup flow").click()
        assert page.locator(".initiatives-count").inner_text() == "1 of 1 done"
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        problems = test_browser.check_accessibility(page, "key result page with an initiative, 375 px, dark")

        page.goto(f"{served.url}/keyresults/{signups['id']}/edit")
        page.get_by_label("Weight").fill("3")
        page.get_by_label("Progress from").select_option("initiatives")
        with page.expect_navigation():
            page.get_by_role("button", name="Save").click()
        page.goto(f"{served.url}/cycles/{cycle['id']}")
        signups_row = page.locator("li", has_text="Reach 100 signups")
        assert signups_row.locator(".weight").inner_text() == "weight 3"
        assert signups_row.locator(".kr-initiatives").inner_text() == "1/1 initiatives done: its progress"
        # (1 × 3 + 0 × 1) / 4: the weighted mean of done and not started
        assert page.locator("article.objective", has_text="Grow revenue").locator(".g .p").inner_text().endswith("75%")
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        problems += test_browser.check_accessibility(page, "cycle review with a weight and initiatives, 375 px, dark")
        assert problems == [], "\n".join(problems)
