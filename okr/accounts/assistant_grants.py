"""Connected assistants: what an AI assistant may do for a person, and the tokens it shows.

An assistant acts as one person, with that person's role, read-only or read-and-write (a viewer's assistant only
reads, whatever it was given). It comes in with a token: a personal token made on the account page ("Connect an
assistant": shown once, expires after 30, 90 or 365 days), or the access token an OAuth client was given after
the person consented (an hour, renewed with its refresh token for 30 days). A token ends when it expires, and
its grant (the row) goes when it is disconnected, and with all the person's others when the person is deactivated,
given another role, given a new password or signs out everywhere (okr.store.users, okr.accounts.sign_in): a
reactivation or the old role back brings none back. Each use checks again (refusal). Connecting one records the
event assistant.connected. Tokens are kept only as their SHA-256; `okr mcp --as EMAIL` on the database's machine
needs none.
"""
import hashlib
import secrets
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from .. import clock
from ..errors import Invalid, NotFound
from ..store import assistant_grants, users
from .access import Actor

# A personal token's own prefix, so that a leaked one is recognised (and secret scanners can be told of it).
PERSONAL_TOKEN_PREFIX = "okr_pat_"
ACCESS_TOKEN_PREFIX = "okr_at_"
REFRESH_TOKEN_PREFIX = "okr_rt_"
PERSONAL_TOKEN_DAYS = (30, 90, 365)
# What a grant may do, as OAuth names it: read, and write as the person may.
READ_SCOPE, WRITE_SCOPE = "okr:read", "okr:write"
SCOPES = (READ_SCOPE, WRITE_SCOPE)
ACCESS_TOKEN_LIFE = timedelta(hours=1)
REFRESH_TOKEN_LIFE = timedelta(days=30)
# How often a grant's "last used" is written: once a minute at most, so that reads stay reads.
LAST_USED_EVERY = timedelta(minutes=1)
MAX_NAME_LENGTH = 100
# Where an assistant's in-process request carries its grant (okr.assistants.in_process; okr.api.auth reads it). No
# WSGI server puts a key without the HTTP_ prefix there from what a client sends.
ENVIRON_KEY = "okr.assistant"


@dataclass(frozen=True)
class Grant:
    """Who an assistant acts for and how: the person (user_id, user_name, role), read_only, and the assistant's
    name (via: the OAuth client's or the personal token's; over stdio the name the client gives). id and seq are
    the stored grant's (None for `okr mcp --as`, which has none); last_used_at its last use."""

    user_id: str
    user_name: str
    role: str
    read_only: bool
    via: str | None
    id: str | None = None
    seq: int | None = None
    last_used_at: str | None = None
    token_hash: str | None = field(default=None, repr=False)

    def read_only_copy(self):
        return replace(self, read_only=True)

    def named(self, via):
        """This grant with the assistant's name, where it had none (stdio: the client says it)."""
        return self if self.via is not None else replace(self, via=via)


class GrantRefused(Exception):
    """A token that lets no assistant in; the message says why, and never holds the token."""


def token_hash(token):
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def now():
    """The clock's time (okr.clock), as an RFC 3339 string, which compares as stored moments do."""
    return clock.utc_now()


def later(delta, start=None):
    """The moment delta after start (now by default), as stored."""
    moment = datetime.fromisoformat((start or now()).replace("Z", "+00:00")) + delta
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def new_token(prefix):
    return prefix + secrets.token_urlsafe(32)


def check_name(name):
    """An assistant's name as people give it: 1 to 100 characters, on one line."""
    name = (name or "").strip()
    if not name or len(name) > MAX_NAME_LENGTH or any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise Invalid({"name": f"Give the assistant a name of 1 to {MAX_NAME_LENGTH} characters, on one line."})
    return name


def make_personal_token(db, user, name, read_only, days):
    """A personal token for this person's assistant (its grant stored, the token returned to be shown once)."""
    name = check_name(name)
    if days not in PERSONAL_TOKEN_DAYS:
        raise Invalid({"days": "A token lasts 30, 90 or 365 days."})
    token = new_token(PERSONAL_TOKEN_PREFIX)
    assistant_grants.create(db, user["id"], name, read_only or user["role"] == "viewer", user["role"],
                            token_hash(token), later(timedelta(days=days)))
    return token


def grant_of(row):
    return Grant(row["user_id"], row["user_name"], row["user_role"], bool(row["read_only"]), row["name"], row["id"],
                 row["seq"], row["last_used_at"], row["token_hash"])


def refusal(row, expires_at):
    """Why a stored grant lets no one in now, or None. A deactivation or a change of role deletes the person's
    grants; these checks stand behind that, for a row written otherwise (a restored backup)."""
    if row is None:
        return "unknown token"
    if expires_at is None or expires_at <= now():
        return "the token has expired"
    if not row["user_active"]:
        return "the person it acts for is deactivated"
    if row["user_role"] != row["role"]:
        return "the person's role has changed since the assistant was connected; connect it again"
    return None


def grant_for_token(db, token):
    """The grant an access or personal token carries; GrantRefused saying why when it carries none."""
    if not token or not token.startswith((PERSONAL_TOKEN_PREFIX, ACCESS_TOKEN_PREFIX)):
        raise GrantRefused("unknown token")
    row = assistant_grants.by_token(db, token_hash(token))
    why = refusal(row, row["expires_at"] if row is not None else None)
    if why is not None:
        raise GrantRefused(why)
    return grant_of(row)


def grant_for_person(db, email):
    """`okr mcp --as EMAIL`'s grant: the person's own rights, no stored token; GrantRefused when no active person
    has that email."""
    user = users.find_by_email(db, email)
    if user is None:
        raise GrantRefused(f"no user has the email {email}")
    if not user["is_active"]:
        raise GrantRefused(f"{email} is deactivated")
    return Grant(user["id"], user["name"], user["role"], user["role"] == "viewer", None)


def still_valid(db, grant):
    """The grant as it stands now (the person's role and name read again); GrantRefused once it has ended."""
    if grant.id is None:
        user = users.find(db, grant.user_id)
        if user is None or not user["is_active"]:
            raise GrantRefused("the person it acts for is deactivated")
        return replace(grant, user_name=user["name"], role=user["role"],
                       read_only=grant.read_only or user["role"] == "viewer")
    row = assistant_grants.by_id(db, grant.id)
    if row is not None and row["token_hash"] != grant.token_hash:
        raise GrantRefused("the token was refreshed; use the new one")
    why = refusal(row, row["expires_at"] if row is not None else None)
    if why is not None:
        raise GrantRefused(why)
    return replace(grant_of(row), via=grant.via)


def needs_marking(grant):
    """Whether a grant's last use is to be written now (at most once a minute)."""
    return grant.seq is not None and (grant.last_used_at is None or grant.last_used_at <= later(-LAST_USED_EVERY))


def mark_used(db, grant):
    assistant_grants.mark_used(db, grant.seq, now())


def actor_of(grant):
    """The actor a grant's requests have: the person, read-only when the grant is, named with the assistant."""
    return Actor(grant.user_id, grant.user_name, grant.role, read_only=grant.read_only or grant.role == "viewer",
                 via=grant.via)


def connected(db, user_id=None):
    """The connected assistants (a person's, or everyone's for user_id None), newest first."""
    return assistant_grants.listed(db, user_id)


def disconnect(db, grant_id, actor):
    """Ends a grant: the person's own, or anyone's for an admin; NotFound otherwise (another's is not told
    apart from none)."""
    if actor is None or actor.role == "admin":
        assistant_grants.delete(db, grant_id)
        return
    if actor.user_id is None:
        raise NotFound("connected assistant")
    assistant_grants.delete(db, grant_id, actor.user_id)
