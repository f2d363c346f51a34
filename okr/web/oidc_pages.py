"""Sign-in with the company's identity provider (OpenID Connect, okr.oidc): the button's form posts to
/login/oidc, which sends the browser to the provider; the provider sends it back to /login/oidc/callback, which
matches the person to a user and opens a session like a password sign-in (okr.web.sessions).

Neither counts for the throttle of password sign-ins (okr.web.sign_in), nor is held by it: nothing here is a
guess at a secret this server keeps. Another site's page can make a browser open the callback with anything in
it, and a provider's refusal (a wrong state or nonce, an unverified email) is no password guess; counted, they
would let any page hold the sign-ins of everyone behind its visitor's address.

The start is a POST with the CSRF token, not a link: another site cannot start a sign-in in this browser.
The person is matched by the (issuer, subject) remembered at their first sign-in, else by the ID token's email
when the provider verified it (the email rule of okr.emails), which remembers the subject; but never to a user
linked to another subject already: a verified email shows who owns a mailbox, not an account. With
OKR_PASSWORD_SIGN_IN=0 the password form is neither shown nor taken, nor are the pages that choose a password.
"""
import hmac
import time

from flask import current_app, g, redirect, render_template, request, session
from marshmallow import ValidationError

from .. import oidc
from ..db import READ_METHODS, begin_write, commit, get_connection, get_db, release_writers
from ..emails import email_domain
from ..errors import Conflict
from ..rules.schemas import user_schema
from ..store import events, users
from . import sessions, sign_in
from .errors import PageError
from .views import bp, local_path

# A sign-in not finished within this many seconds is started again.
PENDING_SECONDS = 600
# Who the activity feed says added a person at their first sign-in, or was refused as another's linked
# account (okr.activity.actor_name words it).
CREATED_BY = events.system("single sign-on")
# Says neither whose account it is nor which sign-in it is linked to.
LINKED_ELSEWHERE = "This account is linked to another sign-in; ask an admin."
# The pages that choose a password or sign in with one, refused when password sign-in is off.
PASSWORD_ENDPOINTS = frozenset({"web.show_invitation", "web.ask_password_reset", "web.reset_password",
                                "web.change_password"})


def provider():
    """The app's okr.oidc.Provider, or None when sign-in with a provider is not set up."""
    return current_app.extensions.get("okr.oidc")


def password_sign_in():
    return current_app.config["PASSWORD_SIGN_IN"]


def refusal(title, message, status=401):
    """A page saying why nobody was signed in, with the way back to the sign-in page."""
    return render_template("oidc-message.html", title=title, message=message,
                           password_sign_in=password_sign_in()), status


def provider_down(settings):
    current_app.logger.warning("sign-in with the identity provider failed: %s", g.pop("oidc_trouble", "?"))
    other = " Sign in with your password meanwhile." if password_sign_in() else ""
    return refusal("Sign-in provider unavailable",
                   f"{settings.name[:1].upper()}{settings.name[1:]} cannot be reached just now, so nobody can sign "
                   f"in with it. Try again in a few minutes; if it goes on, tell whoever runs this server.{other}",
                   503)


@bp.post("/login/oidc")
def start_oidc_sign_in():
    """Sends the browser to the identity provider, with PKCE, state and nonce kept in its session."""
    chosen = provider()
    if chosen is None:
        raise PageError(404, "Page not found", "Sign-in with an identity provider is not set up on this server.")
    no_transaction()
    try:
        url, pending = chosen.start()
    except oidc.ProviderDown as error:
        g.oidc_trouble = str(error)
        return provider_down(chosen.settings)
    session.permanent = True
    session["oidc"] = {"state": pending.state, "nonce": pending.nonce, "verifier": pending.verifier,
                       "next": local_path(request.form.get("next", "")), "at": int(time.time())}
    if oidc.origin(url) != oidc.origin(chosen.settings.issuer):
        # The sign-in page's form-action allows the issuer's origin only: a link, which it does not govern.
        return render_template("oidc-continue.html", url=url, name=chosen.settings.name)
    return redirect(url, 303)


@bp.get("/login/oidc/callback")
def finish_oidc_sign_in():
    """Where the provider sends the browser back: checks the answer, finds the person and opens a session."""
    chosen = provider()
    if chosen is None:
        raise PageError(404, "Page not found", "Sign-in with an identity provider is not set up on this server.")
    settings = chosen.settings
    kept = session.pop("oidc", None)  # once: a second answer to one start is refused
    state = request.args.get("state", "")
    if (not isinstance(kept, dict) or not isinstance(kept.get("state"), str)
            or not hmac.compare_digest(state.encode("utf-8"), kept["state"].encode("utf-8"))):
        return refusal("Sign-in not accepted", "This answer from the sign-in provider does not belong to a sign-in "
                                               "started in this browser, or was already used. Start again from "
                                               "the sign-in page.", 400)
    if time.time() - kept.get("at", 0) > PENDING_SECONDS:
        return refusal("Sign-in not accepted", "This sign-in took too long. Start again from the sign-in page.", 400)
    if request.args.get("error"):
        said = request.args.get("error_description") or request.args.get("error")
        return refusal("Not signed in", f"{settings.name} did not sign you in: {said[:300]}")
    code = request.args.get("code", "")
    if not code:
        return refusal("Sign-in not accepted", "The sign-in provider's answer has no code.", 400)
    no_transaction()
    try:
        claims = chosen.finish(code, oidc.Pending(kept["state"], kept["nonce"], kept["verifier"]))
    except oidc.ProviderDown as error:
        g.oidc_trouble = str(error)
        return provider_down(settings)
    except oidc.Refused as error:
        current_app.logger.warning("sign-in with the identity provider refused: %s", error)
        return refusal("Not signed in", f"The answer from {settings.name} could not be trusted, so nobody was "
                                        f"signed in: {error} Start again from the sign-in page.")
    try:
        user = matched_user(settings, claims)
    except sign_in.SignInRefused as error:
        return refusal("Not signed in", str(error), 403)
    sessions.log_in(user_id=user["id"])
    session["via"] = "oidc"  # so that signing out offers to sign out of the provider too
    return redirect(request.script_root + (kept.get("next") or "/"), 303)


def no_transaction():
    """Ends the request's transaction, which has only read, before a call to the provider (up to
    okr.oidc.TIMEOUT): no snapshot, nor this process's writers' lock, is held while it answers."""
    db = g.get("db")
    if db is not None and db.in_transaction:
        db.execute("COMMIT")
    release_writers()


def writable():
    """The request's connection in a write transaction: the callback is a GET, whose reads began a snapshot."""
    db = get_connection()
    if request.method in READ_METHODS and db.in_transaction:
        db.execute("COMMIT")
    if not db.in_transaction:
        begin_write(db)
    return get_db()


def matched_user(settings, claims):
    """The active user the ID token's claims are, remembering their subject; SignInRefused saying why not."""
    db = writable()
    issuer, subject = claims["iss"], claims["sub"]
    user = users.find_by_oidc_subject(db, issuer, subject)
    if user is None:
        email = oidc.verified_email(claims)
        if email is None:
            if isinstance(claims.get("email"), str) and claims["email"].strip():
                raise sign_in.SignInRefused(
                    f"{settings.name} has not verified the email address {claims['email'].strip()}, so it cannot "
                    "be matched to an account here. Verify it there, or ask an admin.")
            raise sign_in.SignInRefused(
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
        raise sign_in.SignInRefused(sign_in.DEACTIVATED)
    return user


def refused_as_linked(db, user, issuer, subject):
    """SignInRefused for someone whose verified email is that of a user linked to another subject: nothing
    about the user changes, and the event user.sign_in_refused is kept although the answer is an error."""
    with events.acting_as(CREATED_BY):
        users.record_refused_sign_in(db, user, issuer, subject)
    commit(db)  # kept, although the request then answers with an error (which rolls back)
    current_app.logger.warning("sign-in with the identity provider refused: %s %s has the email of user %s, who "
                               "is linked to another subject", issuer, subject, user["id"])
    raise sign_in.SignInRefused(LINKED_ELSEWHERE)


def check_domain(settings, email):
    domain = email_domain(email)
    if settings.allowed_domains and domain not in settings.allowed_domains:
        raise sign_in.SignInRefused(f"Addresses at {domain} may not sign in here. Ask an admin if you should.")


def created_user(db, settings, claims, email):
    """A new user for the person (OKR_OIDC_CREATE_USERS' role), or SignInRefused asking for an invitation."""
    if settings.create_users is None:
        raise sign_in.SignInRefused(f"There is no account here for {email}. Ask an admin for an invitation.")
    try:
        fields = user_schema.load({"name": oidc.display_name(claims, email)[:200], "email": email})
    except ValidationError:
        try:
            fields = user_schema.load({"name": email.partition("@")[0][:200] or "New user", "email": email})
        except ValidationError:
            raise sign_in.SignInRefused(f"{email} is not an email address this service takes. Ask an admin.") \
                from None
    with events.acting_as(CREATED_BY):
        try:
            user = users.create(db, fields["name"], fields["email"], settings.create_users)
        except Conflict:  # a sign-in at the same moment made it
            raise sign_in.SignInRefused("Your account was being created by another sign-in: try again.") from None
    return users.set_oidc_subject(db, user, claims["iss"], claims["sub"])


def signed_out_from_provider_link():
    """On signing out of a session opened with the provider: remembers, for the sign-in page that follows,
    the link to sign out of the provider too."""
    chosen = provider()
    url = None if chosen is None else chosen.sign_out_url()
    if url:
        session["provider_sign_out"] = url


@bp.before_request
def refuse_password_pages():
    """With password sign-in off, the password form and the pages that choose a password are refused."""
    if password_sign_in():
        return None
    if request.endpoint in PASSWORD_ENDPOINTS or (
            request.endpoint == "web.show_login" and request.method == "POST" and "credential" not in request.form):
        name = provider().settings.name
        raise PageError(403, "Password sign-in is off",
                        f"This server signs people in with {name}, not with passwords. Use the button on the "
                        "sign-in page.")
    return None


@bp.app_context_processor
def sign_in_choices():
    """What the sign-in and account pages show: the provider's button, and whether passwords are taken."""
    chosen = provider()
    if chosen is not None and request.endpoint == "web.show_login":
        # The button's POST is redirected to the provider, which the page's form-action must allow.
        g.form_targets = [oidc.origin(chosen.settings.issuer)]
    return {"oidc_name": None if chosen is None else chosen.settings.name, "password_sign_in": password_sign_in()}


def init_app(app):
    """Checks the settings (ValueError for one that cannot work: `okr` says it in one line) and sets up the
    provider. Nothing is fetched from it yet: a provider that is down must not stop the server."""
    settings = oidc.settings(app.config)
    if settings is None:
        if not app.config["PASSWORD_SIGN_IN"]:
            raise ValueError("OKR_PASSWORD_SIGN_IN=0 needs OKR_OIDC_ISSUER: with neither, nobody could sign in")
        app.extensions.pop("okr.oidc", None)
        return
    app.extensions["okr.oidc"] = oidc.Provider(settings)
