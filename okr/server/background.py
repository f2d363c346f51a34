"""The server's background work, in a process of its own, one per database however many servers serve it.

`okr serve` forks it before it starts serving (run_beside). It holds an exclusive flock(2) on
DATABASE.background.lock while it works: the first server's child takes it, the others' children wait
for it and take over when that process ends, however it ends. A process of its own, so that sending
webhooks and mail never takes the server's CPU (the server keeps to one, okr/server/startup.py) or its GIL,
and a slow receiver never holds a worker thread. It ends when its server ends, SIGKILL included.

Each job of JOBS runs in a thread of that process, as job(app, stop): it works until the threading.Event
stop is set, reading and writing the database through connections of its own.
"""
import ctypes
import fcntl
import logging
import os
import signal
import sys
import threading
import time
from contextlib import closing

from ..outbound.chat_digest import chat_digest_job
from ..outbound.notification_mail import notification_mail_job
from ..outbound.webhook_queue import deliver_webhooks
from ..outbound.weekly_emails import weekly_mail_job
from ..sources.syncing import sync_sources_job
from ..store import assistant_grants, events
from ..store.schema import connect
from .workers import STARTING_CHILDREN, unblock_stop_signals

logger = logging.getLogger("okr")

# How often a waiting process tries the lock, and checks that its server is still there.
LOCK_RETRY_SECONDS = 1
PRUNE_EVERY_SECONDS = 3600
PR_SET_PDEATHSIG = 1


def lock_path(database):
    return os.path.realpath(database) + ".background.lock"


def prune_events(app, stop):
    """Job: deletes the events older than the retention period, and the assistants' grants past their tokens' ends
    (with expired authorization codes), now and every hour."""
    while not stop.is_set():
        try:
            with closing(connect(app.config["DATABASE"], app.config["BUSY_TIMEOUT_MS"])) as db:
                pruned = events.prune_now(db, app.config["EVENT_RETENTION_DAYS"])
                ended = assistant_grants.delete_expired_now(db)
            if pruned:
                logger.info("pruned %d events older than %s days", pruned, app.config["EVENT_RETENTION_DAYS"])
            if ended:
                logger.info("forgot %d expired assistants' grants", ended)
        except Exception:  # a busy or broken database: tried again at the next round
            logger.exception("pruning events and expired grants failed")
        stop.wait(PRUNE_EVERY_SECONDS)


# (name, job): the jobs of the background process.
JOBS = [("prune events", prune_events), ("weekly mail", weekly_mail_job), ("chat digest", chat_digest_job),
        ("deliver webhooks", deliver_webhooks), ("sync sources", sync_sources_job),
        ("notification mail", notification_mail_job)]


def run_jobs(app, stop, jobs=None):
    """Runs each job in a thread until stop is set; returns the threads."""
    threads = []
    for name, job in jobs or JOBS:
        thread = threading.Thread(target=job, args=(app, stop), name=f"okr-{name}", daemon=True)
        thread.start()
        threads.append(thread)
    return threads


def die_with_parent():
    """Asks Linux to SIGTERM this process when its parent ends (also checked by polling: other systems)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def spread_over_cpus():
    """Lets this process use every CPU but the server's, which keeps to one."""
    if not hasattr(os, "sched_setaffinity"):
        return
    server = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    except OSError:
        return
    others = os.sched_getaffinity(0) - server
    if others:
        os.sched_setaffinity(0, others)


class Stopped(Exception):
    """SIGTERM reached the background process (its server ended, or is ending)."""


def stop_now(signum, frame):
    # Raises rather than sets the stop event: the handler runs in the main thread, which may be inside the
    # event's own lock (waiting on it), and Event.set() there would wait for that lock forever.
    raise Stopped()


def serve_background(app, parent):
    """The background process's life: wait for the lock, run the jobs, end when the parent does."""
    stop, threads = threading.Event(), []
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the server, which ends this
    signal.signal(signal.SIGTERM, stop_now)
    unblock_stop_signals()  # forked from a supervising server, whose main thread blocks them
    try:
        descriptor = os.open(lock_path(app.config["DATABASE"]), os.O_RDWR | os.O_CREAT, 0o600)
        while os.getppid() == parent:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(LOCK_RETRY_SECONDS)
        else:
            return
        threads = run_jobs(app, stop)
        while os.getppid() == parent:
            time.sleep(LOCK_RETRY_SECONDS)
    except Stopped:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop.set()
        for thread in threads:
            thread.join(timeout=20)


def run_beside(app):
    """Forks the background process; in the server, returns its pid. Call before the server starts threads."""
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    with STARTING_CHILDREN:  # Litestream may be starting in its thread (see okr/server/workers.py)
        pid = os.fork()
    if pid:
        return pid
    status = 0
    try:
        # The server's sockets and files are not this process's: a port stays free once the server ends.
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        die_with_parent()
        spread_over_cpus()
        if os.getppid() == parent:
            serve_background(app, parent)
    except BaseException:
        logger.exception("the background process failed")
        status = 1
    finally:
        logging.shutdown()
        os._exit(status)


def stop_background(pid, wait=20):
    """Ends the background process (at the server's exit), waiting up to wait seconds for its jobs."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
