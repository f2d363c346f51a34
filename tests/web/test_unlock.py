"""Held sign-ins cleared (issue 32, finding 18): `okr users unlock EMAIL` and the People page's Unlock button
forget a person's failed sign-ins from every address, so that the right password works again at once."""
import re
import time

import pytest

from helpers import create_key
from okr.accounts import throttle
from okr.db import transaction
from okr.settings import default
from people_page import HERE, THERE, csrf, people_row, sign_in

pytestmark = pytest.mark.usefixtures("fast_hashing", "clean_env")


def hold(app, email, address=HERE):
    """Fails enough sign-ins for email from address that its right password there waits (429)."""
    client = app.test_client()
    for _ in range(default("SIGN_IN_FAILURES_PER_ACCOUNT")):
        assert sign_in(client, email, "guess guess guess", address).status_code == 401
    assert sign_in(client, email, address=address).status_code == 429


def test_unlock_forgets_her_failures_from_every_address(app, runner, maya, ed):
    hold(app, "maya@example.com", HERE)
    hold(app, "maya@example.com", THERE)
    hold(app, "ed@example.com", HERE)
    result = runner.invoke(args=["users", "unlock", "MAYA@example.com"])
    assert result.exit_code == 0, result.output
    assert result.output == "maya@example.com may sign in again: 20 failed sign-ins of theirs forgotten\n"
    for address in (HERE, THERE):
        assert sign_in(app.test_client(), "maya@example.com", address=address).status_code == 303
    assert sign_in(app.test_client(), "ed@example.com").status_code == 429  # only hers


def test_unlock_forgets_her_api_keys_and_reset_requests_too(app, runner, maya):
    key = create_key(runner, read_only=False)
    mine = runner.invoke(args=["keys", "create", "--name", "mine", "--user", "maya@example.com", "--json"])
    assert mine.exit_code == 0, mine.output
    client = app.test_client()
    for credential in (key["credential"], re.search(r'"credential": "([^"]+)"', mine.output).group(1)):
        client.post("/login", data={"csrf_token": csrf(client), "credential": credential, "secret": "wrong"},
                    environ_base={"REMOTE_ADDR": HERE})
    with app.app_context(), transaction() as db:
        throttle.record(db, HERE, throttle.RESET_REQUEST + "maya@example.com", int(time.time()))
    result = runner.invoke(args=["users", "unlock", "maya@example.com"])
    # Her key's failure and her reset request; the service key's is nobody's.
    assert result.output == "maya@example.com may sign in again: 2 failed sign-ins of theirs forgotten\n"


def test_unlock_of_an_unknown_email_is_one_line(runner):
    result = runner.invoke(args=["users", "unlock", "nobody@example.com"])
    assert result.exit_code == 1 and result.output == "Error: no user with email nobody@example.com\n"


def test_the_people_page_shows_a_held_person_and_its_button_unlocks_them(app, maya, ed):
    admin = app.test_client()
    assert sign_in(admin, "maya@example.com", address=THERE).status_code == 303
    assert "Unlock" not in people_row(admin, ed)
    hold(app, "ed@example.com")
    row = people_row(admin, ed)
    assert "10 failed sign-ins" in row and f'action="/people/{ed["id"]}/unlock"' in row
    done = admin.post(f"/people/{ed['id']}/unlock", data={"csrf_token": csrf(admin, "/people", THERE)},
                      environ_base={"REMOTE_ADDR": THERE})
    assert done.status_code == 303 and done.headers["Location"] == f"/people#u-{ed['id']}"
    assert "Unlock" not in people_row(admin, ed)
    assert sign_in(app.test_client(), "ed@example.com").status_code == 303


def test_only_an_admin_unlocks_and_only_with_the_forms_token(app, maya, ed):
    hold(app, "maya@example.com")
    editor = app.test_client()
    assert sign_in(editor, "ed@example.com", address=THERE).status_code == 303
    refused = editor.post(f"/people/{maya['id']}/unlock", data={"csrf_token": csrf(editor, "/", THERE)},
                          environ_base={"REMOTE_ADDR": THERE})
    assert refused.status_code == 403
    admin = app.test_client()
    assert sign_in(admin, "maya@example.com", address=THERE).status_code == 303
    forged = admin.post(f"/people/{maya['id']}/unlock", data={"csrf_token": "forged"},
                        environ_base={"REMOTE_ADDR": THERE})
    assert forged.status_code == 400
    assert sign_in(app.test_client(), "maya@example.com").status_code == 429  # still held
