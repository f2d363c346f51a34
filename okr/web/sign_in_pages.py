"""The pages anyone may open to sign in and out: /login (an email and password, or an API key's credential and
secret), /logout, /invitations/<token> and "Forgot your password?" (/password-reset and the reset link's page)
to choose a password. What they do is okr.accounts' (sign_in, password_links); sign-in with the identity provider
is okr.web.oidc_pages.
"""
from flask import redirect, render_template, request, session, url_for

from ..accounts import password_links, passwords, single_sign_on, sessions, sign_in
from .views import bp, local_path


@bp.route("/login", methods=["GET", "POST"])
def show_login():
    """Asks for an email and password (or an API key's credential and secret), and opens a session."""
    # `next` is a path within the app ("/cycles/…"); the redirect puts the mount's prefix before it.
    next_path = local_path(request.values.get("next", ""))
    if not sessions.login_required():
        return redirect(request.script_root + next_path, 303)
    shown = {"next": next_path, "email": "", "credential": "", "error": None, "key_error": None,
             "email_set_up": password_links.mail_settings() is not None}
    if request.method == "GET":
        # Once, after signing out of a session the identity provider opened: the link to sign out there too.
        return render_template("login.html", **shown, provider_sign_out=session.pop("provider_sign_out", None))
    if "credential" in request.form:
        credential = request.form.get("credential", "").strip()
        try:
            sign_in.sign_in_with_key(credential, request.form.get("secret", "").strip())
        except sign_in.SignInRefused as refusal:
            return render_template("login.html", **{**shown, "credential": credential, "key_error": str(refusal)}), 401
    else:
        email = request.form.get("email", "").strip()
        try:
            sign_in.sign_in_with_password(email, request.form.get("password", ""))
        except sign_in.SignInRefused as refusal:
            return render_template("login.html", **{**shown, "email": email, "error": str(refusal)}), 401
    return redirect(request.script_root + next_path, 303)


@bp.post("/logout")
def log_out():
    """Ends the session (and, for one the identity provider opened, offers to sign out there too)."""
    if sign_in.sign_out():
        single_sign_on.offer_sign_out_there()
    return redirect(url_for("web.show_login" if sessions.login_required() else "web.show_dashboard"), 303)


@bp.route("/invitations/<token>", methods=["GET", "POST"])
def show_invitation(token):
    """Lets an invited user choose a password, then signs them in."""
    user = password_links.invited_user(token)
    if request.method == "GET":
        return render_template("invitation.html", user=user, error=None)
    password = request.form.get("password", "")
    problem = passwords.problem(password)
    if problem:
        return render_template("invitation.html", user=user, error=problem), 400
    password_links.accept_invitation(token, password)
    return redirect(url_for("web.show_dashboard"), 303)


@bp.route("/password-reset", methods=["GET", "POST"])
def ask_password_reset():
    """Asks for an email, and sends its account a one-time link to choose a new password."""
    settings = password_links.mail_settings()
    if settings is None:
        return render_template("password-reset.html", set_up=False, sent=False, email="")
    if request.method == "GET":
        return render_template("password-reset.html", set_up=True, sent=False, email="")
    email = request.form.get("email", "").strip()
    if not email:
        return render_template("password-reset.html", set_up=True, sent=False, email="",
                               error="Enter your email."), 400
    password_links.ask_for_reset(settings, email)
    return render_template("password-reset.html", set_up=True, sent=True, email=email)


@bp.route("/password-reset/<token>", methods=["GET", "POST"])
def reset_password(token):
    """Lets a person with a valid reset link choose a new password, then signs them in."""
    user = password_links.reset_user(token)
    if request.method == "GET":
        return render_template("password-choose.html", user=user, error=None)
    password = request.form.get("password", "")
    problem = passwords.problem(password)
    if problem:
        return render_template("password-choose.html", user=user, error=problem), 400
    password_links.accept_reset(token, password)
    return redirect(url_for("web.show_dashboard"), 303)
