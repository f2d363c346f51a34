"""End to end in a real browser: Debian's Chromium, driven by Playwright for Python, against the real
server (`python app.py` as its own process, on loopback) with an API key, so the login page is used.

Needs `apt-get install chromium` (/usr/bin/chromium) and `pip install -e '.[test]'` (Playwright's
Python package only: never `playwright install`, which downloads a browser). Without them these
tests skip, saying so; under CI (the CI variable set) they fail instead.

OKR_SCREENSHOTS=DIR keeps the full-page screenshots (desktop 1280 and phone 375 wide) in DIR
(default: a pytest temporary folder); the run prints where. OKR_README_SCREENSHOT=FILE.png also
writes the README's picture of a cycle page (a 1000 px wide window, its top 1000x700) to FILE.png.
"""
import json
import os
import sqlite3
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from okr.rules.request_signature import authorization_header

from helpers import (CHROMIUM, CHROMIUM_FLAGS, HttpClient, free_port, run_okr, screenshots_in, start_service,
                     stop_process)

pytestmark = [pytest.mark.slow,  # every test here starts a server, a process or a browser
              pytest.mark.xdist_group("browser")]  # in one xdist worker, which starts the module's Chromium and server once

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling module
    import a11y
except ImportError:
    from . import a11y

try:
    from playwright.sync_api import sync_playwright
except ImportError as error:  # the test extra is not installed
    sync_playwright = None
    PLAYWRIGHT_PROBLEM = f"Playwright for Python is not importable ({error})"
else:
    PLAYWRIGHT_PROBLEM = None

HOW_TO_INSTALL = (
    "install Debian's Chromium and the test extra: `apt-get install chromium` and "
    "`pip install -e '.[test]'` (never `playwright install`: there is no browser download)"
)
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
PHONE = {"viewport": {"width": 375, "height": 740}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True}
TEST_TIME_LIMIT = 60  # seconds a browser test may take, Playwright's waits included
WAIT_MS = 10_000  # Playwright's wait for an element or a navigation


def in_ci():
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


# --- the browser --------------------------------------------------------------------------------


def chromium_or_skip(request):
    """The process's one Chromium (conftest.py's shared_chromium), or the test skipped (failed under CI) with
    what to install where Playwright or Chromium is missing."""
    problems = [p for p in (PLAYWRIGHT_PROBLEM,) if p]
    if not os.access(CHROMIUM, os.X_OK):
        problems.append(f"no Chromium at {CHROMIUM}")
    if problems:
        message = f"browser tests: {'; '.join(problems)}; {HOW_TO_INSTALL}"
        if in_ci():
            pytest.fail(f"{message} (CI is set, so this fails instead of skipping)", pytrace=False)
        pytest.skip(message)
    return request.getfixturevalue("shared_chromium")


def closing_contexts(chromium):
    """Yields chromium, then closes the contexts opened meanwhile (the Chromium outlives the fixture)."""
    before = set(chromium.contexts)
    yield chromium
    for context in chromium.contexts:
        if context not in before:
            context.close()


@pytest.fixture(scope="module")
def browser(request):
    """The headless Chromium the module's tests open their contexts in."""
    yield from closing_contexts(chromium_or_skip(request))


@pytest.fixture(autouse=True)
def time_limit():
    """Each browser test must stay well under a minute; Playwright's own waits bound a hang."""
    started = time.monotonic()
    yield
    took = time.monotonic() - started
    assert took < TEST_TIME_LIMIT, f"this browser test took {took:.1f} s (limit {TEST_TIME_LIMIT} s)"


def new_page(browser, **options):
    context = browser.new_context(**{**DESKTOP, **options})
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(WAIT_MS)
    return context, context.new_page()


# --- the service and its data -------------------------------------------------------------------


class SignedClient(HttpClient):
    """HttpClient that signs each request with an API key (S1-HMAC-SHA256), as API clients must."""

    def __init__(self, address, credential, secret):
        super().__init__(address)
        self.credential, self.secret = credential, secret

    def request(self, method, path, body=None, headers=None, raw=None):
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        signed = {
            "Authorization": authorization_header(self.credential, self.secret, stamp),
            "Content-Type": "application/json",
            **(headers or {}),
        }
        return super().request(method, path, body, signed, raw)


def okr_command(database, *args):
    """`python app.py --database DB ARGS`: the admin CLI, as an administrator runs it."""
    result = run_okr("--database", database, *args, cwd=database.parent)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return json.loads(result.stdout)


class Service:
    """The running server, its key, and the ids of what was seeded."""

    def __init__(self, http, api, database, key, ids):
        self.http, self.api, self.database, self.key, self.ids = http, api, database, key, ids
        self.base = f"http://{http.address}"

    def url(self, path):
        return self.base + path

    def checkins(self, key_result_id):
        page = self.api.get(f"/v1/keyresults/{key_result_id}/checkins?page_size=100").ok()
        return page["checkins"]


def backdate_checkins(database, key_result_id, days_ago):
    """Moves a key result's check-ins into the past, oldest first, since the API stamps them now.

    The dashboard's times ("3 days ago") and staleness (no check-in for 14 days) need a past.
    """
    now = datetime.now(timezone.utc)
    with sqlite3.connect(database, timeout=10) as db:
        seqs = [row[0] for row in db.execute(
            "SELECT c.seq FROM checkins c JOIN key_results k ON k.seq = c.key_result_seq "
            "WHERE k.id = ? ORDER BY c.seq", (key_result_id,))]
        assert len(seqs) == len(days_ago), (seqs, days_ago)
        for seq, days in zip(seqs, days_ago):
            stamp = (now - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
            db.execute("UPDATE checkins SET created_at = ? WHERE seq = ?", (stamp, seq))
    db.close()


def seed(api, database, users):
    """A cycle with two teams, aligned objectives, key results of every type and some history."""
    ids = {}
    ids["old_cycle"] = api.post("/v1/cycles", {"name": "2026 Q3"}).ok()["id"]
    ids["cycle"] = api.post("/v1/cycles", {"name": "2026 Q4"}).ok()["id"]
    ids["platform"] = api.post("/v1/teams", {"name": "Platform"}).ok()["id"]
    ids["growth"] = api.post("/v1/teams", {"name": "Growth"}).ok()["id"]

    def objective(name, **fields):
        body = {"name": name, "cycle_id": ids["cycle"], "is_company": False, "is_personal": False, **fields}
        return api.post("/v1/objectives", body).ok()["id"]

    def key_result(objective_id, name, **fields):
        return api.post(f"/v1/objectives/{objective_id}/keyresults", {"name": name, **fields}).ok()["id"]

    def check_in(key_result_id, value, confidence=None, comment=None):
        body = {"value": value, "comment": comment}
        if confidence is not None:
            body["confidence"] = confidence
        return api.post(f"/v1/keyresults/{key_result_id}/checkins", body).ok()

    ids["company"] = objective("Become the OKR tool teams love", is_company=True)
    ids["platform_objective"] = objective(
        "Fast, dependable platform", team_id=ids["platform"], assignee_id=users["ada"],
        parent_objective_id=ids["company"], description="Builds and pages that never make anyone wait",
    )
    ids["growth_objective"] = objective("Grow sign-ups", team_id=ids["growth"], assignee_id=users["grace"])

    ids["positive"] = key_result(ids["platform_objective"], "Reach 500 paying customers", type="positive",
                                 current_value="60", target_value_min="500", confidence="0.6")
    check_in(ids["positive"], "90", "0.7", "Two resellers signed")
    check_in(ids["positive"], "120", "0.8", "Webinar brought 30")
    backdate_checkins(database, ids["positive"], [30, 20, 3])
    ids["negative"] = key_result(ids["platform_objective"], "Cut build minutes", type="negative",
                                 current_value="40", target_value_min="5", confidence="0.5")
    check_in(ids["negative"], "22", comment="Cached the dependencies")
    backdate_checkins(database, ids["negative"], [10, 2])
    ids["range"] = key_result(ids["platform_objective"], "Keep p95 latency in seconds", type="range",
                              current_value="3", target_value_min="1", target_value_max="4", confidence="0.9")
    ids["milestone"] = key_result(ids["platform_objective"], "Launch the v2 API", type="milestone",
                                  confidence="0.3")
    ids["baseline"] = key_result(ids["platform_objective"], "Measure NPS", type="baseline",
                                 current_value="12", confidence="0.7")
    check_in(ids["baseline"], "17")
    backdate_checkins(database, ids["baseline"], [40, 20])  # stale: nothing for 20 days
    ids["growth_kr"] = key_result(ids["growth_objective"], "Double weekly sign-ups", type="positive",
                                  current_value="900", target_value_min="2000", confidence="0.75")
    check_in(ids["growth_kr"], "1100", comment="Launch week")
    # Last quarter's, done: a status of its own colour, which the accessibility check sees on that cycle's page.
    ids["shipped"] = key_result(objective("Ship the beta", cycle_id=ids["old_cycle"]), "Open the beta",
                                type="milestone", confidence="0.8")
    check_in(ids["shipped"], "1")
    return ids


@pytest.fixture(scope="module")
def service(browser, tmp_path_factory):
    """The real server with an API key (so pages need a login) and the seeded cycle."""
    folder = tmp_path_factory.mktemp("web")
    database = folder / "okr.db"
    process, http = start_service(free_port(), "--database", str(database), "--no-access-log")
    try:
        key = okr_command(database, "keys", "create", "--name", "e2e", "--json")
        users = {
            "ada": okr_command(database, "users", "add", "--name", "Ada Lovelace", "--email", "ada@example.com")["id"],
            "grace": okr_command(database, "users", "add", "--name", "Grace Hopper", "--email", "grace@example.com")["id"],
        }
        api = SignedClient(http.address, key["credential"], key["secret"])
        ids = seed(api, database, users)
        ids.update(users)
        yield Service(http, api, database, key, ids)
    finally:
        stop_process(process)


def log_in(page, service, next_path="/"):
    """Through the login page, as a person would: the credential and secret of the API key."""
    page.goto(service.url(next_path))
    assert urlsplit(page.url).path == "/login", page.url
    open_key_form(page)
    page.get_by_label("Credential").fill(service.key["credential"])
    page.get_by_label("Secret").fill(service.key["secret"])
    with page.expect_navigation() as navigation:
        page.get_by_role("button", name="Sign in with the key").click()
    assert navigation.value.status == 200, navigation.value.status
    assert urlsplit(page.url).path == next_path.split("?")[0], page.url


def open_key_form(page):
    """The API key's form is folded under the password's: unfold it, as a person would."""
    page.locator("details.key-login summary").click()


@pytest.fixture
def logged_in(browser, service):
    context, page = new_page(browser)
    log_in(page, service)
    yield page
    context.close()


# --- what the pages show --------------------------------------------------------------------------

CHART_POINTS = """(svg) => {
  const dots = svg.querySelectorAll('circle').length;
  const line = svg.querySelector('polyline');
  const vertices = line ? line.getAttribute('points').trim().split(/\\s+/).filter(Boolean).length : 0;
  return Math.max(dots, vertices);
}"""


def history_rows(page):
    return page.locator("table.history tbody tr")


def chart_points(page):
    return page.locator("svg.chart").evaluate(CHART_POINTS)


def text_of(locator):
    return " ".join(locator.inner_text().split())


def key_result_item(page, key_result_id):
    """A cycle page's item of a key result: the one whose link leads to its page."""
    link = page.locator(f'a[href="/keyresults/{key_result_id}"]')
    return page.locator("ul.key-results > li", has=link)


# --- the journey ------------------------------------------------------------------------------------


def test_log_in_open_the_cycle_and_filter_by_team(browser, service):
    ids = service.ids
    context, page = new_page(browser)
    try:
        # Keys exist, so the dashboard sends a browser to the login page, which refuses a wrong secret.
        response = page.goto(service.url("/"))
        assert urlsplit(page.url).path == "/login" and parse_qs(urlsplit(page.url).query) == {"next": ["/"]}
        assert response.status == 200
        open_key_form(page)
        page.get_by_label("Credential").fill(service.key["credential"])
        page.get_by_label("Secret").fill("not the secret")
        with page.expect_navigation() as navigation:
            page.get_by_role("button", name="Sign in with the key").click()
        assert navigation.value.status == 401
        assert "Unknown or revoked credential, or wrong secret" in page.content()
        assert page.get_by_label("Credential").input_value() == service.key["credential"]
        assert page.get_by_label("Secret").input_value() == ""

        page.get_by_label("Secret").fill(service.key["secret"])
        with page.expect_navigation() as navigation:
            page.get_by_role("button", name="Sign in with the key").click()
        assert navigation.value.status == 200 and urlsplit(page.url).path == "/"
        assert page.get_by_role("button", name="Sign out").count() == 1

        # The dashboard: cycles newest first, each with its progress and counts.
        cycles = page.locator("article.cycle")
        assert cycles.count() == 2
        assert "2026 Q4" in text_of(cycles.nth(0)) and "2026 Q3" in text_of(cycles.nth(1))
        q4 = text_of(cycles.nth(0))
        assert "3 objectives" in q4 and "6 key results" in q4, q4
        # at risk: the negative (0.50); no check-in since they were made: the range and the milestone; stale:
        # the baseline.
        assert "1 at risk" in q4 and "2 with no update yet" in q4 and "1 stale" in q4, q4
        assert cycles.nth(0).locator("progress").count() == 1
        assert page.locator('footer a[href="/v1/openapi.json"]').count() == 1

        with page.expect_navigation() as navigation:
            cycles.nth(0).get_by_role("link", name="2026 Q4").click()
        assert navigation.value.status == 200
        assert urlsplit(page.url).path == f"/cycles/{ids['cycle']}"

        # The alignment tree: the platform objective nests in the company one; every type in words.
        company = page.locator(f"#o-{ids['company']}")
        assert company.locator(f".children #o-{ids['platform_objective']}").count() == 1
        assert page.locator(f"#o-{ids['growth_objective']}").count() == 1
        platform = page.locator(f"#o-{ids['platform_objective']}")
        assert "Platform" in text_of(platform) and "Ada Lovelace" in text_of(platform)
        assert platform.locator("h3").first.inner_text().strip() == "Fast, dependable platform"
        assert text_of(company.locator(".badge").first).lower() == "company"
        words = {
            "positive": "120 of 500",
            "negative": "from 40 down to 5: now 22",
            "range": "stay between 1 and 4: now 3",
            "milestone": "not yet",
            "baseline": "now 17 (no target)",
        }
        for kind, expected in words.items():
            item = text_of(key_result_item(page, ids[kind]))
            assert expected in item, (kind, item)
        positive = key_result_item(page, ids["positive"])
        assert "80% confidence" in text_of(positive) and "on track" in text_of(positive)
        assert positive.locator("time").get_attribute("datetime").endswith("Z")
        assert "3 days ago" in text_of(positive.locator("time"))
        sparkline = positive.locator("svg")
        assert sparkline.count() == 1 and sparkline.get_attribute("aria-hidden") == "true"
        assert sparkline.bounding_box()["width"] == 60 and sparkline.bounding_box()["height"] == 16
        assert "no update yet" in text_of(key_result_item(page, ids["milestone"]))  # no check-in since made
        assert "stale" in text_of(key_result_item(page, ids["baseline"]))
        assert key_result_item(page, ids["baseline"]).locator("progress").count() == 0

        # Filter by team: the select and the Filter button; the link says which team.
        page.locator('form.filters select[name="team_id"]').select_option(label="Platform")
        with page.expect_navigation() as navigation:
            page.locator("form.filters").get_by_role("button", name="Filter").click()
        assert navigation.value.status == 200
        query = parse_qs(urlsplit(page.url).query)
        assert query.get("team_id") == [ids["platform"]], page.url
        assert page.locator(f"#o-{ids['growth_objective']}").count() == 0
        assert page.locator(f"#o-{ids['platform_objective']}").count() == 1
        assert page.locator('select[name="team_id"]').input_value() == ids["platform"]
    finally:
        context.close()


# --- screenshots ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def screenshots(request, tmp_path_factory):
    chosen = os.environ.get("OKR_SCREENSHOTS")
    folder = Path(chosen).resolve() if chosen else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    screenshots_in(request.config, folder)  # the run lists them at its end
    print(f"browser screenshots: {folder}")
    return folder


OVERFLOW = """(width) => {
  if (document.documentElement.scrollWidth <= width) return [];
  return [...document.querySelectorAll('body *')]
    .filter((el) => el.getBoundingClientRect().right > width + 1)
    .slice(0, 5)
    .map((el) => el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className ? '.' + el.className : '')
                 + ' right=' + Math.round(el.getBoundingClientRect().right));
}"""


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_screenshots(browser, service, screenshots, size):
    """Full-page pictures of the three pages for a person to look at; the phone's fit its width."""
    ids = service.ids
    context, page = new_page(browser, **(DESKTOP if size == "desktop" else PHONE))
    try:
        log_in(page, service)
        pages = {
            "dashboard": "/",
            "cycle": f"/cycles/{ids['cycle']}",
            "keyresult": f"/keyresults/{ids['positive']}",
        }
        for name, path in pages.items():
            response = page.goto(service.url(path))
            assert response.status == 200, (path, response.status)
            page.screenshot(path=screenshots / f"{name}-{size}.png", full_page=True)
        if size == "desktop" and os.environ.get("OKR_README_SCREENSHOT"):
            readme_screenshot(page, service, Path(os.environ["OKR_README_SCREENSHOT"]))
    finally:
        context.close()


def test_pages_fit_a_phone_screen(browser, service):
    """At 375 px nothing makes the page scroll sideways (a wide table scrolls inside its own box)."""
    ids = service.ids
    context, page = new_page(browser, **PHONE)
    too_wide = {}
    try:
        log_in(page, service)
        for path in ["/", f"/cycles/{ids['cycle']}", f"/keyresults/{ids['positive']}", "/login"]:
            page.goto(service.url(path))
            overflowing = page.evaluate(OVERFLOW, PHONE["viewport"]["width"])
            if overflowing:
                too_wide[path] = overflowing
    finally:
        context.close()
    assert not too_wide, f"pages wider than a 375 px phone, so they scroll sideways: {too_wide}"


def readme_screenshot(page, service, target):
    """The README's picture: the cycle page in a 1000 px wide window, its top 1000x700."""
    page.set_viewport_size({"width": 1000, "height": 700})
    page.goto(service.url(f"/cycles/{service.ids['cycle']}"))
    target.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=target, clip={"x": 0, "y": 0, "width": 1000, "height": 700})
    print(f"README screenshot: {target.resolve()}")


def test_check_in_shows_in_the_table_and_the_chart_and_a_bad_one_is_refused(logged_in, service):
    page, ids = logged_in, service.ids
    page.goto(service.url(f"/cycles/{ids['cycle']}"))
    with page.expect_navigation():
        key_result_item(page, ids["positive"]).get_by_role("link").first.click()
    assert urlsplit(page.url).path == f"/keyresults/{ids['positive']}"
    assert page.get_by_role("heading", level=1).inner_text().strip() == "Reach 500 paying customers"
    headers = [" ".join(t.split()) for t in page.locator("table.history th").all_inner_texts()]
    assert headers[:5] == ["When", "Value", "Confidence", "Comment", "Author"], headers
    assert page.locator("svg.chart line.target").count() == 1
    assert page.locator("svg.chart").get_attribute("role") == "img"
    assert page.locator("svg.chart").get_attribute("aria-label")
    rows, points = history_rows(page).count(), chart_points(page)
    recorded = len(service.checkins(ids["positive"]))
    assert (rows, points, recorded) == (3, 3, 3)
    form = page.locator("form.checkin")
    assert form.locator('input[name="confidence"]').input_value() == "80%"  # as the page says it

    form.locator('input[name="value"]').fill("150")
    form.locator('input[name="confidence"]').fill("0.85")
    form.locator('textarea[name="comment"]').fill("Partner programme went live")
    with page.expect_navigation() as navigation:
        form.get_by_role("button", name="Record check-in").click()
    # Post, redirect, get: reloading the page never records it twice.
    landed = navigation.value
    assert landed.status == 200 and landed.request.method == "GET"
    posted = landed.request.redirected_from
    assert posted is not None and posted.method == "POST" and posted.response().status == 303
    assert urlsplit(page.url).path == f"/keyresults/{ids['positive']}"
    assert history_rows(page).count() == rows + 1
    newest = text_of(history_rows(page).first)
    assert "150" in newest and "Partner programme went live" in newest, newest
    assert "85%" in newest or "0.85" in newest, newest
    assert chart_points(page) == points + 1
    assert len(service.checkins(ids["positive"])) == recorded + 1
    assert page.locator('form.checkin input[name="confidence"]').input_value() == "85%"

    # A value that is not a number: the message next to the field, what was typed kept, nothing recorded.
    form.locator('input[name="value"]').fill("abc")
    form.locator('textarea[name="comment"]').fill("typo")
    with page.expect_navigation() as navigation:
        form.get_by_role("button", name="Record check-in").click()
    assert navigation.value.status == 400
    value = page.locator('form.checkin input[name="value"]')
    error = page.locator("#value-error")
    assert error.is_visible() and error.inner_text().strip()
    assert "error" in (error.get_attribute("class") or "").split()
    assert value.input_value() == "abc"
    assert value.get_attribute("aria-invalid") == "true"
    assert "value-error" in (value.get_attribute("aria-describedby") or "").split()
    assert page.locator('form.checkin textarea[name="comment"]').input_value() == "typo"
    field, message = value.bounding_box(), error.bounding_box()
    gap = max(message["y"] - (field["y"] + field["height"]), field["y"] - (message["y"] + message["height"]), 0)
    assert gap < 60, f"the error is {gap:.0f} px from its field"
    assert history_rows(page).count() == rows + 1
    assert len(service.checkins(ids["positive"])) == recorded + 1


def test_check_in_works_without_javascript(browser, service):
    ids = service.ids
    context, page = new_page(browser, java_script_enabled=False)
    try:
        log_in(page, service, f"/keyresults/{ids['negative']}")
        rows = history_rows(page).count()
        recorded = len(service.checkins(ids["negative"]))
        form = page.locator("form.checkin")
        form.locator('input[name="value"]').fill("18")
        form.locator('textarea[name="comment"]').fill("Without scripts")
        with page.expect_navigation() as navigation:
            form.get_by_role("button", name="Record check-in").click()
        assert navigation.value.status == 200
        assert history_rows(page).count() == rows + 1
        assert "Without scripts" in text_of(history_rows(page).first)
        assert len(service.checkins(ids["negative"])) == recorded + 1

        form.locator('input[name="value"]').fill("abc")
        with page.expect_navigation() as navigation:
            form.get_by_role("button", name="Record check-in").click()
        assert navigation.value.status == 400
        assert page.locator("#value-error").is_visible()
        assert page.locator('form.checkin input[name="value"]').input_value() == "abc"
        assert history_rows(page).count() == rows + 1
        assert len(service.checkins(ids["negative"])) == recorded + 1
    finally:
        context.close()


# --- accessibility --------------------------------------------------------------------------------


def test_the_pages_work_under_their_content_security_policy(logged_in, service):
    """No page breaks a rule of its own policy, and its script (times in the reader's zone) runs under it."""
    page, ids = logged_in, service.ids
    violations = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    for path in ("/", f"/cycles/{ids['cycle']}", f"/keyresults/{ids['positive']}", "/nope"):
        response = page.goto(service.url(path))
        assert "default-src 'self'" in response.headers["content-security-policy"], path
        page.wait_for_load_state("load")
    page.goto(service.url(f"/cycles/{ids['cycle']}"))
    page.wait_for_load_state("load")
    assert page.locator("time[datetime]").first.get_attribute("title"), "the page's own script did not run"
    assert violations == []


def check_accessibility(page, label):
    """axe-core's WCAG A/AA violations and the main text's contrast, as readable lines."""
    found = a11y.run_axe(page)
    missing = set(a11y.MUST_RUN) - set(found["ran"])
    assert not missing, f"axe-core did not run {missing}"
    review = sorted({rule["id"] for rule in found["incomplete"]})
    print(f"a11y {label}: axe-core {a11y.AXE_VERSION}, {len(found['violations'])} violations, "
          f"for a person to review: {', '.join(review) or 'nothing'}")
    return a11y.describe(label, found["violations"]) + a11y.describe_contrast(label, a11y.low_contrast(page))


def test_accessibility(browser, service):
    """Images and charts named, fields labelled, text contrast at least 4.5:1, on every page."""
    ids = service.ids
    # axe-core is injected as an inline script, which the pages' policy forbids: the checker, not the page,
    # needs the exception (test_the_pages_work_under_their_content_security_policy holds the pages to it).
    context, page = new_page(browser, bypass_csp=True)
    problems = []
    try:
        page.goto(service.url("/"))
        open_key_form(page)
        page.get_by_label("Credential").fill("nobody")
        page.get_by_label("Secret").fill("wrong")
        with page.expect_navigation():
            page.get_by_role("button", name="Sign in with the key").click()
        problems += check_accessibility(page, "login page with an error")
        log_in(page, service)
        for label, path in [
            ("dashboard", "/"),
            ("cycle page", f"/cycles/{ids['cycle']}"),
            ("cycle page filtered", f"/cycles/{ids['cycle']}?team_id={ids['growth']}"),
            ("key-result page", f"/keyresults/{ids['positive']}"),
            ("range key-result page", f"/keyresults/{ids['range']}"),
            ("cycle page with done objectives", f"/cycles/{ids['old_cycle']}"),
            ("done key-result page", f"/keyresults/{ids['shipped']}"),
            ("404 page", "/keyresults/00000000-0000-4000-8000-000000000000"),
        ]:
            page.goto(service.url(path))
            problems += check_accessibility(page, label)
        page.goto(service.url(f"/keyresults/{ids['positive']}"))  # a milestone's form has a Done box, no value
        page.locator('form.checkin input[name="value"]').fill("abc")
        with page.expect_navigation():
            page.locator("form.checkin").get_by_role("button", name="Record check-in").click()
        problems += check_accessibility(page, "check-in form with an error")
    finally:
        context.close()
    assert not problems, "accessibility problems:\n" + "\n".join(problems)


FLAWED_PAGE = """<!doctype html><html lang="en"><head><title>flawed</title></head><body><main>
<h1>Flawed</h1>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">
<svg role="img" width="20" height="20"><circle cx="10" cy="10" r="5"/></svg>
<input name="value">
<p style="color:#bbb;background:#fff">Pale text</p>
<svg role="img" aria-label="a chart" style="background:#f3f4f6"><text x="2" y="12" style="fill:#ccc">pale label</text></svg>
</main></body></html>"""


def test_the_accessibility_check_finds_what_it_should(browser):
    """The checker itself, on a page with one of each problem: it must report each."""
    context, page = new_page(browser)
    try:
        page.set_content(FLAWED_PAGE)
        found = {rule["id"] for rule in a11y.run_axe(page)["violations"]}
        assert {"image-alt", "svg-img-alt", "label", "color-contrast"} <= found, found
        pale = a11y.low_contrast(page)
        assert [item["text"] for item in pale] == ["Pale text", "pale label"], pale
        assert all(item["ratio"] < 2 for item in pale)
        lines = a11y.describe("flawed", a11y.run_axe(page)["violations"])
        assert any("image-alt" in line for line in lines) and any("at img" in line for line in lines)
    finally:
        context.close()


def test_times_read_in_the_browsers_own_zone_and_words_with_javascript(browser, service):
    context, page = new_page(browser, timezone_id="Asia/Tokyo", locale="en-GB")
    try:
        log_in(page, service)
        with page.expect_navigation():
            page.locator("article.cycle a").first.click()
        stamp = page.locator("time[datetime]").first
        page.wait_for_function(
            "() => { const t = document.querySelector('time[datetime]'); return t && t.title !== t.dateTime; }")
        # The server's exact UTC time, retold in the browser's zone (UTC+9) and words.
        assert "GMT+9" in stamp.get_attribute("title"), stamp.get_attribute("title")
    finally:
        context.close()


def test_pages_load_nothing_from_other_hosts(browser, service):
    """The dashboard works on a machine without internet: every request a page makes is to the service."""
    ids = service.ids
    context, page = new_page(browser)
    asked = []
    page.on("request", lambda request: asked.append(request.url))
    try:
        log_in(page, service)
        for path in ("/", f"/cycles/{ids['cycle']}", f"/keyresults/{ids['positive']}"):
            assert page.goto(service.url(path)).status == 200, path
            page.wait_for_load_state("load")
    finally:
        context.close()
    assert any(url.startswith(service.base + "/static/style.css") for url in asked), asked
    assert any(url.startswith(service.base + "/static/local-time.js") for url in asked), asked
    assert [url for url in asked if not url.startswith(service.base + "/")] == []
