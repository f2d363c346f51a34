"""The dashboard's sessions as rows (okr.accounts.sessions has the cookie): opened at sign-in, ended at sign-out,
found by the token the cookie carries.

A session is a user's (signed in with email and password) or an API key's (signed in with
its credential and secret). Only the token's SHA-256 is stored: a copy of the database
opens no session.
"""
import hashlib
import secrets
from datetime import datetime

from .. import clock


def token_hash(token):
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def open_session(db, life, user_id=None, credential=None):
    """A new session for the user with user_id, or for the key with credential; its token, for the cookie
    alone. Sessions older than life (a timedelta) are past it: they go."""
    now = clock.utc_now()
    expired_before = (datetime.fromisoformat(now[:-1]) - life).strftime("%Y-%m-%dT%H:%M:%SZ")
    db.execute("DELETE FROM web_sessions WHERE created_at < ?", (expired_before,))
    token = secrets.token_urlsafe(32)
    db.execute("INSERT INTO web_sessions (token_hash, user_id, credential, created_at) VALUES (?, ?, ?, ?)",
               (token_hash(token), user_id, credential, now))
    return token


def live(db, token):
    """(user_id, credential) of the session with this token while it has not ended (one of them None), or
    None."""
    return db.execute("SELECT user_id, credential FROM web_sessions WHERE token_hash = ? AND ended_at IS NULL",
                      (token_hash(token),)).fetchone()


def end(db, token):
    """Ends the session with this token (a session already ended, or unknown, stays as it is)."""
    db.execute("UPDATE web_sessions SET ended_at = ? WHERE token_hash = ? AND ended_at IS NULL",
               (clock.utc_now(), token_hash(token)))


def end_users(db, user_id, keep_token=None):
    """Ends every session of a user: its own, and those opened with its API keys; but the one whose token is
    keep_token, when given."""
    kept = token_hash(keep_token) if keep_token else ""
    db.execute(
        """UPDATE web_sessions SET ended_at = ?
           WHERE ended_at IS NULL AND token_hash <> ?
             AND (user_id = ? OR credential IN (SELECT credential FROM api_keys WHERE user_id = ?))""",
        (clock.utc_now(), kept, user_id, user_id))
