"""Who may see the dashboard: open while no API key exists; afterwards a session opened at /login with a
key's credential and secret (cookie okr_session: signed with a key kept in the database, HttpOnly,
SameSite=Lax, Secure on request, 12 hours from login). Revoked and read-only keys, CSRF on login and
logout, local-only `next`, and a cookie that never opens /v1.
"""
import uuid
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import pytest

from helpers import assert_error, create_key, signed
from html_tree import BROWSER
from okr import create_app
from okr.db import init_db

COOKIE = "okr_session"
LOGIN_FAILED = "Unknown or revoked credential, or wrong secret"

# --- a small HTML reader: forms and text ----------------------------------------------------------


class FormReader(HTMLParser):
    """Every form's attributes and named controls, and the page's text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.forms, self.inputs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append({"attrs": attrs, "controls": []})
        elif tag in ("input", "textarea", "button", "select") and self.forms:
            self.forms[-1]["controls"].append((tag, attrs))
        if tag == "input":
            self.inputs.append(attrs)

    def handle_data(self, data):
        self.text.append(data)


def read(response):
    reader = FormReader()
    reader.feed(response.get_data(as_text=True))
    reader.close()
    reader.text = " ".join(" ".join(reader.text).split())
    return reader


def html(response, status):
    body = response.get_data(as_text=True)
    assert response.status_code == status, (response.status_code, body[:3000])
    assert response.mimetype == "text/html", (response.mimetype, body[:500])
    return read(response)


def form_fields(form):
    """The name=value pairs a browser would send from a form's inputs (not its buttons)."""
    return {attrs["name"]: attrs.get("value") or "" for tag, attrs in form["controls"]
            if tag == "input" and attrs.get("name") and attrs.get("type") not in ("submit", "button")}


def token_on(response):
    tokens = {attrs.get("value") for attrs in read(response).inputs if attrs.get("name") == "csrf_token"}
    assert len(tokens) == 1 and None not in tokens, tokens
    return tokens.pop()


def session_cookies(response):
    """The okr_session Set-Cookie headers, each as (value, {attribute: value}) with lowercase names."""
    found = []
    for header in response.headers.getlist("Set-Cookie"):
        first, *attributes = [part.strip() for part in header.split(";")]
        name, _, value = first.partition("=")
        if name == COOKIE:
            found.append((value, {a.partition("=")[0].lower(): a.partition("=")[2] for a in attributes}))
    return found


# --- data and keys ---------------------------------------------------------------------------------


@pytest.fixture
def data(cycle, objective, key_result):
    """A cycle, an objective and a key result, made while the API is still open."""
    return {"cycle": cycle, "objective": objective, "key_result": key_result}


@pytest.fixture
def key(data, key):
    """The API key, made once data is: from then on the API wants signed requests."""
    return key



def checkin_count(app, key, key_result_id):
    response = app.test_client().get(f"/v1/keyresults/{key_result_id}/checkins?page_size=1000", headers=signed(key))
    assert response.status_code == 200, response.get_json()
    return len(response.get_json()["checkins"])


def login(client, key, secret=None, next_path=None):
    """GET /login for its form, then POST it with the key's credential and secret."""
    page = client.get("/login", query_string={"next": next_path} if next_path else None, headers=BROWSER)
    assert page.status_code == 200, page.get_data(as_text=True)[:2000]
    data = {"credential": key["credential"], "secret": key["secret"] if secret is None else secret,
            "csrf_token": token_on(page)}
    if next_path is not None:
        data["next"] = next_path
    return client.post("/login", data=data, headers=BROWSER)


def logged_in(client, key):
    response = login(client, key)
    assert response.status_code == 303, response.get_data(as_text=True)[:2000]
    return response


def redirected_to_login(response, next_path=None):
    assert response.status_code == 303, (response.status_code, response.get_data(as_text=True)[:500])
    location = urlsplit(response.headers["Location"])
    assert location.path == "/login", response.headers["Location"]
    if next_path is not None:
        assert parse_qs(location.query).get("next") == [next_path], response.headers["Location"]
    return True


def pages(data):
    return ["/", f"/cycles/{data['cycle']['id']}", f"/keyresults/{data['key_result']['id']}"]


# --- open until a key exists -----------------------------------------------------------------------


def test_pages_are_open_while_no_key_exists(client, data):
    for path in pages(data):
        response = client.get(path, headers=BROWSER)
        assert response.status_code == 200, (path, response.status_code)
        assert response.mimetype == "text/html"


def test_every_page_redirects_to_login_once_a_key_exists(client, data, key):
    for path in pages(data) + [f"/cycles/{uuid.uuid4()}", f"/keyresults/{uuid.uuid4()}"]:
        assert redirected_to_login(client.get(path, headers=BROWSER), next_path=path), path


def test_a_browser_that_looked_before_the_first_key_must_log_in_after_it(client, runner, data):
    for path in pages(data):
        assert client.get(path, headers=BROWSER).status_code == 200
    create_key(runner)
    for path in pages(data):
        assert redirected_to_login(client.get(path, headers=BROWSER), next_path=path), path


def test_a_check_in_post_without_a_session_redirects_and_records_nothing(app, client, data, key):
    key_result_id = data["key_result"]["id"]
    response = client.post(f"/keyresults/{key_result_id}", data={"value": "150", "csrf_token": "x"}, headers=BROWSER)
    assert redirected_to_login(response, next_path=f"/keyresults/{key_result_id}")
    assert checkin_count(app, key, key_result_id) == 1


def test_the_json_index_stays_open_once_a_key_exists(client, key):
    response = client.get("/", headers={"Accept": "application/json"})
    assert response.status_code == 200 and response.get_json()["name"] == "okr-service"


def test_the_login_page_is_open(client, key):
    page = html(client.get("/login", headers=BROWSER), 200)
    [form] = [f for f in page.forms if "credential" in {a.get("name") for _, a in f["controls"]}]
    assert form["attrs"].get("method", "").lower() == "post"
    names = {attrs.get("name"): attrs for _, attrs in form["controls"]}
    assert {"credential", "secret", "csrf_token"} <= set(names)
    assert names["secret"].get("type") == "password"


@pytest.mark.parametrize("with_key", [False, True], ids=["no key", "key"])
def test_the_stylesheet_is_open_and_cacheable(client, runner, with_key):
    if with_key:
        create_key(runner)
    with client.get("/static/style.css", headers=BROWSER) as response:
        assert response.status_code == 200
        assert response.mimetype == "text/css"
        assert response.get_data()
    cache = [part.strip() for part in response.headers.get("Cache-Control", "").split(",")]
    assert "public" in cache, cache
    [max_age] = [int(part.split("=", 1)[1]) for part in cache if part.startswith("max-age=")]
    assert max_age > 0


# --- login -----------------------------------------------------------------------------------------


def test_login_opens_a_session_with_a_safe_cookie(client, data, key):
    response = logged_in(client, key)
    assert urlsplit(response.headers["Location"]).path == "/"
    cookies = session_cookies(response)
    assert cookies, "no okr_session cookie set"
    value, attributes = cookies[-1]
    assert value
    assert "httponly" in attributes
    assert attributes.get("samesite", "").lower() == "lax"
    assert "secure" not in attributes
    for path in pages(data):
        assert client.get(path, headers=BROWSER).status_code == 200, path


def test_the_session_cookie_lasts_12_hours(client, key):
    before = datetime.now(timezone.utc)
    [(_, attributes)] = session_cookies(logged_in(client, key))[-1:]
    if "max-age" in attributes:
        assert abs(int(attributes["max-age"]) - 12 * 3600) < 120, attributes
    else:
        expires = parsedate_to_datetime(attributes["expires"])
        assert abs(expires - (before + timedelta(hours=12))) < timedelta(minutes=2), attributes


def secure_app(tmp_path, config=None):
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "secure.db", **(config or {})})
    with app.app_context():
        init_db()
    return app


@pytest.mark.parametrize("how", ["config", "environment"])
def test_secure_cookies_when_asked(tmp_path, monkeypatch, how):
    if how == "config":
        app = secure_app(tmp_path, {"SECURE_COOKIES": True})
    else:
        monkeypatch.setenv("OKR_SECURE_COOKIES", "1")
        app = secure_app(tmp_path)
    key = create_key(app.test_cli_runner())
    client = app.test_client()  # Werkzeug's test client sends Secure cookies over http too
    response = logged_in(client, key)
    cookies = session_cookies(response)
    assert cookies and all("secure" in attributes for _, attributes in cookies), cookies
    assert client.get("/", headers=BROWSER).status_code == 200


@pytest.mark.parametrize("word, secure", [("on", True), ("yes", True), ("0", False), ("off", False)])
def test_secure_cookies_take_the_same_words_as_every_switch(tmp_path, monkeypatch, word, secure):
    monkeypatch.setenv("OKR_SECURE_COOKIES", word)
    assert secure_app(tmp_path).config["SESSION_COOKIE_SECURE"] is secure


def test_a_secure_cookies_word_that_is_neither_on_nor_off_stops_okr_with_one_line(tmp_path, monkeypatch, capsys):
    import okr.__main__
    monkeypatch.setenv("OKR_SECURE_COOKIES", "ture")
    with pytest.raises(SystemExit) as stopped:
        okr.__main__.main(["--database", str(tmp_path / "okr.db"), "serve"])
    assert stopped.value.code == "okr: secure cookies must be on or off (1 or 0), not 'ture'"
    assert not (tmp_path / "okr.db").exists()


def test_wrong_secret_is_a_401_page_and_opens_no_session(client, data, key):
    response = login(client, key, secret="not-" + key["secret"])
    page = html(response, 401)
    assert LOGIN_FAILED in page.text
    assert any(a.get("name") == "credential" and a.get("value") == key["credential"] for a in page.inputs), \
        "the credential typed is not kept"
    assert key["secret"] not in response.get_data(as_text=True)
    assert not any(a.get("name") == "secret" and a.get("value") for a in page.inputs), "the secret is kept"
    assert redirected_to_login(client.get("/", headers=BROWSER))


@pytest.mark.parametrize("credential", ["no-such-credential", ""])
def test_unknown_credential_is_a_401_page(client, key, credential):
    page = html(login(client, {"credential": credential, "secret": key["secret"]}), 401)
    assert LOGIN_FAILED in page.text
    assert redirected_to_login(client.get("/", headers=BROWSER))


def test_a_revoked_key_cannot_log_in(client, runner, key):
    assert runner.invoke(args=["keys", "revoke", key["credential"]]).exit_code == 0
    create_key(runner, "another")
    assert LOGIN_FAILED in html(login(client, key), 401).text


@pytest.mark.parametrize("token", [None, "", "forged"], ids=["missing", "empty", "forged"])
def test_login_needs_the_forms_csrf_token(client, key, token):
    client.get("/login", headers=BROWSER)
    data = {"credential": key["credential"], "secret": key["secret"]}
    if token is not None:
        data["csrf_token"] = token
    response = client.post("/login", data=data, headers=BROWSER)
    assert response.status_code == 400, response.status_code
    assert redirected_to_login(client.get("/", headers=BROWSER))


def test_login_returns_to_the_page_asked_for(client, data, key):
    path = f"/keyresults/{data['key_result']['id']}"
    first = client.get(path, headers=BROWSER)
    assert redirected_to_login(first, next_path=path)
    # The login page carries `next` through its form, as a browser would post it.
    page = html(client.get(first.headers["Location"], headers=BROWSER), 200)
    [form] = [f for f in page.forms if "credential" in {a.get("name") for _, a in f["controls"]}]
    fields = {**form_fields(form), "credential": key["credential"], "secret": key["secret"]}
    assert fields.get("next") == path
    response = client.post(form["attrs"].get("action") or "/login", data=fields, headers=BROWSER)
    assert response.status_code == 303
    assert urlsplit(response.headers["Location"]).path == path
    assert client.get(path, headers=BROWSER).status_code == 200


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/", "/\\evil.example/",
                                    "/\t/evil.example/", "http:/evil.example/", "javascript:alert(1)",
                                    "evil.example"])
def test_login_never_sends_anyone_elsewhere(client, key, target):
    response = login(client, key, next_path=target)
    assert response.status_code == 303
    location = urlsplit(response.headers["Location"])
    assert location.netloc in ("", "localhost") and location.path == "/", response.headers["Location"]


# --- the session's end -----------------------------------------------------------------------------


def test_logout_ends_the_session(client, data, key):
    logged_in(client, key)
    page = client.get("/", headers=BROWSER)
    logout = [f for f in read(page).forms if (f["attrs"].get("action") or "").endswith("/logout")]
    assert logout, "no logout form on the page"
    assert logout[0]["attrs"].get("method", "").lower() == "post"
    response = client.post("/logout", data=form_fields(logout[0]), headers=BROWSER)
    assert redirected_to_login(response)
    for path in pages(data):
        assert redirected_to_login(client.get(path, headers=BROWSER)), path


def test_logout_ends_the_session_for_good_a_copied_cookie_opens_nothing(app, client, data, key):
    """Sessions live server side: today's cookie, copied before the logout, is refused after it."""
    logged_in(client, key)
    copied = client.get_cookie("okr_session").value
    elsewhere = app.test_client()
    elsewhere.set_cookie("okr_session", copied)
    assert elsewhere.get("/", headers=BROWSER).status_code == 200  # the copy works while the session lives
    page = client.get("/", headers=BROWSER)
    logout = [f for f in read(page).forms if (f["attrs"].get("action") or "").endswith("/logout")][0]
    assert redirected_to_login(client.post("/logout", data=form_fields(logout), headers=BROWSER))
    for path in pages(data):
        assert redirected_to_login(elsewhere.get(path, headers=BROWSER)), path


def test_the_database_keeps_only_a_digest_of_the_sessions_token(app, client, key):
    import sqlite3
    from contextlib import closing

    logged_in(client, key)
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        rows = db.execute("SELECT token_hash, credential, ended_at FROM web_sessions").fetchall()
    assert len(rows) == 1 and rows[0][1] == key["credential"] and rows[0][2] is None
    assert len(rows[0][0]) == 64 and rows[0][0] not in client.get_cookie("okr_session").value


def test_logout_needs_the_csrf_token(client, key):
    logged_in(client, key)
    client.post("/logout", data={}, headers=BROWSER)
    assert client.get("/", headers=BROWSER).status_code == 200, "a cross-site POST logged the user out"


def test_a_revoked_keys_session_stops_on_its_next_request(client, runner, data, key):
    logged_in(client, key)
    assert client.get("/", headers=BROWSER).status_code == 200
    assert runner.invoke(args=["keys", "revoke", key["credential"]]).exit_code == 0
    for path in pages(data):
        assert redirected_to_login(client.get(path, headers=BROWSER)), path


def test_another_keys_revocation_leaves_the_session(client, runner, key):
    other = create_key(runner, "other")
    logged_in(client, key)
    assert runner.invoke(args=["keys", "revoke", other["credential"]]).exit_code == 0
    assert client.get("/", headers=BROWSER).status_code == 200


def test_the_session_expires_12_hours_after_login(client, data, key, later):
    logged_in(client, key)
    later.advance(6 * 3600)
    assert client.get("/", headers=BROWSER).status_code == 200  # being active does not extend it
    later.advance(6 * 3600 - 60)
    assert client.get("/", headers=BROWSER).status_code == 200
    later.advance(61)
    assert redirected_to_login(client.get("/", headers=BROWSER))
    assert redirected_to_login(client.get(f"/keyresults/{data['key_result']['id']}", headers=BROWSER))
    # A new login opens a new 12 hours.
    logged_in(client, key)
    assert client.get("/", headers=BROWSER).status_code == 200


def test_okr_session_hours_sets_how_long_a_session_lasts(app, client, data, key, later):
    app.config["SESSION_HOURS"] = 2  # as OKR_SESSION_HOURS=2 gives it
    app.config["PERMANENT_SESSION_LIFETIME"] = timedelta(hours=2)  # what create_app derives from it
    logged_in(client, key)
    later.advance(2 * 3600 - 60)
    assert client.get("/", headers=BROWSER).status_code == 200
    later.advance(61)
    assert redirected_to_login(client.get("/", headers=BROWSER))


def test_the_session_cookie_never_opens_the_api(client, data, key):
    logged_in(client, key)
    assert client.get("/", headers=BROWSER).status_code == 200
    assert_error(client.get("/v1/cycles"), 401)
    assert_error(client.get(f"/v1/keyresults/{data['key_result']['id']}"), 401)
    assert_error(client.post("/v1/cycles", json={"name": "sneaky"}), 401)
    listed = client.get("/v1/cycles", headers=signed(key)).get_json()["cycles"]
    assert [c["name"] for c in listed] == ["Q1"]


def test_the_api_sets_no_session_cookie(client, key):
    response = client.get("/v1/cycles", headers=signed(key))
    assert response.status_code == 200
    assert session_cookies(response) == []


# --- read-only keys --------------------------------------------------------------------------------


def test_a_read_only_key_can_look_but_not_check_in(app, client, runner, data, key):
    reader = create_key(runner, "reader", read_only=True)
    logged_in(client, reader)
    key_result_id = data["key_result"]["id"]
    for path in pages(data):
        assert client.get(path, headers=BROWSER).status_code == 200, path
    token = token_on(client.get(f"/keyresults/{key_result_id}", headers=BROWSER))
    response = client.post(f"/keyresults/{key_result_id}", headers=BROWSER,
                           data={"value": "150", "confidence": "0.7", "comment": "", "csrf_token": token})
    page = html(response, 403)
    assert "read-only" in page.text
    assert checkin_count(app, key, key_result_id) == 1


def test_a_read_write_keys_session_checks_in(app, client, data, key):
    logged_in(client, key)
    key_result_id = data["key_result"]["id"]
    token = token_on(client.get(f"/keyresults/{key_result_id}", headers=BROWSER))
    response = client.post(f"/keyresults/{key_result_id}", headers=BROWSER,
                           data={"value": "150", "confidence": "0.7", "comment": "", "csrf_token": token})
    assert response.status_code == 303, response.get_data(as_text=True)[:2000]
    assert checkin_count(app, key, key_result_id) == 2


# --- the signing key lives in the database ---------------------------------------------------------


def test_a_session_survives_a_restart(app, client, data, key):
    logged_in(client, key)
    cookie = client.get_cookie(COOKIE)
    assert cookie is not None
    restarted = create_app({"TESTING": True, "DATABASE": app.config["DATABASE"]}).test_client()
    restarted.set_cookie(COOKIE, cookie.value)
    for path in pages(data):
        assert restarted.get(path, headers=BROWSER).status_code == 200, path


def test_a_session_does_not_open_another_database(client, tmp_path, key):
    logged_in(client, key)
    cookie = client.get_cookie(COOKIE)
    other = create_app({"TESTING": True, "DATABASE": tmp_path / "other.db"})
    with other.app_context():
        init_db()
    create_key(other.test_cli_runner(), "elsewhere")
    stranger = other.test_client()
    stranger.set_cookie(COOKIE, cookie.value)
    assert redirected_to_login(stranger.get("/", headers=BROWSER))


def test_a_tampered_cookie_opens_nothing(client, key):
    logged_in(client, key)
    value = client.get_cookie(COOKIE).value
    client.set_cookie(COOKIE, value[:-2] + ("AA" if not value.endswith("AA") else "BB"))
    assert redirected_to_login(client.get("/", headers=BROWSER))
