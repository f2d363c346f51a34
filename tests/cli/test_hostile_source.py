"""okr import-simpleokr against a source that attacks: an answer too large, a list of non-objects, a byte
every so often, pages without end, control characters for the terminal, and redirects. Each is refused
in bounded time and memory, with one plain line."""
import json
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from okr.transfer import from_simpleokr
from okr.db import transaction

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser

USER = {"id": "0f8fad5b-d9cb-469f-a165-70867728950e", "name": "Ada", "email": "ada@example.com",
        "is_active": True, "created_at": "2026-01-01T00:00:00Z"}
EMPTY = {"next_page_token": None}


@contextmanager
def hostile(answer):
    """A source on loopback whose every GET is answered by answer(handler, path), a function that writes."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802 (http.server's name)
            try:
                answer(self, self.path.split("?")[0])
            except OSError:
                pass  # the client hung up, as it should

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            pass  # a client that hangs up mid-answer is what these tests make happen

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def send_json(handler, data, status=200, headers=()):
    body = json.dumps(data).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    for name, value in headers:
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def lists(users):
    """An answer(handler, path): users on /v1/users, every other list empty."""
    def answer(handler, path):
        key = path.rsplit("/", 1)[-1]
        send_json(handler, {**EMPTY, key: users if key == "users" else []})
    return answer


def run(runner, url, *args):
    return runner.invoke(args=["import-simpleokr", "--base-url", url, *args])


def one_line_refusal(result):
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) >= 1 and lines[-1].startswith("Error: ") or lines[-1].startswith("okr: "), result.stderr
    return lines[-1]


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "streamed"])
def test_an_answer_over_the_cap_is_refused_before_it_is_held(app, runner, declared):
    def answer(handler, path):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if declared:
            handler.send_header("Content-Length", str(1536 << 20))  # 1.5 GB, never sent
        else:
            handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(b'{"users": [' + b'{"x": 1},' * 100_000)
        for _ in range(64):  # 3.2 MB more, then a stop
            handler.wfile.write(b" " * 50_000)

    with hostile(answer) as url:
        started = time.monotonic()
        line = one_line_refusal(run(runner, url, "--max-answer-mb", "1"))
    assert "larger than 1,048,576 bytes" in line
    assert time.monotonic() - started < 10


def test_a_list_whose_items_are_not_objects_is_refused_at_the_first(app, runner):
    with hostile(lists([1] * 100_000)) as url:
        result = run(runner, url, "--json")
    line = one_line_refusal(result)
    assert "item 0 of its 'users' list is not an object" in line
    assert len(result.output) < 2_000  # no report of 100,000 failed rows


def test_a_source_sending_a_byte_every_so_often_meets_the_deadline(app, runner):
    body = json.dumps({**EMPTY, "users": []}).encode()

    def answer(handler, path):
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        for byte in body:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(0.5)

    with hostile(answer) as url:
        started = time.monotonic()
        line = one_line_refusal(run(runner, url, "--request-deadline", "2"))
        took = time.monotonic() - started
    assert "no whole answer within 2 s" in line
    assert took < 6, took  # one request, not retried: a retry would start the trickle again


def test_a_source_paging_without_end_is_cut_off_at_the_page_cap(app, runner, monkeypatch):
    monkeypatch.setattr(from_simpleokr, "MAX_PAGES", 7)
    asked = []

    def answer(handler, path):
        asked.append(path)
        send_json(handler, {"users": [], "next_page_token": f"t{len(asked)}"})

    with hostile(answer) as url:
        line = one_line_refusal(run(runner, url))
    assert "never stops paging: 7 pages read" in line and len(asked) == 7


def test_control_characters_from_the_source_are_escaped_on_the_terminal(app, runner):
    title = "\x1b]0;pwned\x07\x1b[2J"
    users = [{**USER, "id": "x" + title}, {**USER, "id": "1f8fad5b-d9cb-469f-a165-70867728950e",
                                            "name": "Ada" + title, "email": "eve@example.com"}]
    with hostile(lists(users)) as url:
        result = run(runner, url)
    assert result.exit_code == 1
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "\\x1b]0;pwned\\x07" in result.stdout
    assert "name: holds the control character U+001B" in result.stdout


def test_a_name_with_a_tab_or_newline_is_taken_on_one_line(app, runner):
    # A name here holds no control character: the source's person is copied with spaces in their place, rather
    # than refused with everything assigned to them.
    with hostile(lists([{**USER, "name": "Ada\tLovelace\n"}])) as url:
        result = run(runner, url, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["users"]["created"] == 1
    with app.app_context(), transaction(write=False) as db:
        assert db.execute("SELECT name FROM users").fetchall()[-1][0] == "Ada Lovelace"


def test_a_source_that_redirects_is_refused(app, runner):
    def answer(handler, path):
        send_json(handler, {}, status=302, headers=[("Location", "http://127.0.0.1:9/v1/users")])

    with hostile(answer) as url:
        line = one_line_refusal(run(runner, url))
    assert "redirects" in line and "not followed" in line


def test_the_json_report_escapes_del_and_c1_controls_too(app, runner):
    """json.dumps escapes only C0: a lone CSI (U+009B) moves a terminal's cursor like ESC [ does."""
    with hostile(lists([{**USER, "id": "x\x9b2J\x7f"}])) as url:
        result = run(runner, url, "--json")
    assert result.exit_code == 1
    assert "\x9b" not in result.stdout and "\x7f" not in result.stdout
    assert json.loads(result.stdout)["failed"][0]["id"] == "x\x9b2J\x7f"  # the JSON still says what it was


def test_the_deadline_covers_a_tls_handshake_the_source_trickles():
    """A server that sends the start of a TLS record and then a byte now and then holds the handshake."""
    import socket

    from okr.transfer.api_client import ApiError, Client

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle():
        connection, _ = listener.accept()
        with connection:
            connection.sendall(b"\x16\x03\x03\x40\x00")  # a handshake record of 16 kB, never sent whole
            while not stop.wait(0.3):
                try:
                    connection.sendall(b"\x00")
                except OSError:
                    return

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        with Client(f"https://127.0.0.1:{listener.getsockname()[1]}", timeout=(5, 60), deadline=2) as client:
            with pytest.raises(ApiError, match="no whole answer within 2 s"):
                client.request("GET", "/v1/users")
    finally:
        stop.set()
        listener.close()
        thread.join(5)
    assert time.monotonic() - started < 6
