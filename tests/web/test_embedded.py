"""The app mounted under a prefix inside another WSGI app (werkzeug's DispatcherMiddleware at /okr).

The API answers at /okr/v1/... with the same signing (the signature covers the credential and the
timestamp only); the dashboard's links, forms, redirects, stylesheet and script all carry the prefix;
the session cookie's Path is the prefix; `next` stays within it. The parent app's own routes still
answer. Unmounted, every link is what it always was.
"""
import uuid
from collections import deque
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit, urlunsplit

import pytest
from flask import Flask
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.test import Client

from helpers import HttpClient, create_key, make_user, served_in_thread, signed
from html_tree import BROWSER, parse
from okr import create_app
from okr.db import init_db

PREFIX = "/okr"
COOKIE = "okr_session"
HOST_PAGE = "the host's own page"


def okr_app(path, **config):
    app = create_app({"TESTING": True, "DATABASE": path, **config})
    with app.app_context():
        init_db()
    return app


def host_app(mounts):
    """A parent Flask app with a route of its own, and the given apps mounted beside it."""
    parent = Flask(__name__)

    @parent.get("/")
    def home():
        return HOST_PAGE

    parent.wsgi_app = DispatcherMiddleware(parent.wsgi_app, mounts)
    return parent




class Api:
    """Signed JSON calls to the mounted API."""

    def __init__(self, client, key, prefix=PREFIX):
        self.client, self.key, self.prefix = client, key, prefix

    def call(self, method, path, body=None, status=200):
        response = self.client.open(self.prefix + path, method=method, json=body, headers=signed(self.key))
        assert response.status_code == status, (method, path, response.status_code, response.get_data(as_text=True))
        return response.get_json()

    def post(self, path, body):
        return self.call("POST", path, body)


@pytest.fixture
def browser(app):
    """A werkzeug test client on the parent app, keeping cookies as a browser would (by path)."""
    return Client(host_app({PREFIX: app}))


@pytest.fixture
def api(browser, key):
    return Api(browser, key)


@pytest.fixture
def data(runner, api):
    """21 cycles (so that the list has an "Older cycles" link), one with an alignment tree of every
    key result type and a check-in, and one with no objectives; two teams and a user."""
    for number in range(19):
        api.post("/v1/cycles", {"name": f"Old cycle {number}"})
    empty = api.post("/v1/cycles", {"name": "Empty cycle"})
    cycle = api.post("/v1/cycles", {"name": "2026 Q1"})
    platform = api.post("/v1/teams", {"name": "Platform"})
    api.post("/v1/teams", {"name": "Idle team"})
    user = make_user(runner)
    company = api.post("/v1/objectives", {"name": "Grow revenue", "cycle_id": cycle["id"], "is_company": True,
                                          "is_personal": False})
    team = api.post("/v1/objectives", {"name": "Keep servers calm", "cycle_id": cycle["id"], "is_company": False,
                                       "is_personal": False, "team_id": platform["id"], "assignee_id": user["id"],
                                       "parent_objective_id": company["id"]})
    key_results = [
        api.post(f"/v1/objectives/{company['id']}/keyresults",
                 {"name": "Reach 500 customers", "type": "positive", "current_value": "120",
                  "target_value_min": "500"}),
        api.post(f"/v1/objectives/{team['id']}/keyresults",
                 {"name": "Cut pages", "type": "negative", "current_value": "40", "target_value_min": "5"}),
        api.post(f"/v1/objectives/{team['id']}/keyresults",
                 {"name": "Latency in range", "type": "range", "current_value": "3", "target_value_min": "1",
                  "target_value_max": "4"}),
        api.post(f"/v1/objectives/{team['id']}/keyresults", {"name": "Ship it", "type": "milestone"}),
        api.post(f"/v1/objectives/{team['id']}/keyresults", {"name": "Tickets", "type": "baseline"}),
    ]
    api.post(f"/v1/keyresults/{key_results[0]['id']}/checkins", {"value": "310", "confidence": "0.7",
                                                                 "comment": "new macros"})
    return {"cycle": cycle, "empty": empty, "key_results": key_results}


# --- what a page links to --------------------------------------------------------------------------


def links_on(page_url, html):
    """Every URL the page points at: (what, method, absolute URL, form element or None)."""
    found = []
    for element in parse(html).iter():
        if element.tag == "a" and element.attrs.get("href") is not None:
            found.append((f"<a href={element.attrs['href']!r}>", "get", element.attrs["href"], None))
        elif element.tag == "link" and element.attrs.get("href") is not None:
            found.append((f"<link href={element.attrs['href']!r}>", "get", element.attrs["href"], None))
        elif element.tag == "script" and element.attrs.get("src") is not None:
            found.append((f"<script src={element.attrs['src']!r}>", "get", element.attrs["src"], None))
        elif element.tag == "form":
            action = element.attrs.get("action")
            method = (element.attrs.get("method") or "get").lower()
            found.append((f"<form method={method} action={action!r}>", method, action or "", element))
    # A form without an action posts to the page itself, as a browser does.
    return [(what, method, urljoin(page_url, target), form) for what, method, target, form in found]


def same_host(url):
    return urlsplit(url).netloc in ("", "localhost")


def within(url, prefix=PREFIX):
    path = urlsplit(url).path
    return path == prefix or path.startswith(prefix + "/")


def local(url):
    """The path and query of a same-host URL, without its fragment, for the test client."""
    parts = urlsplit(url)
    return urlunsplit(("", "", parts.path, parts.query, ""))


def form_values(form):
    """What a browser sends from a form by default: its inputs' values and each select's chosen option."""
    values = {}
    for element in form.iter():
        name = element.attrs.get("name")
        if not name:
            continue
        if element.tag == "input" and element.attrs.get("type") not in ("submit", "button"):
            values[name] = element.attrs.get("value") or ""
        elif element.tag == "textarea":
            values[name] = element.raw_text()
        elif element.tag == "select":
            options = element.find_all("option")
            chosen = [o for o in options if "selected" in o.attrs] or options[:1]
            values[name] = chosen[0].attrs.get("value", chosen[0].text) if chosen else ""
    return values


def filter_urls(action, form):
    """A GET form's URL as sent with its defaults, and once for each option of each select."""
    base = form_values(form)
    urls = [f"{action}?{urlencode(base)}"]
    for select in form.find_all("select"):
        for option in select.find_all("option"):
            urls.append(f"{action}?{urlencode({**base, select.attrs['name']: option.attrs.get('value', '')})}")
    return urls


def escapes(page, html, prefix=PREFIX):
    """The page's same-host links that leave the prefix, each named with its page."""
    return [f"{page}: {what} -> {url}" for what, _, url, _ in links_on(page, html)
            if same_host(url) and not within(url, prefix)]


def crawl(client, start, prefix=PREFIX):
    """Every page reachable from start, breadth first: GET links, the stylesheet, the script and GET forms.

    Fails on a same-host URL that leaves the prefix, or one that is a 404; POST forms are checked
    for their action only (the caller submits them). Returns {url: response body} of the HTML pages.
    """
    queue, seen, pages, problems = deque([start]), {start}, {}, []
    while queue:
        url = queue.popleft()
        with client.get(url, headers=BROWSER) as response:  # closes a static file's stream
            status, mimetype, body = response.status_code, response.mimetype, response.get_data(as_text=True)
        if status != 200:
            problems.append(f"{url}: {status} {response.headers.get('Location', '')}")
            continue
        if mimetype != "text/html":
            continue
        html = body
        pages[url] = html
        problems += escapes(url, html, prefix)
        for what, method, target, form in links_on(url, html):
            if not same_host(target) or not within(target, prefix):
                continue
            if method != "get":
                continue
            # A GET form replaces the action's query with its fields.
            targets = filter_urls(local(target).partition("?")[0], form) if form is not None else [local(target)]
            for found in targets:
                if found not in seen:
                    seen.add(found)
                    queue.append(found)
    assert not problems, "\n".join(problems)
    return pages


def log_in(client, key, next_path=None, prefix=PREFIX):
    """GET the login page, then post its form as a browser would; returns the answer to the post."""
    query = f"?{urlencode({'next': next_path})}" if next_path is not None else ""
    page = client.get(f"{prefix}/login{query}", headers=BROWSER)
    assert page.status_code == 200, page.get_data(as_text=True)[:2000]
    html = page.get_data(as_text=True)
    assert not escapes(f"{prefix}/login", html, prefix), escapes(f"{prefix}/login", html, prefix)
    [form] = [f for f in parse(html).find_all("form") if f.find_all("input", name="credential")]
    action = urljoin(f"{prefix}/login", form.attrs.get("action") or "")
    assert within(action, prefix), action
    fields = {**form_values(form), "credential": key["credential"], "secret": key["secret"]}
    return client.post(local(action), data=fields, headers=BROWSER)


def location(response):
    assert response.status_code in (302, 303), (response.status_code, response.get_data(as_text=True)[:500])
    return response.headers["Location"]


def cookie_paths(response):
    paths = []
    for header in response.headers.getlist("Set-Cookie"):
        first, *attributes = [part.strip() for part in header.split(";")]
        if first.partition("=")[0] == COOKIE:
            paths += [a.partition("=")[2] for a in attributes if a.partition("=")[0].lower() == "path"]
    return paths


# --- the API under the prefix ----------------------------------------------------------------------


def test_a_signed_call_under_the_prefix_and_the_hosts_own_route(browser, api):
    cycle = api.post("/v1/cycles", {"name": "2026 Q1"})
    assert api.call("GET", f"/v1/cycles/{cycle['id']}") == cycle
    assert [c["id"] for c in api.call("GET", "/v1/cycles")["cycles"]] == [cycle["id"]]
    # The same rules as at the root: unsigned is a 401, an unknown path is a 401 before it is a 404.
    for path in ("/v1/cycles", "/v1/nothing"):
        response = browser.get(PREFIX + path)
        assert response.status_code == 401 and response.headers["WWW-Authenticate"] == "S1-HMAC-SHA256", path
    assert browser.get("/v1/cycles", headers=signed(api.key)).status_code == 404  # the host has no /v1
    assert browser.get(f"{PREFIX}/healthz").get_json() == {"status": "ok"}
    response = browser.get("/")
    assert response.status_code == 200 and response.get_data(as_text=True) == HOST_PAGE


def test_an_encoded_slash_is_still_refused_under_the_prefix(browser, api):
    assert browser.get(f"{PREFIX}/v1%2Fcycles", headers=signed(api.key)).status_code == 404
    assert browser.get(f"{PREFIX}/v1/cycles?page_size=1&x=%2F", headers=signed(api.key)).status_code == 200


def test_the_json_index_and_the_api_document_name_the_prefix(browser, key):
    index = browser.get(f"{PREFIX}/", headers={"Accept": "application/json"}).get_json()
    assert index["links"] == {"openapi": f"{PREFIX}/v1/openapi.json", "healthz": f"{PREFIX}/healthz"}
    document = browser.get(index["links"]["openapi"]).get_json()
    assert document["servers"] == [{"url": PREFIX}]
    assert browser.get(index["links"]["healthz"]).get_json() == {"status": "ok"}
    # A generated client joins the server's URL and the path: the result reaches the mounted API.
    path = document["servers"][0]["url"] + "/v1/cycles"
    assert "/v1/cycles" in document["paths"]
    assert browser.get(path, headers=signed(key)).status_code == 200


# --- the dashboard under the prefix ----------------------------------------------------------------


def test_every_link_of_the_dashboard_stays_under_the_prefix(browser, api, data):
    # Logging in: the page asks for it, within the prefix, and comes back to where it was asked.
    first = browser.get(f"{PREFIX}/", headers=BROWSER)
    login_url = location(first)
    assert urlsplit(login_url).path == f"{PREFIX}/login", login_url
    assert parse_qs(urlsplit(login_url).query).get("next") == ["/"], login_url
    response = log_in(browser, api.key, next_path="/")
    assert location(response) == f"{PREFIX}/"
    assert cookie_paths(response) == [PREFIX]

    pages = crawl(browser, f"{PREFIX}/")
    cycle, empty = data["cycle"]["id"], data["empty"]["id"]
    expected = {f"{PREFIX}/", f"{PREFIX}/cycles/{cycle}", f"{PREFIX}/cycles/{empty}",
                *(f"{PREFIX}/keyresults/{k['id']}" for k in data["key_results"])}
    assert expected <= {local(url).partition("?")[0] for url in pages}, sorted(pages)
    assert any("before=" in url for url in pages), "the crawl never reached the older cycles"
    assert any("Nothing matches" in html for html in pages.values()), "no filter that matched nothing"
    empty_page = pages[f"{PREFIX}/cycles/{empty}"]
    assert f'href="{PREFIX}/objectives/new?cycle_id={empty}"' in empty_page and "http://localhost/v1/" not in empty_page

    # Error pages link within the prefix too.
    for path, status in ((f"/cycles/{uuid.uuid4()}", 404), (f"/keyresults/{uuid.uuid4()}", 404),
                         ("/?before=x", 400)):
        response = browser.get(PREFIX + path, headers=BROWSER)
        assert response.status_code == status and response.mimetype == "text/html", path
        assert not escapes(PREFIX + path, response.get_data(as_text=True)), path

    # A check-in through the form: posted within the prefix, and back to the page within it.
    key_result = data["key_results"][0]["id"]
    page_url = f"{PREFIX}/keyresults/{key_result}"
    [form] = parse(pages[page_url]).find_all("form", cls="checkin")
    action = urljoin(page_url, form.attrs.get("action") or "")
    assert within(action) and (form.attrs.get("method") or "").lower() == "post", action
    bad = browser.post(local(action), data={**form_values(form), "value": "lots"}, headers=BROWSER)
    assert bad.status_code == 400
    assert not escapes(page_url, bad.get_data(as_text=True))
    response = browser.post(local(action), data={**form_values(form), "value": "420", "confidence": "0.9",
                                                 "comment": "from the mounted page"}, headers=BROWSER)
    assert location(response) == page_url
    after = browser.get(location(response), headers=BROWSER)
    assert after.status_code == 200 and "from the mounted page" in after.get_data(as_text=True)
    checkins = api.call("GET", f"/v1/keyresults/{key_result}/checkins")["checkins"]
    assert sorted(c["value"] for c in checkins) == ["120.00", "310.00", "420.00"]

    # Logging out, through the form on the page: back to the login page within the prefix.
    [logout] = [f for f in parse(after.get_data(as_text=True)).find_all("form")
                if (f.attrs.get("action") or "").endswith("/logout")]
    action = urljoin(page_url, logout.attrs["action"])
    assert local(action) == f"{PREFIX}/logout", action
    response = browser.post(local(action), data=form_values(logout), headers=BROWSER)
    assert urlsplit(location(response)).path == f"{PREFIX}/login"
    assert all(path == PREFIX for path in cookie_paths(response)), cookie_paths(response)
    again = browser.get(page_url, headers=BROWSER)
    assert urlsplit(location(again)).path == f"{PREFIX}/login"
    assert parse_qs(urlsplit(location(again)).query).get("next") == [f"/keyresults/{key_result}"]


def test_the_open_dashboard_links_within_the_prefix_too(browser):
    # No key yet: no login, the empty dashboard links the form that makes a cycle, at the mounted address.
    pages = crawl(browser, f"{PREFIX}/")
    assert f"{PREFIX}/" in pages
    assert f'href="{PREFIX}/cycles/new"' in pages[f"{PREFIX}/"]
    # The logout form is not shown; a post to /logout without its form's token is a page whose way back
    # stays within the prefix.
    response = browser.post(f"{PREFIX}/logout", headers=BROWSER)
    assert response.status_code == 400 and f'href="{PREFIX}/"' in response.get_data(as_text=True)
    assert location(browser.get(f"{PREFIX}/login", headers=BROWSER)) == f"{PREFIX}/"


def test_login_returns_within_the_prefix_to_the_page_asked_for(browser, api, data):
    path = f"/keyresults/{data['key_results'][1]['id']}"
    asked = location(browser.get(PREFIX + path, headers=BROWSER))
    assert parse_qs(urlsplit(asked).query).get("next") == [path], asked
    # The login form carries `next` as the path within the app; the redirect puts the prefix back.
    assert location(log_in(browser, api.key, next_path=path)) == PREFIX + path
    assert browser.get(PREFIX + path, headers=BROWSER).status_code == 200


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/", "/\\evil.example/",
                                    "http:/evil.example/", "evil.example", "/../evil", "/./../evil",
                                    "/%2e%2e/evil", "/cycles/%2E./../evil", "/okr/..", "/.."])
def test_login_never_sends_anyone_out_of_the_prefix(browser, key, target):
    assert location(log_in(browser, key, next_path=target)) == f"{PREFIX}/"


def test_two_apps_on_one_host_keep_their_own_sessions(tmp_path):
    first, second = okr_app(tmp_path / "first.db"), okr_app(tmp_path / "second.db")
    first_key, second_key = create_key(first.test_cli_runner()), create_key(second.test_cli_runner())
    browser = Client(host_app({"/first": first, "/second": second}))
    response = log_in(browser, first_key, prefix="/first")
    assert location(response) == "/first/" and cookie_paths(response) == ["/first"]
    assert browser.get("/first/", headers=BROWSER).status_code == 200
    # The second app never sees the first's cookie, so it asks for its own login and keeps both.
    assert urlsplit(location(browser.get("/second/", headers=BROWSER))).path == "/second/login"
    assert location(log_in(browser, second_key, prefix="/second")) == "/second/"
    assert browser.get("/second/", headers=BROWSER).status_code == 200
    assert browser.get("/first/", headers=BROWSER).status_code == 200
    assert browser.get_cookie(COOKIE, path="/first").value != browser.get_cookie(COOKIE, path="/second").value


def test_a_session_cookie_path_set_by_the_host_wins(tmp_path):
    app = okr_app(tmp_path / "okr.db", SESSION_COOKIE_PATH="/")
    browser = Client(host_app({PREFIX: app}))
    assert cookie_paths(log_in(browser, create_key(app.test_cli_runner()))) == ["/"]


# --- unmounted, nothing changes --------------------------------------------------------------------


def test_unmounted_the_links_are_what_they_were(tmp_path):
    app = okr_app(tmp_path / "okr.db")
    client = app.test_client()
    cycle = client.post("/v1/cycles", json={"name": "Q1"}).get_json()
    objective = client.post("/v1/objectives", json={"name": "Grow", "cycle_id": cycle["id"], "is_company": True,
                                                    "is_personal": False}).get_json()
    key_result = client.post(f"/v1/objectives/{objective['id']}/keyresults",
                             json={"name": "Reach 500", "type": "positive", "target_value_min": "500"}).get_json()
    for path in ("/", f"/cycles/{cycle['id']}", f"/keyresults/{key_result['id']}"):
        html = client.get(path, headers=BROWSER).get_data(as_text=True)
        assert '<a href="/" class="home">' in html, path
        assert '<a href="/v1/openapi.json">' in html, path
        assert '<link rel="stylesheet" href="/static/style.css?v=' in html, path
        assert '<script src="/static/local-time.js?v=' in html, path
    assert f'<a href="/keyresults/{key_result["id"]}">' in client.get(f"/cycles/{cycle['id']}",
                                                                      headers=BROWSER).get_data(as_text=True)
    assert client.get("/", headers={"Accept": "application/json"}).get_json()["links"] == {
        "openapi": "/v1/openapi.json", "healthz": "/healthz"}
    assert "servers" not in client.get("/v1/openapi.json").get_json()
    key = create_key(app.test_cli_runner())
    response = client.get("/", headers=BROWSER)
    assert urlsplit(location(response)).path == "/login"
    response = log_in(client, key, next_path="/", prefix="")
    assert location(response) == "/" and cookie_paths(response) == ["/"]


# --- on real waitress ------------------------------------------------------------------------------


@pytest.fixture
def served(tmp_path):
    """The parent app with okr at /okr on waitress, on a free loopback port."""
    app = okr_app(tmp_path / "okr.db")
    with served_in_thread(host_app({PREFIX: app}), threads=2) as served:
        yield app, HttpClient(f"127.0.0.1:{served.port}")


@pytest.mark.slow
def test_mounted_on_waitress(served):
    app, http = served
    key = create_key(app.test_cli_runner())
    cycle = http.post(f"{PREFIX}/v1/cycles", {"name": "Q1"}, headers={**signed(key),
                                                                      "Content-Type": "application/json"}).ok()
    assert http.get(f"{PREFIX}/v1/cycles/{cycle['id']}", headers=signed(key)).ok() == cycle
    assert http.get(f"{PREFIX}/v1%2Fcycles", headers=signed(key)).status == 404
    page = http.get(f"{PREFIX}/login", headers=BROWSER)
    assert page.status == 200
    html = page.payload.decode()
    assert not escapes(f"{PREFIX}/login", html)
    [stylesheet] = [el.attrs["href"] for el in parse(html).find_all("link", rel="stylesheet")]
    assert stylesheet.startswith(f"{PREFIX}/static/style.css?v=")
    assert http.get(stylesheet).status == 200
    assert http.get("/").payload.decode() == HOST_PAGE
