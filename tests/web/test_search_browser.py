"""The search in a real browser (Debian's Chromium, through Playwright): typed in the header's form, the Search page
lists what matches, grouped, and a result's link opens its page; at 375 px the form is in the header and nothing
is wider than the screen; the page passes axe. Skipped like tests/web/test_browser.py's tests without Chromium."""
import pytest

from helpers import HttpClient, served_in_thread

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling modules
    import test_browser
    import test_edit_browser
except ImportError:
    from . import test_browser, test_edit_browser

chromium, page_of = test_edit_browser.chromium, test_edit_browser.page_of  # the browser fixture, a page of it


def test_the_header_search_finds_groups_and_links_and_fits_a_phone(app, chromium):
    with served_in_thread(app) as served:
        api = HttpClient(f"127.0.0.1:{served.port}")
        cycle = api.post("/v1/cycles", {"name": "2026 Q4"}).ok()
        objective = api.post("/v1/objectives", {"name": "Launch in Europe", "cycle_id": cycle["id"],
                                                "is_company": False, "is_personal": False}).ok()
        api.post(f"/v1/objectives/{objective['id']}/keyresults", {"name": "Launch 3 countries",
                                                                  "type": "baseline"}).ok()
        api.post("/v1/teams", {"name": "Launch crew"}).ok()
        context = chromium.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)  # axe's script
        context.set_default_timeout(test_edit_browser.WAIT_MS)
        page = context.new_page()
        page.goto(f"{served.url}/cycles")
        page.get_by_role("search").get_by_label("Search").fill("LAUNCH")
        with page.expect_navigation():
            page.get_by_role("search").get_by_label("Search").press("Enter")
        assert page.locator("section.search-results h2").all_inner_texts() == ["Objectives", "Key results", "Teams"]
        problems = test_browser.check_accessibility(page, "search")
        page.locator("section.search-results.objective").get_by_role("link", name="Launch in Europe").click()
        assert page.url.endswith(f"/objectives/{objective['id']}")
        context.close()

        phone = page_of(chromium, width=375)
        phone.goto(f"{served.url}/search?q=launch")
        assert phone.evaluate("document.documentElement.scrollWidth") <= 375
        box = phone.get_by_role("search").first.bounding_box()
        header = phone.locator("header.top").bounding_box()
        assert box["width"] > 0 and box["y"] >= header["y"] and box["y"] + box["height"] <= header["y"] + header["height"]
        assert box["x"] + box["width"] <= 375
        assert problems == [], "\n".join(problems)
