"""okr serve: waitress with every setting the service relies on, in one place, and CPU placement.

The README's Operations section explains each figure.
"""
import logging
import os
import resource
import signal
import sqlite3
import sys

from waitress import create_server

from ..api.auth import open_to_network
from ..db import connect, init_db
from .serving_lock import hold_shared

# Bodies over the app's 1 MiB get its JSON 413; waitress refuses absurd ones
# (with a plain-text 413) before spooling them to disk.
BODY_LIMIT = 16 * 1024 * 1024
# How often idle, stalled and non-reading connections are looked for; a
# connection is dropped between CHANNEL_TIMEOUT and CHANNEL_TIMEOUT + this.
CLEANUP_INTERVAL = 2
# waitress's own default: above this much unsent output, a worker thread waits
# for the client to read before it writes more.
OUTBUF_HIGH_WATERMARK = 16 * 1024 * 1024


def waitress_settings(config):
    """The waitress keyword arguments for this app's config."""
    return {
        "host": config["HOST"],
        "port": int(config["PORT"]),
        "threads": int(config["THREADS"]),
        "connection_limit": int(config["CONNECTION_LIMIT"]),
        "channel_timeout": int(config["CHANNEL_TIMEOUT"]),
        "cleanup_interval": CLEANUP_INTERVAL,
        "outbuf_high_watermark": OUTBUF_HIGH_WATERMARK,
        "max_request_body_size": BODY_LIMIT,
        # poll(), not select(): select() cannot watch file descriptors past 1023,
        # which a connection limit in the thousands needs.
        "asyncore_use_poll": True,
    }


def drop_stuck_channels(server, maintenance, now):
    """waitress's maintenance, plus: drop a connection whose client stopped reading.

    waitress never times out a connection while one of its requests is being
    served, and a worker whose response outgrew the high watermark waits for
    the client to read. A client that pipelines big requests and never reads
    would so hold a worker thread for as long as it keeps the connection open.
    """
    maintenance(now)
    cutoff = now - server.adj.channel_timeout
    for channel in list(server.active_channels.values()):
        if (channel.requests and channel.last_activity < cutoff
                and channel.total_outbufs_len > server.adj.outbuf_high_watermark):
            # Closed here, on the main loop's thread, as waitress itself closes
            # channels: will_close alone would wait for the socket to turn
            # writable, which it never does. Closing wakes the waiting worker.
            channel.handle_close()


def allow_open_files(connections):
    """Lets the process hold as many sockets as the connection limit, as far as the hard limit allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + 100  # the database, its WAL, logs, the listening socket
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))


def make_server(app):
    """A waitress server for app, with the settings above; not yet running."""
    settings = waitress_settings(app.config)
    allow_open_files(settings["connection_limit"])
    server = create_server(app, **settings)
    original = server.maintenance
    server.maintenance = lambda now: drop_stuck_channels(server, original, now)
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


def positive_int(app, key, low, high):
    value = str(app.config[key])
    if not value.isdigit() or not low <= int(value) <= high:
        sys.exit(f"okr: {key.lower()} must be an integer from {low} to {high}, not {value!r}")
    return int(value)


def stop_on_sigterm(signum, frame):
    # waitress shuts down its workers cleanly on SystemExit.
    raise SystemExit(0)


def run_server(app, args):
    if args:
        sys.exit(f"okr: serve takes no arguments besides the global options, not {' '.join(args)}")
    positive_int(app, "PORT", 0, 65535)
    positive_int(app, "THREADS", 1, 256)
    positive_int(app, "CONNECTION_LIMIT", 1, 100_000)
    positive_int(app, "CHANNEL_TIMEOUT", 1, 86_400)
    try:
        placement = place_on_cpus(app.config["CPU"])
    except ValueError as error:
        sys.exit(f"okr: {error}")
    try:
        with app.app_context():
            init_db()
            # Held until the process ends: `okr restore` refuses a served database.
            hold_shared(app.config["DATABASE"])
            db = connect(app.config["DATABASE"], app.config["BUSY_TIMEOUT_MS"])
            exposed = open_to_network(db, app.config["HOST"])
            db.close()
    except (sqlite3.Error, OSError, RuntimeError) as error:
        sys.exit(f"okr: cannot use database {app.config['DATABASE']}: {error}")
    if exposed and not app.config.get("ALLOW_ANONYMOUS"):
        sys.exit(
            f"okr: refusing to serve on {app.config['HOST']} without authentication: no API key "
            "exists yet. Run `okr keys create --name NAME` first, or pass --allow-anonymous."
        )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("okr").info("database %s; serving %s", os.path.abspath(app.config["DATABASE"]), placement)
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    server = make_server(app)
    server.print_listen("Serving on http://{}:{}")
    server.run()
