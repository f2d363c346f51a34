"""The pages of metric sources in a real browser (Debian's Chromium, through Playwright), on one server for the
module: an admin adds a connection, an editor attaches a key result to it, tests it, saves it, syncs it, fills it
back, opens a value's evidence and recomputes it, and the chart draws the source's values apart; every new page
passes axe-core and the contrast check in light and dark, at 1280 and 375 px, and is screenshot.

The source is an SQLite file of daily figures (the sqlite kind). Screenshots go to OKR_SCREENSHOTS=DIR when set,
else to the module's temporary folder.
"""
import os
import re
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone

import pytest

from okr import create_app
from okr.db import init_db

from helpers import served_in_thread, user_with_password

pytestmark = [pytest.mark.slow,  # a server and a browser
              pytest.mark.xdist_group("sources-browser")]  # one worker starts the module's server once

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling modules
    import test_browser
except ImportError:
    from . import test_browser

browser = test_browser.browser  # the module's Chromium
new_page = test_browser.new_page
PASSWORD = "correct horse battery"
SECRET = "s3cret-token-typed-once"
QUERY = "SELECT value FROM figures WHERE day <= substr(coalesce(:as_of, '9999'), 1, 10) ORDER BY day DESC LIMIT 1"
# The query as run: the moment it was read for after it (the server's clock is the real one).
AS_RUN = re.compile(re.escape(QUERY) + r"\s+-- :as_of = \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
DAYS = 21  # the cycle began this many days ago


def figures(path, start, today):
    """An SQLite file of one figure a day from start to today: 10 more each day."""
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE figures (day TEXT PRIMARY KEY, value REAL NOT NULL)")
        day, value = start, 0
        while day <= today:
            db.execute("INSERT INTO figures VALUES (?, ?)", (day.isoformat(), value))
            day, value = day + timedelta(days=1), value + 10
        db.commit()


def backdate(database, key_result_id, moment):
    """Dates a key result's starting check-in at moment (the API stamps it now): fill-back starts after it."""
    with closing(sqlite3.connect(database)) as db:
        db.execute("""UPDATE checkins SET created_at = ? WHERE seq = (SELECT min(c.seq) FROM checkins c
                      JOIN key_results k ON k.seq = c.key_result_seq WHERE k.id = ?)""", (moment, key_result_id))
        db.commit()


@pytest.fixture(scope="module")
def service(browser, tmp_path_factory):
    """The server, with an admin (Maya) and an editor (Ed); a cycle that began DAYS ago with two key results,
    Customers (for the walk) and Revenue, already read weekly from the Warehouse connection; the figures' file."""
    folder = tmp_path_factory.mktemp("sources-browser")
    database, metrics = folder / "okr.db", folder / "metrics.db"
    app = create_app({"DATABASE": str(database)})
    with app.app_context():
        init_db()
    today = datetime.now(timezone.utc).date()
    start = today - timedelta(days=DAYS)
    figures(metrics, start, today)
    api = app.test_client()  # the service is open until the people below have passwords
    cycle = api.post("/v1/cycles", json={"name": "This quarter", "starts_on": start.isoformat(),
                                         "ends_on": (today + timedelta(days=70)).isoformat()}).get_json()
    objective = api.post("/v1/objectives", json={"name": "Grow", "cycle_id": cycle["id"], "is_company": True,
                                                 "is_personal": False}).get_json()
    ids = {}
    for name in ("Customers", "Revenue"):
        ids[name] = api.post(f"/v1/objectives/{objective['id']}/keyresults", json={
            "name": name, "type": "positive", "current_value": "0", "target_value_min": "500",
            "confidence": "0.7"}).get_json()["id"]
        backdate(database, ids[name], f"{start.isoformat()}T00:00:00Z")
    warehouse = api.post("/v1/connections", json={"name": "Warehouse", "kind": "sqlite", "address": str(metrics),
                                                   "secret": "warehouse-secret"}).get_json()
    assert api.put(f"/v1/keyresults/{ids['Revenue']}/source",
                   json={"connection_id": warehouse["id"], "query": QUERY}).status_code == 200
    assert api.post(f"/v1/keyresults/{ids['Revenue']}/source/fill", json={"step": "weekly"}).get_json()["written"] > 1
    assert api.post(f"/v1/keyresults/{ids['Revenue']}/source/sync").get_json()["outcome"] == "written"
    user_with_password(app, PASSWORD)
    user_with_password(app, PASSWORD, "Ed Itor", "ed@example.com", "editor")
    with served_in_thread(app, threads=8) as served:
        yield {"url": served.url, "ids": ids, "metrics": str(metrics), "warehouse": warehouse["id"],
               "folder": folder}


def signed_in(browser, service, email, **options):
    """A new browser context signed in as email through the login page; (context, page)."""
    context, page = new_page(browser, **options)
    page.goto(f"{service['url']}/login")
    page.locator("#email").fill(email)
    page.locator("#password").fill(PASSWORD)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in", exact=True).click()
    assert "/login" not in page.url, page.url
    return context, page


def navigate(page, click):
    with page.expect_navigation() as done:
        click()
    return done.value.status


def test_an_admin_adds_a_connection_and_an_editor_attaches_tests_syncs_fills_and_recomputes(browser, service):
    admin_context, admin = signed_in(browser, service, "maya@example.com")
    try:
        admin.get_by_role("navigation", name="Site").get_by_role("link", name="Connections").click()
        admin.locator("#name").fill("Metrics")
        admin.locator("#kind").select_option(label="SQLite file")
        admin.locator("#address").fill(service["metrics"])
        admin.locator("#secret").fill(SECRET)
        assert navigate(admin, lambda: admin.get_by_role("button", name="Add").click()) == 200
        row = admin.locator("table.connections tbody tr").filter(
            has=admin.get_by_role("rowheader", name="Metrics", exact=True))
        assert row.locator("td[data-label=Secret]").inner_text() == "has a secret"
        assert SECRET not in admin.content()
    finally:
        admin_context.close()

    context, page = signed_in(browser, service, "ed@example.com")
    try:
        key_result = service["ids"]["Customers"]
        page.goto(f"{service['url']}/keyresults/{key_result}/edit")
        page.locator("#connection_id").select_option(label="Metrics (SQLite file)")
        page.locator("#query").fill(QUERY)
        assert navigate(page, lambda: page.get_by_role("button", name="Test").click()) == 200
        assert "would write" in page.locator("#test-result").inner_text()
        expected = str(DAYS * 10)
        assert page.locator("#test-result strong.value").inner_text() == f"{int(expected):,}"
        assert AS_RUN.fullmatch(page.locator("#test-result pre.request").inner_text())
        assert page.locator("#query").input_value() == QUERY  # what was typed stays for Save
        assert navigate(page, lambda: page.get_by_role("button", name="Save the source").click()) == 200
        assert page.locator("#source-state").inner_text().startswith("Reads its value from Metrics, every hour. "
                                                                     "Active, not read yet")
        assert navigate(page, lambda: page.get_by_role("button", name="Sync now").click()) == 200
        assert page.locator("#source-said").inner_text() == f"Read {int(expected):,} and recorded it as a check-in."
        page.locator("#step").select_option("weekly")
        assert navigate(page, lambda: page.get_by_role("button", name="Fill back").click()) == 200
        assert re.fullmatch(r"Read \d+ days and recorded \d+ check-ins \(.*\)\.",
                            page.locator("#source-said").inner_text())

        page.goto(f"{service['url']}/keyresults/{key_result}")
        assert page.locator("#source-line").inner_text() == "Updated by the source “Metrics”."
        assert page.locator("svg.chart path.dot.source").count() >= 3  # the filled weeks and today's
        assert page.locator("ul.chart-marks").is_visible()
        authors = page.locator("table.history td[data-label=Author]")
        assert authors.first.inner_text() == "the source “Metrics” · Evidence"
        assert navigate(page, lambda: authors.first.get_by_role("link", name="Evidence").click()) == 200
        assert page.get_by_role("heading", level=1).inner_text() == f"Evidence of {int(expected):,}"
        assert AS_RUN.fullmatch(page.locator("dl.evidence pre.request").inner_text())
        assert navigate(page, lambda: page.get_by_role("button", name="Recompute").click()) == 200
        assert page.locator("#recomputed").inner_text().startswith("The answer still matches")
        assert SECRET not in page.content()
    finally:
        context.close()


def shots_folder(service):
    folder = os.environ.get("OKR_SCREENSHOTS") or str(service["folder"])
    os.makedirs(folder, exist_ok=True)
    return folder


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 375])
def test_the_new_pages_pass_axe_fit_the_width_and_are_screenshot(browser, service, scheme, width):
    revenue = service["ids"]["Revenue"]
    shots, problems = shots_folder(service), []
    # axe-core goes in as an inline script, which the pages' policy forbids: the checker needs the exception.
    options = {"viewport": {"width": width, "height": 900}, "color_scheme": scheme, "bypass_csp": True}
    context, page = signed_in(browser, service, "maya@example.com", **options)
    try:
        page.goto(f"{service['url']}/keyresults/{revenue}")
        evidence = page.locator("table.history a", has_text="Evidence").first.get_attribute("href")
        pages = [("connections", "/connections"), ("connection-form", f"/connections/{service['warehouse']}/edit"),
                 ("key-result", f"/keyresults/{revenue}"), ("source-section", f"/keyresults/{revenue}/edit"),
                 ("evidence", evidence)]
        for name, path in pages:
            page.goto(f"{service['url']}{path}")
            if name == "source-section":
                navigate(page, lambda: page.get_by_role("button", name="Test").click())
                page.locator("#test-result").scroll_into_view_if_needed()
            if name == "evidence":
                navigate(page, lambda: page.get_by_role("button", name="Recompute").click())
            assert page.evaluate("document.documentElement.scrollWidth") <= width, f"{name} is wider than {width}"
            page.screenshot(path=os.path.join(shots, f"sources-{name}-{width}-{scheme}.png"), full_page=True)
            problems += test_browser.check_accessibility(page, f"{name} at {width} px, {scheme}")
        refused = page.goto(f"{service['url']}/connections/{service['warehouse']}/delete")
        assert refused.status == 200
        assert navigate(page, lambda: page.get_by_role("button", name="Delete").click()) == 409
        assert "remove their sources first" in page.locator("main").inner_text()
        problems += test_browser.check_accessibility(page, f"a refused delete at {width} px, {scheme}")
    finally:
        context.close()
    assert problems == [], "\n".join(problems)
