"""Invitation and password reset links die with what they were sent for (issue 32, finding 8): a change of the
person's email voids them (they went to the old address), so does a deactivation (a reactivation does not bring
them back), and so does a password set through either; a change of name alone keeps them. Every way in that
changes an email or deactivates: okr users, the People page, okr import --merge."""
import json
import re

import pytest

from okr.accounts import passwords
from okr.db import transaction
from okr.store import invitations, password_resets, users

pytestmark = pytest.mark.usefixtures("fast_hashing", "clean_env")

PASSWORD = "correct horse battery"
HTML = {"Accept": "text/html"}
HERE = "192.0.2.10"
# Each kind of link: where it opens, and how the store makes one.
LINKS = {"reset": ("/password-reset/", password_resets.create), "invitation": ("/invitations/", invitations.create)}


def person(app, name, email, role="editor"):
    """A user made through the store, with a password; its row as a dict."""
    with app.app_context(), transaction() as db:
        user = users.create(db, name, email, role)
        users.set_password(db, user, passwords.hash_password(PASSWORD))
        return dict(users.get(db, user["id"]))


def link_for(app, kind, user_id):
    """A new link of this kind for the user: its path."""
    path, create = LINKS[kind]
    with app.app_context(), transaction() as db:
        return path + create(db, users.get(db, user_id))


def opens(app, path):
    """Whether the link opens its page for someone who is not signed in (a fresh browser); 404 when it is void."""
    status = app.test_client().get(path, headers=HTML, environ_base={"REMOTE_ADDR": HERE}).status_code
    assert status in (200, 404), status
    return status == 200


def csrf(client, path):
    page = client.get(path, headers=HTML, environ_base={"REMOTE_ADDR": HERE})
    return re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True)).group(1)


def post(client, path, csrf_from="/", **fields):
    return client.post(path, data={"csrf_token": csrf(client, csrf_from), **fields},
                       environ_base={"REMOTE_ADDR": HERE})


def command(runner, *args):
    result = runner.invoke(args=[str(arg) for arg in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def bob(app):
    person(app, "Maya Admin", "maya@example.com", "admin")
    return person(app, "Bob Builder", "bob@example.com")


# --- the changes that void a person's links, each the way an interface makes it -----------------------


def email_changed_by_command(app, runner, bob, tmp_path):
    command(runner, "users", "update", "bob@example.com", "--email", "robert@example.com")


def deactivated_and_reactivated_by_command(app, runner, bob, tmp_path):
    command(runner, "users", "deactivate", "bob@example.com")
    command(runner, "users", "activate", "bob@example.com")


def deactivated_and_reactivated_on_the_people_page(app, runner, bob, tmp_path):
    admin = app.test_client()
    assert post(admin, "/login", csrf_from="/login", email="maya@example.com", password=PASSWORD,
                next="/").status_code == 303
    for active in ("false", "true"):
        changed = post(admin, f"/people/{bob['id']}/status", csrf_from="/people", is_active=active)
        assert changed.status_code == 303, changed.get_data(as_text=True)


def merged(runner, tmp_path, change):
    """okr import --merge of the database's own export, with change made to Bob's record."""
    path = tmp_path / f"export-{len(list(tmp_path.iterdir()))}.json"
    command(runner, "export", path)
    data = json.loads(path.read_text(encoding="utf-8"))
    [record] = [user for user in data["users"] if user["email"] == "bob@example.com"]
    change(record)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    command(runner, "import", "--merge", path)


def email_changed_by_an_import(app, runner, bob, tmp_path):
    merged(runner, tmp_path, lambda record: record.update(email="robert@example.com"))


def deactivated_and_reactivated_by_imports(app, runner, bob, tmp_path):
    merged(runner, tmp_path, lambda record: record.update(is_active=False))
    merged(runner, tmp_path, lambda record: record.update(is_active=True))


VOIDING = [email_changed_by_command, deactivated_and_reactivated_by_command,
           deactivated_and_reactivated_on_the_people_page, email_changed_by_an_import,
           deactivated_and_reactivated_by_imports]


@pytest.mark.parametrize("kind", LINKS)
@pytest.mark.parametrize("change", VOIDING, ids=[change.__name__ for change in VOIDING])
def test_a_change_of_email_or_a_deactivation_voids_the_persons_links(app, runner, bob, tmp_path, kind, change):
    path = link_for(app, kind, bob["id"])
    assert opens(app, path)
    change(app, runner, bob, tmp_path)
    assert not opens(app, path)
    # Nor does the void link set a password: the old one still signs in.
    browser = app.test_client()
    chosen = browser.post(path, data={"csrf_token": csrf(browser, "/login"), "password": "a brand new password"},
                          environ_base={"REMOTE_ADDR": HERE})
    assert chosen.status_code == 404
    with app.app_context(), transaction(write=False) as db:
        assert passwords.verify(users.get(db, bob["id"])["password_hash"], PASSWORD)
    # A new link works: nothing but the old ones was lost.
    assert opens(app, link_for(app, kind, bob["id"]))


def test_a_change_of_email_voids_only_that_persons_links(app, runner, bob):
    maya = users_row(app, "maya@example.com")
    mayas = [link_for(app, kind, maya["id"]) for kind in LINKS]
    command(runner, "users", "update", "bob@example.com", "--email", "robert@example.com")
    assert all(opens(app, path) for path in mayas)


def test_a_change_of_name_alone_keeps_the_links(app, runner, bob):
    links = [link_for(app, kind, bob["id"]) for kind in LINKS]
    command(runner, "users", "update", "bob@example.com", "--name", "Robert Builder")
    assert all(opens(app, path) for path in links)


@pytest.mark.parametrize("used", LINKS)
def test_a_password_chosen_through_one_link_voids_the_other(app, bob, used):
    links = {kind: link_for(app, kind, bob["id"]) for kind in LINKS}
    browser = app.test_client()
    chosen = post(browser, links[used], csrf_from=links[used], password="a brand new password")
    assert chosen.status_code == 303
    assert not any(opens(app, path) for path in links.values())


def users_row(app, email):
    with app.app_context(), transaction(write=False) as db:
        return dict(users.found(db, email))
