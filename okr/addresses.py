"""Client addresses as the per-address limits count them: the connection cap (okr.cli.connections) and the
sign-in throttle (okr.web.sign_in)."""
import ipaddress


def address_key(host):
    """What a per-address limit counts a client by: its IPv4 address, or its IPv6 /64.

    One IPv6 host commonly holds a whole /64, so counting single IPv6 addresses would limit nothing.
    """
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host  # not an IP address (a Unix socket's peer): one key for all
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return f"{ipaddress.IPv6Network((address, 64), strict=False).network_address}/64"
    return str(address)
