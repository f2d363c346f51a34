"""The wallboard on a TV, in Chromium against the real server: an admin makes a board link on the Board links
page; a browser with no cookie opens it at 1920×1080, and every page of the board fits the screen (nothing to
scroll), leads to the next by its meta refresh, the last back to the summary; axe passes in light and dark.
Screenshots of each page for a person to look at.

The server, the browser and the seeded cycle are test_browser.py's fixtures; a quarter of 12 objectives of 4
key results, long names among them, is added through the API."""
import re

import pytest

pytestmark = [pytest.mark.slow,  # every test here starts a server, a process or a browser
              pytest.mark.xdist_group("wallboard-browser")]  # one worker starts the module's Chromium and server

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling module
    import test_browser
    import test_people_browser
except ImportError:
    from . import test_browser, test_people_browser

browser, service, time_limit = test_browser.browser, test_browser.service, test_browser.time_limit
screenshots = test_browser.screenshots
PASSWORD = "correct horse battery"
TV = {"viewport": {"width": 1920, "height": 1080}}
SIZE = "() => [document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
REFRESH = "() => document.querySelector('meta[http-equiv=refresh]').content"


@pytest.fixture(scope="module")
def quarter(service):
    """A cycle of 12 objectives of 4 key results each, some with names far too long for a row; its id."""
    api = service.api
    cycle = api.post("/v1/cycles", {"name": "2026 Q4 on the wall"}).ok()
    api.request("PATCH", f"/v1/cycles/{cycle['id']}", {"starts_on": "2026-10-01", "ends_on": "2026-12-31"},
                headers={"Content-Type": "application/merge-patch+json"}).ok()
    for n in range(12):
        name = f"Objective {n}" + (" that a team wrote as a whole paragraph of what it hopes" * 3 if n % 4 == 0 else "")
        objective = api.post("/v1/objectives", {"name": name, "cycle_id": cycle["id"], "is_company": n < 2,
                                                "is_personal": False}).ok()
        for k in range(4):
            result = f"KR {n}.{k}" + (" with a name long enough to run off any screen" * 3 if k == 1 else "")
            made = api.post(f"/v1/objectives/{objective['id']}/keyresults",
                            {"name": result, "type": "positive", "current_value": "0",
                             "target_value_min": "60000"}).ok()
            api.post(f"/v1/keyresults/{made['id']}/checkins", {"value": str(9000 * k + 1000 * n),
                                                               "confidence": "0.6"}).ok()
    return cycle["id"]


@pytest.fixture(scope="module")
def board_url(browser, service, quarter):
    """A board link to the quarter, made by an admin through the Board links page."""
    test_people_browser.person(service, "Maya Admin", "maya@example.com", "admin", PASSWORD)
    context, page = test_browser.new_page(browser)
    try:
        test_people_browser.sign_in(page, service.url(""), "maya@example.com", PASSWORD)
        page.goto(service.url("/cycles"))
        with page.expect_navigation():
            page.get_by_role("link", name="Board links for TVs").click()
        page.get_by_label("Cycle").select_option(value=quarter)
        page.get_by_label("Name").fill("Sales floor TV")
        with page.expect_navigation() as navigation:
            page.get_by_role("button", name="Make the link").click()
        assert navigation.value.status == 200
        url = page.get_by_role("textbox", name="Link").input_value()
        assert page.locator("table tbody tr").count() == 1 and "Sales floor TV" in page.inner_text("table")
    finally:
        context.close()
    assert re.fullmatch(re.escape(service.url("/boards/")) + r"[A-Za-z0-9_-]{43}", url), url
    return url


def test_every_page_of_the_board_fits_a_tv_and_leads_to_the_next(browser, service, board_url, screenshots):
    context, page = test_browser.new_page(browser, **TV)  # a TV: no cookie, no sign-in
    try:
        assert page.goto(board_url).status == 200
        total = int(re.search(r"page 1 of (\d+)", page.inner_text("header")).group(1))
        assert total == 5  # the summary, then 12 objectives of 5 rows each, three to a page of 18 rows
        visited = []
        for number in range(1, total + 1):
            assert f"page {number} of {total}" in page.inner_text("header")
            width, height = page.evaluate(SIZE)
            assert width <= 1920 and height <= 1080, (number, width, height)
            page.screenshot(path=screenshots / f"wallboard-{number}.png")
            visited.append(page.url)
            seconds, target = re.fullmatch(r"(\d+); url=(.+)", page.evaluate(REFRESH)).groups()
            assert seconds == "30"
            assert page.goto(service.url(target)).status == 200
        assert page.url == board_url and visited[0] == board_url  # the last page led back to the summary
        assert page.locator("nav, form, header.top").count() == 0
    finally:
        context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_board_and_the_board_links_page_pass_axe(browser, service, board_url, scheme, screenshots):
    problems = []
    context, page = test_browser.new_page(browser, **TV, bypass_csp=True, color_scheme=scheme)
    try:
        for number in (1, 2):
            # The timed refresh the board is for is axe's meta-refresh violation, which WCAG allows where a person
            # can turn it off: each page's "Hold this page" does, and the held page is what axe checks.
            page.goto(board_url + ("" if number == 1 else f"?page={number}"))
            with page.expect_navigation():
                page.get_by_role("link", name="Hold this page").click()
            assert page.locator("meta[http-equiv=refresh]").count() == 0
            problems += test_browser.check_accessibility(page, f"wallboard page {number}, {scheme}")
        page.screenshot(path=screenshots / f"wallboard-2-{scheme}.png")
        test_people_browser.sign_in(page, service.url(""), "maya@example.com", PASSWORD)
        page.goto(service.url("/board-links"))
        problems += test_browser.check_accessibility(page, f"board links, {scheme}")
    finally:
        context.close()
    assert not problems, "accessibility problems:\n" + "\n".join(problems)
