"""Sign-in with a real OpenID provider in a real browser (issue 26): panva's certified oidc-provider (npm, pinned
in tests/oidc/package-lock.json, installed there with `npm ci` when missing) runs on loopback with Node.js, with
its own login and consent pages, and Chromium goes through the whole flow: the button, the provider's pages, the
callback, the signed-in page, the sign-out there too; then a tampered state, a replayed code, a wrong nonce (a
provider-side hook), an unverified email, an unknown email with and without OKR_OIDC_CREATE_USERS, an inactive
user, another account with a linked user's verified email (issue 32), and a provider that is down (password
sign-in still works).

One provider for the module, and one OKR server per configuration. Skipped without Node, npm or Chromium, failed
instead under CI.
"""
import json
import os
import re
import shutil
import subprocess
import threading
import time
from contextlib import ExitStack, contextmanager
from urllib.parse import parse_qs, urlencode, urlsplit
from urllib.request import urlopen

import pytest
from joserfc.jwk import RSAKey

from helpers import REPO, free_port, npm_installed, served_in_thread
from okr import create_app
from okr.accounts import passwords, single_sign_on
from okr.db import init_db, transaction
from okr.store import users

import test_browser  # tests/web is on sys.path (no __init__.py)
from test_browser import CHROMIUM, HOW_TO_INSTALL, PLAYWRIGHT_PROBLEM, in_ci

PROVIDER_DIR = REPO / "tests" / "oidc"
CLIENT_ID, CLIENT_SECRET = "okr-dashboard", "a-client-secret-for-the-tests-0123456789"
PASSWORD = "correct horse battery"
WAIT_MS = 15_000
MIN_NODE = (20, 19)

pytestmark = pytest.mark.xdist_group("oidc-browser")  # in one xdist worker, which starts the provider once


def problem_with_node(config):
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return "no node or npm on PATH (Node.js 20.19 or newer: apt-get install nodejs npm, or Node's own build)"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:2])
    if numbers < MIN_NODE:
        return f"node {version} is older than oidc-provider 9 needs (20.19)"
    return npm_installed(config, PROVIDER_DIR, "oidc-provider")


def needs(problem):
    if problem:
        message = f"OpenID provider tests: {problem}"
        if in_ci():
            pytest.fail(f"{message} (CI is set, so this fails instead of skipping)", pytrace=False)
        pytest.skip(message)


class Provider:
    """The node process, its output kept for a failure's report."""

    def __init__(self, port, config):
        self.url = f"http://127.0.0.1:{port}"
        self.output = []
        self.process = subprocess.Popen(["node", "provider.mjs", str(port), json.dumps(config)], cwd=PROVIDER_DIR,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        ready = threading.Event()

        def read():
            for line in self.process.stdout:
                self.output.append(line)
                if line.strip() == "listening":
                    ready.set()
        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not ready.wait(30):
            self.stop()
            raise RuntimeError("the provider did not start:\n" + "".join(self.output))

    def wrong_nonce(self, on):
        with urlopen(f"{self.url}/test/wrong-nonce?on={int(on)}", timeout=5) as answer:
            assert json.load(answer) == {"wrongNonce": on}

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.reader.join(10)
        self.process.stdout.close()


class CallbackHolder:
    """The OKR server's WSGI app, which, while holding, keeps the provider's redirects to the callback from it:
    their URLs, for the tests to send again as they please (the browser cannot stop a redirect mid-way)."""

    def __init__(self, app):
        self.app, self.holding, self.urls = app, False, []

    def __call__(self, environ, start_response):
        if self.holding and environ["PATH_INFO"] == "/login/oidc/callback":
            self.urls.append(f"http://{environ['HTTP_HOST']}{environ['PATH_INFO']}?{environ['QUERY_STRING']}")
            start_response("200 OK", [("Content-Type", "text/html")])
            return [b"<p>held</p>"]
        return self.app(environ, start_response)


def okr_server(stack, tmp_path, issuer, **config):
    """An OKR server with sign-in at issuer, its people (Maya, an admin with a password too; Ina, deactivated),
    serving in a thread; its public URL is its address, known once it serves."""
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db", "OIDC_ISSUER": issuer,
                      "OIDC_CLIENT_ID": CLIENT_ID, "OIDC_CLIENT_SECRET": CLIENT_SECRET, "OIDC_NAME": "Test SSO",
                      "PUBLIC_URL": "http://127.0.0.1", **config})
    with app.app_context():
        init_db()
        with transaction() as db:
            maya = users.create(db, "Maya Admin", "maya@example.com", "admin")
            users.set_password(db, maya, passwords.hash_password(PASSWORD))
            users.set_active(db, users.create(db, "Ina Active", "ina@example.com", "editor"), False)
    holder = CallbackHolder(app)
    served = stack.enter_context(served_in_thread(holder, threads=4))
    served.held = holder
    app.config["PUBLIC_URL"] = served.url
    single_sign_on.init_app(app)
    served.app = app
    return served


@pytest.fixture(scope="module")
def world(request, tmp_path_factory):
    needs(problem_with_node(request.config))
    started = time.monotonic()
    with ExitStack() as stack:
        port = free_port()
        issuer = f"http://127.0.0.1:{port}"
        main = okr_server(stack, tmp_path_factory.mktemp("main"), issuer)
        creating = okr_server(stack, tmp_path_factory.mktemp("creating"), issuer, OIDC_CREATE_USERS="viewer")
        down = okr_server(stack, tmp_path_factory.mktemp("down"), f"http://127.0.0.1:{free_port()}")
        key = RSAKey.generate_key(2048, parameters={"kid": "test-key", "use": "sig", "alg": "RS256"})
        provider = Provider(port, {
            "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "signing_key": key.as_dict(private=True),
            "redirect_uris": [s.url + "/login/oidc/callback" for s in (main, creating)],
            "post_logout_redirect_uris": [s.url + "/login" for s in (main, creating)]})
        stack.callback(provider.stop)
        print(f"\nprovider and servers started in {time.monotonic() - started:.1f} s")
        yield {"provider": provider, "main": main, "creating": creating, "down": down}


@pytest.fixture(scope="module")
def chromium(world, request):
    problems = [p for p in (PLAYWRIGHT_PROBLEM,) if p]
    if not os.access(CHROMIUM, os.X_OK):
        problems.append(f"no Chromium at {CHROMIUM}")
    needs(f"{'; '.join(problems)}; {HOW_TO_INSTALL}" if problems else None)
    yield from test_browser.closing_contexts(request.getfixturevalue("shared_chromium"))


@contextmanager
def new_browser(chromium):
    """A new browser (no cookies: signed in nowhere) that reaches loopback only (the provider's pages link a
    web font): its page."""
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(WAIT_MS)
    context.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"), lambda route: route.abort())
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def page(chromium):
    with new_browser(chromium) as opened:
        yield opened


@pytest.fixture
def other_page(chromium):
    """A second browser, someone else's: it shares no cookie with page's, here or at the provider."""
    with new_browser(chromium) as opened:
        yield opened


def press_the_button(page, server):
    page.goto(server.url + "/login")
    page.get_by_role("button", name="Sign in with Test SSO").click()


def at_the_provider(page, world, login):
    """Signs in on the provider's own login page, then agrees on its consent page if it asks."""
    provider = world["provider"]
    try:
        page.wait_for_url(provider.url + "/interaction/**")
    except Exception:
        raise AssertionError(f"not at the provider's login page: {page.url}\n{page.content()[:3000]}\n"
                             + "".join(provider.output[-30:])) from None
    login_url = page.url
    page.locator("input[name=login]").fill(login)
    page.locator("input[name=password]").fill("any password: devInteractions takes it")
    page.get_by_role("button", name="Sign-in").click()
    page.wait_for_url(lambda url: url != login_url and not url.startswith(provider.url + "/auth"))
    if page.url.startswith(provider.url + "/interaction/"):
        page.get_by_role("button", name="Continue").click()  # the consent page
    page.wait_for_url(lambda url: not url.startswith(provider.url))
    page.wait_for_load_state()


def sign_in(page, world, server, login):
    press_the_button(page, server)
    at_the_provider(page, world, login)
    page.wait_for_load_state()
    return page.locator("main").inner_text()


@contextmanager
def callbacks_held(server):
    """Holds the provider's redirects to the callback before they reach the server; their URLs."""
    server.held.urls, server.held.holding = [], True
    try:
        yield server.held.urls
    finally:
        server.held.holding = False


@pytest.mark.slow
def test_a_person_signs_in_with_the_provider_and_signs_out_of_both(world, page):
    main = world["main"]
    started = time.monotonic()
    press_the_button(page, main)
    at_the_provider(page, world, "maya")
    page.wait_for_url(main.url + "/")
    assert "Signed in as Maya Admin" in page.locator("body").inner_text()
    print(f"\nthe whole sign-in took {time.monotonic() - started:.2f} s")
    # Signing out here, then at the provider too, back to the sign-in page.
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(main.url + "/login")
    link = page.get_by_role("link", name="sign out of Test SSO too")
    assert parse_qs(urlsplit(link.get_attribute("href")).query)["post_logout_redirect_uri"] == [main.url + "/login"]
    link.click()
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_url(main.url + "/login")
    assert page.get_by_role("button", name="Sign in with Test SSO").is_visible()
    # Signed out at the provider: the next sign-in asks for the login again.
    press_the_button(page, main)
    page.wait_for_url(world["provider"].url + "/interaction/**")
    assert page.locator("input[name=login]").is_visible()


@pytest.mark.slow
def test_a_tampered_state_is_refused(world, page):
    main = world["main"]
    with callbacks_held(main) as caught:
        press_the_button(page, main)
        at_the_provider(page, world, "maya")
        page.wait_for_load_state()
    [url] = caught
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    page.goto(main.url + "/login/oidc/callback?" + urlencode({**query, "state": query["state"][::-1]}))
    assert "does not belong to a sign-in started in this browser" in page.locator("main").inner_text()
    page.goto(main.url + "/")
    assert page.url.startswith(main.url + "/login")


@pytest.mark.slow
def test_a_replayed_code_is_refused(world, page):
    main = world["main"]
    with callbacks_held(main) as caught:
        press_the_button(page, main)
        at_the_provider(page, world, "maya")
        page.wait_for_load_state()
    [first] = caught
    page.goto(first)  # the code's one use: signed in
    assert "Signed in as Maya Admin" in page.locator("body").inner_text()
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(main.url + "/login")
    # A second sign-in (the provider remembers Maya), its answer held; then the first code with its state.
    with callbacks_held(main) as caught:
        press_the_button(page, main)
        page.wait_for_url(lambda url: url.startswith(main.url + "/login/oidc/callback"))
        page.wait_for_load_state()
    second = {k: v[0] for k, v in parse_qs(urlsplit(caught[-1]).query).items()}
    code = parse_qs(urlsplit(first).query)["code"][0]
    page.goto(main.url + "/login/oidc/callback?" + urlencode({**second, "code": code}))
    text = page.locator("main").inner_text()
    assert "did not accept this sign-in's code (invalid_grant)" in text and "used already" in text
    page.goto(main.url + "/")
    assert page.url.startswith(main.url + "/login")


@pytest.mark.slow
def test_a_wrong_nonce_is_refused(world, page):
    world["provider"].wrong_nonce(True)
    try:
        text = sign_in(page, world, world["main"], "maya")
    finally:
        world["provider"].wrong_nonce(False)
    assert "could not be trusted" in text and "nonce" in text
    assert "Signed in as" not in page.locator("body").inner_text()


@pytest.mark.slow
def test_an_unverified_email_is_refused(world, page):
    text = sign_in(page, world, world["main"], "una")
    assert "Test SSO has not verified the email address una@example.com" in text


@pytest.mark.slow
def test_an_unknown_email_is_asked_to_get_an_invitation(world, page):
    text = sign_in(page, world, world["main"], "nia")
    assert "There is no account here for nia@example.com. Ask an admin for an invitation." in text


@pytest.mark.slow
def test_with_create_users_an_unknown_email_becomes_a_viewer(world, page):
    creating = world["creating"]
    sign_in(page, world, creating, "nia")
    page.wait_for_url(creating.url + "/")
    assert "Signed in as Nia Newcomer viewer" in " ".join(page.locator("body").inner_text().split())
    with creating.app.app_context(), transaction(write=False) as db:
        nia = users.find_by_email(db, "nia@example.com")
        assert (nia["role"], nia["oidc_subject"]) == ("viewer", "nia")  # oidc-provider: sub is the account id


@pytest.mark.slow
def test_an_inactive_user_is_refused(world, page):
    text = sign_in(page, world, world["main"], "ina")
    assert "This account is deactivated" in text


@pytest.mark.slow
def test_another_account_with_a_linked_users_verified_email_takes_nothing_over(world, page, other_page):
    main, provider = world["main"], world["provider"]
    sign_in(page, world, main, "maya")  # Maya's subject at the provider is remembered, if it was not yet
    page.wait_for_url(main.url + "/")
    with main.app.app_context(), transaction(write=False) as db:
        maya = dict(users.find_by_email(db, "maya@example.com"))
    assert (maya["oidc_issuer"], maya["oidc_subject"]) == (provider.url, "maya")
    # Mallory, another account at the provider whose email is Maya's and marked verified, in another browser.
    text = sign_in(other_page, world, main, "mallory")
    assert "This account is linked to another sign-in; ask an admin." in text
    assert "Maya" not in other_page.locator("body").inner_text()
    other_page.goto(main.url + "/")
    assert other_page.url.startswith(main.url + "/login")
    with main.app.app_context(), transaction(write=False) as db:
        assert dict(users.find_by_email(db, "maya@example.com")) == maya
        refusals = [json.loads(row["data"])["sign_in"] for row in db.execute(
            "SELECT data FROM events WHERE type = 'user.sign_in_refused' AND resource_id = ?", (maya["id"],))]
    assert refusals == [{"issuer": provider.url, "subject": "mallory"}]
    # Maya, in her own browser, is still herself.
    page.goto(main.url + "/")
    assert "Signed in as Maya Admin" in page.locator("body").inner_text()


@pytest.mark.slow
def test_a_provider_that_is_down_is_said_so_and_passwords_still_work(world, page):
    down = world["down"]
    press_the_button(page, down)
    text = page.locator("main").inner_text()
    assert "Test SSO cannot be reached just now" in text and "Sign in with your password meanwhile" in text
    page.goto(down.url + "/login")
    page.get_by_label("Email").fill("maya@example.com")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(down.url + "/")
    assert "Signed in as Maya Admin" in page.locator("body").inner_text()
