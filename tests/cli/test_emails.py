"""One email rule for the user commands: NFC, then full Unicode case folding."""
import json
import sqlite3
from contextlib import closing

import pytest

from helpers import make_user, set_active, stored_users, write_csv
from okr.emails import email_key


# Pairs that name the same user. None of them is the same under SQLite's NOCASE,
# and the last two are not the same under str.lower() either.
SAME_EMAIL = {
    "accented capital": ("Émile@x.org", "émile@X.ORG"),
    "greek": ("ΣΊΣΥΦΟΣ@x.org", "σίσυφος@x.org"),
    "sharp s": ("straße@x.org", "STRASSE@x.org"),
    "NFC and NFD": ("\u00e9mile@x.org", "e\u0301mile@x.org"),
}


def test_email_key_is_nfc_then_casefold():
    assert email_key("Émile@X.ORG") == "émile@x.org"
    assert email_key("E\u0301mile@x.org") == email_key("\u00c9mile@x.org") == "\u00e9mile@x.org"
    assert email_key("STRASSE@x.org") == email_key("straße@x.org") == "strasse@x.org"


@pytest.mark.parametrize("first, second", SAME_EMAIL.values(), ids=SAME_EMAIL.keys())
def test_users_add_refuses_an_email_that_folds_to_an_existing_one(app, runner, first, second):
    make_user(runner, "First", first)
    result = runner.invoke(args=["users", "add", "--name", "Second", "--email", second])
    assert result.exit_code != 0
    assert "already exists" in result.output
    assert [row[0] for row in stored_users(app)] == ["First"]


def test_users_add_stores_the_folded_key_and_the_email_in_nfc(app, runner):
    user = make_user(runner, "Émile", "E\u0301mile@X.org")
    assert user["email"] == "\u00c9mile@X.org"
    assert stored_users(app) == [("Émile", "\u00c9mile@X.org", "\u00e9mile@x.org", 1)]


def test_the_database_refuses_two_users_with_the_same_email_key(app):
    insert = "INSERT INTO users (id, name, email, email_key, created_at) VALUES (?, ?, ?, ?, '2026-01-01T00:00:00Z')"
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.execute(insert, ("u1", "A", "Émile@x.org", email_key("Émile@x.org")))
        with pytest.raises(sqlite3.IntegrityError):
            db.execute(insert, ("u2", "B", "émile@x.org", email_key("émile@x.org")))


@pytest.mark.parametrize("first, second", [SAME_EMAIL["sharp s"], SAME_EMAIL["NFC and NFD"]],
                         ids=["sharp s", "NFC and NFD"])
def test_users_import_refuses_a_file_that_holds_one_email_twice_under_folding(app, runner, tmp_path, first, second):
    result = runner.invoke(args=["users", "import", write_csv(tmp_path, f"A,{first}\nB,{second}\n")])
    assert result.exit_code != 0
    assert "row 2" in result.output and "appears twice" in result.output
    assert stored_users(app) == []


@pytest.mark.parametrize("first, second", SAME_EMAIL.values(), ids=SAME_EMAIL.keys())
def test_users_import_skips_an_email_that_folds_to_an_existing_one(app, runner, tmp_path, first, second):
    make_user(runner, "First", first)
    result = runner.invoke(args=["users", "import", write_csv(tmp_path, f"Second,{second}\nGrace,grace@x.org\n")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"imported": 1, "skipped_existing": 1}
    assert [row[0] for row in stored_users(app)] == ["First", "Grace"]


@pytest.mark.parametrize("first, second", SAME_EMAIL.values(), ids=SAME_EMAIL.keys())
def test_deactivate_and_activate_find_the_user_by_the_folded_email(app, client, runner, first, second):
    user = make_user(runner, "First", first)
    set_active(runner, second, False)
    assert client.get(f"/v1/users/{user['id']}").get_json()["is_active"] is False
    set_active(runner, second, True)
    assert client.get(f"/v1/users/{user['id']}").get_json()["is_active"] is True
