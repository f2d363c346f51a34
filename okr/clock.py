"""The time every write stamps and reports count from, and the ids of new rows: one of each for the whole program.

Every module reads the time through this one (`clock.utc_now()`), never a copy of the function of its own, so that
a test sets one clock for them all. new_id is imported by name: a test may fix the ids of some modules only.
"""
import os
import threading
import uuid
from contextvars import ContextVar
from datetime import datetime, timezone

# The time every write stamps, when set: `okr demo` dates the rows it makes in the past. Unset, the clock's.
stamped_time = ContextVar("stamped_time", default=None)


def utc_now():
    """The current time as RFC 3339 UTC to the second, e.g. 2026-11-22T10:15:30Z."""
    moment = stamped_time.get()
    return (moment or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")


# Randomness for new ids, read from the OS 256 ids at a time: os.urandom
# releases the GIL, and under load every release hands the CPU to another thread.
_id_entropy = threading.local()


def entropy_chunks():
    while True:
        block = os.urandom(16 * 256)
        for start in range(0, len(block), 16):
            yield block[start:start + 16]


def new_id():
    """A new lowercase UUID4, as uuid.uuid4() would make it."""
    if not hasattr(_id_entropy, "chunks"):
        _id_entropy.chunks = entropy_chunks()
    return str(uuid.UUID(bytes=next(_id_entropy.chunks), version=4))


def fresh_ids():
    """Drops the randomness read ahead for new ids: a forked process must never hand out its parent's."""
    global _id_entropy
    _id_entropy = threading.local()
