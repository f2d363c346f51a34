"""HTTP to an address checked after DNS and pinned, within one deadline: what webhooks and metric sources share.

A request goes to an address checked after DNS resolution, and to that very address (the URL's name travels
in the Host header and in TLS's SNI and certificate check), so that a name cannot resolve to an allowed
address for the check and to another for the connection. One deadline covers a request, connect to last byte
(Deadline): a socket's own timeout is per read, which a peer sending a byte now and then never reaches. Which
addresses are allowed is the caller's rule (resolve's refusal).
"""
import http.client
import ipaddress
import socket
import ssl
import time


class Refused(Exception):
    """The URL's host is, or resolves to, an address the caller may not reach (or does not resolve)."""


class Unresolved(Refused):
    """The URL's host does not resolve (now)."""


def is_public(address):
    """Whether an IP address is a public one: none of loopback, private, link-local, multicast, reserved,
    unspecified, shared (100.64/10) or documentation ranges.

    An IPv6 address that carries an IPv4 one is judged as the address it carries: a mapped one (::ffff:a.b.c.d)
    and a 6to4 one (2002:AABB:CCDD::/48, which a 6to4 relay or tunnel delivers to a.b.c.d). A Teredo address
    (2001::/32) is never public: its client is hidden behind NAT and a relay, and nothing here can tell where
    the packets go."""
    address = carried(address)
    if address is None:
        return False
    return address.is_global and not (address.is_multicast or address.is_loopback or address.is_link_local
                                      or address.is_private or address.is_reserved or address.is_unspecified)


def carried(address):
    """The address packets to address reach: the IPv4 address an IPv6 one carries (mapped, 6to4), address
    itself otherwise; None for a Teredo address, whose destination nothing here can tell."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.teredo is not None:
            return None
        inner = address.ipv4_mapped or address.sixtofour
        if inner is not None:
            return inner
    return address


def resolve(host, port, refusal):
    """The addresses to connect to for host (a name or an IP literal), each checked: refusal(host, address) is
    why that address may not be reached (a sentence), or None. Refused when the name does not resolve, or
    when any address it resolves to is refused."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as error:
        raise Unresolved(f"{host} does not resolve: {error}") from None
    addresses = []
    for family, _, _, _, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address = ipaddress.ip_address(sockaddr[0].split("%", 1)[0])
        # Any one refuses the name: else a name with one allowed and one refused address could be used.
        why = refusal(host, address)
        if why:
            raise Refused(why)
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise Unresolved(f"{host} has no IP address")
    return addresses


def default_port(scheme):
    return 443 if scheme == "https" else 80


def tls_context():
    """The TLS context a peer's certificate is checked with: the system's trusted authorities."""
    return ssl.create_default_context()


class Deadline:
    """The moment a request must be over by, connect to last byte."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self):
        """Seconds left; TimeoutError (a socket.timeout) once there are none."""
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's deadline passed")
        return left


class WithinDeadline:
    """A socket whose every blocking call waits at most for what is left of its deadline. A socket's timeout is
    per call: a peer sending a byte now and then would otherwise hold a request open as long as it likes."""

    deadline = None  # a Deadline, set before the first call

    def connect(self, *args):
        self.settimeout(self.deadline.left())
        return super().connect(*args)

    def do_handshake(self, *args):
        self.settimeout(self.deadline.left())
        return super().do_handshake(*args)

    def send(self, *args):
        self.settimeout(self.deadline.left())
        return super().send(*args)

    def sendall(self, *args):
        self.settimeout(self.deadline.left())  # the timeout of sendall is for the whole of it
        return super().sendall(*args)

    def recv(self, *args):
        self.settimeout(self.deadline.left())
        return super().recv(*args)

    def recv_into(self, *args):  # what http.client's reads come to
        self.settimeout(self.deadline.left())
        return super().recv_into(*args)


class DeadlineSocket(WithinDeadline, socket.socket):
    pass


class DeadlineSSLSocket(WithinDeadline, ssl.SSLSocket):
    pass


class PinnedHTTPConnection(http.client.HTTPConnection):
    """HTTP to a given IP address (an ipaddress address), its every wait within one Deadline."""

    def __init__(self, address, port, deadline):
        super().__init__(str(address), port, timeout=deadline.seconds)
        self.address, self.deadline = address, deadline

    def connect(self):
        family = socket.AF_INET6 if self.address.version == 6 else socket.AF_INET
        self.sock = DeadlineSocket(family, socket.SOCK_STREAM)
        self.sock.deadline = self.deadline
        self.sock.connect((str(self.address), self.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def keep_until(self, deadline):
        """The next request on this kept-alive connection waits within deadline."""
        self.deadline = self.sock.deadline = deadline


class PinnedHTTPSConnection(PinnedHTTPConnection):
    """HTTPS to a given IP address, with SNI and the certificate checked for the URL's name (against
    context, tls_context()'s when None)."""

    default_port = 443

    def __init__(self, address, port, server_name, deadline, context=None):
        super().__init__(address, port, deadline)
        self.server_name, self.context = server_name, context

    def connect(self):
        super().connect()
        context = self.context or tls_context()
        context.sslsocket_class = DeadlineSSLSocket
        # The handshake once the deadline is set; the connection closes the socket should it fail.
        self.sock = context.wrap_socket(self.sock, server_hostname=self.server_name, do_handshake_on_connect=False)
        self.sock.deadline = self.deadline
        self.sock.do_handshake()


def describe(failure, timeout):
    """A failed request's reason in plain words."""
    if isinstance(failure, (socket.timeout, TimeoutError)):
        return f"timed out after {timeout:g} s"
    return str(failure) or type(failure).__name__
