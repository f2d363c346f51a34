"""Registration of assistants as OAuth clients (RFC 7591), through Flask's test client: open, but at most ten
clients an address per window, and, at the cap of clients no person authorized yet, the oldest of those make room;
redirect URIs checked strictly (the consent page's form-action is built from their parsed parts); a body of the
wrong shape is an OAuth error, never a 500; an app's own scheme (com.example.app:/callback, cursor://...) is taken."""
import json

import pytest

from okr.db import transaction
from okr.store import oauth_clients

from oauth_calls import HTML, authorize_path, browser_of, consent, pkce, register


def register_from(client, address, redirect_uri="https://app.example/callback"):
    return client.post("/oauth/register", json={"redirect_uris": [redirect_uri], "token_endpoint_auth_method": "none"},
                       environ_base={"REMOTE_ADDR": address})


def test_at_the_cap_the_oldest_clients_no_one_authorized_make_room(app, client, monkeypatch):
    from okr.accounts import oauth_server
    monkeypatch.setattr(oauth_server, "MOST_UNUSED_CLIENTS", 3)
    browser = browser_of(app)
    authorized = register(client).get_json()["client_id"]
    assert consent(browser, authorize_path(authorized, pkce()[1])).status_code == 302  # it has a code
    flood = [register_from(client, f"192.0.2.{n}").get_json()["client_id"] for n in range(1, 5)]
    newest = register_from(client, "198.51.100.7")
    assert newest.status_code == 201, newest.get_json()
    page = browser.get(authorize_path(flood[0], pkce()[1], redirect_uri="https://app.example/callback"), headers=HTML)
    assert page.status_code == 400  # the oldest never-authorized client went
    with app.app_context(), transaction() as db:
        kept = {client_id for client_id in [authorized, *flood, newest.get_json()["client_id"]]
                if oauth_clients.client(db, client_id) is not None}
    assert kept == {authorized, flood[2], flood[3], newest.get_json()["client_id"]}


def test_an_address_registers_ten_clients_a_window_and_another_address_more(client):
    for _ in range(10):
        assert register_from(client, "192.0.2.1").status_code == 201
    held = register_from(client, "192.0.2.1")
    assert held.status_code == 429
    assert held.get_json()["error"] == "temporarily_unavailable" and int(held.headers["Retry-After"]) > 0
    assert register_from(client, "192.0.2.2").status_code == 201


@pytest.mark.parametrize("uri", ["https://a.example;script-src 'unsafe-inline' *;/cb", "https://a b.example/cb",
                                 "https://a.example,https://b.example/cb", 'https://a.example"/cb',
                                 "https://a.example:99999/cb", "https://a.example:x/cb", "https://a_b.example/cb",
                                 "https://a.example\\@b.example/cb", "https://a.ex\u00e4mple/cb", "https://:443/cb",
                                 "http://[::1/cb", "javascript://a.example/%0aalert(1)", "data:text/html,x"])
def test_a_redirect_uri_is_checked_strictly(client, uri):
    answer = register(client, [uri])
    assert answer.status_code == 400
    assert answer.get_json()["error"] == "invalid_redirect_uri"


@pytest.mark.parametrize("body", [{"redirect_uris": [1]}, {"redirect_uris": [None]}, {"redirect_uris": [{}]},
                                  {"redirect_uris": "https://a.example/cb"}, [1], None, "text",
                                  {"redirect_uris": ["https://a.example/cb"], "client_name": {"x": 1}},
                                  {"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": ["none"]}])
def test_a_body_of_the_wrong_shape_is_an_oauth_error(client, body):
    answer = client.post("/oauth/register", data=json.dumps(body), content_type="application/json")
    assert answer.status_code == 400
    assert answer.get_json()["error"] in ("invalid_request", "invalid_client_metadata", "invalid_redirect_uri")
    assert answer.headers["Cache-Control"] == "no-store"


def test_the_form_action_is_built_from_the_redirects_parsed_parts(app, client):
    browser = browser_of(app)
    uri = "https://App.Example:8443/callback?from=okr"
    client_id = register(client, [uri]).get_json()["client_id"]
    page = browser.get(authorize_path(client_id, pkce()[1], redirect_uri=uri), headers=HTML)
    assert page.status_code == 200
    assert "form-action 'self' https://app.example:8443;" in page.headers["Content-Security-Policy"]


def test_a_redirect_registered_before_these_checks_gets_no_policy_of_its_own(app, client):
    evil = "https://a.example;script-src 'unsafe-inline' *;/cb"
    with app.app_context(), transaction() as db:
        oauth_clients.save_client(db, "old-client", "Old", [evil], {"token_endpoint_auth_method": "none"})
    browser = browser_of(app)
    for redirect_uri in (evil, None):
        page = browser.get(authorize_path("old-client", pkce()[1], redirect_uri=redirect_uri), headers=HTML)
        assert page.status_code == 400 and "Location" not in page.headers
        assert "unsafe-inline" not in page.headers["Content-Security-Policy"]


@pytest.mark.parametrize("uri", ["com.example.app:/callback", "cursor://anysphere.cursor-retrieval/oauth/callback",
                                 "vscode://vscode.github-authentication/did-authenticate"])
def test_an_apps_own_scheme_is_taken_and_the_browser_goes_on_to_it(app, client, uri):
    browser = browser_of(app)
    registered = register(client, [uri])
    assert registered.status_code == 201, registered.get_json()
    path = authorize_path(registered.get_json()["client_id"], pkce()[1], redirect_uri=uri)
    page = browser.get(path, headers=HTML)
    scheme = uri.split(":", 1)[0]
    assert f"form-action 'self' {scheme}:;" in page.headers["Content-Security-Policy"]
    answer = consent(browser, path)
    assert answer.status_code == 302 and answer.headers["Location"].startswith(uri + "?code=")
