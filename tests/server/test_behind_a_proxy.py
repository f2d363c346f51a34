"""Behind a reverse proxy (issue 32, finding 18): --trusted-proxies makes the server take the client's address
from X-Forwarded-For or Forwarded (the right-most address that is not a trusted proxy) for the sign-in
throttle, the access log and the share of threads, and the host, port and scheme from X-Forwarded-Host, -Port and
-Proto (or the public URL's origin) for the Host and Origin checks; an untrusted peer's such headers count for
nothing. The last tests run docs/operations.md's configurations of Debian's nginx and Caddy, with TLS, on loopback,
on another port, on port 443 and under a path, and flood wrong passwords through nginx."""
import concurrent.futures
import datetime
import http.client
import io
import ipaddress
import json
import os
import re
import shutil
import socket
import sqlite3
import ssl
import subprocess
import time
import urllib.parse
from contextlib import closing

import pytest
from werkzeug.test import Client

import helpers
from attackers import GOOD, Server, connect_from, pipeline, probed_server, read_answers, what_came
from okr import create_app
from okr.__main__ import SERVE_HELP, parse_options
from okr.server.request_log import AccessLog
from okr.db import init_db
from okr.proxies import client_address, trusted_networks
from okr.rules.request_signature import authorization_header
from okr.settings import default

PASSWORD = "correct horse battery"
HTML = {"Accept": "text/html"}
PROXY = "127.0.0.1"
TRUSTED = trusted_networks(["127.0.0.1", "10.0.0.0/8", "::1"])


# --- who the client is --------------------------------------------------------------------------------------


@pytest.mark.parametrize("peer, x_forwarded_for, forwarded, client", [
    # The proxy appends the address it was reached from: that one, whatever the client wrote before it.
    (PROXY, "198.51.100.7", None, "198.51.100.7"),
    (PROXY, "6.6.6.6, 198.51.100.7", None, "198.51.100.7"),
    (PROXY, "6.6.6.6,198.51.100.7, 10.1.2.3", None, "198.51.100.7"),  # through two trusted proxies
    (PROXY, "2001:db8::7", None, "2001:db8::7"),
    (PROXY, "::ffff:198.51.100.7", None, "198.51.100.7"),
    (PROXY, None, None, PROXY),  # nothing forwarded: the proxy itself
    (PROXY, "10.1.2.3, 127.0.0.1", None, "10.1.2.3"),  # every hop trusted: the farthest
    (PROXY, "198.51.100.7, unknown", None, PROXY),  # a proxy that could not tell: the one that said so
    (PROXY, None, 'for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"', "2001:db8:cafe::17"),
    (PROXY, None, 'for="6.6.6.6", For=198.51.100.7:8443', "198.51.100.7"),
    (PROXY, "198.51.100.7", "for=6.6.6.6", "198.51.100.7"),  # X-Forwarded-For first
    ("::1", "198.51.100.7", None, "198.51.100.7"),
    ("::ffff:127.0.0.1", "198.51.100.7", None, "198.51.100.7"),
    # An untrusted peer's headers count for nothing.
    ("192.0.2.66", "198.51.100.7", "for=198.51.100.8", "192.0.2.66"),
])
def test_the_client_is_the_right_most_address_that_is_not_a_trusted_proxy(peer, x_forwarded_for, forwarded, client):
    assert client_address(peer, x_forwarded_for, forwarded, TRUSTED) == client


def test_without_trusted_proxies_the_client_is_the_peer():
    assert client_address(PROXY, "198.51.100.7", "for=198.51.100.8", ()) == PROXY


# --- the setting ------------------------------------------------------------------------------------------------


def test_the_setting_comes_from_the_flag_or_the_environment(monkeypatch, tmp_path):
    overrides, rest = parse_options(["--trusted-proxies", "127.0.0.1", "--trusted-proxies", "10.0.0.0/8, ::1"])
    assert rest == []
    app = create_app({**overrides, "DATABASE": tmp_path / "okr.db"})
    assert app.config["TRUSTED_PROXIES"] == TRUSTED
    monkeypatch.setenv("OKR_TRUSTED_PROXIES", "192.0.2.1,2001:db8::/32")
    assert create_app({"DATABASE": tmp_path / "okr.db"}).config["TRUSTED_PROXIES"] == (
        ipaddress.ip_network("192.0.2.1/32"), ipaddress.ip_network("2001:db8::/32"))
    monkeypatch.delenv("OKR_TRUSTED_PROXIES")
    assert create_app({"DATABASE": tmp_path / "okr.db"}).config["TRUSTED_PROXIES"] == ()  # none by default
    assert "--trusted-proxies IP  OKR_TRUSTED_PROXIES   none:" in SERVE_HELP


@pytest.mark.slow
@pytest.mark.parametrize("value", ["nginx.local", "10.0.0.0/33"])
def test_a_bad_trusted_proxy_ends_with_one_line(tmp_path, value):
    result = helpers.run_okr("--trusted-proxies", f"127.0.0.1,{value}", "--port", "0", "--database",
                             tmp_path / "okr.db", cwd=tmp_path, timeout=30)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"okr: trusted proxies: {value!r} is not an IP address or a network "
                                          "such as 10.0.0.0/8"]
    assert not (tmp_path / "okr.db").exists()


# --- the sign-in throttle -------------------------------------------------------------------------------------


def proxied_app(tmp_path, **config):
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db", "TRUSTED_PROXIES": [PROXY],
                      "ALLOWED_HOSTS": ["okr.example.com"], **config})
    with app.app_context():
        init_db()
    return app


def csrf(client, path="/login", environ_base=None, headers=None):
    page = client.get(path, headers={**HTML, **(headers or {})}, environ_base=environ_base)
    assert page.status_code == 200, page.status_code
    return re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True)).group(1)


def sign_in(client, email, password=PASSWORD, client_ip="198.51.100.1", peer=PROXY):
    """A sign-in as a proxy forwards it: from peer, for the client at client_ip."""
    request = {"environ_base": {"REMOTE_ADDR": peer}, "headers": {"X-Forwarded-For": client_ip}}
    token = csrf(client, **request)
    return client.post("/login", data={"csrf_token": token, "email": email, "password": password, "next": "/"},
                       **request)


@pytest.mark.usefixtures("fast_hashing")
def test_behind_a_trusted_proxy_failures_hold_their_client_only(tmp_path):
    app = proxied_app(tmp_path)
    helpers.user_with_password(app, PASSWORD)
    client = app.test_client()
    for _ in range(default("SIGN_IN_FAILURES_PER_ACCOUNT") + 1):  # 11 wrong passwords for one person
        sign_in(client, "maya@example.com", "guess guess guess", "198.51.100.1")
    assert sign_in(client, "maya@example.com", client_ip="198.51.100.1").status_code == 429
    assert sign_in(app.test_client(), "maya@example.com", client_ip="198.51.100.2").status_code == 303


@pytest.mark.usefixtures("fast_hashing")
def test_a_flood_from_many_clients_through_the_proxy_holds_nobody_else(tmp_path):
    app = proxied_app(tmp_path)
    helpers.user_with_password(app, PASSWORD)
    client = app.test_client()
    for n in range(default("SIGN_IN_FAILURES_PER_ADDRESS") + 5):  # 50 client addresses, 11 made-up emails
        assert sign_in(client, f"guess{n % 11}@example.com", "guess guess guess", f"198.51.100.{n % 50}").status_code == 401
    assert sign_in(app.test_client(), "maya@example.com", client_ip="203.0.113.5").status_code == 303


@pytest.mark.usefixtures("fast_hashing")
def test_an_untrusted_peer_cannot_choose_the_address_it_is_held_by(tmp_path):
    app = proxied_app(tmp_path)
    helpers.user_with_password(app, PASSWORD)
    client = app.test_client()
    for n in range(default("SIGN_IN_FAILURES_PER_ACCOUNT")):
        sign_in(client, "maya@example.com", "guess guess guess", f"198.51.100.{n}", peer="192.0.2.66")
    held = sign_in(client, "maya@example.com", client_ip="198.51.100.99", peer="192.0.2.66")
    assert held.status_code == 429
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        assert {row[0] for row in db.execute("SELECT address FROM sign_in_failures")} == {"192.0.2.66"}


# --- the access log ---------------------------------------------------------------------------------------------


def test_the_access_log_names_the_client_a_trusted_proxy_forwarded(tmp_path):
    app = proxied_app(tmp_path)
    stream = io.StringIO()
    access_log = AccessLog(stream, flush_seconds=3600)
    client = Client(access_log.wrap(app, app.config["TRUSTED_PROXIES"]))
    client.get("/healthz", headers={"X-Forwarded-For": "6.6.6.6, 198.51.100.7"}, environ_base={"REMOTE_ADDR": PROXY})
    client.get("/healthz", headers={"X-Forwarded-For": "198.51.100.7"}, environ_base={"REMOTE_ADDR": "192.0.2.66"})
    client.get("/healthz", environ_base={"REMOTE_ADDR": PROXY})
    access_log.flush()
    clients = [line.split("okr.access: ")[1].split(" ")[0] for line in stream.getvalue().splitlines()]
    assert clients == ["198.51.100.7", "192.0.2.66", PROXY]


# --- host and scheme ---------------------------------------------------------------------------------------------


def through_the_proxy(host="okr.example.com", scheme="https", peer=PROXY, **headers):
    """What a TLS-ending proxy on this machine sends along: its own address, and the browser's host and scheme."""
    return {"environ_base": {"REMOTE_ADDR": peer},
            "headers": {"Host": "127.0.0.1:8080", "X-Forwarded-For": "198.51.100.7", "X-Forwarded-Host": host,
                        "X-Forwarded-Proto": scheme, **headers}}


@pytest.mark.usefixtures("fast_hashing")
def test_a_trusted_proxy_s_host_and_scheme_are_the_browser_s(tmp_path):
    app = proxied_app(tmp_path)
    maya = helpers.user_with_password(app, PASSWORD)
    client = app.test_client()
    assert client.get("/healthz", **through_the_proxy()).status_code == 200
    assert client.get("/healthz", **through_the_proxy("attacker.example")).status_code == 421
    login = {"email": "maya@example.com", "password": PASSWORD, "next": "/"}
    origin = {"Origin": "https://okr.example.com"}
    token = csrf(client, **through_the_proxy())
    # The browser's own origin may sign in; the same name over plain HTTP is another origin.
    assert client.post("/login", data={**login, "csrf_token": token},
                       **through_the_proxy(Origin="http://okr.example.com")).status_code == 403
    assert client.post("/login", data={**login, "csrf_token": token},
                       **through_the_proxy(**origin)).status_code == 303
    # Links the app makes go by them too: the People page's invitation link.
    invited = client.post(f"/people/{maya['id']}/invitation", data={"csrf_token": csrf(client, "/people",
                                                                                      **through_the_proxy())},
                          **through_the_proxy(**origin))
    link = re.search(r'id="invitation-url" class="link" value="([^"]+)"', invited.get_data(as_text=True)).group(1)
    assert link.startswith("https://okr.example.com/invitations/")


def sign_in_through(client, origin, **forwarded):
    """A browser's sign-in at origin, as a proxy forwards it with the headers given (Host, X-Forwarded-*...)."""
    token = csrf(client, **through_the_proxy(**forwarded))
    return client.post("/login", data={"email": "maya@example.com", "password": PASSWORD, "next": "/",
                                       "csrf_token": token}, **through_the_proxy(Origin=origin, **forwarded)).status_code


@pytest.mark.usefixtures("fast_hashing")
def test_on_another_port_x_forwarded_port_completes_nginx_s_host(tmp_path):
    # nginx's usual $host has no port: behind https://okr.example.com:8443 every form's Origin has one.
    app = proxied_app(tmp_path)
    helpers.user_with_password(app, PASSWORD)
    origin = "https://okr.example.com:8443"
    assert sign_in_through(app.test_client(), origin, Host="okr.example.com") == 403
    assert sign_in_through(app.test_client(), origin, Host="okr.example.com", **{"X-Forwarded-Port": "8443"}) == 303
    # The port is the browser's: another origin's is still refused, and the default port is no port.
    assert sign_in_through(app.test_client(), "https://okr.example.com:9443", **{"X-Forwarded-Port": "8443"}) == 403
    assert sign_in_through(app.test_client(), "https://okr.example.com", **{"X-Forwarded-Port": "443"}) == 303
    # An IPv6 address keeps its brackets, and an X-Forwarded-Host with a port gets the forwarded one.
    assert sign_in_through(app.test_client(), "https://[2001:db8::1]:8443", host="[2001:db8::1]",
                           **{"X-Forwarded-Port": "8443"}) == 303
    assert sign_in_through(app.test_client(), origin, host="okr.example.com:80", **{"X-Forwarded-Port": "8443"}) == 303
    # Only a trusted proxy's port counts.
    assert sign_in_through(app.test_client(), "http://127.0.0.1:8443", peer="192.0.2.66", Host="127.0.0.1",
                           **{"X-Forwarded-Port": "8443"}) == 403


@pytest.mark.usefixtures("fast_hashing")
def test_the_public_url_s_origin_may_post_whatever_host_the_proxy_sent(tmp_path):
    # No X-Forwarded-Port, and the Host without one: the public URL says which origin is this server's.
    app = proxied_app(tmp_path, PUBLIC_URL="https://okr.example.com:8443")
    helpers.user_with_password(app, PASSWORD)
    assert sign_in_through(app.test_client(), "https://okr.example.com:8443", Host="okr.example.com") == 303
    assert sign_in_through(app.test_client(), "https://okr.example.com:8443", host="okr.example.com",
                           peer="192.0.2.66") == 303
    for other in ("https://okr.example.com:9443", "http://okr.example.com:8443",
                  "https://attacker.example:8443"):
        assert sign_in_through(app.test_client(), other, Host="okr.example.com") == 403, other


def test_an_untrusted_peer_s_host_and_scheme_count_for_nothing(tmp_path):
    app = proxied_app(tmp_path)
    client = app.test_client()
    # Its Host is what counts: an address, served; the forwarded name would be the attacker's.
    assert client.get("/healthz", **through_the_proxy("attacker.example", peer="192.0.2.66")).status_code == 200
    assert client.get("/healthz", **through_the_proxy("okr.example.com", peer="192.0.2.66",
                                                      Host="attacker.example")).status_code == 421
    write = client.post("/v1/cycles", json={"name": "Q1"},
                        **through_the_proxy(peer="192.0.2.66", Origin="https://okr.example.com"))
    assert write.status_code == 403  # https://okr.example.com is not http://127.0.0.1:8080


# --- connections and threads -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_trusted_proxy_s_connections_are_not_capped_but_others_are(tmp_path):
    with probed_server(tmp_path, CONNECTIONS_PER_ADDRESS=2, TRUSTED_PROXIES=[PROXY]) as (port, probe):
        socks = [connect_from(port, PROXY) for _ in range(6)]
        others = [connect_from(port, GOOD) for _ in range(3)]
        try:
            assert [what_came(sock, 0.3) for sock in socks] == [None] * 6
            assert what_came(others[2], 5).startswith(b"HTTP/1.1 503 ")
            for n, sock in enumerate(socks):
                sock.sendall(f"GET /probe?{n} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Sleep: 0\r\n\r\n".encode())
            assert all(f"<{n}>".encode() in read_answers(sock, 1) for n, sock in enumerate(socks))
        finally:
            for sock in socks + others:
                sock.close()


@pytest.mark.slow
@pytest.mark.alone  # an answer within 0.3 s
def test_each_forwarded_client_takes_its_own_share_of_the_threads(tmp_path):
    with probed_server(tmp_path, TRUSTED_PROXIES=[PROXY]) as (port, probe):  # 4 threads: 2 for a client
        # One proxy connection first, whose pipelined requests are of two clients in turn.
        with closing(connect_from(port, PROXY)) as sock:
            sock.sendall(b"".join(f"GET /probe?mixed{n} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Sleep: 0\r\n"
                                  f"X-Forwarded-For: 198.51.100.{n % 2 + 1}\r\n\r\n".encode() for n in range(6)))
            assert read_answers(sock, 6).count(b"HTTP/1.1 200 OK") == 6
        busy = [pipeline(port, 2, PROXY, "X-Sleep: 0.6\r\nX-Forwarded-For: 198.51.100.1\r\n") for _ in range(4)]
        try:
            time.sleep(0.1)
            started = time.monotonic()
            other = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            other.request("GET", "/probe?other", headers={"X-Sleep": "0", "X-Forwarded-For": "198.51.100.2"})
            assert other.getresponse().status == 200
            assert time.monotonic() - started < 0.3  # a free thread, though every request came from the proxy
            other.close()
            assert all(read_answers(sock, 2).count(b"HTTP/1.1 200 OK") == 2 for sock in busy)
        finally:
            for sock in busy:
                sock.close()
    assert probe.most.get("198.51.100.1") == 2, probe.most


# --- through nginx and Caddy, with TLS ----------------------------------------------------------------------------

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
CADDY = shutil.which("caddy") or "/usr/bin/caddy"
PUBLIC_NAME = "okr.test"
OPERATIONS = helpers.REPO / "docs" / "operations.md"
# Around docs/operations.md's nginx server block: what nginx needs to run in the foreground from a folder of its own.
NGINX_AROUND = """\
daemon off;
master_process off;
pid {folder}/nginx.pid;
events {{ worker_connections 512; }}
http {{
    access_log off;
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
{server}
}}
"""
# Around docs/operations.md's Caddyfile: no admin endpoint, no certificates fetched, its files in its folder.
CADDY_AROUND = """\
{{
    admin off
    auto_https off
    storage file_system {folder}/data
}}
{site}
"""


def documented(language):
    """The configuration docs/operations.md gives for a proxy, as its ```language block has it."""
    text = OPERATIONS.read_text(encoding="utf-8")
    return re.search(rf"```{language}\n(.*?)```", text, re.S).group(1)


def nginx_config(folder, address, port, upstream, prefix, drop=None):
    """The documented server block, for this test's address, port, certificate, upstream and prefix; without the
    lines that name drop."""
    server = "".join(line for line in documented("nginx").splitlines(True) if not drop or drop not in line)
    for old, new in (("listen 443 ssl", f"listen {address}:{port} ssl"), ("okr.example.com", PUBLIC_NAME),
                     ("/etc/ssl/certs/okr.test.pem", f"{folder}/cert.pem"),
                     ("/etc/ssl/private/okr.test.key", f"{folder}/key.pem"),
                     ("127.0.0.1:8080", f"127.0.0.1:{upstream}"), ("location / {", f"location {prefix}/ {{")):
        assert old in server, old
        server = server.replace(old, new)
    return NGINX_AROUND.format(folder=folder, server=server)


def caddy_config(folder, address, port, upstream, prefix):
    site = documented("caddy")
    for old, new in (("okr.example.com {", f"https://{PUBLIC_NAME}:{port} {{\n    bind {address}\n"
                                           f"    tls {folder}/cert.pem {folder}/key.pem"),
                     ("reverse_proxy 127.0.0.1:8080", f"reverse_proxy {prefix + '*' if prefix else ''} "
                                                      f"127.0.0.1:{upstream}")):
        assert old in site, old
        site = site.replace(old, new)
    return CADDY_AROUND.format(folder=folder, site=site)


def self_signed_certificate(folder):
    """cert.pem and key.pem in folder, for PUBLIC_NAME and 127.0.0.1, valid for a day."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, PUBLIC_NAME)])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(PUBLIC_NAME),
                                                    x509.IPAddress(ipaddress.ip_address(PROXY))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256()))
    (folder / "cert.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))


class Proxy:
    """Debian's nginx or Caddy in the foreground, configured as docs/operations.md says, with TLS on a loopback
    address and port, proxying https://okr.test to the server on upstream (under prefix, when given)."""

    def __init__(self, kind, folder, address, port, upstream, prefix="", drop=None):
        folder.mkdir()
        self_signed_certificate(folder)
        self.kind, self.folder, self.address, self.port = kind, folder, address, port
        if kind == "nginx":
            (folder / "nginx.conf").write_text(nginx_config(folder, address, port, upstream, prefix, drop))
            command = [NGINX, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-e", str(folder / "error.log")]
            env = None
        else:
            (folder / "Caddyfile").write_text(caddy_config(folder, address, port, upstream, prefix))
            command = [CADDY, "run", "--config", str(folder / "Caddyfile"), "--adapter", "caddyfile"]
            env = {"PATH": os.environ.get("PATH", ""), "HOME": str(folder), "XDG_DATA_HOME": str(folder / "data"),
                   "XDG_CONFIG_HOME": str(folder / "config")}
        with open(folder / "error.log", "ab") as log:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env=env)
        self.tls = ssl.create_default_context(cafile=str(folder / "cert.pem"))
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection((address, port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    pytest.fail(f"{kind} did not start: {self.errors()}")
                time.sleep(0.05)

    @property
    def host(self):
        """The Host a browser sends, and its origin's address: no port for 443."""
        return PUBLIC_NAME if self.port == 443 else f"{PUBLIC_NAME}:{self.port}"

    @property
    def origin(self):
        return f"https://{self.host}"

    def errors(self):
        log = self.folder / "error.log"
        return log.read_text() if log.exists() else ""

    def request(self, method, path, source, headers=None, form=None, body=None):
        """(status, headers, body) of a request from the client at source (a loopback address) over HTTPS."""
        if form is not None:
            body = urllib.parse.urlencode(form)
            headers = {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
        sock = socket.create_connection((self.address, self.port), timeout=60, source_address=(source, 0))
        connection = http.client.HTTPSConnection(self.address, self.port, timeout=60)
        connection.sock = self.tls.wrap_socket(sock, server_hostname=PUBLIC_NAME)
        try:
            connection.request(method, path, body=body, headers={"Host": self.host, **(headers or {})})
            response = connection.getresponse()
            return response.status, response.headers, response.read()
        finally:
            connection.close()

    def stop(self):
        helpers.stop_process(self.process)


def needs(program, package):
    if not os.access(program, os.X_OK):
        message = f"no {package} at {program}: apt-get install {package}"
        if helpers.in_ci():
            pytest.fail(f"{message} (CI is set, so this fails instead of skipping)", pytrace=False)
        pytest.skip(message)


def address_for_443():
    """A loopback address whose port 443 is free here (another test may hold 127.0.0.1's); skips the test when
    this user may not bind port 443 at all."""
    for _ in range(50):
        address = f"127.{helpers.PORTS.randrange(1, 255)}.{helpers.PORTS.randrange(0, 256)}.{helpers.PORTS.randrange(1, 255)}"
        with socket.socket() as probe:
            try:
                probe.bind((address, 443))
            except PermissionError:
                pytest.skip("port 443 cannot be bound here (it needs root or CAP_NET_BIND_SERVICE); the other "
                            "port's test shows what the proxy forwards")
            except OSError:
                continue
            return address
    pytest.fail("no loopback address with port 443 free")


@pytest.fixture
def proxies(tmp_path):
    """start(kind, upstream port, port=None, prefix="", drop=None): nginx or Caddy in front of the server there, on
    port (443, or a free one by default); each is stopped at the end."""
    started = []

    def start(kind, upstream, port=None, prefix="", drop=None):
        needs(NGINX, "nginx") if kind == "nginx" else needs(CADDY, "caddy")
        address = PROXY if port != 443 else address_for_443()
        started.append(Proxy(kind, tmp_path / f"{kind}{len(started)}", address, port or helpers.free_port(), upstream,
                             prefix, drop))
        return started[-1]

    yield start
    for proxy in started:
        proxy.stop()


class Browser:
    """A client at one loopback address through a proxy: its session cookie, and the CSRF token of the last page."""

    def __init__(self, proxy, source, prefix=""):
        self.proxy, self.source, self.prefix = proxy, source, prefix
        self.cookie, self.set_cookie = "", None
        self.page = self.get("/login")

    def keep(self, status, headers, body):
        if headers["Set-Cookie"]:
            self.set_cookie = headers["Set-Cookie"]
            self.cookie = self.set_cookie.split(";")[0]
        token = re.search(rb'name="csrf_token" value="([^"]+)"', body)
        if token:
            self.token = token.group(1).decode()
        return status, headers, body

    def get(self, path):
        status, headers, body = self.keep(*self.proxy.request(
            "GET", self.prefix + path, self.source, {"Cookie": self.cookie, **HTML}))
        assert status == 200, (path, status, body[:300])
        return body.decode()

    def post(self, path, form, headers=None):
        return self.keep(*self.proxy.request(
            "POST", self.prefix + path, self.source, {"Cookie": self.cookie, "Origin": self.proxy.origin, **HTML,
                                                      **(headers or {})}, {"csrf_token": self.token, **form}))

    def sign_in(self, email, password, headers=None):
        return self.post("/login", {"email": email, "password": password, "next": "/"}, headers)[0]


def served_database(tmp_path):
    database = tmp_path / "okr.db"
    app = create_app({"DATABASE": database})
    with app.app_context():
        init_db()
    helpers.user_with_password(app, PASSWORD)  # hashed for real, as the server checks it
    return database


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["nginx", "caddy"])
@pytest.mark.parametrize("port, prefix", [(None, ""), (443, ""), (None, "/okr")],
                         ids=["another port", "port 443", "under a path"])
def test_the_documented_configuration_signs_in_posts_forms_and_signs_api_calls(tmp_path, proxies, kind, port,
                                                                                   prefix):
    database = served_database(tmp_path)
    made = helpers.run_okr("--database", database, "keys", "create", "--name", "ci", "--json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    key = json.loads(made.stdout)
    port = port or helpers.free_port()
    public = f"https://{PUBLIC_NAME}" + ("" if port == 443 else f":{port}")
    # At the root the server learns the public host, port and scheme from the proxy; under a path, from the
    # public URL, which also gives it the path to serve under.
    server = Server(tmp_path, "--database", database, "--workers", "1", "--cpu", "all", "--allowed-host", PUBLIC_NAME,
                    "--trusted-proxies", PROXY, "--secure-cookies",
                    *(["--public-url", public + prefix] if prefix else []),
                    env={"OKR_SIGN_IN_FAILURES_PER_ACCOUNT": "3"}, health=prefix + "/healthz")
    try:
        proxy = proxies(kind, server.port, port, prefix)
        assert proxy.origin == public
        # The login page, its cookie (HTTPS only, for the prefix) and its stylesheet.
        laptop = Browser(proxy, "127.0.0.21", prefix)
        assert "; Secure" in laptop.set_cookie and f"Path={prefix or '/'};" in laptop.set_cookie
        stylesheet = re.search(r'<link rel="stylesheet" href="([^"]+)"', laptop.page).group(1)
        assert stylesheet.startswith(prefix + "/static/")
        assert proxy.request("GET", stylesheet, "127.0.0.21")[0] == 200
        # Three wrong passwords hold Maya's sign-in at the laptop, and there only, whatever it claims to be.
        assert [laptop.sign_in("maya@example.com", "guess guess guess") for _ in range(3)] == [401] * 3
        assert laptop.sign_in("maya@example.com", PASSWORD) == 429
        assert laptop.sign_in("maya@example.com", PASSWORD, {"X-Forwarded-For": "198.51.100.9"}) == 429
        # Elsewhere she signs in, and is sent on under the prefix.
        phone = Browser(proxy, "127.0.0.22", prefix)
        status, headers, _ = phone.post("/login", {"email": "maya@example.com", "password": PASSWORD, "next": "/"})
        assert (status, headers["Location"]) == (303, prefix + "/")
        # A form: a new person on the People page, whose invitation link is the public one.
        phone.get("/people")
        status, _, body = phone.post("/people", {"name": "Ada Lovelace", "email": "ada@example.com", "role": "viewer"})
        assert status == 200, body[:300]
        link = re.search(rb'id="invitation-url" class="link" value="([^"]+)"', body).group(1).decode()
        assert re.fullmatch(re.escape(public + prefix) + r"/invitations/[A-Za-z0-9_-]{43}", link), link
        # A signed API call.
        status, _, body = proxy.request("POST", prefix + "/v1/cycles", "127.0.0.23", {
            "Authorization": authorization_header(key["credential"], key["secret"]),
            "Content-Type": "application/json"}, body=json.dumps({"name": "2027 Q1"}))
        assert status == 200, body[:300]
        assert json.loads(body)["name"] == "2027 Q1"
    finally:
        server.stop()
    log = server.log.read_text()
    assert f"okr.access: 127.0.0.21 POST {prefix}/login 401 " in log and f"okr.access: 127.0.0.21 POST {prefix}/login 429 " in log
    assert f"okr.access: 127.0.0.22 POST {prefix}/people 200 " in log
    assert f"okr.access: 127.0.0.23 POST {prefix}/v1/cycles 200 " in log
    if prefix:
        assert f"the public URL is {public}{prefix}: everything is served under {prefix}/" in log
    assert "okr.access: 127.0.0.1 POST" not in log


@pytest.mark.slow
def test_nginx_s_usual_host_without_the_port_breaks_no_form_with_the_public_url(tmp_path, proxies):
    # Host $host and no X-Forwarded-Port, on a port other than 443: the public URL says which origin is the server's.
    database = served_database(tmp_path)
    port = helpers.free_port()
    server = Server(tmp_path, "--database", database, "--workers", "1", "--cpu", "all", "--allowed-host", PUBLIC_NAME,
                    "--trusted-proxies", PROXY, "--public-url", f"https://{PUBLIC_NAME}:{port}")
    try:
        proxy = proxies("nginx", server.port, port, drop="X-Forwarded-Port")
        assert "X-Forwarded-Port" not in (proxy.folder / "nginx.conf").read_text()
        assert Browser(proxy, "127.0.0.31").sign_in("maya@example.com", PASSWORD) == 303
    finally:
        server.stop()


ADDRESS_LIMIT = 20


@pytest.mark.slow
def test_a_flood_of_wrong_passwords_through_nginx_holds_only_its_own_clients(tmp_path, proxies):
    database = served_database(tmp_path)
    # The address limit lowered from its 100, so that the flood passes it with a quarter of the password hashes.
    server = Server(tmp_path, "--database", database, "--workers", "1", "--cpu", "all", "--allowed-host", PUBLIC_NAME,
                    "--trusted-proxies", PROXY, env={"OKR_SIGN_IN_FAILURES_PER_ADDRESS": str(ADDRESS_LIMIT)})
    try:
        proxy = proxies("nginx", server.port)
        # 25 wrong passwords from 12 client addresses for 11 made-up emails, a few at once: more than the 20
        # that would hold every sign-in from one address, and every one of them comes from nginx's.
        flood = [Browser(proxy, f"127.0.0.{10 + n}") for n in range(12)]
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            statuses = list(pool.map(lambda n: flood[n % 12].sign_in(f"guess{n % 11}@example.com", "guess guess guess"),
                                     range(ADDRESS_LIMIT + 5)))
        assert statuses == [401] * (ADDRESS_LIMIT + 5) and time.monotonic() - started < 300
        # Someone else's right password still signs in.
        assert Browser(proxy, "127.0.0.100").sign_in("maya@example.com", PASSWORD) == 303
        # 10 wrong passwords for Maya from one laptop hold her there, and there only, whatever it claims to be.
        laptop = Browser(proxy, "127.0.0.101")
        assert [laptop.sign_in("maya@example.com", "guess guess guess") for _ in range(10)] == [401] * 10
        assert laptop.sign_in("maya@example.com", PASSWORD) == 429
        assert laptop.sign_in("maya@example.com", PASSWORD, {"X-Forwarded-For": "198.51.100.9"}) == 429
        assert Browser(proxy, "127.0.0.102").sign_in("maya@example.com", PASSWORD) == 303
        unlocked = helpers.run_okr("--database", database, "users", "unlock", "maya@example.com", cwd=tmp_path)
        assert unlocked.returncode == 0, unlocked.stderr
        assert laptop.sign_in("maya@example.com", PASSWORD) == 303
    finally:
        server.stop()
    log = server.log.read_text()
    assert "okr.access: 127.0.0.10 POST /login 401 " in log and "okr.access: 127.0.0.101 POST /login 429 " in log
    assert "okr.access: 127.0.0.1 POST" not in log
