"""Sign-in for remote assistants by OAuth 2.1, through Flask's test client: the metadata an assistant follows,
registration, the consent page (signed in first), the code good once and only with its PKCE verifier (S256), the
tokens working on /mcp as the person via the client's name, a refresh that ends the old tokens (and the whole grant
when an old one comes again) or narrows the grant to okr:read, revocation, and what is refused (a redirect URI not
registered, malformed or not matching exactly, a denial, a viewer asking to write, another resource, credentials
that are no UTF-8)."""
import re
import sqlite3
from urllib.parse import parse_qs, urlsplit

import pytest

from helpers import user_with_password
from oauth_calls import (HTML, MCP, PASSWORD, REDIRECT, WHOAMI, authorize_path, browser_of, code_from, consent, pkce,
                         register, tokens, whoami)


@pytest.fixture
def signed_in_flow(app, client):
    """(browser, client_id, tokens' answer, verifier): an editor signed in, Claude registered, allowed to write."""
    browser = browser_of(app)
    client_id = register(client).get_json()["client_id"]
    verifier, challenge = pkce()
    answer = code_from(consent(browser, authorize_path(client_id, challenge)))
    assert answer["state"] == ["xyz"]
    issued = tokens(client, grant_type="authorization_code", code=answer["code"][0], redirect_uri=REDIRECT,
                    client_id=client_id, code_verifier=verifier)
    return browser, client_id, issued, answer["code"][0], verifier


def test_an_assistant_finds_where_to_sign_in_from_the_401_alone(client):
    refused = client.post("/mcp", json=WHOAMI, headers=MCP)
    metadata_url = re.search(r'resource_metadata="([^"]+)"', refused.headers["WWW-Authenticate"]).group(1)
    resource = client.get(urlsplit(metadata_url).path).get_json()
    server = resource["authorization_servers"][0]
    assert server == "http://localhost"
    metadata = client.get("/.well-known/oauth-authorization-server").get_json()
    assert metadata["issuer"] == server
    assert (metadata["authorization_endpoint"], metadata["token_endpoint"], metadata["registration_endpoint"]) == (
        server + "/oauth/authorize", server + "/oauth/token", server + "/oauth/register")
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert "none" in metadata["token_endpoint_auth_methods_supported"]
    assert set(metadata["grant_types_supported"]) == {"authorization_code", "refresh_token"}


def test_the_whole_flow_gives_tokens_that_act_for_the_person_via_the_client(app, client, signed_in_flow):
    browser, client_id, issued, code, verifier = signed_in_flow
    assert issued.status_code == 200, issued.get_json()
    body = issued.get_json()
    assert body["token_type"].lower() == "bearer" and body["expires_in"] == 3600
    assert body["access_token"].startswith("okr_at_") and body["refresh_token"].startswith("okr_rt_")
    assert set(body["scope"].split()) == {"okr:read", "okr:write"}
    answer = whoami(client, body["access_token"]).get_json()["result"]["structuredContent"]
    assert answer["assistant"] == "Claude" and answer["may_write"] is True
    page = browser.get("/account", headers=HTML).get_data(as_text=True)
    assert "Claude" in page and "signed in by itself" in page


def test_a_code_is_good_once_and_only_with_its_verifier(client, signed_in_flow):
    browser, client_id, issued, code, verifier = signed_in_flow
    again = tokens(client, grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client_id,
                   code_verifier=verifier)
    assert again.status_code == 400 and again.get_json()["error"] == "invalid_grant"
    other_verifier, challenge = pkce()
    answer = code_from(consent(browser, authorize_path(client_id, challenge)))
    wrong = tokens(client, grant_type="authorization_code", code=answer["code"][0], redirect_uri=REDIRECT,
                   client_id=client_id, code_verifier=verifier)
    assert wrong.status_code == 400 and wrong.get_json()["error"] == "invalid_grant"


@pytest.mark.parametrize("change", [{"code_challenge": None, "code_challenge_method": None},
                                    {"code_challenge_method": "plain"}])
def test_pkce_with_s256_is_required(app, client, change):
    browser = browser_of(app)
    client_id = register(client).get_json()["client_id"]
    verifier, challenge = pkce()
    path = authorize_path(client_id, challenge, **change)
    answer = browser.get(path, headers=HTML)
    assert answer.status_code == 302
    assert parse_qs(urlsplit(answer.headers["Location"]).query)["error"] == ["invalid_request"]


def test_a_refresh_gives_new_tokens_and_ends_the_old_ones(client, signed_in_flow):
    browser, client_id, issued, code, verifier = signed_in_flow
    old = issued.get_json()
    renewed = tokens(client, grant_type="refresh_token", refresh_token=old["refresh_token"], client_id=client_id)
    assert renewed.status_code == 200, renewed.get_json()
    new = renewed.get_json()
    assert new["access_token"] != old["access_token"] and new["refresh_token"] != old["refresh_token"]
    assert whoami(client, new["access_token"]).status_code == 200
    assert whoami(client, old["access_token"]).status_code == 401
    replayed = tokens(client, grant_type="refresh_token", refresh_token=old["refresh_token"], client_id=client_id)
    assert replayed.status_code == 400 and replayed.get_json()["error"] == "invalid_grant"


def test_an_access_token_lasts_an_hour(app, client, clock):
    browser = browser_of(app)
    client_id = register(client).get_json()["client_id"]
    verifier, challenge = pkce()
    answer = code_from(consent(browser, authorize_path(client_id, challenge)))
    issued = tokens(client, grant_type="authorization_code", code=answer["code"][0], redirect_uri=REDIRECT,
                    client_id=client_id, code_verifier=verifier).get_json()
    clock.now = "2026-01-01T00:59:59Z"
    assert whoami(client, issued["access_token"]).status_code == 200
    clock.now = "2026-01-01T01:00:00Z"
    assert whoami(client, issued["access_token"]).status_code == 401
    renewed = tokens(client, grant_type="refresh_token", refresh_token=issued["refresh_token"], client_id=client_id)
    assert whoami(client, renewed.get_json()["access_token"]).status_code == 200


def test_revocation_ends_the_grant_at_once(client, signed_in_flow):
    browser, client_id, issued, code, verifier = signed_in_flow
    body = issued.get_json()
    revoked = client.post("/oauth/revoke", data={"token": body["refresh_token"], "client_id": client_id})
    assert revoked.status_code == 200
    assert whoami(client, body["access_token"]).status_code == 401
    assert "Claude" not in browser.get("/account", headers=HTML).get_data(as_text=True).split("assistants-heading")[1]


def test_denying_sends_access_denied_and_makes_no_grant(app, client):
    browser = browser_of(app)
    client_id = register(client).get_json()["client_id"]
    verifier, challenge = pkce()
    answer = code_from(consent(browser, authorize_path(client_id, challenge), decision="deny"))
    assert answer["error"] == ["access_denied"] and "code" not in answer
    assert "No assistant is connected." in browser.get("/account", headers=HTML).get_data(as_text=True)


def test_a_viewer_is_offered_read_only_and_a_forged_write_reads_only(app, client):
    browser = browser_of(app, "viewer")
    client_id = register(client).get_json()["client_id"]
    verifier, challenge = pkce()
    path = authorize_path(client_id, challenge)
    page = browser.get(path, headers=HTML).get_data(as_text=True)
    assert 'value="write"' not in page
    answer = code_from(consent(browser, path, rights="write"))
    issued = tokens(client, grant_type="authorization_code", code=answer["code"][0], redirect_uri=REDIRECT,
                    client_id=client_id, code_verifier=verifier).get_json()
    assert issued["scope"] == "okr:read"
    assert whoami(client, issued["access_token"]).get_json()["result"]["structuredContent"]["may_write"] is False


def test_the_consent_page_names_the_client_and_lets_its_form_go_on_to_the_redirect(app, client):
    browser = browser_of(app)
    client_id = register(client).get_json()["client_id"]
    page = browser.get(authorize_path(client_id, pkce()[1]), headers=HTML)
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "Connect “Claude”?" in html and REDIRECT in html
    assert "form-action 'self' http://127.0.0.1:33418" in page.headers["Content-Security-Policy"]


def test_signing_in_comes_first(app, client):
    user_with_password(app, PASSWORD)
    client_id = register(client).get_json()["client_id"]
    path = authorize_path(client_id, pkce()[1])
    answer = app.test_client().get(path, headers=HTML)
    assert answer.status_code == 303 and answer.headers["Location"].startswith("/login?next=")


@pytest.mark.parametrize("redirect_uri", ["http://127.0.0.1:9999/elsewhere", "https://attacker.example/callback"])
def test_a_redirect_uri_not_registered_is_a_page_and_no_redirect(app, client, redirect_uri):
    browser = browser_of(app)
    client_id = register(client).get_json()["client_id"]
    answer = browser.get(authorize_path(client_id, pkce()[1], redirect_uri=redirect_uri), headers=HTML)
    assert answer.status_code == 400
    assert "Location" not in answer.headers


def test_a_token_asked_for_another_resource_is_refused(app, client):
    browser = browser_of(app)
    client_id = register(client).get_json()["client_id"]
    answer = browser.get(authorize_path(client_id, pkce()[1], resource="https://other.example/mcp"), headers=HTML)
    assert answer.status_code == 302
    query = parse_qs(urlsplit(answer.headers["Location"]).query)
    assert query["error"] == ["invalid_target"] and query["state"] == ["xyz"]


def test_a_loopback_redirect_may_change_its_port(app, client):
    browser = browser_of(app)
    client_id = register(client).get_json()["client_id"]
    verifier, challenge = pkce()
    other_port = "http://127.0.0.1:40001/callback"
    answer = consent(browser, authorize_path(client_id, challenge, redirect_uri=other_port))
    assert answer.status_code == 302 and answer.headers["Location"].startswith(other_port + "?")


@pytest.mark.parametrize("uris", [["http://attacker.example/cb"], ["javascript:alert(1)"], ["https://a.example/cb#x"],
                                  [], ["https://ok.example/cb"] * 11])
def test_registration_refuses_redirects_this_server_will_not_send_to(client, uris):
    answer = register(client, uris)
    assert answer.status_code == 400
    assert answer.get_json()["error"] in ("invalid_client_metadata", "invalid_redirect_uri")


def test_registration_and_tokens_answer_pages_of_other_origins(client):
    answer = client.post("/oauth/register", json={"client_name": "Inspector", "redirect_uris": [REDIRECT],
                                                  "token_endpoint_auth_method": "none"},
                         headers={"Origin": "http://localhost:6274"})
    assert answer.status_code == 201
    assert answer.headers["Access-Control-Allow-Origin"] == "*"
    preflight = client.options("/oauth/token", headers={"Origin": "http://localhost:6274",
                                                        "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 204 and preflight.headers["Access-Control-Allow-Origin"] == "*"


def test_a_confidential_client_authenticates_with_its_secret(app, client):
    browser = browser_of(app)
    registered = register(client, token_endpoint_auth_method="client_secret_post").get_json()
    assert registered["client_secret"]
    verifier, challenge = pkce()
    answer = code_from(consent(browser, authorize_path(registered["client_id"], challenge)))
    form = dict(grant_type="authorization_code", code=answer["code"][0], redirect_uri=REDIRECT,
                client_id=registered["client_id"], code_verifier=verifier)
    assert tokens(client, **form, client_secret="wrong").status_code == 401
    assert tokens(client, **form, client_secret=registered["client_secret"]).status_code == 200


def test_tokens_and_codes_are_kept_only_as_digests(app, client, signed_in_flow):
    browser, client_id, issued, code, verifier = signed_in_flow
    body = issued.get_json()
    with sqlite3.connect(app.config["DATABASE"]) as db:
        db.execute("PRAGMA wal_checkpoint(FULL)")
    with open(app.config["DATABASE"], "rb") as database:
        data = database.read()
    for secret in (body["access_token"], body["refresh_token"], code):
        assert secret.encode() not in data


@pytest.mark.parametrize("redirect_uri", ["http://[", "http://127.0.0.1:33418/callback\u00e9",
                                          'http://127.0.0.1:33418/call"back', "http://127.0.0.1:99999/callback"])
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_malformed_redirect_uri_is_a_page_and_nothing_is_written(app, client, method, redirect_uri):
    browser = browser_of(app)
    client_id = register(client).get_json()["client_id"]
    path = authorize_path(client_id, pkce()[1], redirect_uri=redirect_uri)
    answer = consent(browser, path) if method == "POST" else browser.get(path, headers=HTML)
    assert answer.status_code == 400 and "Location" not in answer.headers
    with sqlite3.connect(app.config["DATABASE"]) as db:
        assert db.execute("SELECT count(*) FROM oauth_codes").fetchone() == (0,)


@pytest.mark.parametrize("redirect_uri", ["http://evil@127.0.0.1:5/callback", "http://127.0.0.1:5/callback#x",
                                          "http://localhost:33418/callback", "http://127.0.0.1:5/callback/",
                                          "http://127.0.0.1:5/callback?x=1", "http://127.0.0.1:05/callback"])
def test_a_loopback_redirect_matches_exactly_but_for_its_port(app, client, redirect_uri):
    browser = browser_of(app)
    client_id = register(client).get_json()["client_id"]
    answer = consent(browser, authorize_path(client_id, pkce()[1], redirect_uri=redirect_uri))
    assert answer.status_code == 400 and "Location" not in answer.headers


@pytest.mark.parametrize("path", ["/oauth/token", "/oauth/revoke"])
def test_basic_credentials_that_are_no_utf8_are_an_invalid_client(client, path):
    answer = client.post(path, data={"grant_type": "refresh_token", "refresh_token": "okr_rt_x", "token": "x"},
                         headers={"Authorization": "Basic //46/w=="})
    assert answer.status_code == 401 and answer.get_json()["error"] == "invalid_client"


def test_every_resource_named_must_be_this_servers_at_authorization_and_at_the_token_endpoint(app, client):
    browser = browser_of(app)
    client_id = register(client).get_json()["client_id"]
    verifier, challenge = pkce()
    both = ["http://localhost/mcp", "https://other.example/mcp"]
    refused = browser.get(authorize_path(client_id, challenge, resource=both), headers=HTML)
    assert parse_qs(urlsplit(refused.headers["Location"]).query)["error"] == ["invalid_target"]
    code = code_from(consent(browser, authorize_path(client_id, challenge)))["code"][0]
    form = dict(grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client_id,
                code_verifier=verifier)
    elsewhere = client.post("/oauth/token", data={**form, "resource": both})
    assert elsewhere.status_code == 400 and elsewhere.get_json()["error"] == "invalid_target"
    assert client.post("/oauth/token", data={**form, "resource": "http://localhost/mcp"}).status_code == 200


def test_a_refresh_token_presented_again_ends_the_whole_grant(client, signed_in_flow):
    browser, client_id, issued, code, verifier = signed_in_flow
    old = issued.get_json()
    new = tokens(client, grant_type="refresh_token", refresh_token=old["refresh_token"], client_id=client_id).get_json()
    replayed = tokens(client, grant_type="refresh_token", refresh_token=old["refresh_token"], client_id=client_id)
    assert replayed.status_code == 400 and replayed.get_json()["error"] == "invalid_grant"
    assert whoami(client, new["access_token"]).status_code == 401
    after = tokens(client, grant_type="refresh_token", refresh_token=new["refresh_token"], client_id=client_id)
    assert after.status_code == 400 and after.get_json()["error"] == "invalid_grant"
    assert "No assistant is connected." in browser.get("/account", headers=HTML).get_data(as_text=True)


def test_a_refresh_asking_for_okr_read_narrows_the_grant_for_good(client, signed_in_flow):
    browser, client_id, issued, code, verifier = signed_in_flow
    narrowed = tokens(client, grant_type="refresh_token", refresh_token=issued.get_json()["refresh_token"],
                      client_id=client_id, scope="okr:read").get_json()
    assert narrowed["scope"] == "okr:read"
    assert whoami(client, narrowed["access_token"]).get_json()["result"]["structuredContent"]["may_write"] is False
    wider = tokens(client, grant_type="refresh_token", refresh_token=narrowed["refresh_token"], client_id=client_id,
                   scope="okr:read okr:write")
    assert wider.status_code == 400 and wider.get_json()["error"] == "invalid_scope"
    again = tokens(client, grant_type="refresh_token", refresh_token=narrowed["refresh_token"], client_id=client_id)
    assert again.get_json()["scope"] == "okr:read"


def test_a_code_exchanged_once_its_person_is_a_viewer_says_it_only_reads(app, client):
    browser = browser_of(app)
    client_id = register(client).get_json()["client_id"]
    verifier, challenge = pkce()
    code = code_from(consent(browser, authorize_path(client_id, challenge), rights="write"))["code"][0]
    with sqlite3.connect(app.config["DATABASE"]) as db:  # as a restored backup could, past okr.store.users
        db.execute("UPDATE users SET role = 'viewer' WHERE email = 'maya@example.com'")
    issued = tokens(client, grant_type="authorization_code", code=code, redirect_uri=REDIRECT, client_id=client_id,
                    code_verifier=verifier).get_json()
    assert issued["scope"] == "okr:read"
    assert whoami(client, issued["access_token"]).get_json()["result"]["structuredContent"]["may_write"] is False
