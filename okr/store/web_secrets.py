"""The secrets the service keeps for itself: the key that signs the dashboard's session cookies."""
import secrets

SESSION = "session"


def read(db, name):
    row = db.execute("SELECT value FROM web_secrets WHERE name = ?", (name,)).fetchone()
    return None if row is None else row[0]


def make(db, name):
    """The secret, made now unless it exists (init_db makes the session's; a restore may have lost it)."""
    db.execute("INSERT OR IGNORE INTO web_secrets (name, value) VALUES (?, ?)", (name, secrets.token_hex(32)))
    return read(db, name)
