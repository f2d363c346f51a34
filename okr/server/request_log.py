"""The access log: a line per request (the client, the method, the target without its secrets, the status and the
milliseconds), queued by the request's thread and written by a thread of its own."""
import atexit
import re
import sys
import threading
import time
from collections import deque

from ..proxies import environ_client


LINK_TOKEN = re.compile(r"(/invitations/|/password-reset/|/boards/)[^/?#]+")


def without_secrets(target):
    """A request target with an invitation's, a password reset's or a board link's token left out: the log never
    holds one."""
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
                if "/invitations/" in target or "/password-reset/" in target or "/boards/" in target:
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
