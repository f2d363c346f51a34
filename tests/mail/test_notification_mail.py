"""The notifications' emails (issue 39) through a real SMTP server: sent after the commit, only for the kinds a person
takes by email (mentions unless switched off, the rest once switched on), each once; and the week's check-in-due
notes written where the reminders are sent, once a week per person, whether they take weekly emails or not."""
import sqlite3
from contextlib import closing

import pytest

from okr.db import transaction
from okr.outbound import notification_mail, weekly_emails
from okr.store import comments, events, notifications

from mail_helpers import BASE_URL, NOW, WEEK, person

pytestmark = pytest.mark.slow  # a real SMTP server on loopback


def as_person(row):
    return events.acting_as({"type": "user", "id": row["id"], "name": row["name"]})


def comment_as(app, author, objective_id, body):
    with app.app_context(), transaction() as db, as_person(author):
        return comments.create(db, "objective", objective_id, body, author["id"])


@pytest.fixture
def two(app, objective):
    return person(app, "Ada Lovelace", "ada@example.com"), person(app, "Bob Stone", "bob@example.com")


def test_a_mention_is_emailed_after_the_commit_once(app, settings, smtp_server, two, objective):
    ada, bob = two
    made = comment_as(app, ada, objective["id"], "@Bob Stone the numbers are in")
    assert smtp_server.messages == []  # nothing is sent inside the change
    assert notification_mail.send_due(app.config, settings) == 1
    [message] = smtp_server.messages
    assert message["To"] == "Bob Stone <bob@example.com>"
    assert message["Subject"] == f"Ada Lovelace mentioned you in a comment on “{objective['name']}”"
    body = message.get_content()
    assert "> @Bob Stone the numbers are in" in body
    assert f"{BASE_URL}/objectives/{objective['id']}#c-{made['id']}" in body
    assert notification_mail.send_due(app.config, settings) == 0  # once
    assert len(smtp_server.messages) == 1


def test_only_the_kinds_switched_on_are_emailed(app, settings, smtp_server, two, objective):
    ada, bob = two
    with app.app_context(), transaction() as db:
        db.execute("UPDATE objectives SET assignee_id = ? WHERE id = ?", (bob["id"], objective["id"]))
        notifications.set_email_choices(db, ada["id"], {"mentioned": False})
    comment_as(app, ada, objective["id"], "a comment Bob is told of, in his inbox only")
    comment_as(app, bob, objective["id"], "@Ada Lovelace, who switched mentions off")
    assert notification_mail.send_due(app.config, settings) == 0
    with app.app_context(), transaction() as db:
        notifications.set_email_choices(db, bob["id"], {"commented": True})
    comment_as(app, ada, objective["id"], "now by email too")
    assert notification_mail.send_due(app.config, settings) == 1
    assert [m["Subject"] for m in smtp_server.messages] == [
        f"Ada Lovelace commented on “{objective['name']}”"]


def test_a_refused_email_is_given_up_and_the_inbox_keeps_it(app, settings, smtp_server, two, objective):
    ada, bob = two
    smtp_server.recorder.refuse = "550 5.1.1 No such mailbox"
    comment_as(app, ada, objective["id"], "@Bob Stone hello")
    assert notification_mail.send_due(app.config, settings) == 0
    smtp_server.recorder.refuse = None
    assert notification_mail.send_due(app.config, settings) == 0
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        assert db.execute("SELECT kind, read_at, mail FROM notifications").fetchall() == [("mentioned", None, "sent")]


def test_the_week_s_due_check_ins_are_noted_once_per_person(app, settings, smtp_server, reminder_world):
    people, _ = reminder_world
    weekly_emails.send_round(app.config, settings, NOW, WEEK)
    weekly_emails.send_round(app.config, settings, NOW, WEEK)  # again: nothing new
    assert weekly_emails.note_due_checkins(app.config, NOW, WEEK) == 0
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        noted = db.execute("SELECT person_id, kind, actor_id FROM notifications ORDER BY person_id").fetchall()
    # Quiet takes no weekly emails but has an inbox; Gone is deactivated; Fresh checked in
    assert sorted(noted) == sorted((people[name]["id"], "checkin_due", None) for name in ("Olive", "Ann", "Quiet"))
