"""Every path outside /v1 and /healthz answers its errors as a page in the dashboard's layout, with a way
back; /v1 keeps the JSON error shape. A new page needs no registration to have a session."""
import sqlite3

import pytest
from flask import Blueprint, render_template_string

from helpers import assert_error, create_key, make_cycle
from html_tree import BROWSER, parse

import okr.web.views

API_CLIENT = {"Accept": "application/json"}


def assert_page(response, status, back="/"):
    """An HTML page with the layout's header, a heading, and a link back to the cycles (signed out: to sign in)."""
    body = response.get_data(as_text=True)
    assert response.status_code == status, (response.status_code, body[:500])
    assert response.mimetype == "text/html", (response.mimetype, body[:300])
    doc = parse(body)
    assert doc.find_all("header", cls="top"), "not in the dashboard's layout"
    assert doc.one("h1").text.strip()
    assert any(a.attrs.get("href") == back for a in doc.find_all("a")), "no way back"
    return doc


@pytest.mark.slow
@pytest.mark.parametrize("headers", [BROWSER, API_CLIENT, {}], ids=["browser", "api client", "no accept"])
@pytest.mark.parametrize("path", ["/nope", "/cycles/", "/v2/cycles", "/static/x.css", "/cycles//x", "/index.json"])
def test_an_unknown_page_is_a_404_page(client, path, headers):
    doc = assert_page(client.get(path, headers=headers), 404)
    assert "not found" in doc.one("h1").text.lower()


def test_a_wrong_method_on_a_page_is_a_405_page_with_allow(client):
    cycle = make_cycle(client)
    response = client.put(f"/cycles/{cycle['id']}", headers=BROWSER)
    assert_page(response, 405)
    assert {"GET", "HEAD"} <= {m.strip() for m in response.headers["Allow"].split(",")}
    assert_page(client.post("/static/style.css", data={}), 405)


def test_an_unknown_cycle_or_key_result_names_what_is_missing(client):
    doc = assert_page(client.get("/cycles/0f8fad5b-d9cb-469f-a165-70867728950e", headers=BROWSER), 404)
    assert doc.one("h1").text == "No such cycle"
    doc = assert_page(client.get("/keyresults/0f8fad5b-d9cb-469f-a165-70867728950e", headers=BROWSER), 404)
    assert doc.one("h1").text == "No such key result"


def test_the_api_keeps_its_json_errors_whatever_the_client_accepts(client):
    assert_error(client.get("/v1/nope", headers=BROWSER), 404)
    assert_error(client.put("/v1/cycles", headers=BROWSER), 405)
    assert_error(client.post("/healthz", headers=BROWSER), 405)


def test_the_json_index_at_root_answers_api_clients_in_json_and_browsers_with_pages(client):
    assert_error(client.put("/", headers=API_CLIENT), 405)
    assert_page(client.put("/", headers=BROWSER), 405)


def test_a_form_posted_without_its_csrf_token_is_a_400_page(client):
    doc = assert_page(client.post("/logout", data={}, headers=BROWSER), 400)
    assert "expired or did not come from this page" in doc.text


def test_a_failing_page_is_a_500_page_that_tells_no_secret(app, client, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise sqlite3.DatabaseError("SELECT secret FROM somewhere")

    monkeypatch.setattr(okr.web.views.streaming, "cycle_summary", broken)
    make_cycle(client)
    response = client.get("/", headers=BROWSER)
    doc = assert_page(response, 500)
    assert "secret" not in response.get_data(as_text=True)
    assert "Something went wrong" in doc.one("h1").text
    assert "SELECT secret" in caplog.text  # the log says why


@pytest.fixture
def app_with_a_new_page(tmp_path):
    """The app with a page no module registers anywhere but in its own blueprint, like a new feature would."""
    from okr import create_app
    from okr.db import init_db

    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db"})
    extra = Blueprint("extra", __name__)

    @extra.route("/reports/new", methods=["GET", "POST"])
    def new_report():
        """A form on a new path."""
        from okr.accounts.sessions import csrf_token
        return render_template_string('<form method="post"><input name="csrf_token" value="{{ t }}"></form>',
                                      t=csrf_token())

    app.register_blueprint(extra)
    with app.app_context():
        init_db()
    return app


def test_a_new_page_outside_the_old_prefixes_has_a_session_and_its_csrf_token(app_with_a_new_page):
    client = app_with_a_new_page.test_client()
    response = client.get("/reports/new", headers=BROWSER)
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    assert 'value=""' not in response.get_data(as_text=True)
    assert any(cookie.key == "okr_session" for cookie in client._cookies.values())


def test_a_page_needs_a_session_once_keys_exist_and_a_404_stays_a_404(client, runner):
    create_key(runner)
    response = client.get("/", headers=BROWSER)
    assert response.status_code == 303 and "/login" in response.headers["Location"]
    assert_page(client.get("/nope", headers=BROWSER), 404, back="/login")


def test_the_bare_error_page_follows_the_systems_colour_scheme_too(app):
    # Drawn without the layout (and its stylesheet) when the database failed: the browser's own colours, dark
    # or light as the system is set.
    from flask import render_template
    with app.test_request_context("/"):
        html = render_template("bare-message.html", title="Try again", message="The database did not answer.")
    assert parse(html).find_all("meta", name="color-scheme", content="light dark")
