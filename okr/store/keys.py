"""API keys: created (the secret made here), looked up for a signature or a sign-in, revoked.

A key with a user acts as that user, with the user's role; one without is a service key.
"""
import secrets

from .. import clock
from ..errors import NotFound
from ..records import key_json
from . import events


def create(db, name, read_only=False, user_id=None):
    """A new key's credential and secret; the secret is the caller's to show once."""
    credential, secret = secrets.token_hex(12), secrets.token_urlsafe(32)
    row = db.execute(
        "INSERT INTO api_keys (credential, secret, name, created_at, read_only, user_id) VALUES (?, ?, ?, ?, ?, ?)"
        " RETURNING *",
        (credential, secret, name, clock.utc_now(), int(read_only), user_id),
    ).fetchone()
    events.record(db, "key", "created", credential, key_json(row))
    return credential, secret


def find_live(db, credential):
    """The key with this credential that is not revoked, or None: credential, secret, name, read_only, user_id,
    and its user's role, is_active and name as user_name (NULL for a service key), read in the one statement
    a signed request costs."""
    return db.execute(
        """SELECT k.credential, k.secret, k.name, k.read_only, k.user_id, u.role, u.is_active, u.name AS user_name
           FROM api_keys k LEFT JOIN users u ON u.id = k.user_id
           WHERE k.credential = ? AND k.revoked_at IS NULL""",
        (credential,),
    ).fetchone()


def revoke(db, credential):
    """The time the key was revoked (now, or earlier if it already was); NotFound for an unknown credential."""
    before = db.execute("SELECT * FROM api_keys WHERE credential = ?", (credential,)).fetchone()
    if before is None:
        raise NotFound("API key")
    if before["revoked_at"] is not None:
        return before["revoked_at"]
    row = db.execute("UPDATE api_keys SET revoked_at = ? WHERE seq = ? RETURNING *",
                     (clock.utc_now(), before["seq"])).fetchone()
    events.record(db, "key", "updated", credential, key_json(row), before=key_json(before))
    return row["revoked_at"]



def user_has_keys(db, user_id):
    """Whether the user has any live key."""
    return db.execute("SELECT EXISTS (SELECT 1 FROM api_keys WHERE user_id = ? AND revoked_at IS NULL)",
                      (user_id,)).fetchone()[0] == 1


def listed(db):
    """Every key in the order made, never its secret: credential, name, created_at, revoked_at, read_only, and
    the email of the user it acts as (user; None for a service key)."""
    return db.execute(
        """SELECT k.credential, k.name, k.created_at, k.revoked_at, k.read_only, u.email AS user
           FROM api_keys k LEFT JOIN users u ON u.id = k.user_id ORDER BY k.seq"""
    ).fetchall()
