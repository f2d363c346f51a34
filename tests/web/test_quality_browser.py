"""The quality checks in a real browser (Debian's Chromium, through Playwright), on a phone's width in the dark
scheme: a cycle with a few problems, its review's Quality panel opened and listing them, one link followed to the
key result's edit form, where the hint stands beside its field; axe passes on both pages and nothing is wider than
the screen. Skipped like tests/web/test_browser.py's tests without Chromium or Playwright (failed under CI)."""
import pytest

from helpers import HttpClient, make_user, served_in_thread

pytestmark = [pytest.mark.slow,  # it starts a server and a browser
              pytest.mark.xdist_group("browser")]

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling modules
    import test_browser
    import test_edit_browser
except ImportError:
    from . import test_browser, test_edit_browser

chromium = test_edit_browser.chromium


def test_the_quality_panel_lists_the_problems_and_leads_to_the_hint(app, runner, chromium):
    grace = make_user(runner, "Grace Hopper", "grace@example.com")["id"]
    with served_in_thread(app) as served:
        api = HttpClient(f"127.0.0.1:{served.port}")
        cycle = api.post("/v1/cycles", {"name": "2026 Q4"}).ok()
        objective = api.post("/v1/objectives", {"name": "Grow revenue", "cycle_id": cycle["id"], "is_company": False,
                                                "is_personal": False}).ok()
        task = api.post(f"/v1/objectives/{objective['id']}/keyresults",
                        {"name": "Launch the self-serve checkout", "type": "milestone", "owner_id": grace}).ok()
        context = chromium.new_context(viewport={"width": 375, "height": 800}, color_scheme="dark",
                                       bypass_csp=True)  # axe's script is inline
        context.set_default_timeout(test_edit_browser.WAIT_MS)
        page = context.new_page()
        page.goto(f"{served.url}/cycles/{cycle['id']}")
        panel = page.locator("section.quality")
        panel.get_by_text("3 things to fix in this cycle").click()  # the fold opens, no script
        listed = panel.locator("li").all_inner_texts()
        assert listed == [
            "Objective Grow revenue: no team and no owner: choose a team or an owner",
            "Objective Grow revenue: 1 key result: an objective has 2 to 5",
            "Key result Launch the self-serve checkout: reads like a task: consider making it an initiative "
            "(a suggestion)",
        ]
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        problems = test_browser.check_accessibility(page, "cycle review with its Quality panel open, 375 px, dark")

        with page.expect_navigation():
            panel.get_by_role("link", name="Launch the self-serve checkout").click()
        assert page.url.endswith(f"/keyresults/{task['id']}/edit")
        name = page.get_by_label("Name")
        assert name.input_value() == "Launch the self-serve checkout"
        hint = page.locator("#name-advice")
        assert hint.inner_text() == "Reads like a task: consider making it an initiative."
        assert "name-advice" in name.get_attribute("aria-describedby")
        assert hint.is_visible() and page.evaluate("document.documentElement.scrollWidth") <= 375
        problems += test_browser.check_accessibility(page, "key result form with a quality hint, 375 px, dark")
        assert problems == [], "\n".join(problems)
