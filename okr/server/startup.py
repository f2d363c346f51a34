"""What `okr serve` does once its options are read: the checks before anything is made, the CPU placement, the
serving lock, the start-up log lines (open mode among them), Litestream and the background process beside the
server, then one process serving or the worker processes.
"""
import atexit
import logging
import os
import signal
import sqlite3
import sys
from contextlib import closing

from .. import proxies
from ..accounts.access import is_loopback, sign_in_needed_because
from ..db import init_db
from ..outbound import smtp, weekly_emails
from ..store import ways_in
from ..store.schema import connect
from ..store.scratch import remove_leftovers
from .background import run_beside, stop_background
from .http_server import cannot_listen, make_server
from .replication import check_replication, start_replication
from .serving_lock import hold_shared
from .single_file import removed_at_start
from .workers import (bind_sockets, block_stop_signals, listening_lines, supervise, worker_count,
                      worker_cpus)

logger = logging.getLogger("okr")


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
    migrated, of okr.accounts.access, which decides for every request."""
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


def serve(app):
    """Serves app until SIGTERM or Ctrl-C; its numbers come with their ranges checked (the okr serve command does).
    A wrong setting, a port in use or a database it cannot use ends the program with one `okr:` line."""
    host = app.config["HOST"]
    port = app.config["PORT"]
    try:
        workers = worker_count(app.config["WORKERS"])
        if workers == 1:
            placement = place_on_cpus(app.config["CPU"])
        else:
            # The supervisor stays unpinned: its workers each keep to a CPU (okr/server/workers.py).
            cpus, placement = worker_cpus(app.config["CPU"], workers)
        check_replication(app.config)  # a wrong URL or no Litestream, before anything is made
        mail_settings = smtp.settings(app.config)
        if mail_settings is not None:
            weekly_emails.schedule(app.config)
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
        # Bound before the workers are forked, which all serve it: okr/server/workers.py.
        server = make_server(app) if workers == 1 else bind_sockets(app.config)
    except OSError as error:
        sys.exit(f"okr: {cannot_listen(error, host, port)}")
    # Before the database is made or migrated: the log says so, with the backup kept.
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        with app.app_context():
            init_db()
            # Held until the process ends: `okr restore` refuses a served database.
            hold_shared(app.config["DATABASE"])
    except (sqlite3.Error, OSError, RuntimeError) as error:
        sys.exit(f"okr: cannot use database {app.config['DATABASE']}: {error}")
    for name in remove_leftovers(app.config["DATABASE"]):
        logger.info("removed %s, left beside the database by a run that was killed", name)
    for name in removed_at_start:
        logger.info("removed %s, the single-file executable's folder left by a run that was killed", name)
    logger.info("using database %s", os.path.abspath(app.config["DATABASE"]))
    logger.log(*mode_line(app))
    public, prefix = proxies.public_url(app.config), proxies.public_path(app.config)
    if public:
        logger.info("the public URL is %s%s", public, f": everything is served under {prefix}/" if prefix else "")
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
                    mail_settings.host, mail_settings.port, weekly_emails.schedule(app.config))
    if workers > 1:  # before any thread starts, so that only the supervisor's sigtimedwait takes a SIGTERM
        block_stop_signals()
    # Litestream beside the server, before anything forks: the forks' connections then never checkpoint.
    start_replication(app)
    # Webhooks, mail and pruning, in a process of their own (okr/server/background.py).
    atexit.register(stop_background, run_beside(app))
    if workers > 1:
        listening_lines(server)
        sys.exit(supervise(app, server, cpus, make_server))
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    server.print_listen("listening on http://{}:{}")
    server.run()
