"""Requests a browser sends for a page of another site: a write with a foreign Origin is refused (403),
keyed or not, and a Host this server was not told to answer for is a 421 (DNS rebinding)."""
import pytest

from helpers import assert_error, create_key, make_cycle, signed
from okr import create_app
from okr.db import init_db


def test_a_write_from_another_sites_page_is_refused_in_open_mode(client):
    # What fetch("http://127.0.0.1:8080/v1/cycles", {method: "POST", mode: "no-cors", body: ...}) sends:
    # a text/plain body needs no preflight, and the body is read as JSON whatever its type.
    response = client.post("/v1/cycles", data='{"name": "pwned"}', content_type="text/plain",
                           headers={"Origin": "https://attacker.example"})
    body = assert_error(response, 403)
    assert "attacker.example" in body["message"]
    assert client.get("/v1/cycles").get_json()["cycles"] == []


@pytest.mark.parametrize("origin", ["https://attacker.example", "http://localhost:9999", "null",
                                    "http://localhost.attacker.example"])
@pytest.mark.parametrize("method", ["POST", "PATCH", "DELETE", "PUT"])
def test_every_write_method_with_a_foreign_origin_is_refused(client, origin, method):
    cycle = make_cycle(client)
    response = client.open(f"/v1/cycles/{cycle['id']}", method=method, json={"name": "x"},
                           headers={"Origin": origin})
    assert_error(response, 403)
    assert client.get(f"/v1/cycles/{cycle['id']}").get_json()["name"] == cycle["name"]


@pytest.mark.parametrize("origin", ["http://[", "http://[::1", "https://[zz]"])
def test_an_origin_that_is_no_url_is_refused_not_a_500(client, origin):
    assert_error(client.post("/v1/cycles", json={"name": "Q1"}, headers={"Origin": origin}), 403)
    assert client.get("/v1/cycles").get_json()["cycles"] == []


def test_a_signed_write_with_a_foreign_origin_is_refused_too(client, runner):
    key = create_key(runner)
    response = client.post("/v1/cycles", json={"name": "Q1"},
                           headers={**signed(key), "Origin": "https://attacker.example"})
    assert_error(response, 403)


def test_reads_and_same_origin_writes_and_scripts_without_origin_are_served(client):
    foreign = {"Origin": "https://attacker.example"}
    assert client.get("/v1/cycles", headers=foreign).status_code == 200
    assert client.open("/v1/cycles", method="OPTIONS", headers=foreign).status_code == 204
    assert client.post("/v1/cycles", json={"name": "ours"}, headers={"Origin": "http://localhost"}).status_code == 200
    assert client.post("/v1/cycles", json={"name": "curl"}).status_code == 200


def test_the_same_site_behind_a_proxy_that_ends_tls_may_write(client):
    response = client.post("/v1/cycles", json={"name": "Q1"}, base_url="http://localhost",
                           headers={"Origin": "https://localhost", "Host": "localhost"})
    assert response.status_code == 200, response.get_json()
    response = client.post("/v1/cycles", json={"name": "Q2"}, headers={"Origin": "http://localhost:80"})
    assert response.status_code == 200, response.get_json()


def test_a_form_posted_from_another_sites_page_is_a_403_page(client):
    response = client.post("/logout", data={}, headers={"Origin": "https://attacker.example",
                                                        "Accept": "text/html"})
    assert response.status_code == 403 and response.mimetype == "text/html"


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8080", "localhost.attacker.example",
                                  "okr.example.com"])
def test_a_host_the_server_was_not_given_is_misdirected(client, host):
    response = client.get("/v1/cycles", headers={"Host": host})
    body = assert_error(response, 421)
    assert "--allowed-host" in body["message"]
    page = client.get("/", headers={"Host": host, "Accept": "text/html"})
    assert page.status_code == 421 and page.mimetype == "text/html"


@pytest.mark.parametrize("host", ["localhost", "localhost:8080", "127.0.0.1:8080", "127.5.6.7", "[::1]:8080",
                                  "192.0.2.10:8080", "[2001:db8::1]"])
def test_loopback_names_and_addresses_are_always_served(client, host):
    assert client.get("/v1/cycles", headers={"Host": host}).status_code == 200


def test_names_given_with_allowed_host_are_served(tmp_path):
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db",
                      "ALLOWED_HOSTS": ["okr.example.com", "OKR.Example.org."]})
    with app.app_context():
        init_db()
    client = app.test_client()
    for host in ("okr.example.com", "okr.example.com:443", "okr.example.org", "okr.example.com."):
        assert client.get("/healthz", headers={"Host": host}).status_code == 200, host
    assert_error(client.get("/healthz", headers={"Host": "attacker.example"}), 421)


def test_the_allowed_hosts_come_from_the_environment_too(tmp_path, monkeypatch):
    monkeypatch.setenv("OKR_ALLOWED_HOSTS", "a.example, b.example")
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db"})
    assert app.config["ALLOWED_HOSTS"] == {"a.example", "b.example"}


@pytest.mark.slow
def test_a_rebinding_request_over_real_http_is_misdirected(live_server):
    response = live_server.request("POST", "/v1/cycles", {"name": "pwned"}, headers={"Host": "attacker.example"})
    assert response.status == 421 and response.json()["code"] == 421
    assert live_server.get("/v1/cycles").ok()["cycles"] == []


@pytest.mark.slow
def test_the_allowed_host_flag_repeats(tmp_path):
    from okr.__main__ import parse_options

    overrides, rest = parse_options(["--allowed-host", "a.example", "--allowed-host", "b.example", "serve"])
    assert rest == ["serve"]
    app = create_app({**overrides, "DATABASE": tmp_path / "okr.db"})
    assert app.config["ALLOWED_HOSTS"] == {"a.example", "b.example"}
