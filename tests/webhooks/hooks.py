"""The webhook tests' receiver, fake clock and helpers (their fixtures are in conftest.py)."""
import json
import re
import socket
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """A webhook receiver on loopback, in a thread: it records every request as it arrives (headers, body,
    when), then answers `status` (204) after `delay` seconds, or the next of `answers` first: each a status,
    or (status, headers)."""

    def __init__(self):
        self.requests = []
        self.status, self.delay, self.answers = 204, 0.0, []
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.arrived:
                    receiver.requests.append({"headers": dict(self.headers), "body": body, "path": self.path,
                                              "at": time.monotonic()})
                    receiver.arrived.notify_all()
                    answer = receiver.answers.pop(0) if receiver.answers else receiver.status
                    delay = receiver.delay
                time.sleep(delay)
                status, headers = answer if isinstance(answer, tuple) else (answer, {})
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def wait_for(self, count, timeout=15):
        """The requests, once at least count have arrived (fails after timeout seconds)."""
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.requests) >= count, timeout), \
                f"{len(self.requests)} of {count} requests arrived"
            return list(self.requests)

    def events(self):
        """The bodies received, parsed, in order of arrival."""
        return [json.loads(request["body"]) for request in list(self.requests)]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def read_request(connection):
    """Reads one request (its head, then its Content-Length of body) from a socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += connection.recv(65536) or b"\r\n\r\n"
    head, body = data.split(b"\r\n\r\n", 1)
    stated = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    length = int(stated.group(1)) if stated else 0
    while len(body) < length:
        body += connection.recv(65536) or b"\0" * length


class Trickler:
    """A receiver on loopback, in a thread, that reads a request, sends `fast` at once, then `slow` one byte
    every `every` seconds: a receiver that keeps a delivery open for as long as it likes if each read may wait
    anew. tls: a server-side SSLContext, to answer over TLS; before: whole answers to the requests before that
    one, on the same connection. `sent` says when it sent its last byte."""

    def __init__(self, fast, slow, every=1.5, tls=None, before=()):
        self.fast, self.slow, self.every, self.tls, self.before = fast, slow, every, tls, list(before)
        self.stopping, self.sent = threading.Event(), threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    @property
    def url(self):
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.listener.getsockname()[1]}/hook"

    def serve(self):
        try:
            connection, _ = self.listener.accept()
        except OSError:  # closed before anyone came
            return
        try:
            connection.settimeout(30)
            if self.tls:
                connection = self.tls.wrap_socket(connection, server_side=True)
            for answer in [*self.before, self.fast]:
                read_request(connection)
                connection.sendall(answer)
            for byte in self.slow:
                if self.stopping.wait(self.every):
                    return
                connection.sendall(bytes([byte]))
            self.sent.set()
            self.stopping.wait(30)  # the connection stays open: the answer's end is its length
        except OSError:  # the delivery gave up and closed its end
            pass
        finally:
            connection.close()

    def close(self):
        self.stopping.set()
        self.listener.close()
        self.thread.join(timeout=10)


class FakeClock:
    """Unix seconds that move only when told."""

    def __init__(self, now=1_900_000_000.0):
        self.now = now

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


def add_hook(runner, url, *args):
    """`okr webhooks add URL ARGS --json`: the hook with its secret (and its seq, for the deliverer)."""
    result = runner.invoke(args=["webhooks", "add", url, "--json", *args])
    assert result.exit_code == 0, result.output
    hook = json.loads(result.output)
    with sqlite3.connect(runner.app.config["DATABASE"]) as db:
        hook["seq"] = db.execute("SELECT seq FROM webhooks WHERE id = ?", (hook["id"],)).fetchone()[0]
    return hook


def resolving_to(monkeypatch, address):
    """Makes every name resolve to address (an IPv4 literal), as getaddrinfo answers."""
    def getaddrinfo(host, port, *args, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
