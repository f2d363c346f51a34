"""One waitress server: every setting the service relies on, in one place, with the per-client limits and the
access log around it; and why a server cannot listen.

docs/operations.md explains each figure.
"""
import errno
import resource
import socket

from waitress import create_server

from .. import proxies
from . import connections
from .request_log import AccessLog

# Bodies over the app's MAX_CONTENT_LENGTH get its JSON 413; waitress refuses absurd ones
# (with a plain-text 413) before spooling them to disk.
BODY_LIMIT = 16 * 1024 * 1024
# How often idle, stalled and non-reading connections are looked for; a
# connection is dropped between a limit (CHANNEL_TIMEOUT, HEAD_TIMEOUT...) and
# that limit + this.
CLEANUP_INTERVAL = 1
# waitress's own default: above this much unsent output, a worker thread waits
# for the client to read before it writes more (and okr/server/connections.py
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
        # only, and okr/accounts/access.py never opens to a request that carries them. waitress would strip them
        # (it trusts one address at most, and no network), and a proxied request would look like a local one.
        "clear_untrusted_proxy_headers": False,
    }


def allow_open_files(connections):
    """Lets the process hold as many sockets as the connection limit, as far as the hard limit allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + 100  # the database, its WAL, logs, the listening socket
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))


def make_server(app, sockets=None, address_counts=None):
    """A waitress server for app, with the settings above and the per-client limits of
    okr/server/connections.py, listening but not yet serving.

    sockets: listening sockets to serve instead of binding HOST and PORT (a worker's, okr/server/workers.py).
    address_counts: the connections per address, shared by worker processes (connections.AddressCounts);
    by default, this process's own. Raises OSError when it cannot listen, the port being in use, say.
    """
    settings = waitress_settings(app.config)
    if sockets is not None:
        del settings["host"], settings["port"]
        settings["sockets"] = sockets
    allow_open_files(settings["connection_limit"])
    trusted = app.config["TRUSTED_PROXIES"]
    served = proxies.served(app)  # under the public URL's path, when it has one
    server = create_server(AccessLog().wrap(served, trusted) if app.config["ACCESS_LOG"] else served, **settings)
    connections.install(server, connections.limits_of(app.config), address_counts)
    return server


def cannot_listen(error, host, port):
    """Why the server cannot listen, in plain words."""
    if error.errno == errno.EADDRINUSE:
        return f"port {port} is in use; pass --port"
    return f"cannot listen on {host} port {port}: {error.strerror or error}"


def port_to_serve(host, port):
    """The port a server may listen on at host: port, or a free one for 0; OSError when it cannot listen there."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    # SO_REUSEADDR, as waitress: a port that only lingers after a server stopped is free.
    with socket.create_server((host, port), family=family) as probe:
        return probe.getsockname()[1]
