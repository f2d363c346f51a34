"""The field merge in a real browser (Debian's Chromium): Maya and Sam open one key result's form in two
contexts; Maya raises the target to 65,000, Sam only changes the owner and saves: the target stays 65,000 and
the owner is Sam's choice. Then both change the target: Sam's save is refused with theirs, who and when, and
Use mine saves his."""
import pytest

from helpers import HttpClient, served_in_thread
from okr.db import transaction
from okr.store import users

from test_edit_browser import chromium, page_of  # noqa: F401 (chromium is a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]


def test_maya_and_sam_edit_one_key_result_and_both_changes_stay(app, chromium):  # noqa: F811
    with app.app_context(), transaction() as db:
        sam = users.create(db, "Sam Stone", "sam@example.com", "editor")
    with served_in_thread(app) as served:
        api = HttpClient(f"127.0.0.1:{served.port}")
        cycle = api.post("/v1/cycles", {"name": "2026 Q4"}).ok()
        objective = api.post("/v1/objectives", {"name": "Grow revenue", "cycle_id": cycle["id"],
                                                "is_company": False, "is_personal": False}).ok()
        kr = api.post(f"/v1/objectives/{objective['id']}/keyresults",
                      {"name": "Revenue", "type": "positive", "current_value": "10000",
                       "target_value_min": "60000"}).ok()
        edit = f"{served.url}/keyresults/{kr['id']}/edit"
        maya, sam_page = page_of(chromium), page_of(chromium, width=375)
        maya.goto(edit)
        sam_page.goto(edit)

        maya.get_by_label("Target", exact=True).fill("65,000")
        with maya.expect_navigation() as saved:
            maya.get_by_role("button", name="Save").click()
        assert saved.value.status == 200

        sam_page.get_by_label("Owner").select_option(sam["id"])
        with sam_page.expect_navigation() as merged:
            sam_page.get_by_role("button", name="Save").click()
        assert merged.value.status == 200
        assert api.get(f"/v1/keyresults/{kr['id']}").ok()["target_value_min"] == "65000.00"
        with app.app_context(), transaction() as db:
            owner = db.execute("SELECT owner_id FROM key_results WHERE id = ?", (kr["id"],)).fetchone()[0]
        assert owner == sam["id"]

        # a true conflict: both change the target
        maya.goto(edit)
        sam_page.goto(edit)
        maya.get_by_label("Target", exact=True).fill("70,000")
        with maya.expect_navigation():
            maya.get_by_role("button", name="Save").click()
        sam_page.get_by_label("Target", exact=True).fill("62,000")
        with sam_page.expect_navigation() as refused:
            sam_page.get_by_role("button", name="Save").click()
        assert refused.value.status == 409
        row = sam_page.locator("#conflict-target_value_min")
        assert "70000" in row.inner_text() and "62,000" in row.inner_text()
        assert sam_page.evaluate("document.documentElement.scrollWidth") <= 375
        sam_page.screenshot(path=str(app.config["DATABASE"]) + "-conflict-375.png", full_page=True)
        assert api.get(f"/v1/keyresults/{kr['id']}").ok()["target_value_min"] == "70000.00"
        with sam_page.expect_navigation() as mine:
            sam_page.get_by_role("button", name="Use mine").click()
        assert mine.value.status == 200
        assert api.get(f"/v1/keyresults/{kr['id']}").ok()["target_value_min"] == "62000.00"
