"""Connected assistants' grants as rows (okr.accounts.assistant_grants has the rules): made with a personal token or
at an OAuth client's token request, found by a token's SHA-256, refreshed, listed and disconnected.

Only tokens' hashes are stored: a copy of the database lets no assistant in.
"""
from .. import clock
from ..errors import NotFound

# What a grant is read with when a token is used: the grant, its person's name, role and whether they are active.
GRANT_WITH_PERSON = """SELECT g.*, u.name AS user_name, u.email AS user_email, u.role AS user_role,
                              u.is_active AS user_active
                       FROM assistant_grants g JOIN users u ON u.id = g.user_id"""


def create(db, user_id, name, read_only, role, token_hash, expires_at, client_seq=None, refresh_hash=None,
           refresh_expires_at=None):
    """A new grant's row."""
    return db.execute(
        "INSERT INTO assistant_grants (id, user_id, client_seq, name, read_only, role, token_hash, expires_at,"
        " refresh_hash, refresh_expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
        (clock.new_id(), user_id, client_seq, name, int(read_only), role, token_hash, expires_at, refresh_hash,
         refresh_expires_at, clock.utc_now()),
    ).fetchone()


def by_token(db, token_hash):
    """The grant whose access token has this hash, with its person (GRANT_WITH_PERSON), or None."""
    return db.execute(GRANT_WITH_PERSON + " WHERE g.token_hash = ?", (token_hash,)).fetchone()


def by_refresh_token(db, refresh_hash):
    """The grant whose refresh token has this hash, with its person, or None."""
    return db.execute(GRANT_WITH_PERSON + " WHERE g.refresh_hash = ?", (refresh_hash,)).fetchone()


def by_id(db, grant_id):
    """The grant with this id, with its person, or None."""
    return db.execute(GRANT_WITH_PERSON + " WHERE g.id = ?", (grant_id,)).fetchone()


def renew(db, seq, token_hash, expires_at, refresh_hash, refresh_expires_at):
    """A refreshed grant: new tokens in place of the old, which end at once."""
    db.execute("UPDATE assistant_grants SET token_hash = ?, expires_at = ?, refresh_hash = ?, refresh_expires_at = ?"
               " WHERE seq = ?", (token_hash, expires_at, refresh_hash, refresh_expires_at, seq))


def mark_used(db, seq, moment):
    db.execute("UPDATE assistant_grants SET last_used_at = ? WHERE seq = ?", (moment, seq))


def listed(db, user_id=None):
    """Grants, newest first, with their person and OAuth client (client_id NULL for a personal token): one person's,
    or everyone's (user_id None)."""
    where, params = ("WHERE g.user_id = ?", (user_id,)) if user_id is not None else ("", ())
    return db.execute(
        """SELECT g.id, g.name, g.read_only, g.expires_at, g.refresh_expires_at, g.created_at, g.last_used_at,
                  g.user_id, u.name AS user_name, u.email AS user_email, c.client_id
           FROM assistant_grants g JOIN users u ON u.id = g.user_id
           LEFT JOIN oauth_clients c ON c.seq = g.client_seq """ + where + " ORDER BY g.seq DESC",
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


def delete_expired(db, moment):
    """Grants past both their tokens' ends go (a refresh token outlives its access token)."""
    db.execute("DELETE FROM assistant_grants WHERE expires_at < ? AND coalesce(refresh_expires_at, '') < ?",
               (moment, moment))
