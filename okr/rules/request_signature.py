"""Simple OKR's request signature, for the server that checks it and the client that makes it.

Authorization: S1-HMAC-SHA256 Credential=<c>&Timestamp=<RFC 3339 UTC>&Signature=<hex>, where the
signature is the lowercase hex HMAC-SHA256 of credential + timestamp, keyed with the secret.
"""
import hashlib
import hmac
from datetime import datetime, timezone

SCHEME = "S1-HMAC-SHA256"


def sign(credential, secret, timestamp):
    """The lowercase hex HMAC-SHA256 of credential + timestamp, keyed with secret."""
    message = (credential + timestamp).encode("utf-8")
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def authorization_header(credential, secret, timestamp=None):
    """The Authorization value for an RFC 3339 UTC timestamp, by default now."""
    timestamp = timestamp or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{SCHEME} Credential={credential}&Timestamp={timestamp}&Signature={sign(credential, secret, timestamp)}"
