"""okr serve: the command line's one check (no arguments besides the options), then the server
(okr/server/startup.py). Each setting was checked against its range when the app was built (okr/settings.py)."""
import sys

from ..server.startup import serve


def run_server(app, args):
    if args:
        sys.exit(f"okr: serve takes no arguments besides the options, not {' '.join(args)} (see okr serve --help)")
    return serve(app)
