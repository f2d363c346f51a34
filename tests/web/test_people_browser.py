"""People in a real browser (Debian's Chromium through Playwright, as tests/web/test_browser.py drives it)
against the real server on loopback: an invitation to a password and a check-in with its author, signing out
for good, a viewer who may only look, sign-in throttling per client address, and a CSV of 40 people uploaded,
previewed and applied on a phone in dark mode.

The server, the browser and the seeded cycle are test_browser.py's fixtures. Users, their passwords and
invitations are made through the project's own code on the server's database file, as the CLI would.

Throttling counts failures per client address, and on loopback every connection comes from 127.0.0.1,
whichever 127.x address it is made to (the kernel's route for 127.0.0.0/8 says src 127.0.0.1). So the
second address is a relay: a thread that takes the browser's connections on 127.0.0.1 and makes its own to
the server from 127.0.0.2, which the server sees as the client's address.
"""
import re
import socket
import threading
from contextlib import closing, contextmanager
from urllib.parse import urlsplit

import pytest

from okr import create_app
from okr.accounts.passwords import hash_password
from okr.db import transaction
from okr.store import invitations, users

pytestmark = [pytest.mark.slow,  # every test here starts a server, a process or a browser
              pytest.mark.xdist_group("people-browser")]  # in one xdist worker, which starts the module's Chromium and server once

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling module
    import test_browser
except ImportError:
    from . import test_browser

# test_browser.py's fixtures, registered in this module too (pytest finds them among its names): a Chromium
# and a seeded server of this module's own, and the time limit on each test.
browser, service, time_limit = test_browser.browser, test_browser.service, test_browser.time_limit
new_page, history_rows, text_of = test_browser.new_page, test_browser.history_rows, test_browser.text_of
PHONE, OVERFLOW, check_accessibility = test_browser.PHONE, test_browser.OVERFLOW, test_browser.check_accessibility
SECOND_ADDRESS = "127.0.0.2"


# --- people, made as the CLI makes them -----------------------------------------------------------------


def in_database(service, work):
    """work(db) in a write transaction on the server's database file; what it returns."""
    app = create_app({"DATABASE": service.database})
    with app.app_context(), transaction() as db:
        return work(db)


def invited(service, name, email, role="editor"):
    """A new user without a password and an invitation for them: (the user's id, the invitation's token)."""
    def work(db):
        user = users.create(db, name, email, role)
        return user["id"], invitations.create(db, user)
    return in_database(service, work)


def person(service, name, email, role, password):
    """A new user with this role and password: their id."""
    password_hash = hash_password(password)

    def work(db):
        user = users.create(db, name, email, role)
        users.set_password(db, user, password_hash)
        return user["id"]
    return in_database(service, work)


def sign_in(page, base, email, password):
    """Through /login's email and password form; the navigation's response."""
    page.goto(base + "/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    with page.expect_navigation() as navigation:
        page.get_by_role("button", name="Sign in", exact=True).click()
    return navigation.value


def signed_in_as(page):
    """The header's "Signed in as ..." line, or None when nobody is."""
    who = page.locator("header .who p")
    return text_of(who) if who.count() else None


# --- a: an invitation, a password, a check-in with its author --------------------------------------------------


def test_an_invited_person_chooses_a_password_and_checks_in_as_themselves(browser, service):
    key_result = service.ids["growth_kr"]
    user_id, token = invited(service, "Lin Invited", "lin@example.com")
    context, page = new_page(browser)
    try:
        response = page.goto(service.url(f"/invitations/{token}"))
        assert response.status == 200
        assert page.get_by_role("heading", level=1).inner_text().strip() == "Welcome, Lin Invited"
        page.get_by_label("New password").fill("correct horse battery staple")
        with page.expect_navigation() as navigation:
            page.get_by_role("button", name="Set password and sign in").click()
        assert navigation.value.status == 200 and urlsplit(page.url).path == "/", page.url
        assert signed_in_as(page) == "Signed in as Lin Invited editor", signed_in_as(page)

        page.goto(service.url(f"/keyresults/{key_result}"))
        rows = history_rows(page).count()
        form = page.locator("form.checkin")
        form.get_by_label("Value").fill("1300")
        form.get_by_label("Comment").fill("Referral programme, by Lin")
        with page.expect_navigation() as navigation:
            form.get_by_role("button", name="Record check-in").click()
        assert navigation.value.status == 200 and urlsplit(page.url).path == f"/keyresults/{key_result}"
        assert history_rows(page).count() == rows + 1
        newest = history_rows(page).first.locator("td")
        assert text_of(newest.nth(3)) == "Referral programme, by Lin"
        assert text_of(newest.nth(4)) == "Lin Invited"  # the Author column
        assert text_of(newest.last) == "Correct · Delete"  # hers, made just now: she may change it

        # The API, signed with the service key, names the same author by id.
        recorded = [c for c in service.checkins(key_result) if c["comment"] == "Referral programme, by Lin"]
        assert len(recorded) == 1 and recorded[0]["author_id"] == user_id, recorded

        # The link was for one use: it now opens nothing.
        assert page.goto(service.url(f"/invitations/{token}")).status == 404
    finally:
        context.close()


# --- b: signing out ends the session for good ------------------------------------------------------------------


def session_cookie(context):
    cookies = [c for c in context.cookies() if c["name"] == "okr_session"]
    assert len(cookies) == 1, context.cookies()
    return cookies[0]


def opens_with_cookie(browser, service, cookie, path):
    """Whether a fresh browser given only this cookie opens path (rather than being sent to /login)."""
    context, page = new_page(browser)
    try:
        context.add_cookies([cookie])
        response = page.goto(service.url(path))
        at = urlsplit(page.url).path
        assert response.status == 200 and at in (path, "/login"), (response.status, page.url)
        return at == path
    finally:
        context.close()


def test_signing_out_ends_the_session_so_a_copied_cookie_opens_nothing(browser, service):
    person(service, "Sam Signout", "sam@example.com", "editor", "a long and quiet afternoon")
    key_result = f"/keyresults/{service.ids['positive']}"
    context, page = new_page(browser)
    try:
        assert sign_in(page, service.base, "sam@example.com", "a long and quiet afternoon").status == 200
        assert signed_in_as(page) == "Signed in as Sam Signout editor"
        copied = session_cookie(context)
        assert opens_with_cookie(browser, service, copied, key_result), "the copied cookie should work while signed in"

        with page.expect_navigation() as navigation:
            page.get_by_role("button", name="Sign out").click()
        assert navigation.value.status == 200 and urlsplit(page.url).path == "/login", page.url
        assert signed_in_as(page) is None
    finally:
        context.close()
    for path in ("/", key_result, "/account"):
        assert not opens_with_cookie(browser, service, copied, path), f"the signed-out cookie opened {path}"


# --- c: a viewer only looks ---------------------------------------------------------------------------------------


def test_a_viewer_sees_no_write_control_and_a_forged_write_is_refused(browser, service):
    person(service, "Vic Viewer", "vic@example.com", "viewer", "looking but never touching")
    key_result = service.ids["negative"]
    recorded = len(service.checkins(key_result))
    context, page = new_page(browser)
    try:
        assert sign_in(page, service.base, "vic@example.com", "looking but never touching").status == 200
        assert signed_in_as(page) == "Signed in as Vic Viewer viewer"
        assert page.get_by_role("link", name="People").count() == 0

        assert page.goto(service.url(f"/keyresults/{key_result}")).status == 200
        assert history_rows(page).count() == recorded
        assert page.locator("form.checkin").count() == 0
        assert page.get_by_role("button", name="Record check-in").count() == 0
        assert page.get_by_role("link", name="People").count() == 0
        assert page.goto(service.url("/people")).status == 403

        # A write the page never offered, with this session's own CSRF token: refused for the role.
        page.goto(service.url(f"/keyresults/{key_result}"))
        token = page.locator('form.logout input[name="csrf_token"]').input_value()
        assert token
        forged = page.request.post(service.url(f"/keyresults/{key_result}"),
                                   form={"csrf_token": token, "value": "3", "comment": "forged"},
                                   max_redirects=0)
        assert forged.status == 403, (forged.status, forged.text()[:300])
        assert "You are a viewer" in forged.text()
        invite = page.request.post(service.url("/people"), max_redirects=0,
                                   form={"csrf_token": token, "name": "Mallory", "email": "m@example.com",
                                         "role": "admin"})
        assert invite.status == 403, invite.status
        assert len(service.checkins(key_result)) == recorded
        assert all(c["comment"] != "forged" for c in service.checkins(key_result))
    finally:
        context.close()


# --- d: throttling is per address ---------------------------------------------------------------------------------


@contextmanager
def relay_from(source, target_port):
    """A port on 127.0.0.1 whose connections reach 127.0.0.1:target_port from the address source."""
    try:
        probe = socket.socket()
        probe.bind((source, 0))
        probe.close()
    except OSError as error:
        pytest.skip(f"cannot use {source} as a second loopback address here: {error}")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stopping, sockets = threading.Event(), []

    def pump(reader, writer):
        """One direction, until its end; then the other side is told (a half close), as a direct connection."""
        with closing(reader), closing(writer):
            try:
                while chunk := reader.recv(65536):
                    writer.sendall(chunk)
                writer.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def accept():
        while not stopping.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", target_port), timeout=10, source_address=(source, 0))
            client.settimeout(None)
            upstream.settimeout(None)
            # Each direction has descriptors of its own (dup), which it closes when it ends.
            sockets.extend((client, upstream))
            for reader, writer in ((client, upstream.dup()), (upstream, client.dup())):
                threading.Thread(target=pump, args=(reader, writer), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stopping.set()
        thread.join(timeout=5)
        listener.close()
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def test_too_many_failures_from_one_address_throttle_it_but_not_another(browser, service):
    email, password = "tess@example.com", "patience is a long word"
    person(service, "Tess Throttle", email, "editor", password)
    first, first_page = new_page(browser)  # straight to the server: from 127.0.0.1
    second, second_page = new_page(browser)  # through the relay: from 127.0.0.2
    try:
        with relay_from(SECOND_ADDRESS, service.http.port) as relay_port:
            elsewhere = f"http://127.0.0.1:{relay_port}"
            for attempt in range(1, 11):
                response = sign_in(first_page, service.base, email, f"wrong guess number {attempt}")
                assert response.status == 401, (attempt, response.status)
                assert "Unknown email, or wrong password." in first_page.content()

            # The 11th, with the right password: refused until the window has passed, and the page says when.
            response = sign_in(first_page, service.base, email, password)
            assert response.status == 429, response.status
            wait = int(response.headers["retry-after"])
            assert 0 < wait <= 15 * 60, wait
            said = re.search(r"Try again in (\d+) minutes?\.", text_of(first_page.locator("main")))
            assert said, text_of(first_page.locator("main"))
            assert int(said.group(1)) == -(-wait // 60), (said.group(0), wait)
            assert signed_in_as(first_page) is None

            # Meanwhile, from the other address, the same account signs in with the right password.
            response = sign_in(second_page, elsewhere, email, password)
            assert response.status == 200 and urlsplit(second_page.url).path == "/", second_page.url
            assert signed_in_as(second_page) == "Signed in as Tess Throttle editor"

            # The first address is still held back for that account, but not for another one.
            assert sign_in(first_page, service.base, email, password).status == 429
            person(service, "Otto Other", "otto@example.com", "editor", "another account entirely")
            assert sign_in(first_page, service.base, "otto@example.com", "another account entirely").status == 200
            assert signed_in_as(first_page) == "Signed in as Otto Other editor"
    finally:
        first.close()
        second.close()


# --- e: a CSV of people, previewed and applied ---------------------------------------------------------------------


def test_an_admin_uploads_a_csv_of_forty_people_sees_the_preview_and_applies_it(browser, service):
    person(service, "Ida Admin", "ida@example.com", "admin", "the whole staff at once")
    rows = [f"Csv Person {n:02},csv{n:02}@example.com,editor,Platform; Growth" for n in range(1, 41)]
    rows[4] = "Csv Bad Role,csvbad@example.com,boss,Platform"
    rows[19] = "Csv Bad Team,csvteam@example.com,viewer,Nowhere"
    data = ("name,email,role,teams\n" + "\n".join(rows) + "\n").encode("utf-8")
    # On a phone, in dark mode; the policy bypassed only for axe-core's injected script (as test_accessibility).
    context, page = new_page(browser, **PHONE, color_scheme="dark", bypass_csp=True)
    try:
        assert sign_in(page, service.base, "ida@example.com", "the whole staff at once").status == 200
        page.goto(service.url("/people"))
        page.get_by_label("CSV file", exact=True).set_input_files(
            files=[{"name": "people.csv", "mimeType": "text/csv", "buffer": data}])
        with page.expect_navigation() as navigation:
            page.get_by_role("button", name="Preview").click()
        assert navigation.value.status == 200 and urlsplit(page.url).path == "/people/import"
        assert text_of(page.locator("#added-heading")) == "Added: 38"
        assert page.locator("#added tbody tr").count() == 38
        assert [text_of(row) for row in page.locator("#skipped tbody tr").all()] == [
            "6 Csv Bad Role csvbad@example.com boss its role is “boss”, not admin, editor or viewer",
            "21 Csv Bad Team csvteam@example.com viewer no team is named “Nowhere”"]
        assert page.evaluate(OVERFLOW, PHONE["viewport"]["width"]) == [], "the preview scrolls sideways at 375 px"
        problems = check_accessibility(page, "a CSV's preview, phone, dark")

        with page.expect_navigation() as navigation:
            page.get_by_role("button", name="Apply").click()
        assert navigation.value.status == 200
        assert "38 added, 0 updated, 0 unchanged, 2 skipped." in text_of(page.locator("section.notice"))
        listed = " ".join(text_of(row) for row in page.locator('tr[id^="u-"]').all())  # the list of everyone
        assert all(f"csv{n:02}@example.com" in listed for n in range(1, 41) if n not in (5, 20))
        assert "csvbad@example.com" not in listed and "csvteam@example.com" not in listed
        assert page.evaluate(OVERFLOW, PHONE["viewport"]["width"]) == [], "the People page scrolls sideways at 375 px"
    finally:
        context.close()
    assert not problems, "accessibility problems:\n" + "\n".join(problems)
