"""Passwords: the rule a new one must meet, and argon2id hashing (argon2-cffi).

The parameters: 2 passes over 64 MiB in 1 lane, above OWASP's minimum (19 MiB, 2 passes,
1 lane). RFC 9106's low-memory profile (argon2-cffi's default) takes 3 passes in 4 lanes, but
the server runs on one CPU by default, where lanes run one after another: docs/design.md gives
the time a sign-in takes. Hashes run on HASHING_AT_ONCE threads of the process's own, so that a
burst of sign-ins costs that many times 64 MiB, not one per server thread; okr.accounts.sign_in also
bounds how many sign-ins may wait for one. Those threads run at a lower CPU priority than the
server's others (Linux): a flood of sign-ins takes the CPU that the rest of the work leaves, rather
than a share of it that makes every other request wait.

The common passwords are the 10,000 most common of the list Django ships
(common-passwords.txt.gz beside this file: Royce Williams's list of 20,000, most common
first, lowercased; BSD licence), compared lowercased as Django does.
"""
import gzip
import os
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_LENGTH = 12
MAX_LENGTH = 1024
HASHING_AT_ONCE = 2
# The hashing threads' nice value: the scheduler then gives a thread of the server's own several times their
# CPU share, and a hash still ends while the server is busy. docs/design.md has the figures.
HASHING_NICENESS = 10
COMMON_PASSWORDS = Path(__file__).with_name("common-passwords.txt.gz")

hasher = PasswordHasher(time_cost=2, memory_cost=64 * 1024, parallelism=1)  # argon2id


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


def lower_priority():
    """Runs first in each hashing thread: HASHING_NICENESS for that thread alone (on Linux a thread has a nice
    value of its own). Where that cannot be, the hashes share the CPU as any thread does."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), HASHING_NICENESS)
    except (AttributeError, OSError):
        pass


POOL_LOCK = threading.Lock()
pool, pool_process = None, None


def hashing_threads():
    """This process's hashing threads (made on first use, again in a forked process, which has none)."""
    global pool, pool_process
    with POOL_LOCK:
        if pool is None or pool_process != os.getpid():
            pool = ThreadPoolExecutor(HASHING_AT_ONCE, thread_name_prefix="okr-hash", initializer=lower_priority)
            pool_process = os.getpid()
        return pool


def hash_password(password):
    """The argon2id hash to store (salt and parameters included)."""
    return hashing_threads().submit(lambda: hasher.hash(password)).result()


def verify(password_hash, password):
    """Whether password is the one password_hash was made from. A missing hash (no password set) takes the
    time of a real check too, so that the answer's time does not tell which accounts exist or have one."""
    return hashing_threads().submit(matches, password_hash, password).result()


def matches(password_hash, password):
    try:
        return hasher.verify(password_hash or dummy_hash(), password) and password_hash is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


@lru_cache(maxsize=1)
def dummy_hash():
    """A hash of a random password, with the same parameters: checked against for an unknown account."""
    return hasher.hash(secrets.token_urlsafe(16))
