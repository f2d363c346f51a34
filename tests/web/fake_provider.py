"""A fake OpenID provider for tests/web/test_oidc.py: discovery, keys, a token endpoint that checks the client's
secret, the code's PKCE verifier and its single use, and an end-session endpoint. The test plays the browser and
the person: it reads the authorization URL okr sends the browser to, and grants a code with the claims it
wants (tests/oidc has the real provider)."""
import base64
import hashlib
import secrets
import time
from urllib.parse import parse_qs, urlsplit

from flask import Flask, jsonify, request
from joserfc import jwt
from joserfc.jwk import RSAKey

CLIENT_ID, CLIENT_SECRET = "okr-dashboard", "fake-client-secret-1234"


def new_key(kid):
    return RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"})


class FakeProvider:
    def __init__(self):
        self.issuer = None  # the server's URL, once it serves
        self.key = new_key("k1")
        self.published = [self.key]
        self.codes = {}
        self.jwks_fetches = 0
        self.discovery_fetches = 0
        self.token_requests = []
        self.authorization_endpoint = None  # the issuer's /auth unless a test says otherwise
        self.user_info = {}  # access token -> the UserInfo endpoint's claims
        self.app = self.make_app()

    def make_app(self):
        app = Flask("fake_provider")

        @app.get("/.well-known/openid-configuration")
        def discovery():
            self.discovery_fetches += 1
            return jsonify(issuer=self.issuer,
                           authorization_endpoint=self.authorization_endpoint or self.issuer + "/auth",
                           token_endpoint=self.issuer + "/token", jwks_uri=self.issuer + "/jwks",
                           userinfo_endpoint=self.issuer + "/me",
                           end_session_endpoint=self.issuer + "/session/end",
                           id_token_signing_alg_values_supported=["RS256"],
                           token_endpoint_auth_methods_supported=["client_secret_basic"])

        @app.get("/jwks")
        def jwks():
            self.jwks_fetches += 1
            return jsonify(keys=[key.as_dict(private=False) for key in self.published])

        @app.post("/token")
        def token():
            self.token_requests.append(dict(request.form))
            if request.authorization is None or (request.authorization.username, request.authorization.password) \
                    != (CLIENT_ID, CLIENT_SECRET):
                return jsonify(error="invalid_client"), 401
            grant = self.codes.pop(request.form.get("code", ""), None)  # a code works once
            if grant is None or request.form.get("grant_type") != "authorization_code":
                return jsonify(error="invalid_grant", error_description="grant request is invalid"), 400
            verifier = request.form.get("code_verifier", "")
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if challenge != grant["code_challenge"] or request.form.get("redirect_uri") != grant["redirect_uri"]:
                return jsonify(error="invalid_grant", error_description="PKCE verification failed"), 400
            access_token = "at-" + secrets.token_hex(8)
            self.user_info[access_token] = grant["user_info"]
            return jsonify(access_token=access_token, token_type="Bearer", expires_in=60, id_token=grant["id_token"])

        @app.get("/me")
        def me():
            found = self.user_info.get((request.headers.get("Authorization") or "").removeprefix("Bearer "))
            return (jsonify(found), 200) if found is not None else (jsonify(error="invalid_token"), 401)

        return app

    def id_token(self, claims, key=None, header=None):
        key = key or self.key
        return jwt.encode({"alg": "RS256", "kid": key.kid, **(header or {})}, claims, key)

    def grant(self, authorization_url, sub="sub-maya", email="maya@example.com", verified=True, name="Maya Admin",
              claims=None, key=None, header=None, raw_token=None, user_info=None):
        """Plays the person signing in at the provider: a code for the authorization request, whose ID token
        has these claims (claims= adds or replaces some, None values drop them; user_info= moves some to the
        UserInfo endpoint, which answers them with the sub given there); the callback's query."""
        query = {name: values[0] for name, values in parse_qs(urlsplit(authorization_url).query).items()}
        now = int(time.time())
        made = {"iss": self.issuer, "aud": CLIENT_ID, "sub": sub, "iat": now, "exp": now + 300,
                "nonce": query["nonce"], "email": email, "email_verified": verified, "name": name}
        made.update(claims or {})
        made = {k: v for k, v in made.items() if v is not None}
        info = {"sub": sub}
        for name in (user_info or {}).get("moved", ()):
            info[name] = made.pop(name)
        info.update({k: v for k, v in (user_info or {}).items() if k != "moved"})
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"code_challenge": query["code_challenge"], "redirect_uri": query["redirect_uri"],
                            "id_token": raw_token or self.id_token(made, key, header), "user_info": info}
        return {"code": code, "state": query["state"]}, query
