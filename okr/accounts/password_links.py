"""Links to choose a password, each used once: an invitation (the People page's or `okr users invite`, valid for
7 days) and a password reset ("Forgot your password?", emailed, valid for an hour). Choosing the password signs
the person in. A wrong link counts for the throttle (okr.accounts.throttle) only when a password is sent with it,
and so does every request for a reset's email.

Without email set up (OKR_SMTP_URL and OKR_MAIL_FROM, okr.outbound.smtp) nothing is emailed, and the pages say so.
Links in emails use the configured public address (OKR_BASE_URL, else http://HOST:PORT), never the request's
Host header, which a stranger asking for someone's reset could set to an address of their own.
"""
import logging
import sqlite3
import threading

from flask import after_this_request, current_app, request

from ..db import get_db, transaction
from ..outbound import smtp
from ..store import invitations, password_resets, users
from . import sessions, sign_in, throttle
from .access import READ_METHODS

logger = logging.getLogger("okr")

INVITATION = "invitation"
RESET = "reset"


class LinkNotValid(Exception):
    """A link to choose a password that is unknown, used or past its time; kind is INVITATION or RESET."""

    def __init__(self, kind):
        super().__init__(f"this {kind} link is not valid")
        self.kind = kind


def mail_settings():
    """The server's MailSettings, or None when email is not set up."""
    return smtp.settings_or_none(current_app.config)


def counts_as_a_try():
    """Whether a wrong link counts as a failed sign-in: only when a password is sent with it (a POST, which needs
    the form's CSRF token). Opening a link counts nothing: another site's page can make its visitors' browsers
    open any link, and would hold the sign-ins of everyone behind their addresses."""
    return request.method not in READ_METHODS


def invited_user(token):
    """The user a valid invitation with this token is for; LinkNotValid otherwise (a failure when a password was
    sent with it)."""
    throttle.refuse_if_throttled(throttle.INVITATION)
    user = invitations.invited_user(sign_in.reads(), token)
    if user is None:
        if counts_as_a_try():
            throttle.record_failure(throttle.INVITATION)
        raise LinkNotValid(INVITATION)
    return user


def still_invited(db, token):
    """The invitation's user once more, in the request's write transaction, once the new password's hash is made:
    the link may have been used meanwhile. LinkNotValid then, not counted (it was valid a moment ago)."""
    user = invitations.invited_user(db, token)
    if user is None:
        raise LinkNotValid(INVITATION)
    return user


def accept_invitation(token, password):
    """Gives the invited user the password (one that passes passwords.problem), ends the invitation, and signs
    this browser in as them."""
    password_hash = sign_in.new_password_hash(password)  # before the write transaction: it takes a while
    db = get_db()
    user = still_invited(db, token)
    users.set_password(db, user, password_hash)
    invitations.use(db, token)
    sessions.log_in(user_id=user["id"])


def invite(user):
    """A new invitation link's token for the user (its row), voiding their earlier one."""
    return invitations.create(get_db(), user)


def email_invitation(user, token):
    """Emails an invitation link (the People page's); None when sent, else why not, for the page."""
    settings = mail_settings()
    if settings is None:
        return "Email is not set up on this server: send the link yourself."
    message = smtp.message(settings, user["name"], user["email"], "Your invitation to the OKR dashboard",
                           smtp.invitation_text(user["name"], user["email"], f"{settings.base_url}/invitations/{token}"))
    try:
        smtp.send(settings, message)
    except smtp.MailError as error:
        logger.warning("the invitation of user %s not sent: %s", user["id"], error)
        return f"The email was not sent ({error}): send the link yourself."
    return None


def email_invitations_later(invited):
    """Emails each (user, token) of invited their invitation, as email_invitation does, once this request's answer
    is sent (a CSV's people, okr.accounts.people_csv: they are many, and the answer waits for none); a failure is
    logged, and the People page's Invite makes a new link."""
    app = current_app._get_current_object()
    invited = [(dict(user), token) for user, token in invited]

    def send_them():
        with app.app_context():
            for user, token in invited:
                email_invitation(user, token)

    after_the_answer(send_them)


def ask_for_reset(settings, email):
    """Counts the request like a failed sign-in (throttle.Throttled once there were too many) and, once the answer
    is sent, emails a reset link to the active user with this email if there is one. Whether the email is
    anyone's is found only then: the page does the same work either way, and takes the same time."""
    throttle.count_reset_request(email)
    app = current_app._get_current_object()
    after_the_answer(lambda: email_reset_link(app, settings, email))


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
            message = smtp.message(settings, user["name"], user["email"], "Choose a new password", reset_text(
                user, f"{settings.base_url}/password-reset/{token}"))
            smtp.send(settings, message)
        except smtp.MailError as error:
            logger.warning("the password reset of user %s not sent: %s", user["id"], error)
        except sqlite3.Error:
            logger.exception("a password reset link could not be made")


def reset_text(user, url):
    return (f"Hello {user['name']},\n\nSomeone, probably you, asked for a new password for {user['email']}. "
            f"To choose one, open this link within the hour:\n\n{url}\n\nIt works once. If you did not ask, "
            "do nothing: your password stays as it is.\n")


def reset_user(token):
    """The user a valid password reset with this token is for; LinkNotValid otherwise (a failure when a password
    was sent with it)."""
    throttle.refuse_if_throttled(throttle.PASSWORD_RESET)
    user = password_resets.user_for(sign_in.reads(), token)
    if user is None:
        if counts_as_a_try():
            throttle.record_failure(throttle.PASSWORD_RESET)
        raise LinkNotValid(RESET)
    return user


def still_reset(db, token):
    """The reset's user once more, in the request's write transaction, once the new password's hash is made: the
    link may have been used meanwhile. LinkNotValid then, not counted (it was valid a moment ago)."""
    user = password_resets.user_for(db, token)
    if user is None:
        raise LinkNotValid(RESET)
    return user


def accept_reset(token, password):
    """Gives the reset's user the password (one that passes passwords.problem), which ends every session of theirs
    and the reset itself (okr.store.users.set_password), and signs this browser in as them."""
    password_hash = sign_in.new_password_hash(password)  # before the write transaction: it takes a while
    db = get_db()
    user = still_reset(db, token)
    users.set_password(db, user, password_hash)
    sessions.log_in(user_id=user["id"])
