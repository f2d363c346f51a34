"""HTTP GET for the sources that read over HTTP (JSON, CSV, Prometheus): the connection's base URL and a
source's rest of the URL joined without leaving the connection's host, the connection's headers with the secret
put in, and the webhooks' safety (okr.outbound.pinned_http): the address checked after DNS and pinned, no
redirects, one deadline, the answer capped."""
import http.client
import ipaddress
import re
from urllib.parse import quote, urlsplit

from ..outbound import pinned_http
from .values import ANSWER_BYTES, SourceFailed, masked

USER_AGENT = "okr-sources/1"
# Never reached, whatever "inside our network" says: the cloud metadata services (they hand out credentials),
# and link-local addresses, where they and other machine-local services live.
METADATA = (ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254"))
LINK_LOCAL = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"))
# An HTTP header name: RFC 9110's token.
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
SECRET = "{secret}"
AS_OF = "{as_of}"
# What a piece of URL may not hold: controls, spaces, and a backslash (which some parsers read as a slash).
NOT_IN_URL = re.compile(r"[\x00-\x20\x7f\\]")


def never_reached(address):
    """Whether an IP address is one no source may reach: link-local, or a metadata service's."""
    address = pinned_http.carried(address) or address
    return address in METADATA or any(address in network for network in LINK_LOCAL)


def refusal(inside_network):
    """The sources' address rule for pinned_http.resolve."""
    def refused(host, address):
        if never_reached(address):
            return f"{host} is {address}, a link-local or metadata address, which a source may never reach"
        if inside_network or pinned_http.is_public(address):
            return None
        return (f"{host} is {address}, an address of this machine or of a private network; an admin may allow "
                "it by marking the connection \"inside our network\"")
    return refused


def address_problem(address):
    """Why address is not a base URL (https://host[:port][/prefix], or http://), or None."""
    if not isinstance(address, str) or not address:
        return "the address must be a URL such as https://api.example.com"
    if NOT_IN_URL.search(address):
        return "the address may not hold spaces, control characters or backslashes"
    try:
        parts = urlsplit(address)
        port = parts.port
    except ValueError as error:
        return f"the address is not a URL: {error}"
    if parts.scheme not in ("http", "https"):
        return "the address must start with https:// or http://"
    if not parts.hostname:
        return "the address must name a host, as in https://api.example.com"
    if "@" in parts.netloc:
        return "the address may not hold a user name or password: put the secret in the connection's secret"
    if parts.query or parts.fragment or address.endswith(("?", "#")):
        return "the address is the base URL only: the query string goes in each source's query"
    if port == 0:
        return "the address's port must be from 1 to 65535"
    try:
        literal = ipaddress.ip_address(parts.hostname)
    except ValueError:
        literal = None
    if literal is not None and never_reached(literal):
        return f"{literal} is a link-local or metadata address, which a source may never reach"
    return None


def headers_problem(headers):
    """Why headers ({name: value}) cannot be sent, or None."""
    if not isinstance(headers, dict):
        return "the headers must be pairs of a name and a value"
    for name, value in headers.items():
        if not isinstance(name, str) or not HEADER_NAME.fullmatch(name):
            return f"{name!r} is not a header name (letters, digits and - only, as in X-Api-Key)"
        if not isinstance(value, str) or re.search(r"[\x00\r\n]", value):
            return f"the header {name}'s value must be one line of text"
    return None


def query_problem(query):
    """Why a source's rest of the URL (its path and query string, appended to the address) is refused, or None."""
    if not isinstance(query, str) or not query:
        return "the query must be the rest of the URL, starting with /, as in /search/issues?q=is:open"
    if not query.startswith(("/", "?")) or query.startswith("//"):
        return "the query must start with / (or ?) and stay on the connection's host"
    if NOT_IN_URL.search(query):
        return "the query may not hold spaces, control characters or backslashes: write a space as %20 or +"
    if "#" in query:
        return "the query may not hold a fragment (#)"
    if SECRET in query:
        return "the query may not hold {secret}: the secret goes in the connection's headers"
    return None


def joined(address, query, moment):
    """The full URL: address, then query with {as_of} replaced by moment (RFC 3339 text, URL-encoded);
    SourceFailed when it would leave the connection's scheme, host and port."""
    problem = query_problem(query)
    if problem:
        raise SourceFailed(problem)
    if AS_OF in query:
        query = query.replace(AS_OF, quote(moment, safe=""))
    url = address.rstrip("/") + query if query.startswith("/") else address + query
    check_under(address, url)
    return url


def check_under(address, url):
    """SourceFailed unless url is on address's scheme, host and port, and under its path."""
    base, found = urlsplit(address), urlsplit(url)
    if ((found.scheme, found.netloc) != (base.scheme, base.netloc) or "@" in found.netloc
            or not url.startswith(address.rstrip("/")) or NOT_IN_URL.search(url)):
        raise SourceFailed("the URL would leave the connection's address")


def headers_with(headers, secret):
    """The request's headers: the connection's, each {secret} replaced; with a secret and no headers, a Bearer
    token."""
    if secret is not None and re.search(r"[\x00\r\n]", secret):
        raise SourceFailed("the connection's secret holds a line break, which no header may carry")
    if not headers:
        return {"Authorization": f"Bearer {secret}"} if secret else {}
    sent = {}
    for name, value in headers.items():
        if SECRET in value:
            if not secret:
                raise SourceFailed(f"the header {name} uses {{secret}}, but the connection has no secret")
            value = value.replace(SECRET, secret)
        sent[name] = value
    return sent


class Answer:
    """An HTTP answer: its status, its Content-Type and its body (bytes)."""

    def __init__(self, status, content_type, body):
        self.status, self.content_type, self.body = status, content_type, body


def get(url, headers, inside_network, timeout, secret=None, accept="*/*"):
    """GETs url within timeout seconds, connect to last byte; the Answer of a 2xx. SourceFailed for a refused
    address, a failure to connect, a redirect (never followed), a status other than 2xx, an answer larger than
    ANSWER_BYTES, or one that ends before its length."""
    answer = get_any(url, headers, inside_network, timeout, secret, accept)
    if not 200 <= answer.status < 300:
        raise SourceFailed(status_failure(answer, secret))
    return answer


def get_any(url, headers, inside_network, timeout, secret=None, accept="*/*"):
    """As get, but the Answer whatever its status but a redirect."""
    parts = urlsplit(url)
    port = parts.port or pinned_http.default_port(parts.scheme)
    try:
        addresses = pinned_http.resolve(parts.hostname, port, refusal(inside_network))
    except pinned_http.Refused as refused:
        raise SourceFailed(f"refused: {refused}") from None
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sent = {"Host": parts.netloc, "User-Agent": USER_AGENT, "Accept": accept, "Accept-Encoding": "identity",
            **headers}
    deadline = pinned_http.Deadline(timeout)
    error = None
    for address in addresses:
        if parts.scheme == "https":
            connection = pinned_http.PinnedHTTPSConnection(address, port, parts.hostname, deadline)
        else:
            connection = pinned_http.PinnedHTTPConnection(address, port, deadline)
        try:
            try:
                connection.connect()
            except OSError as failure:  # the next address may answer
                error = f"cannot connect to {parts.hostname} ({address}): {pinned_http.describe(failure, timeout)}"
                continue
            try:
                return exchange(connection, target, sent, timeout)
            except (OSError, http.client.HTTPException) as failure:
                raise SourceFailed(masked(f"reading from {parts.hostname} failed: "
                                          f"{failure_words(failure, timeout)}", secret)) from None
        finally:
            connection.close()
    raise SourceFailed(error or f"timed out after {timeout:g} s")


def exchange(connection, target, headers, timeout):
    connection.request("GET", target, headers=headers)
    response = connection.getresponse()
    if 300 <= response.status < 400:
        raise SourceFailed(f"the server answered HTTP {response.status}, a redirect (to "
                           f"{response.getheader('Location', 'nowhere')}), which a source never follows")
    length = response.getheader("Content-Length")
    if length and length.strip().isdigit() and int(length) > ANSWER_BYTES:
        raise SourceFailed("the answer is larger than 1 MB")
    body = response.read(ANSWER_BYTES + 1)
    if len(body) > ANSWER_BYTES:
        raise SourceFailed("the answer is larger than 1 MB")
    if length and length.strip().isdigit() and len(body) < int(length):  # read(amount) stops short, silently
        raise http.client.IncompleteRead(body, int(length) - len(body))
    return Answer(response.status, (response.getheader("Content-Type") or "").lower(), body)


def failure_words(failure, timeout):
    if isinstance(failure, http.client.IncompleteRead):
        return (f"the answer ended after {len(failure.partial)} bytes, before the length the server announced")
    return pinned_http.describe(failure, timeout)


def status_failure(answer, secret):
    """A non-2xx answer in plain words, with the start of its body."""
    start = " ".join(answer.body[:300].decode("utf-8", "replace").split())[:120]
    words = f"the server answered HTTP {answer.status} {http.client.responses.get(answer.status, '')}".rstrip()
    return masked(words + (f": {start}" if start else ""), secret)
