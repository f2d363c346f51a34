"""Sign-in with an identity provider (OpenID Connect, issue 26), against a fake provider on loopback
(tests/web/fake_provider.py): the button, PKCE, state and nonce, the ID token's checks, matching by subject then
verified email, creating users, allowed domains, inactive users, a provider that is down, password sign-in off,
sign-out, throttling and the settings. tests/web/test_oidc_browser.py drives the real provider in Chromium."""
import base64
import json
import logging
import os
import re
import sqlite3
import time
from urllib.parse import parse_qs, urlsplit
from urllib.request import urlopen

import pytest

from fake_provider import CLIENT_ID, CLIENT_SECRET, FakeProvider, new_key
from helpers import REPO, served_in_thread
from okr import create_app
from okr.__main__ import main
from okr.accounts import identity_provider, passwords
from okr.db import init_db, transaction
from okr.store import invitations, users
from okr.settings import default

pytestmark = pytest.mark.usefixtures("fast_hashing")

PUBLIC = "http://okr.test"
HTML = {"Accept": "text/html"}
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def served_provider():
    fake = FakeProvider()
    with served_in_thread(fake.app) as served:
        fake.issuer = served.url
        yield fake


@pytest.fixture
def fake(served_provider):
    served_provider.codes.clear()
    served_provider.token_requests.clear()
    served_provider.published = [served_provider.key]
    served_provider.jwks_fetches = served_provider.discovery_fetches = 0
    return served_provider


@pytest.fixture
def make_app(tmp_path, fake, clean_env):
    def make(**config):
        settings = {"TESTING": True, "DATABASE": tmp_path / "okr.db", "OIDC_ISSUER": fake.issuer,
                    "OIDC_CLIENT_ID": CLIENT_ID, "OIDC_CLIENT_SECRET": CLIENT_SECRET, "OIDC_NAME": "Example SSO",
                    "PUBLIC_URL": PUBLIC, **config}
        app = create_app({k: v for k, v in settings.items() if v is not None})
        with app.app_context():
            init_db()
        return app
    return make


@pytest.fixture
def app(make_app):
    return make_app()


def person(app, name="Maya Admin", email="maya@example.com", role="admin", password=None, active=True):
    with app.app_context(), transaction() as db:
        user = users.create(db, name, email, role)
        if password is not None:
            users.set_password(db, user, passwords.hash_password(password))
        if not active:
            users.set_active(db, user, False)
        return dict(db.execute("SELECT * FROM users WHERE id = ?", (user["id"],)).fetchone())


def csrf(client):
    page = client.get("/login", headers=HTML).get_data(as_text=True)
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


def start(client, next_path="/"):
    """Presses the button; the authorization URL the browser is sent to."""
    response = client.post("/login/oidc", data={"csrf_token": csrf(client), "next": next_path})
    assert response.status_code == 303, response.get_data(as_text=True)[:2000]
    return response.headers["Location"]


def callback(client, query):
    return client.get("/login/oidc/callback", query_string=query, headers=HTML)


def sign_in(client, fake, **claims):
    query, _ = fake.grant(start(client), **claims)
    return callback(client, query)


def text(response):
    return " ".join(re.sub(r"<[^>]+>", " ", response.get_data(as_text=True)).split())


def signed_in_as(client):
    page = client.get("/", headers=HTML)
    if page.status_code != 200:
        return None
    return re.search(r"Signed in as (.+?) (admin|editor|viewer)", text(page)).group(1)


def rows(app, sql, *params):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        return db.execute(sql, params).fetchall()


# --- the button and the flow -------------------------------------------------------------------------


@pytest.mark.slow
def test_the_login_page_shows_the_button_beside_the_password_form(app, client):
    page = client.get("/login", headers=HTML).get_data(as_text=True)
    assert "Sign in with Example SSO" in page and 'name="password"' in page
    form = re.search(r'<form method="post" action="/login/oidc"[^>]*>(.*?)</form>', page, re.S).group(1)
    assert 'name="csrf_token"' in form  # a POST with the token: no other site can start a sign-in here


@pytest.mark.slow
def test_without_an_issuer_there_is_no_button_and_no_flow(make_app):
    app = make_app(OIDC_ISSUER=None, OIDC_CLIENT_ID=None, OIDC_CLIENT_SECRET=None)
    person(app, password=PASSWORD)
    client = app.test_client()
    assert "/login/oidc" not in client.get("/login", headers=HTML).get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").get_data(as_text=True)).group(1)
    assert client.post("/login/oidc", data={"csrf_token": token}).status_code == 404


@pytest.mark.slow
def test_the_start_needs_the_forms_csrf_token(app, client):
    client.get("/login")
    assert client.post("/login/oidc", data={"csrf_token": "forged"}).status_code == 400


@pytest.mark.slow
def test_a_person_signs_in_with_the_provider_pkce_state_and_nonce(app, client, fake):
    maya = person(app)
    url = start(client, "/account")
    assert url.startswith(fake.issuer + "/auth?")
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert query["response_type"] == "code" and query["client_id"] == CLIENT_ID
    assert query["redirect_uri"] == PUBLIC + "/login/oidc/callback"
    assert query["scope"] == "openid email profile"
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert len(query["state"]) >= 32 and len(query["nonce"]) >= 32
    answer, _ = fake.grant(url)
    response = callback(client, answer)
    assert response.status_code == 303 and response.headers["Location"] == "/account"
    assert signed_in_as(client) == "Maya Admin"
    # The code went with the secret (basic auth), the PKCE verifier and the redirect URI.
    [sent] = fake.token_requests
    assert sent["grant_type"] == "authorization_code" and len(sent["code_verifier"]) >= 43
    assert rows(app, "SELECT oidc_issuer, oidc_subject FROM users WHERE id = ?", maya["id"]) == [
        (fake.issuer, "sub-maya")]
    # A sign-in like a password's: no event recorded for it.
    assert rows(app, "SELECT type FROM events WHERE type NOT LIKE 'user.%'") == []


@pytest.mark.slow
def test_the_sign_in_pages_form_action_allows_the_providers_origin_only_there(app, client, fake):
    person(app)
    policy = client.get("/login").headers["Content-Security-Policy"]
    assert f"form-action 'self' {fake.issuer};" in policy
    assert "form-action 'self';" in client.get("/password-reset").headers["Content-Security-Policy"]


@pytest.mark.slow
def test_an_authorization_endpoint_elsewhere_is_reached_by_a_link(app, client, fake):
    person(app)
    fake.authorization_endpoint = "https://login.example.net/authorize"
    try:
        response = client.post("/login/oidc", data={"csrf_token": csrf(client)})
    finally:
        fake.authorization_endpoint = None
    assert response.status_code == 200
    link = re.search(r'<a href="([^"]+)" id="continue-to-provider">', response.get_data(as_text=True)).group(1)
    assert link.replace("&amp;", "&").startswith("https://login.example.net/authorize?response_type=code&")
    assert callback(client, fake.grant(link.replace("&amp;", "&"))[0]).status_code == 303


@pytest.mark.slow
def test_claims_the_id_token_leaves_out_come_from_the_userinfo_endpoint(app, client, fake):
    person(app)
    moved = {"moved": ("email", "email_verified", "name")}
    assert sign_in(client, fake, user_info=moved).status_code == 303
    assert signed_in_as(client) == "Maya Admin"
    # The UserInfo endpoint speaking of someone else is refused.
    refused(sign_in(app.test_client(), fake, sub="s-other", user_info={**moved, "sub": "s-else"}), 401,
            "about someone else")


@pytest.mark.slow
def test_no_transaction_nor_writers_lock_is_held_while_the_provider_answers(app, client, fake, monkeypatch):
    from flask import g
    person(app)
    provider = app.extensions["okr.oidc"]
    held = []
    for name in ("start", "finish"):
        real = getattr(provider, name)

        def watched(*args, real=real):
            held.append((g.get("holds_writers_lock", False), g.db.in_transaction))
            return real(*args)
        monkeypatch.setattr(provider, name, watched)
    assert sign_in(client, fake).status_code == 303
    assert held == [(False, False), (False, False)]
    assert signed_in_as(client) == "Maya Admin"


@pytest.mark.slow
def test_auth_is_on_with_a_provider_even_before_any_password_or_key(app, client):
    person(app)
    assert client.get("/", headers=HTML).status_code == 303
    assert client.get("/v1/users").status_code == 401


@pytest.mark.slow
def test_a_later_sign_in_matches_the_subject_first(app, client, fake):
    person(app)
    assert sign_in(client, fake).status_code == 303
    client.post("/logout", data={"csrf_token": csrf(client)})
    # The provider now says another, unverified, email: the subject is who it is.
    assert sign_in(client, fake, email="maya.new@example.com", verified=False).status_code == 303
    assert signed_in_as(client) == "Maya Admin"


@pytest.mark.slow
def test_emails_match_under_the_email_rule(app, client, fake):
    person(app, "Émile", "\u00c9mile@Example.com", "editor")
    assert sign_in(client, fake, sub="s-emile", email="E\u0301mile@EXAMPLE.COM", name="E").status_code == 303
    assert signed_in_as(client) == "Émile"


@pytest.mark.slow
@pytest.mark.parametrize("create_users", [None, "viewer"])
def test_a_verified_email_matches_only_under_the_email_rule_not_full_case_folding(make_app, fake, create_users):
    # Issue 32: the owner of the mailbox juergen.strasse@ is not juergen.straße@'s owner, nor is émile@ Émile@.
    app = make_app(OIDC_CREATE_USERS=create_users)
    jurgen = person(app, "Jürgen", "juergen.straße@example.com", "editor")
    emile = person(app, "Émile", "Émile@example.com", "editor")
    for sub, email in (("s-strasse", "juergen.strasse@example.com"), ("s-emile", "émile@example.com")):
        response = sign_in(app.test_client(), fake, sub=sub, email=email, name="Someone Else")
        if create_users is None:
            refused(response, 403, f"There is no account here for {email}. Ask an admin for an invitation.")
        else:
            assert response.status_code == 303, text(response)[:1500]
    assert rows(app, "SELECT oidc_subject FROM users WHERE id IN (?, ?)", jurgen["id"], emile["id"]) == [
        (None,), (None,)]
    created = rows(app, "SELECT email, oidc_subject FROM users ORDER BY seq")[2:]
    assert created == ([] if create_users is None else [("juergen.strasse@example.com", "s-strasse"),
                                                          ("émile@example.com", "s-emile")])


# --- an account linked to another subject -------------------------------------------------------------


LINKED = "This account is linked to another sign-in; ask an admin."


@pytest.mark.slow
def test_a_verified_email_never_takes_over_an_account_linked_to_another_subject(app, client, fake, caplog):
    # Issue 32: another account at the provider with Maya's verified email (an alias, a recycled mailbox, a
    # second account its admins made) is refused, and Maya's link to her own subject stays.
    maya = person(app)
    assert sign_in(client, fake).status_code == 303
    before = rows(app, "SELECT * FROM users")
    intruder = app.test_client()
    with caplog.at_level(logging.WARNING, logger="okr"):
        response = sign_in(intruder, fake, sub="sub-mallory", name="Mallory")
    refused(response, 403, LINKED)
    assert "maya" not in text(response).lower() and "sub-maya" not in response.get_data(as_text=True)
    assert signed_in_as(intruder) is None
    assert rows(app, "SELECT * FROM users") == before
    assert rows(app, "SELECT oidc_issuer, oidc_subject FROM users") == [(fake.issuer, "sub-maya")]
    assert "sub-mallory" in caplog.text
    # The refusal is an event, kept although the answer is an error.
    [(resource_id, actor, data)] = rows(app, "SELECT resource_id, actor, data FROM events "
                                             "WHERE type = 'user.sign_in_refused'")
    assert resource_id == maya["id"]
    assert json.loads(actor) == {"type": "system", "id": None, "name": "single sign-on"}
    data = json.loads(data)
    assert (data["id"], data["email"], data["role"]) == (maya["id"], "maya@example.com", "admin")
    assert data["sign_in"] == {"issuer": fake.issuer, "subject": "sub-mallory"}
    assert "sub-maya" not in json.dumps(data)
    # Maya still signs in, and an admin reads the refusal in the activity feed.
    client.post("/logout", data={"csrf_token": csrf(client)})
    assert sign_in(client, fake).status_code == 303 and signed_in_as(client) == "Maya Admin"
    assert ("A first sign-in with the identity provider was refused for Maya Admin, whose account is linked to "
            "another sign-in") in text(client.get("/activity", headers=HTML))


@pytest.mark.slow
def test_after_okr_users_unlink_her_new_account_at_the_provider_links_and_signs_in(app, client, fake):
    maya = person(app)
    assert sign_in(client, fake).status_code == 303
    remade = app.test_client()
    refused(sign_in(remade, fake, sub="sub-maya-remade"), 403, LINKED)
    result = app.test_cli_runner().invoke(args=["users", "unlink", "maya@example.com"])
    assert result.exit_code == 0, result.output
    assert sign_in(remade, fake, sub="sub-maya-remade").status_code == 303 and signed_in_as(remade) == "Maya Admin"
    assert rows(app, "SELECT id, oidc_subject FROM users") == [(maya["id"], "sub-maya-remade")]


@pytest.mark.slow
def test_an_account_linked_at_another_issuer_is_not_taken_by_email_either(app, client, fake):
    maya = person(app)
    with app.app_context(), transaction() as db:
        users.set_oidc_subject(db, users.get(db, maya["id"]), "https://old-sso.example.com", "s-old")
    before = rows(app, "SELECT * FROM users")
    refused(sign_in(client, fake), 403, LINKED)
    assert rows(app, "SELECT * FROM users") == before
    assert len(rows(app, "SELECT * FROM events WHERE type = 'user.sign_in_refused'")) == 1


@pytest.mark.slow
def test_the_store_never_overwrites_a_link(app):
    maya = person(app)
    with app.app_context(), transaction() as db:
        linked = users.set_oidc_subject(db, users.get(db, maya["id"]), "https://sso.example.com", "s-1")
        assert (linked["oidc_issuer"], linked["oidc_subject"]) == ("https://sso.example.com", "s-1")
        assert users.set_oidc_subject(db, linked, "https://sso.example.com", "s-2") is None
    assert rows(app, "SELECT oidc_subject FROM users") == [("s-1",)]


# --- answers refused ----------------------------------------------------------------------------------


def refused(response, status, words):
    body = text(response)
    assert response.status_code == status, body[:1500]
    assert words in body, body[:1500]
    assert "Back to the sign-in page" in body


@pytest.mark.slow
def test_a_tampered_state_is_refused(app, client, fake):
    person(app)
    answer, _ = fake.grant(start(client))
    refused(callback(client, {**answer, "state": answer["state"][:-1] + "x"}), 400, "does not belong to a sign-in")
    assert fake.token_requests == [] and signed_in_as(client) is None
    # The start is used up: the right state after a wrong one is refused too.
    refused(callback(client, answer), 400, "or was already used")


@pytest.mark.slow
def test_an_answer_without_a_start_in_this_browser_is_refused(app, client, fake, make_app):
    person(app)
    answer, _ = fake.grant(start(app.test_client()))
    refused(callback(client, answer), 400, "does not belong to a sign-in started in this browser")


@pytest.mark.slow
def test_a_replayed_code_is_refused(app, client, fake):
    person(app)
    url = start(client)
    answer, _ = fake.grant(url)
    assert callback(client, answer).status_code == 303
    other = app.test_client()
    url2 = start(other)
    # The first code again, with the second sign-in's own state: the provider refuses it.
    state2 = parse_qs(urlsplit(url2).query)["state"][0]
    refused(callback(other, {"code": answer["code"], "state": state2}), 401, "may have been used already")
    assert signed_in_as(other) is None


@pytest.mark.slow
def test_the_provider_saying_no_is_shown(app, client, fake):
    url = start(client)
    state = parse_qs(urlsplit(url).query)["state"][0]
    refused(callback(client, {"error": "access_denied", "error_description": "The person said no", "state": state}),
            401, "did not sign you in: The person said no")


@pytest.mark.parametrize("claims, words", [
    ({"nonce": "another-nonce"}, "nonce"),
    ({"aud": "another-client"}, "audience (aud)"),
    ({"iss": "https://evil.example"}, "issuer (iss)"),
    ({"exp": int(time.time()) - 600}, "has expired"),
    ({"iat": int(time.time()) + 3600}, "time of issue (iat)"),
    ({"iat": None}, "time of issue (iat)"),
    ({"nonce": None}, "nonce"),
    ({"aud": ["another-client", CLIENT_ID]}, "azp"),
])
@pytest.mark.slow
def test_an_id_token_with_a_wrong_claim_signs_nobody_in(app, client, fake, claims, words):
    person(app)
    refused(sign_in(client, fake, claims=claims), 401, words)
    assert signed_in_as(client) is None


@pytest.mark.slow
def test_an_id_token_for_two_audiences_is_taken_when_it_names_this_client_as_azp(app, client, fake):
    person(app)
    assert sign_in(client, fake, claims={"aud": ["another", CLIENT_ID], "azp": CLIENT_ID}).status_code == 303


@pytest.mark.slow
def test_an_id_token_signed_with_another_key_signs_nobody_in(app, client, fake):
    person(app)
    stranger = new_key("k1")  # the provider's key id, another key
    refused(sign_in(client, fake, key=stranger), 401, "signature is not right")
    unsigned = ".".join(base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=").decode() for part in (
        {"alg": "none", "kid": "k1"}, {"iss": fake.issuer, "aud": CLIENT_ID, "sub": "sub-maya"})) + "."
    refused(sign_in(client, fake, raw_token=unsigned), 401, "could not be trusted")
    assert signed_in_as(client) is None


@pytest.mark.slow
def test_keys_are_cached_and_fetched_again_for_an_unknown_key_id(app, client, fake):
    person(app)
    assert sign_in(client, fake).status_code == 303
    assert sign_in(app.test_client(), fake).status_code == 303
    assert fake.jwks_fetches == 1 and fake.discovery_fetches == 1
    rotated = new_key("k2")
    fake.published = [fake.key, rotated]
    assert sign_in(app.test_client(), fake, key=rotated).status_code == 303
    assert fake.jwks_fetches == 2


@pytest.mark.slow
def test_an_unverified_email_is_refused(app, client, fake):
    person(app)
    refused(sign_in(client, fake, verified=False), 403, "has not verified the email address maya@example.com")
    refused(sign_in(client, fake, verified=None), 403, "has not verified")
    refused(sign_in(client, fake, email=None), 403, "did not tell this service your email address")
    assert rows(app, "SELECT oidc_subject FROM users") == [(None,)]


@pytest.mark.parametrize("claims", [
    {"email_verified": "true"}, {"email_verified": "1"}, {"email_verified": 1}, {"email_verified": "True"},
    {"email_verified": None, "xms_edov": True},  # Entra's claim from a provider that is not Microsoft
    {"email_verified": False, "xms_edov": True},
], ids=["the string true", "the string 1", "the number 1", "the string True", "xms_edov elsewhere",
        "xms_edov elsewhere with false"])
@pytest.mark.slow
def test_only_a_json_true_says_an_email_is_verified(app, client, fake, claims):
    # Issue 32: whoever can set their own claims at a provider (a custom attribute named email_verified or
    # xms_edov) must not get an email taken as verified.
    person(app)
    refused(sign_in(client, fake, claims=claims), 403, "has not verified the email address maya@example.com")
    moved = {"moved": ("email", *(name for name, value in claims.items() if value is not None))}
    refused(sign_in(app.test_client(), fake, claims=claims, user_info=moved), 403, "has not verified")
    assert rows(app, "SELECT oidc_subject FROM users") == [(None,)]
    assert signed_in_as(client) is None


TENANT = "8f2c6a51-3b7e-4d0a-9c1f-2e5d7a9b4c60"
MICROSOFT_ISSUERS = [f"https://login.microsoftonline.com/{TENANT}/v2.0", f"https://sts.windows.net/{TENANT}"]
LOOKALIKE_ISSUERS = [f"https://login.microsoftonline.com.example.net/{TENANT}/v2.0",
                     f"https://id.example.net/login.microsoftonline.com/{TENANT}/v2.0",
                     f"https://id.example.net/sts.windows.net/{TENANT}",
                     f"http://login.microsoftonline.com/{TENANT}/v2.0",
                     f"https://login.microsoftonline.com:8443/{TENANT}/v2.0",
                     f"https://login.microsoftonline.com@id.example.net/{TENANT}/v2.0"]


def as_issuer(make_app, fake, monkeypatch, issuer):
    """An app whose provider is the fake one, but whose issuer (the setting, the discovery document's and the
    ID token's iss) is issuer: Microsoft's address, which the tests cannot reach."""
    app = make_app(OIDC_ISSUER=issuer)
    with urlopen(fake.issuer + "/.well-known/openid-configuration", timeout=10) as answer:
        document = {**json.load(answer), "issuer": issuer.rstrip("/")}
    monkeypatch.setattr(app.extensions["okr.oidc"], "metadata", lambda: document)
    return app


def sign_in_anywhere(client, fake, **claims):
    """sign_in for a provider whose authorization endpoint is on another origin than its issuer: the page's
    link, followed."""
    response = client.post("/login/oidc", data={"csrf_token": csrf(client), "next": "/"})
    assert response.status_code == 200, response.get_data(as_text=True)[:2000]
    link = re.search(r'<a href="([^"]+)" id="continue-to-provider">', response.get_data(as_text=True)).group(1)
    query, _ = fake.grant(link.replace("&amp;", "&"), **claims)
    return callback(client, query)


@pytest.mark.slow
@pytest.mark.parametrize("issuer", MICROSOFT_ISSUERS)
def test_entras_domain_owner_verified_claim_counts_as_a_verified_email_from_microsoft(make_app, fake, monkeypatch,
                                                                                     issuer):
    app = as_issuer(make_app, fake, monkeypatch, issuer)
    person(app)
    client = app.test_client()
    assert sign_in_anywhere(client, fake, verified=None, claims={"iss": issuer, "xms_edov": True}).status_code == 303
    assert signed_in_as(client) == "Maya Admin"
    for claim in (False, "true", "1", 1):  # a JSON true only, there too
        refused(sign_in_anywhere(app.test_client(), fake, sub="s-2", verified=None,
                                 claims={"iss": issuer, "xms_edov": claim}), 403, "has not verified")


@pytest.mark.slow
@pytest.mark.parametrize("issuer", LOOKALIKE_ISSUERS)
def test_xms_edov_from_an_issuer_that_only_looks_like_microsofts_is_no_verified_email(make_app, fake, monkeypatch,
                                                                                      issuer):
    app = as_issuer(make_app, fake, monkeypatch, issuer)
    person(app)
    refused(sign_in_anywhere(app.test_client(), fake, verified=None, claims={"iss": issuer, "xms_edov": True}),
            403, "has not verified the email address maya@example.com")
    assert rows(app, "SELECT oidc_subject FROM users") == [(None,)]


@pytest.mark.slow
def test_an_unknown_email_is_told_to_ask_for_an_invitation(app, client, fake):
    person(app)
    refused(sign_in(client, fake, sub="s-new", email="new@example.com"), 403,
            "There is no account here for new@example.com. Ask an admin for an invitation.")
    assert len(rows(app, "SELECT * FROM users")) == 1


@pytest.mark.slow
@pytest.mark.parametrize("role", ["viewer", "editor"])
def test_with_create_users_an_unknown_person_is_added_with_that_role(make_app, fake, role):
    app = make_app(OIDC_CREATE_USERS=role)
    person(app)
    client = app.test_client()
    assert sign_in(client, fake, sub="s-new", email="Nia@Example.com", name="Nia Newcomer").status_code == 303
    assert signed_in_as(client) == "Nia Newcomer"
    [(user_id, email, found_role, subject)] = rows(
        app, "SELECT id, email, role, oidc_subject FROM users WHERE email = 'Nia@Example.com'")
    assert (found_role, subject) == (role, "s-new")
    [(actor, data)] = rows(app, "SELECT actor, data FROM events WHERE type = 'user.created' AND resource_id = ?",
                           user_id)
    assert json.loads(actor) == {"type": "system", "id": None, "name": "single sign-on"}
    assert json.loads(data)["role"] == role
    # The second time: the same user, no second one.
    client.post("/logout", data={"csrf_token": csrf(client)})
    assert sign_in(client, fake, sub="s-new", email="nia@example.com").status_code == 303
    assert len(rows(app, "SELECT * FROM users")) == 2


@pytest.mark.slow
def test_created_users_still_need_a_verified_email(make_app, fake):
    app = make_app(OIDC_CREATE_USERS="viewer")
    refused(sign_in(app.test_client(), fake, sub="s-new", email="x@example.com", verified=False), 403,
            "has not verified")
    assert rows(app, "SELECT * FROM users") == []


@pytest.mark.slow
def test_allowed_domains_limit_the_emails(make_app, fake):
    app = make_app(OIDC_ALLOWED_DOMAINS="example.com, @corp.example", OIDC_CREATE_USERS="viewer")
    person(app, "Out Sider", "out@elsewhere.org", "editor")
    client = app.test_client()
    refused(sign_in(client, fake, sub="s-out", email="out@elsewhere.org"), 403,
            "Addresses at elsewhere.org may not sign in here")
    assert sign_in(client, fake, sub="s-corp", email="c@CORP.example").status_code == 303


@pytest.mark.slow
def test_an_inactive_user_is_refused(app, client, fake):
    person(app)
    person(app, "Other Admin", "other@example.com")
    person(app, "Ina Active", "ina@example.com", "editor", active=False)
    refused(sign_in(client, fake, sub="s-ina", email="ina@example.com"), 403, "This account is deactivated")
    assert signed_in_as(client) is None
    # Known by subject, then deactivated: refused too, and the open session ended.
    assert sign_in(client, fake).status_code == 303
    with app.app_context(), transaction() as db:
        users.set_active(db, users.find_by_email(db, "maya@example.com"), False)
    assert signed_in_as(client) is None
    refused(sign_in(client, fake), 403, "This account is deactivated")


# --- a provider that is down --------------------------------------------------------------------------


@pytest.mark.slow
def test_a_provider_that_is_down_is_said_so_and_passwords_still_work(make_app, fake, caplog):
    app = make_app(OIDC_ISSUER="http://127.0.0.1:9")  # nothing listens on the discard port
    person(app, password=PASSWORD)
    client = app.test_client()
    with caplog.at_level(logging.WARNING, logger="okr"):
        response = client.post("/login/oidc", data={"csrf_token": csrf(client)}, headers=HTML)
    refused(response, 503, "Example SSO cannot be reached just now")
    assert "Sign in with your password meanwhile" in text(response)
    assert "127.0.0.1:9" in caplog.text and CLIENT_SECRET not in caplog.text
    assert client.post("/login", data={"csrf_token": csrf(client), "email": "maya@example.com",
                                       "password": PASSWORD, "next": "/"}).status_code == 303
    assert signed_in_as(client) == "Maya Admin"


@pytest.mark.slow
def test_a_provider_that_goes_down_between_the_start_and_the_callback(app, client, fake, monkeypatch):
    person(app)
    answer, _ = fake.grant(start(client))
    monkeypatch.setattr(identity_provider, "TIMEOUT", 2)
    provider = app.extensions["okr.oidc"]
    monkeypatch.setattr(provider, "metadata", lambda: {**provider.cached_metadata(),
                                                       "token_endpoint": "http://127.0.0.1:9/token"})
    refused(callback(client, answer), 503, "cannot be reached just now")


# --- password sign-in off -----------------------------------------------------------------------------


@pytest.mark.slow
def test_password_sign_in_off_hides_and_refuses_passwords(make_app, fake):
    app = make_app(PASSWORD_SIGN_IN="0")
    maya = person(app, password=PASSWORD)
    client = app.test_client()
    page = client.get("/login", headers=HTML).get_data(as_text=True)
    assert "Sign in with Example SSO" in page and 'name="password"' not in page and 'name="credential"' in page
    response = client.post("/login", data={"csrf_token": csrf(client), "email": "maya@example.com",
                                           "password": PASSWORD, "next": "/"})
    assert response.status_code == 403 and "Password sign-in is off" in text(response)
    assert signed_in_as(client) is None
    with app.app_context(), transaction() as db:
        token = invitations.create(db, users.get(db, maya["id"]))
    assert client.get(f"/invitations/{token}").status_code == 403
    assert client.get("/password-reset").status_code == 403
    assert sign_in(client, fake).status_code == 303
    assert 'name="current_password"' not in client.get("/account").get_data(as_text=True)
    # An admin's way in when the provider is down: okr users set-password, with password sign-in back on.
    result = app.test_cli_runner().invoke(args=["users", "set-password", "maya@example.com"],
                                          input="another horse battery\nanother horse battery\n")
    assert result.exit_code == 0, result.output


# --- signing out --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_signing_out_offers_to_sign_out_of_the_provider_too(app, client, fake):
    person(app)
    assert sign_in(client, fake).status_code == 303
    response = client.post("/logout", data={"csrf_token": csrf(client)})
    assert response.status_code == 303 and response.headers["Location"] == "/login"
    page = client.get("/login", headers=HTML).get_data(as_text=True)
    assert signed_in_as(client) is None
    link = re.search(r'<a href="([^"]+)" id="provider-sign-out">', page).group(1).replace("&amp;", "&")
    assert link.startswith(fake.issuer + "/session/end?")
    assert parse_qs(urlsplit(link).query) == {"client_id": [CLIENT_ID], "post_logout_redirect_uri": [PUBLIC + "/login"]}
    assert "provider-sign-out" not in client.get("/login").get_data(as_text=True)  # said once


@pytest.mark.slow
def test_a_password_sessions_sign_out_offers_no_provider_link(app, client, fake):
    person(app, password=PASSWORD)
    client.post("/login", data={"csrf_token": csrf(client), "email": "maya@example.com", "password": PASSWORD,
                                "next": "/"})
    response = client.post("/logout", data={"csrf_token": csrf(client)})
    assert "provider-sign-out" not in client.get(response.headers["Location"]).get_data(as_text=True)


# --- throttling ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_callbacks_without_a_sign_in_started_count_nothing(app, client, fake):
    # What another site's page can make a visitor's browser open, as often as it likes (<img src=...>).
    person(app, password=PASSWORD)
    for n in range(default("SIGN_IN_FAILURES_PER_ADDRESS") + 1):
        refused(callback(client, {"code": f"junk-{n}", "state": "forged"}), 400, "does not belong to a sign-in")
    assert rows(app, "SELECT count(*) FROM sign_in_failures") == [(0,)]
    assert sign_in(client, fake).status_code == 303
    other = app.test_client()  # from the same address
    assert other.post("/login", data={"csrf_token": csrf(other), "email": "maya@example.com",
                                      "password": PASSWORD}).status_code == 303


@pytest.mark.slow
def test_a_providers_refusals_are_no_password_guesses_and_hold_nobody(app, client, fake):
    person(app, password=PASSWORD)
    for _ in range(default("SIGN_IN_FAILURES_PER_ACCOUNT") + 1):
        answer, _ = fake.grant(start(client))
        refused(callback(client, {**answer, "state": answer["state"][:-1] + "x"}), 400, "does not belong")
        state = parse_qs(urlsplit(start(client)).query)["state"][0]
        refused(callback(client, {"error": "access_denied", "state": state}), 401, "did not sign you in")
        refused(sign_in(client, fake, claims={"nonce": "another-nonce"}), 401, "nonce")
        refused(sign_in(client, fake, email="maya@example.com", sub="sub-other", verified=False), 403,
                "has not verified")
    assert rows(app, "SELECT count(*) FROM sign_in_failures") == [(0,)]
    assert sign_in(client, fake).status_code == 303
    other = app.test_client()  # from the same address
    assert other.post("/login", data={"csrf_token": csrf(other), "email": "maya@example.com",
                                      "password": PASSWORD}).status_code == 303


# --- settings -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("config, words", [
    ({"OIDC_CLIENT_ID": None}, "OKR_OIDC_ISSUER needs OKR_OIDC_CLIENT_ID"),
    ({"OIDC_ISSUER": None}, "OKR_OIDC_CLIENT_ID is set but OKR_OIDC_ISSUER is not"),
    ({"PUBLIC_URL": None}, "OKR_OIDC_ISSUER needs OKR_PUBLIC_URL"),
    ({"PUBLIC_URL": "okr.example.com"}, "OKR_PUBLIC_URL okr.example.com must start with http:// or https://"),
    ({"OIDC_ISSUER": "ftp://id.example"}, "OKR_OIDC_ISSUER must be an http:// or https:// address"),
    ({"OIDC_CREATE_USERS": "admin"}, "OKR_OIDC_CREATE_USERS must be viewer or editor"),
    ({"OIDC_ALLOWED_DOMAINS": "a@example.com"}, "OKR_OIDC_ALLOWED_DOMAINS takes email domains"),
    ({"OIDC_ISSUER": None, "OIDC_CLIENT_ID": None, "OIDC_CLIENT_SECRET": None, "PASSWORD_SIGN_IN": "0"},
     "OKR_PASSWORD_SIGN_IN=0 needs OKR_OIDC_ISSUER"),
])
@pytest.mark.slow
def test_settings_that_cannot_work_are_refused_at_start(tmp_path, fake, clean_env, config, words):
    settings = {"DATABASE": tmp_path / "x.db", "OIDC_ISSUER": fake.issuer, "OIDC_CLIENT_ID": CLIENT_ID,
                "OIDC_CLIENT_SECRET": CLIENT_SECRET, "PUBLIC_URL": PUBLIC, **config}
    with pytest.raises(ValueError, match=re.escape(words)):
        create_app({k: v for k, v in settings.items() if v is not None})


@pytest.mark.slow
def test_the_public_url_defaults_to_the_base_url(make_app):
    app = make_app(PUBLIC_URL=None, BASE_URL="https://okr.example.com/okr/")
    assert app.extensions["okr.oidc"].settings.redirect_uri == "https://okr.example.com/okr/login/oidc/callback"


def test_okr_says_a_bad_setting_in_one_line_without_the_secret(monkeypatch, clean_env, capsys, tmp_path):
    monkeypatch.setenv("OKR_OIDC_ISSUER", "https://id.example.com")
    monkeypatch.setenv("OKR_OIDC_CLIENT_SECRET", "very-secret-value")
    with pytest.raises(SystemExit) as stopped:
        main(["--database", str(tmp_path / "x.db"), "users", "list"])
    assert stopped.value.code == "okr: OKR_OIDC_ISSUER needs OKR_OIDC_CLIENT_ID, the client id the provider gave " \
                                 "this service"


def test_the_flags_set_the_provider(tmp_path, clean_env, monkeypatch):
    import okr.__main__ as program
    made = {}
    monkeypatch.setattr(program, "run_server", lambda app, args: made.setdefault("app", app) and 0)
    program.main(["--database", str(tmp_path / "x.db"), "--oidc-issuer", "https://id.example.com/",
                  "--oidc-client-id", "okr", "--public-url", "https://okr.example.com", "--oidc-name", "Acme SSO",
                  "--oidc-create-users", "viewer", "--oidc-allowed-domain", "acme.example",
                  "--oidc-allowed-domain", "acme.test", "--no-password-sign-in"])
    settings = made["app"].extensions["okr.oidc"].settings
    assert (settings.issuer, settings.client_id, settings.name, settings.create_users, settings.allowed_domains) == (
        "https://id.example.com", "okr", "Acme SSO", "viewer", ("acme.example", "acme.test"))
    assert made["app"].config["PASSWORD_SIGN_IN"] is False
    assert "secret" not in repr(settings)


@pytest.mark.slow
def test_a_server_without_a_provider_never_imports_the_oidc_libraries(tmp_path, clean_env):
    import subprocess
    import sys
    code = ("import sys; from okr import create_app; app = create_app({'DATABASE': sys.argv[1]}); "
            "print(sorted(m for m in ('authlib', 'joserfc', 'requests') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x.db")], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.strip() == "[]"  # a third of a second that every command would pay at start
