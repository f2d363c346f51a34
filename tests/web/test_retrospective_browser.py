"""The retrospective of a closed cycle in a real browser: at 1280 and 375 px wide, in light and dark, printed (print
media emulated) and printed to an A4 PDF by Chromium, each screenshot and checked with axe-core.

The demo company's data (okr demo's, open: no one has a password) on the real server on loopback, its finished
cycle given a reflection and closed through the API. Screenshots and the PDF go to OKR_SCREENSHOTS=DIR when set,
else to the test's temporary folder.
"""
import os
import re

import pytest

from okr import create_app
from okr.cli.example_company import create_demo

from helpers import free_port, screenshots_in, start_service, stop_process

pytestmark = [pytest.mark.slow,  # a server and a browser
              pytest.mark.xdist_group("browser")]

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling modules
    import test_browser
except ImportError:
    from . import test_browser

browser = test_browser.browser  # the module's Chromium
new_page = test_browser.new_page
REFLECTION = "Onboarding took longer than we planned.\nNext time: hire before the quarter starts."
A4_POINTS = (595.3, 841.9)  # A4 in PDF points (210 x 297 mm); Chromium rounds its MediaBox to whole pixels


@pytest.fixture(scope="module")
def closed_cycle(browser, tmp_path_factory):
    """The demo served, its finished cycle closed with a reflection on its first objective: the server's address,
    a folder for screenshots, and the retrospective's path."""
    folder = tmp_path_factory.mktemp("retrospective")
    database = folder / "okr-demo.db"
    create_demo(create_app, str(database), 7)
    process, http = start_service(free_port(), "--database", str(database), "--no-access-log")
    try:
        cycles = [cycle["id"] for cycle in http.get("/v1/cycles").json()["cycles"]]
        reports = [http.get(f"/v1/cycles/{cycle}/report").json() for cycle in cycles]
        [report] = [report for report in reports if report["cycle"]["state"] == "finished"]
        cycle = report["cycle"]["id"]
        first = report["objectives"][0]["id"]
        assert http.request("PATCH", f"/v1/objectives/{first}", {"reflection": REFLECTION}).ok()
        assert http.post(f"/v1/cycles/{cycle}/close").ok()
        yield http, folder, f"/cycles/{cycle}/retrospective"
    finally:
        stop_process(process)


def shots_folder(request, folder):
    shots = os.environ.get("OKR_SCREENSHOTS") or str(folder)
    os.makedirs(shots, exist_ok=True)
    screenshots_in(request.config, shots)
    return shots


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 375])
def test_the_retrospective_reads_well_at_both_widths(request, browser, closed_cycle, width, scheme):
    http, folder, path = closed_cycle
    shots = shots_folder(request, folder)
    # axe-core goes in as an inline script, which the pages' policy forbids: the checker needs the exception.
    context, page = new_page(browser, viewport={"width": width, "height": 900}, color_scheme=scheme,
                             bypass_csp=True)
    try:
        page.goto(f"http://{http.address}{path}")
        assert page.locator("h1").text_content().startswith("Retrospective: ")
        assert page.locator(".not-closed").count() == 0  # closed: no "as of now"
        for heading in ("Scores, outcomes and reflections", "Biggest movers", "From on track to off track",
                        "Carried over", "Confidence calibration"):
            assert page.get_by_role("heading", name=heading, exact=True).count() == 1, heading
        assert page.locator("blockquote.reflection").first.inner_text().strip() == REFLECTION
        assert page.locator(".movers ol li").count() >= 5
        assert page.get_by_role("table", name="Calibration of each key-result owner").count() == 1
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "wider than the window"
        page.screenshot(path=os.path.join(shots, f"retrospective-{width}-{scheme}.png"), full_page=True)
        problems = test_browser.check_accessibility(page, f"the retrospective at {width} px, {scheme}")
        assert not problems, "\n".join(problems)
    finally:
        context.close()


def test_the_retrospective_prints_on_a4_without_navigation(request, browser, closed_cycle):
    http, folder, path = closed_cycle
    shots = shots_folder(request, folder)
    context, page = new_page(browser, viewport={"width": 1280, "height": 900})
    try:
        page.goto(f"http://{http.address}{path}")
        page.emulate_media(media="print")
        for hidden in ("header.top", "footer", "nav.actions", "form.filters"):
            assert not page.locator(hidden).is_visible(), f"{hidden} is printed"
        assert page.locator("table.retro thead").first.evaluate("el => getComputedStyle(el).display") == \
            "table-header-group"  # a table on paper, its head repeated on every page
        page.screenshot(path=os.path.join(shots, "retrospective-print.png"), full_page=True)
        pdf = page.pdf(format="A4")
        with open(os.path.join(shots, "retrospective.pdf"), "wb") as out:
            out.write(pdf)
    finally:
        context.close()
    assert pdf.startswith(b"%PDF-")
    pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
    assert 1 <= pages <= 40, pages
    boxes = {tuple(float(n) for n in box.split()[2:]) for box in re.findall(rb"/MediaBox\s*\[\s*([0-9. ]+)\]", pdf)}
    assert boxes and all(abs(w - A4_POINTS[0]) < 2 and abs(h - A4_POINTS[1]) < 2 for w, h in boxes), boxes
