"""A webhook's rules, shared by the data package, the commands, the pages and the sender: what its receiver's
URL may be, and a new hook's signing secret (Standard Webhooks' whsec_ form)."""
import base64
import secrets
from urllib.parse import urlsplit

SECRET_PREFIX = "whsec_"
MAX_URL_LENGTH = 2000


def new_secret():
    """A hook's signing secret as Standard Webhooks spells it: whsec_ and the base64 of 24 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode("ascii")


def url_problem(url):
    """Why url cannot be a hook's (a sentence), or None: http or https, a host, no credentials, a port."""
    if not isinstance(url, str) or not url.strip():
        return "give the receiver's URL"
    if len(url) > MAX_URL_LENGTH:
        return f"the URL is longer than {MAX_URL_LENGTH:,} characters"
    if any(char.isspace() or ord(char) < 32 for char in url):
        return "the URL must not contain spaces or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # raises on a port that is not a number in range
    except ValueError as error:
        return f"the URL is not valid: {error}"
    if parts.scheme not in ("http", "https"):
        return "the URL must start with http:// or https://"
    if parts.username is not None or parts.password is not None:
        return "the URL must not hold credentials (user:password@): the signature proves the sender"
    if not parts.hostname:
        return "the URL has no host"
    if parts.fragment:
        return "the URL must not have a #fragment"
    return None
