"""The sign-in throttle: failed sign-ins counted per client address and account, and per address, and how long
an address that failed too often must wait (okr.store.failed_sign_ins keeps the failures).

From one address, after OKR_SIGN_IN_FAILURES_PER_ACCOUNT failures for one account within OKR_SIGN_IN_WINDOW
seconds, that account's sign-in from that address waits; after OKR_SIGN_IN_FAILURES_PER_ADDRESS failures in the
window, every sign-in from it does (limits() reads the three settings).
An account is a user's email key, an API key's credential, INVITATION for invitation links, PASSWORD_RESET for
password reset links, RESET_REQUEST + an email key for the emails that send them, or CLIENT_REGISTRATION for
assistants registering as OAuth clients (for these two, each request counts, as a failure would). Failures older
than the window go at each failure, so the table holds no more than the window's.

An address is what address_key makes of the client's: its IPv4 address, or its IPv6 /64. The connection cap of
`okr serve` (okr.server.connections) counts clients by it too.
"""
import ipaddress
import time

from flask import current_app

from .. import proxies
from ..db import get_connection, get_db, own_write
from ..rules.email_addresses import email_key
from ..store import failed_sign_ins

INVITATION = "invitation"
PASSWORD_RESET = "password reset"
RESET_REQUEST = "reset request "
CLIENT_REGISTRATION = "client registration"


class Throttled(Exception):
    """This address failed too often: it must wait `wait` seconds."""

    def __init__(self, wait):
        super().__init__(f"too many failed sign-ins: retry in {wait} s")
        self.wait = wait


def limits():
    """(window in seconds, failures per account, failures per address) of this app's settings."""
    config = current_app.config
    return (config["SIGN_IN_WINDOW"], config["SIGN_IN_FAILURES_PER_ACCOUNT"],
            config["SIGN_IN_FAILURES_PER_ADDRESS"])


def address_key(host):
    """What a per-address limit counts a client by: its IPv4 address, or its IPv6 /64.

    One IPv6 host commonly holds a whole /64, so counting single IPv6 addresses would limit nothing.
    """
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host  # not an IP address (a Unix socket's peer): one key for all
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return f"{ipaddress.IPv6Network((address, 64), strict=False).network_address}/64"
    return str(address)


def throttled_address():
    """What the throttle counts this client by: its IPv4 address, or its IPv6 /64, as the connection cap does
    (a host commonly holds a whole /64, and would otherwise get the throttle's guesses once per address in it)."""
    return address_key(proxies.request_client())


def wait_seconds(db, address, account, now):
    """How many seconds this address must wait before it may try this account again; 0 when it may now."""
    window, per_account, per_address = limits()
    since, wait = now - window, 0
    for limit, of_account in ((per_account, account), (per_address, None)):
        # The failure that, once out of the window, leaves one fewer than the limit.
        failed_at = failed_sign_ins.nth_latest(db, address, since, limit, of_account)
        if failed_at is not None:
            wait = max(wait, failed_at + window - now, 1)
    return wait


def refuse_if_throttled(account):
    """Throttled when this address failed too often, for this account or for all. Read outside any transaction
    (each statement reads on its own): a password's hash may follow, and holds neither a snapshot nor the
    writers' lock."""
    wait = wait_seconds(get_connection(), throttled_address(), account, int(time.time()))
    if wait:
        raise Throttled(wait)


def record(db, address, account, now):
    """Records a failed sign-in at now (Unix seconds)."""
    failed_sign_ins.record(db, address, account, now, limits()[0])


def record_failure(account):
    """Records a failure of this client in a short write of its own, committed at once: it stays though the
    request then answers with an error (which rolls the request's transaction back)."""
    with own_write() as db:
        record(db, throttled_address(), account, int(time.time()))


def count_reset_request(email):
    """Throttles the emails of password reset links like sign-ins: every request counts as a failure would,
    for the email asked for and for the address. Throttled once there were too many."""
    account = RESET_REQUEST + email_key(email)
    refuse_if_throttled(account)
    record(get_db(), throttled_address(), account, int(time.time()))


def count_registration(db):
    """Counts an OAuth client's registration (okr.accounts.oauth_server) from this address in db's transaction, as
    a failed sign-in of the account CLIENT_REGISTRATION: Throttled once the address registered as many clients as
    it may fail sign-ins for one account within the window (or failed too often for all), and then nothing is
    written."""
    address, now = throttled_address(), int(time.time())
    wait = wait_seconds(db, address, CLIENT_REGISTRATION, now)
    if wait:
        raise Throttled(wait)
    record(db, address, CLIENT_REGISTRATION, now)


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
    since = now - limits()[0]
    held = {}
    for account, failures in failed_sign_ins.by_account(db, list(owner), since).items():
        held[owner[account]] = held.get(owner[account], 0) + failures
    shown = {person["id"] for person in people}
    for user_id, failures in failed_sign_ins.by_key_user(db, since).items():
        if user_id in shown:
            held[user_id] = held.get(user_id, 0) + failures
    return held


def forget_person(db, user):
    """Forgets every failed sign-in of a person (a users row), from every address, their API keys' too, so
    that nothing holds their sign-in; how many there were."""
    return failed_sign_ins.forget(db, person_accounts(user), user["id"])
