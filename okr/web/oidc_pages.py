"""The pages of sign-in with the company's identity provider (okr.accounts.single_sign_on does the work): the
button's form posts to /login/oidc, which sends the browser to the provider; the provider sends it back to
/login/oidc/callback, which signs the person in, or says why not.

The start is a POST with the CSRF token, not a link: another site cannot start a sign-in in this browser. With
OKR_PASSWORD_SIGN_IN=0 the password form is neither shown nor taken, nor are the pages that choose a password.
"""
from flask import current_app, g, redirect, render_template, request

from ..accounts import identity_provider, single_sign_on
from ..accounts.single_sign_on import password_sign_in, provider
from ..accounts.sign_in import SignInRefused
from .errors import PageError
from .views import bp, local_path

# The pages that choose a password or sign in with one, refused when password sign-in is off.
PASSWORD_ENDPOINTS = frozenset({"web.show_invitation", "web.ask_password_reset", "web.reset_password",
                                "web.change_password"})


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
    try:
        url = single_sign_on.start(local_path(request.form.get("next", "")))
    except identity_provider.ProviderDown as error:
        g.oidc_trouble = str(error)
        return provider_down(chosen.settings)
    if identity_provider.origin(url) != identity_provider.origin(chosen.settings.issuer):
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
    pending = single_sign_on.pending_sign_in(request.args.get("state", ""))  # once: a second answer is refused
    if pending is None:
        return refusal("Sign-in not accepted", "This answer from the sign-in provider does not belong to a sign-in "
                                               "started in this browser, or was already used. Start again from "
                                               "the sign-in page.", 400)
    if single_sign_on.took_too_long(pending):
        return refusal("Sign-in not accepted", "This sign-in took too long. Start again from the sign-in page.", 400)
    if request.args.get("error"):
        said = request.args.get("error_description") or request.args.get("error")
        return refusal("Not signed in", f"{settings.name} did not sign you in: {said[:300]}")
    code = request.args.get("code", "")
    if not code:
        return refusal("Sign-in not accepted", "The sign-in provider's answer has no code.", 400)
    try:
        single_sign_on.finish(pending, code)
    except identity_provider.ProviderDown as error:
        g.oidc_trouble = str(error)
        return provider_down(settings)
    except identity_provider.Refused as error:
        current_app.logger.warning("sign-in with the identity provider refused: %s", error)
        return refusal("Not signed in", f"The answer from {settings.name} could not be trusted, so nobody was "
                                        f"signed in: {error} Start again from the sign-in page.")
    except SignInRefused as error:
        return refusal("Not signed in", str(error), 403)
    return redirect(request.script_root + (pending.get("next") or "/"), 303)


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
        g.form_targets = [identity_provider.origin(chosen.settings.issuer)]
    return {"oidc_name": None if chosen is None else chosen.settings.name, "password_sign_in": password_sign_in()}
