"""Serving under a path (issue 34): with a public URL whose path is /okr, what `okr serve` serves
(okr.proxies.served) answers under /okr/ as if mounted there: pages, /v1, the stylesheet, redirects and the
session cookie carry the prefix; /okr redirects to /okr/, and any other path is a 404 naming the prefix."""
import re

import pytest
from werkzeug.test import Client

import helpers
from okr import create_app, proxies
from okr.db import init_db

PASSWORD = "correct horse battery"
HTML = {"Accept": "text/html"}


@pytest.fixture
def served(tmp_path, clean_env):
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db",
                      "PUBLIC_URL": "https://intranet.example.com/okr/"})
    with app.app_context():
        init_db()
    served = Client(proxies.served(app))
    served.app = app
    return served


def test_without_a_path_the_app_is_served_as_it_is(tmp_path, clean_env):
    for config in ({}, {"PUBLIC_URL": "https://okr.example.com/"}, {"BASE_URL": "https://okr.example.com"}):
        app = create_app({"DATABASE": tmp_path / "okr.db", **config})
        assert proxies.served(app) is app


@pytest.mark.usefixtures("fast_hashing")
def test_pages_redirects_and_the_cookie_carry_the_prefix(served):
    helpers.user_with_password(served.app, PASSWORD)
    assert served.get("/okr/", headers=HTML).headers["Location"] == "/okr/login?next=/"
    login = served.get("/okr/login", headers=HTML)
    assert login.status_code == 200
    assert "Path=/okr;" in login.headers["Set-Cookie"]
    page = login.get_data(as_text=True)
    stylesheet = re.search(r'<link rel="stylesheet" href="([^"]+)"', page).group(1)
    assert stylesheet.startswith("/okr/static/")
    sheet = served.get(stylesheet)
    sheet.close()
    assert (sheet.status_code, sheet.mimetype) == (200, "text/css")
    assert 'action="/okr/login"' in page
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    signed_in = served.post("/okr/login", data={"csrf_token": token, "email": "maya@example.com", "password": PASSWORD,
                                                "next": "/cycles"}, headers={"Origin": "https://intranet.example.com"})
    assert (signed_in.status_code, signed_in.headers["Location"]) == (303, "/okr/cycles")
    assert served.get("/okr/cycles", headers=HTML).status_code == 200


def test_the_api_answers_under_the_prefix(served):
    assert served.get("/okr/healthz").get_json() == {"status": "ok"}
    index = served.get("/okr/", headers={"Accept": "application/json"}).get_json()
    assert index["links"] == {"openapi": "/okr/v1/openapi.json", "healthz": "/okr/healthz"}
    assert served.get("/okr/v1/cycles").status_code == 401  # the public URL ends open mode: sign requests


@pytest.mark.parametrize("path", ["/", "/healthz", "/v1/cycles", "/login", "/okra", "/static/style.css"])
def test_a_path_outside_the_prefix_is_a_404_naming_it(served, path):
    answer = served.get(path, headers=HTML)
    assert answer.status_code == 404
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.get_json() == {"code": 404, "message": "not found: this service is served under /okr/"}
    assert served.post(path, data={"a": "b"}).status_code == 404


def test_the_prefix_alone_redirects_to_the_prefix_with_a_slash(served):
    assert (served.get("/okr").status_code, served.get("/okr").headers["Location"]) == (308, "/okr/")
    assert served.get("/okr?board=1").headers["Location"] == "/okr/?board=1"
    assert served.post("/okr").status_code == 404
