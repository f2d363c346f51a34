"""Open mode, for a laptop only (issue 32, finding 17): it ends once an invitation or a reset link is outstanding,
so the first admin comes in only through her link or okr users set-password; it is never open to a request
through a proxy, nor on a server given a public name, address or proxy; and the server's first log lines say
which mode it is in, and why."""
import re
import signal
from contextlib import closing

import pytest

import helpers
from okr import create_app
from okr.accounts import access
from okr.db import init_db, transaction
from okr.store.schema import connect
from okr.store import password_resets, users

pytestmark = pytest.mark.usefixtures("fast_hashing", "clean_env")

HTML = {"Accept": "text/html"}
MAYA = "maya@example.com"
# What a proxy adds; nginx's defaults send none of them, a usual configuration some.
PROXY_HEADERS = [{"X-Forwarded-For": "203.0.113.9"}, {"Forwarded": "for=203.0.113.9;proto=https"},
                 {"X-Forwarded-Proto": "https"}, {"X-Forwarded-Host": "okr.example.com"},
                 {"X-Real-IP": "203.0.113.9"}, {"Via": "1.1 proxy.example.com"}]


def as_in_the_readme(runner):
    """`okr users add --role admin` and `okr users invite`, as the README sets up the first admin: her link."""
    added = runner.invoke(args=["users", "add", "--name", "Maya Lee", "--email", MAYA, "--role", "admin"])
    assert added.exit_code == 0, added.output
    invited = runner.invoke(args=["users", "invite", MAYA])
    assert invited.exit_code == 0, invited.output
    return invited.output.splitlines()[-1]


def csrf(client, path="/login"):
    page = client.get(path, headers=HTML)
    return re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True)).group(1)


def is_open(client, headers=None):
    """Whether an unsigned visitor gets the API's users and the People page; False when both are refused."""
    api = client.get("/v1/users", headers=headers or {}).status_code
    page = client.get("/people", headers={**HTML, **(headers or {})})
    assert (api, page.status_code) in ((200, 200), (401, 303)), (api, page.status_code)
    if page.status_code == 303:
        assert page.headers["Location"].startswith("/login")
    return api == 200


def reason(app, environ=None):
    """Why a sign-in is needed, as okr.accounts.access says for a request with this environ (None: the server)."""
    with app.app_context(), closing(connect(app.config["DATABASE"], 5000)) as db:
        return access.sign_in_needed_because(db, environ)


def app_with(tmp_path, **config):
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db", **config})
    with app.app_context():
        init_db()
    return app


# --- the first admin's invitation --------------------------------------------------------------------------


def test_an_outstanding_invitation_ends_open_mode(client, runner):
    assert is_open(client)  # a laptop, nothing set up yet
    as_in_the_readme(runner)
    assert not is_open(client)
    assert client.get("/v1/cycles").status_code == 401


def test_nobody_else_can_make_her_a_new_link_and_hers_lets_her_in(app, client, runner):
    link = as_in_the_readme(runner)
    path = link.removeprefix("http://127.0.0.1:8080")
    with app.app_context(), closing(connect(app.config["DATABASE"], 5000)) as db:
        maya = users.find_by_email(db, MAYA)
    # An anonymous visitor's try at a fresh link (which would void hers) goes to the sign-in page.
    tried = client.post(f"/people/{maya['id']}/invitation", data={"csrf_token": csrf(client)}, headers=HTML)
    assert tried.status_code == 303 and tried.headers["Location"].startswith("/login")
    page = client.get(path, headers=HTML)
    assert page.status_code == 200 and "Maya Lee" in page.get_data(as_text=True)
    chosen = client.post(path, data={"csrf_token": csrf(client, path), "password": "my own good password"})
    assert chosen.status_code == 303
    assert client.get("/people", headers=HTML).status_code == 200  # signed in, as the admin
    assert not is_open(app.test_client())


def test_set_password_lets_her_in_too(app, runner):
    as_in_the_readme(runner)
    result = runner.invoke(args=["users", "set-password", MAYA], input="my own good password\n")
    assert result.exit_code == 0, result.output
    client = app.test_client()
    signed_in = client.post("/login", data={"csrf_token": csrf(client), "email": MAYA,
                                            "password": "my own good password", "next": "/people"})
    assert signed_in.status_code == 303 and client.get("/people", headers=HTML).status_code == 200


def test_an_outstanding_password_reset_ends_open_mode(app, client, runner):
    runner.invoke(args=["users", "add", "--name", "Maya Lee", "--email", MAYA, "--role", "admin"])
    assert is_open(client)
    with app.app_context(), transaction() as db:
        password_resets.create(db, users.find_by_email(db, MAYA))
    assert not is_open(client)


def test_an_expired_invitation_keeps_it_closed_after_a_restart_too(tmp_path, client, runner, clock):
    clock.now = "2026-03-01T09:00:00Z"
    as_in_the_readme(runner)
    clock.now = "2026-04-01T09:00:00Z"  # past its 7 days: still no way in for a stranger
    assert not is_open(client)
    assert not is_open(app_with(tmp_path).test_client())  # a new server on the file, which remembers nothing


# --- a request through a proxy ------------------------------------------------------------------------------


@pytest.mark.parametrize("headers", PROXY_HEADERS, ids=lambda headers: next(iter(headers)))
def test_a_request_through_a_proxy_is_never_open(client, headers):
    assert not is_open(client, headers)
    assert client.post("/v1/cycles", json={"name": "pwned"}, headers=headers).status_code == 401
    assert is_open(client)  # the laptop's own browser, on loopback, still is


# --- a server given a public name, address or proxy ---------------------------------------------------------


@pytest.mark.parametrize("config, words", [
    ({"ALLOWED_HOSTS": ["localhost", "okr.example.com"]}, "it answers for okr.example.com (--allowed-host)"),
    ({"PUBLIC_URL": "https://okr.example.com"}, "its public address is https://okr.example.com (--public-url)"),
    ({"BASE_URL": "http://192.0.2.10:8080/okr"}, "its public address is http://192.0.2.10:8080/okr (OKR_BASE_URL)"),
    ({"TRUSTED_PROXIES": ["127.0.0.1"]}, "it is told of a proxy (--trusted-proxies)"),
])
def test_a_server_given_a_public_name_address_or_proxy_is_never_open(tmp_path, config, words):
    app = app_with(tmp_path, **config)
    assert not is_open(app.test_client())
    assert reason(app) == words


@pytest.mark.parametrize("config", [{"ALLOWED_HOSTS": ["localhost"]}, {"BASE_URL": "http://127.0.0.1:8080"},
                                    {"PUBLIC_URL": "http://[::1]:8080"}])
def test_loopback_names_and_addresses_keep_it_open(tmp_path, config):
    assert is_open(app_with(tmp_path, **config).test_client())


def test_the_environment_counts_as_the_flags_do(tmp_path, monkeypatch):
    monkeypatch.setenv("OKR_PUBLIC_URL", "https://okr.example.com")
    assert not is_open(app_with(tmp_path).test_client())


def test_the_reasons_name_what_ended_it(app, runner):
    assert reason(app) is None
    assert reason(app, {"HTTP_X_FORWARDED_FOR": "203.0.113.9"}) == (
        "the request came through a proxy (it carries Forwarded, Via, X-Real-IP or X-Forwarded-*)")
    as_in_the_readme(runner)
    assert reason(app) == "an invitation link is outstanding (okr users invite)"


# --- over real HTTP, and what the server says at start -------------------------------------------------------


@pytest.mark.slow
def test_over_real_http_a_request_through_a_proxy_is_refused(tmp_path):
    # waitress would strip X-Forwarded-* and Forwarded before the app saw them, unless told not to.
    process, http = helpers.start_service(helpers.free_port(), "--database", tmp_path / "okr.db", "--workers", "1",
                                          env=helpers.ENV_WITHOUT_OKR, cwd=tmp_path)
    try:
        assert http.get("/v1/users").status == 200
        for headers in PROXY_HEADERS:
            assert http.get("/v1/users", headers=headers).status == 401, headers
    finally:
        helpers.stop_process(process)


def mode_line(tmp_path, *args):
    """The line about open mode a server on the database in tmp_path logs at start: the second, after the
    database's."""
    process, http = helpers.start_service(helpers.free_port(), "--database", tmp_path / "okr.db", "--workers", "1",
                                          *args, env=helpers.ENV_WITHOUT_OKR, cwd=tmp_path)
    process.send_signal(signal.SIGTERM)
    output = process.communicate(timeout=15)[0].decode()
    assert process.returncode == 0, output
    first, second = [line.split(" ", 2)[2] for line in output.splitlines()[:2]]
    assert first.startswith("INFO okr: using database "), output
    return second


@pytest.mark.slow
def test_the_first_lines_say_open_mode_and_why(tmp_path):
    line = mode_line(tmp_path)
    assert line.startswith("WARNING okr: open mode: no API key or password exists, nor an invitation or reset link,"
                           " and no public name, public URL or proxy was given"), line
    assert "except requests that come through a proxy" in line


@pytest.mark.slow
def test_the_first_lines_say_an_invitation_closed_it(tmp_path):
    as_in_the_readme(app_with(tmp_path).test_cli_runner())
    assert mode_line(tmp_path) == (
        "INFO okr: sign-in needed: an invitation link is outstanding (okr users invite); nobody has a password "
        "or a key yet, so the first person comes in through that link, or after okr users set-password EMAIL")


@pytest.mark.slow
def test_the_first_lines_say_a_public_name_closed_it_and_nobody_can_sign_in_yet(tmp_path):
    line = mode_line(tmp_path, "--allowed-host", "okr.example.com")
    assert line.startswith("WARNING okr: sign-in needed, since it answers for okr.example.com (--allowed-host); "
                           "but nobody can sign in yet: invite someone with okr users invite EMAIL"), line


@pytest.mark.slow
def test_the_first_lines_say_a_key_closed_it(tmp_path):
    helpers.create_key(app_with(tmp_path).test_cli_runner())
    assert mode_line(tmp_path) == "INFO okr: sign-in needed: an API key exists"
