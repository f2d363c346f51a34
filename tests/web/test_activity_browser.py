"""The Activity page in a real browser (Debian's Chromium, through Playwright): an edit on the objective's form
shows on /activity and in the objective's change history; the team filter, chosen in the form, keeps the
team's changes only; the page fits a phone. Skipped like tests/web/test_browser.py's tests without Chromium."""
import pytest

from helpers import HttpClient, served_in_thread

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling module
    import test_edit_browser
except ImportError:
    from . import test_edit_browser

chromium, page_of = test_edit_browser.chromium, test_edit_browser.page_of  # the browser fixture, a page of it


def test_an_edit_shows_on_the_activity_page_and_the_team_filter_keeps_its_team(app, chromium):
    with served_in_thread(app) as served:
        api = HttpClient(f"127.0.0.1:{served.port}")
        cycle = api.post("/v1/cycles", {"name": "2026 Q4"}).ok()
        team = api.post("/v1/teams", {"name": "Platform"}).ok()
        api.post("/v1/teams", {"name": "Growth"}).ok()
        objective = api.post("/v1/objectives", {"name": "Grow revenue", "cycle_id": cycle["id"], "team_id": team["id"],
                                                "is_company": False, "is_personal": False}).ok()
        page = page_of(chromium)
        page.goto(f"{served.url}/objectives/{objective['id']}/edit")
        page.get_by_label("Name").fill("Grow ARR")
        with page.expect_navigation():
            page.get_by_role("button", name="Save").click()
        history = page.locator("section.change-history li p.what")
        assert history.first.inner_text() == "Someone (sign-in off) renamed objective “Grow revenue” → “Grow ARR”"

        page.get_by_role("navigation", name="Site").get_by_role("link", name="Activity").click()
        events = page.locator("ol.activity > li p.what")
        assert events.count() == 5
        assert events.first.inner_text() == "Someone (sign-in off) renamed objective “Grow revenue” → “Grow ARR”"

        page.get_by_label("Team").select_option(label="Platform")
        with page.expect_navigation():
            page.get_by_role("button", name="Filter").click()
        assert f"team_id={team['id']}" in page.url
        assert events.all_inner_texts() == [
            "Someone (sign-in off) renamed objective “Grow revenue” → “Grow ARR”",
            "Someone (sign-in off) created objective “Grow revenue”",
            "Someone (sign-in off) created team “Platform”",
        ]
        events.first.get_by_role("link", name="“Grow ARR”").click()
        assert page.url.endswith(f"/objectives/{objective['id']}")

        phone = page_of(chromium, width=375)
        phone.goto(f"{served.url}/activity")
        assert phone.evaluate("document.documentElement.scrollWidth") <= 375
