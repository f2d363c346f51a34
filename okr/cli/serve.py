"""okr serve: waitress with every setting the service relies on, in one place, and CPU placement.

docs/operations.md explains each figure.
"""
import atexit
import errno
import logging
import os
import re
import resource
import signal
import sqlite3
import sys
import threading
import time
from collections import deque
from contextlib import closing

from waitress import create_server

from .. import mail, weekly
from ..access import is_loopback, sign_in_needed_because
from ..db import connect, init_db
from ..proxies import environ_client
from ..scratch import remove_leftovers
from ..store import ways_in
from . import connections
from .background import run_beside, stop_background
from .replication import check_replication, start_replication
from .serving_lock import hold_shared
from .workers import bind_sockets, listening_lines, supervise, worker_count, worker_cpus

logger = logging.getLogger("okr")

# Bodies over the app's 1 MiB get its JSON 413; waitress refuses absurd ones
# (with a plain-text 413) before spooling them to disk.
BODY_LIMIT = 16 * 1024 * 1024
# How often idle, stalled and non-reading connections are looked for; a
# connection is dropped between a limit (CHANNEL_TIMEOUT, HEAD_TIMEOUT...) and
# that limit + this.
CLEANUP_INTERVAL = 1
# waitress's own default: above this much unsent output, a worker thread waits
# for the client to read before it writes more (and okr/cli/connections.py
# drops the client after UNREAD_TIMEOUT).
OUTBUF_HIGH_WATERMARK = 16 * 1024 * 1024


def waitress_settings(config):
    """The waitress keyword arguments for this app's config."""
    return {
        "host": config["HOST"],
        "port": config["PORT"],
        "threads": config["THREADS"],
        "connection_limit": config["CONNECTION_LIMIT"],
        "channel_timeout": config["CHANNEL_TIMEOUT"],
        "cleanup_interval": CLEANUP_INTERVAL,
        "outbuf_high_watermark": OUTBUF_HIGH_WATERMARK,
        "max_request_body_size": BODY_LIMIT,
        # poll(), not select(): select() cannot watch file descriptors past 1023,
        # which a connection limit in the thousands needs.
        "asyncore_use_poll": True,
        # The app sees Forwarded and X-Forwarded-* as sent: okr/proxies.py believes them from a trusted proxy
        # only, and okr/access.py never opens to a request that carries them. waitress would strip them
        # (it trusts one address at most, and no network), and a proxied request would look like a local one.
        "clear_untrusted_proxy_headers": False,
    }


def allow_open_files(connections):
    """Lets the process hold as many sockets as the connection limit, as far as the hard limit allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + 100  # the database, its WAL, logs, the listening socket
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))


LINK_TOKEN = re.compile(r"(/invitations/|/password-reset/)[^/?#]+")


def without_secrets(target):
    """A request target with an invitation's or a password reset's token left out: the log never holds one."""
    return LINK_TOKEN.sub(r"\1[token]", target)


class AccessLog:
    """The access log: a line per request (the client's address, method, path and query, status, milliseconds to
    the answer). Behind a trusted proxy the address is the client's it forwarded (okr.proxies).

    The serving layer's, not the app's: an app embedded in another program logs
    nothing per request. The time runs until the app has returned the response,
    whose body Flask has built by then; sending it is not counted.

    A request's thread only formats its line and queues it; a thread of the
    log's own writes the queue out every FLUSH_SECONDS, and once more at exit.
    Writing from the request's thread would release the GIL on every request,
    and under load each release hands the CPU to another thread (okr/db.py has
    the figures); through the logging module a line also cost several times
    more. The lines look like the server's other log lines.
    """

    FLUSH_SECONDS = 0.2
    # Lines queued at most, should the log's reader stall (a pipe nobody reads):
    # beyond, lines are dropped and counted, rather than requests held up or memory spent.
    QUEUE_LIMIT = 10_000

    def __init__(self, stream=None, flush_seconds=FLUSH_SECONDS, queue_limit=QUEUE_LIMIT):
        self.stream = stream  # None: sys.stderr as it is when written to
        self.flush_seconds, self.queue_limit = flush_seconds, queue_limit
        self.queue = deque()  # append and popleft are atomic: no lock on the request's path
        self.dropped = 0
        self.second = (None, "")  # the last second's formatted time, as one tuple
        self.writer = None
        self.starting, self.writing = threading.Lock(), threading.Lock()

    def timestamp(self):
        """The time as logging's asctime has it, e.g. 2026-11-23 10:15:30,123; strftime once a second."""
        now = time.time()
        second, text = self.second
        if int(now) != second:
            second, text = int(now), time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
            self.second = (second, text)
        return f"{text},{int((now - second) * 1000):03d}"

    def wrap(self, app, trusted=()):
        """app, logging each request; trusted: the proxies whose forwarded client address is logged instead."""
        queue, limit = self.queue, self.queue_limit

        def logged(environ, start_response):
            started = time.perf_counter()
            status = "500"  # unless the app starts a response

            def start(status_line, headers, exc_info=None):
                nonlocal status
                status = status_line[:3]
                return start_response(status_line, headers, exc_info)

            try:
                return app(environ, start)
            finally:
                # waitress's REQUEST_URI is the path and query as sent.
                target = environ.get("REQUEST_URI") or environ.get("PATH_INFO", "")
                if not target.isprintable():
                    target = repr(target)[1:-1]  # one line per request, whatever a client sends
                if "/invitations/" in target or "/password-reset/" in target:
                    target = without_secrets(target)
                milliseconds = (time.perf_counter() - started) * 1000
                if self.writer is None:
                    self.start()
                if len(queue) < limit:
                    client = environ_client(environ, trusted) or "-"
                    queue.append(f"{self.timestamp()} INFO okr.access: {client} {environ['REQUEST_METHOD']} "
                                 f"{target} {status} {milliseconds:.1f} ms\n")
                else:
                    self.dropped += 1

        return logged

    def start(self):
        with self.starting:
            if self.writer is None:
                self.writer = threading.Thread(target=self.keep_writing, name="okr-access-log", daemon=True)
                self.writer.start()
                # At exit, the writer thread may be stuck writing to a reader that stalled: wait a second at most.
                atexit.register(self.flush, wait=1)

    def keep_writing(self):
        while True:
            time.sleep(self.flush_seconds)
            self.flush()

    def flush(self, wait=-1):
        """Writes out the queued lines, in one write; gives up after wait seconds for another flush to end."""
        if not self.writing.acquire(timeout=wait):
            return
        try:
            lines = [self.queue.popleft() for _ in range(len(self.queue))]
            if self.dropped:
                dropped, self.dropped = self.dropped, 0
                lines.append(f"{self.timestamp()} WARNING okr.access: {dropped} access log line"
                             f"{'s' if dropped > 1 else ''} dropped: the log was read more slowly than "
                             "requests came\n")
            if not lines:
                return
            stream = self.stream or sys.stderr
            try:
                for chunk in whole_lines(lines):
                    stream.write(chunk)
                    stream.flush()
            except (OSError, ValueError):
                pass  # a closed or broken stderr: the lines have nowhere to go
        finally:
            self.writing.release()


# What one write(2) to a pipe sends whole, however many processes write to it (PIPE_BUF on Linux).
ATOMIC_WRITE = 4096


def whole_lines(lines, limit=ATOMIC_WRITE):
    """The lines joined into as few chunks as may each go out in one write of at most limit bytes (a longer
    line is a chunk of its own): the worker processes share one stderr, and a bigger write to a pipe
    may be interleaved with another's in the middle of a line."""
    chunk, size = [], 0
    for line in lines:
        length = len(line.encode("utf-8", "backslashreplace")) if not line.isascii() else len(line)
        if chunk and size + length > limit:
            yield "".join(chunk)
            chunk, size = [], 0
        chunk.append(line)
        size += length
    if chunk:
        yield "".join(chunk)


def make_server(app, sockets=None, address_counts=None):
    """A waitress server for app, with the settings above and the per-client limits of
    okr/cli/connections.py, listening but not yet serving.

    sockets: listening sockets to serve instead of binding HOST and PORT (a worker's, okr/cli/workers.py).
    address_counts: the connections per address, shared by worker processes (connections.AddressCounts);
    by default, this process's own. Raises OSError when it cannot listen, the port being in use, say.
    """
    settings = waitress_settings(app.config)
    if sockets is not None:
        del settings["host"], settings["port"]
        settings["sockets"] = sockets
    allow_open_files(settings["connection_limit"])
    trusted = app.config["TRUSTED_PROXIES"]
    server = create_server(AccessLog().wrap(app, trusted) if app.config["ACCESS_LOG"] else app, **settings)
    connections.install(server, connections.limits_of(app.config), address_counts)
    return server


def place_on_cpus(setting):
    """Keeps the process on one CPU unless told otherwise; returns a line saying where.

    Every SQLite call releases Python's GIL, and between threads on different
    CPUs each hand-over is a cross-CPU wake-up that costs more than a small
    request: unpinned, throughput fell as connections grew. On one CPU it holds.
    """
    setting = str(setting).strip().lower()
    if setting == "all" or not hasattr(os, "sched_setaffinity"):
        return "on all CPUs"
    allowed = sorted(os.sched_getaffinity(0))
    if setting == "auto":
        cpu = allowed[0]
    elif setting.isdigit() and int(setting) in allowed:
        cpu = int(setting)
    else:
        raise ValueError(f"cpu must be auto, all or one of {', '.join(map(str, allowed))}, not {setting!r}")
    os.sched_setaffinity(0, {cpu})
    return f"on CPU {cpu}"


def stop_on_sigterm(signum, frame):
    # waitress shuts down its workers cleanly on SystemExit.
    raise SystemExit(0)


def auth_is_on(app):
    """Whether anything to sign in with exists: an identity provider, or in the database (read without making
    anything) a key, a password, or an invitation or reset link."""
    if app.extensions.get("okr.oidc") is not None:
        return True
    path = app.config["DATABASE"]
    if not os.path.exists(path):
        return False  # serving will create it, without keys or passwords
    with closing(connect(path, app.config["BUSY_TIMEOUT_MS"])) as db:
        # A database older than API keys, passwords or links lacks them until init_db migrates it.
        return ways_in.first_of_any_version(db) is not None


def mode_line(app):
    """What the server's log says at start about open mode: (level, line). Asked once the database is
    migrated, of okr.access, which decides for every request."""
    host = app.config["HOST"]
    with app.app_context(), closing(connect(app.config["DATABASE"], app.config["BUSY_TIMEOUT_MS"])) as db:
        because = sign_in_needed_because(db)
        stored = ways_in.first(db)
    if because is None:
        reach = "on this machine" if is_loopback(host) else f"on the network at {host}"
        return logging.WARNING, (
            f"open mode: no API key or password exists, nor an invitation or reset link, and no public name, "
            f"public URL or proxy was given: the API and the pages are open to anyone who can reach them {reach}, "
            "except requests that come through a proxy; create a key with okr keys create --name NAME, or "
            "invite someone with okr users invite EMAIL")
    if stored == "invitation" or stored == "reset":
        return logging.INFO, (
            f"sign-in needed: {because}; nobody has a password or a key yet, so the first person comes in "
            "through that link, or after okr users set-password EMAIL")
    if stored is None and app.extensions.get("okr.oidc") is None:
        return logging.WARNING, (
            f"sign-in needed, since {because}; but nobody can sign in yet: invite someone with okr users invite "
            "EMAIL, give a password with okr users set-password EMAIL, or create a key with okr keys create "
            "--name NAME")
    return logging.INFO, f"sign-in needed: {because}"


def cannot_listen(error, host, port):
    """Why the server cannot listen, in plain words."""
    if error.errno == errno.EADDRINUSE:
        return f"port {port} is in use; pass --port"
    return f"cannot listen on {host} port {port}: {error.strerror or error}"


def run_server(app, args):
    if args:
        sys.exit(f"okr: serve takes no arguments besides the options, not {' '.join(args)} (see okr serve --help)")
    host = app.config["HOST"]
    port = app.config["PORT"]
    try:
        workers = worker_count(app.config["WORKERS"])
        if workers == 1:
            placement = place_on_cpus(app.config["CPU"])
        else:
            # The supervisor stays unpinned: its workers each keep to a CPU (okr/cli/workers.py).
            cpus, placement = worker_cpus(app.config["CPU"], workers)
        check_replication(app.config)  # a wrong URL or no Litestream, before anything is made
        mail_settings = mail.settings(app.config)
        if mail_settings is not None:
            weekly.schedule(app.config)
    except ValueError as error:  # MailSettingsError too
        sys.exit(f"okr: {error}")
    # In this order: nothing listens on a network before a key protects it, and
    # nothing is created before the port is known to be free.
    try:
        keyed = auth_is_on(app)
    except (sqlite3.Error, OSError) as error:
        sys.exit(f"okr: cannot use database {app.config['DATABASE']}: {error}")
    if not keyed and not is_loopback(host) and not app.config.get("ALLOW_ANONYMOUS"):
        sys.exit(
            f"okr: refusing to serve on {host} without authentication: no API key or password "
            "exists yet. Run `okr keys create --name NAME` (or give someone a password: okr users invite EMAIL) "
            "first, or pass --allow-anonymous."
        )
    try:
        # Bound before the workers are forked, which all serve it: okr/cli/workers.py.
        server = make_server(app) if workers == 1 else bind_sockets(app.config)
    except OSError as error:
        sys.exit(f"okr: {cannot_listen(error, host, port)}")
    try:
        with app.app_context():
            init_db()
            # Held until the process ends: `okr restore` refuses a served database.
            hold_shared(app.config["DATABASE"])
    except (sqlite3.Error, OSError, RuntimeError) as error:
        sys.exit(f"okr: cannot use database {app.config['DATABASE']}: {error}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in remove_leftovers(app.config["DATABASE"]):
        logger.info("removed %s, left beside the database by a run that was killed", name)
    logger.info("using database %s", os.path.abspath(app.config["DATABASE"]))
    logger.log(*mode_line(app))
    if workers == 1:
        logger.info("serving %s with %s threads", placement, app.config["THREADS"])
    else:
        logger.info("serving with %d worker processes %s, %s threads each", workers, placement,
                    app.config["THREADS"])
    if mail_settings is None:
        logger.info("email is not set up (OKR_SMTP_URL, OKR_MAIL_FROM): no invitations, password resets, "
                    "reminders nor digests by email")
    else:
        logger.info("email through %s://%s:%s; weekly reminders and digests on %s", mail_settings.scheme,
                    mail_settings.host, mail_settings.port, weekly.schedule(app.config))
    # Litestream beside the server, before anything forks: the forks' connections then never checkpoint.
    start_replication(app)
    # Webhooks, mail and pruning, in a process of their own (okr/cli/background.py).
    atexit.register(stop_background, run_beside(app))
    if workers > 1:
        listening_lines(server)
        sys.exit(supervise(app, server, cpus, make_server))
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    server.print_listen("listening on http://{}:{}")
    server.run()
