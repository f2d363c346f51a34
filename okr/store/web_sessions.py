"""The dashboard's sessions: opened at sign-in, ended at sign-out, found by the token the cookie carries.

Only the token's SHA-256 is stored: a copy of the database opens no session.
"""
import hashlib
import secrets
from datetime import datetime

from ..db import utc_now


def token_hash(token):
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def open_session(db, credential, life):
    """A new session for the key with this credential; its token, for the cookie alone. Sessions older
    than life (a timedelta) are past it: they go."""
    now = utc_now()
    expired_before = (datetime.fromisoformat(now[:-1]) - life).strftime("%Y-%m-%dT%H:%M:%SZ")
    db.execute("DELETE FROM web_sessions WHERE created_at < ?", (expired_before,))
    token = secrets.token_urlsafe(32)
    db.execute("INSERT INTO web_sessions (token_hash, credential, created_at) VALUES (?, ?, ?)",
               (token_hash(token), credential, now))
    return token


def live_credential(db, token):
    """The credential of the session with this token while it has not ended, or None."""
    row = db.execute("SELECT credential FROM web_sessions WHERE token_hash = ? AND ended_at IS NULL",
                     (token_hash(token),)).fetchone()
    return None if row is None else row[0]


def end(db, token):
    """Ends the session with this token (a session already ended, or unknown, stays as it is)."""
    db.execute("UPDATE web_sessions SET ended_at = ? WHERE token_hash = ? AND ended_at IS NULL",
               (utc_now(), token_hash(token)))
