"""People in the dashboard: sign-in with email and password, sessions that end, throttling, invitations,
the account page, the People page, and roles in the pages (issue 22); password hashes that hold no lock and
take a bounded share of the threads (issue 32)."""
import http.client
import re
import sqlite3
import threading
import time
from urllib.parse import urlencode

import pytest
from flask import g, has_request_context

from helpers import served_in_thread, signed
from okr.accounts import passwords
from okr.accounts import sign_in as sign_in_flow
from okr.db import transaction
from okr.store import invitations, keys, password_resets, team_members, teams, users
from okr.settings import default

pytestmark = pytest.mark.usefixtures("fast_hashing")

PASSWORD = "correct horse battery"
HTML = {"Accept": "text/html"}
HERE, THERE = "192.0.2.10", "198.51.100.20"


def person(app, name="Maya Admin", email="maya@example.com", role="admin", password=PASSWORD):
    """A user made through the store, with a password unless None; its row as a dict."""
    with app.app_context(), transaction() as db:
        user = users.create(db, name, email, role)
        if password is not None:
            users.set_password(db, user, passwords.hash_password(password))
        return dict(db.execute("SELECT * FROM users WHERE id = ?", (user["id"],)).fetchone())


def csrf(client, path="/login", address=HERE):
    page = client.get(path, headers=HTML, environ_base={"REMOTE_ADDR": address})
    return re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True)).group(1)


def sign_in(client, email, password=PASSWORD, address=HERE):
    return client.post("/login", data={"csrf_token": csrf(client, address=address), "email": email,
                                       "password": password, "next": "/"},
                       environ_base={"REMOTE_ADDR": address})


def post(client, path, address=HERE, **fields):
    token = csrf(client, "/", address) if "csrf_token" not in fields else fields.pop("csrf_token")
    return client.post(path, data={"csrf_token": token, **fields}, environ_base={"REMOTE_ADDR": address})


def text(response):
    return " ".join(re.sub(r"<[^>]+>", " ", response.get_data(as_text=True)).split())


def is_signed_in(client):
    return client.get("/", headers=HTML).status_code == 200


def db_rows(app, sql, *params):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        return db.execute(sql, params).fetchall()


# --- signing in -------------------------------------------------------------------------------------


def test_the_login_page_asks_for_email_and_password_and_keeps_the_key_form(app, client):
    person(app)
    page = client.get("/login").get_data(as_text=True)
    for name in ("email", "password", "credential", "secret"):
        assert f'name="{name}"' in page
    assert page.index('name="email"') < page.index('name="credential"')  # the person's way first


def test_a_person_signs_in_and_every_page_says_who(app, client, cycle):
    person(app, name="Maya Admin")
    response = sign_in(client, "MAYA@example.com")  # the email rule: A to Z in either case
    assert response.status_code == 303 and response.headers["Location"] == "/"
    for path in ("/", f"/cycles/{cycle['id']}", "/account", "/people"):
        page = client.get(path, headers=HTML)
        assert page.status_code == 200, path
        assert "Signed in as Maya Admin admin" in text(page), path


@pytest.mark.parametrize("typed", ["jürgen.strasse@example.com", "J\u00dcRGEN.STRAßE@example.com",
                                   "jürgen.STRA\u1e9eE@example.com"])
def test_a_password_sign_in_takes_the_email_under_the_email_rule_only(app, client, typed):
    # Issue 32: emails are one in NFC with the letters A to Z in either case, not under full case folding
    # (ß and ẞ are ss there, and Ü is ü): another address's owner must not reach this account with its password.
    person(app, "Maya Admin")
    person(app, "Jürgen Straße", "jürgen.straße@example.com", "editor")
    refused = sign_in(client, typed)
    assert refused.status_code == 401 and "Unknown email, or wrong password." in text(refused)
    assert not is_signed_in(client)
    assert sign_in(client, "J\u00fcRGEN.STRA\u00dfE@EXAMPLE.com").status_code == 303
    assert is_signed_in(client)


def test_a_wrong_email_and_a_wrong_password_get_the_same_answer_and_one_hash_check_each(app, client, monkeypatch):
    person(app)
    checked = []
    real = passwords.verify
    monkeypatch.setattr(passwords, "verify", lambda stored, given: checked.append(stored) or real(stored, given))
    unknown = sign_in(client, "nobody@example.com")
    wrong = sign_in(client, "maya@example.com", "not the password at all")
    assert unknown.status_code == wrong.status_code == 401
    assert text(unknown).replace("nobody@example.com", "") == text(wrong).replace("maya@example.com", "")
    assert "Unknown email, or wrong password." in text(wrong)
    # The unknown email was checked against the dummy hash: as long as a real check.
    assert len(checked) == 2 and checked[0] is None and checked[1].startswith("$argon2id$")


def test_a_user_without_a_password_cannot_sign_in(app, client):
    person(app)
    person(app, "No Password", "nopass@example.com", "editor", password=None)
    assert sign_in(client, "nopass@example.com", "").status_code == 401


def test_an_inactive_user_is_told_so_only_after_the_right_password(app, client):
    person(app)
    ed = person(app, "Ed Itor", "ed@example.com", "editor")
    with app.app_context(), transaction() as db:
        users.set_active(db, users.get(db, ed["id"]), False)
    wrong = sign_in(client, "ed@example.com", "not the password at all")
    assert "deactivated" not in text(wrong) and "Unknown email, or wrong password." in text(wrong)
    right = sign_in(client, "ed@example.com")
    assert right.status_code == 401 and "This account is deactivated" in text(right)
    assert not is_signed_in(client)


def test_open_mode_lasts_until_the_first_password(app, client):
    ed = person(app, "Ed Itor", "ed@example.com", "editor", password=None)
    assert client.get("/", headers=HTML).status_code == 200
    assert client.get("/v1/users").status_code == 200
    with app.app_context(), transaction() as db:
        users.set_password(db, users.get(db, ed["id"]), passwords.hash_password(PASSWORD))
    assert client.get("/", headers=HTML).status_code == 303
    assert client.get("/v1/users").status_code == 401


# --- sessions that end ------------------------------------------------------------------------------


def test_deactivating_ends_the_users_sessions_and_refuses_their_keys(app, client):
    person(app)
    ed = person(app, "Ed Itor", "ed@example.com", "editor")
    with app.app_context(), transaction() as db:
        credential, secret = keys.create(db, "ed's script", user_id=ed["id"])
    key = {"credential": credential, "secret": secret}
    assert sign_in(client, "ed@example.com").status_code == 303
    assert client.get("/v1/users", headers=signed(key)).status_code == 200
    with app.app_context(), transaction() as db:
        users.set_active(db, users.get(db, ed["id"]), False)
    assert not is_signed_in(client)
    assert client.get("/v1/users", headers=signed(key)).status_code == 401
    # Reactivated, the keys work again; the sessions stay ended.
    with app.app_context(), transaction() as db:
        users.set_active(db, users.get(db, ed["id"]), True)
    assert client.get("/v1/users", headers=signed(key)).status_code == 200


def test_sign_out_everywhere_ends_every_session_of_the_user(app):
    person(app)
    ed = person(app, "Ed Itor", "ed@example.com", "editor")
    laptop, phone, other = app.test_client(), app.test_client(), app.test_client()
    for client in (laptop, phone):
        assert sign_in(client, "ed@example.com").status_code == 303
    assert sign_in(other, "maya@example.com").status_code == 303
    response = post(laptop, "/account/sign-out-everywhere")
    assert response.status_code == 303 and response.headers["Location"].endswith("/login")
    assert not is_signed_in(laptop) and not is_signed_in(phone)
    assert is_signed_in(other)  # someone else's session stays
    assert db_rows(app, "SELECT count(*) FROM web_sessions WHERE user_id = ? AND ended_at IS NULL",
                   ed["id"]) == [(0,)]


def test_changing_the_password_ends_the_other_sessions_and_keeps_this_one(app):
    person(app)
    person(app, "Ed Itor", "ed@example.com", "editor")
    here, elsewhere = app.test_client(), app.test_client()
    for client in (here, elsewhere):
        sign_in(client, "ed@example.com")
    refused = post(here, "/account/password", current_password="not it at all", password="a brand new password")
    assert refused.status_code == 400 and "This is not your current password." in text(refused)
    weak = post(here, "/account/password", current_password=PASSWORD, password="short")
    assert weak.status_code == 400 and "at least 12 characters" in text(weak)
    changed = post(here, "/account/password", current_password=PASSWORD, password="a brand new password")
    assert changed.status_code == 200 and "Your password is changed" in text(changed)
    assert is_signed_in(here) and not is_signed_in(elsewhere)
    assert sign_in(app.test_client(), "ed@example.com").status_code == 401
    assert sign_in(app.test_client(), "ed@example.com", "a brand new password").status_code == 303


# --- throttling -------------------------------------------------------------------------------------


def test_ten_failures_for_an_account_from_one_address_hold_it_there_but_not_elsewhere(app):
    person(app)
    attacker, owner = app.test_client(), app.test_client()
    for _ in range(default("SIGN_IN_FAILURES_PER_ACCOUNT")):
        assert sign_in(attacker, "maya@example.com", "guess guess guess", HERE).status_code == 401
    held = sign_in(attacker, "maya@example.com", PASSWORD, HERE)  # even the right password waits
    assert held.status_code == 429
    assert 0 < int(held.headers["Retry-After"]) <= 15 * 60
    assert "Try again in 15 minutes" in text(held)
    assert not is_signed_in(attacker)
    assert sign_in(owner, "maya@example.com", PASSWORD, THERE).status_code == 303
    # Another account from the held address is not held by this one's failures.
    person(app, "Ed Itor", "ed@example.com", "editor")
    assert sign_in(attacker, "ed@example.com", PASSWORD, HERE).status_code == 303


def test_the_throttles_limits_are_the_servers_settings(app):
    app.config["SIGN_IN_FAILURES_PER_ACCOUNT"] = 3  # as OKR_SIGN_IN_FAILURES_PER_ACCOUNT=3 gives it
    person(app)
    attacker = app.test_client()
    for _ in range(3):
        assert sign_in(attacker, "maya@example.com", "guess guess guess", HERE).status_code == 401
    assert sign_in(attacker, "maya@example.com", PASSWORD, HERE).status_code == 429


def test_the_hold_ends_fifteen_minutes_after_the_failures(app, monkeypatch):
    person(app)
    client = app.test_client()
    start = time.time()
    monkeypatch.setattr(time, "time", lambda: start)
    for _ in range(default("SIGN_IN_FAILURES_PER_ACCOUNT")):
        sign_in(client, "maya@example.com", "guess guess guess")
    assert sign_in(client, "maya@example.com").status_code == 429
    monkeypatch.setattr(time, "time", lambda: start + 15 * 60 + 1)
    assert sign_in(client, "maya@example.com").status_code == 303


def test_a_hundred_failures_from_one_address_hold_every_sign_in_from_it(app):
    person(app)
    client = app.test_client()
    for n in range(default("SIGN_IN_FAILURES_PER_ADDRESS")):  # 9 per made-up account: never an account's limit
        assert sign_in(client, f"guess{n // 9}@example.com", "guess guess guess").status_code == 401
    assert sign_in(client, "maya@example.com").status_code == 429
    assert sign_in(app.test_client(), "maya@example.com", PASSWORD, THERE).status_code == 303


def test_the_addresses_of_one_ipv6_64_share_their_failures(app):
    person(app)
    client = app.test_client()
    for n in range(default("SIGN_IN_FAILURES_PER_ACCOUNT")):  # each from an address of its own in 2001:db8:1:2::/64
        assert sign_in(client, "maya@example.com", "guess guess guess", f"2001:db8:1:2::{n + 1:x}").status_code == 401
    assert sign_in(client, "maya@example.com", PASSWORD, "2001:db8:1:2:ffff::1").status_code == 429
    assert sign_in(app.test_client(), "maya@example.com", PASSWORD, "2001:db8:1:3::1").status_code == 303
    assert db_rows(app, "SELECT DISTINCT address FROM sign_in_failures") == [("2001:db8:1:2::/64",)]


def test_failures_are_kept_though_the_failed_sign_in_is_rolled_back(app, client):
    person(app)
    sign_in(client, "maya@example.com", "guess guess guess")
    assert db_rows(app, "SELECT address, account FROM sign_in_failures") == [(HERE, "maya@example.com")]


def test_api_key_sign_in_is_throttled_like_passwords(app, client, runner):
    from helpers import create_key
    key = create_key(runner)
    for _ in range(default("SIGN_IN_FAILURES_PER_ACCOUNT")):
        response = client.post("/login", data={"csrf_token": csrf(client), "credential": key["credential"],
                                               "secret": "wrong", "next": "/"}, environ_base={"REMOTE_ADDR": HERE})
        assert response.status_code == 401
    held = client.post("/login", data={"csrf_token": csrf(client), "credential": key["credential"],
                                       "secret": key["secret"], "next": "/"}, environ_base={"REMOTE_ADDR": HERE})
    assert held.status_code == 429 and "Retry-After" in held.headers


def test_invitation_links_sent_with_a_password_are_throttled_like_sign_ins(app, client):
    maya = person(app)
    with app.app_context(), transaction() as db:
        token = invitations.create(db, users.get(db, maya["id"]))
    for n in range(default("SIGN_IN_FAILURES_PER_ACCOUNT")):
        assert post(client, f"/invitations/made-up-{n}", csrf_token=csrf(client),
                    password="my own good password").status_code == 404
    assert client.get(f"/invitations/{token}", environ_base={"REMOTE_ADDR": HERE}).status_code == 429
    assert client.get(f"/invitations/{token}", environ_base={"REMOTE_ADDR": THERE}).status_code == 200


def test_opening_a_wrong_invitation_link_counts_nothing(app, client):
    # What another site's page can make a visitor's browser open, as often as it likes (<img src=...>).
    maya = person(app)
    new = person(app, "New Person", "new@example.com", "editor", password=None)
    token = invite(app, new["id"])
    for n in range(default("SIGN_IN_FAILURES_PER_ADDRESS") + 1):
        assert client.get(f"/invitations/made-up-{n}", environ_base={"REMOTE_ADDR": HERE}).status_code == 404
    assert db_rows(app, "SELECT count(*) FROM sign_in_failures") == [(0,)]
    assert client.get(f"/invitations/{token}", environ_base={"REMOTE_ADDR": HERE}).status_code == 200
    assert sign_in(app.test_client(), maya["email"]).status_code == 303


# --- a password's hash holds no lock, and a bounded share of the threads (issue 32) -------------------


def watch_hashing(monkeypatch, watch):
    """Calls watch() on the request's thread before each hash or check of a password a request makes."""
    real_hash, real_verify = passwords.hash_password, passwords.verify

    def hash_password(password):
        if has_request_context():
            watch()
        return real_hash(password)

    def verify(password_hash, password):
        if has_request_context():
            watch()
        return real_verify(password_hash, password)

    monkeypatch.setattr(passwords, "hash_password", hash_password)
    monkeypatch.setattr(passwords, "verify", verify)


@pytest.fixture
def locks_while_hashing(monkeypatch):
    """What each hash or check of a password found: (this process's writers' lock held, a transaction open)."""
    found = []
    watch_hashing(monkeypatch, lambda: found.append(
        (g.get("holds_writers_lock", False), g.get("db") is not None and g.db.in_transaction)))
    return found


class Gate:
    """Holds every hash and check of a password until opened; counts those waiting at it."""

    def __init__(self):
        self.opened, self.entered, self.lock = threading.Event(), 0, threading.Lock()

    def __call__(self):
        with self.lock:
            self.entered += 1
        assert self.opened.wait(30)

    def wait_for(self, count, seconds=10):
        deadline = time.monotonic() + seconds
        while self.entered < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.entered >= count


@pytest.fixture
def gate(monkeypatch):
    """A Gate before every hash and check of a password a request makes; opened at the end of the test."""
    held = Gate()
    watch_hashing(monkeypatch, held)
    yield held
    held.opened.set()


def change_password_in(client, current=PASSWORD):
    return post(client, "/account/password", current_password=current, password="a brand new password")


def invitation_sign_in(app, client):
    new = person(app, "New Person", "new@example.com", "editor", password=None)
    token = invite(app, new["id"])
    return lambda: post(client, f"/invitations/{token}", csrf_token=csrf(client, f"/invitations/{token}"),
                        password="my own good password")


def reset_sign_in(app, client):
    with app.app_context(), transaction() as db:
        token = password_resets.create(db, users.find_by_email(db, "maya@example.com"))
    path = f"/password-reset/{token}"
    return lambda: post(client, path, csrf_token=csrf(client, path), password="my own good password")


def account_change(app, client):
    sign_in(client, "maya@example.com")
    return lambda: change_password_in(client)


@pytest.mark.parametrize("way, status, hashes", [
    (lambda app, client: lambda: sign_in(client, "maya@example.com", "guess guess guess"), 401, 1),
    (lambda app, client: lambda: sign_in(client, "nobody@example.com"), 401, 1),
    (lambda app, client: lambda: sign_in(client, "maya@example.com"), 303, 1),
    (invitation_sign_in, 303, 1),
    (reset_sign_in, 303, 1),
    (account_change, 200, 2),
], ids=["wrong password", "unknown email", "right password", "invitation", "password reset", "password change"])
def test_no_transaction_nor_writers_lock_is_held_while_a_password_is_hashed(app, client, locks_while_hashing, way,
                                                                            status, hashes):
    person(app)
    send = way(app, client)
    locks_while_hashing.clear()  # the sign-in before a password change
    assert send().status_code == status
    assert locks_while_hashing == [(False, False)] * hashes


def test_a_sign_in_that_finds_every_turn_taken_is_told_at_once_to_retry(app, gate):
    person(app)
    turns = sign_in_flow.turns_allowed(app.config)
    assert 1 <= turns <= app.config["THREADS"] // 2
    answers = []

    def try_one(address):
        answers.append(sign_in(app.test_client(), "maya@example.com", "guess guess guess", address))

    waiting = [threading.Thread(target=try_one, args=(f"192.0.2.{n}",)) for n in range(turns)]
    for thread in waiting:
        thread.start()
    assert gate.wait_for(turns)
    late = threading.Thread(target=try_one, args=(THERE,))
    late.start()
    late.join(5)
    finished = not late.is_alive()
    gate.opened.set()
    for thread in [*waiting, late]:
        thread.join(10)
    assert finished, "the sign-in waited for a turn"
    refused = [answer for answer in answers if answer.status_code == 503]
    assert len(refused) == 1 and refused[0].headers["Retry-After"] == "1"
    assert "Many sign-ins are being checked just now" in text(refused[0])
    assert sorted(answer.status_code for answer in answers) == [401] * turns + [503]
    # Turned away before its check: no failure counted for it.
    assert db_rows(app, "SELECT count(*) FROM sign_in_failures WHERE address = ?", THERE) == [(0,)]


def signed_in_over_http(port, address="127.0.0.1"):
    """A keep-alive connection with a sign-in page's cookie and CSRF token: (connection, headers, token)."""
    connection = http.client.HTTPConnection(address, port, timeout=30)
    connection.request("GET", "/login", headers=HTML)
    response = connection.getresponse()
    page = response.read().decode()
    headers = {**HTML, "Content-Type": "application/x-www-form-urlencoded",
               "Cookie": response.getheader("Set-Cookie").partition(";")[0]}
    return connection, headers, re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


@pytest.mark.slow
@pytest.mark.alone  # a check-in answered within 1 s
def test_check_ins_go_on_while_sign_ins_wait_for_their_hashes(app, key_result, gate):
    person(app)  # after the key result, made while the API was open
    with app.app_context(), transaction() as db:
        credential, secret = keys.create(db, "script")
    statuses = []

    def guess(port):
        try:
            connection, headers, token = signed_in_over_http(port)
            connection.request("POST", "/login", headers=headers, body=urlencode(
                {"csrf_token": token, "email": "maya@example.com", "password": "guess guess guess"}))
            statuses.append(connection.getresponse().status)
            connection.close()
        except OSError as error:
            statuses.append(repr(error))

    turns = sign_in_flow.turns_allowed(app.config)
    with served_in_thread(app, threads=app.config["THREADS"]) as served:
        guesses = [threading.Thread(target=guess, args=(served.port,)) for _ in range(2 * app.config["THREADS"])]
        for thread in guesses:
            thread.start()
        assert gate.wait_for(turns)  # every turn taken, its thread held at the gate
        deadline = time.monotonic() + 10
        while len(statuses) < len(guesses) - turns and time.monotonic() < deadline:
            time.sleep(0.01)  # the other guesses answered
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=3)
        started = time.monotonic()
        try:
            connection.request("POST", f"/v1/keyresults/{key_result['id']}/checkins", body='{"value": "7"}',
                               headers={"Content-Type": "application/json",
                                        **signed({"credential": credential, "secret": secret})})
            status = connection.getresponse().status
        except OSError as error:
            status = repr(error)
        finally:
            connection.close()
        seconds = time.monotonic() - started
        gate.opened.set()
        for thread in guesses:
            thread.join(30)
    assert status == 200 and seconds < 1, (status, seconds)
    # The guesses that found no turn were told at once to retry; the others were checked once the gate opened.
    assert sorted(statuses) == [401] * turns + [503] * (len(guesses) - turns), statuses


# --- invitations ------------------------------------------------------------------------------------


def invite(app, user_id):
    with app.app_context(), transaction() as db:
        return invitations.create(db, users.get(db, user_id))


def test_an_invitation_sets_a_password_once_and_signs_in(app, client):
    person(app)
    new = person(app, "New Person", "new@example.com", "editor", password=None)
    token = invite(app, new["id"])
    page = client.get(f"/invitations/{token}")
    assert page.status_code == 200 and "Welcome, New Person" in text(page) and 'name="password"' in page.text
    common = post(client, f"/invitations/{token}", csrf_token=csrf(client, f"/invitations/{token}"),
                  password="q1w2e3r4t5y6")
    assert common.status_code == 400 and "most common" in text(common)
    done = post(client, f"/invitations/{token}", csrf_token=csrf(client, f"/invitations/{token}"),
                password="my own good password")
    assert done.status_code == 303 and is_signed_in(client)
    assert "Signed in as New Person" in text(client.get("/", headers=HTML))
    assert client.get(f"/invitations/{token}").status_code == 404  # once
    assert sign_in(app.test_client(), "new@example.com", "my own good password").status_code == 303


@pytest.mark.parametrize("link", ["invitations", "password-reset"])
def test_a_link_used_while_its_new_password_was_hashed_sets_nothing(app, client, monkeypatch, link):
    person(app)
    new = person(app, "New Person", "new@example.com", "editor", password=None)
    with app.app_context(), transaction() as db:
        made = invitations.create if link == "invitations" else password_resets.create
        token = made(db, users.get(db, new["id"]))
    path = f"/{link}/{token}"
    form_token = csrf(client, path)

    def used_meanwhile():  # by another request, while this one hashes outside its transaction
        with transaction() as db:
            users.set_password(db, users.get(db, new["id"]), "set elsewhere")

    watch_hashing(monkeypatch, used_meanwhile)
    answer = post(client, path, csrf_token=form_token, password="my own good password")
    assert answer.status_code == 404 and "not valid" in text(answer)
    assert db_rows(app, "SELECT password_hash FROM users WHERE id = ?", new["id"]) == [("set elsewhere",)]
    assert not is_signed_in(client)
    assert db_rows(app, "SELECT count(*) FROM sign_in_failures") == [(0,)]  # it was valid a moment before


def test_a_new_invitation_voids_the_old_one_and_only_a_digest_is_kept(app, client):
    person(app)
    new = person(app, "New Person", "new@example.com", "editor", password=None)
    old, current = invite(app, new["id"]), invite(app, new["id"])
    assert client.get(f"/invitations/{old}").status_code == 404
    assert client.get(f"/invitations/{current}").status_code == 200
    stored = db_rows(app, "SELECT * FROM invitations")
    assert len(stored) == 1 and not any(current in str(value) for value in stored[0])


def test_an_invitation_lasts_seven_days(app, client, clock):
    person(app)
    new = person(app, "New Person", "new@example.com", "editor", password=None)
    clock.now = "2026-03-01T09:00:00Z"
    token = invite(app, new["id"])
    clock.now = "2026-03-08T08:59:59Z"
    assert client.get(f"/invitations/{token}").status_code == 200
    clock.now = "2026-03-08T09:00:00Z"
    assert client.get(f"/invitations/{token}").status_code == 404


def test_a_deactivated_users_invitation_opens_nothing(app, client):
    person(app)
    new = person(app, "New Person", "new@example.com", "editor", password=None)
    token = invite(app, new["id"])
    with app.app_context(), transaction() as db:
        users.set_active(db, users.get(db, new["id"]), False)
    assert client.get(f"/invitations/{token}").status_code == 404


# --- roles in the pages -----------------------------------------------------------------------------


def test_the_people_page_is_for_admins_only(app, client):
    person(app)
    person(app, "Ed Itor", "ed@example.com", "editor")
    person(app, "Vi Ewer", "vi@example.com", "viewer")
    for email in ("ed@example.com", "vi@example.com"):
        other = app.test_client()
        sign_in(other, email)
        assert other.get("/people").status_code == 403
        assert "People" not in re.findall(r"<nav.*?</nav>", other.get("/", headers=HTML).text, re.S)[0]
        assert post(other, "/people", name="X", email="x@example.com", role="admin").status_code == 403
    sign_in(client, "maya@example.com")
    page = client.get("/people")
    assert page.status_code == 200
    assert all(word in text(page) for word in ("Ed Itor", "ed@example.com", "editor", "viewer", "active"))


def test_the_people_page_shows_teams_and_passwords(app, client):
    maya = person(app)
    nopass = person(app, "No Pass", "np@example.com", "editor", password=None)
    with app.app_context(), transaction() as db:
        team = teams.create(db, "Platform")
        team_members.add(db, team["id"], nopass["id"])
    sign_in(client, "maya@example.com")
    row = re.search(rf'<tr id="u-{nopass["id"]}">.*?</tr>', client.get("/people").text, re.S).group(0)
    assert "Platform" in row and ">none<" in row
    assert ">set<" in re.search(rf'<tr id="u-{maya["id"]}">.*?</tr>', client.get("/people").text, re.S).group(0)


def test_an_admin_adds_a_person_and_gets_their_invitation_link(app, client):
    person(app)
    sign_in(client, "maya@example.com")
    added = post(client, "/people", name="Vi Ewer", email="vi@example.com", role="viewer")
    assert added.status_code == 200
    link = re.search(r'id="invitation-url" class="link" value="([^"]+)"', added.text).group(1)
    assert re.fullmatch(r"http://localhost/invitations/[A-Za-z0-9_-]{43}", link)
    assert db_rows(app, "SELECT role, password_hash FROM users WHERE email = 'vi@example.com'") == [("viewer", None)]
    taken = post(client, "/people", name="Again", email="VI@example.com", role="viewer")
    assert taken.status_code == 400 and "Someone already has this email." in text(taken)


def test_roles_change_but_the_last_active_admin_stays(app, client):
    maya = person(app)
    ed = person(app, "Ed Itor", "ed@example.com", "editor")
    sign_in(client, "maya@example.com")
    refused = post(client, f"/people/{maya['id']}/role", role="editor")
    assert refused.status_code == 409 and "last active admin" in text(refused)
    assert post(client, f"/people/{maya['id']}/status", is_active="false").status_code == 409
    assert post(client, f"/people/{ed['id']}/role", role="admin").status_code == 303
    assert post(client, f"/people/{maya['id']}/role", role="viewer").status_code == 303
    assert db_rows(app, "SELECT email, role FROM users ORDER BY seq") == [("maya@example.com", "viewer"),
                                                                           ("ed@example.com", "admin")]


def test_a_viewer_sees_no_check_in_form_and_a_write_is_refused(app, client, key_result):
    person(app)
    person(app, "Vi Ewer", "vi@example.com", "viewer")
    sign_in(client, "vi@example.com")
    page = client.get(f"/keyresults/{key_result['id']}")
    assert page.status_code == 200 and 'name="value"' not in page.text and "Record a check-in" not in page.text
    refused = post(client, f"/keyresults/{key_result['id']}", value="200", confidence="0.5", comment="")
    assert refused.status_code == 403 and "viewer" in text(refused)
    assert db_rows(app, "SELECT count(*) FROM checkins") == [(1,)]


def test_a_viewer_changes_their_own_password_and_signs_out_everywhere(app):
    person(app)
    vi = person(app, "Vi Ewer", "vi@example.com", "viewer")
    here, elsewhere = app.test_client(), app.test_client()
    for client in (here, elsewhere):
        assert sign_in(client, "vi@example.com").status_code == 303
    changed = change_password_in(here)
    assert changed.status_code == 200 and "Your password is changed" in text(changed)
    assert not is_signed_in(elsewhere)
    assert sign_in(app.test_client(), "vi@example.com", "a brand new password").status_code == 303
    ended = post(here, "/account/sign-out-everywhere")
    assert ended.status_code == 303 and not is_signed_in(here)
    assert db_rows(app, "SELECT count(*) FROM web_sessions WHERE user_id = ? AND ended_at IS NULL",
                   vi["id"]) == [(0,)]


def test_a_read_only_keys_session_changes_no_account(app, client):
    ed = person(app, "Ed Itor", "ed@example.com", "editor")
    with app.app_context(), transaction() as db:
        credential, secret = keys.create(db, "wallboard", read_only=True, user_id=ed["id"])
    assert client.post("/login", data={"csrf_token": csrf(client), "credential": credential, "secret": secret,
                                       "next": "/"}).status_code == 303
    for path, fields in (("/account/password", {"current_password": PASSWORD, "password": "a brand new password"}),
                         ("/account/sign-out-everywhere", {}), ("/account/weekly-email", {"weekly_email": "off"})):
        refused = post(client, path, **fields)
        assert refused.status_code == 403 and "read-only API key" in text(refused), path
    assert sign_in(app.test_client(), "ed@example.com").status_code == 303  # the password is as it was


def test_a_check_in_from_the_page_is_signed_by_its_author(app, client, key_result):
    person(app)
    ed = person(app, "Ed Itor", "ed@example.com", "editor")
    sign_in(client, "ed@example.com")
    page = client.get(f"/keyresults/{key_result['id']}")
    assert 'name="value"' in page.text
    done = post(client, f"/keyresults/{key_result['id']}", value="200", confidence="0.5", comment="up")
    assert done.status_code == 303
    assert db_rows(app, "SELECT author_id FROM checkins ORDER BY seq DESC LIMIT 1") == [(ed["id"],)]
    history = client.get(f"/keyresults/{key_result['id']}").text
    assert re.search(r"<td[^>]*>up</td><td[^>]*>Ed Itor</td>", history)


def test_a_service_key_session_writes_but_manages_no_people(app, client, runner, key_result):
    from helpers import create_key
    key = create_key(runner, "wallboard")
    response = client.post("/login", data={"csrf_token": csrf(client), "credential": key["credential"],
                                           "secret": key["secret"], "next": "/"})
    assert response.status_code == 303
    assert 'Signed in as API key “wallboard”' in text(client.get("/", headers=HTML))
    assert client.get("/people").status_code == 403
    assert post(client, f"/keyresults/{key_result['id']}", value="150", confidence="", comment="").status_code == 303
    assert db_rows(app, "SELECT author_id FROM checkins ORDER BY seq DESC LIMIT 1") == [(None,)]


def test_a_team_page_lists_its_members(app, client):
    person(app)
    ed = person(app, "Ed Itor", "ed@example.com", "editor")
    with app.app_context(), transaction() as db:
        team = teams.create(db, "Platform")
        team_members.add(db, team["id"], ed["id"])
    sign_in(client, "maya@example.com")
    page = client.get(f"/teams/{team['id']}")
    assert page.status_code == 200 and "Platform" in text(page) and "Ed Itor" in text(page)
