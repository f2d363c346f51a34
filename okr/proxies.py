"""Requests through a reverse proxy: who the client is, and which host and scheme it asked for.

A proxy's requests all come from the proxy's own address. Only for a peer named with --trusted-proxies
(OKR_TRUSTED_PROXIES: addresses or networks; none by default) does the server read what the proxy says:
the client's address from X-Forwarded-For (else Forwarded's for=), and the host and scheme the browser used
from X-Forwarded-Host and X-Forwarded-Proto (else Forwarded's host= and proto=). Anyone else's such headers
are ignored: a client could write any address there.

The client is the right-most address of the chain that is not a trusted proxy: a proxy appends the address
it was reached from, so everything left of that is the client's own say. client_address is the one place
that decides it, for the sign-in throttle (okr.accounts.throttle), the access log (okr.server.request_log) and the share of
threads per client (okr.server.connections).

The public URL (public_url) is the other rule kept here: the address people reach the service at, which every link
written for them starts with (pages, emails, digests, the identity provider's redirect), and whose path, when it has
one, `okr serve` serves the whole service under (ServedUnder).
"""
import ipaddress
import json
import re
from functools import lru_cache
from urllib.parse import urlsplit

from flask import current_app, request, url_for

# Headers only a proxy adds: a request carrying any of them came through one (okr.accounts.access: never open mode).
PROXY_HEADERS = ("HTTP_FORWARDED", "HTTP_VIA", "HTTP_X_REAL_IP")
PROXY_HEADER_PREFIX = "HTTP_X_FORWARDED_"
SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": "80", "https": "443"}
# One parameter of a Forwarded element: name=token or name="quoted string" (RFC 7239), and what ends it.
FORWARDED_PAIR = re.compile(r'\s*([A-Za-z]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;,\s]*)\s*([;,]|$)')


def trusted_networks(values):
    """The setting (a list of addresses and networks, or one comma-separated text) as a tuple of networks;
    ValueError naming the entry that is neither."""
    if isinstance(values, str):
        values = [values]
    networks = []
    for value in values:
        for entry in str(value).split(","):
            entry = entry.strip()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                raise ValueError(f"trusted proxies: {entry!r} is not an IP address or a network such as "
                                 "10.0.0.0/8") from None
    return tuple(networks)


def as_address(text):
    """An IP address from a header's node ("192.0.2.7", "[2001:db8::1]:4711", "192.0.2.7:80"), or None."""
    text = text.strip().strip('"')
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    return address.ipv4_mapped or address if address.version == 6 else address


def is_trusted(address, trusted):
    """Whether an address (an ipaddress object, or None) is one of the trusted proxies."""
    return address is not None and any(address in network for network in trusted)


def forwarded_values(header, name):
    """The values of one parameter (for, host, proto) in a Forwarded header, element by element, left to
    right; an element without it gives "" (RFC 7239 allows each to leave any out)."""
    values, current, position = [], "", 0
    while position < len(header):
        match = FORWARDED_PAIR.match(header, position)
        if match is None:
            # Not the grammar: skip to the next element.
            comma = header.find(",", position)
            if comma < 0:
                break
            values.append(current)
            current, position = "", comma + 1
            continue
        key, value, end = match.groups()
        if key.lower() == name:
            current = value[1:-1].replace('\\"', '"') if value.startswith('"') else value
        position = match.end()
        if end != ";":
            values.append(current)
            current = ""
    return values


def chain(x_forwarded_for, forwarded):
    """The addresses a request passed, left to right, as its proxies wrote them: X-Forwarded-For's, else
    Forwarded's for=."""
    if x_forwarded_for:
        return x_forwarded_for.split(",")
    if forwarded:
        return forwarded_values(forwarded, "for")
    return []


def client_address(peer, x_forwarded_for, forwarded, trusted):
    """The client's address: the peer's, unless the peer is a trusted proxy; then the right-most address of
    the forwarded chain that is not one, or the last trusted one there when every address is (or a proxy
    wrote something that is no address)."""
    if not trusted:
        return peer
    nearest = as_address(peer)
    if not is_trusted(nearest, trusted):
        return peer
    for entry in reversed(chain(x_forwarded_for, forwarded)):
        address = as_address(entry)
        if address is None:
            break  # "unknown", or a name: the proxy before could not tell, so it stands for its client
        nearest = address
        if not is_trusted(address, trusted):
            break
    return str(nearest)


def environ_client(environ, trusted):
    """The client's address of a WSGI request, kept in the environ: the access log and the app ask once."""
    try:
        return environ["okr.client"]
    except KeyError:
        client = environ["okr.client"] = client_address(
            environ.get("REMOTE_ADDR") or "", environ.get("HTTP_X_FORWARDED_FOR"), environ.get("HTTP_FORWARDED"),
            trusted)
        return client


def came_through_a_proxy(environ):
    """Whether a request carries a header that only proxies add (Forwarded, Via, X-Real-IP, X-Forwarded-*)."""
    return any(name in environ for name in PROXY_HEADERS) or any(
        name.startswith(PROXY_HEADER_PREFIX) for name in environ)


def last_value(header):
    """The right-most of a header's comma-separated values: the one the nearest proxy wrote."""
    return header.rpartition(",")[2].strip() if header else ""


def with_port(host, port, scheme):
    """A Host header's name with another port; none for the scheme's default port."""
    if host.startswith("["):
        name = "[" + host[1:].partition("]")[0] + "]"
    else:
        name = host.rpartition(":")[0] if host.count(":") == 1 else host
    return name if DEFAULT_PORTS.get(scheme) == port else f"{name}:{port}"


class ForwardedHostAndScheme:
    """WSGI middleware: a trusted proxy's request gets the Host, port and scheme the browser used (X-Forwarded-Host,
    X-Forwarded-Port, X-Forwarded-Proto, else Forwarded's host= and proto=), so that the Host check, the Origin
    check and every link the app makes go by them. environ["okr.proxy_scheme"] says the scheme came from the proxy.
    X-Forwarded-Port matters for nginx's usual `$host`, which has no port: behind https://okr.example.com:8443 the
    browser's Origin has one."""

    def __init__(self, app, trusted):
        self.app, self.trusted = app, trusted

    def __call__(self, environ, start_response):
        if is_trusted(as_address(environ.get("REMOTE_ADDR") or ""), self.trusted):
            forwarded = environ.get("HTTP_FORWARDED") or ""
            host = last_value(environ.get("HTTP_X_FORWARDED_HOST")) or (
                forwarded_values(forwarded, "host") or [""])[-1]
            scheme = (last_value(environ.get("HTTP_X_FORWARDED_PROTO")) or (
                forwarded_values(forwarded, "proto") or [""])[-1]).lower()
            if host and host.isprintable():
                environ["HTTP_HOST"] = host
            if scheme in SCHEMES:
                environ["wsgi.url_scheme"] = environ["okr.proxy_scheme"] = scheme
            port = last_value(environ.get("HTTP_X_FORWARDED_PORT"))
            if port.isascii() and port.isdigit() and 0 < int(port) < 65536 and environ.get("HTTP_HOST"):
                port = str(int(port))
                environ["HTTP_HOST"] = with_port(environ["HTTP_HOST"], port, environ["wsgi.url_scheme"])
                environ["SERVER_PORT"] = port
        return self.app(environ, start_response)


def install(app):
    """Reads TRUSTED_PROXIES into networks (ValueError for a bad entry) and, when there are any, puts the
    middleware in front of the app; without, nothing changes on a request's path. Checks the public URL too, so
    that a bad one stops `okr` at start rather than a request."""
    public_url(app.config)
    trusted = trusted_networks(app.config["TRUSTED_PROXIES"])
    app.config["TRUSTED_PROXIES"] = trusted
    if trusted:
        app.wsgi_app = ForwardedHostAndScheme(app.wsgi_app, trusted)


def request_client():
    """This Flask request's client address (environ_client, with the app's trusted proxies)."""
    return environ_client(request.environ, current_app.config["TRUSTED_PROXIES"])


# --- the public URL ---------------------------------------------------------------------------------------------


def url_problem(url):
    """What is wrong with a public URL, in a few words; None when it will do."""
    if any(character.isspace() or ord(character) < 0x20 or ord(character) == 0x7F for character in url):
        return "must not hold spaces or control characters"
    parts = urlsplit(url)
    if parts.scheme.lower() not in SCHEMES:
        return "must start with http:// or https://"
    if not parts.hostname:
        return "must name a host, as in https://okr.example.com"
    if "@" in parts.netloc:
        return "must not hold a user name or password"
    if "?" in url or "#" in url:
        return "must have no query (?) nor fragment (#)"
    try:
        parts.port
    except ValueError:
        return "has a port that is not a number from 0 to 65535"
    if "%" in parts.path or "//" in parts.path:
        return "must have a plain path, such as /okr"
    return None


def checked_url(url, name):
    """url without its trailing slash; ValueError naming the setting (or flag) when it will not do."""
    problem = url_problem(url)
    if problem:
        raise ValueError(f"{name} {url} {problem}")
    return url.rstrip("/")


def public_url(config):
    """The public URL, the one rule: OKR_PUBLIC_URL, else OKR_BASE_URL (its older name), without a trailing slash;
    None when neither is set. ValueError when it is no http(s) address, or when both are set to different ones."""
    return checked_public_url(config.get("PUBLIC_URL") or None, config.get("BASE_URL") or None)


@lru_cache(maxsize=16)
def checked_public_url(public, base):
    if public:
        public = checked_url(str(public).strip(), "OKR_PUBLIC_URL")
    if base:
        base = checked_url(str(base).strip(), "OKR_BASE_URL")
    if public and base and public != base:
        raise ValueError(f"OKR_PUBLIC_URL ({public}) and OKR_BASE_URL ({base}) name two addresses: the service has "
                         "one public URL; set OKR_PUBLIC_URL alone")
    return public or base or None


def public_path(config):
    """The public URL's path, without a trailing slash ("/okr"); "" when there is none."""
    url = public_url(config)
    return urlsplit(url).path.rstrip("/") if url else ""


def origin_of(url):
    """(host[:port], scheme) of an origin or URL, lowercase, without the scheme's default port; None for one that is
    no http(s) origin."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        port = parts.port
    except ValueError:
        return None
    if scheme not in SCHEMES or not parts.hostname:
        return None
    return with_port(parts.netloc.lower(), str(port) if port is not None else DEFAULT_PORTS[scheme], scheme), scheme


def is_public_origin(origin, config):
    """Whether an Origin header is the public URL's origin (False when there is no public URL)."""
    url = public_url(config)
    return url is not None and origin_of(origin) == origin_of(url)


def service_root():
    """Where links for people start, without a trailing slash: the public URL when there is one, else this request's
    own root (whose host, port and scheme a trusted proxy may have given)."""
    return public_url(current_app.config) or request.url_root.rstrip("/")


def link_to(endpoint, **values):
    """A link for people to one of the app's pages (url_for's endpoint and values), from service_root."""
    return service_root() + url_for(endpoint, **values).removeprefix(request.script_root)


class ServedUnder:
    """WSGI middleware for `okr serve` with a public URL that has a path (/okr): the service answers under it, as
    if mounted there (SCRIPT_NAME), so that its links, redirects and cookie carry it. The prefix alone redirects
    to the prefix with a slash; any other path outside it is a 404 in the API's error shape, naming the prefix."""

    def __init__(self, app, prefix):
        self.app, self.prefix = app, prefix

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path.startswith(self.prefix + "/"):
            environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "").rstrip("/") + self.prefix
            environ["PATH_INFO"] = path[len(self.prefix):]
            return self.app(environ, start_response)
        if path == self.prefix and environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            query = environ.get("QUERY_STRING")
            start_response("308 Permanent Redirect", [
                ("Location", self.prefix + "/" + (f"?{query}" if query else "")), ("Content-Length", "0"),
                ("X-Content-Type-Options", "nosniff")])
            return [b""]
        body = json.dumps({"code": 404, "message": f"not found: this service is served under {self.prefix}/"},
                          separators=(",", ":")).encode() + b"\n"  # as the app's own JSON errors
        start_response("404 Not Found", [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                                         ("X-Content-Type-Options", "nosniff")])
        return [body]


def served(app):
    """What `okr serve` serves: the app, under the public URL's path when it has one."""
    prefix = public_path(app.config)
    return ServedUnder(app, prefix) if prefix else app
