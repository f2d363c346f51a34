"""The objective edit form in a real browser (Debian's Chromium, through Playwright): two people open the same
objective's form, the first saves, the second's save is refused with the conflict message, and the first's
change stays. Skipped like tests/web/test_browser.py's tests without Chromium or Playwright (failed under CI)."""
import pytest

from helpers import HttpClient, served_in_thread

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling module
    import test_browser
except ImportError:
    from . import test_browser

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser

WAIT_MS = 10_000


@pytest.fixture
def chromium(request):
    yield from test_browser.closing_contexts(test_browser.chromium_or_skip(request))


def page_of(browser, width=1280):
    context = browser.new_context(viewport={"width": width, "height": 800})
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(WAIT_MS)
    return context.new_page()


def test_a_conflicting_edit_is_refused_in_the_browser_and_the_first_save_stays(app, chromium):
    with served_in_thread(app) as served:
        api = HttpClient(f"127.0.0.1:{served.port}")
        cycle = api.post("/v1/cycles", {"name": "2026 Q4"}).ok()
        objective = api.post("/v1/objectives", {"name": "Grow revenue", "cycle_id": cycle["id"],
                                                "is_company": False, "is_personal": False}).ok()
        edit = f"{served.url}/objectives/{objective['id']}/edit"
        first, second = page_of(chromium), page_of(chromium, width=375)  # the second on a phone's width
        first.goto(edit)
        second.goto(edit)
        assert second.evaluate("document.documentElement.scrollWidth") <= 375

        first.get_by_label("Name").fill("Grow revenue by 20 %")
        with first.expect_navigation() as saved:
            first.get_by_role("button", name="Save").click()
        assert saved.value.status == 200 and first.url.endswith(f"/objectives/{objective['id']}")
        assert first.get_by_role("heading", level=1).inner_text() == "Grow revenue by 20 %"

        second.get_by_label("Name").fill("Grow revenue in Europe")
        with second.expect_navigation() as refused:
            second.get_by_role("button", name="Save").click()
        assert refused.value.status == 409
        alert = second.get_by_role("alert")
        assert "Someone else changed the name after you opened this form, so nothing was saved." in alert.inner_text()
        assert second.get_by_label("Name").input_value() == "Grow revenue in Europe"  # what was typed is kept
        assert api.get(f"/v1/objectives/{objective['id']}").ok()["name"] == "Grow revenue by 20 %"

        with second.expect_navigation() as overwritten:  # Use mine replaces it, on purpose
            second.get_by_role("button", name="Use mine").click()
        assert overwritten.value.status == 200
        assert api.get(f"/v1/objectives/{objective['id']}").ok()["name"] == "Grow revenue in Europe"


def test_the_edit_pages_pass_axe_and_the_contrast_check(app, chromium):
    """axe-core's WCAG A/AA rules and the main text's contrast on the objective page and both forms, refusals shown."""
    with served_in_thread(app) as served:
        api = HttpClient(f"127.0.0.1:{served.port}")
        cycle = api.post("/v1/cycles", {"name": "2026 Q4"}).ok()
        objective = api.post("/v1/objectives", {"name": "Grow revenue", "cycle_id": cycle["id"], "is_company": True,
                                                "is_personal": False, "description": "Two\nlines"}).ok()
        key_result = api.post(f"/v1/objectives/{objective['id']}/keyresults",
                              {"name": "Reach 500", "type": "positive", "target_value_min": "500"}).ok()
        context = chromium.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True)
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        problems = []
        for label, path in (("objective", f"/objectives/{objective['id']}"),
                            ("objective form", f"/objectives/{objective['id']}/edit"),
                            ("key result form", f"/keyresults/{key_result['id']}/edit"),
                            ("new key result", f"/keyresults/new?objective_id={objective['id']}"),
                            ("delete objective", f"/objectives/{objective['id']}/delete")):
            page.goto(served.url + path)
            problems += test_browser.check_accessibility(page, label)
        page.goto(f"{served.url}/keyresults/new?objective_id={objective['id']}")
        page.get_by_label("Baseline").check()
        page.get_by_label("Target", exact=True).fill("10")
        with page.expect_navigation():
            page.get_by_role("button", name="Create key result").click()
        assert "A baseline key result has no target: leave this empty." in page.inner_text("main")
        problems += test_browser.check_accessibility(page, "refused key result")
        context.close()
        assert problems == [], "\n".join(problems)
