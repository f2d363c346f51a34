"""Sign-in with an identity provider over OpenID Connect: its settings, its discovery document and keys, and the
authorization code flow (PKCE S256, state, nonce) through Authlib, with the ID token verified by joserfc (the
JOSE library Authlib itself now uses). Flask-free: okr.accounts.single_sign_on is the request's side of it,
okr.web.oidc_pages has the pages.

Every call to the provider has TIMEOUT: a provider that is down makes a page that says so, never a hung
server. The discovery document is kept METADATA_SECONDS, the provider's keys (JWKS) until a token names a key
id they lack, which fetches them again once (the provider rotated its keys).

Authlib, joserfc and requests are imported when first used: together they take a third of a second to
import, which a server without a provider, and every command, would otherwise pay at start.
"""
import secrets
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

from ..proxies import public_url
from ..rules.email_addresses import email_key

TIMEOUT = 10
SCOPE = "openid email profile"
CALLBACK_PATH = "/login/oidc/callback"
SIGNED_OUT_PATH = "/login"
METADATA_SECONDS = 3600
# Clocks of the provider and this server may differ by this much (exp and iat).
LEEWAY_SECONDS = 120
# Only signatures with the provider's public keys: never "none", nor HS256 (a key this server would share).
SIGNING_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
CREATABLE_ROLES = ("viewer", "editor")
# Microsoft Entra's issuers (https://login.microsoftonline.com/{tenant}/v2.0, and the v1 tokens'
# https://sts.windows.net/{tenant}/): the only ones whose xms_edov claim says a verified email.
MICROSOFT_ISSUER_HOSTS = frozenset({"login.microsoftonline.com", "sts.windows.net"})


class ProviderDown(Exception):
    """The provider did not answer, or not with what OpenID Connect says; the message is for the log."""


class Refused(Exception):
    """The provider's answer did not sign anyone in; the message is for the page."""


@dataclass(frozen=True)
class Settings:
    issuer: str
    client_id: str
    client_secret: str | None = field(repr=False)  # never in a log line or a traceback's locals
    name: str
    redirect_uri: str
    signed_out_uri: str
    create_users: str | None
    allowed_domains: tuple


def plain_url(value, setting):
    """value as an http(s) URL with a host and neither query nor fragment, without a trailing slash."""
    text = str(value).strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"{setting} must be an http:// or https:// address such as https://okr.example.com, "
                         f"not {text!r}")
    return text.rstrip("/")


def domain_list(value):
    if not value:
        return ()
    names = value.split(",") if isinstance(value, str) else value
    domains = []
    for name in names:
        domain = email_key(name.strip().lstrip("@")).rstrip(".")  # the email rule, as email_domain
        if not domain:
            continue
        if "@" in domain or any(c.isspace() for c in domain) or "." not in domain:
            raise ValueError(f"OKR_OIDC_ALLOWED_DOMAINS takes email domains such as example.com, not {name!r}")
        domains.append(domain)
    return tuple(domains)


def settings(config):
    """The provider's Settings from the app's config, or None when OIDC_ISSUER is not set; ValueError with one
    sentence for a combination that cannot work."""
    issuer = (config.get("OIDC_ISSUER") or "").strip()
    create_users = (config.get("OIDC_CREATE_USERS") or "").strip().lower() or None
    if create_users in ("0", "off", "no", "false"):
        create_users = None
    if not issuer:
        for key in ("OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET", "OIDC_ALLOWED_DOMAINS"):
            if config.get(key):
                raise ValueError(f"OKR_{key} is set but OKR_OIDC_ISSUER is not: set both, or neither")
        if create_users:
            raise ValueError("OKR_OIDC_CREATE_USERS is set but OKR_OIDC_ISSUER is not: set both, or neither")
        return None
    issuer = plain_url(issuer, "OKR_OIDC_ISSUER")
    client_id = (config.get("OIDC_CLIENT_ID") or "").strip()
    if not client_id:
        raise ValueError("OKR_OIDC_ISSUER needs OKR_OIDC_CLIENT_ID, the client id the provider gave this service")
    public = public_url(config)
    if not public:
        raise ValueError("OKR_OIDC_ISSUER needs OKR_PUBLIC_URL, this service's address as browsers see it (the "
                         f"redirect URI is it followed by {CALLBACK_PATH})")
    if create_users is not None and create_users not in CREATABLE_ROLES:
        raise ValueError(f"OKR_OIDC_CREATE_USERS must be viewer or editor (or unset), not {create_users!r}")
    name = " ".join(str(config.get("OIDC_NAME") or "").split()) or "your company account"
    return Settings(issuer=issuer, client_id=client_id, client_secret=config.get("OIDC_CLIENT_SECRET") or None,
                    name=name, redirect_uri=public + CALLBACK_PATH, signed_out_uri=public + SIGNED_OUT_PATH,
                    create_users=create_users, allowed_domains=domain_list(config.get("OIDC_ALLOWED_DOMAINS")))


@dataclass
class Pending:
    """What the browser's session keeps between the start and the callback (none of it is secret to the
    browser, which the session cookie's signature keeps from changing it)."""
    state: str
    nonce: str
    verifier: str


def get_json(url, what):
    import requests
    try:
        response = requests.get(url, timeout=TIMEOUT, headers={"Accept": "application/json"})
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as error:
        raise ProviderDown(f"{what} at {url}: {error}") from None
    if not isinstance(document, dict):
        raise ProviderDown(f"{what} at {url} is not a JSON object")
    return document


class Provider:
    """One identity provider, shared by the app's threads: its metadata and keys, cached."""

    def __init__(self, settings):
        self.settings = settings
        self.lock = threading.Lock()
        self.metadata_cache, self.metadata_until = None, 0.0
        self.keys_cache = None

    # --- discovery and keys ------------------------------------------------------------------------------

    def metadata(self):
        """The discovery document, fetched at most every METADATA_SECONDS; ProviderDown when it cannot be had."""
        with self.lock:
            if self.metadata_cache is not None and time.monotonic() < self.metadata_until:
                return self.metadata_cache
        url = self.settings.issuer + "/.well-known/openid-configuration"
        document = get_json(url, "the discovery document")
        if str(document.get("issuer", "")).rstrip("/") != self.settings.issuer:
            raise ProviderDown(f"the discovery document at {url} names the issuer {document.get('issuer')!r}, "
                               f"not {self.settings.issuer!r}")
        for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            value = document.get(key)
            if not isinstance(value, str) or urlsplit(value).scheme not in ("http", "https"):
                raise ProviderDown(f"the discovery document at {url} has no {key}")
        with self.lock:
            self.metadata_cache, self.metadata_until = document, time.monotonic() + METADATA_SECONDS
        return document

    def cached_metadata(self):
        """The discovery document if one is kept, else None: for what must not wait on the provider."""
        with self.lock:
            return self.metadata_cache

    def key_set(self, metadata, refetch=False):
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet
        with self.lock:
            if self.keys_cache is not None and not refetch:
                return self.keys_cache
        document = get_json(metadata["jwks_uri"], "the provider's keys")
        try:
            keys = KeySet.import_key_set(
                {"keys": [k for k in document.get("keys", []) if isinstance(k, dict) and k.get("use", "sig") == "sig"
                          and k.get("kty") in ("RSA", "EC", "OKP")]})
        except (JoseError, ValueError, TypeError) as error:
            raise ProviderDown(f"the provider's keys at {metadata['jwks_uri']} cannot be read: {error}") from None
        with self.lock:
            self.keys_cache = keys
        return keys

    # --- the flow ----------------------------------------------------------------------------------------

    def client(self, metadata):
        """Authlib's OAuth 2 client for one sign-in, with PKCE S256 and the way the provider takes the secret."""
        from authlib.integrations.requests_client import OAuth2Session
        methods = metadata.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        if self.settings.client_secret is None:
            method = "none"  # a public client: PKCE alone binds the code to this browser's sign-in
        elif "client_secret_basic" in methods or "client_secret_post" not in methods:
            method = "client_secret_basic"
        else:
            method = "client_secret_post"
        return OAuth2Session(self.settings.client_id, self.settings.client_secret, scope=SCOPE,
                             redirect_uri=self.settings.redirect_uri, code_challenge_method="S256",
                             token_endpoint_auth_method=method)

    def start(self):
        """(the provider's authorization URL to send the browser to, the Pending to keep in its session)."""
        metadata = self.metadata()
        pending = Pending(state=secrets.token_urlsafe(32), nonce=secrets.token_urlsafe(32),
                          verifier=secrets.token_urlsafe(64))
        with self.client(metadata) as client:
            url, _ = client.create_authorization_url(metadata["authorization_endpoint"], state=pending.state,
                                                     code_verifier=pending.verifier, nonce=pending.nonce)
        return url, pending

    def finish(self, code, pending):
        """The verified ID token's claims for the code the callback got; Refused or ProviderDown otherwise."""
        import requests
        from authlib.integrations.requests_client import OAuthError
        metadata = self.metadata()
        try:
            with self.client(metadata) as client:
                token = client.fetch_token(metadata["token_endpoint"], code=code, code_verifier=pending.verifier,
                                           timeout=TIMEOUT)
        except OAuthError as error:
            raise Refused(f"{self.settings.name} did not accept this sign-in's code ({error.error}): it may "
                          "have been used already, or be too old.") from None
        except (requests.RequestException, ValueError) as error:
            raise ProviderDown(f"the token endpoint {metadata['token_endpoint']}: {error}") from None
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise Refused(f"{self.settings.name} sent no ID token.")
        claims = self.verify(id_token, pending.nonce, metadata)
        if "email" not in claims and metadata.get("userinfo_endpoint") and token.get("access_token"):
            claims = {**self.user_info(metadata, token["access_token"], claims["sub"]), **claims}
        return claims

    def user_info(self, metadata, access_token, subject):
        """The UserInfo endpoint's claims, for a provider that keeps the scopes' claims (email, name) out of the
        ID token, as OpenID Connect allows; only those of the ID token's subject."""
        import requests
        try:
            response = requests.get(metadata["userinfo_endpoint"], timeout=TIMEOUT,
                                    headers={"Authorization": f"Bearer {access_token}", "Accept": "application/json"})
            response.raise_for_status()
            info = response.json()
        except (requests.RequestException, ValueError) as error:
            raise ProviderDown(f"the userinfo endpoint {metadata['userinfo_endpoint']}: {error}") from None
        if not isinstance(info, dict) or info.get("sub") != subject:
            raise Refused("The provider's user information is about someone else (sub).")
        return {key: info[key] for key in ("email", "email_verified", "xms_edov", "name", "given_name",
                                            "family_name", "preferred_username") if key in info}

    def verify(self, id_token, nonce, metadata):
        """The ID token's claims once its signature (the provider's keys), iss, aud, exp, iat and nonce are
        right; Refused saying which is not."""
        from joserfc import jws, jwt
        from joserfc.errors import ExpiredTokenError, InvalidClaimError, JoseError, MissingClaimError
        algorithms = [a for a in metadata.get("id_token_signing_alg_values_supported") or ["RS256"]
                      if a in SIGNING_ALGORITHMS] or ["RS256"]
        try:
            header = jws.extract_compact(id_token.encode("ascii")).protected
        except (JoseError, ValueError, UnicodeError):
            raise Refused("The ID token is not a signed token.") from None
        keys = self.key_set(metadata)
        kid = header.get("kid")
        if kid is not None and not any(key.kid == kid for key in keys):
            keys = self.key_set(metadata, refetch=True)  # the provider rotated its keys
        try:
            claims = jwt.decode(id_token, keys, algorithms=algorithms).claims
        except JoseError as error:
            raise Refused(f"The ID token's signature is not right ({error.error}).") from None
        registry = jwt.JWTClaimsRegistry(
            leeway=LEEWAY_SECONDS,
            iss={"essential": True, "values": [metadata["issuer"], self.settings.issuer]},
            aud={"essential": True, "value": self.settings.client_id},
            sub={"essential": True}, exp={"essential": True}, iat={"essential": True},
            nonce={"essential": True, "value": nonce})
        try:
            registry.validate(claims)
        except ExpiredTokenError:
            raise Refused("The ID token has expired (is this server's clock right?).") from None
        except (MissingClaimError, InvalidClaimError) as error:
            raise Refused(f"The ID token's {claim_words(error)} is not right.") from None
        except JoseError as error:
            raise Refused(f"The ID token is not right ({error.error}).") from None
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.settings.client_id:
            raise Refused("The ID token was made for another service (azp).")
        if not isinstance(claims["sub"], str):
            raise Refused("The ID token's subject (sub) is not right.")
        return claims

    def sign_out_url(self):
        """The provider's end_session_endpoint, to sign out there too and come back to /login; None when the
        provider has none (or its document is not at hand: signing out never waits on the provider)."""
        metadata = self.cached_metadata()
        endpoint = (metadata or {}).get("end_session_endpoint")
        if not isinstance(endpoint, str) or urlsplit(endpoint).scheme not in ("http", "https"):
            return None
        # client_id rather than id_token_hint (RP-Initiated Logout 1.0): no ID token is kept after sign-in.
        query = urlencode({"client_id": self.settings.client_id,
                           "post_logout_redirect_uri": self.settings.signed_out_uri})
        return endpoint + ("&" if "?" in endpoint else "?") + query


CLAIM_WORDS = {"iss": "issuer (iss)", "aud": "audience (aud)", "nonce": "nonce", "iat": "time of issue (iat)",
               "exp": "expiry (exp)", "sub": "subject (sub)"}


def claim_words(error):
    name = getattr(error, "claim", None) or str(error)
    return ", ".join(CLAIM_WORDS.get(part, part) for part in str(name).split(","))


def origin(url):
    """scheme://host[:port] of a URL, for a Content-Security-Policy source."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def from_microsoft(issuer):
    """Whether an issuer is Microsoft Entra's: its parsed host, never a substring of the URL (which
    https://login.microsoftonline.com.example.net/ or https://example.net/login.microsoftonline.com/ hold)."""
    parts = urlsplit(issuer) if isinstance(issuer, str) else None
    return (parts is not None and parts.scheme == "https" and parts.hostname in MICROSOFT_ISSUER_HOSTS
            and parts.netloc.lower() == parts.hostname)  # no port, no user name


def verified_email(claims):
    """The ID token's email if the provider says it verified it, else None. Only a JSON true says so, never
    the strings "true" or "1": a provider that lets people set their own claims may send those. Microsoft
    Entra sends no email_verified but, when asked, xms_edov (the email's domain is one its owner verified in
    the tenant), which is taken from a Microsoft issuer only: from another, it is just a name anyone's
    provider may use."""
    email = claims.get("email")
    if not isinstance(email, str) or not email.strip():
        return None
    verified = claims.get("email_verified") is True or (
        claims.get("xms_edov") is True and from_microsoft(claims.get("iss")))
    return email.strip() if verified else None


def display_name(claims, email):
    for value in (claims.get("name"), " ".join(str(claims.get(k) or "") for k in ("given_name", "family_name")),
                  claims.get("preferred_username")):
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
    return email.partition("@")[0]
