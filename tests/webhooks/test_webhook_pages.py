"""The Webhooks page: admins only; add (the secret shown once), a private address refused beside the field,
test ping, enable, remove (confirmed); CSRF on every form."""
import re
import sqlite3
import time

import pytest
from standardwebhooks.webhooks import Webhook

from okr.outbound import webhook_request
from okr.accounts import passwords
from okr.db import transaction
from okr.store import users

pytestmark = pytest.mark.usefixtures("fast_hashing")

PASSWORD = "correct horse battery"
HTML = {"Accept": "text/html"}


def signed_in(app, client, role):
    with app.app_context(), transaction() as db:
        user = users.create(db, f"A {role}", f"{role}@example.com", role)
        users.set_password(db, user, passwords.hash_password(PASSWORD))
    response = client.post("/login", data={"csrf_token": csrf(client, "/login"), "email": f"{role}@example.com",
                                           "password": PASSWORD})
    assert response.status_code == 303
    return client


def csrf(client, path="/"):
    page = client.get(path, headers=HTML)
    return re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True)).group(1)


def post(client, path, **fields):
    return client.post(path, data={"csrf_token": csrf(client), **fields})


def text(response):
    return " ".join(re.sub(r"<[^>]+>", " ", response.get_data(as_text=True)).split())


def hooks(app):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        return db.execute("SELECT id, url, is_active FROM webhooks ORDER BY seq").fetchall()


@pytest.fixture
def admin(app, client):
    return signed_in(app, client, "admin")


@pytest.mark.slow
def test_the_webhooks_page_is_for_admins_only(app, client, admin, runner, receiver):
    assert "Webhooks" in re.search(r"<nav.*?</nav>", admin.get("/", headers=HTML).text, re.S).group(0)
    result = runner.invoke(args=["webhooks", "add", receiver.url, "--allow-private", "--json"])
    hook_id = re.search(r'"id": "([^"]+)"', result.output).group(1)
    editor = signed_in(app, app.test_client(), "editor")
    for path in ("/webhooks", f"/webhooks/{hook_id}", f"/webhooks/{hook_id}/delete"):
        assert editor.get(path, headers=HTML).status_code == 403
        assert admin.get(path, headers=HTML).status_code == 200
    assert post(editor, "/webhooks", url=receiver.url, allow_private="on").status_code == 403
    for action in ("enable", "test", "delete"):
        assert post(editor, f"/webhooks/{hook_id}/{action}").status_code == 403
    assert "Webhooks" not in re.search(r"<nav.*?</nav>", editor.get("/", headers=HTML).text, re.S).group(0)
    assert len(hooks(app)) == 1 and receiver.requests == []


@pytest.mark.slow
def test_an_admin_adds_a_hook_and_sees_its_secret_once(app, admin, receiver):
    page = post(admin, "/webhooks", url=receiver.url, events="objective.*, cycle.created", format="events",
                allow_private="on")
    assert page.status_code == 200
    secret = re.search(r'id="secret" class="link" value="(whsec_[^"]+)"', page.text).group(1)
    [(hook_id, url, active)] = hooks(app)
    assert url == receiver.url and active == 1
    listing = admin.get("/webhooks", headers=HTML)
    assert secret not in listing.text and "objective.*, cycle.created" in text(listing)
    # The secret shown signs what the hook is sent.
    tested = post(admin, f"/webhooks/{hook_id}/test")
    assert "Ping delivered: HTTP 204." in text(tested)
    [request] = receiver.requests
    assert Webhook(secret).verify(request["body"], request["headers"])["type"] == "ping"
    assert "ping" in text(admin.get(f"/webhooks/{hook_id}", headers=HTML))


@pytest.mark.slow
def test_a_private_address_is_refused_beside_the_field(app, admin, receiver):
    page = post(admin, "/webhooks", url=receiver.url, events="")
    assert page.status_code == 400
    error = re.search(r'<span class="error" id="url-error">(.*?)</span>', page.text).group(1)
    assert "resolves to 127.0.0.1" in error and "Allow a private address" in error
    assert receiver.url in page.text  # the form keeps what was typed
    bad = post(admin, "/webhooks", url="ftp://example.com/")
    assert bad.status_code == 400 and "http:// or https://" in text(bad)
    assert hooks(app) == []


@pytest.mark.slow
def test_a_form_without_the_csrf_token_is_refused(app, admin, receiver):
    assert admin.post("/webhooks", data={"url": receiver.url, "allow_private": "on"}).status_code == 400
    assert hooks(app) == []


@pytest.mark.slow
def test_enable_and_remove(app, admin, runner, receiver):
    result = runner.invoke(args=["webhooks", "add", receiver.url, "--allow-private", "--json"])
    hook_id = re.search(r'"id": "([^"]+)"', result.output).group(1)
    with sqlite3.connect(app.config["DATABASE"]) as db:
        db.execute("UPDATE webhooks SET is_active = 0, disabled_reason = 'the receiver answered 410 Gone'")
    page = admin.get(f"/webhooks/{hook_id}", headers=HTML)
    assert "disabled: the receiver answered 410 Gone" in text(page)
    assert post(admin, f"/webhooks/{hook_id}/enable").status_code == 303
    assert hooks(app)[0][2] == 1
    confirm = admin.get(f"/webhooks/{hook_id}/delete", headers=HTML)
    assert "Delete the webhook to " in text(confirm) and hooks(app)
    assert post(admin, f"/webhooks/{hook_id}/delete").status_code == 303
    assert hooks(app) == []
    assert admin.get(f"/webhooks/{hook_id}", headers=HTML).status_code == 404


@pytest.mark.slow
def test_the_test_button_holds_the_server_thread_no_longer_than_the_timeout(app, admin, trickling, monkeypatch):
    """A receiver that answers a byte every 1.5 s is given up on at the delivery's deadline (15 s; 2 here)."""
    monkeypatch.setattr(webhook_request, "TIMEOUT_SECONDS", 2)
    trickler = trickling(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Slow: ", b"abcdefghij\r\n\r\n")
    post(admin, "/webhooks", url=trickler.url, events="*", format="events", allow_private="on")
    [(hook_id, _, _)] = hooks(app)
    started = time.monotonic()
    tested = post(admin, f"/webhooks/{hook_id}/test")
    assert time.monotonic() - started < 3.5
    assert "Ping failed: timed out after 2 s" in text(tested)
