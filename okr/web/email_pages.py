"""The pages that email: "Forgot your password?" (a one-time reset link, valid for an hour) and choosing the
new password from it, and the invitation email of the People page.

Without email set up (OKR_SMTP_URL and OKR_MAIL_FROM, okr.mail) everything else works, and these pages say so.
Links in emails use the configured public address (OKR_BASE_URL, else http://HOST:PORT), never the request's
Host header, which a stranger asking for someone's reset could set to an address of their own.
"""
import logging
import sqlite3
import threading

from flask import after_this_request, current_app, redirect, render_template, request, url_for

from .. import mail
from ..db import get_db, transaction
from ..rules import passwords
from ..store import password_resets, users
from . import sessions, sign_in
from .views import bp

logger = logging.getLogger("okr")


def mail_settings():
    """The server's MailSettings, or None when email is not set up."""
    return mail.settings_or_none(current_app.config)


@bp.route("/password-reset", methods=["GET", "POST"])
def ask_password_reset():
    """Asks for an email, and sends its account a one-time link to choose a new password."""
    settings = mail_settings()
    if settings is None:
        return render_template("password-reset.html", set_up=False, sent=False, email="")
    if request.method == "GET":
        return render_template("password-reset.html", set_up=True, sent=False, email="")
    email = request.form.get("email", "").strip()
    if not email:
        return render_template("password-reset.html", set_up=True, sent=False, email="",
                               error="Enter your email."), 400
    sign_in.count_reset_request(email)
    # Whether the email is anyone's is found once the answer is sent: the page does the same work either way,
    # and takes the same time.
    app = current_app._get_current_object()
    after_the_answer(lambda: email_reset_link(app, settings, email))
    return render_template("password-reset.html", set_up=True, sent=True, email=email)


def after_the_answer(job):
    """Runs job on a thread of its own once this request's answer, if a success, has been sent (the server then
    closes it): its work never slows the answer. An answer that fails at its commit is another, and runs none."""

    @after_this_request
    def queue(response):
        if response.status_code < 400:
            response.call_on_close(lambda: threading.Thread(target=job, name="okr-mail", daemon=True).start())
        return response


def email_reset_link(app, settings, email):
    """Makes a reset link for the active user with this email, if there is one, and emails it to them. Runs on a
    thread of its own: a failure is logged, never shown (it would tell that the account exists)."""
    with app.app_context():
        try:
            with transaction(write=False) as db:
                user = users.find_by_email(db, email)
            if user is None or not user["is_active"]:
                return
            with transaction() as db:
                token = password_resets.create(db, user)
            message = mail.message(settings, user["name"], user["email"], "Choose a new password", reset_text(
                user, f"{settings.base_url}/password-reset/{token}"))
            mail.send(settings, message)
        except mail.MailError as error:
            logger.warning("the password reset of user %s not sent: %s", user["id"], error)
        except sqlite3.Error:
            logger.exception("a password reset link could not be made")


def reset_text(user, url):
    return (f"Hello {user['name']},\n\nSomeone, probably you, asked for a new password for {user['email']}. "
            f"To choose one, open this link within the hour:\n\n{url}\n\nIt works once. If you did not ask, "
            "do nothing: your password stays as it is.\n")


@bp.route("/password-reset/<token>", methods=["GET", "POST"])
def reset_password(token):
    """Lets a person with a valid reset link choose a new password, then signs them in."""
    user = sign_in.reset_user(token)
    if request.method == "GET":
        return render_template("password-choose.html", user=user, error=None)
    password = request.form.get("password", "")
    problem = passwords.problem(password)
    if problem:
        return render_template("password-choose.html", user=user, error=problem), 400
    password_hash = sign_in.new_password_hash(password)  # before the write transaction: it takes a while
    db = get_db()
    user = sign_in.still_reset(db, token)
    # Ends every session of theirs, and the reset itself (okr.store.users.set_password).
    users.set_password(db, user, password_hash)
    sessions.log_in(user_id=user["id"])
    return redirect(url_for("web.show_dashboard"), 303)


def email_invitation(user, token):
    """Emails an invitation link (the People page's); None when sent, else why not, for the page."""
    settings = mail_settings()
    if settings is None:
        return "Email is not set up on this server: send the link yourself."
    message = mail.message(settings, user["name"], user["email"], "Your invitation to the OKR dashboard",
                           mail.invitation_text(user["name"], user["email"], f"{settings.base_url}/invitations/{token}"))
    try:
        mail.send(settings, message)
    except mail.MailError as error:
        logger.warning("the invitation of user %s not sent: %s", user["id"], error)
        return f"The email was not sent ({error}): send the link yourself."
    return None
