"""The lock that tells `okr restore` whether a server is serving a database.

Every server holds a shared flock(2) on DATABASE.lock for as long as it runs, so
several may serve one file; a restore asks for it exclusively, without waiting.
The kernel drops the lock when a process ends, however it ends.

A file of its own rather than the database: SQLite locks the database with POSIX
fcntl locks, and those are dropped when the process closes any descriptor of the
file. The lock file is never deleted: a process that opened a file since deleted
would hold a lock that nobody else sees.
"""
import fcntl
import os
from contextlib import contextmanager


def lock_path(database):
    # realpath: every spelling of the database, symlinks too, shares one lock file.
    return os.path.realpath(database) + ".lock"


def open_lock_file(database):
    return os.open(lock_path(database), os.O_RDWR | os.O_CREAT, 0o600)


def hold_shared(database):
    """Marks the database as served until this process ends; waits while a restore runs.

    Returns the lock file's descriptor, which stays open: closing it ends the lock.
    """
    descriptor = open_lock_file(database)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


@contextmanager
def exclusive(database):
    """Yields True while holding the lock alone, or False when a server holds it."""
    descriptor = open_lock_file(database)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            alone = True
        except BlockingIOError:
            alone = False
        yield alone
    finally:
        os.close(descriptor)
