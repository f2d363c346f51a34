"""The pages that email: "Forgot your password?" and its one-time reset link, the People page's invitation
email, the weekly-email switch; and, without email set up, pages that say so (issue 24)."""
import re
import sqlite3
import statistics
import time

import pytest

from okr.accounts import passwords
from okr.db import transaction
from okr.store import users
from okr.settings import default

from mail_helpers import BASE_URL, mail_sent, person

pytestmark = pytest.mark.usefixtures("fast_hashing")

PASSWORD = "correct horse battery"
HTML = {"Accept": "text/html"}
HERE = "192.0.2.10"


def with_password(app, name, email, role="editor"):
    row = person(app, name, email, role)
    with app.app_context(), transaction() as db:
        users.set_password(db, users.get(db, row["id"]), passwords.hash_password(PASSWORD))
    return row


def csrf(client, path="/login"):
    page = client.get(path, headers=HTML, environ_base={"REMOTE_ADDR": HERE})
    return re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True)).group(1)


def post(client, path, csrf_from="/login", **fields):
    """The form's answer, closed as a server closes it once sent (a reset link is emailed then)."""
    response = client.post(path, data={"csrf_token": csrf(client, csrf_from), **fields},
                           environ_base={"REMOTE_ADDR": HERE})
    response.close()
    return response


def text(response):
    return " ".join(re.sub(r"<[^>]+>", " ", response.get_data(as_text=True)).split())


def sign_in(client, email, password=PASSWORD):
    return post(client, "/login", email=email, password=password, next="/")


def ask_reset(client, email):
    return post(client, "/password-reset", email=email)


def reset_link(smtp_server, count=1):
    message = smtp_server.wait_for(count)[count - 1]
    return re.search(rf"{re.escape(BASE_URL)}(/password-reset/\S+)", message.get_content()).group(1)


@pytest.mark.slow
def test_the_sign_in_page_offers_a_reset(app, client):
    with_password(app, "Ada", "ada@example.com")
    page = client.get("/login", headers=HTML)
    assert 'href="/password-reset"' in page.get_data(as_text=True) and "Forgot your password?" in text(page)


@pytest.mark.slow
def test_a_reset_link_lets_a_person_choose_a_new_password_once(app, client, smtp_server):
    with_password(app, "Ada", "ada@example.com")
    asked = ask_reset(client, "ADA@example.com")
    assert asked.status_code == 200 and "a link to choose a new password is on its way" in text(asked)
    path = reset_link(smtp_server)
    [message] = smtp_server.messages
    assert message["To"] == "Ada <ada@example.com>" and "within the hour" in message.get_content()
    assert "Choose a new password" in text(client.get(path, headers=HTML))
    weak = post(client, path, csrf_from=path, password="short")
    assert weak.status_code == 400 and "12" in text(weak)
    chosen = post(client, path, csrf_from=path, password="a brand new password")
    assert chosen.status_code == 303 and client.get("/", headers=HTML).status_code == 200  # signed in
    assert client.get(path, headers=HTML).status_code == 404  # once
    client.post("/logout", data={"csrf_token": csrf(client, "/")})
    assert sign_in(client, "ada@example.com", "a brand new password").status_code == 303
    assert sign_in(client, "ada@example.com").status_code == 401


@pytest.mark.slow
def test_a_reset_link_expires_after_an_hour(app, client, smtp_server, clock):
    with_password(app, "Ada", "ada@example.com")
    clock.now = "2026-06-01T10:00:00Z"
    ask_reset(client, "ada@example.com")
    path = reset_link(smtp_server)
    clock.now = "2026-06-01T10:59:59Z"
    assert client.get(path, headers=HTML).status_code == 200
    clock.now = "2026-06-01T11:00:00Z"
    expired = client.get(path, headers=HTML)
    assert expired.status_code == 404 and "past its hour" in text(expired)


@pytest.mark.slow
def test_an_unknown_email_gets_the_same_answer_and_no_email(app, client, smtp_server):
    with_password(app, "Ada", "ada@example.com")
    known, unknown = ask_reset(client, "ada@example.com"), ask_reset(client, "nobody@example.com")
    assert unknown.status_code == known.status_code == 200
    assert text(unknown).replace("nobody@example.com", "X") == text(known).replace("ada@example.com", "X")
    smtp_server.wait_for(1)
    assert not smtp_server.to("nobody@example.com")


@pytest.mark.slow
@pytest.mark.alone  # compares medians of durations within 20 %
def test_a_known_email_and_an_unknown_one_take_the_same_time(app, client, smtp_server):
    with_password(app, "Ada", "ada@example.com")
    token = csrf(client)
    times = {"ada@example.com": [], "nobody@example.com": []}
    for n in range(100):
        pair = list(times) if n % 2 else list(times)[::-1]  # each first in turn
        for email in pair:
            # Each from an address of its own, which the throttle never holds.
            started = time.perf_counter()
            answer = client.post("/password-reset", data={"csrf_token": token, "email": email},
                                 environ_base={"REMOTE_ADDR": f"10.{n // 250}.{n % 250}.{len(times[email])}"})
            seconds = time.perf_counter() - started
            answer.close()  # as a server closes it once sent
            assert answer.status_code == 200
            mail_sent()
            if n >= 10:  # warmed up
                times[email].append(seconds)
    known, unknown = (statistics.median(each) for each in times.values())
    assert max(known, unknown) / min(known, unknown) <= 1.2, (known, unknown)
    assert len(smtp_server.wait_for(100)) == 100 and not smtp_server.to("nobody@example.com")


@pytest.mark.slow
def test_reset_requests_are_throttled_like_sign_ins(app, client, smtp_server):
    with_password(app, "Ada", "ada@example.com")
    for _ in range(default("SIGN_IN_FAILURES_PER_ACCOUNT")):
        assert ask_reset(client, "ada@example.com").status_code == 200
    refused = ask_reset(client, "ada@example.com")
    assert refused.status_code == 429 and "Retry-After" in refused.headers
    assert ask_reset(client, "someone@example.com").status_code == 200  # another account from here


@pytest.mark.slow
def test_a_wrong_reset_token_sent_with_a_password_counts_as_a_failure(app, client):
    with_password(app, "Ada", "ada@example.com")
    for n in range(default("SIGN_IN_FAILURES_PER_ACCOUNT")):
        assert post(client, f"/password-reset/not-a-token-{n}", password="a brand new password").status_code == 404
    assert client.get("/password-reset/not-a-token", headers=HTML,
                      environ_base={"REMOTE_ADDR": HERE}).status_code == 429


@pytest.mark.slow
def test_opening_a_wrong_reset_link_counts_nothing(app, client):
    # What another site's page can make a visitor's browser open, as often as it likes (<img src=...>).
    with_password(app, "Ada", "ada@example.com")
    for n in range(default("SIGN_IN_FAILURES_PER_ADDRESS") + 1):
        assert client.get(f"/password-reset/not-a-token-{n}", headers=HTML,
                          environ_base={"REMOTE_ADDR": HERE}).status_code == 404
    with sqlite3.connect(app.config["DATABASE"]) as db:
        assert db.execute("SELECT count(*) FROM sign_in_failures").fetchone() == (0,)
    assert sign_in(client, "ada@example.com").status_code == 303


@pytest.mark.slow
def test_the_people_page_emails_the_invitation(app, client, smtp_server):
    with_password(app, "Maya", "maya@example.com", "admin")
    sign_in(client, "maya@example.com")
    added = post(client, "/people", csrf_from="/people", name="Bob Builder", email="bob@example.com",
                 role="editor")
    assert added.status_code == 200 and "Emailed to bob@example.com" in text(added)
    [message] = smtp_server.messages
    path = re.search(rf"{re.escape(BASE_URL)}(/invitations/\S+)", message.get_content()).group(1)
    client.post("/logout", data={"csrf_token": csrf(client, "/")})
    assert "Welcome, Bob Builder" in text(client.get(path, headers=HTML))


@pytest.mark.slow
def test_the_people_page_says_when_the_invitation_was_not_emailed(app, client, smtp_server):
    with_password(app, "Maya", "maya@example.com", "admin")
    sign_in(client, "maya@example.com")
    smtp_server.recorder.refuse = "550 No"
    added = post(client, "/people", csrf_from="/people", name="Bob", email="bob@example.com", role="editor")
    assert "The email was not sent" in text(added) and "send the link yourself" in text(added)


@pytest.mark.slow
@pytest.mark.parametrize("role", ["editor", "viewer"])
def test_a_person_turns_weekly_emails_off_and_on(app, client, role):
    ada = with_password(app, "Ada", "ada@example.com", role)
    sign_in(client, "ada@example.com")
    page = client.get("/account", headers=HTML)
    assert "They are on ." in text(page) and "Turn weekly emails off" in text(page)
    assert "email is not set up" not in text(page).lower()
    off = post(client, "/account/weekly-email", csrf_from="/account", weekly_email="off")
    assert off.status_code == 303
    with sqlite3.connect(app.config["DATABASE"]) as db:
        assert db.execute("SELECT weekly_email FROM users WHERE id = ?", (ada["id"],)).fetchone() == (0,)
    assert "They are off ." in text(client.get("/account", headers=HTML))
    post(client, "/account/weekly-email", csrf_from="/account", weekly_email="on")
    with sqlite3.connect(app.config["DATABASE"]) as db:
        assert db.execute("SELECT weekly_email FROM users WHERE id = ?", (ada["id"],)).fetchone() == (1,)


@pytest.mark.slow
def test_the_switch_needs_the_csrf_token(app, client):
    with_password(app, "Ada", "ada@example.com")
    sign_in(client, "ada@example.com")
    assert client.post("/account/weekly-email", data={"weekly_email": "off"}).status_code == 400


@pytest.mark.slow
@pytest.mark.parametrize("mail_config", [{}])
def test_without_email_the_pages_say_it_is_not_set_up(app, client, mail_config):
    with_password(app, "Ada", "ada@example.com")
    login = text(client.get("/login", headers=HTML))
    assert "Forgotten passwords are reset by an admin: email is not set up." in login
    assert "Forgot your password?" not in login
    reset = client.get("/password-reset", headers=HTML)
    assert reset.status_code == 200 and "email is not set up" in text(reset) and "<form" not in \
        reset.get_data(as_text=True).split("<main", 1)[-1]
    assert ask_reset(client, "ada@example.com").status_code == 200
    sign_in(client, "ada@example.com")
    assert "Email is not set up on this server" in text(client.get("/account", headers=HTML))


def test_the_access_log_never_holds_a_reset_token():
    from okr.server.request_log import without_secrets

    assert without_secrets("/password-reset/s3cr3tT0ken?next=/") == "/password-reset/[token]?next=/"
    assert without_secrets("/invitations/abc") == "/invitations/[token]"
