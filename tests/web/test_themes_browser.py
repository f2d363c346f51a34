"""The pages in the light and the dark colour scheme (the system's prefers-color-scheme, emulated), each
passing axe-core's checks and the contrast check; their screenshots at 1280 and 375 px wide in both; and the
phone's header, which keeps to at most 15 % of a 375x667 screen.

The server, the browser and the seeded cycle are test_browser.py's fixtures; an admin with a password, who owns
a key result, signs in so that Your week and the People page have something to show."""
import json
import sqlite3
import urllib.request
from urllib.parse import urlencode, urlsplit

import pytest

import a11y

pytestmark = [pytest.mark.slow,  # every test here starts a server, a process or a browser
              pytest.mark.xdist_group("themes-browser")]  # one worker starts the module's Chromium and server once

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling module
    import test_browser
    import test_people_browser
except ImportError:
    from . import test_browser, test_people_browser

browser, service, time_limit = test_browser.browser, test_browser.service, test_browser.time_limit
screenshots = test_browser.screenshots
PASSWORD = "correct horse battery"
SMALL_PHONE = {**test_browser.PHONE, "viewport": {"width": 375, "height": 667}}
HEADER_SHARE = 0.15  # of the phone screen's height the header may take
SCHEMES = ("light", "dark")


@pytest.fixture(scope="module")
def admin(service):
    """Maya, an admin with a password, who owns the seeded positive key result: her email."""
    maya = test_people_browser.person(service, "Maya Admin", "maya@example.com", "admin", PASSWORD)
    with sqlite3.connect(service.database) as db:
        db.execute("UPDATE key_results SET owner_id = ? WHERE id = ?", (maya, service.ids["positive"]))
    return "maya@example.com"


def consent_path(service):
    """The consent page for an assistant registered just now (as MCP clients register: no credential)."""
    registration = urllib.request.Request(service.url("/oauth/register"), headers={"Content-Type": "application/json"},
                                          data=json.dumps({"client_name": "Claude", "token_endpoint_auth_method": "none",
                                                           "redirect_uris": ["http://127.0.0.1:33418/callback"]}).encode())
    with urllib.request.urlopen(registration, timeout=30) as answer:
        client_id = json.loads(answer.read())["client_id"]
    return "/oauth/authorize?" + urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": "http://127.0.0.1:33418/callback",
        "scope": "okr:read okr:write", "state": "s", "code_challenge_method": "S256",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"})


def pages(service):
    """The main pages, by name: (path)."""
    ids = service.ids
    return {"week": "/", "dashboard": "/cycles", "cycle": f"/cycles/{ids['cycle']}",
            "objective": f"/objectives/{ids['platform_objective']}", "keyresult": f"/keyresults/{ids['positive']}",
            "people": "/people", "board-links": "/board-links", "account": "/account",
            "assistant-consent": consent_path(service)}


def signed_in_page(browser, service, email, **options):
    context, page = test_browser.new_page(browser, **options)
    response = test_people_browser.sign_in(page, service.url(""), email, PASSWORD)
    assert response.status == 200 and urlsplit(page.url).path == "/", page.url
    return context, page


BACKGROUND = "() => getComputedStyle(document.body).backgroundColor"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_main_page_passes_axe_in_each_scheme(browser, service, admin, scheme):
    problems = []
    context, page = test_browser.new_page(browser, bypass_csp=True, color_scheme=scheme)
    try:
        page.goto(service.url("/login"))
        # The scheme really is the one asked for: a dark page's background is dark, a light one's white.
        assert page.evaluate(BACKGROUND) == ("rgb(13, 17, 23)" if scheme == "dark" else "rgb(255, 255, 255)")
        problems += test_browser.check_accessibility(page, f"login page, {scheme}")
        test_people_browser.sign_in(page, service.url(""), admin, PASSWORD)
        for name, path in pages(service).items():
            assert page.goto(service.url(path)).status == 200, path
            problems += test_browser.check_accessibility(page, f"{name}, {scheme}")
    finally:
        context.close()
    assert not problems, "accessibility problems:\n" + "\n".join(problems)


@pytest.mark.parametrize("width", [1280, 375])
def test_screenshots_in_both_schemes(browser, service, admin, screenshots, width):
    """Full-page pictures of the main pages in light and dark, for a person to look at."""
    size = test_browser.DESKTOP if width == 1280 else SMALL_PHONE
    for scheme in SCHEMES:
        context, page = signed_in_page(browser, service, admin, **size, color_scheme=scheme)
        try:
            for name, path in pages(service).items():
                assert page.goto(service.url(path)).status == 200, path
                page.screenshot(path=screenshots / f"{name}-{width}-{scheme}.png", full_page=True)
        finally:
            context.close()


HEADER_HEIGHT = "() => document.querySelector('header.top').getBoundingClientRect().height"


def test_the_phone_header_takes_at_most_15_percent_of_the_screen(browser, service, admin):
    """At 375x667, signed in as an admin (the most links), and signed out."""
    limit = SMALL_PHONE["viewport"]["height"] * HEADER_SHARE
    heights = {}
    context, page = test_browser.new_page(browser, **SMALL_PHONE)
    try:
        page.goto(service.url("/login"))
        heights["login"] = page.evaluate(HEADER_HEIGHT)
        test_people_browser.sign_in(page, service.url(""), admin, PASSWORD)
        for name, path in pages(service).items():
            page.goto(service.url(path))
            heights[name] = page.evaluate(HEADER_HEIGHT)
    finally:
        context.close()
    print(f"phone header heights at 375x667 (px): {heights}")
    assert all(height <= limit for height in heights.values()), (limit, heights)


# The right edge of the widest element shown in main; one hidden for all but screen readers (clipped to a
# pixel: a phone's table headings) is not shown.
WIDEST_RIGHT_EDGE = """() => {
    const clipped = element => element.closest('main') && getComputedStyle(element).clip !== 'auto'
                               || element.parentElement && clipped(element.parentElement);
    return Math.max(...Array.from(document.querySelectorAll('main *'))
                         .filter(element => !clipped(element)).map(element => element.getBoundingClientRect().right));
}"""


def test_nothing_on_a_main_page_reaches_past_a_phones_screen(browser, service, admin):
    """At 375 px no element of a page's main part ends beyond the screen's right edge, not even inside a box that
    would scroll sideways (the people table was eight columns wide)."""
    context, page = signed_in_page(browser, service, admin, **SMALL_PHONE)
    try:
        edges = {}
        for name, path in pages(service).items():
            assert page.goto(service.url(path)).status == 200, path
            edges[name] = page.evaluate(WIDEST_RIGHT_EDGE)
    finally:
        context.close()
    assert all(edge <= SMALL_PHONE["viewport"]["width"] for edge in edges.values()), str(edges)
