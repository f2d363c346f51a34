"""Check-in reminders: who gets one listing which key results, and each person once a week, however many rounds
and processes send them (issue 24)."""
import sqlite3
import threading
from contextlib import closing

import pytest

from okr.outbound import weekly_emails
from okr.store.schema import connect

from mail_helpers import BASE_URL, NOW, WEEK, moment

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser

def reminded(app, now=NOW):
    """{person's name: [their key results' names]} of the reminders at now."""
    with closing(connect(app.config["DATABASE"], 5000)) as db:
        return {entry["person"]["name"]: [node["name"] for node in entry["key_results"]]
                for entry in weekly_emails.reminders(db, now)}


def test_owners_and_assignees_are_reminded_of_their_key_results_without_a_check_in_for_7_days(app, reminder_world):
    assert reminded(app) == {"Olive": ["Reach 500 customers", "Hire 3 people"],
                             "Ann": ["Reach 500 customers", "Ship the app"]}


def test_a_check_in_within_7_days_is_no_reason_to_remind(app, reminder_world):
    assert reminded(app, moment("2026-06-07T09:00:00Z")) == {}  # six days after they were made
    assert "Fresh" not in reminded(app) and "Fresh" in reminded(app, moment("2026-06-21T09:00:00Z"))


def test_the_reminder_email_lists_them_with_links_to_check_in(app, reminder_world, smtp_server, settings):
    people, made = reminder_world
    result = weekly_emails.send_round(app.config, settings, NOW, WEEK)
    assert result.complete and {email.person["name"] for email in result.sent if email.kind == "reminder"} == {
        "Olive", "Ann"}
    [message] = [m for m in smtp_server.to("olive@example.com") if m["Subject"].startswith("Check-in reminder")]
    assert message["Subject"] == "Check-in reminder: 2 key results waiting for an update"
    body = message.get_content()
    for name in ("Reach 500 customers", "Hire 3 people"):
        assert name in body
    assert f"Check in: {BASE_URL}/keyresults/{made['owned']['id']}" in body
    assert f"{BASE_URL}/account" in body and "last check-in 2026-06-01" in body
    assert not smtp_server.to("quiet@example.com") and not smtp_server.to("gone@example.com")


def test_a_person_is_reminded_once_a_week_however_many_rounds(app, reminder_world, smtp_server, settings):
    first = weekly_emails.send_round(app.config, settings, NOW, WEEK)
    again = weekly_emails.send_round(app.config, settings, moment("2026-06-17T12:00:00Z"), WEEK)
    assert len(first.sent) == 2 and again.sent == []
    assert len(smtp_server.messages) == 2
    with sqlite3.connect(app.config["DATABASE"]) as db:
        # (the inbox's check-in-due notes are kept there too: tests/mail/test_notification_mail.py)
        assert db.execute("SELECT kind, week FROM weekly_mail WHERE kind != 'checkin_due' "
                          "ORDER BY recipient").fetchall() == [("reminder", WEEK), ("reminder", WEEK)]
    following = weekly_emails.send_round(app.config, settings, moment("2026-06-22T09:00:00Z"), "2026-W26")
    assert {email.person["name"] for email in following.sent} == {"Olive", "Ann", "Fresh"}  # a new week


def test_two_processes_racing_send_each_reminder_once(app, reminder_world, smtp_server, settings):
    smtp_server.recorder.delay = 0.2  # both rounds plan before either has sent
    results = []
    rounds = [threading.Thread(target=lambda: results.append(weekly_emails.send_round(app.config, settings, NOW, WEEK)))
              for _ in range(2)]
    for thread in rounds:
        thread.start()
    for thread in rounds:
        thread.join()
    assert sum(len(result.sent) for result in results) == 2 and len(smtp_server.messages) == 2


def test_a_claim_is_one_connections_alone(app, reminder_world):
    email = weekly_emails.Email(weekly_emails.REMINDER, {"id": "someone"}, "subject", "body")
    with closing(connect(app.config["DATABASE"], 5000)) as one, closing(connect(app.config["DATABASE"], 5000)) as two:
        assert weekly_emails.claim(one, email, WEEK) is True
        assert weekly_emails.claim(two, email, WEEK) is False
        weekly_emails.release(one, email, WEEK)
        assert weekly_emails.claim(two, email, WEEK) is True
