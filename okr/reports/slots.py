"""At most a few big reports and exports built at once, across every process serving one database.

A slot is an exclusive flock on one of `count` lock files beside the database
(DATABASE.reports.lock.0 ... .N-1). flock locks belong to an open file, so two
threads of one process exclude each other as two processes do, and the kernel
drops a lock when its process dies: a crashed worker never keeps a slot. A
request tries the files in turn, without blocking, and polls until its deadline.
Knows nothing of Flask: okr/api/reports.py and the pages say what a wait that
runs out answers (503 with Retry-After).
"""
import fcntl
import os
import random
import time
from contextlib import contextmanager

from ..errors import Busy

POLL_SECONDS = 0.05


def lock_path(database, index):
    return f"{database}.reports.lock.{index}"


def try_slot(database, count):
    """An open, locked lock file (the slot, held until it is closed), or None when every slot is taken."""
    # Start at a random file: the first files are not always the most tried.
    start = random.randrange(count)
    for step in range(count):
        path = lock_path(database, (start + step) % count)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        return fd
    return None


@contextmanager
def report_slot(database, count, wait_seconds, retry_after, what="reports"):
    """Holds one of `count` slots of the database for the with block; raises Busy when none frees up within
    wait_seconds."""
    deadline = time.monotonic() + wait_seconds
    while True:
        fd = try_slot(database, count)
        if fd is not None:
            break
        if time.monotonic() >= deadline:
            raise Busy(what, retry_after)
        time.sleep(POLL_SECONDS)
    try:
        yield
    finally:
        os.close(fd)  # closing the file drops its lock
