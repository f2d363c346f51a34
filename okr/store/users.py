"""Users: added, renamed or given another email, activated and deactivated. Emails are one under Unicode case
folding (okr.emails), which users.email_key's unique index enforces."""
import sqlite3
from functools import partial

from ..db import new_id, utc_now
from ..emails import email_key
from ..errors import Conflict, NotFound
from .common import fetch

get = partial(fetch, "users", "user")


def taken(email):
    return Conflict(f"a user with email {email} already exists")


def create(db, name, email):
    """A new active user; Conflict when the email is another user's."""
    try:
        return db.execute(
            "INSERT INTO users (id, name, email, email_key, is_active, created_at) VALUES (?, ?, ?, ?, 1, ?)"
            " RETURNING *",
            (new_id(), name, email, email_key(email), utc_now()),
        ).fetchone()
    except sqlite3.IntegrityError:
        raise taken(email) from None


def find_by_email(db, email):
    """The user with this email under folding, or None; or, given exactly, one that an upgrade left without
    an email key."""
    # Such a user lost a clash of emails that were the same under folding (okr.db says
    # more); its exact email is the only way to reach it, and update the way to fix it.
    return (db.execute("SELECT * FROM users WHERE email_key IS NULL AND email = ?", (email,)).fetchone()
            or db.execute("SELECT * FROM users WHERE email_key = ?", (email_key(email),)).fetchone())


def update(db, user, name, email):
    """The user (its row) with this name and email; Conflict when the email is another user's."""
    try:
        return db.execute(
            "UPDATE users SET name = ?, email = ?, email_key = ?, revision = revision + 1 WHERE seq = ? RETURNING *",
            (name, email, email_key(email), user["seq"]),
        ).fetchone()
    except sqlite3.IntegrityError:
        raise taken(email) from None


def set_active(db, email, active):
    """The user with this email (under folding), made active or inactive; NotFound when there is none."""
    row = db.execute(
        "UPDATE users SET is_active = ?, revision = revision + 1 WHERE email_key = ? RETURNING *",
        (int(active), email_key(email)),
    ).fetchone()
    if row is None:
        raise NotFound("user")
    return row
