"""Typing numbers in a real browser (Debian's Chromium, through Playwright): "$60,000" into a check-in and "60k"
into a key result's target, a milestone's Done box, and the confirm step of a far jump, at 1280 and 375 pixels
wide, with axe-core's check of the confirm step and screenshots (OKR_SCREENSHOTS=DIR keeps them). Skipped like
tests/web/test_browser.py's tests without Chromium or Playwright (failed under CI)."""
import os
from pathlib import Path

import pytest

from helpers import HttpClient, served_in_thread

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling module
    import test_browser
    from test_edit_browser import WAIT_MS, chromium  # noqa: F401 (a fixture)
except ImportError:
    from . import test_browser
    from .test_edit_browser import WAIT_MS, chromium  # noqa: F401

pytestmark = [pytest.mark.slow,  # every test here starts a server and a browser
              pytest.mark.xdist_group("units-browser")]

OVERFLOW = "document.documentElement.scrollWidth"


@pytest.fixture
def shots(tmp_path):
    chosen = os.environ.get("OKR_SCREENSHOTS")
    folder = Path(chosen).resolve() if chosen else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("width", [1280, 375])
def test_typed_numbers_done_and_the_confirm_step_in_the_browser(app, chromium, shots, width):  # noqa: F811
    with served_in_thread(app) as served:
        api = HttpClient(f"127.0.0.1:{served.port}")
        cycle = api.post("/v1/cycles", {"name": "2026 Q4"}).ok()
        objective = api.post("/v1/objectives", {"name": "Grow revenue", "cycle_id": cycle["id"], "is_company": True,
                                                "is_personal": False}).ok()
        revenue = api.post(f"/v1/objectives/{objective['id']}/keyresults",
                           {"name": "Revenue", "type": "positive", "current_value": "10000",
                            "target_value_min": "60000"}).ok()
        api.request("PATCH", f"/v1/keyresults/{revenue['id']}", {"unit": "$", "unit_position": "before"}).ok()
        launch = api.post(f"/v1/objectives/{objective['id']}/keyresults", {"name": "Launch", "type": "milestone"}).ok()
        context = chromium.new_context(viewport={"width": width, "height": 800}, bypass_csp=True)
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        problems = []

        # "$60,000" into the check-in form.
        page.goto(f"{served.url}/keyresults/{revenue['id']}")
        page.get_by_label("Value", exact=True).fill("$60,000")
        with page.expect_navigation():
            page.get_by_role("button", name="Record check-in").click()
        assert "$60,000 of $60,000 (from $10,000)" in page.inner_text("p.kr")
        assert api.get(f"/v1/keyresults/{revenue['id']}").ok()["current_value"] == "60000.00"

        # "60k" into the key result's edit form: the new target.
        page.goto(f"{served.url}/keyresults/{revenue['id']}/edit")
        assert page.get_by_label("Unit", exact=True).input_value() == "$"
        page.get_by_label("Target", exact=True).fill("120k")
        with page.expect_navigation():
            page.get_by_role("button", name="Save").click()
        assert api.get(f"/v1/keyresults/{revenue['id']}").ok()["target_value_min"] == "120000.00"
        assert "$60,000 of $120,000" in page.inner_text("p.kr")

        # A far jump: asked about, then saved anyway.
        page.get_by_label("Value", exact=True).fill("6M")
        page.get_by_label("Comment", exact=True).fill("The big deal")
        with page.expect_navigation() as asked:
            page.get_by_role("button", name="Record check-in").click()
        assert asked.value.status == 200
        warning = page.get_by_role("alert")
        assert "$6,000,000" in warning.inner_text() and "Nothing was saved" in warning.inner_text()
        assert page.get_by_label("Value", exact=True).input_value() == "6M"
        assert page.get_by_label("Comment", exact=True).input_value() == "The big deal"
        assert api.get(f"/v1/keyresults/{revenue['id']}").ok()["current_value"] == "60000.00"
        assert page.evaluate(OVERFLOW) <= width
        problems += test_browser.check_accessibility(page, "the confirm step")
        page.screenshot(path=shots / f"units-confirm-{width}.png", full_page=True)
        with page.expect_navigation():
            page.get_by_role("button", name="Save anyway").click()
        assert api.get(f"/v1/keyresults/{revenue['id']}").ok()["current_value"] == "6000000.00"
        assert "$6,000,000" in page.inner_text("table.history")

        # A milestone: tick Done.
        page.goto(f"{served.url}/keyresults/{launch['id']}")
        assert page.get_by_label("Value", exact=True).count() == 0
        page.get_by_label("Done", exact=True).check()
        with page.expect_navigation():
            page.get_by_role("button", name="Record check-in").click()
        assert api.get(f"/v1/keyresults/{launch['id']}").ok()["current_value"] == "1.00"
        assert "done" in page.inner_text("p.kr")
        assert page.evaluate(OVERFLOW) <= width
        problems += test_browser.check_accessibility(page, "a milestone's check-in")
        page.screenshot(path=shots / f"units-milestone-{width}.png", full_page=True)
        page.goto(f"{served.url}/keyresults/{revenue['id']}/edit")
        page.screenshot(path=shots / f"units-edit-{width}.png", full_page=True)
        context.close()
        assert problems == [], "\n".join(problems)
