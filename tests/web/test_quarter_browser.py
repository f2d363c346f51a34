"""A whole quarter run in a real browser, as a team lead would run it (issue 23), each step checked against the API.

Debian's Chromium through Playwright (test_browser.py's fixtures and flags) against the real server on loopback,
with a database of its own: a lead (admin) and four people with passwords, a read-only API key for the checks.
The lead signs in, creates the cycle with its dates, three teams with members, a company objective and
aligned team objectives with key results of all five types, each with an owner; two people check in from
their week; the lead fixes a typo, moves an objective to another team, deletes a key result through its
confirmation, copies the cycle to the next quarter and downloads the CSV.

Forms are filled by their fields' names, which are the API's (the issue's rule), so the test reads as the API
does. Each new page is opened at 1280 and 375 px wide (nothing wider than the phone's screen);
OKR_SCREENSHOTS=DIR keeps a full-page screenshot of each in DIR.
"""
import os
import time
from datetime import date, timedelta
from urllib.parse import urlsplit

import pytest

from okr import create_app
from okr.accounts.passwords import hash_password
from okr.db import transaction
from okr.store import users

from helpers import free_port, start_service, stop_process

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling modules
    import test_browser
    import test_people_browser
except ImportError:
    from . import test_browser, test_people_browser

browser = test_browser.browser  # the module's Chromium (pytest finds fixtures among a module's names)
new_page, okr_command, sign_in = test_browser.new_page, test_browser.okr_command, test_people_browser.sign_in
PASSWORD = "a quarter of plain words"
PEOPLE = {  # key: (name, email, role)
    "lead": ("Lena Lead", "lena@example.com", "admin"),
    "ada": ("Ada Lovelace", "ada@example.com", "editor"),
    "grace": ("Grace Hopper", "grace@example.com", "editor"),
    "alan": ("Alan Turing", "alan@example.com", "editor"),
    "edsger": ("Edsger Dijkstra", "edsger@example.com", "viewer"),
}
QUARTER_TIME_LIMIT = 180  # seconds: the quarter is some forty page loads


class Quarter:
    """The running server, a read-only API client, the people's ids, and where screenshots go."""

    def __init__(self, http, api, database, people, shots):
        self.http, self.api, self.database, self.people, self.shots = http, api, database, people, shots
        self.base = f"http://{http.address}"

    def url(self, path):
        return self.base + path


@pytest.fixture(scope="module")
def quarter(browser, tmp_path_factory):
    folder = tmp_path_factory.mktemp("quarter")
    database = folder / "okr.db"
    process, http = start_service(free_port(), "--database", str(database), "--no-access-log")
    try:
        password_hash = hash_password(PASSWORD)
        people = {}
        with create_app({"DATABASE": database}).app_context(), transaction() as db:  # as `okr users` does
            for key, (name, email, role) in PEOPLE.items():
                user = users.create(db, name, email, role)
                users.set_password(db, user, password_hash)
                people[key] = user["id"]
        key = okr_command(database, "keys", "create", "--name", "checks", "--read-only", "--json")
        api = test_browser.SignedClient(http.address, key["credential"], key["secret"])
        shots = os.environ.get("OKR_SCREENSHOTS")
        if shots:
            os.makedirs(shots, exist_ok=True)
            print(f"quarter screenshots: {shots}")
        yield Quarter(http, api, database, people, shots)
    finally:
        stop_process(process)


@pytest.fixture(autouse=True)
def time_limit():
    """This module's one long test walks a whole quarter: a bound of its own (test_browser.py's is 60 s)."""
    started = time.monotonic()
    yield
    took = time.monotonic() - started
    assert took < QUARTER_TIME_LIMIT, f"the quarter took {took:.1f} s (limit {QUARTER_TIME_LIMIT} s)"


# --- driving the forms by their fields' names --------------------------------------------------------------


def form_with(page, field):
    """The page's form that has a field of this name."""
    return page.locator("main form").filter(has=page.locator(f'[name="{field}"]')).first


def fill(page, **fields):
    """Fills the fields named (text, date, textarea, select by value, radio by value)."""
    for name, value in fields.items():
        field = page.locator(f'main [name="{name}"]')
        kind = (field.first.get_attribute("type") or "").lower()
        tag = field.first.evaluate("element => element.tagName.toLowerCase()")
        if kind == "radio":
            page.locator(f'main input[name="{name}"][value="{value}"]').check()
        elif tag == "select":
            field.first.select_option(value=value)
        else:
            field.first.fill(value)


def submit(page, field, expect_status=None):
    """Submits the form holding the field; the navigation's final response."""
    with page.expect_navigation() as navigation:
        form_with(page, field).locator('button[type="submit"], input[type="submit"]').first.click()
    response = navigation.value
    if expect_status is not None:
        assert response.status == expect_status, (response.status, page.url, page.inner_text("main")[:2000])
    return response


def shoot(quarter, browser, page_url, name, cookie):
    """Opens a page at 1280 and 375 px wide, signed in with the cookie (and screenshots it when asked for)."""
    for width, options in (("1280", test_browser.DESKTOP), ("375", test_browser.PHONE)):
        context, page = new_page(browser, **options)
        context.add_cookies([{**cookie, "url": quarter.base}])
        try:
            response = page.goto(page_url)
            assert response.status == 200, (page_url, response.status)
            if quarter.shots:  # a full-page PNG costs about as much as the page: only when asked for
                page.screenshot(path=os.path.join(quarter.shots, f"{name}-{width}.png"), full_page=True)
            if width == "375":  # nothing wider than the phone's screen
                assert page.evaluate("document.documentElement.scrollWidth") <= 375 + 1, page_url
        finally:
            context.close()


def session_cookie(context):
    [cookie] = [c for c in context.cookies() if c["name"] == "okr_session"]
    return {"name": cookie["name"], "value": cookie["value"]}


def path_of(page):
    return urlsplit(page.url).path


def report(quarter, cycle_id):
    return quarter.api.get(f"/v1/cycles/{cycle_id}/report").ok()


def walk(nodes):
    stack = list(nodes)
    while stack:
        node = stack.pop()
        stack.extend(node["children"])
        yield node


def node_named(tree, name):
    [node] = [node for node in walk(tree["objectives"]) if node["name"] == name]
    return node


def kr_named(tree, name):
    [kr] = [kr for node in walk(tree["objectives"]) for kr in node["key_results"] if kr["name"] == name]
    return kr


# --- the quarter -----------------------------------------------------------------------------------------


def test_a_team_lead_runs_a_whole_quarter_in_the_browser(browser, quarter):
    people = quarter.people
    context, page = new_page(browser)
    try:
        assert sign_in(page, quarter.base, PEOPLE["lead"][1], PASSWORD).status == 200
        cookie = session_cookie(context)

        # The cycle, with its dates: this quarter, so that it is current.
        today = date.today()
        starts_on, ends_on = today - timedelta(days=14), today + timedelta(days=76)
        page.goto(quarter.url("/cycles/new"))
        shoot(quarter, browser, page.url, "cycle-new", cookie)
        fill(page, name="2027 Q1", starts_on=starts_on.isoformat(), ends_on=ends_on.isoformat())
        submit(page, "starts_on", 200)
        cycle_id = path_of(page).split("/")[2]
        shown = report(quarter, cycle_id)["cycle"]
        assert (shown["name"], shown["starts_on"], shown["ends_on"], shown["state"]) == (
            "2027 Q1", starts_on.isoformat(), ends_on.isoformat(), "current")

        # Three teams, each with members.
        teams = {}
        for name, members in (("Platform", ("ada", "alan")), ("Growth", ("grace",)), ("Support", ("alan",))):
            page.goto(quarter.url("/teams/new"))
            fill(page, name=name)
            submit(page, "name", 200)
            team_id = path_of(page).split("/")[2]
            assert path_of(page) == f"/teams/{team_id}", page.url
            teams[name] = team_id
            for member in members:  # found by name, then added from the search's answer
                fill(page, q=PEOPLE[member][0])
                submit(page, "q", 200)
                with page.expect_navigation() as added:
                    page.get_by_role("button", name=f"Add {PEOPLE[member][0]}").click()
                assert added.value.status == 200, page.url
            listed = quarter.api.get(f"/v1/teams/{team_id}/members").ok()["users"]
            assert [user["id"] for user in listed] == [people[member] for member in members]
        page.goto(quarter.url("/teams"))
        for name in teams:
            assert name in page.inner_text("main")
        shoot(quarter, browser, quarter.url("/teams"), "teams", cookie)
        shoot(quarter, browser, quarter.url(f"/teams/{teams['Platform']}"), "team", cookie)

        # A company objective, and team objectives aligned to it.
        objectives = {}

        def add_objective(name, kind, **fields):
            page.goto(quarter.url(f"/objectives/new?cycle_id={cycle_id}"))
            fill(page, name=name, kind=kind, **fields)
            submit(page, "kind", 200)
            objective_id = path_of(page).split("/")[2]
            assert path_of(page) == f"/objectives/{objective_id}", page.url
            objectives[name] = objective_id
            return quarter.api.get(f"/v1/objectives/{objective_id}").ok()

        company = add_objective("Become the tool teams love", "company", description="Our one big goal\nfor 2027")
        assert (company["is_company"], company["is_personal"], company["cycle_id"]) == (True, False, cycle_id)
        for name, team, owner in (("Fast, dependable platfrom", "Platform", "ada"),  # a typo, fixed below
                                  ("Grow sign-ups", "Growth", "grace"), ("Answer within the hour", "Support", "alan")):
            made = add_objective(name, "team", team_id=teams[team], assignee_id=people[owner],
                                 parent_objective_id=objectives["Become the tool teams love"])
            assert (made["team_id"], made["assignee_id"], made["parent_objective_id"], made["is_company"]) == (
                teams[team], people[owner], objectives["Become the tool teams love"], False)
        shoot(quarter, browser, quarter.url(f"/objectives/new?cycle_id={cycle_id}"), "objective-new", cookie)

        # Key results of all five types, each with an owner.
        key_results = {}

        def add_key_result(objective, name, owner, **fields):
            page.goto(quarter.url(f"/keyresults/new?objective_id={objectives[objective]}"))
            fill(page, name=name, owner_id=people[owner], **fields)
            submit(page, "owner_id", 200)
            key_result_id = path_of(page).split("/")[2]
            assert path_of(page) == f"/keyresults/{key_result_id}", page.url
            key_results[name] = key_result_id

        platform, growth, support = "Fast, dependable platfrom", "Grow sign-ups", "Answer within the hour"
        add_key_result(platform, "Cut build minutes", "ada", type="negative", current_value="40",
                       target_value_min="5")
        add_key_result(platform, "Keep p95 latency in seconds", "alan", type="range", current_value="3",
                       target_value_min="1", target_value_max="4")
        add_key_result(platform, "Launch the v2 API", "ada", type="milestone")
        add_key_result(growth, "Reach 500 paying customers", "grace", type="positive", current_value="60",
                       target_value_min="500")
        add_key_result(growth, "Measure NPS", "grace", type="baseline", current_value="12")
        add_key_result(support, "Answer every ticket", "alan", type="milestone")
        shoot(quarter, browser, quarter.url(f"/keyresults/new?objective_id={objectives[platform]}"),
              "keyresult-new", cookie)
        tree = report(quarter, cycle_id)
        assert tree["key_results_count"] == 6
        assert {kr["type"] for node in walk(tree["objectives"]) for kr in node["key_results"]} == {
            "positive", "negative", "range", "milestone", "baseline"}
        assert kr_named(tree, "Cut build minutes")["owner_id"] == people["ada"]
        assert kr_named(tree, "Reach 500 paying customers")["target_value_min"] == "500.00"
        assert {kr_named(tree, name)["status"] for name in key_results} == {"no_update"}
        # The company objective has no key results: its progress is its aligned objectives'.
        assert node_named(tree, "Become the tool teams love")["progress_from"] == "children"
        shoot(quarter, browser, quarter.url(f"/objectives/{objectives['Become the tool teams love']}"),
              "objective", cookie)
        shoot(quarter, browser, quarter.url(f"/cycles/{cycle_id}"), "cycle", cookie)

        # Two people check in from their week.
        for who, name, value, confidence in (("ada", "Cut build minutes", "22", "80 %"),
                                             ("grace", "Reach 500 paying customers", "150", "0.6")):
            their_context, theirs = new_page(browser)
            try:
                assert sign_in(theirs, quarter.base, PEOPLE[who][1], PASSWORD).status == 200
                theirs.goto(quarter.url("/"))
                assert "Your week" in theirs.inner_text("main")
                item = theirs.locator(f"#kr-{key_results[name]}")
                item.locator('[name="value"]').fill(value)
                item.locator('[name="confidence"]').fill(confidence)
                item.locator('[name="comment"]').fill(f"{PEOPLE[who][0]} checking in")
                with theirs.expect_navigation() as navigation:
                    item.locator('button[type="submit"]').click()
                assert navigation.value.status == 200 and path_of(theirs) == "/"
                if who == "ada":
                    shoot(quarter, browser, quarter.url("/"), "week", session_cookie(their_context))
            finally:
                their_context.close()
            [last] = quarter.api.get(f"/v1/keyresults/{key_results[name]}/checkins?page_size=100").ok()[
                "checkins"][-1:]
            assert (last["author_id"], last["comment"]) == (people[who], f"{PEOPLE[who][0]} checking in")
        tree = report(quarter, cycle_id)
        assert kr_named(tree, "Cut build minutes")["status"] == "on_track"
        assert kr_named(tree, "Reach 500 paying customers")["status"] == "at_risk"
        assert kr_named(tree, "Cut build minutes")["current_value"] == "22.00"

        # A typo fixed, and an objective moved to another team.
        page.goto(quarter.url(f"/objectives/{objectives[platform]}/edit"))
        shoot(quarter, browser, page.url, "objective-edit", cookie)
        fill(page, name="Fast, dependable platform")
        submit(page, "kind", 200)
        assert quarter.api.get(f"/v1/objectives/{objectives[platform]}").ok()["name"] == "Fast, dependable platform"
        page.goto(quarter.url(f"/objectives/{objectives[support]}/edit"))
        fill(page, team_id=teams["Platform"])
        submit(page, "kind", 200)
        moved = quarter.api.get(f"/v1/objectives/{objectives[support]}").ok()
        assert (moved["team_id"], moved["name"], moved["parent_objective_id"]) == (
            teams["Platform"], support, objectives["Become the tool teams love"])

        # A key result deleted through its confirmation: cancel first, then delete.
        doomed = key_results["Keep p95 latency in seconds"]
        page.goto(quarter.url(f"/keyresults/{doomed}/edit"))
        shoot(quarter, browser, page.url, "keyresult-edit", cookie)
        with page.expect_navigation():
            page.locator(f'main a[href$="/keyresults/{doomed}/delete"]').click()
        assert path_of(page) == f"/keyresults/{doomed}/delete"
        assert "1 check-in will be deleted" in page.inner_text("main")
        shoot(quarter, browser, page.url, "keyresult-delete", cookie)
        with page.expect_navigation():
            page.locator("main a.cancel").click()
        assert quarter.api.get(f"/v1/keyresults/{doomed}").status == 200
        page.goto(quarter.url(f"/keyresults/{doomed}/delete"))
        with page.expect_navigation() as navigation:
            page.locator('main form button[type="submit"]').click()
        assert navigation.value.status == 200
        assert quarter.api.get(f"/v1/keyresults/{doomed}").status == 404
        assert report(quarter, cycle_id)["key_results_count"] == 5

        # The CSV of the cycle, from its page: the API's file, byte for byte.
        page.goto(quarter.url(f"/cycles/{cycle_id}"))
        with page.expect_download() as download:
            page.get_by_role("link", name="Download CSV").click()
        downloaded = download.value.path()
        with open(downloaded, "rb") as file:
            body = file.read()
        assert body == quarter.api.get(f"/v1/cycles/{cycle_id}/report.csv").payload
        assert body.decode("utf-8-sig").count("\r\n") == 6  # the header and five key results

        # The cycle copied to the next quarter.
        page.goto(quarter.url(f"/cycles/{cycle_id}/copy"))
        shoot(quarter, browser, page.url, "cycle-copy", cookie)
        next_start = ends_on + timedelta(days=1)
        fill(page, name="2027 Q2", starts_on=next_start.isoformat(),
             ends_on=(next_start + timedelta(days=90)).isoformat())
        submit(page, "starts_on", 200)
        [link] = [href for href in page.locator("main a").evaluate_all("links => links.map(a => a.href)")
                  if "/cycles/" in href and cycle_id not in href and "/cycles/new" not in href][:1]
        copy_id = urlsplit(link).path.split("/")[2]
        copied = report(quarter, copy_id)
        assert (copied["cycle"]["name"], copied["cycle"]["state"], copied["objectives_count"],
                copied["key_results_count"]) == ("2027 Q2", "upcoming", 4, 5)
        assert node_named(copied, "Fast, dependable platform")["parent_objective_id"] == node_named(
            copied, "Become the tool teams love")["id"]
        assert kr_named(copied, "Cut build minutes")["current_value"] == "22.00"
        assert kr_named(copied, "Launch the v2 API")["current_value"] == "0.00"
        assert kr_named(copied, "Cut build minutes")["owner_id"] == people["ada"]
        page.goto(link)
        assert "2027 Q2" in page.inner_text("main")

        # The cycles page groups them; the wallboard has no forms.
        page.goto(quarter.url("/cycles"))
        shoot(quarter, browser, page.url, "cycles", cookie)
        text = page.inner_text("main")
        assert text.index("Current") < text.index("2027 Q1") and text.index("Upcoming") < text.index("2027 Q2")
        page.goto(quarter.url(f"/cycles/{cycle_id}?board=1"))
        assert page.locator("main form").count() == 0
        shoot(quarter, browser, page.url, "board", cookie)
    finally:
        context.close()
