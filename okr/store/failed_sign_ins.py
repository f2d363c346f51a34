"""Failed sign-ins, kept for the throttle (okr.accounts.throttle, which says how many wait and for how long): a
client's address (as the throttle counts it), the account tried, and when (Unix seconds).
"""


def record(db, address, account, now, window):
    """Records a failed sign-in at now; those older than window seconds go."""
    db.execute("DELETE FROM sign_in_failures WHERE failed_at <= ?", (now - window,))
    db.execute("INSERT INTO sign_in_failures (address, account, failed_at) VALUES (?, ?, ?)",
               (address, account, now))


def nth_latest(db, address, since, n, account=None):
    """When the nth latest failure after since from this address happened (of this account; of any when
    account is None); None when there were fewer."""
    if account is None:
        condition, params = "1", ()
    else:
        condition, params = "account = ?", (account,)
    row = db.execute(
        f"SELECT failed_at FROM sign_in_failures WHERE address = ? AND {condition} AND failed_at > ?"
        " ORDER BY failed_at DESC LIMIT 1 OFFSET ?",
        (address, *params, since, n - 1)).fetchone()
    return None if row is None else row[0]


def by_account(db, accounts, since):
    """{account: failures after since} of these accounts, for those that have any."""
    marks = ", ".join("?" * len(accounts))
    return dict(db.execute(
        f"SELECT account, COUNT(*) FROM sign_in_failures WHERE account IN ({marks}) AND failed_at > ?"
        " GROUP BY account", (*accounts, since)).fetchall())


def by_key_user(db, since):
    """{user id: failures after since} of the users whose API keys' credentials failed."""
    return dict(db.execute(
        "SELECT k.user_id, COUNT(*) FROM sign_in_failures f JOIN api_keys k ON k.credential = f.account"
        " WHERE f.failed_at > ? AND k.user_id IS NOT NULL GROUP BY k.user_id", (since,)).fetchall())


def forget(db, accounts, user_id):
    """Forgets every failure of these accounts and of the user's API keys, from every address; how many."""
    marks = ", ".join("?" * len(accounts))
    return db.execute(
        f"DELETE FROM sign_in_failures WHERE account IN ({marks})"
        " OR account IN (SELECT credential FROM api_keys WHERE user_id = ?)",
        (*accounts, user_id)).rowcount
