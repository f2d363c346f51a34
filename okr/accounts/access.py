"""Who may do what, in one place: the API's signature check, the pages' guards and `okr serve` all ask here.

Auth is on, for /v1 and the pages alike, as soon as any API key has been created (revoked ones included), any
user has a password or an invitation or password reset link, or sign-in with an identity provider is set up.
Before that the service is open, for a laptop on loopback, and whoever uses it may do anything; but never for
a server that was told of a public name or address or of a proxy, nor for a request that came through a
proxy (sign_in_needed_because decides, in one place).

Once it is on, every request has an Actor: the person signed in (a password session),
or the API key that signed the request or opened the session, and the key's user if it
has one. What an actor may do is its role's:
- viewer: read (GET, HEAD, OPTIONS), and act on their own account (change their password, sign out
  everywhere, turn their weekly emails off or on, mark their notifications read), which every role may;
- editor: read, and write cycles, teams and their members, objectives, key results, check-ins, comments
  (changing or deleting only their own comments);
- admin: all of that, change or delete anyone's comment, and manage people (the /people page).
A service key (no user) writes like an editor but manages no people; a read-only key
only reads, whatever its user's role. An inactive user's keys and sessions are refused.
"""
import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from flask import current_app, g, has_request_context, request
from werkzeug.exceptions import Forbidden

from .. import proxies
from ..store import keys, visibility, ways_in

# The methods that only read: a viewer's and a read-only key's, and the requests whose transaction reads.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Compared against when the credential is unknown, so timing does not tell.
UNKNOWN_KEY_SECRET = secrets.token_hex(32)


@dataclass(frozen=True)
class Actor:
    """Who makes a request: user_id, user_name and role (None for a service key), and the key's credential,
    name and read_only when a key signed the request or opened the session (else None); via, the assistant's
    name when an AI assistant acts for the person (okr.accounts.assistant_grants)."""

    user_id: str | None
    user_name: str | None
    role: str | None
    credential: str | None = None
    key_name: str | None = None
    read_only: bool = False
    via: str | None = None


OPEN_ACCESS = {"type": "system", "id": None, "name": "open access"}


def event_actor(actor):
    """How the activity feed names an actor (None: sign-in is off): a person, with the key they signed with
    if any and the assistant that acted for them ("via"); a service key; or the system."""
    if actor is None:
        return OPEN_ACCESS
    if actor.user_id is None:
        return {"type": "key", "id": actor.credential, "name": actor.key_name}
    named = {"type": "user", "id": actor.user_id, "name": actor.user_name}
    if actor.credential is not None:
        named["key"] = {"id": actor.credential, "name": actor.key_name}
    if actor.via is not None:
        named["via"] = actor.via
    return named


def current_actor():
    """This request's actor: None when auth is off (or the request was not signed in)."""
    return g.get("actor")


def person_id():
    """The id of the person this request acts for (a user's key or session), or None."""
    actor = g.get("actor")
    return None if actor is None else actor.user_id


def key_actor(key):
    """The actor of a live key (find_live's row); None when the key's user is deactivated."""
    if key["user_id"] is not None and not key["is_active"]:
        return None
    return Actor(key["user_id"], key["user_name"], key["role"], key["credential"], key["name"],
                 bool(key["read_only"]))


def user_actor(user):
    """The actor of a user signed in with a password; None when the user is deactivated."""
    return Actor(user["id"], user["name"], user["role"]) if user["is_active"] else None


def auth_enabled(db):
    """Whether this request (or, outside one, the server) needs a sign-in: sign_in_needed_because says why."""
    return sign_in_needed_because(db, request.environ if has_request_context() else None) is not None


# Why a stored way in ends open mode, in the words of the server's log.
STORED_WAYS_IN = {
    "key": "an API key exists",
    "password": "someone has a password",
    "invitation": "an invitation link is outstanding (okr users invite)",
    "reset": "a password reset link is outstanding",
}
THROUGH_A_PROXY = "the request came through a proxy (it carries Forwarded, Via, X-Real-IP or X-Forwarded-*)"


def sign_in_needed_because(db, environ=None):
    """Why a sign-in is needed, in words; None while the service is open. The one place that decides.

    environ: the request's; None asks for the server as a whole (its log at start). Open mode is for a laptop:
    it ends for good once anything to sign in with exists (a key, a password, an invitation or a reset link,
    an identity provider), so that the first admin comes in only through her link or okr users set-password.
    Nor is it ever open when the server was given a public name or address (--allowed-host, OKR_PUBLIC_URL,
    OKR_BASE_URL) or a proxy (--trusted-proxies), nor to a request that came through a proxy: a proxy on the
    same machine reaches the server from loopback, and nginx's defaults send neither a forwarding header nor
    the public Host.
    """
    extensions = current_app.extensions
    stored = extensions.get("okr_auth_on")
    if stored:
        return stored
    if extensions.get("okr.oidc") is not None:
        return "sign-in with an identity provider is set up"
    way_in = ways_in.first(db)
    if way_in is not None:
        extensions["okr_auth_on"] = STORED_WAYS_IN[way_in]  # never reverts: the app remembers
        return STORED_WAYS_IN[way_in]
    public = public_setting(current_app.config)
    if public is not None:
        return public
    if environ is not None and proxies.came_through_a_proxy(environ):
        return THROUGH_A_PROXY
    return None


def public_setting(config):
    """The setting that says the server is reached from beyond this machine, in words; None when none does."""
    for name in sorted(config["ALLOWED_HOSTS"]):
        if not is_loopback(name):
            return f"it answers for {name} (--allowed-host)"
    for key, flag in (("PUBLIC_URL", "--public-url"), ("BASE_URL", "OKR_BASE_URL")):
        url = config.get(key)
        if url and not is_loopback(url_host(url)):
            return f"its public address is {url} ({flag})"
    if config["TRUSTED_PROXIES"]:
        return "it is told of a proxy (--trusted-proxies)"
    return None


def url_host(url):
    """The host of a URL, without brackets; "" for one that has none."""
    try:
        return urlsplit(str(url).strip()).hostname or ""
    except ValueError:
        return ""


def live_key(db, credential):
    """The key with this credential that is not revoked, or None."""
    return keys.find_live(db, credential)


def secret_to_compare(key):
    """What a key's secret is compared with: its own, or a stand-in for an unknown key (the same time)."""
    return key["secret"] if key is not None else UNKNOWN_KEY_SECRET


def key_for_secret(db, credential, secret):
    """The live key whose credential and secret these are, or None; the comparison takes constant time."""
    key = live_key(db, credential)
    same = hmac.compare_digest(secret_to_compare(key).encode("utf-8"), secret.encode("utf-8"))
    return key if same and key is not None else None


def viewer_limit(actor):
    """The person whose sight limits what this actor reads (okr.store.visibility), or None when it sees every
    objective: an admin, a service key, or anyone while sign-in is off."""
    if actor is None or actor.user_id is None:
        return None
    return visibility.limit_of(actor.user_id, actor.role)


def may_write(actor, method):
    """Whether this actor (None: auth is off) may make a request with this method."""
    return method in READ_METHODS or actor is None or (not actor.read_only and actor.role != "viewer")


def write_refusal(actor, method):
    """Why this actor may not make a request with this method, for people; None when it may."""
    if may_write(actor, method):
        return None
    if actor.read_only and actor.via is not None and actor.role != "viewer":
        return "this assistant was connected to read only; connect it again to read and write"
    if actor.read_only and actor.via is None:
        return "this API key is read-only"
    return "a viewer may look but not change anything; an admin can make you an editor"


# The API's writes that act on the signer's own things (okr.api.me), which a viewer may make too
# (may_change_own_account): never a read-only key.
OWN_API_WRITES = frozenset({"/v1/me/notifications/read"})


def require_write(actor, method, path=None):
    """Forbidden unless this actor may make a request with this method (to the API's path: OWN_API_WRITES are a
    person's own, which a viewer may make)."""
    if path in OWN_API_WRITES and may_change_own_account(actor):
        return
    refusal = write_refusal(actor, method)
    if refusal is not None:
        raise Forbidden(refusal)


# The rights a page may need beyond reading, each as a refusal names it: what was refused.
RIGHTS = {"editing": "change anything", "people": "manage people (invite them, change their roles, deactivate "
                                                  "them)",
          "webhooks": "manage webhooks", "boards": "make or revoke board links", "reopening": "reopen a closed cycle",
          "connections": "manage the connections of metric sources",
          "sources": "work with a key result's source (its query, its evidence)"}


def refusal(actor, right):
    """Why a page refuses this actor a right of RIGHTS, in a sentence for people naming what was refused: the one
    place that words the pages' refusals."""
    what = RIGHTS[right]
    if actor is not None and actor.read_only:
        return f"You are signed in with a read-only API key, which may look but not {what}."
    if right == "sources":
        return f"Only an editor or an admin may {what}; you are a viewer. An admin can make you an editor."
    if right == "editing":
        return f"You are a viewer, who may look but not {what}. An admin can make you an editor."
    you = {"viewer": "a viewer", "editor": "an editor"}.get(getattr(actor, "role", None), "a service key")
    return f"Only an admin may {what}; you are {you}."


def may_change_own_account(actor):
    """Whether this actor (None: auth is off) may act on its own account (its password, its sessions, its weekly
    emails, its notifications): a person of any role may, so that a viewer too can change a leaked password; a read-only key's
    session may not."""
    return actor is None or not actor.read_only


def may_manage_people(actor):
    """Whether this actor (None: auth is off) may invite people, change roles, deactivate and reactivate."""
    return actor is None or (actor.role == "admin" and not actor.read_only)


def may_reopen_cycles(actor):
    """Whether this actor (None: auth is off) may reopen a closed cycle: an admin, with a key or session that may
    write (closing one needs editing only)."""
    return actor is None or (actor.role == "admin" and not actor.read_only)


def may_manage_connections(actor):
    """Whether this actor (None: auth is off) may add, change, delete and list the connections of metric sources
    (their addresses and secrets): an admin, with a key or session that may write."""
    return actor is None or (actor.role == "admin" and not actor.read_only)


def may_see_sources(actor):
    """Whether this actor (None: auth is off) may see key results' sources (their queries and paths) and the
    evidence of their values, and change them: whoever may write (an editor, an admin, a service key). Never a
    viewer or a read-only key: a query can name the company's systems."""
    return may_write(actor, "PUT")


def may_change_comment(actor, comment):
    """Whether this actor (None: auth is off) may edit or delete a comment (its row): its author, or an admin,
    with a key or session that may write. A service key's comments have no author: only an admin changes them."""
    if not may_write(actor, "PATCH"):
        return False
    return actor is None or actor.role == "admin" or (actor.user_id is not None
                                                      and actor.user_id == comment["author_id"])


# How long a check-in's author may correct or delete it (an admin may at any time).
CHECKIN_CORRECTION_DAYS = 7


def checkin_change_refusal(actor, checkin, now):
    """Why this actor (None: auth is off) may not correct or delete a check-in (a row with author_id and
    created_at) at now (an ISO UTC time), in words; None when it may. An admin may at any time; its author
    within CHECKIN_CORRECTION_DAYS of making it; a service key's check-ins have no author."""
    if not may_write(actor, "PATCH"):
        return write_refusal(actor, "PATCH")
    if actor is None or actor.role == "admin":
        return None
    if actor.user_id is None or actor.user_id != checkin["author_id"]:
        return "only a check-in's author or an admin may correct or delete it"
    made = datetime.fromisoformat(checkin["created_at"].replace("Z", "+00:00"))
    if datetime.fromisoformat(now.replace("Z", "+00:00")) - made > timedelta(days=CHECKIN_CORRECTION_DAYS):
        return f"its author may correct or delete a check-in for {CHECKIN_CORRECTION_DAYS} days; after, only an admin"
    return None


def checkin_author(actor, author_id):
    """The author a check-in is recorded with: a person's own id (a user's key or session), whatever a
    service key names. Forbidden when a user's key names someone else."""
    if actor is None or actor.user_id is None:
        return author_id
    if author_id is not None and author_id != actor.user_id:
        raise Forbidden("a user's API key signs check-ins as its user only; leave author_id out or use a "
                        "service key")
    return actor.user_id


def is_api_path(path):
    """Whether path is the API's: /v1 and everything under it, which signed requests reach."""
    return path == "/v1" or path.startswith("/v1/")


# Paths any page may call, whatever its origin: they take no cookie, so another site gains nothing by calling them
# from a browser (an assistant that runs in one registers and gets its tokens there).
OPEN_TO_OTHER_ORIGINS = frozenset({"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
                                   "/.well-known/oauth-authorization-server", "/oauth/register", "/oauth/token",
                                   "/oauth/revoke"})
# Paths outside /v1 that answer machines, in JSON: the health check, the assistants' MCP endpoint, its metadata and
# its sign-in's (but the consent page, a page).
MACHINE_PATHS = frozenset({"/healthz", "/mcp"}) | OPEN_TO_OTHER_ORIGINS


def answers_as_api(path):
    """Whether a path's answers are the API's (JSON, errors in the error shape, no session): /v1, /healthz, and the
    assistants' /mcp and its metadata. Every other path is a page."""
    return is_api_path(path) or path in MACHINE_PATHS


def wants_page():
    """Whether the client asked for HTML before JSON (a browser does; curl and API clients do not): at /, an API
    client gets the JSON index, open like /healthz."""
    best = request.accept_mimetypes.best_match(["application/json", "text/html"])
    return best == "text/html" and request.accept_mimetypes["text/html"] > request.accept_mimetypes["application/json"]


def is_loopback(host):
    """Whether host names this machine (localhost, 127.0.0.0/8, ::1): open mode never leaves it."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
