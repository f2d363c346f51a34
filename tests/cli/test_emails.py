"""One email rule for the user commands: NFC, then the letters A to Z lowercased and nothing else (issue 32:
full Unicode case folding made juergen.strasse@ the same user as juergen.straße@). Password sign-in's side is
in tests/web/test_accounts.py, the identity provider's in tests/web/test_oidc.py, the upgrade's in
tests/test_migrations.py."""
import json
import sqlite3
from contextlib import closing

import pytest

from helpers import make_user, set_active, stored_users, write_csv
from okr.rules.email_addresses import email_domain, email_key


# Pairs that name the same user. None of them is the same under SQLite's NOCASE but the first.
SAME_EMAIL = {
    "ASCII case": ("Maya@Example.COM", "maya@example.com"),
    "NFC and NFD": ("\u00e9mile@x.org", "e\u0301mile@x.org"),
    "NFD and ASCII case": ("E\u0301mile@X.org", "\u00c9mile@x.org"),
    "Kelvin sign": ("\u212aate@x.org", "kate@x.org"),  # canonically K: NFC makes it K
}
# Pairs that name two users, though full Unicode case folding takes each as one.
OTHER_EMAIL = {
    "sharp s": ("juergen.straße@example.com", "juergen.strasse@example.com"),
    "accented capital": ("Émile@x.org", "émile@x.org"),
    "greek": ("ΣΊΣΥΦΟΣ@x.org", "σίσυφος@x.org"),
    "long s": ("ſam@x.org", "sam@x.org"),
}


def test_email_key_is_nfc_then_the_letters_a_to_z_lowercased():
    assert email_key("Maya@Example.COM") == "maya@example.com"
    assert email_key("E\u0301mile@X.ORG") == email_key("\u00c9mile@x.org") == "\u00c9mile@x.org"
    assert email_key("juergen.straße@EXAMPLE.com") == "juergen.straße@example.com"
    assert email_key("STRASSE@x.org") == "strasse@x.org"
    assert email_key("ΣΊΣΥΦΟΣ@x.org") == "ΣΊΣΥΦΟΣ@x.org" and email_key("ſam@x.org") == "ſam@x.org"
    assert email_key("\u212aate@x.org") == "kate@x.org"
    # W with a ring above has no composed capital but a composed small letter: the key is in NFC all the same.
    assert email_key("W\u030a@x.org") == email_key("\u1e98@x.org") == "\u1e98@x.org"
    assert email_domain("a@Example.COM.") == "example.com" and email_domain("a@STRAßE.de") == "straße.de"


@pytest.mark.parametrize("first, second", SAME_EMAIL.values(), ids=SAME_EMAIL.keys())
def test_users_add_refuses_an_email_that_is_an_existing_one_under_the_rule(app, runner, first, second):
    make_user(runner, "First", first)
    result = runner.invoke(args=["users", "add", "--name", "Second", "--email", second])
    assert result.exit_code != 0
    assert "already exists" in result.output
    assert [row[0] for row in stored_users(app)] == ["First"]


@pytest.mark.parametrize("first, second", OTHER_EMAIL.values(), ids=OTHER_EMAIL.keys())
def test_users_add_takes_an_email_that_only_full_case_folding_makes_an_existing_one(app, runner, first, second):
    make_user(runner, "First", first)
    make_user(runner, "Second", second)
    assert [row[:3] for row in stored_users(app)] == [("First", first, email_key(first)),
                                                      ("Second", second, email_key(second))]


def test_users_add_stores_the_key_and_the_email_in_nfc(app, runner):
    user = make_user(runner, "Émile", "E\u0301mile@X.org")
    assert user["email"] == "\u00c9mile@X.org"
    assert stored_users(app) == [("Émile", "\u00c9mile@X.org", "\u00c9mile@x.org", 1)]


def test_the_database_refuses_two_users_with_the_same_email_key(app):
    insert = "INSERT INTO users (id, name, email, email_key, created_at) VALUES (?, ?, ?, ?, '2026-01-01T00:00:00Z')"
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.execute(insert, ("u1", "A", "\u00e9mile@x.org", email_key("\u00e9mile@x.org")))
        with pytest.raises(sqlite3.IntegrityError):
            db.execute(insert, ("u2", "B", "e\u0301mile@x.org", email_key("e\u0301mile@x.org")))


@pytest.mark.parametrize("first, second", [SAME_EMAIL["ASCII case"], SAME_EMAIL["NFC and NFD"]],
                         ids=["ASCII case", "NFC and NFD"])
def test_users_import_refuses_a_file_that_holds_one_email_twice_under_the_rule(app, runner, tmp_path, first,
                                                                               second):
    result = runner.invoke(args=["users", "import", write_csv(tmp_path, f"A,{first}\nB,{second}\n")])
    assert result.exit_code != 0
    assert "row 2" in result.output and "appears twice" in result.output
    assert stored_users(app) == []


@pytest.mark.parametrize("first, second", SAME_EMAIL.values(), ids=SAME_EMAIL.keys())
def test_users_import_skips_an_email_that_is_an_existing_one_under_the_rule(app, runner, tmp_path, first, second):
    make_user(runner, "First", first)
    result = runner.invoke(args=["users", "import", write_csv(tmp_path, f"Second,{second}\nGrace,grace@x.org\n")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"imported": 1, "skipped_existing": 1}
    assert [row[0] for row in stored_users(app)] == ["First", "Grace"]


def test_users_import_takes_emails_that_only_full_case_folding_makes_one(app, runner, tmp_path):
    make_user(runner, "Jürgen", "juergen.straße@example.com")
    rows = "".join(f"{name},{second}\n" for name, (_, second) in zip("ABCD", OTHER_EMAIL.values()))
    rows += "".join(f"{name},{first}\n" for name, (first, _) in zip("EFG", list(OTHER_EMAIL.values())[1:]))
    result = runner.invoke(args=["users", "import", write_csv(tmp_path, rows)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"imported": 7, "skipped_existing": 0}


@pytest.mark.parametrize("first, second", SAME_EMAIL.values(), ids=SAME_EMAIL.keys())
def test_deactivate_and_activate_find_the_user_by_the_email_under_the_rule(app, client, runner, first, second):
    user = make_user(runner, "First", first)
    set_active(runner, second, False)
    assert client.get(f"/v1/users/{user['id']}").get_json()["is_active"] is False
    set_active(runner, second, True)
    assert client.get(f"/v1/users/{user['id']}").get_json()["is_active"] is True


@pytest.mark.parametrize("command", [["deactivate"], ["set-role", "admin"], ["invite", "--json"]])
@pytest.mark.parametrize("first, second", OTHER_EMAIL.values(), ids=OTHER_EMAIL.keys())
def test_commands_never_reach_a_user_by_an_email_that_only_full_case_folding_makes_theirs(
        app, runner, first, second, command):
    make_user(runner, "First", first)
    make_user(runner, "Admin", "admin@example.com")
    assert runner.invoke(args=["users", "set-role", "admin@example.com", "admin"]).exit_code == 0
    before = stored_users(app)
    result = runner.invoke(args=["users", command[0], second, *command[1:]])
    assert result.exit_code == 1, result.output
    assert f"no user with email {second}" in result.output
    assert "/invitations/" not in result.output
    assert stored_users(app) == before
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        assert db.execute("SELECT count(*) FROM invitations").fetchone()[0] == 0
