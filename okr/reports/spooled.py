"""Big reports and exports: built within one of a few slots shared by every process serving the database, into
a spool file, then sent from the file once the slot and the read transaction are given back.

Small ones (under BIG_REPORT_OBJECTIVES objectives, found by one COUNT on an
index) are built as before and never wait. docs/design.md says why and what
the bound is.
"""
import json
import tempfile
import threading
from contextlib import contextmanager

from flask import current_app
from werkzeug.wsgi import FileWrapper

from ..errors import Busy
from .slots import report_slot

# A body this big stays in memory; a bigger one goes to a temporary file (TMPDIR).
SPOOL_MEMORY = 1 << 20
SEND_CHUNK = 1 << 16
# What a client is told to wait before trying again, in seconds: a slot may have freed up by then.
RETRY_AFTER = 5


def is_big(objective_count):
    return objective_count >= current_app.config["BIG_REPORT_OBJECTIVES"]


@contextmanager
def slot(what="reports"):
    """One of the REPORT_SLOTS slots for a with block; okr.errors.Busy once REPORT_WAIT seconds pass without one.

    A request waiting for a slot holds a worker thread: at most half of this process's threads may be building
    or waiting (the others answer Busy at once), so that the rest are always free for everything else.
    """
    config = current_app.config
    if not admissions().acquire(blocking=False):
        raise Busy(what, RETRY_AFTER)
    try:
        with report_slot(config["DATABASE"], config["REPORT_SLOTS"], config["REPORT_WAIT"],
                         RETRY_AFTER, what):
            yield
    finally:
        admissions().release()


ADMISSIONS_LOCK = threading.Lock()


def admissions():
    """This process's count of the threads that may build or wait for a big report or export at once."""
    extensions = current_app.extensions
    with ADMISSIONS_LOCK:
        if "okr_report_admissions" not in extensions:
            allowed = max(1, current_app.config["THREADS"] // 2)
            extensions["okr_report_admissions"] = threading.BoundedSemaphore(allowed)
        return extensions["okr_report_admissions"]


def build(write, what="reports"):
    """Runs write(file) within a slot; returns the file, at its start, its size, and what write returned."""
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)
    try:
        with slot(what):
            result = write(spool)
        size = spool.tell()
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool, size, result


def file_response(spool, size, mimetype, headers=None):
    """A response that sends the spool file in chunks, and closes it once sent (or abandoned)."""
    response = current_app.response_class(FileWrapper(spool, SEND_CHUNK), mimetype=mimetype, headers=headers,
                                          direct_passthrough=True)
    response.content_length = size
    response.call_on_close(spool.close)
    return response


def compact_json():
    """The app's own JSON encoder of one value, as its responses use it; None when they are indented (debug), for
    which big reports are built the old way."""
    provider = current_app.json
    if provider.compact is False or (provider.compact is None and current_app.debug):
        return None
    # The encoder json.dumps makes from provider.dumps's arguments, made once: a report encodes thousands of
    # values, and json.dumps would make one per value.
    return json.JSONEncoder(ensure_ascii=provider.ensure_ascii, sort_keys=provider.sort_keys, separators=(",", ":"),
                            default=provider.default).encode
