"""What the OAuth tests share: a person signed in in a browser (Flask's test client), a client registered, a PKCE
pair, the consent page's path and answer, the code it sends back, a token request, and whoami over /mcp."""
import base64
import hashlib
import re
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

from helpers import user_with_password

PASSWORD = "correct horse battery staple"
HTML = {"Accept": "text/html"}
REDIRECT = "http://127.0.0.1:33418/callback"
MCP = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
WHOAMI = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}


def csrf(client, path="/login"):
    page = client.get(path, headers=HTML).get_data(as_text=True)
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


def browser_of(app, role="editor", email="maya@example.com"):
    """A browser signed in as a new person with this role."""
    user_with_password(app, PASSWORD, "Maya Lee", email, role)
    browser = app.test_client()
    signed = browser.post("/login", data={"csrf_token": csrf(browser), "email": email, "password": PASSWORD,
                                          "next": "/"})
    assert signed.status_code == 303
    return browser


def register(client, redirect_uris=(REDIRECT,), **extra):
    return client.post("/oauth/register", json={"client_name": "Claude", "redirect_uris": list(redirect_uris),
                                                "token_endpoint_auth_method": "none",
                                                "grant_types": ["authorization_code", "refresh_token"],
                                                "response_types": ["code"], **extra})


def pkce():
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize_path(client_id, challenge, scope="okr:read okr:write", redirect_uri=REDIRECT, **extra):
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "state": "xyz",
             "scope": scope, "code_challenge": challenge, "code_challenge_method": "S256",
             "resource": "http://localhost/mcp", **extra}
    return "/oauth/authorize?" + urlencode({k: v for k, v in query.items() if v is not None}, doseq=True)


def consent(browser, path, decision="allow", rights="write"):
    return browser.post(path, data={"csrf_token": csrf(browser, path), "decision": decision, "rights": rights},
                        headers=HTML)


def code_from(answer):
    assert answer.status_code == 302, answer.get_data(as_text=True)
    location = urlsplit(answer.headers["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT
    return parse_qs(location.query)


def tokens(client, **form):
    return client.post("/oauth/token", data=form)


def whoami(client, token):
    return client.post("/mcp", json=WHOAMI, headers={**MCP, "Authorization": f"Bearer {token}"})


def connect(client, browser, rights="write", redirect_uri=REDIRECT):
    """(client_id, the token answer's JSON): a client registered, allowed by the browser's person, its code
    exchanged."""
    client_id = register(client, (redirect_uri,)).get_json()["client_id"]
    verifier, challenge = pkce()
    answer = parse_qs(urlsplit(consent(browser, authorize_path(client_id, challenge, redirect_uri=redirect_uri),
                                       rights=rights).headers["Location"]).query)
    issued = tokens(client, grant_type="authorization_code", code=answer["code"][0], redirect_uri=redirect_uri,
                    client_id=client_id, code_verifier=verifier)
    assert issued.status_code == 200, issued.get_json()
    return client_id, issued.get_json()
