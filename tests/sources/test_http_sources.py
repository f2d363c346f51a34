"""HTTP JSON and CSV sources read from a local server that answers as GitHub, Jira and a published sheet do, and
the webhooks' safety against hostile ones: no redirects, one deadline, 1 MB, a lying length, errors, HTML; the
address rule after DNS ("inside our network")."""
import hashlib
import json
import ssl
import threading
import time
from datetime import datetime, timezone
from decimal import Decimal

import pytest

from helpers import loopback_certificate
from okr.outbound import pinned_http
from okr.sources.reading import SourceFailed, read, read_series, replay
from source_servers import JIRA_TOTAL, FakeServer, connection, github_count

pytestmark = pytest.mark.slow  # a server in a thread

GITHUB_QUERY = "/search/issues?q=repo:acme/app+is:issue+is:open"
END_OF_MARCH = datetime(2026, 3, 31, 23, 59, 59, tzinfo=timezone.utc)


def local(web, kind="http_json", headers=None, inside_network=True, host="127.0.0.1"):
    return connection(kind, f"http://{host}:{web.port}", headers, inside_network)


def test_githubs_search_count(web):
    reading = read(local(web), "ghp_token", {"query": GITHUB_QUERY, "path": "$.total_count"})
    assert reading.value == github_count("repo:acme/app is:issue is:open") == 20
    assert reading.request == f"http://127.0.0.1:{web.port}{GITHUB_QUERY}"
    assert json.loads(reading.answer)["total_count"] == 20
    assert reading.as_of is None
    assert web.seen[-1]["headers"]["Authorization"] == "Bearer ghp_token"
    assert "ghp_token" not in json.dumps(reading.replay) + reading.request


def test_githubs_count_as_of_a_past_moment(web):
    source = {"query": "/search/issues?q=repo:acme/app+is:issue+created:<={as_of}", "path": "$.total_count"}
    reading = read(local(web), None, source, END_OF_MARCH)
    assert reading.value == github_count("created:<=2026-03-31T23:59:59Z") == 29
    assert web.seen[-1]["path"].endswith("created:<=2026-03-31T23%3A59%3A59Z")
    assert "Authorization" not in web.seen[-1]["headers"]
    assert reading.as_of == END_OF_MARCH


def test_jiras_jql_count_with_a_basic_header(web):
    jira = local(web, headers={"Authorization": "Basic {secret}", "Accept": "application/json"})
    source = {"query": "/rest/api/3/search?jql=project%20%3D%20APP%20AND%20status%20!%3D%20Done&maxResults=0",
              "path": "$.total"}
    reading = read(jira, "bWF5YUBhY21lLmNvbTp0b2tlbg==", source)
    assert reading.value == JIRA_TOTAL
    assert "bWF5YUBhY21lLmNvbTp0b2tlbg==" not in reading.request + json.dumps(reading.replay)
    with pytest.raises(SourceFailed, match="HTTP 401 Unauthorized: .*not authenticated"):
        read(jira, "wrong", source)


def test_a_published_sheets_cells(web):
    sheet = local(web, "csv")
    assert read(sheet, None, {"query": "/sheet.csv", "path": "B2"}).value == Decimal("1234.5")
    assert read(sheet, None, {"query": "/sheet.csv", "path": "Revenue@2026-03"}).value == Decimal("12345678.25")
    assert read(sheet, None, {"query": "/sheet.csv", "path": "Churn@2026-01"}).value == Decimal("2.5")
    with pytest.raises(SourceFailed, match="'n/a', not a number"):
        read(sheet, None, {"query": "/sheet.csv", "path": "B5"})


def test_replay_runs_the_very_request_again(web):
    source = {"query": "/search/issues?q=created:<={as_of}", "path": "$.total_count"}
    first = read(local(web), "tok", source, END_OF_MARCH)
    again = replay(local(web), "tok", json.loads(json.dumps(first.replay)))
    assert web.seen[-1]["path"] == web.seen[-2]["path"]
    assert (again.value, again.as_of, hashlib.sha256(again.answer).digest()) == \
        (first.value, first.as_of, hashlib.sha256(first.answer).digest())
    moved = connection("http_json", "http://localhost:1", {}, True)
    with pytest.raises(SourceFailed, match="leave the connection"):
        replay(moved, "tok", first.replay)


def test_a_series_reads_each_moment(web):
    moments = [datetime(2026, 1, day, 23, 59, 59, tzinfo=timezone.utc) for day in (12, 13, 16)]
    readings = read_series(local(web), None, {"query": "/search/issues?q=created:<={as_of}",
                                              "path": "$.total_count"}, moments)
    assert [reading.value for reading in readings] == \
        [github_count(f"created:<={moment:%Y-%m-%dT%H:%M:%SZ}") for moment in moments] == [3, 4, 5]
    assert [reading.as_of for reading in readings] == moments


def test_loopback_needs_inside_our_network(web):
    source = {"query": GITHUB_QUERY, "path": "$.total_count"}
    for host in ("localhost", "127.0.0.1"):
        with pytest.raises(SourceFailed, match=f'refused: {host} is .*"inside our network"'):
            read(local(web, inside_network=False, host=host), None, source)
        assert read(local(web, host=host), None, source).value == 20


@pytest.mark.parametrize("path, words", [
    ("/redirect", "HTTP 302, a redirect \\(to http://169.254.169.254/latest/meta-data/\\), which a source never follows"),
    ("/error", "HTTP 500 Internal Server Error: Internal Server Error: database down"),
    ("/nowhere", "HTTP 404 Not Found"),
    ("/big", "larger than 1 MB"),
    ("/big.unannounced", "larger than 1 MB"),
    ("/liar", "the answer ended after 12 bytes, before the length the server announced"),
    ("/html", "not JSON \\(it starts '<!DOCTYPE html>"),
    ("/values.json?p=flag", "true, not a number"),
])
def test_hostile_answers_fail_plainly(web, path, words):
    json_path = "$.flag" if "flag" in path else "$.count"
    with pytest.raises(SourceFailed, match=words):
        read(local(web), None, {"query": path, "path": json_path}, timeout=5)


def test_an_html_page_is_no_csv(web):
    with pytest.raises(SourceFailed, match="web page, not a CSV file"):
        read(local(web, "csv"), None, {"query": "/html", "path": "A1"})


def test_a_trickling_server_is_stopped_by_the_deadline(web):
    started = time.monotonic()
    with pytest.raises(SourceFailed, match="timed out after 1.5 s"):
        read(local(web), None, {"query": "/trickle", "path": "$.count"}, timeout=1.5)
    assert time.monotonic() - started < 4


def test_nothing_listening_fails_plainly(web):
    closed = connection("http_json", "http://127.0.0.1:9", {}, True)
    with pytest.raises(SourceFailed, match="cannot connect to 127.0.0.1"):
        read(closed, None, {"query": "/x", "path": "$.a"}, timeout=2)


@pytest.fixture
def tls_web(tmp_path, monkeypatch):
    """The local server behind TLS, its self-signed certificate for 127.0.0.1 trusted by the readers."""
    cert, key = loopback_certificate(tmp_path)
    monkeypatch.setattr(pinned_http, "tls_context", lambda: ssl.create_default_context(cafile=str(cert)))
    server = FakeServer()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert), str(key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_https_with_the_certificate_checked(tls_web, monkeypatch):
    github = connection("http_json", f"https://127.0.0.1:{tls_web.port}", {}, True)
    assert read(github, "tok", {"query": GITHUB_QUERY, "path": "$.total_count"}).value == 20
    monkeypatch.setattr(pinned_http, "tls_context", ssl.create_default_context)  # the system's authorities only
    with pytest.raises(SourceFailed, match="CERTIFICATE_VERIFY_FAILED"):
        read(github, "tok", {"query": GITHUB_QUERY, "path": "$.total_count"}, timeout=5)
