"""API keys: created (the secret made here), looked up for a signature or a sign-in, revoked."""
import secrets

from ..db import utc_now
from ..errors import NotFound


def create(db, name, read_only=False):
    """A new key's credential and secret; the secret is the caller's to show once."""
    credential, secret = secrets.token_hex(12), secrets.token_urlsafe(32)
    db.execute(
        "INSERT INTO api_keys (credential, secret, name, created_at, read_only) VALUES (?, ?, ?, ?, ?)",
        (credential, secret, name, utc_now(), int(read_only)),
    )
    return credential, secret


def find_live(db, credential):
    """The key with this credential that is not revoked (credential, secret, read_only), or None."""
    return db.execute(
        "SELECT credential, secret, read_only FROM api_keys WHERE credential = ? AND revoked_at IS NULL",
        (credential,),
    ).fetchone()


def revoke(db, credential):
    """The time the key was revoked (now, or earlier if it already was); NotFound for an unknown credential."""
    row = db.execute(
        "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE credential = ? RETURNING revoked_at",
        (utc_now(), credential),
    ).fetchone()
    if row is None:
        raise NotFound("API key")
    return row["revoked_at"]


def any_exists(db):
    """Whether any key was ever created, revoked ones included."""
    return db.execute("SELECT EXISTS (SELECT 1 FROM api_keys)").fetchone()[0] == 1
