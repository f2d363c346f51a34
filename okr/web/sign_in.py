"""Signing in, throttled: with an email and password, with an API key's credential and secret (for
wallboards), or with an invitation or password reset link. Each way records its failures (okr.store.sign_ins)
and refuses, with a 429 page and Retry-After, an address that failed too often. Only what sends a password or a
secret counts: a link merely opened counts nothing, and sign-in with the identity provider is never counted
(okr.web.oidc_pages).

A wrong email and a wrong password get the same answer and take the same time: an unknown email, or a
user without a password, is checked against a dummy hash. Only after a correct password is a deactivated
account told so.

A password's hash is slow on purpose (docs/design.md gives its time), so it runs outside any transaction: the
throttle and the account are read first, without the writers' lock, and the failure or the session is written
afterwards, in a short write. A sign-in waiting for a hash holds a server thread, so only a few of a process's
sign-ins may hash or wait to at once (turns_allowed); the others get a 503 page with Retry-After at once.
"""
import threading
import time
from contextlib import contextmanager

from flask import current_app, request

from .. import access, proxies
from ..addresses import address_key
from ..access import READ_METHODS
from ..db import get_connection, get_db, own_write
from ..emails import email_key
from ..rules import passwords
from ..store import invitations, password_resets, sign_ins, users
from .errors import PageError

WRONG_PASSWORD = "Unknown email, or wrong password."
WRONG_KEY = "Unknown or revoked credential, or wrong secret."
DEACTIVATED = "This account is deactivated. Ask an admin to reactivate it."
DEACTIVATED_KEY = "This API key's user is deactivated. Ask an admin to reactivate the account."
# What a sign-in that found no turn to hash is told to wait, in seconds: a turn lasts about one hash.
RETRY_AFTER = 1


class SignInRefused(Exception):
    """A sign-in that did not work; its message is for the page."""


def client_address():
    return proxies.request_client()


def throttled_address():
    """What the throttle counts this client by: its IPv4 address, or its IPv6 /64, as the connection cap does
    (a host commonly holds a whole /64, and would otherwise get the throttle's guesses once per address in it)."""
    return address_key(client_address())


def reads():
    """This request's connection for the reads before a password's hash: outside any transaction (each statement
    reads on its own), so that neither a snapshot nor the writers' lock is held while the hash runs."""
    return get_connection()


def refuse_if_throttled(account):
    """A 429 page with Retry-After when this address failed too often, for this account or for all."""
    wait = sign_ins.wait_seconds(reads(), throttled_address(), account, int(time.time()))
    if wait:
        minutes = -(-wait // 60)
        raise PageError(429, "Too many tries",
                        f"Too many failed sign-ins from your address. Try again in {minutes} minute"
                        f"{'s' if minutes != 1 else ''}.", [("Retry-After", str(wait))])


def record_failure(account):
    """Records a failure in a short write of its own, committed at once: it stays though the request then
    answers with an error (which rolls the request's transaction back)."""
    with own_write() as db:
        sign_ins.record_failure(db, throttled_address(), account, int(time.time()))


def failed(account, message):
    """Records a failure and refuses with message."""
    record_failure(account)
    raise SignInRefused(message)


ADMISSIONS_LOCK = threading.Lock()


def turns_allowed(config):
    """How many of a process's sign-ins may hash a password or wait to at once: twice the hashes that run at
    once (so that none waits longer than about one hash), and never more than half the server's threads."""
    return max(1, min(int(config["THREADS"]) // 2, 2 * passwords.HASHING_AT_ONCE))


def admissions():
    """This process's count of the sign-ins that may hash or wait to (made on first use, in each worker)."""
    extensions = current_app.extensions
    with ADMISSIONS_LOCK:
        if "okr_hashing_admissions" not in extensions:
            extensions["okr_hashing_admissions"] = threading.BoundedSemaphore(turns_allowed(current_app.config))
        return extensions["okr_hashing_admissions"]


@contextmanager
def hashing_turn():
    """A turn to hash or check a password, for the with block; a 503 page with Retry-After at once when every
    turn is taken, rather than a server thread held waiting (a flood of wrong passwords would hold them all)."""
    if not admissions().acquire(blocking=False):
        raise PageError(503, "Try again in a moment", "Many sign-ins are being checked just now. Try again in a "
                                                      "few seconds.", [("Retry-After", str(RETRY_AFTER))])
    try:
        yield
    finally:
        admissions().release()


def password_matches(password_hash, password):
    """passwords.verify in a hashing turn."""
    with hashing_turn():
        return passwords.verify(password_hash, password)


def new_password_hash(password):
    """passwords.hash_password in a hashing turn: call it before the request's write transaction begins."""
    with hashing_turn():
        return passwords.hash_password(password)


def with_password(email, password):
    """The active user whose email and password these are; SignInRefused otherwise."""
    account = email_key(email)
    refuse_if_throttled(account)
    user = users.find_by_email(reads(), email) if email else None
    if not password_matches(user["password_hash"] if user else None, password):
        failed(account, WRONG_PASSWORD)
    if not user["is_active"]:
        raise SignInRefused(DEACTIVATED)
    return user


def with_key(credential, secret):
    """The live key whose credential and secret these are (okr.store.keys.find_live's row), whose user, if
    any, is active; SignInRefused otherwise."""
    refuse_if_throttled(credential)
    key = access.key_for_secret(reads(), credential, secret)
    if key is None:
        failed(credential, WRONG_KEY)
    if access.key_actor(key) is None:
        raise SignInRefused(DEACTIVATED_KEY)
    return key


INVITATION_NOT_VALID = ("Invitation not valid",
                        "This invitation link is unknown, used or past its 7 days. Ask an admin for a new one.")
RESET_NOT_VALID = ("Reset link not valid",
                   "This password reset link is unknown, used or past its hour. Ask for a new one on the sign-in "
                   "page.")


def counts_as_a_try():
    """Whether a wrong link counts as a failed sign-in: only when a password is sent with it (a POST, which needs
    the form's CSRF token). Opening a link counts nothing: another site's page can make its visitors' browsers
    open any link, and would hold the sign-ins of everyone behind their addresses."""
    return request.method not in READ_METHODS


def invited_user(token):
    """The user a valid invitation with this token is for; a 404 page otherwise (a failure when a password was
    sent with it)."""
    refuse_if_throttled(sign_ins.INVITATION)
    user = invitations.invited_user(reads(), token)
    if user is None:
        if counts_as_a_try():
            record_failure(sign_ins.INVITATION)
        raise PageError(404, *INVITATION_NOT_VALID)
    return user


def still_invited(db, token):
    """The invitation's user once more, in the request's write transaction, once the new password's hash is made:
    the link may have been used meanwhile. A 404 page then, not counted (it was valid a moment ago)."""
    user = invitations.invited_user(db, token)
    if user is None:
        raise PageError(404, *INVITATION_NOT_VALID)
    return user


def reset_user(token):
    """The user a valid password reset with this token is for; a 404 page otherwise (a failure when a password
    was sent with it)."""
    refuse_if_throttled(sign_ins.PASSWORD_RESET)
    user = password_resets.user_for(reads(), token)
    if user is None:
        if counts_as_a_try():
            record_failure(sign_ins.PASSWORD_RESET)
        raise PageError(404, *RESET_NOT_VALID)
    return user


def still_reset(db, token):
    """The reset's user once more, in the request's write transaction, once the new password's hash is made: the
    link may have been used meanwhile. A 404 page then, not counted (it was valid a moment ago)."""
    user = password_resets.user_for(db, token)
    if user is None:
        raise PageError(404, *RESET_NOT_VALID)
    return user


def count_reset_request(email):
    """Throttles the emails of password reset links like sign-ins: every request counts as a failure would,
    for the email asked for and for the address. A 429 page once there were too many."""
    account = sign_ins.RESET_REQUEST + email_key(email)
    refuse_if_throttled(account)
    sign_ins.record_failure(get_db(), throttled_address(), account, int(time.time()))
