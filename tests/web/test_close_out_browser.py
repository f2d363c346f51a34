"""Closing a quarter in a real browser (Debian's Chromium): Ed, an editor, closes it out over two sittings (an
outcome and a reflection saved, then a key result's score changed and the cycle closed); the lock is refused
through the page, through the API and by `okr import`; Ed may not reopen it; Maya, an admin, reopens it on a phone's width. Each
step's page passes axe, and is photographed at 1280 and 375 px."""
import json

import pytest

from helpers import HttpClient, run_okr, served_in_thread, signed, user_with_password
from okr.db import transaction
from okr.store import keys

from test_edit_browser import WAIT_MS, chromium  # noqa: F401 (chromium is a fixture)
from test_people_browser import sign_in

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling module
    import test_browser
except ImportError:
    from . import test_browser

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]
PASSWORD = "correct horse battery"


def page_of(browser, width=1280):
    """A page in a context of its own (a sitting), where axe-core may run (bypass_csp)."""
    context = browser.new_context(viewport={"width": width, "height": 800}, bypass_csp=True)
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(WAIT_MS)
    return context.new_page()


def shot(app, page, name):
    page.screenshot(path=f"{app.config['DATABASE']}-{name}.png", full_page=True)


def test_ed_closes_the_quarter_in_two_sittings_and_maya_reopens_it(app, chromium, tmp_path):  # noqa: F811
    with served_in_thread(app) as served:
        api = HttpClient(f"127.0.0.1:{served.port}")
        cycle = api.post("/v1/cycles", {"name": "2026 Q3", "starts_on": "2026-07-01", "ends_on": "2026-09-30"}).ok()
        objective = api.post("/v1/objectives", {"name": "Grow revenue", "cycle_id": cycle["id"],
                                                "is_company": True, "is_personal": False}).ok()
        revenue = api.post(f"/v1/objectives/{objective['id']}/keyresults",
                           {"name": "Revenue", "type": "positive", "current_value": "40000",
                            "target_value_min": "60000"}).ok()
        api.post(f"/v1/keyresults/{revenue['id']}/checkins", {"value": "52000", "confidence": "0.6"}).ok()
        user_with_password(app, PASSWORD, "Ed Itor", "ed@example.com", "editor")
        user_with_password(app, PASSWORD)  # Maya Lee, an admin
        with app.app_context(), transaction() as db:
            credential, secret = keys.create(db, "ci", False, None)
        problems = []

        # The first sitting: an outcome and a reflection, saved.
        ed = page_of(chromium)
        assert sign_in(ed, served.url, "ed@example.com", PASSWORD).status == 200
        ed.goto(f"{served.url}/cycles/{cycle['id']}")
        with ed.expect_navigation():
            ed.get_by_role("link", name="Close out").click()
        assert ed.get_by_label("Score (0 to 1)").input_value() == "0.6"  # 12,000 of 20,000 to go
        ed.get_by_label("Outcome").select_option("partly_achieved")
        ed.get_by_label("Reflection").fill("Worked: the new demo. Did not: pricing. Next: annual plans.")
        with ed.expect_navigation() as saved:
            ed.get_by_role("button", name="Save", exact=True).click()
        assert saved.value.status == 200 and ed.get_by_role("status").inner_text() == "Saved."
        problems += test_browser.check_accessibility(ed, "close-out")
        shot(app, ed, "close-out-1280")
        ed.context.close()

        # The second sitting, another day: what was saved is there; a key result's score changed; closed.
        ed = page_of(chromium, width=375)
        sign_in(ed, served.url, "ed@example.com", PASSWORD)
        ed.goto(f"{served.url}/cycles/{cycle['id']}/close")
        assert ed.get_by_label("Reflection").input_value().startswith("Worked: the new demo.")
        assert ed.evaluate("document.documentElement.scrollWidth") <= 375
        shot(app, ed, "close-out-375")
        ed.get_by_label("Score of “Revenue” (progress 60%)").fill("55 %")
        with ed.expect_navigation() as closed:
            ed.get_by_role("button", name="Save and close the cycle").click()
        assert closed.value.status == 200 and ed.url.endswith(f"/cycles/{cycle['id']}")
        note = ed.get_by_role("complementary", name="Closed cycle").inner_text()
        assert "Ed Itor closed it on" in note and "Reopen this cycle" not in note
        report = app.test_client().get(f"/v1/cycles/{cycle['id']}/report",
                                       headers=signed({"credential": credential, "secret": secret})).get_json()
        assert report["cycle"]["closed_at"] is not None
        [node] = report["objectives"]
        assert (node["outcome"], node["score"], node["key_results"][0]["score"]) == ("partly_achieved", "0.60",
                                                                                     "0.55")
        shot(app, ed, "closed-375")

        # The lock: no check-in form on the page, an old form refused, and the API's 409.
        ed.goto(f"{served.url}/keyresults/{revenue['id']}")
        assert ed.get_by_role("heading", name="Record a check-in").count() == 0
        response = ed.goto(f"{served.url}/keyresults/{revenue['id']}/edit")
        assert response.status == 409 and ed.get_by_role("heading", level=1).inner_text() == "This cycle is closed"
        refused = app.test_client().post(f"/v1/keyresults/{revenue['id']}/checkins", json={"value": "60000"},
                                         headers=signed({"credential": credential, "secret": secret}))
        assert (refused.status_code, refused.get_json()["message"]) == (409, "cycle is closed")
        exported = run_okr("--database", app.config["DATABASE"], "export", "all.json", cwd=tmp_path)
        assert exported.returncode == 0, exported.stderr
        data = json.loads((tmp_path / "all.json").read_text())
        [stored] = [row for row in data["objectives"] if row["id"] == objective["id"]]
        stored["name"] = "Grow revenue fast"
        (tmp_path / "all.json").write_text(json.dumps(data))
        imported = run_okr("--database", app.config["DATABASE"], "import", "--merge", "all.json", cwd=tmp_path)
        said = imported.stderr.splitlines()[-1]  # after the line naming the database
        assert imported.returncode == 1 and "Traceback" not in imported.stderr
        assert said.startswith("okr: cannot import all.json: nothing imported: ") and 'cycle "2026 Q3" is closed' in said
        assert app.test_client().get(f"/v1/objectives/{objective['id']}", headers=signed(
            {"credential": credential, "secret": secret})).get_json()["name"] == "Grow revenue"
        ed.context.close()

        # Maya reopens it, on a phone.
        maya = page_of(chromium, width=375)
        sign_in(maya, served.url, "maya@example.com", PASSWORD)
        maya.goto(f"{served.url}/cycles/{cycle['id']}")
        problems += test_browser.check_accessibility(maya, "closed cycle")
        with maya.expect_navigation() as reopened:
            maya.get_by_role("button", name="Reopen this cycle").click()
        assert reopened.value.status == 200
        assert maya.get_by_role("complementary", name="Closed cycle").count() == 0
        assert maya.get_by_role("link", name="Close out").count() == 1
        shot(app, maya, "reopened-375")
        maya.context.close()
        assert problems == [], "\n".join(problems)
