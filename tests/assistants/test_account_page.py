"""The account page's AI assistants: a personal token made, shown once and working; a viewer's only reads; what is
typed wrongly refused beside its field; the connected assistants listed (an admin's list has everyone's) and
disconnected, which ends the token at once."""
import re

import pytest

from helpers import user_with_password

PASSWORD = "correct horse battery staple"
HTML = {"Accept": "text/html"}
MCP = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
WHOAMI = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}


def csrf(client, path="/login"):
    page = client.get(path, headers=HTML).get_data(as_text=True)
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


def signed_in(app, role, email="maya@example.com", name="Maya Lee"):
    user_with_password(app, PASSWORD, name, email, role)
    client = app.test_client()
    response = client.post("/login", data={"csrf_token": csrf(client), "email": email, "password": PASSWORD,
                                           "next": "/"})
    assert response.status_code == 303
    return client


def connect(client, name="Claude Desktop", rights="write", days="90", **extra):
    return client.post("/account/assistants", data={"csrf_token": csrf(client, "/account"), "name": name,
                                                    "rights": rights, "days": days, **extra}, headers=HTML)


def token_on(page):
    return re.search(r'id="new-token" class="link" value="([^"]+)"', page.get_data(as_text=True)).group(1)


def whoami(client, token):
    return client.post("/mcp", json=WHOAMI, headers={**MCP, "Authorization": f"Bearer {token}"})


def test_a_token_is_shown_once_and_lets_the_assistant_act_for_the_person(app):
    browser = signed_in(app, "editor")
    page = connect(browser)
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    token = token_on(page)
    assert token.startswith("okr_pat_")
    assert token not in browser.get("/account", headers=HTML).get_data(as_text=True)
    answer = whoami(app.test_client(), token).get_json()["result"]
    assert answer["structuredContent"]["may_write"] is True
    assert answer["structuredContent"]["assistant"] == "Claude Desktop"
    listed = browser.get("/account", headers=HTML).get_data(as_text=True)
    assert "Claude Desktop" in listed and "read and write" in listed


def test_a_viewer_is_offered_read_only_and_a_forged_choice_still_reads_only(app):
    browser = signed_in(app, "viewer")
    page = browser.get("/account", headers=HTML).get_data(as_text=True)
    assert 'value="read"' in page and 'value="write"' not in page
    token = token_on(connect(browser, rights="write"))
    assert whoami(app.test_client(), token).get_json()["result"]["structuredContent"]["may_write"] is False


@pytest.mark.parametrize("fields, field", [
    ({"name": " "}, "name"), ({"name": "x" * 101}, "name"), ({"name": "Line\nbreak"}, "name"),
    ({"rights": "admin"}, "rights"), ({"days": "1000"}, "days"), ({"days": "ninety"}, "days"),
])
def test_what_is_typed_wrongly_is_refused_beside_its_field_and_makes_no_token(app, fields, field):
    browser = signed_in(app, "editor")
    page = connect(browser, **fields)
    assert page.status_code == 400
    html = page.get_data(as_text=True)
    assert f'id="{ {"name": "assistant-name", "rights": "rights", "days": "assistant-days"}[field] }-error"' in html
    assert 'id="new-token"' not in html
    assert "No assistant is connected." in html


def test_a_form_without_its_csrf_token_is_refused(app):
    browser = signed_in(app, "editor")
    response = browser.post("/account/assistants", data={"name": "Claude", "rights": "write", "days": "30"},
                            headers=HTML)
    assert response.status_code in (400, 403)
    assert "No assistant is connected." in browser.get("/account", headers=HTML).get_data(as_text=True)


def disconnect_paths(page):
    return re.findall(r'action="(/account/assistants/[^"]+/disconnect)"', page.get_data(as_text=True))


def test_disconnecting_ends_the_token_at_once_and_only_an_admin_may_end_anothers(app):
    ed = signed_in(app, "editor", "ed@example.com", "Ed Itor")
    eds_token = token_on(connect(ed, "Ed's Claude"))
    bob = signed_in(app, "editor", "bob@example.com", "Bob")
    token_on(connect(bob, "Bob's Copilot"))
    [bobs_own] = disconnect_paths(bob.get("/account", headers=HTML))
    [eds] = disconnect_paths(ed.get("/account", headers=HTML))
    refused = bob.post(eds, data={"csrf_token": csrf(bob, "/account")}, headers=HTML)
    assert refused.status_code == 404
    assert whoami(app.test_client(), eds_token).status_code == 200
    maya = signed_in(app, "admin")
    everyone = maya.get("/account", headers=HTML)
    assert "Ed Itor" in everyone.get_data(as_text=True) and "Bob" in everyone.get_data(as_text=True)
    assert set(disconnect_paths(everyone)) == {eds, bobs_own}
    done = maya.post(eds, data={"csrf_token": csrf(maya, "/account")}, headers=HTML)
    assert done.status_code == 303
    assert whoami(app.test_client(), eds_token).status_code == 401
    assert disconnect_paths(ed.get("/account", headers=HTML)) == []
