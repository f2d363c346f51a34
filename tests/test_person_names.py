"""A person's name holds no control character (issue 32, finding 10): a line break in one made the People page's
"Add and invite" answer 500, its email's To header refusing it, and such a person never got an email. Every
way a person is named refuses one, naming the field (the People page, okr users add, update and import, okr
import); and a name stored before the rule still gets its emails, on one line."""
import json
import re
import sqlite3
from contextlib import closing

import pytest
from marshmallow import ValidationError

from helpers import make_user, stored_users, write_csv
from okr import create_app
from okr.outbound import smtp
from okr.accounts import passwords
from okr.db import init_db, transaction
from okr.rules.body_schemas import user_schema
from okr.store import users

pytestmark = pytest.mark.usefixtures("fast_hashing", "clean_env")

PASSWORD = "correct horse battery"
HTML = {"Accept": "text/html"}
HERE = "192.0.2.10"
MESSAGE = "Must not contain control characters, such as a line break or a tab."
# C0 controls (a line feed, a carriage return, a tab, an escape), DEL, a C1 control (NEL) and the Unicode line
# and paragraph separators.
REFUSED = {"line feed": "Bob\nBcc: x@example.net", "carriage return": "Bob\rEvil", "crlf": "Bob\r\nEvil",
           "tab": "Bob\tBuilder", "escape": "Bob\x1b[31mBuilder", "delete": "Bob\x7f", "next line": "Bob\x85Evil",
           "line separator": "Bob\u2028Evil", "paragraph separator": "Bob\u2029Evil"}
# What names are made of elsewhere stays welcome: accents, other scripts, a zero-width non-joiner (Persian),
# an emoji joined by a zero-width joiner, inner spaces.
TAKEN = ["Zoë Ñúñez-O'Brien", "李小龙", "میرزا\u200cعلی", "Ada 👩\u200d💻 Lovelace", "Jean  Paul"]


@pytest.fixture
def app(tmp_path):
    """The app, with email set up; what it sends is recorded (smtp.send replaced), to no server."""
    app = create_app({"TESTING": True, "DATABASE": tmp_path / "okr.db", "SMTP_URL": "smtp://127.0.0.1:25",
                      "MAIL_FROM": "OKR <okr@example.com>", "BASE_URL": "http://okr.test"})
    with app.app_context():
        init_db()
    return app


@pytest.fixture
def sent(monkeypatch):
    """The emails sent, as the bytes smtplib would send: each is written out, as sending does."""
    outbox = []
    monkeypatch.setattr(smtp, "send", lambda settings, message: outbox.append(message.as_bytes()))
    return outbox


def refusal(result):
    """The one line a command refused with, once its exit code says it did."""
    assert result.exit_code == 1, result.output
    [line] = result.output.strip().splitlines()
    assert "Traceback" not in result.output
    return line


def person(app, name, email, role="editor", password=PASSWORD):
    with app.app_context(), transaction() as db:
        user = users.create(db, name, email, role)
        if password:
            users.set_password(db, user, passwords.hash_password(password))
        return dict(users.get(db, user["id"]))


def stored_before_the_rule(app, name, email):
    """A user whose name an earlier release took (written past the rule, as it stood); its id."""
    row = person(app, "Placeholder", email, password=None)
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.execute("UPDATE users SET name = ? WHERE id = ?", (name, row["id"]))
    return row["id"]


def csrf(client, path):
    page = client.get(path, headers=HTML, environ_base={"REMOTE_ADDR": HERE})
    return re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True)).group(1)


def post(client, path, csrf_from="/", **fields):
    return client.post(path, data={"csrf_token": csrf(client, csrf_from), **fields},
                       environ_base={"REMOTE_ADDR": HERE})


@pytest.fixture
def admin(app, client):
    """The client, signed in as an admin."""
    person(app, "Maya Admin", "maya@example.com", "admin")
    assert post(client, "/login", csrf_from="/login", email="maya@example.com", password=PASSWORD,
                next="/").status_code == 303
    return client


# --- the rule ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", REFUSED.values(), ids=REFUSED)
def test_a_name_with_a_control_character_is_refused_with_the_field_named(name):
    with pytest.raises(ValidationError) as refused:
        user_schema.load({"name": name, "email": "bob@example.com"})
    assert refused.value.messages == {"name": [MESSAGE]}


@pytest.mark.parametrize("name", TAKEN)
def test_names_of_every_script_are_taken(name):
    assert user_schema.load({"name": name, "email": "bob@example.com"})["name"] == name


# --- every way a person is named -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Bob\nEvil", "Bob\u2028Evil"], ids=["line feed", "line separator"])
def test_add_and_invite_says_so_beside_the_name_and_adds_no_one(app, admin, sent, name):
    before = stored_users(app)
    added = post(admin, "/people", csrf_from="/people", name=name, email="bob@example.com", role="editor")
    assert added.status_code == 400
    page = added.get_data(as_text=True)
    assert f'<span class="error" id="name-error">{MESSAGE}</span>' in page
    assert re.search(r'<input id="name" name="name" value="[^"]*" required aria-invalid="true"', page)
    assert 'value="bob@example.com"' in page  # the form keeps what was typed
    assert stored_users(app) == before and sent == []


def test_users_add_refuses_it_in_one_line(app, runner):
    line = refusal(runner.invoke(args=["users", "add", "--name", "Bob\nEvil", "--email", "bob@example.com"]))
    assert line.endswith(f"name: {MESSAGE}")
    assert stored_users(app) == []


def test_users_update_refuses_it_and_changes_nothing(app, runner):
    make_user(runner, "Bob Builder", "bob@example.com")
    before = stored_users(app)
    line = refusal(runner.invoke(args=["users", "update", "bob@example.com", "--name", "Bob\tBuilder",
                                       "--email", "robert@example.com"]))
    assert line.endswith(f"name: {MESSAGE}")
    assert stored_users(app) == before


def test_users_import_names_the_row_and_imports_nothing(app, runner, tmp_path):
    path = write_csv(tmp_path, 'name,email\nAda Lovelace,ada@example.com\n"Bob\nEvil",bob@example.com\n')
    line = refusal(runner.invoke(args=["users", "import", path]))
    assert line.endswith(f"nothing imported: row 3: name: {MESSAGE}")
    assert stored_users(app) == []


def test_okr_import_names_the_record_and_field_and_imports_nothing(app, runner, tmp_path):
    make_user(runner, "Ada Lovelace", "ada@example.com")
    make_user(runner, "Bob Builder", "bob@example.com")
    path = tmp_path / "all.json"
    assert runner.invoke(args=["export", str(path)]).exit_code == 0
    data = json.loads(path.read_text(encoding="utf-8"))
    data["users"][1]["name"] = "Bob\u2028Evil"
    path.write_text(json.dumps(data), encoding="utf-8")
    target = create_app({"TESTING": True, "DATABASE": tmp_path / "target.db"})
    with target.app_context():
        init_db()
    line = refusal(target.test_cli_runner().invoke(args=["import", str(path)]))
    assert f"users[1]: name: {MESSAGE}" in line and "nothing imported" in line
    assert stored_users(target) == []


# --- a name stored before the rule -------------------------------------------------------------------------


def test_a_name_stored_before_the_rule_gets_its_invitation_on_one_line(app, admin, sent):
    bob = stored_before_the_rule(app, "Bob\r\nBcc: x@example.net", "bob@example.com")
    invited = post(admin, f"/people/{bob}/invitation", csrf_from="/people")
    assert invited.status_code == 200 and "Emailed to bob@example.com" in invited.get_data(as_text=True)
    [message] = sent
    headers = message.split(b"\r\n\r\n" if b"\r\n\r\n" in message else b"\n\n", 1)[0]
    assert b"\nTo: Bob Bcc: x@example.net <bob@example.com>" in headers or \
        b'\nTo: "Bob Bcc: x@example.net" <bob@example.com>' in headers, headers
    assert b"\nBcc:" not in headers


def test_a_name_stored_before_the_rule_gets_its_invitation_from_the_command_line(app, runner, sent):
    stored_before_the_rule(app, "Bob\nBuilder", "bob@example.com")
    result = runner.invoke(args=["users", "invite", "bob@example.com"])
    assert result.exit_code == 0, result.output
    assert "emailed to them" in result.output
    [message] = sent
    assert b"\nTo: Bob Builder <bob@example.com>" in message


def test_a_name_stored_before_the_rule_may_be_mended_and_keeps_its_email(app, runner):
    stored_before_the_rule(app, "Bob\nBuilder", "bob@example.com")
    result = runner.invoke(args=["users", "update", "bob@example.com", "--email", "robert@example.com"])
    assert result.exit_code == 0, result.output  # only what is given is checked
    result = runner.invoke(args=["users", "update", "robert@example.com", "--name", "Bob Builder"])
    assert result.exit_code == 0, result.output
    assert stored_users(app)[0][:2] == ("Bob Builder", "robert@example.com")
