"""Signing in, throttled: with an email and password, with an API key's credential and secret (for
wallboards), or with an invitation link. Each way records its failures (okr.store.sign_ins) and refuses,
with a 429 page and Retry-After, an address that failed too often.

A wrong email and a wrong password get the same answer and take the same time: an unknown email, or a
user without a password, is checked against a dummy hash. Only after a correct password is a deactivated
account told so.
"""
import time

from flask import request

from .. import access, proxies
from ..db import READ_METHODS, begin_write, commit_now, get_connection, get_db
from ..emails import email_key
from ..rules import passwords
from ..store import invitations, password_resets, sign_ins, users
from .errors import PageError

WRONG_PASSWORD = "Unknown email, or wrong password."
WRONG_KEY = "Unknown or revoked credential, or wrong secret."
DEACTIVATED = "This account is deactivated. Ask an admin to reactivate it."
DEACTIVATED_KEY = "This API key's user is deactivated. Ask an admin to reactivate the account."


class SignInRefused(Exception):
    """A sign-in that did not work; its message is for the page."""


def client_address():
    return proxies.request_client()


def refuse_if_throttled(account):
    """A 429 page with Retry-After when this address failed too often, for this account or for all."""
    wait = sign_ins.wait_seconds(get_db(), client_address(), account, int(time.time()))
    if wait:
        minutes = -(-wait // 60)
        raise PageError(429, "Too many tries",
                        f"Too many failed sign-ins from your address. Try again in {minutes} minute"
                        f"{'s' if minutes != 1 else ''}.", [("Retry-After", str(wait))])


def record_failure(account):
    """Records a failure, kept even though the request then answers with an error (which rolls back)."""
    db = get_connection()
    if request.method in READ_METHODS:  # an invitation link opened: its read snapshot holds nothing to keep
        if db.in_transaction:
            db.execute("COMMIT")
        begin_write(db)
    sign_ins.record_failure(db, client_address(), account, int(time.time()))
    commit_now(db)


def failed(account, message):
    """Records a failure and refuses with message."""
    record_failure(account)
    raise SignInRefused(message)


def with_password(email, password):
    """The active user whose email and password these are; SignInRefused otherwise."""
    account = email_key(email)
    refuse_if_throttled(account)
    db = get_db()
    user = users.find_by_email(db, email) if email else None
    if not passwords.verify(user["password_hash"] if user else None, password):
        failed(account, WRONG_PASSWORD)
    if not user["is_active"]:
        raise SignInRefused(DEACTIVATED)
    return user


def with_key(credential, secret):
    """The live key whose credential and secret these are (okr.store.keys.find_live's row), whose user, if
    any, is active; SignInRefused otherwise."""
    refuse_if_throttled(credential)
    key = access.key_for_secret(get_db(), credential, secret)
    if key is None:
        failed(credential, WRONG_KEY)
    if access.key_actor(key) is None:
        raise SignInRefused(DEACTIVATED_KEY)
    return key


def invited_user(token):
    """The user a valid invitation with this token is for; a 404 page otherwise (counted as a failure)."""
    refuse_if_throttled(sign_ins.INVITATION)
    user = invitations.invited_user(get_db(), token)
    if user is None:
        record_failure(sign_ins.INVITATION)
        raise PageError(404, "Invitation not valid",
                        "This invitation link is unknown, used or past its 7 days. Ask an admin for a new one.")
    return user


def reset_user(token):
    """The user a valid password reset with this token is for; a 404 page otherwise (counted as a failure)."""
    refuse_if_throttled(sign_ins.PASSWORD_RESET)
    user = password_resets.user_for(get_db(), token)
    if user is None:
        record_failure(sign_ins.PASSWORD_RESET)
        raise PageError(404, "Reset link not valid",
                        "This password reset link is unknown, used or past its hour. Ask for a new one on the "
                        "sign-in page.")
    return user


def count_reset_request(email):
    """Throttles the emails of password reset links like sign-ins: every request counts as a failure would,
    for the email asked for and for the address. A 429 page once there were too many."""
    account = sign_ins.RESET_REQUEST + email_key(email)
    refuse_if_throttled(account)
    sign_ins.record_failure(get_db(), client_address(), account, int(time.time()))
