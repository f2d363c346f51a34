"""Password resets: a one-time link, sent by email, for a user to choose a new password; valid for an hour.

Like an invitation, only the token's SHA-256 is stored, a user has at most one (a new one replaces the
old), and it is gone once used, once the user's password is set some other way, and once their email changes
or they are deactivated (okr.store.users.void_links).
"""
import secrets
from datetime import datetime, timedelta

from .. import clock
from .sessions import token_hash

VALID_FOR = timedelta(hours=1)


def create(db, user):
    """A new reset for the user (its row), voiding any earlier one; its token, for the link alone."""
    token = secrets.token_urlsafe(32)
    expires = (datetime.fromisoformat(clock.utc_now()[:-1]) + VALID_FOR).strftime("%Y-%m-%dT%H:%M:%SZ")
    db.execute("INSERT OR REPLACE INTO password_resets (user_id, token_hash, expires_at) VALUES (?, ?, ?)",
               (user["id"], token_hash(token), expires))
    return token


def user_for(db, token):
    """The active user a valid (not used, not expired) reset with this token is for, or None."""
    return db.execute(
        """SELECT u.* FROM password_resets r JOIN users u ON u.id = r.user_id
           WHERE r.token_hash = ? AND r.expires_at > ? AND u.is_active""",
        (token_hash(token), clock.utc_now())).fetchone()
