"""okr serve: the command line's checks (no arguments, each number in its range), then the server
(okr/server/startup.py)."""
import sys

from ..server.startup import serve


def int_setting(config, key, low, high):
    """config[key] as an integer from low to high; a ValueError that names the setting otherwise."""
    value = str(config[key])
    if not value.isdigit() or not low <= int(value) <= high:
        raise ValueError(f"{key.lower()} must be an integer from {low} to {high}, not {value!r}")
    return int(value)


def positive_int(app, key, low, high):
    try:
        return int_setting(app.config, key, low, high)
    except ValueError as error:
        sys.exit(f"okr: {error}")


def run_server(app, args):
    if args:
        sys.exit(f"okr: serve takes no arguments besides the options, not {' '.join(args)} (see okr serve --help)")
    positive_int(app, "PORT", 0, 65535)
    positive_int(app, "THREADS", 1, 256)
    positive_int(app, "CONNECTION_LIMIT", 1, 100_000)
    positive_int(app, "CHANNEL_TIMEOUT", 1, 86_400)
    positive_int(app, "CONNECTIONS_PER_ADDRESS", 0, 100_000)
    positive_int(app, "HEAD_TIMEOUT", 1, 86_400)
    positive_int(app, "UNREAD_TIMEOUT", 1, 86_400)
    positive_int(app, "EVENT_RETENTION_DAYS", 1, 100_000)
    return serve(app)
