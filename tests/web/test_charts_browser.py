"""The charts in a real browser: a key result's, an objective's and a cycle's page at 1280 and 375 px wide, in
light and in dark mode (prefers-color-scheme emulated), each screenshot and checked with axe-core.

The demo company's data (okr demo's, open: no one has a password) on the real server on loopback. Screenshots
go to OKR_SCREENSHOTS=DIR when set, else to the test's temporary folder.
"""
import os
import re

import pytest

from okr import create_app
from okr.cli.example_company import create_demo

from helpers import free_port, start_service, stop_process

pytestmark = [pytest.mark.slow,  # a server and a browser
              pytest.mark.xdist_group("browser")]

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling modules
    import a11y
    import test_browser
except ImportError:
    from . import a11y, test_browser

browser = test_browser.browser  # the module's Chromium
new_page = test_browser.new_page
BROWSER_ACCEPT = {"Accept": "text/html"}


@pytest.fixture(scope="module")
def demo(browser, tmp_path_factory):
    """The demo database served; the paths of a key result, an objective and the current cycle."""
    folder = tmp_path_factory.mktemp("charts")
    database = folder / "okr-demo.db"
    create_demo(create_app, str(database), 7)
    process, http = start_service(free_port(), "--database", str(database), "--no-access-log")
    try:
        cycles = http.get("/cycles", headers=BROWSER_ACCEPT).payload.decode()
        # The first listed is the current cycle (Current comes first).
        cycle = re.findall(r'href="/cycles/([0-9a-f-]{36})"', cycles)[0]
        tree = http.get(f"/cycles/{cycle}", headers=BROWSER_ACCEPT).payload.decode()
        objective = re.findall(r'href="/objectives/([0-9a-f-]{36})"', tree)[0]
        key_result = re.findall(r'href="/keyresults/([0-9a-f-]{36})"', tree)[0]
        yield http, folder, {"key-result": f"/keyresults/{key_result}", "objective": f"/objectives/{objective}",
                             "cycle": f"/cycles/{cycle}"}
    finally:
        stop_process(process)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 375])
def test_the_charts_read_well_in_light_and_dark_at_both_widths(browser, demo, scheme, width):
    http, folder, paths = demo
    shots = os.environ.get("OKR_SCREENSHOTS") or str(folder)
    os.makedirs(shots, exist_ok=True)
    # axe-core goes in as an inline script, which the pages' policy forbids: the checker needs the exception.
    context, page = new_page(browser, viewport={"width": width, "height": 900}, color_scheme=scheme,
                             bypass_csp=True)
    problems = []
    try:
        for name, path in paths.items():
            page.goto(f"http://{http.address}{path}")
            chart = page.locator("svg.chart")
            assert chart.count() == 1, name
            assert chart.bounding_box()["width"] <= width, name
            assert chart.get_attribute("role") == "img" and chart.get_attribute("aria-label"), name
            assert page.locator("svg.chart text.date").count() >= 2, f"{name}: no dates on the axis"
            assert page.locator("svg.chart text.today-label").text_content() == "today", name
            table = page.locator("details.chart-table table")
            assert table.locator("tbody tr").count() >= 2 and table.locator("time[datetime]").count() >= 2, name
            assert page.evaluate("document.documentElement.scrollWidth") <= width, f"{name} is wider than the window"
            background = page.locator("svg.chart").evaluate("el => getComputedStyle(el).backgroundColor")
            assert (background == "rgb(31, 36, 43)") == (scheme == "dark"), (name, scheme, background)
            page.locator("svg.chart").scroll_into_view_if_needed()
            page.screenshot(path=os.path.join(shots, f"chart-{name}-{width}-{scheme}.png"))
            problems += test_browser.check_accessibility(page, f"{name} at {width} px, {scheme}")
            page.locator("details.chart-table summary").click()  # the table unfolded is checked too
            problems += test_browser.check_accessibility(page, f"{name}'s table at {width} px, {scheme}")
    finally:
        context.close()
    assert problems == [], "\n".join(problems)
