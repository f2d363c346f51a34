"""Invitations: a one-time link for a user to choose a password, valid for 7 days.

Only the token's SHA-256 is stored; a user has at most one (a new one replaces the old),
and it is gone once used, once the user has a password some other way, and once their email
changes or they are deactivated (okr.store.users.void_links).
"""
import secrets
from datetime import datetime, timedelta

from .. import clock
from .sessions import token_hash

VALID_FOR = timedelta(days=7)


def create(db, user):
    """A new invitation for the user (its row), voiding any earlier one; its token, for the link alone."""
    token = secrets.token_urlsafe(32)
    expires = (datetime.fromisoformat(clock.utc_now()[:-1]) + VALID_FOR).strftime("%Y-%m-%dT%H:%M:%SZ")
    db.execute("INSERT OR REPLACE INTO invitations (user_id, token_hash, expires_at) VALUES (?, ?, ?)",
               (user["id"], token_hash(token), expires))
    return token


def invited_user(db, token):
    """The active user a valid (not used, not expired) invitation with this token is for, or None."""
    return db.execute(
        """SELECT u.* FROM invitations i JOIN users u ON u.id = i.user_id
           WHERE i.token_hash = ? AND i.expires_at > ? AND u.is_active""",
        (token_hash(token), clock.utc_now())).fetchone()


def use(db, token):
    """Ends the invitation with this token (its user has chosen a password)."""
    db.execute("DELETE FROM invitations WHERE token_hash = ?", (token_hash(token),))
