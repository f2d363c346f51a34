"""The weekly messages' claims (weekly_mail): one row per (kind, recipient, week), taken before a reminder, a
digest or a chat message is sent, so that one process alone sends it however many run; given up when the
sending fails, so that a later round sends it.

A claim is its own short write transaction: the other processes must see it before the message goes out.
"""
from .. import clock


def claim(db, kind, recipient, week):
    """True when this process now holds the claim; False when another took it first."""
    db.execute("BEGIN IMMEDIATE")
    try:
        inserted = db.execute("INSERT OR IGNORE INTO weekly_mail (kind, recipient, week, sent_at) VALUES (?, ?, ?, ?)",
                              (kind, recipient, week, clock.utc_now())).rowcount
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
    return inserted == 1


def release(db, kind, recipient, week):
    """Gives up a claim whose message was not sent, inside the caller's write transaction."""
    db.execute("DELETE FROM weekly_mail WHERE kind = ? AND recipient = ? AND week = ?", (kind, recipient, week))
