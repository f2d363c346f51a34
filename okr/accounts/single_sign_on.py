"""Sign-in with the company's identity provider, the request's side of it (okr.accounts.identity_provider talks to
the provider; okr.web.oidc_pages has the pages): the sign-in started with PKCE, state and nonce kept in the
browser's session, the provider's answer taken once, the person matched to a user, and a session opened like a
password sign-in's (okr.accounts.sessions).

Nothing here counts for the throttle of password sign-ins (okr.accounts.throttle), nor is held by it: nothing
here is a guess at a secret this server keeps. Another site's page can make a browser open the callback with
anything in it, and a provider's refusal (a wrong state or nonce, an unverified email) is no password guess;
counted, they would let any page hold the sign-ins of everyone behind its visitor's address.

The person is matched by the (issuer, subject) remembered at their first sign-in, else by the ID token's email
when the provider verified it (the email rule of okr.rules.email_addresses), which remembers the subject; but
never to a user linked to another subject already: a verified email shows who owns a mailbox, not an account.
"""
import hmac
import time

from flask import current_app, g, request, session
from marshmallow import ValidationError

from ..db import begin_write, commit, get_connection, get_db, release_writers
from ..errors import Conflict
from ..rules.email_addresses import email_domain
from ..rules.body_schemas import user_schema
from ..store import events, users
from . import identity_provider, sessions
from .access import READ_METHODS
from .sign_in import DEACTIVATED, SignInRefused

# A sign-in not finished within this many seconds is started again.
PENDING_SECONDS = 600
# Who the activity feed says added a person at their first sign-in, or was refused as another's linked
# account (okr.reports.activity.actor_name words it).
CREATED_BY = events.system("single sign-on")
# Says neither whose account it is nor which sign-in it is linked to.
LINKED_ELSEWHERE = "This account is linked to another sign-in; ask an admin."


def provider():
    """The app's okr.accounts.identity_provider.Provider, or None when sign-in with a provider is not set up."""
    return current_app.extensions.get("okr.oidc")


def password_sign_in():
    """Whether people may sign in with a password too (OKR_PASSWORD_SIGN_IN)."""
    return current_app.config["PASSWORD_SIGN_IN"]


def start(next_path):
    """The provider's address to send the browser to, the sign-in's PKCE verifier, state and nonce kept in its
    session with next_path (where to go once signed in); identity_provider.ProviderDown when the provider
    cannot be reached."""
    chosen = provider()
    no_transaction()
    url, pending = chosen.start()
    session.permanent = True
    session["oidc"] = {"state": pending.state, "nonce": pending.nonce, "verifier": pending.verifier,
                       "next": next_path, "at": int(time.time())}
    return url


def pending_sign_in(state):
    """The sign-in started in this browser, taken from its session (a second answer to one start finds none),
    when the provider's answer carries its state; None otherwise."""
    kept = session.pop("oidc", None)
    if (not isinstance(kept, dict) or not isinstance(kept.get("state"), str)
            or not hmac.compare_digest(state.encode("utf-8"), kept["state"].encode("utf-8"))):
        return None
    return kept


def took_too_long(pending):
    """Whether a sign-in started longer than PENDING_SECONDS ago."""
    return time.time() - pending.get("at", 0) > PENDING_SECONDS


def finish(pending, code):
    """Signs this browser in as the active user the provider's answer (code, for the pending sign-in) is, and
    returns them; identity_provider.ProviderDown or Refused when the provider's answer did not say who, and
    SignInRefused when whom it said cannot sign in here."""
    chosen = provider()
    no_transaction()
    claims = chosen.finish(code, identity_provider.Pending(pending["state"], pending["nonce"], pending["verifier"]))
    user = matched_user(chosen.settings, claims)
    sessions.log_in(user_id=user["id"])
    sessions.mark_opened_via_provider()
    return user


def no_transaction():
    """Ends the request's transaction, which has only read, before a call to the provider (up to
    identity_provider.TIMEOUT): no snapshot, nor this process's writers' lock, is held while it answers."""
    db = g.get("db")
    if db is not None and db.in_transaction:
        commit(db)
    release_writers()


def writable():
    """The request's connection in a write transaction: the callback is a GET, whose reads began a snapshot."""
    db = get_connection()
    if request.method in READ_METHODS and db.in_transaction:
        commit(db)
    if not db.in_transaction:
        begin_write(db)
    return get_db()


def matched_user(settings, claims):
    """The active user the ID token's claims are, remembering their subject; SignInRefused saying why not."""
    db = writable()
    issuer, subject = claims["iss"], claims["sub"]
    user = users.find_by_oidc_subject(db, issuer, subject)
    if user is None:
        email = identity_provider.verified_email(claims)
        if email is None:
            if isinstance(claims.get("email"), str) and claims["email"].strip():
                raise SignInRefused(
                    f"{settings.name} has not verified the email address {claims['email'].strip()}, so it cannot "
                    "be matched to an account here. Verify it there, or ask an admin.")
            raise SignInRefused(
                f"{settings.name} did not tell this service your email address, so it cannot be matched to an "
                "account here. Ask whoever runs the provider to release the email to this service.")
        check_domain(settings, email)
        user = users.find_by_email(db, email)
        if user is None:
            user = created_user(db, settings, claims, email)
        elif user["oidc_subject"] is not None:
            refused_as_linked(db, user, issuer, subject)
        elif user["is_active"]:
            # None only if linked since it was read, which the write transaction rules out.
            user = users.set_oidc_subject(db, user, issuer, subject) or refused_as_linked(db, user, issuer, subject)
    else:
        check_domain(settings, user["email"])
    if not user["is_active"]:
        raise SignInRefused(DEACTIVATED)
    return user


def refused_as_linked(db, user, issuer, subject):
    """SignInRefused for someone whose verified email is that of a user linked to another subject: nothing
    about the user changes, and the event user.sign_in_refused is kept although the answer is an error."""
    with events.acting_as(CREATED_BY):
        users.record_refused_sign_in(db, user, issuer, subject)
    commit(db)  # kept, although the request then answers with an error (which rolls back)
    current_app.logger.warning("sign-in with the identity provider refused: %s %s has the email of user %s, who "
                               "is linked to another subject", issuer, subject, user["id"])
    raise SignInRefused(LINKED_ELSEWHERE)


def check_domain(settings, email):
    domain = email_domain(email)
    if settings.allowed_domains and domain not in settings.allowed_domains:
        raise SignInRefused(f"Addresses at {domain} may not sign in here. Ask an admin if you should.")


def created_user(db, settings, claims, email):
    """A new user for the person (OKR_OIDC_CREATE_USERS' role), or SignInRefused asking for an invitation."""
    if settings.create_users is None:
        raise SignInRefused(f"There is no account here for {email}. Ask an admin for an invitation.")
    try:
        fields = user_schema.load({"name": identity_provider.display_name(claims, email)[:200], "email": email})
    except ValidationError:
        try:
            fields = user_schema.load({"name": email.partition("@")[0][:200] or "New user", "email": email})
        except ValidationError:
            raise SignInRefused(f"{email} is not an email address this service takes. Ask an admin.") from None
    with events.acting_as(CREATED_BY):
        try:
            user = users.create(db, fields["name"], fields["email"], settings.create_users)
        except Conflict:  # a sign-in at the same moment made it
            raise SignInRefused("Your account was being created by another sign-in: try again.") from None
    return users.set_oidc_subject(db, user, claims["iss"], claims["sub"])


def offer_sign_out_there():
    """After signing out of a session opened with the provider: remembers, for the sign-in page that follows,
    the link to sign out of the provider too."""
    chosen = provider()
    url = None if chosen is None else chosen.sign_out_url()
    if url:
        session["provider_sign_out"] = url


def init_app(app):
    """Checks the settings (ValueError for one that cannot work: `okr` says it in one line) and sets up the
    provider. Nothing is fetched from it yet: a provider that is down must not stop the server."""
    settings = identity_provider.settings(app.config)
    if settings is None:
        if not app.config["PASSWORD_SIGN_IN"]:
            raise ValueError("OKR_PASSWORD_SIGN_IN=0 needs OKR_OIDC_ISSUER: with neither, nobody could sign in")
        app.extensions.pop("okr.oidc", None)
        return
    app.extensions["okr.oidc"] = identity_provider.Provider(settings)
