"""Connected assistants' grants as rows (okr.accounts.assistant_grants has the rules): made with a personal token or
at an OAuth client's token request (the event assistant.connected records it), found by a token's SHA-256,
refreshed, listed, disconnected, ended all at once for a person, and forgotten once expired.

Only tokens' hashes are stored: a copy of the database lets no assistant in.
"""
from .. import clock
from ..errors import NotFound
from ..records import assistant_json
from . import events, oauth_clients

# What a grant is read with when a token is used: the grant, its person's name, role and whether they are active.
GRANT_WITH_PERSON = """SELECT g.*, u.name AS user_name, u.email AS user_email, u.role AS user_role,
                              u.is_active AS user_active
                       FROM assistant_grants g JOIN users u ON u.id = g.user_id"""


def create(db, user_id, name, read_only, role, token_hash, expires_at, client_seq=None, refresh_hash=None,
           refresh_expires_at=None):
    """A new grant's row, with its event assistant.connected (which holds no token, nor any token's hash)."""
    row = db.execute(
        "INSERT INTO assistant_grants (id, user_id, client_seq, name, read_only, role, token_hash, expires_at,"
        " refresh_hash, refresh_expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
        (clock.new_id(), user_id, client_seq, name, int(read_only), role, token_hash, expires_at, refresh_hash,
         refresh_expires_at, clock.utc_now()),
    ).fetchone()
    events.record(db, "assistant", "connected", row["id"], assistant_json(row))
    return row


def by_token(db, token_hash):
    """The grant whose access token has this hash, with its person (GRANT_WITH_PERSON), or None."""
    return db.execute(GRANT_WITH_PERSON + " WHERE g.token_hash = ?", (token_hash,)).fetchone()


def by_refresh_token(db, refresh_hash):
    """The grant whose refresh token has this hash, with its person, or None."""
    return db.execute(GRANT_WITH_PERSON + " WHERE g.refresh_hash = ?", (refresh_hash,)).fetchone()


def by_previous_refresh_token(db, refresh_hash):
    """The grant whose last refresh replaced the refresh token with this hash, or None."""
    return db.execute("SELECT * FROM assistant_grants WHERE previous_refresh_hash = ?", (refresh_hash,)).fetchone()


def by_id(db, grant_id):
    """The grant with this id, with its person, or None."""
    return db.execute(GRANT_WITH_PERSON + " WHERE g.id = ?", (grant_id,)).fetchone()


def renew(db, seq, token_hash, expires_at, refresh_hash, refresh_expires_at, read_only, previous_refresh_hash):
    """A refreshed grant: new tokens in place of the old, which end at once (the old refresh token's hash is kept
    as previous_refresh_hash, to know it again); read_only as the refresh asked."""
    db.execute("UPDATE assistant_grants SET token_hash = ?, expires_at = ?, refresh_hash = ?, refresh_expires_at = ?,"
               " read_only = ?, previous_refresh_hash = ? WHERE seq = ?",
               (token_hash, expires_at, refresh_hash, refresh_expires_at, int(read_only), previous_refresh_hash, seq))


def mark_used(db, seq, moment):
    db.execute("UPDATE assistant_grants SET last_used_at = ? WHERE seq = ?", (moment, seq))


def listed(db, user_id=None):
    """Live grants (not past both their tokens' ends), newest first, with their person and OAuth client (client_id
    NULL for a personal token): one person's, or everyone's (user_id None)."""
    now = clock.utc_now()
    where, params = ("AND g.user_id = ?", (now, now, user_id)) if user_id is not None else ("", (now, now))
    return db.execute(
        """SELECT g.id, g.name, g.read_only, g.expires_at, g.refresh_expires_at, g.created_at, g.last_used_at,
                  g.user_id, u.name AS user_name, u.email AS user_email, c.client_id
           FROM assistant_grants g JOIN users u ON u.id = g.user_id
           LEFT JOIN oauth_clients c ON c.seq = g.client_seq
           WHERE (g.expires_at > ? OR coalesce(g.refresh_expires_at, '') > ?) """ + where + " ORDER BY g.seq DESC",
        params,
    ).fetchall()


def delete(db, grant_id, user_id=None):
    """Disconnects a grant: its tokens end at once. user_id: only if it is this person's (None: anyone's, for an
    admin). NotFound otherwise."""
    if user_id is None:
        row = db.execute("DELETE FROM assistant_grants WHERE id = ? RETURNING id", (grant_id,)).fetchone()
    else:
        row = db.execute("DELETE FROM assistant_grants WHERE id = ? AND user_id = ? RETURNING id",
                         (grant_id, user_id)).fetchone()
    if row is None:
        raise NotFound("connected assistant")


def end_all_of(db, user_id):
    """Ends every grant of a person, personal tokens and OAuth grants, and voids their codes not yet exchanged;
    how many grants there were."""
    oauth_clients.forget_codes_of(db, user_id)
    return db.execute("DELETE FROM assistant_grants WHERE user_id = ?", (user_id,)).rowcount


def delete_expired(db, moment):
    """Grants past both their tokens' ends go (a refresh token outlives its access token), and so do expired
    authorization codes; how many grants went."""
    oauth_clients.forget_expired_codes(db, moment)
    return db.execute("DELETE FROM assistant_grants WHERE expires_at <= ? AND coalesce(refresh_expires_at, '') <= ?",
                      (moment, moment)).rowcount


def delete_expired_now(db):
    """delete_expired in a write transaction of its own, for the server's background process; how many went."""
    db.execute("BEGIN IMMEDIATE")
    try:
        ended = delete_expired(db, clock.utc_now())
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
    return ended
