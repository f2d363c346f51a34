"""GET /: a small JSON index of the service, open without auth."""
import importlib.metadata
import os

import pytest

import okr.web.service_index
from helpers import assert_error

LINKS = {"openapi": "/v1/openapi.json", "healthz": "/healthz"}


def test_index_names_the_service_its_version_and_links(client):
    response = client.get("/")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.get_json() == {
        "name": "okr-service",
        "version": importlib.metadata.version("okr-service"),
        "links": LINKS,
    }


def test_index_links_lead_to_what_they_name(client):
    links = client.get("/").get_json()["links"]
    assert client.get(links["openapi"]).get_json()["info"]["title"] == "OKR service"
    assert client.get(links["healthz"]).get_json() == {"status": "ok"}


def test_index_is_open_once_keys_exist(client, runner):
    assert runner.invoke(args=["keys", "create", "--name", "k"]).exit_code == 0
    assert_error(client.get("/v1/cycles"), 401)
    assert client.get("/").get_json()["name"] == "okr-service"


def test_index_answers_without_the_database(app, client):
    os.remove(app.config["DATABASE"])
    assert client.get("/").status_code == 200


@pytest.fixture
def fresh_version():
    okr.web.service_index.package_version.cache_clear()
    yield okr.web.service_index.package_version
    okr.web.service_index.package_version.cache_clear()


def test_version_is_the_installed_packages(monkeypatch, fresh_version):
    monkeypatch.setattr(importlib.metadata, "version", {"okr-service": "9.8.7"}.get)
    assert fresh_version() == "9.8.7"


def test_version_is_0_1_0_in_a_checkout_without_package_metadata(monkeypatch, fresh_version):
    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    assert fresh_version() == "0.1.0"


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_index_is_read_only(client, method):
    response = getattr(client, method)("/", json={})
    assert_error(response, 405)
    assert "GET" in response.headers["Allow"]


@pytest.mark.slow
def test_index_over_http(live_server):
    response = live_server.get("/")
    assert response.ok()["links"] == LINKS
    assert response.headers["Content-Type"] == "application/json"
