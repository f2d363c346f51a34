"""The single-file executable at run time (PyInstaller's one-file mode: okr/server/build.py).

Its launcher (PyInstaller's bootloader) unpacks the program into a folder `_MEI…` of the temporary folder and
runs it as its child: okr, a command or the server's supervisor. Killed outright (SIGKILL), the launcher can
neither stop okr nor remove that folder. So okr asks Linux for SIGTERM when the launcher dies (PR_SET_PDEATHSIG),
which stops a server as Ctrl-C does (its workers, background process and Litestream follow the supervisor), and
holds its folder (flock, with a marker: okr/store/scratch.py) for its life; every start removes the marked
folders that no process holds any more.
"""
import ctypes
import os
import signal
import sys

from ..store import scratch

PR_SET_PDEATHSIG = 1
PREFIX = "_MEI"
MARKER = ".okr-unpacked"
# The launcher's folders of runs that were gone, removed at this start; the descriptor that holds this run's.
removed_at_start = []
holding = []


def unpacked_folder():
    """The folder the launcher unpacked this run into; None when this is no one-file executable."""
    folder = getattr(sys, "_MEIPASS", None) if getattr(sys, "frozen", False) else None
    if folder and os.path.basename(folder).startswith(PREFIX):
        return folder
    return None


def launcher_pid(folder):
    """The launcher's pid: PyInstaller names the folder after it (_MEI, then the pid in 8 hex digits); else the
    parent's now (one from before this check could be reused)."""
    try:
        return int(os.path.basename(folder)[len(PREFIX):len(PREFIX) + 8], 16)
    except ValueError:
        return os.getppid()


def parent_death_signal(number):
    """Asks Linux to send this process the signal when the thread that started it ends."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, number)


def follow_launcher(launcher):
    """SIGTERM to this process when the launcher ends. From the main thread, before any other starts (the
    request is the calling thread's); the launcher has one thread."""
    parent_death_signal(signal.SIGTERM)
    if os.getppid() != launcher:
        # It died before the request: nothing will send the signal.
        os.kill(os.getpid(), signal.SIGTERM)


def at_start():
    """In the executable's first moments: holds this run's folder, follows the launcher, and removes the folders
    of runs that are gone. Nothing outside the one-file executable."""
    folder = unpacked_folder()
    if folder is None:
        return
    # Held before the launcher is followed: a run ended by its signal leaves a folder the next one removes.
    try:
        holding.append(scratch.hold_marked(folder, MARKER))
    except OSError:
        pass  # unmarked, it is only never removed by another run: no reason not to run
    follow_launcher(launcher_pid(folder))
    removed_at_start[:] = scratch.remove_marked_leftovers(os.path.dirname(folder), (PREFIX,), MARKER)
