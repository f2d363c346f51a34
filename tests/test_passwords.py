"""Passwords: argon2id at or above OWASP's minimum, 12 to 1,024 characters, the 10,000 most common refused."""
import gzip
import os
import sys
import threading

import pytest
from argon2.low_level import Type
from argon2 import extract_parameters

from okr.accounts import passwords


def test_hashes_are_argon2id_with_at_least_owasps_minimum_parameters():
    made = passwords.hash_password("a long enough password")
    parameters = extract_parameters(made)
    assert made.startswith("$argon2id$") and parameters.type is Type.ID
    # OWASP: 19 MiB, 2 passes, 1 lane at the least (or more memory with fewer passes).
    assert parameters.memory_cost >= 19 * 1024 and parameters.time_cost >= 2 and parameters.parallelism >= 1
    assert "a long enough password" not in made


def test_a_hash_verifies_its_own_password_only():
    made = passwords.hash_password("a long enough password")
    assert passwords.verify(made, "a long enough password")
    assert not passwords.verify(made, "a long enough passworD")
    assert not passwords.verify(None, "a long enough password")  # no password set: never a match
    assert not passwords.verify("not a hash", "a long enough password")


def test_two_hashes_of_one_password_differ_by_their_salt():
    assert passwords.hash_password("a long enough password") != passwords.hash_password("a long enough password")


def test_the_shipped_list_holds_the_10000_most_common_passwords():
    with gzip.open(passwords.COMMON_PASSWORDS, "rt", encoding="utf-8") as lines:
        listed = [line.strip() for line in lines]
    assert len(listed) == 10_000 == len(set(listed))
    assert listed[:4] == ["123456", "123456789", "qwerty", "password"]  # most common first
    assert passwords.common_passwords() == frozenset(listed)


@pytest.mark.parametrize("password, wanted", [
    ("short", "at least 12 characters"),
    ("elevenchars", "at least 12 characters"),
    ("x" * 1025, "at most 1,024 characters"),
    ("q1w2e3r4t5y6", "most common"),
    ("Q1W2E3R4T5Y6", "most common"),  # compared lowercased
    ("1qaz2wsx3edc", "most common"),
    ("nul\x00character", "NUL"),
])
def test_bad_new_passwords_are_refused_with_a_reason(password, wanted):
    assert wanted in passwords.problem(password)


@pytest.mark.parametrize("password", ["twelve chars", "x" * 1024, "correct horse battery staple", "ünïcödé pässwörd"])
def test_good_new_passwords_need_no_composition(password):
    assert passwords.problem(password) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread has a nice value of its own on Linux only")
def test_hashes_run_on_threads_of_their_own_at_a_lower_priority(monkeypatch):
    seen = []
    real = passwords.hasher

    class Watched:
        def hash(self, password):
            seen.append((threading.current_thread().name, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
            return real.hash(password)

        def verify(self, stored, password):
            self.hash(password)
            return real.verify(stored, password)

    monkeypatch.setattr(passwords, "hasher", Watched())
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    made = passwords.hash_password("a long enough password")
    assert passwords.verify(made, "a long enough password")
    assert len(seen) == 2 and all(name.startswith("okr-hash") for name, _ in seen)
    assert all(niceness >= passwords.HASHING_NICENESS for _, niceness in seen)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before  # the caller's is left as it was
