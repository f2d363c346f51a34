"""Scratch folders beside the database, for work that holds a full copy of it (a restore's staged backup, an
upgrade's backup being written, a dry run's copy), and the removal of those a killed run left behind; the same
for okr's folders in the shared temporary folder (the single-file executable's unpacked program, Litestream's
configuration), which are marked.

A copy holds every API key's secret, so it lives beside the database (never in a shared temporary
folder), private to its owner, and is removed when the work ends. A run killed with SIGKILL cannot
remove it: the next command of the kind, and `okr serve` on start, remove every scratch folder that
no process holds. A run holds its folder with flock(2), which the kernel drops when the process ends,
however it ends. In the shared temporary folder, where no lock on the parent can be taken, a folder also holds a
marker, written once the folder is held: one without it is being made, or is no okr's, and is left alone.
"""
import fcntl
import os
import shutil
import tempfile
from contextlib import contextmanager

KINDS = ("restore", "dry-run", "upgrade")


def prefix(kind):
    return f".okr-{kind}-"


@contextmanager
def holding(path):
    """An exclusive flock on a folder for as long as the block runs."""
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield descriptor
    finally:
        os.close(descriptor)


@contextmanager
def scratch_folder(database, kind):
    """A new private folder beside database, held by this process until the block ends, then removed."""
    parent = os.path.dirname(os.path.abspath(database))
    # Made and held under the parent's lock: a cleanup scanning meanwhile never finds it made but not held.
    with holding(parent):
        folder = tempfile.mkdtemp(dir=parent, prefix=prefix(kind))
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(descriptor, fcntl.LOCK_EX)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os.close(descriptor)


def remove_leftovers(database, kinds=KINDS):
    """Removes the scratch folders of these kinds beside database that no process holds; returns their names."""
    folder = os.path.dirname(os.path.abspath(database))
    removed = []
    try:
        with holding(folder):
            remove_unheld(folder, kinds, removed)
    except OSError:
        pass  # a folder that cannot be read or locked holds nothing of ours to remove
    return removed


def remove_unheld(folder, kinds, removed):
    return remove_unheld_folders(folder, tuple(prefix(kind) for kind in kinds), removed)


def hold_marked(folder, marker):
    """Holds folder (flock) for the life of this process and the processes it forks, then writes marker in it;
    the descriptor that holds it."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(descriptor, fcntl.LOCK_EX)  # waits while a cleanup looks at it
    os.close(os.open(os.path.join(folder, marker), os.O_WRONLY | os.O_CREAT, 0o600))
    return descriptor


def remove_marked_leftovers(folder, prefixes, marker):
    """Removes the folders of folder (the shared temporary folder) named with one of prefixes, owned by this user,
    holding marker and held by no process; returns their names."""
    removed = []
    try:
        remove_unheld_folders(folder, prefixes, removed, marker)
    except OSError:
        pass  # a folder that cannot be read holds nothing of ours to remove
    return removed


def remove_unheld_folders(folder, prefixes, removed, marker=None):
    for name in os.listdir(folder):
        if not name.startswith(prefixes):
            continue
        path = os.path.join(folder, name)
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue  # not a folder, or a link: not ours to remove
        try:
            if marker is not None and os.fstat(descriptor).st_uid != os.geteuid():
                continue  # another user's
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a run is using it
            if marker is not None and not os.path.isfile(os.path.join(path, marker)):
                continue  # being made (its maker waits for this lock), or not okr's
            shutil.rmtree(path, ignore_errors=True)
            removed.append(name)
        finally:
            os.close(descriptor)
    return removed
