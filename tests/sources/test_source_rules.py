"""The readers' rules, in-process: what a connection and a source may be, whether a source takes {as_of}, the URL
join and its refusals, the address rule after DNS, JSONPath selection, CSV cells, numbers and SQL's one SELECT."""
import ipaddress
import socket
from datetime import datetime, timezone
from decimal import Decimal

import pytest

from okr.sources import documents, fetching, sql_queries
from okr.sources.reading import (KINDS, SourceFailed, connection_problem, read, read_series, source_problem,
                                 takes_as_of)
from okr.sources.values import number

MOMENT = "2026-03-31T23:59:59Z"


@pytest.mark.parametrize("kind, address, headers", [
    ("http_json", "https://api.github.com", {"Authorization": "Bearer {secret}", "Accept": "application/json"}),
    ("http_json", "http://jira.internal:8080/jira", {}),
    ("csv", "https://docs.google.com/spreadsheets/d/e/2PACX-1", {}),
    ("prometheus", "http://prometheus.internal:9090/", {"X-Scope-OrgID": "team-a"}),
    ("postgresql", "postgresql://reader@db.internal:5432/sales", {}),
    ("postgresql", "postgres://reader@10.0.0.5/sales", {}),
    ("sqlite", "/srv/data/metrics.db", {}),
])
def test_good_connections_have_no_problem(kind, address, headers):
    assert connection_problem(kind, address, headers) is None


@pytest.mark.parametrize("kind, address, headers, words", [
    ("ftp", "https://x.example", {}, "kind must be one of"),
    ("http_json", "ftp://x.example", {}, "https://"),
    ("http_json", "https://user:pw@x.example", {}, "user name or password"),
    ("http_json", "https://x.example/api?token=1", {}, "base URL only"),
    ("http_json", "https://x.example/#top", {}, "base URL only"),
    ("http_json", "https:///nohost", {}, "name a host"),
    ("http_json", "https://x.example/a b", {}, "spaces"),
    ("http_json", "http://169.254.169.254", {}, "never reach"),
    ("http_json", "http://[fd00:ec2::254]", {}, "never reach"),
    ("http_json", "http://[fe80::1]", {}, "never reach"),
    ("http_json", "https://x.example", {"Bad Name": "x"}, "not a header name"),
    ("http_json", "https://x.example", {"X-Key": "a\r\nHost: evil"}, "one line"),
    ("csv", "https://x.example", ["Authorization"], "pairs"),
    ("postgresql", "postgresql://reader:pw@db/sales", {}, "password"),
    ("postgresql", "postgresql://db/sales", {}, "postgresql://user@host"),
    ("postgresql", "postgresql://reader@db/", {}, "one database"),
    ("postgresql", "postgresql://reader@169.254.169.254/sales", {}, "never reach"),
    ("postgresql", "postgresql://reader@db/sales", {"X": "a\nb"}, "one line"),
    ("sqlite", "metrics.db", {}, "absolute path"),
])
def test_bad_connections_say_why(kind, address, headers, words):
    assert words in connection_problem(kind, address, headers)


def test_sources_that_are_good():
    assert source_problem("http_json", "/search/issues?q=repo:acme/app+is:issue+is:open", "$.total_count") == {}
    assert source_problem("http_json", "/rest/api/3/search?jql=project%3DAPP&maxResults=0", "$.total") == {}
    assert source_problem("csv", "/pub?output=csv", "B7") == {}
    assert source_problem("csv", "/pub?output=csv", "Revenue@2026-03") == {}
    assert source_problem("postgresql", "SELECT count(*) FROM issues WHERE opened_at <= :as_of;", None) == {}
    assert source_problem("sqlite", "WITH x AS (SELECT 1 AS n) SELECT n FROM x", "") == {}
    assert source_problem("prometheus", 'sum(up{job="api"})', None) == {}


@pytest.mark.parametrize("kind, query, path, field, words", [
    ("http_json", "/x", "$.[", "path", "does not parse"),
    ("http_json", "/x", "total_count", "path", "does not parse"),
    ("http_json", "@evil.example/x", "$.a", "query", "start with /"),
    ("http_json", "//evil.example/x", "$.a", "query", "start with /"),
    ("http_json", "https://evil.example/x", "$.a", "query", "start with /"),
    ("http_json", "/x?token={secret}", "$.a", "query", "{secret}"),
    ("http_json", "/x#frag", "$.a", "query", "fragment"),
    ("http_json", "/a b", "$.a", "query", "spaces"),
    ("http_json", "/a\\@evil", "$.a", "query", "backslashes"),
    ("csv", "/x.csv", "7B", "path", "B7"),
    ("csv", "/x.csv", "Revenue@", "path", "column@row"),
    ("csv", "/x.csv", "", "path", "B7"),
    ("postgresql", "DELETE FROM issues", None, "query", "SELECT"),
    ("postgresql", "SELECT 1; DROP TABLE issues", None, "query", "one statement"),
    ("postgresql", "WITH gone AS (DELETE FROM issues RETURNING 1) SELECT count(*) FROM gone", None, "query",
     "holds DELETE"),
    ("postgresql", "SELECT * INTO snapshot FROM issues", None, "query", "holds INTO"),
    ("sqlite", "", None, "query", "one SELECT"),
    ("sqlite", "SELECT 1", "$.a", "path", "no path"),
    ("prometheus", "  ", None, "query", "PromQL"),
])
def test_bad_sources_say_why(kind, query, path, field, words):
    problems = source_problem(kind, query, path)
    assert words in problems[field], problems


def test_sql_in_strings_and_comments_is_not_a_statement():
    assert sql_queries.sql_problem("SELECT count(*) FROM t WHERE note <> 'a; DROP TABLE t' -- ; delete\n") is None
    assert sql_queries.sql_problem("SELECT $$;delete$$ /* ; */") is None
    assert sql_queries.sql_problem("select 1;") is None


@pytest.mark.parametrize("kind, query, takes", [
    ("http_json", "/search?q=created:<={as_of}", True),
    ("http_json", "/search?q=is:open", False),
    ("csv", "/sheet.csv?at={as_of}", True),
    ("postgresql", "SELECT count(*) FROM t WHERE at <= :as_of::timestamptz", True),
    ("postgresql", "SELECT count(*) FROM t WHERE at::date = now()::date", False),
    ("sqlite", "SELECT ':as_of'", False),
    ("sqlite", "SELECT count(*) FROM t WHERE at <= :as_of", True),
    ("prometheus", "up", True),
])
def test_takes_as_of(kind, query, takes):
    assert takes_as_of(kind, query) is takes


def test_psycopg_placeholders_leave_casts_and_percents_alone():
    assert sql_queries.psycopg_query("SELECT 1 WHERE :as_of::date > x AND y LIKE 'a%'") == \
        "SELECT 1 WHERE %(as_of)s::date > x AND y LIKE 'a%%'"


def test_the_url_is_joined_under_the_address_with_as_of_encoded():
    assert fetching.joined("https://api.github.com/", "/search/issues?q=created:<={as_of}", MOMENT) == \
        "https://api.github.com/search/issues?q=created:<=2026-03-31T23%3A59%3A59Z"
    assert fetching.joined("https://jira.internal/jira", "/rest/api/3/search?jql=x", MOMENT) == \
        "https://jira.internal/jira/rest/api/3/search?jql=x"
    assert fetching.joined("https://sheets.example/pub", "?output=csv", MOMENT) == "https://sheets.example/pub?output=csv"


@pytest.mark.parametrize("query", ["@evil.example/", "//evil.example/", "https://evil.example/", ".evil.example/",
                                   ":8080/", "/x\\@evil.example"])
def test_a_query_that_would_leave_the_host_is_refused_at_read_time(query):
    with pytest.raises(SourceFailed):
        fetching.joined("https://api.github.com", query, MOMENT)
    with pytest.raises(SourceFailed, match="query"):
        read({"kind": "http_json", "address": "https://api.github.com", "headers": {}, "inside_network": False},
             None, {"query": query, "path": "$.a"})


def test_a_replayed_url_must_stay_under_the_connection():
    fetching.check_under("https://jira.internal/jira", "https://jira.internal/jira/rest/api/3/search")
    for url in ("https://other.example/jira/x", "http://jira.internal/jira/x", "https://jira.internal:444/jira/x",
                "https://jira.internal/other/x", "https://x@jira.internal/jira/x"):
        with pytest.raises(SourceFailed, match="leave the connection"):
            fetching.check_under("https://jira.internal/jira", url)


def test_headers_carry_the_secret_or_a_bearer_token():
    assert fetching.headers_with({}, "tok") == {"Authorization": "Bearer tok"}
    assert fetching.headers_with({}, None) == {}
    assert fetching.headers_with({"X-Api-Key": "{secret}", "Accept": "x"}, "tok") == {"X-Api-Key": "tok", "Accept": "x"}
    with pytest.raises(SourceFailed, match="no secret"):
        fetching.headers_with({"X-Api-Key": "{secret}"}, None)
    with pytest.raises(SourceFailed) as failed:
        fetching.headers_with({}, "tok\r\nX-Evil: 1")
    assert "tok" not in str(failed.value)


@pytest.mark.parametrize("address, inside, allowed", [
    ("93.184.215.14", False, True),
    ("127.0.0.1", False, False),
    ("127.0.0.1", True, True),
    ("10.1.2.3", False, False),
    ("10.1.2.3", True, True),
    ("::1", True, True),
    ("169.254.169.254", True, False),
    ("169.254.10.10", True, False),
    ("fd00:ec2::254", True, False),
    ("fe80::1", True, False),
    ("::ffff:169.254.169.254", True, False),
])
def test_the_address_rule(address, inside, allowed):
    why = fetching.refusal(inside)("metrics.internal", ipaddress.ip_address(address))
    assert (why is None) is allowed
    if why and not inside:
        assert "inside our network" in why


def fake_dns(monkeypatch, answer):
    def getaddrinfo(host, port, *args, **kwargs):
        family = socket.AF_INET6 if ":" in answer else socket.AF_INET
        return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (answer, port))]
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_a_name_resolving_to_the_metadata_address_is_refused_even_inside_the_network(monkeypatch):
    fake_dns(monkeypatch, "169.254.169.254")
    for kind, path in (("http_json", "$.a"), ("csv", "A1")):
        with pytest.raises(SourceFailed, match="169.254.169.254, a link-local or metadata address"):
            read({"kind": kind, "address": "http://metrics.internal", "headers": {}, "inside_network": True},
                 None, {"query": "/x", "path": path}, timeout=2)
    with pytest.raises(SourceFailed, match="link-local or metadata"):
        read({"kind": "prometheus", "address": "http://metrics.internal", "headers": {}, "inside_network": True},
             None, {"query": "up", "path": None}, timeout=2)
    with pytest.raises(SourceFailed, match="link-local or metadata"):
        read({"kind": "postgresql", "address": "postgresql://reader@db.internal/sales", "headers": {},
              "inside_network": True}, "pw", {"query": "SELECT 1", "path": None}, timeout=2)


def test_a_name_resolving_to_a_private_address_is_refused_outside_the_network(monkeypatch):
    fake_dns(monkeypatch, "10.0.0.7")
    with pytest.raises(SourceFailed, match='metrics.internal is 10.0.0.7.*"inside our network"'):
        read({"kind": "http_json", "address": "http://metrics.internal", "headers": {}, "inside_network": False},
             None, {"query": "/x", "path": "$.a"}, timeout=2)


def test_jsonpath_selects_exactly_one_number():
    body = (b'{"total_count": 42, "n": 1.50, "text": " 12.5 ", "flag": true, "items": [1, 2], "none": null,'
            b' "words": "many", "nested": {"a": [{"v": 3}]}}')
    assert documents.json_number(body, "$.total_count") == 42
    assert documents.json_number(body, "$.n") == Decimal("1.50")
    assert documents.json_number(body, "$.text") == Decimal("12.5")
    assert documents.json_number(body, "$.nested.a[0].v") == 3
    assert documents.json_number(body, "$.items[?@ > 1]") == 2
    for path, words in (("$.flag", "true, not a number"), ("$.items", "a list, not a number"),
                        ("$.items[*]", "selects 2 values, not one"), ("$.none", "null, not a number"),
                        ("$.missing", "selects nothing"), ("$.words", "'many', not a number"),
                        ("$.nested", "an object")):
        with pytest.raises(SourceFailed, match=words):
            documents.json_number(body, path)


def test_json_that_is_not_json_or_not_finite_is_refused():
    for body in (b"<!DOCTYPE html><html>", b'{"n": NaN}', b'{"n": Infinity}', b"\xff\xfe"):
        with pytest.raises(SourceFailed, match="not JSON"):
            documents.json_number(body, "$.n")
    with pytest.raises(SourceFailed, match="not a finite number|too large"):
        documents.json_number(b'{"n": "1e999999999"}', "$.n")
    assert documents.json_number(b'\xef\xbb\xbf{"n": 5}', "$.n") == 5


SHEET = ("\ufeffMonth,Revenue,Customers,Churn\r\n2026-01,\"1,234.5\",120,2.5%\r\n2026-02, 1500 ,131,3 %\r\n"
         "2026-03,\"12,345,678.25\",140,\r\n2026-04,n/a,150,1.1%\r\n").encode("utf-8")


@pytest.mark.parametrize("cell, value", [
    ("C2", "120"), ("c3", "131"), ("B2", "1234.5"), ("B3", "1500"), ("B4", "12345678.25"), ("D2", "2.5"),
    ("D3", "3"), ("Revenue@2026-02", "1500"), ("Customers@2026-04", "150"), ("Churn@2026-04", "1.1"),
])
def test_csv_cells(cell, value):
    assert documents.csv_number(SHEET, cell, "text/csv") == Decimal(value)


@pytest.mark.parametrize("cell, words", [
    ("B5", "'n/a', not a number"), ("D4", "is empty"), ("A9", "has 5 lines: there is no line 9"),
    ("Z2", "no column Z"), ("Profit@2026-01", "no column of the header line is headed 'Profit'"),
    ("Revenue@2027-01", "no line starts with '2027-01'"), ("Month@2026-01", "'2026-01', not a number"),
])
def test_csv_cells_that_hold_no_number(cell, words):
    with pytest.raises(SourceFailed, match=words):
        documents.csv_number(SHEET, cell, "text/csv")


def test_csv_refuses_a_web_page_ambiguous_keys_and_bad_separators():
    with pytest.raises(SourceFailed, match="web page"):
        documents.csv_number(b"<html></html>", "A1", "text/html; charset=utf-8")
    with pytest.raises(SourceFailed, match="lines 2, 3 all start with 'x'"):
        documents.csv_number(b"k,v\nx,1\nx,2\n", "v@x")
    with pytest.raises(SourceFailed, match="not UTF-8"):
        documents.csv_number(b"k,v\n\xff,1\n", "B2")
    for text in ("1,23", "12,345.6.7", "1.234,5"):
        with pytest.raises(SourceFailed, match="not a number"):
            documents.cell_value(text, "the cell")


def test_numbers():
    assert number(7, "x") == 7 and number(" -1.5e2 ", "x") == Decimal("-150") and number(0.25, "x") == Decimal("0.25")
    for value in (True, None, "NaN", "Infinity", "12abc", "", float("nan"), [1]):
        with pytest.raises(SourceFailed):
            number(value, "x")


def test_read_refuses_a_naive_moment_and_unordered_moments():
    connection = {"kind": "sqlite", "address": "/nowhere.db", "headers": {}, "inside_network": False}
    with pytest.raises(SourceFailed, match="time zone"):
        read(connection, None, {"query": "SELECT :as_of", "path": None}, datetime(2026, 3, 31))
    with pytest.raises(SourceFailed, match="ascending"):
        read_series(connection, None, {"query": "SELECT :as_of", "path": None},
                    [datetime(2026, 3, 2, tzinfo=timezone.utc), datetime(2026, 3, 1, tzinfo=timezone.utc)])


def test_kinds():
    assert KINDS == ("http_json", "csv", "postgresql", "sqlite", "prometheus")
