"""`okr serve --replicate URL`: Litestream as a child process of the server, restarted when it dies, stopped
(after its final sync) when the server exits, and watched for /healthz.

A thread of the serving process starts `litestream replicate` with a configuration in a private temporary
folder, relays the warnings and errors it logs into the server's log, and once a second asks its control
socket when the replica last caught up; it writes that, and the last error, to a status file beside the
database (the owner's only), which /healthz reads in whichever process answers it (a fixed word and the lag:
okr/server/litestream.py says how it is judged), and `okr replication status` shows in full to whoever may
read it. Once the replica has fallen behind, the server also looks at it itself (okr/server/replica_probe.py),
since Litestream says why an S3 upload failed only after all its retries.
"""
import atexit
import ctypes
import fcntl
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from ..store import schema, scratch
from . import litestream, replica_probe
from .workers import STARTING_CHILDREN, unblock_stop_signals

logger = logging.getLogger("okr")

PR_SET_PDEATHSIG = 1
# How long the server's exit waits for Litestream's final sync before it kills it.
STOP_SECONDS = litestream.SHUTDOWN_SYNC_SECONDS + 5
# Waits before starting Litestream again after it died: doubling from the first to the last, and back to
# the first once it has run for a minute.
FIRST_BACKOFF, LAST_BACKOFF, STEADY_SECONDS = 1, 60, 60
POLL_SECONDS = 1
# Litestream 0.5 logs a failed S3 upload only after all its retries: once the replica has not caught up for
# this long (or --replicate-max-lag, if shorter), the server looks at the replica itself, and again at most
# this often while it stays behind.
CHECK_AFTER_SECONDS = CHECK_EVERY_SECONDS = 10
# Litestream's folders in the temporary folder: held while a server uses one, and marked as okr's.
FOLDER_PREFIX = "okr-litestream-"
FOLDER_MARKER = ".okr-litestream"


def settings(config):
    """(replica settings, max lag in seconds) from the app's config; ReplicationError when they are wrong."""
    replica = litestream.replica(config["REPLICATE"], config.get("REPLICATE_ENDPOINT"))
    return replica, config["REPLICATE_MAX_LAG"]


def check_replication(config):
    """When --replicate is set: (replica settings, max lag, the litestream binary); ReplicationError (a
    ValueError) when a setting is wrong or Litestream is missing. Before the server makes anything."""
    if not config.get("REPLICATE"):
        return None
    replica, max_lag = settings(config)
    litestream.check_environment(replica)
    return replica, max_lag, litestream.usable_litestream()


def start_replication(app):
    """Starts replicating the app's database when --replicate is set; returns the Replicator, or None.

    Ends the program with one `okr:` line when the settings are wrong or Litestream is missing.
    """
    try:
        checked = check_replication(app.config)
    except litestream.ReplicationError as error:
        sys.exit(f"okr: {error}")
    if checked is None:
        return None
    replica, max_lag, binary = checked
    if not hold_replication_lock(app.config["DATABASE"]):
        # Two Litestreams shipping one database to one replica would corrupt it.
        sys.exit(f"okr: another server already replicates {app.config['DATABASE']}; serve it without "
                 "--replicate, or stop that server first")
    for name in scratch.remove_marked_leftovers(tempfile.gettempdir(), (FOLDER_PREFIX,), FOLDER_MARKER):
        logger.info("removed %s, Litestream's folder left by a server that was killed", name)
    # Litestream checkpoints the database alone from now on: docs/operations.md says why.
    schema.leave_checkpoints_to_litestream()
    replicator = Replicator(binary, app.config["DATABASE"], replica, app.config["BUSY_TIMEOUT_MS"], max_lag=max_lag)
    app.config["REPLICATION_STATUS"] = replicator.status_path
    app.config["REPLICATE_MAX_LAG"] = max_lag
    replicator.start()
    atexit.register(replicator.stop)
    logger.info("replicating to %s with %s", litestream.shown(app.config["REPLICATE"]), binary)
    return replicator


def hold_replication_lock(database):
    """Takes DATABASE.replication.lock (flock, exclusive) for the life of this process; False when another
    process holds it. Never released by hand: the kernel drops it when the process ends, however it ends."""
    descriptor = os.open(os.path.realpath(database) + ".replication.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return False
    return True


def replicated_now(database):
    """Whether a server replicates database now: it holds DATABASE.replication.lock (hold_replication_lock).
    Opened for reading only, and never created: `okr replication status` writes nothing."""
    try:
        descriptor = os.open(os.path.realpath(database) + ".replication.lock", os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)  # lets go of the lock, if this took it
    return False


def other_cpus():
    """Every CPU this process may not use but could: the server keeps to one (okr/server/startup.py), and
    Litestream, which would inherit that, takes the others, as the background process does."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    server = os.sched_getaffinity(0)
    everything = set(range(os.cpu_count() or 1))
    return (everything - server) or None


def prepare_child():
    """What runs in the child before exec: Linux sends it SIGTERM when the thread that started it ends,
    and it runs on the CPUs the server leaves free.

    When the server is killed outright, Litestream gets that SIGTERM once for each of the server's
    threads it is handed to as they die, and a second signal skips its last sync: it ends at once.
    A server that stops normally ends Litestream itself first (Replicator.stop).
    """
    # Resolved before the fork: the child only calls them.
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    cpus = other_cpus()

    def arrange():
        unblock_stop_signals()  # a supervising server's threads block them: Litestream must take its SIGTERM
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if cpus:
            try:
                os.sched_setaffinity(0, cpus)
            except OSError:
                pass  # CPUs this process may not have: the server's then

    return arrange


class Replicator:
    """Runs and watches one `litestream replicate` for the life of the server."""

    def __init__(self, binary, database, replica, busy_timeout_ms, first_backoff=FIRST_BACKOFF,
                 last_backoff=LAST_BACKOFF, poll_seconds=POLL_SECONDS, max_lag=litestream.DEFAULT_MAX_LAG):
        self.binary, self.database = binary, os.path.abspath(database)
        self.first_backoff, self.last_backoff, self.poll_seconds = first_backoff, last_backoff, poll_seconds
        self.folder = tempfile.mkdtemp(prefix=FOLDER_PREFIX)  # private: mkdtemp makes it 0700
        self.holding = scratch.hold_marked(self.folder, FOLDER_MARKER)
        self.config_path = os.path.join(self.folder, "litestream.yml")
        self.socket_path = os.path.join(self.folder, "control.sock")
        self.status_path = litestream.status_path(self.database)
        self.replica = replica
        self.check_after = min(CHECK_AFTER_SECONDS, max_lag)
        self.checked_at = None  # when the server last looked at the replica itself (time.monotonic())
        self.checking = None  # the thread looking, while it looks
        self.reported = None  # the reason last logged, until the replica answers or catches up again
        litestream.write_private(self.config_path, litestream.config_text(
            self.database, replica, self.socket_path, busy_timeout_ms))
        self.status = {"since": time.time(), "synced_at": None, "error": None, "error_at": None, "pid": None,
                       "restarts": 0, "stopped_at": None, "max_lag": max_lag,
                       "replica": litestream.shown(replica["url"]),
                       "endpoint": litestream.shown(replica["endpoint"]) if replica.get("endpoint") else None}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.signalled = threading.Event()  # Litestream got a signal (Ctrl-C, systemd stopping the unit)
        self.process = None
        self.thread = None
        self.owner = os.getpid()  # a forked process inherits the atexit hook, never the child
        self.save()

    def save(self):
        with self.lock:
            status = dict(self.status, written_at=time.time())
        try:
            litestream.write_status(self.status_path, status)
        except OSError:
            logger.exception("cannot write the replication status")

    def note_error(self, text):
        with self.lock:
            self.status["error"], self.status["error_at"] = text, time.time()

    def start(self):
        # One thread starts every litestream, and lives as long as the server: PR_SET_PDEATHSIG
        # fires when the starting thread ends, not the process.
        self.thread = threading.Thread(target=self.supervise, name="okr-litestream", daemon=True)
        self.thread.start()

    def launch(self):
        command = [self.binary, "replicate", "-config", self.config_path, "-no-expand-env"]
        self.signalled.clear()  # of the Litestream before, if any
        # restore_signals=False: SIGPIPE stays ignored, as Python has it. A Go program whose stderr is a
        # pipe nobody reads any more dies at its next log line unless SIGPIPE is ignored: Litestream
        # would end in the middle of its last sync, should the server stop reading its log first.
        with STARTING_CHILDREN:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, text=True, errors="replace", close_fds=True,
                                       restore_signals=False, preexec_fn=prepare_child())
        with self.lock:
            self.process = process
            self.status["pid"] = process.pid
        threading.Thread(target=self.relay, args=(process,), name="okr-litestream-log", daemon=True).start()
        return process

    def relay(self, process):
        """Litestream's log into the server's: warnings and errors, the errors kept; the rest is only looked at."""
        for line in process.stderr:
            level, message = litestream.log_record(line)
            if level == "ERROR":
                self.note_error(message)
                logger.error("litestream: %s", message)
            elif level == "WARN":
                logger.warning("litestream: %s", message)
            elif message == litestream.SHUTTING_DOWN and process is self.process:
                self.signalled.set()

    def supervise(self):
        backoff = self.first_backoff
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                process = self.launch()
            except OSError as error:
                self.note_error(f"cannot start litestream: {error}")
                logger.error("cannot start litestream: %s", error)
                process = None
            while process is not None and process.poll() is None and not self.stopping.is_set():
                self.poll()
                self.stopping.wait(self.poll_seconds)
            if self.stopping.is_set():
                if process is not None:
                    # Until Litestream has ended: PR_SET_PDEATHSIG would signal it again when this
                    # thread ends, and a second signal cuts its final sync short.
                    process.wait()
                return
            why = "did not start"
            if process is not None:
                process.wait()
                why = describe_exit(process.returncode)
                self.note_error(f"litestream {why}")
            if time.monotonic() - started >= STEADY_SECONDS:
                backoff = self.first_backoff
            logger.error("litestream %s; starting it again in %s s", why, backoff)
            with self.lock:
                self.status["pid"] = None
                self.status["restarts"] += 1
            self.save()
            if self.stopping.wait(backoff):
                return
            backoff = min(backoff * 2, self.last_backoff)

    def poll(self):
        """Asks Litestream when the replica last caught up, and saves the status."""
        try:
            synced = litestream.last_sync(self.socket_path, self.database)
        except (OSError, ValueError):
            synced = None  # not listening yet, busy, or unreadable: the lag goes on counting from the last answer
        except Exception:
            # Any other answer this reading did not foresee: this thread must outlive it, or nobody would
            # restart Litestream nor save its errors for /healthz.
            logger.exception("cannot read litestream's status")
            synced = None
        if synced is not None:
            with self.lock:
                self.status["synced_at"] = max(synced, self.status["synced_at"] or 0)
        self.save()
        self.look_if_behind()

    def look_if_behind(self):
        """Looks at the replica in a thread of its own (the store may take its timeout to answer) once it is
        check_after seconds behind, then at most every CHECK_EVERY_SECONDS, one look at a time."""
        with self.lock:
            behind = litestream.lag(self.status, time.time())
        if behind < self.check_after:
            if self.reported is not None:
                logger.info("replica check: the replica has caught up again")
                self.reported = None  # the next failure is logged again
            return
        now = time.monotonic()
        if (self.checking is not None and self.checking.is_alive()) or (
                self.checked_at is not None and now - self.checked_at < CHECK_EVERY_SECONDS):
            return
        self.checked_at = now
        self.checking = threading.Thread(target=self.look, args=(behind,), name="okr-replica-check", daemon=True)
        self.checking.start()

    def look(self, behind):
        try:
            reason = replica_probe.check(self.replica)
        except Exception:  # a look that failed in a way nobody foresaw must not pass for an answer, nor end quietly
            logger.exception("cannot look at the replica")
            return
        if reason is None:
            self.reported = None
            return
        self.note_error(f"replica check: {reason}")  # saved by the next poll, in the supervising thread
        if reason != self.reported:
            self.reported = reason
            logger.error("replica check: %s (the replica has not caught up for %.0f s)", reason, behind)

    def stop(self):
        """At the server's exit: lets Litestream ship what is left (its final sync), then removes the folder."""
        if os.getpid() != self.owner:
            return
        self.stopping.set()
        with self.lock:
            process = self.process
        if process is not None and process.poll() is None:
            try:
                # A signal that reached the whole process group reached Litestream too: it is shipping
                # what is left, and a second signal would cut that short.
                if not self.signalled.wait(0.2):
                    process.terminate()
                process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                logger.error("litestream did not stop within %s s; killing it", STOP_SECONDS)
                process.kill()
                process.wait()
        if self.thread is not None:
            self.thread.join(timeout=5)
        with self.lock:
            self.status["pid"], self.status["stopped_at"] = None, time.time()
        self.save()  # kept: `okr replication status` says how replication ended
        shutil.rmtree(self.folder, ignore_errors=True)
        os.close(self.holding)


def describe_exit(status):
    if status is not None and status < 0:
        try:
            return f"was killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"exited with status {status}"
