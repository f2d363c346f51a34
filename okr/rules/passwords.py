"""Passwords: the rule a new one must meet, and argon2id hashing (argon2-cffi).

The parameters: 2 passes over 64 MiB in 1 lane, above OWASP's minimum (19 MiB, 2 passes,
1 lane). RFC 9106's low-memory profile (argon2-cffi's default) takes 3 passes in 4 lanes, but
the server runs on one CPU by default, where lanes run one after another: docs/design.md gives
the time a sign-in takes. At most HASHING_AT_ONCE hashes run at a time in a process, so that a
burst of sign-ins costs that many times 64 MiB, not one per server thread; okr.web.sign_in also
bounds how many sign-ins may wait for one.

The common passwords are the 10,000 most common of the list Django ships
(common-passwords.txt.gz beside this file: Royce Williams's list of 20,000, most common
first, lowercased; BSD licence), compared lowercased as Django does.
"""
import gzip
import secrets
import threading
from functools import lru_cache
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_LENGTH = 12
MAX_LENGTH = 1024
HASHING_AT_ONCE = 2
COMMON_PASSWORDS = Path(__file__).with_name("common-passwords.txt.gz")

hasher = PasswordHasher(time_cost=2, memory_cost=64 * 1024, parallelism=1)  # argon2id
hashing = threading.BoundedSemaphore(HASHING_AT_ONCE)


@lru_cache(maxsize=1)
def common_passwords():
    with gzip.open(COMMON_PASSWORDS, "rt", encoding="utf-8") as lines:
        return frozenset(line.strip() for line in lines)


def problem(password):
    """What is wrong with a new password, worded for people; None when it will do."""
    if not isinstance(password, str) or len(password) < MIN_LENGTH:
        return f"Choose a password of at least {MIN_LENGTH} characters (a few words make a good one)."
    if len(password) > MAX_LENGTH:
        return f"Choose a password of at most {MAX_LENGTH:,} characters."
    if "\x00" in password:
        return "A password cannot hold a NUL character."
    if password.strip().lower() in common_passwords():
        return "This password is one of the most common ones, which are guessed first: choose another."
    return None


def hash_password(password):
    """The argon2id hash to store (salt and parameters included)."""
    with hashing:
        return hasher.hash(password)


def verify(password_hash, password):
    """Whether password is the one password_hash was made from. A missing hash (no password set) takes the
    time of a real check too, so that the answer's time does not tell which accounts exist or have one."""
    with hashing:
        try:
            return hasher.verify(password_hash or dummy_hash(), password) and password_hash is not None
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False


@lru_cache(maxsize=1)
def dummy_hash():
    """A hash of a random password, with the same parameters: checked against for an unknown account."""
    return hasher.hash(secrets.token_urlsafe(16))
