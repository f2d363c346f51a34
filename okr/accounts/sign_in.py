"""Signing in and out: with an email and password, or with an API key's credential and secret (for wallboards),
each throttled (okr.accounts.throttle) and each opening a session (okr.accounts.sessions); a person's password
change, and signing out everywhere. A wrong password or secret counts as a failure for the throttle; sign-in
with the identity provider is never counted (okr.accounts.single_sign_on), nor is a link merely opened
(okr.accounts.password_links).

A wrong email and a wrong password get the same answer and take the same time: an unknown email, or a
user without a password, is checked against a dummy hash. Only after a correct password is a deactivated
account told so.

A password's hash is slow on purpose (docs/design.md gives its time), so it runs outside any transaction: the
throttle and the account are read first, without the writers' lock, and the failure or the session is written
afterwards, in a short write. A sign-in waiting for a hash holds a server thread, so only a few of a process's
sign-ins may hash or wait to at once (turns_allowed); the others are refused at once (SignInsBusy).
"""
import threading
from contextlib import contextmanager

from flask import current_app

from ..db import get_connection, get_db
from ..rules.email_addresses import email_key
from ..store import assistant_grants
from ..store import sessions as session_rows
from ..store import users
from . import access, passwords, sessions, throttle

WRONG_PASSWORD = "Unknown email, or wrong password."
WRONG_KEY = "Unknown or revoked credential, or wrong secret."
DEACTIVATED = "This account is deactivated. Ask an admin to reactivate it."
DEACTIVATED_KEY = "This API key's user is deactivated. Ask an admin to reactivate the account."
NOT_YOUR_PASSWORD = "This is not your current password."
# What a sign-in that found no turn to hash is told to wait, in seconds: a turn lasts about one hash.
RETRY_AFTER = 1


class SignInRefused(Exception):
    """A sign-in that did not work; its message is for the page."""


class SignInsBusy(Exception):
    """Every turn to hash a password is taken: the sign-in may be tried again after retry_after seconds."""

    def __init__(self, retry_after):
        super().__init__(f"many sign-ins are being checked: retry in {retry_after} s")
        self.retry_after = retry_after


def reads():
    """This request's connection for the reads before a password's hash: outside any transaction (each statement
    reads on its own), so that neither a snapshot nor the writers' lock is held while the hash runs."""
    return get_connection()


def failed(account, message):
    """Records a failure and refuses with message."""
    throttle.record_failure(account)
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
    """A turn to hash or check a password, for the with block; SignInsBusy at once when every turn is taken,
    rather than a server thread held waiting (a flood of wrong passwords would hold them all)."""
    if not admissions().acquire(blocking=False):
        raise SignInsBusy(RETRY_AFTER)
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
    throttle.refuse_if_throttled(account)
    user = users.find_by_email(reads(), email) if email else None
    if not password_matches(user["password_hash"] if user else None, password):
        failed(account, WRONG_PASSWORD)
    if not user["is_active"]:
        raise SignInRefused(DEACTIVATED)
    return user


def with_key(credential, secret):
    """The live key whose credential and secret these are (okr.store.keys.find_live's row), whose user, if
    any, is active; SignInRefused otherwise."""
    throttle.refuse_if_throttled(credential)
    key = access.key_for_secret(reads(), credential, secret)
    if key is None:
        failed(credential, WRONG_KEY)
    if access.key_actor(key) is None:
        raise SignInRefused(DEACTIVATED_KEY)
    return key


def sign_in_with_password(email, password):
    """Signs this browser in as the active user whose email and password these are (a session of theirs); the
    user, or SignInRefused."""
    user = with_password(email, password)
    sessions.log_in(user_id=user["id"])
    return user


def sign_in_with_key(credential, secret):
    """Signs this browser in with a live API key (a session of the key's); the key, or SignInRefused."""
    key = with_key(credential, secret)
    sessions.log_in(credential=key["credential"])
    return key


def sign_out():
    """Ends this browser's session for good; whether the identity provider had opened it (the sign-in page then
    offers to sign out there too: okr.accounts.single_sign_on)."""
    via_provider = sessions.opened_via_provider()
    sessions.log_out()
    return via_provider


def change_password(user, current, new):
    """Gives the signed-in person (user: their row) the password new once current is theirs; their other
    sessions end. {field: why not} when it was not changed, else {}."""
    problems = {}
    try:
        with_password(user["email"], current)
    except SignInRefused:
        problems["current_password"] = NOT_YOUR_PASSWORD
    problem = passwords.problem(new)
    if problem:
        problems["password"] = problem
    if problems:
        return problems
    password_hash = new_password_hash(new)  # before the write transaction: it takes a while
    users.set_password(get_db(), user, password_hash, keep_token=sessions.session_token())
    return {}


def sign_out_everywhere(user):
    """Ends every session of the person (user: their row), this browser's included, and every assistant they
    connected (personal tokens and OAuth grants alike)."""
    session_rows.end_users(get_db(), user["id"])
    assistant_grants.end_all_of(get_db(), user["id"])
    sessions.forget_session()
