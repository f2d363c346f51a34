"""The OAuth authorization server's rows (okr.accounts.oauth_server has the rules): registered clients,
authorization codes (kept as SHA-256 digests, used once), and the grants its tokens belong to."""
import json

from .. import clock

# A grant with its person (as okr.store.assistant_grants reads one) and its client's client_id.
GRANT_WITH_CLIENT = """SELECT g.*, c.client_id, u.name AS user_name, u.email AS user_email, u.role AS user_role,
                              u.is_active AS user_active
                       FROM assistant_grants g JOIN users u ON u.id = g.user_id
                       JOIN oauth_clients c ON c.seq = g.client_seq"""


def save_client(db, client_id, name, redirect_uris, metadata):
    db.execute("INSERT INTO oauth_clients (client_id, name, redirect_uris, metadata, created_at) VALUES (?, ?, ?, ?, ?)",
               (client_id, name, json.dumps(redirect_uris), json.dumps(metadata), clock.utc_now()))


def client(db, client_id):
    """The client registered with this client_id, or None."""
    return db.execute("SELECT * FROM oauth_clients WHERE client_id = ?", (client_id,)).fetchone()


def forget_unused_clients(db, registered_before):
    """Clients registered before that moment that were never given a grant go (with their codes)."""
    db.execute("""DELETE FROM oauth_clients WHERE created_at < ?
                  AND NOT EXISTS (SELECT 1 FROM assistant_grants g WHERE g.client_seq = oauth_clients.seq)""",
               (registered_before,))


def forget_oldest_unauthorized_clients(db, keep):
    """Of the clients no person has authorized yet (no grant, no code), all but the newest keep go."""
    db.execute("""DELETE FROM oauth_clients WHERE seq IN (
                      SELECT c.seq FROM oauth_clients c
                      WHERE NOT EXISTS (SELECT 1 FROM assistant_grants g WHERE g.client_seq = c.seq)
                        AND NOT EXISTS (SELECT 1 FROM oauth_codes o WHERE o.client_seq = c.seq)
                      ORDER BY c.seq DESC LIMIT -1 OFFSET ?)""", (keep,))


def forget_codes_of(db, user_id):
    """A person's codes not yet exchanged for tokens go (their assistants' grants end: okr.store.users)."""
    db.execute("DELETE FROM oauth_codes WHERE user_id = ?", (user_id,))


def forget_expired_codes(db, now):
    db.execute("DELETE FROM oauth_codes WHERE expires_at < ?", (now,))


def save_code(db, code_hash, client_seq, user_id, redirect_uri, scope, code_challenge, resource, expires_at):
    forget_expired_codes(db, clock.utc_now())
    db.execute("INSERT INTO oauth_codes (code_hash, client_seq, user_id, redirect_uri, scope, code_challenge, resource,"
               " expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               (code_hash, client_seq, user_id, redirect_uri, scope, code_challenge, resource, expires_at))


def live_code(db, code_hash, client_seq, now):
    """The code with this digest, given to this client, not yet expired; or None."""
    return db.execute("SELECT * FROM oauth_codes WHERE code_hash = ? AND client_seq = ? AND expires_at > ?",
                      (code_hash, client_seq, now)).fetchone()


def delete_code(db, code_hash):
    db.execute("DELETE FROM oauth_codes WHERE code_hash = ?", (code_hash,))


def grant_by_refresh_hash(db, refresh_hash):
    """The grant whose refresh token has this digest, with its person and its client's client_id; or None."""
    return db.execute(GRANT_WITH_CLIENT + " WHERE g.refresh_hash = ?", (refresh_hash,)).fetchone()


def grant_by_any_token_hash(db, token_hash):
    """The OAuth grant whose access or refresh token has this digest (for a revocation), or None."""
    return (db.execute(GRANT_WITH_CLIENT + " WHERE g.token_hash = ?", (token_hash,)).fetchone()
            or db.execute(GRANT_WITH_CLIENT + " WHERE g.refresh_hash = ?", (token_hash,)).fetchone())
