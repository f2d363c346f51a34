"""Users: added, renamed or given another email, activated and deactivated, given a role and a password.
Emails are one user under the email rule of okr.rules.email_addresses, which users.email_key's unique index enforces.

The last active admin can be neither demoted nor deactivated: someone must be left to manage people.

A user's open links (an invitation, a password reset) die with what they were sent for: a change of email
(they went to the old address), a deactivation (a reactivation does not bring them back) and a new password.
The changes here void them, and so does okr.store.bulk's write of an imported user (voids_links).

A user's connected assistants (okr.store.assistant_grants: personal tokens and OAuth grants) end, in the same
transaction, when the user is deactivated, given another role, or given a new password (ends_assistants for an
imported user); a reactivation or the old role back brings none of them back.
"""
import json
import sqlite3
from functools import partial

from .. import clock
from ..clock import new_id
from ..rules.email_addresses import email_key
from ..errors import Conflict, NotFound
from ..records import user_role_json
from . import assistant_grants, events, sessions
from .common import fetch, keyset_page

get = partial(fetch, "users", "user")
ROLES = ("admin", "editor", "viewer")


def taken(email):
    return Conflict(f"a user with email {email} already exists")


def create(db, name, email, role="editor"):
    """A new active user, without a password; Conflict when the email is another user's."""
    try:
        row = db.execute(
            "INSERT INTO users (id, name, email, email_key, is_active, created_at, role) VALUES (?, ?, ?, ?, 1, ?, ?)"
            " RETURNING *",
            (new_id(), name, email, email_key(email), clock.utc_now(), role),
        ).fetchone()
    except sqlite3.IntegrityError:
        raise taken(email) from None
    events.record(db, "user", "created", row["id"], user_role_json(row))
    return row


def updated(db, before, row):
    """Records the event of a user's update (before and row: its rows); row."""
    events.record(db, "user", "updated", row["id"], user_role_json(row), before=user_role_json(before))
    return row


def find_by_email(db, email):
    """The user with this email under the email rule, or None; or, given exactly, one that an upgrade left
    without an email key."""
    # Such a user lost a clash of emails that were one under the rule of the day (okr.store.schema
    # says more); its exact email is the only way to reach it, and update the way to fix it.
    return (db.execute("SELECT * FROM users WHERE email_key IS NULL AND email = ?", (email,)).fetchone()
            or db.execute("SELECT * FROM users WHERE email_key = ?", (email_key(email),)).fetchone())


def find(db, user_id):
    """The user with this id, or None."""
    return db.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone()


def update(db, user, name, email):
    """The user (its row) with this name and email; Conflict when the email is another user's. A new email voids
    the user's links."""
    try:
        row = db.execute(
            "UPDATE users SET name = ?, email = ?, email_key = ?, revision = revision + 1 WHERE seq = ? RETURNING *",
            (name, email, email_key(email), user["seq"]),
        ).fetchone()
    except sqlite3.IntegrityError:
        raise taken(email) from None
    if voids_links(user, row):
        void_links(db, user["id"])
    return updated(db, user, row)


def found(db, email):
    """The user with this email (under the email rule); NotFound when there is none."""
    row = find_by_email(db, email)
    if row is None:
        raise NotFound("user")
    return row


def set_active(db, user, active):
    """The user (its row) made active or inactive. Deactivating ends the user's sessions (its keys' included)
    and connected assistants, and voids their links; the user's keys are refused from then on. Conflict for the
    last active admin."""
    if not active:
        keep_an_admin(db, user)
    row = db.execute("UPDATE users SET is_active = ?, revision = revision + 1 WHERE seq = ? RETURNING *",
                     (int(active), user["seq"])).fetchone()
    if not active:
        sessions.end_users(db, user["id"])
        void_links(db, user["id"])
    if ends_assistants(user, row):
        assistant_grants.end_all_of(db, user["id"])
    return updated(db, user, row)


def set_role(db, user, role):
    """The user (its row) given a role (admin, editor or viewer), which ends their connected assistants when it
    is another; Conflict for the last active admin."""
    if role != "admin":
        keep_an_admin(db, user)
    row = db.execute("UPDATE users SET role = ?, revision = revision + 1 WHERE seq = ? RETURNING *",
                     (role, user["seq"])).fetchone()
    if ends_assistants(user, row):
        assistant_grants.end_all_of(db, user["id"])
    return updated(db, user, row)


def keep_an_admin(db, user):
    """Conflict when user is the last active admin (about to be demoted or deactivated)."""
    if user["role"] != "admin" or not user["is_active"]:
        return
    others = db.execute("SELECT EXISTS (SELECT 1 FROM users WHERE role = 'admin' AND is_active AND seq <> ?)",
                        (user["seq"],)).fetchone()[0]
    if not others:
        raise Conflict(f"{user['email']} is the last active admin; make another admin first")


def set_password(db, user, password_hash, keep_token=None):
    """Gives the user (its row) this password hash (okr.accounts.passwords makes it). Every session of the
    user's ends but the one whose token is keep_token (the browser that changed it), so does every connected
    assistant of theirs, and a pending invitation or password reset goes: it would set the password again."""
    db.execute("UPDATE users SET password_hash = ? WHERE seq = ?", (password_hash, user["seq"]))
    void_links(db, user["id"])
    sessions.end_users(db, user["id"], keep_token)
    assistant_grants.end_all_of(db, user["id"])  # whoever knew the old password may have connected one


def voids_links(before, after):
    """Whether a change of a user from before to after (rows, or an imported record) voids their links: a new
    email (any change of its text: the old address may be someone else's now) or a deactivation."""
    return before["email"] != after["email"] or bool(before["is_active"]) and not after["is_active"]


def ends_assistants(before, after):
    """Whether a change of a user from before to after (rows, or an imported record) ends their connected
    assistants: a deactivation, or another role (an imported record without one keeps the stored role)."""
    role = after["role"] if "role" in after.keys() else None
    return bool(before["is_active"]) and not after["is_active"] or isinstance(role, str) and role != before["role"]


def void_links(db, user_id):
    """Ends the user's invitation and password reset, if any: neither link opens again."""
    db.execute("DELETE FROM invitations WHERE user_id = ?", (user_id,))
    db.execute("DELETE FROM password_resets WHERE user_id = ?", (user_id,))



def set_weekly_email(db, user, on):
    """Turns the user's weekly emails (check-in reminders and team digest) on or off. A private preference
    that no API field shows, like the password: it records no event and keeps the user's revision."""
    db.execute("UPDATE users SET weekly_email = ? WHERE seq = ?", (int(bool(on)), user["seq"]))


def find_by_oidc_subject(db, issuer, subject):
    """The user an identity provider (issuer) knows as subject, or None."""
    return db.execute("SELECT * FROM users WHERE oidc_issuer = ? AND oidc_subject = ?", (issuer, subject)).fetchone()


def set_oidc_subject(db, user, issuer, subject):
    """Remembers who the user (its row) is at the identity provider, found by email at a first sign-in there
    (okr.accounts.single_sign_on); None when the user is linked already, whose link is never overwritten: a verified
    email says who owns a mailbox, not who owns the account. Private like the password: no event, and the
    revision stays."""
    return db.execute("UPDATE users SET oidc_issuer = ?, oidc_subject = ? WHERE seq = ? AND oidc_subject IS NULL"
                      " RETURNING *", (issuer, subject, user["seq"])).fetchone()


def unlink(db, user):
    """Forgets who the user (its row) is at the identity provider, so that their next sign-in there with a
    verified email links the subject it comes with: for a person whose account there was made anew. Records
    user.unlinked. The row after, or None when the user had no link (nothing changes then)."""
    row = db.execute("UPDATE users SET oidc_issuer = NULL, oidc_subject = NULL"
                     " WHERE seq = ? AND oidc_subject IS NOT NULL RETURNING *", (user["seq"],)).fetchone()
    if row is not None:
        events.record(db, "user", "unlinked", row["id"], user_role_json(row))
    return row


def record_refused_sign_in(db, user, issuer, subject):
    """Records the event user.sign_in_refused: someone the identity provider (issuer) knows as subject
    has the email of the user (its row), who is linked to another subject. data is the user as the API shows
    it, with the sign-in refused; the subject the user is linked to stays private."""
    events.record(db, "user", "sign_in_refused", user["id"],
                  {**user_role_json(user), "sign_in": {"issuer": issuer, "subject": subject}})


def pick_list(db):
    """Every user's id and name, by name: the choices of a page's person filter."""
    return db.execute("SELECT id, name FROM users ORDER BY name, seq").fetchall()


def choices(db, kept):
    """The id, name and is_active of every active user and of the users of kept (two ids, either maybe ""), by
    name: the choices of a form's person select, which keeps its present choice even when deactivated."""
    return db.execute("SELECT id, name, is_active FROM users WHERE is_active OR id IN (?, ?) ORDER BY name, seq",
                      kept).fetchall()


def owner_choices(db, kept):
    """The id, name, role and is_active of every active editor and admin (those who may own a key result) and of
    the users of kept (two ids, either maybe ""), by name: the choices of a key result's owner select, which keeps
    its present owner even when deactivated or made a viewer since."""
    return db.execute("""SELECT id, name, role, is_active FROM users
                         WHERE (is_active AND role IN ('editor', 'admin')) OR id IN (?, ?) ORDER BY name, seq""",
                      kept).fetchall()


def role_of(db, user_id):
    """The role of the user with this id, or None when there is none."""
    row = db.execute("SELECT role FROM users WHERE id = ?", (user_id,)).fetchone()
    return row["role"] if row else None


def name_of(db, user_id):
    """The name of the user with this id, or None when there is none."""
    row = db.execute("SELECT name FROM users WHERE id = ?", (user_id,)).fetchone()
    return row["name"] if row else None


def names_of(db, user_ids):
    """The id and name of each of these users that exists (the ids go in as one JSON array, one parameter
    whatever their count)."""
    return db.execute("SELECT id, name FROM users WHERE id IN (SELECT value FROM json_each(?))",
                      (json.dumps(list(user_ids)),)).fetchall()


def listed(db):
    """Every user's row, inactive ones too, in creation order (a cursor)."""
    return db.execute("SELECT * FROM users ORDER BY seq")


def first_admin_with_password(db):
    """The email of the first active admin with a password, or None."""
    row = db.execute("SELECT email FROM users WHERE role = 'admin' AND is_active AND password_hash IS NOT NULL"
                     " ORDER BY seq LIMIT 1").fetchone()
    return None if row is None else row[0]


def id_by_email_key(db, key):
    """The id of the user whose email has this key (okr.rules.email_addresses.email_key), or None."""
    row = db.execute("SELECT id FROM users WHERE email_key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def other_with_email(db, email, user_id):
    """The id of a user other than user_id whose email is this one under the email rule, or None."""
    row = db.execute("SELECT id FROM users WHERE email_key = ? AND id <> ?", (email_key(email), user_id)).fetchone()
    return None if row is None else row[0]


def emails_and_keys(db):
    """Every user's email and email key, in creation order (a cursor)."""
    return db.execute("SELECT email, email_key FROM users ORDER BY seq")


def any_active_admin(db):
    """Whether any user is an active admin."""
    return db.execute("SELECT EXISTS (SELECT 1 FROM users WHERE role = 'admin' AND is_active)").fetchone()[0] == 1


def with_email_keys(db, keys):
    """The rows of the users whose email has one of these keys (okr.rules.email_addresses.email_key; the keys go
    in as one JSON array, one parameter whatever their count)."""
    return db.execute("SELECT * FROM users WHERE email_key IN (SELECT value FROM json_each(?))",
                      (json.dumps(list(keys)),)).fetchall()


def active_admin_count(db):
    """How many users are active admins."""
    return db.execute("SELECT count(*) FROM users WHERE role = 'admin' AND is_active").fetchone()[0]


def email_exists(db, email):
    """Whether a user has this email under the email rule."""
    return db.execute("SELECT 1 FROM users WHERE email_key = ?", (email_key(email),)).fetchone() is not None


# page(db, after, limit): a page of users, oldest first.
page = partial(keyset_page, "users")


def roles_of(db, user_ids):
    """{id: role} of these users (the ids go in as one JSON array, one parameter whatever their count)."""
    return dict(db.execute("SELECT id, role FROM users WHERE id IN (SELECT value FROM json_each(?))",
                           (json.dumps(list(user_ids)),)).fetchall())
