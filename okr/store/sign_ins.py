"""Failed sign-ins, for throttling: per client address and account, and per address. An address is what
okr.addresses.address_key makes of the client's (an IPv6 client's /64).

From one address, after FAILURES_PER_ACCOUNT failures for one account within WINDOW seconds,
that account's sign-in from that address waits; after FAILURES_PER_ADDRESS failures in the
window, every sign-in from it does. An account is a user's email key, an API key's
credential, INVITATION for invitation links, PASSWORD_RESET for password reset links, or
RESET_REQUEST + an email key for the emails that send them (each request counts, as a failure would). Rows older than the window go at each failure.
"""
from ..emails import email_key

WINDOW = 15 * 60
FAILURES_PER_ACCOUNT = 10
FAILURES_PER_ADDRESS = 100
INVITATION = "invitation"
PASSWORD_RESET = "password reset"
RESET_REQUEST = "reset request "


def record_failure(db, address, account, now):
    """Records a failed sign-in at now (Unix seconds)."""
    db.execute("DELETE FROM sign_in_failures WHERE failed_at <= ?", (now - WINDOW,))
    db.execute("INSERT INTO sign_in_failures (address, account, failed_at) VALUES (?, ?, ?)",
               (address, account, now))


def wait_seconds(db, address, account, now):
    """How many seconds this address must wait before it may try this account again; 0 when it may now."""
    since, wait = now - WINDOW, 0
    for limit, condition, params in (
        (FAILURES_PER_ACCOUNT, "account = ?", (account,)),
        (FAILURES_PER_ADDRESS, "1", ()),
    ):
        # The failure that, once out of the window, leaves one fewer than the limit.
        row = db.execute(
            f"SELECT failed_at FROM sign_in_failures WHERE address = ? AND {condition} AND failed_at > ?"
            " ORDER BY failed_at DESC LIMIT 1 OFFSET ?",
            (address, *params, since, limit - 1)).fetchone()
        if row is not None:
            wait = max(wait, row[0] + WINDOW - now, 1)
    return wait


def person_accounts(user):
    """The accounts a person's (a users row's) failures are recorded under besides their API keys' credentials:
    their email's key, for passwords, and the reset links asked for it."""
    key = email_key(user["email"])
    return key, RESET_REQUEST + key


def held_people(db, people, now):
    """{user id: failures within the window} for those of people (users rows) who have any, their API keys'
    sign-ins included."""
    if not people:
        return {}
    owner = {account: person["id"] for person in people for account in person_accounts(person)}
    marks = ", ".join("?" * len(owner))
    held = {}
    for account, failures in db.execute(
            f"SELECT account, COUNT(*) FROM sign_in_failures WHERE account IN ({marks}) AND failed_at > ?"
            " GROUP BY account", (*owner, now - WINDOW)):
        held[owner[account]] = held.get(owner[account], 0) + failures
    shown = {person["id"] for person in people}
    for user_id, failures in db.execute(
            "SELECT k.user_id, COUNT(*) FROM sign_in_failures f JOIN api_keys k ON k.credential = f.account"
            " WHERE f.failed_at > ? AND k.user_id IS NOT NULL GROUP BY k.user_id", (now - WINDOW,)):
        if user_id in shown:
            held[user_id] = held.get(user_id, 0) + failures
    return held


def forget_person(db, user):
    """Forgets every failed sign-in of a person (a users row), from every address, their API keys' too, so
    that nothing holds their sign-in; how many there were."""
    return db.execute(
        "DELETE FROM sign_in_failures WHERE account IN (?, ?)"
        " OR account IN (SELECT credential FROM api_keys WHERE user_id = ?)",
        (*person_accounts(user), user["id"])).rowcount
