"""okr users list and update, what deactivate means, and import's messages about columns."""
import json
import sqlite3
import unicodedata
from contextlib import closing

import pytest

from helpers import USER_FIELDS, make_user, stored_users, write_csv


def invoke(runner, *args):
    return runner.invoke(args=list(args))


# --- users list ------------------------------------------------------------------------------


@pytest.fixture
def three_users(runner):
    users = [make_user(runner, "Ada Lovelace", "ada@example.com"), make_user(runner, "Grace Hopper", "grace@example.com"),
             make_user(runner, "Zoë Ñúñez", "zoe@example.com")]
    assert invoke(runner, "users", "deactivate", "grace@example.com").exit_code == 0
    users[1]["is_active"] = False
    return users


def test_users_list_json_is_one_user_per_line_in_the_api_shape(runner, client, three_users):
    result = invoke(runner, "users", "list", "--json")
    assert result.exit_code == 0, result.output
    listed = [json.loads(line) for line in result.output.splitlines()]
    assert listed == three_users
    assert all(set(user) == USER_FIELDS for user in listed)
    assert listed == client.get("/v1/users").get_json()["users"]


def test_users_list_is_a_table_in_creation_order(runner, three_users):
    result = invoke(runner, "users", "list")
    assert result.exit_code == 0, result.output
    header, *rows = result.output.splitlines()
    assert header.split() == ["EMAIL", "NAME", "ACTIVE", "CREATED", "ID"]
    assert len(rows) == 3
    for row, user in zip(rows, three_users):
        assert row.startswith(user["email"]) and user["name"] in row and user["id"] in row
        assert ("no" if user["email"] == "grace@example.com" else "yes") in row.split()
    # The columns line up: each starts where its heading does.
    for heading in ("NAME", "ACTIVE", "CREATED", "ID"):
        start = header.index(heading)
        assert all(row[start - 2:start] == "  " and row[start] != " " for row in rows), heading


def test_users_list_lines_up_wide_and_combining_characters(runner):
    make_user(runner, "李小龙", "li@example.com")
    make_user(runner, "Zoe\u0301", "zoe@example.com")  # e and a combining acute: one column
    make_user(runner, "Ada", "ada@example.com")
    header, *rows = invoke(runner, "users", "list").output.splitlines()

    def column_of(line, text):
        before = line[:line.index(text)]
        return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) == "W" else 1
                   for c in before)

    assert {column_of(row, "yes") for row in rows} == {column_of(header, "ACTIVE")}


# --- users update ----------------------------------------------------------------------------


def test_users_update_changes_the_name_and_prints_the_user(app, runner, client):
    user = make_user(runner)
    result = invoke(runner, "users", "update", "ada@example.com", "--name", "Ada King")
    assert result.exit_code == 0, result.output
    updated = json.loads(result.output)
    assert updated == {**user, "name": "Ada King"}
    assert client.get(f"/v1/users/{user['id']}").get_json() == updated


def test_users_update_changes_the_email_and_its_key(app, runner):
    user = make_user(runner)
    result = invoke(runner, "users", "update", "ADA@example.com", "--email", "Ada.King@Example.com")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {**user, "email": "Ada.King@Example.com"}
    assert stored_users(app) == [("Ada Lovelace", "Ada.King@Example.com", "ada.king@example.com", 1)]
    assert invoke(runner, "users", "deactivate", "ada.king@example.com").exit_code == 0


def test_users_update_both_at_once_keeps_the_email_in_nfc(app, runner):
    make_user(runner)
    result = invoke(runner, "users", "update", "ada@example.com", "--name", "Émile", "--email", "e\u0301mile@x.org")
    assert result.exit_code == 0, result.output
    assert stored_users(app) == [("Émile", "\u00e9mile@x.org", "\u00e9mile@x.org", 1)]


def test_users_update_may_change_the_case_of_the_users_own_email(app, runner):
    make_user(runner, email="straße@x.org")
    result = invoke(runner, "users", "update", "straße@x.org", "--email", "STRASSE@x.org")
    assert result.exit_code == 0, result.output
    assert stored_users(app)[0][1:3] == ("STRASSE@x.org", "strasse@x.org")


@pytest.mark.parametrize("args, message", [
    (["--email", "not-an-email"], "email: "),
    (["--name", "   "], "name: "),
    (["--name", "x" * 501], "name: "),
    ([], "nothing to change: pass --name, --email or both"),
])
def test_users_update_validates_like_add(app, runner, args, message):
    make_user(runner)
    before = stored_users(app)
    result = invoke(runner, "users", "update", "ada@example.com", *args)
    assert result.exit_code == 1
    assert message in result.output
    assert stored_users(app) == before


def test_users_update_refuses_an_email_another_user_has_under_folding(app, runner):
    make_user(runner, "Ada", "ada@example.com")
    make_user(runner, "Sisyphus", "ΣΊΣΥΦΟΣ@x.org")
    before = stored_users(app)
    result = invoke(runner, "users", "update", "ada@example.com", "--email", "σίσυφος@x.org")
    assert result.exit_code == 1
    assert "a user with email σίσυφος@x.org already exists" in result.output
    assert stored_users(app) == before


def test_users_update_of_an_unknown_email_fails(app, runner):
    make_user(runner)
    result = invoke(runner, "users", "update", "nobody@example.com", "--name", "X")
    assert result.exit_code == 1
    assert "no user with email nobody@example.com" in result.output


def test_users_update_reaches_a_user_left_without_an_email_key_by_an_upgrade(app, runner):
    # An upgrade from schema version 0 keeps both users of a clash, the later one without a key:
    # update, given its exact email, is how an operator gives it another.
    make_user(runner, "First", "strasse@x.org")
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.execute("INSERT INTO users (id, name, email, email_key, is_active, created_at) "
                   "VALUES ('00000000-0000-4000-8000-000000000000', 'Second', 'straße@x.org', NULL, 1, "
                   "'2026-01-01T00:00:00Z')")
    result = invoke(runner, "users", "update", "straße@x.org", "--email", "second@x.org")
    assert result.exit_code == 0, result.output
    assert stored_users(app) == [("First", "strasse@x.org", "strasse@x.org", 1),
                                 ("Second", "second@x.org", "second@x.org", 1)]


# --- users deactivate: what inactive means ---------------------------------------------------


def test_deactivate_help_says_what_inactive_means(runner):
    text = " ".join(invoke(runner, "users", "deactivate", "--help").output.split())
    assert "stays listed" in text and "is_active false" in text and "assignee" in text
    assert "sign in" not in text


# --- users import: the columns named --------------------------------------------------------


@pytest.mark.parametrize("text, message", [
    ("name,email\nAda,ada@example.com\nGrace,grace@example.com,extra\n",
     "row 3: expected 2 columns, name,email (in that order); got 3"),
    ("Ada,ada@example.com\nGrace\n", "row 2: expected 2 columns, name,email (in that order); got 1"),
])
def test_import_names_the_expected_columns(app, runner, tmp_path, text, message):
    result = invoke(runner, "users", "import", write_csv(tmp_path, text))
    assert result.exit_code == 1
    assert message in result.output
    assert stored_users(app) == []


@pytest.mark.parametrize("header", ["email,name", "Name,E-mail", "name,email,team", "full name,email address"])
def test_import_refuses_a_header_that_is_not_name_email(app, runner, tmp_path, header):
    result = invoke(runner, "users", "import", write_csv(tmp_path, f"{header}\nada@example.com,Ada\n"))
    assert result.exit_code == 1
    assert f"row 1: expected the header name,email (in that order), or no header; got {header}" in result.output
    assert "row 2" not in result.output  # the rows are not read against a header that is wrong
    assert stored_users(app) == []


def test_import_still_takes_a_first_row_of_data(app, runner, tmp_path):
    result = invoke(runner, "users", "import", write_csv(tmp_path, "Name Person,name@example.com\n"))
    assert result.exit_code == 0, result.output
    assert [row[:2] for row in stored_users(app)] == [("Name Person", "name@example.com")]


def test_import_problems_are_one_line_and_capped(app, runner, tmp_path):
    text = "name,email\n" + "".join(f"User {i},not-an-email-{i}\n" for i in range(25))
    result = invoke(runner, "users", "import", write_csv(tmp_path, text))
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert "row 2: email: " in line and "row 11: " in line and "row 12: " not in line
    assert line.endswith("(and 15 more rows with problems)")
