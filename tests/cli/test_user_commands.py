"""okr users list and update, what deactivate means, and import's messages about columns; roles, invitations
and passwords."""
import json
import re
import sqlite3
import subprocess
import sys
import unicodedata
from contextlib import closing
from datetime import datetime, timedelta, timezone

import pytest

import helpers
import okr.cli.users
from helpers import USER_FIELDS, make_user, stored_users, write_csv
from okr.accounts import passwords
from okr.store import invitations, sessions

# A password that passes okr.accounts.passwords' rule.
PASSWORD = "correct horse battery staple"


def invoke(runner, *args, **kwargs):
    return runner.invoke(args=list(args), **kwargs)


def user_row(app, email):
    """The stored row of the user with email (role and password_hash included)."""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.row_factory = sqlite3.Row
        return db.execute("SELECT * FROM users WHERE email = ?", (email,)).fetchone()


def listed(runner):
    result = invoke(runner, "users", "list", "--json")
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines()]


def set_password(runner, email, password=PASSWORD):
    result = invoke(runner, "users", "set-password", email, input=password + "\n")
    assert result.exit_code == 0, result.output
    return result


# --- users list ------------------------------------------------------------------------------


@pytest.fixture
def three_users(runner):
    users = [make_user(runner, "Ada Lovelace", "ada@example.com"), make_user(runner, "Grace Hopper", "grace@example.com"),
             make_user(runner, "Zoë Ñúñez", "zoe@example.com")]
    assert invoke(runner, "users", "deactivate", "grace@example.com").exit_code == 0
    users[1]["is_active"] = False
    return users


def test_users_list_json_is_one_user_per_line_in_the_api_shape_with_role_and_password(runner, client, three_users):
    assert invoke(runner, "users", "set-role", "zoe@example.com", "viewer").exit_code == 0
    served = client.get("/v1/users").get_json()["users"]  # before a password turns sign-in on
    set_password(runner, "ada@example.com")
    users = listed(runner)
    # Each line is the user as the API gives it, plus two keys.
    assert [{field: user[field] for field in USER_FIELDS} for user in users] == three_users == served
    assert all(set(user) == USER_FIELDS | {"role", "has_password"} for user in users)
    assert [(user["role"], user["has_password"]) for user in users] == [
        ("editor", True), ("editor", False), ("viewer", False)]


def test_users_list_json_never_shows_a_password_hash(app, runner):
    make_user(runner)
    set_password(runner, "ada@example.com")
    result = invoke(runner, "users", "list", "--json")
    assert user_row(app, "ada@example.com")["password_hash"] not in result.output
    assert "argon2" not in result.output and PASSWORD not in result.output


def test_users_list_is_a_table_in_creation_order(runner, three_users):
    assert invoke(runner, "users", "set-role", "ada@example.com", "admin").exit_code == 0
    set_password(runner, "zoe@example.com")
    result = invoke(runner, "users", "list")
    assert result.exit_code == 0, result.output
    header, *rows = result.output.splitlines()
    assert header.split() == ["EMAIL", "NAME", "ROLE", "ACTIVE", "PASSWORD", "CREATED", "ID"]
    assert len(rows) == 3
    # The columns line up: each starts where its heading does.
    for heading in ("NAME", "ROLE", "ACTIVE", "PASSWORD", "CREATED", "ID"):
        start = header.index(heading)
        assert all(row[start - 2:start] == "  " and row[start] != " " for row in rows), heading

    def cell(row, heading):
        start = header.index(heading)
        return row[start:].split()[0]

    for row, user in zip(rows, three_users):
        assert row.startswith(user["email"]) and user["name"] in row and user["id"] in row
    assert [cell(row, "ROLE") for row in rows] == ["admin", "editor", "editor"]
    assert [cell(row, "ACTIVE") for row in rows] == ["yes", "no", "yes"]
    assert [cell(row, "PASSWORD") for row in rows] == ["no", "no", "yes"]


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


def test_users_update_refuses_an_email_another_user_has_under_the_email_rule(app, runner):
    make_user(runner, "Ada", "ada@example.com")
    make_user(runner, "Sisyphus", "Σίσυφος@X.org")
    before = stored_users(app)
    result = invoke(runner, "users", "update", "ada@example.com", "--email", "Σι\u0301συφος@x.ORG")
    assert result.exit_code == 1
    assert "a user with email Σίσυφος@x.ORG already exists" in result.output
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
    assert "cannot sign in" in text and "sessions end now" in text and "API keys are refused" in text
    assert "The last active admin cannot be deactivated" in text


def test_deactivating_the_last_active_admin_is_refused_and_leaves_them_active(app, runner):
    make_user(runner, "Ada", "ada@example.com")
    assert invoke(runner, "users", "add", "--name", "Root", "--email", "root@example.com", "--role", "admin").exit_code == 0
    result = invoke(runner, "users", "deactivate", "root@example.com")
    assert result.exit_code == 1
    assert result.output.splitlines() == ["Error: root@example.com is the last active admin; make another admin first"]
    assert user_row(app, "root@example.com")["is_active"] == 1
    # With another active admin, the first may go.
    assert invoke(runner, "users", "set-role", "ada@example.com", "admin").exit_code == 0
    assert invoke(runner, "users", "deactivate", "root@example.com").exit_code == 0
    assert user_row(app, "root@example.com")["is_active"] == 0


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


# --- users add --role and users set-role -------------------------------------------------------


def test_users_add_takes_a_role_and_defaults_to_editor(app, runner):
    for email, role in (("ada@example.com", ["--role", "admin"]), ("bob@example.com", []),
                        ("cy@example.com", ["--role", "viewer"])):
        result = invoke(runner, "users", "add", "--name", "N", "--email", email, *role)
        assert result.exit_code == 0, result.output
        assert set(json.loads(result.output)) == USER_FIELDS  # the API's shape: the role is not in it
    assert [user_row(app, email)["role"] for email in ("ada@example.com", "bob@example.com", "cy@example.com")] == [
        "admin", "editor", "viewer"]


def test_users_add_refuses_another_role(app, runner):
    result = invoke(runner, "users", "add", "--name", "N", "--email", "ada@example.com", "--role", "owner")
    assert result.exit_code == 2
    assert "'owner' is not one of 'admin', 'editor', 'viewer'" in result.output
    assert stored_users(app) == []


def test_set_role_changes_the_role_and_prints_the_user_with_it(app, runner, client):
    user = make_user(runner)
    result = invoke(runner, "users", "set-role", "ADA@example.com", "viewer")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {**user, "role": "viewer"}
    assert user_row(app, "ada@example.com")["role"] == "viewer"
    assert client.get(f"/v1/users/{user['id']}").get_json() == user  # the API's shape is unchanged


def test_set_role_refuses_to_demote_the_last_active_admin(app, runner):
    make_user(runner, "Ada", "ada@example.com")
    assert invoke(runner, "users", "set-role", "ada@example.com", "admin").exit_code == 0
    result = invoke(runner, "users", "set-role", "ada@example.com", "editor")
    assert result.exit_code == 1
    assert result.output.splitlines() == ["Error: ada@example.com is the last active admin; make another admin first"]
    assert user_row(app, "ada@example.com")["role"] == "admin"


def test_set_role_refuses_an_unknown_email_and_another_role(app, runner):
    make_user(runner)
    result = invoke(runner, "users", "set-role", "nobody@example.com", "viewer")
    assert result.exit_code == 1
    assert result.output.splitlines() == ["Error: no user with email nobody@example.com"]
    result = invoke(runner, "users", "set-role", "ada@example.com", "owner")
    assert result.exit_code == 2 and "'owner' is not one of 'admin', 'editor', 'viewer'" in result.output
    assert user_row(app, "ada@example.com")["role"] == "editor"


# --- users invite ------------------------------------------------------------------------------


def invitation_of(app, token):
    """The user row an invitation with this token opens, or None."""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.row_factory = sqlite3.Row
        return invitations.invited_user(db, token)


def invitation_rows(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT user_id, token_hash, expires_at FROM invitations").fetchall()


LINK = re.compile(r"(.+)/invitations/([A-Za-z0-9_-]{43})")


def test_invite_prints_for_whom_then_a_link_that_opens_the_invitation(app, runner):
    user = make_user(runner)
    result = invoke(runner, "users", "invite", "ada@example.com")
    assert result.exit_code == 0, result.output
    about, link = result.output.splitlines()
    assert "Ada Lovelace <ada@example.com>" in about and "7 days" in about and "once" in about
    base, token = LINK.fullmatch(link).groups()
    assert base == "http://127.0.0.1:8080"  # the server's --host and --port, by default
    assert invitation_of(app, token)["id"] == user["id"]
    [(user_id, token_hash, expires_at)] = invitation_rows(app)
    assert token not in token_hash and token_hash == sessions.token_hash(token)  # kept as a digest only
    expires = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
    assert abs(expires - datetime.now(timezone.utc) - timedelta(days=7)) < timedelta(minutes=1)


def test_invite_json_is_the_url_alone(app, runner):
    make_user(runner)
    result = invoke(runner, "users", "invite", "ada@example.com", "--json")
    assert result.exit_code == 0, result.output
    [line] = result.output.splitlines()
    url = json.loads(line)["url"]
    assert set(json.loads(line)) == {"url"}
    assert invitation_of(app, LINK.fullmatch(url).group(2))["email"] == "ada@example.com"


def test_a_new_invitation_voids_the_earlier_one(app, runner):
    make_user(runner)
    first = invoke(runner, "users", "invite", "ada@example.com").output.splitlines()[-1]
    second = invoke(runner, "users", "invite", "ada@example.com").output.splitlines()[-1]
    assert invitation_of(app, LINK.fullmatch(first).group(2)) is None
    assert invitation_of(app, LINK.fullmatch(second).group(2))["email"] == "ada@example.com"


@pytest.mark.parametrize("args, env, config, base", [
    (["--base-url", "https://okr.example.com"], {}, {}, "https://okr.example.com"),
    (["--base-url", "https://okr.example.com/"], {}, {}, "https://okr.example.com"),
    (["--base-url", "http://example.com:8443/okr/"], {}, {}, "http://example.com:8443/okr"),
    ([], {"OKR_BASE_URL": "https://from-env.example/"}, {}, "https://from-env.example"),
    (["--base-url", "https://flag.example"], {"OKR_BASE_URL": "https://from-env.example"}, {}, "https://flag.example"),
    ([], {}, {"HOST": "10.0.0.5", "PORT": 9000}, "http://10.0.0.5:9000"),
    ([], {}, {"HOST": "::1", "PORT": "8081"}, "http://[::1]:8081"),
], ids=["flag", "trailing slash", "path and port", "environment", "flag over environment", "host and port",
        "ipv6"])
def test_invite_links_start_with_the_base_url(app, runner, args, env, config, base):
    make_user(runner)
    app.config.update(config)
    result = invoke(runner, "users", "invite", "ada@example.com", *args, env=env)
    assert result.exit_code == 0, result.output
    assert LINK.fullmatch(result.output.splitlines()[-1]).group(1) == base


@pytest.mark.parametrize("url, problem", [
    ("ftp://okr.example.com", "must start with http:// or https://"),
    ("okr.example.com", "must start with http:// or https://"),
    ("https://", "must name a host, as in https://okr.example.com"),
    ("https:///okr", "must name a host, as in https://okr.example.com"),
    ("https://okr.example.com/?next=1", "must have no query (?) nor fragment (#)"),
    ("https://okr.example.com/#top", "must have no query (?) nor fragment (#)"),
    ("https://okr.example.com?", "must have no query (?) nor fragment (#)"),
    ("https://ada:secret@okr.example.com", "must not hold a user name or password"),
    ("https://okr.example.com:99999", "has a port that is not a number from 0 to 65535"),
    ("https://okr.example.com:http", "has a port that is not a number from 0 to 65535"),
    ("https://okr example.com", "must not hold spaces or control characters"),
])
def test_invite_refuses_a_base_url_it_cannot_make_a_link_of(app, runner, url, problem):
    make_user(runner)
    result = invoke(runner, "users", "invite", "ada@example.com", "--base-url", url)
    assert result.exit_code == 1
    assert result.output.splitlines() == [f"Error: --base-url {url} {problem}"]
    assert invitation_rows(app) == []


def test_invite_wants_a_base_url_when_the_server_listens_on_every_address(app, runner):
    make_user(runner)
    app.config["HOST"] = "0.0.0.0"
    result = invoke(runner, "users", "invite", "ada@example.com")
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert "every address (0.0.0.0)" in line and "pass --base-url" in line
    assert invitation_rows(app) == []


def test_invite_refuses_a_deactivated_user_and_an_unknown_email(app, runner):
    make_user(runner)
    assert invoke(runner, "users", "deactivate", "ada@example.com").exit_code == 0
    result = invoke(runner, "users", "invite", "ada@example.com")
    assert result.exit_code == 1
    assert result.output.splitlines() == ["Error: ada@example.com is deactivated: reactivate them first "
                                          "(okr users activate ada@example.com)"]
    result = invoke(runner, "users", "invite", "nobody@example.com")
    assert result.exit_code == 1
    assert result.output.splitlines() == ["Error: no user with email nobody@example.com"]
    assert invitation_rows(app) == []


# --- users set-password ------------------------------------------------------------------------


@pytest.mark.parametrize("given", [PASSWORD + "\n", PASSWORD, PASSWORD + "\nsecond line\n"],
                         ids=["newline", "no newline", "more lines"])
def test_set_password_reads_the_first_line_of_standard_input(app, runner, given):
    make_user(runner)
    result = invoke(runner, "users", "set-password", "ada@example.com", input=given)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["password set for ada@example.com; their dashboard sessions have ended"]
    stored = user_row(app, "ada@example.com")["password_hash"]
    assert stored.startswith("$argon2id$")
    assert passwords.verify(stored, PASSWORD)
    assert not passwords.verify(stored, PASSWORD + "\n")


@pytest.mark.slow
def test_set_password_reads_a_pipe_in_a_process_of_its_own_and_drops_a_crlf(tmp_path):
    # The test runner's standard input turns \r\n into \n; a real pipe does not.
    assert helpers.run_okr("init-db", cwd=tmp_path).returncode == 0
    assert helpers.run_okr("users", "add", "--name", "Ada", "--email", "ada@example.com", cwd=tmp_path).returncode == 0
    result = subprocess.run([sys.executable, str(helpers.APP_PY), "users", "set-password", "ada@example.com"],
                            input=PASSWORD + "\r\n", cwd=tmp_path, env=helpers.ENV_WITHOUT_OKR, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "password set for ada@example.com; their dashboard sessions have ended\n"
    assert PASSWORD not in result.stdout + result.stderr
    with closing(sqlite3.connect(tmp_path / "okr.db")) as db:
        [[stored]] = db.execute("SELECT password_hash FROM users").fetchall()
    assert passwords.verify(stored, PASSWORD)


def test_set_password_at_a_terminal_asks_twice_without_showing_it(app, runner, monkeypatch):
    make_user(runner)
    monkeypatch.setattr(okr.cli.users, "stdin_is_terminal", lambda: True)
    # The two differ the first time: it asks again.
    result = invoke(runner, "users", "set-password", "ada@example.com",
                    input=f"{PASSWORD}\nsomething else entirely\n{PASSWORD}\n{PASSWORD}\n")
    assert result.exit_code == 0, result.output
    assert "New password" in result.output and "Repeat it" in result.output
    assert PASSWORD not in result.output
    assert passwords.verify(user_row(app, "ada@example.com")["password_hash"], PASSWORD)


@pytest.mark.parametrize("password, message", [
    ("short one", "choose a password of at least 12 characters (a few words make a good one)"),
    ("", "choose a password of at least 12 characters (a few words make a good one)"),
    ("QWERTY123456", "this password is one of the most common ones, which are guessed first: choose another"),
])
def test_set_password_refuses_a_weak_password_in_one_line(app, runner, password, message):
    make_user(runner)
    result = invoke(runner, "users", "set-password", "ada@example.com", input=password + "\n")
    assert result.exit_code == 1
    assert result.output.splitlines() == [f"Error: password not set: {message}"]
    assert user_row(app, "ada@example.com")["password_hash"] is None


def test_set_password_of_an_unknown_email_asks_for_nothing(app, runner, monkeypatch):
    make_user(runner)
    monkeypatch.setattr(okr.cli.users, "stdin_is_terminal", lambda: True)
    result = invoke(runner, "users", "set-password", "nobody@example.com", input=f"{PASSWORD}\n{PASSWORD}\n")
    assert result.exit_code == 1
    assert result.output.splitlines() == ["Error: no user with email nobody@example.com"]


def test_set_password_ends_the_users_sessions_and_voids_their_invitation(app, runner):
    make_user(runner)
    make_user(runner, "Bob", "bob@example.com")
    link = invoke(runner, "users", "invite", "ada@example.com").output.splitlines()[-1]
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.row_factory = sqlite3.Row
        ada, bob = (db.execute("SELECT id FROM users WHERE email = ?", (email,)).fetchone()["id"]
                    for email in ("ada@example.com", "bob@example.com"))
        tokens = [sessions.open_session(db, timedelta(hours=12), user_id) for user_id in (ada, bob)]
    set_password(runner, "ada@example.com")
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        assert [sessions.live(db, token) is None for token in tokens] == [True, False]  # Bob's goes on
    assert invitation_of(app, LINK.fullmatch(link).group(2)) is None
