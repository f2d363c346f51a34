"""Board links (/board-links, admins only): a secret URL that opens one cycle's wallboard with no sign-in and
nothing else; shown once, kept as its SHA-256 only, never written to the access log, revocable."""
import hashlib
import io
import re
import sqlite3
from contextlib import closing

import pytest
from werkzeug.test import Client

from helpers import make_cycle, make_key_result, make_objective
from html_tree import BROWSER, parse
from okr.accounts import passwords
from okr.db import transaction
from okr.server.request_log import AccessLog
from okr.store import cycles, users

PASSWORD = "correct horse battery"
pytestmark = pytest.mark.usefixtures("fast_hashing")


def rows(app, statement, *params):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute(statement, params).fetchall()


def csrf(client, path="/login"):
    return re.search(r'name="csrf_token" value="([^"]+)"', client.get(path, headers=BROWSER).get_data(as_text=True)
                     ).group(1)


def sign_in(app, client, role):
    """A person of this role, signed in (which turns sign-in on)."""
    with app.app_context(), transaction() as db:
        user = users.create(db, f"A {role}", f"{role}@example.com", role)
        users.set_password(db, user, passwords.hash_password(PASSWORD))
    response = client.post("/login", data={"csrf_token": csrf(client), "email": f"{role}@example.com",
                                           "password": PASSWORD})
    assert response.status_code == 303


@pytest.fixture
def cycle(client):
    cycle = make_cycle(client, "2026 Q4")
    objective = make_objective(client, cycle["id"], "Grow")
    make_key_result(client, objective["id"], "Reach 100 customers")
    return cycle


@pytest.fixture
def admin(app, client, cycle):
    sign_in(app, client, "admin")
    return client


def make_link(client, cycle_id, label="Sales floor TV", status=200):
    response = client.post("/board-links", data={"csrf_token": csrf(client, "/board-links"), "cycle_id": cycle_id,
                                                 "label": label}, headers=BROWSER)
    assert response.status_code == status, response.get_data(as_text=True)[:2000]
    return parse(response.get_data(as_text=True))


def made_url(doc):
    return doc.one("input", id="board-url").attrs["value"]


def test_an_admin_makes_a_link_that_opens_the_board_with_no_sign_in(app, admin, cycle):
    url = made_url(make_link(admin, cycle["id"]))
    token = re.fullmatch(r"http://localhost/boards/([A-Za-z0-9_-]{43})", url).group(1)
    stranger = app.test_client()  # no cookie
    response = stranger.get(f"/boards/{token}", headers=BROWSER)
    assert response.status_code == 200 and "2026 Q4" in response.get_data(as_text=True)
    assert response.headers["Referrer-Policy"] == "no-referrer" and response.headers["Cache-Control"] == "no-store"
    assert "Set-Cookie" not in response.headers  # it signs nobody in
    doc = parse(response.get_data(as_text=True))
    [meta] = [m for m in doc.find_all("meta") if m.attrs.get("http-equiv", "").lower() == "refresh"]
    assert meta.attrs["content"] == f"30; url=/boards/{token}?page=2"  # its pages stay under the link
    page_two = stranger.get(f"/boards/{token}?page=2", headers=BROWSER)
    assert page_two.status_code == 200 and "Reach 100 customers" in page_two.get_data(as_text=True)


def test_the_link_is_listed_and_only_its_fingerprint_is_kept(app, admin, cycle):
    token = made_url(make_link(admin, cycle["id"])).rsplit("/", 1)[1]
    [(stored,)] = rows(app, "SELECT token_hash FROM board_links")
    assert stored == hashlib.sha256(token.encode()).hexdigest()
    assert not any(token in str(value) for row in rows(app, "SELECT * FROM board_links") for value in row)
    listing = parse(admin.get("/board-links", headers=BROWSER).get_data(as_text=True))
    [row] = listing.one("table").one("tbody").find_all("tr")
    assert "Sales floor TV" in row.text and "2026 Q4" in row.text and "A admin" in row.text
    assert token not in listing.text and listing.find_all("input", id="board-url") == []  # shown that once


def test_the_token_opens_that_board_and_nothing_else(app, admin, client, cycle):
    with app.app_context(), transaction() as db:
        other = cycles.create(db, "Another")
    token = made_url(make_link(admin, cycle["id"])).rsplit("/", 1)[1]
    stranger = app.test_client()
    assert stranger.get(f"/boards/{token}", headers=BROWSER).status_code == 200
    for path in (f"/cycles/{cycle['id']}", f"/cycles/{cycle['id']}/board", f"/cycles/{other['id']}/board", "/",
                 "/board-links"):
        assert stranger.get(path, headers=BROWSER).status_code == 303, path  # to the login page
    assert stranger.get(f"/v1/cycles/{cycle['id']}", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    assert stranger.get(f"/boards/{token[:-1]}", headers=BROWSER).status_code == 404


def test_revoking_asks_first_then_the_link_opens_nothing(app, admin, cycle):
    token = made_url(make_link(admin, cycle["id"])).rsplit("/", 1)[1]
    [(link_id,)] = rows(app, "SELECT id FROM board_links")
    ask = parse(admin.get(f"/board-links/{link_id}/revoke", headers=BROWSER).get_data(as_text=True))
    assert "Sales floor TV" in ask.one("h1").text and ask.one("form", cls="delete").attrs["method"] == "post"
    assert admin.post(f"/board-links/{link_id}/revoke", data={}, headers=BROWSER).status_code == 400  # no CSRF
    assert rows(app, "SELECT count(*) FROM board_links") == [(1,)]
    response = admin.post(f"/board-links/{link_id}/revoke", data={"csrf_token": csrf(admin, "/board-links")})
    assert response.status_code == 303 and rows(app, "SELECT count(*) FROM board_links") == [(0,)]
    gone = app.test_client().get(f"/boards/{token}", headers=BROWSER)
    assert gone.status_code == 404 and "revoked" in gone.get_data(as_text=True)
    assert admin.post(f"/board-links/{link_id}/revoke", data={"csrf_token": csrf(admin, "/board-links")}
                      ).status_code == 404


def test_making_one_without_the_forms_token_is_refused(app, admin, cycle):
    response = admin.post("/board-links", data={"cycle_id": cycle["id"], "label": "TV"}, headers=BROWSER)
    assert response.status_code == 400 and rows(app, "SELECT count(*) FROM board_links") == [(0,)]


@pytest.mark.parametrize("label, cycle_id, field, words", [
    ("  ", None, "label", "Name the link"),
    ("x" * 101, None, "label", "100 characters"),
    ("TV", "8a4c5d3e-0000-4000-8000-000000000000", "cycle_id", "Choose one of the cycles"),
])
def test_bad_fields_are_said_beside_them(app, admin, cycle, label, cycle_id, field, words):
    doc = make_link(admin, cycle_id or cycle["id"], label, status=400)
    assert words in doc.one("span", id=f"{field}-error").text
    assert doc.one(id=field).attrs["aria-invalid"] == "true"
    assert rows(app, "SELECT count(*) FROM board_links") == [(0,)]


@pytest.mark.parametrize("role", ["editor", "viewer"])
def test_only_admins_manage_board_links(app, client, cycle, role):
    sign_in(app, client, role)
    response = client.get("/board-links", headers=BROWSER)
    assert response.status_code == 403 and "make or revoke board links" in response.get_data(as_text=True)
    assert client.post("/board-links", data={"csrf_token": csrf(client, "/"), "cycle_id": cycle["id"],
                                             "label": "TV"}, headers=BROWSER).status_code == 403


def test_deleting_the_cycle_deletes_its_links(app, admin, cycle):
    make_link(admin, cycle["id"])
    response = admin.post(f"/cycles/{cycle['id']}/delete", data={"csrf_token": csrf(admin, "/board-links")})
    assert response.status_code == 303
    assert rows(app, "SELECT count(*) FROM board_links") == [(0,)]


def test_the_access_log_never_holds_a_board_links_token(app):
    stream = io.StringIO()
    access_log = AccessLog(stream, flush_seconds=3600)
    client = Client(access_log.wrap(app))
    token = "N0AERpUfCX6uINEZfL46YcLWHMraM1K_ix_64Qi_vE8"
    client.get(f"/boards/{token}?page=2")
    access_log.flush()
    assert token not in stream.getvalue() and " GET /boards/[token]?page=2 404 " in stream.getvalue()


@pytest.mark.parametrize("role, shown", [("admin", True), ("editor", False)])
def test_the_cycles_list_links_board_links_for_admins(app, client, cycle, role, shown):
    sign_in(app, client, role)
    doc = parse(client.get("/cycles", headers=BROWSER).get_data(as_text=True))
    assert bool(doc.find_all("a", href="/board-links")) is shown


def test_the_cycle_page_offers_an_admin_a_board_link_with_the_cycle_chosen(app, admin, cycle):
    doc = parse(admin.get(f"/cycles/{cycle['id']}", headers=BROWSER).get_data(as_text=True))
    [link] = [a for a in doc.find_all("a") if a.text == "Board link for a TV"]
    form = parse(admin.get(link.attrs["href"], headers=BROWSER).get_data(as_text=True))
    [chosen] = [o for o in form.one("select", id="cycle_id").find_all("option") if "selected" in o.attrs]
    assert chosen.attrs["value"] == cycle["id"]
