"""A link to the identity provider cleared (issue 32, finding 2's "ask an admin"): `okr users unlink EMAIL` and
the People page's Unlink button forget who a person is at the provider, so that their next sign-in there links
the account it comes with; the activity feed records it."""
import json
import re

import pytest

from okr.db import transaction
from okr.store import users
from people_page import HTML, csrf, people_row, sign_in

pytestmark = pytest.mark.usefixtures("fast_hashing", "clean_env")

ISSUER = "https://sso.example.com"


def link(app, user, subject="sub-old"):
    with app.app_context(), transaction() as db:
        assert users.set_oidc_subject(db, users.get(db, user["id"]), ISSUER, subject) is not None


def stored_link(app, user):
    with app.app_context(), transaction(write=False) as db:
        row = db.execute("SELECT oidc_issuer, oidc_subject FROM users WHERE id = ?", (user["id"],)).fetchone()
        return tuple(row)


def unlinked_events(app):
    with app.app_context(), transaction(write=False) as db:
        return [(row["resource_id"], json.loads(row["actor"]), json.loads(row["data"]))
                for row in db.execute("SELECT * FROM events WHERE type = 'user.unlinked'")]


def test_unlink_forgets_the_subject_and_records_it(app, runner, maya):
    link(app, maya)
    result = runner.invoke(args=["users", "unlink", "MAYA@example.com"])
    assert result.exit_code == 0, result.output
    assert "maya@example.com is no longer linked" in result.output
    assert stored_link(app, maya) == (None, None)
    [(resource_id, actor, data)] = unlinked_events(app)
    assert resource_id == maya["id"] and actor["name"] == "okr users unlink" and data["email"] == "maya@example.com"
    assert "sub-old" not in json.dumps(data)
    # A new subject may link now, as a first sign-in with a verified email would.
    with app.app_context(), transaction() as db:
        assert users.set_oidc_subject(db, users.get(db, maya["id"]), ISSUER, "sub-new") is not None


def test_unlink_of_someone_without_a_link_changes_nothing(app, runner, maya):
    result = runner.invoke(args=["users", "unlink", "maya@example.com"])
    assert result.exit_code == 0 and "linked to no sign-in" in result.output
    assert unlinked_events(app) == []


def test_unlink_of_an_unknown_email_is_one_line(runner):
    result = runner.invoke(args=["users", "unlink", "nobody@example.com"])
    assert result.exit_code == 1 and result.output.strip().count("\n") == 0
    assert "nobody@example.com" in result.output


def test_the_people_page_shows_a_linked_person_and_its_button_unlinks_them(app, maya, ed):
    admin = app.test_client()
    assert sign_in(admin, "maya@example.com").status_code == 303
    assert "Unlink" not in people_row(admin, ed)
    link(app, ed)
    row = people_row(admin, ed)
    assert "linked to the identity provider" in row and f'action="/people/{ed["id"]}/unlink"' in row
    done = admin.post(f"/people/{ed['id']}/unlink", data={"csrf_token": csrf(admin, "/people")})
    assert done.status_code == 303 and done.headers["Location"] == f"/people#u-{ed['id']}"
    assert "Unlink" not in people_row(admin, ed)
    assert stored_link(app, ed) == (None, None)
    assert "unlinked Ed Itor from their sign-in with the identity provider" in re.sub(
        r"<[^>]+>", "", admin.get("/activity", headers=HTML).text)


def test_only_an_admin_unlinks_and_only_with_the_forms_token(app, maya, ed):
    link(app, maya)
    editor = app.test_client()
    assert sign_in(editor, "ed@example.com").status_code == 303
    assert editor.post(f"/people/{maya['id']}/unlink", data={"csrf_token": csrf(editor, "/")}).status_code == 403
    admin = app.test_client()
    assert sign_in(admin, "maya@example.com").status_code == 303
    assert admin.post(f"/people/{maya['id']}/unlink", data={"csrf_token": "forged"}).status_code == 400
    assert stored_link(app, maya) == (ISSUER, "sub-old")
