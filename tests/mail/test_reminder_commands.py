"""okr reminders --dry-run and send, and okr users invite emailing its link (issue 24)."""
import re

import pytest

from okr.outbound import weekly_emails

from mail_helpers import BASE_URL, NOW, person


@pytest.fixture(autouse=True)
def now_is_monday(monkeypatch):
    monkeypatch.setattr(weekly_emails, "current_time", lambda: NOW)


@pytest.mark.slow
def test_dry_run_prints_who_would_get_what_and_sends_nothing(runner, reminder_world, smtp_server):
    result = runner.invoke(args=["reminders", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "To: Olive <olive@example.com>\nSubject: Check-in reminder: 2 key results waiting for an update" in result.output
    assert "To: Ann <ann@example.com>" in result.output and "Reach 500 customers" in result.output
    assert "2 emails of week 2026-W25 due now, none sent" in result.output
    assert smtp_server.messages == []
    assert runner.invoke(args=["reminders", "--dry-run"]).output == result.output  # and claims nothing


@pytest.mark.slow
def test_send_sends_the_due_ones_once_a_week(runner, reminder_world, smtp_server):
    sent = runner.invoke(args=["reminders", "send"])
    assert sent.exit_code == 0, sent.output
    assert "sent reminder to olive@example.com" in sent.output and sent.output.endswith("2 emails sent (week 2026-W25)\n")
    again = runner.invoke(args=["reminders", "send"])
    assert again.exit_code == 0 and again.output.endswith("0 emails sent (week 2026-W25)\n")
    assert len(smtp_server.messages) == 2
    assert "nothing to send now" in runner.invoke(args=["reminders", "--dry-run"]).output


@pytest.mark.slow
def test_send_says_when_the_server_refuses(runner, reminder_world, smtp_server):
    smtp_server.recorder.refuse = "550 No"
    refused = runner.invoke(args=["reminders", "send"])
    assert refused.exit_code == 1 and "0 emails sent, then:" in refused.output and "550 No" in refused.output
    assert "Traceback" not in refused.output


@pytest.mark.parametrize("mail_config, words", [
    ({}, "email is not set up: set OKR_SMTP_URL and OKR_MAIL_FROM"),
    ({"SMTP_URL": "smtp://mail.example.com"}, "OKR_MAIL_FROM is not"),
    ({"SMTP_URL": "smtp://mail.example.com", "MAIL_FROM": "a@example.com", "TIMEZONE": "Nowhere"}, "OKR_TIMEZONE"),
])
@pytest.mark.slow
def test_send_without_good_settings_is_one_line(runner, mail_config, words):
    result = runner.invoke(args=["reminders", "send"])
    assert result.exit_code == 1 and words in result.output and len(result.output.splitlines()) == 1


@pytest.mark.slow
def test_invite_emails_the_link_which_works(app, runner, client, smtp_server):
    person(app, "Ada Lovelace", "ada@example.com")
    result = runner.invoke(args=["users", "invite", "ada@example.com"])
    assert result.exit_code == 0, result.output
    assert "emailed to them" in result.output
    link = result.output.splitlines()[-1]
    assert link.startswith(f"{BASE_URL}/invitations/")
    [message] = smtp_server.messages
    assert message["To"] == "Ada Lovelace <ada@example.com>" and link in message.get_content()
    page = client.get(link.removeprefix(BASE_URL), headers={"Accept": "text/html"})
    assert page.status_code == 200 and "Welcome, Ada Lovelace" in page.get_data(as_text=True)


@pytest.mark.slow
def test_invite_prints_the_link_when_the_email_is_refused(app, runner, smtp_server):
    person(app, "Ada Lovelace", "ada@example.com")
    smtp_server.recorder.refuse = "550 No"
    result = runner.invoke(args=["users", "invite", "ada@example.com"])
    assert result.exit_code == 0 and "emailed" not in result.output
    assert re.search(r"/invitations/\S+$", result.output.strip())


@pytest.mark.parametrize("name, value, words", [
    ("OKR_SMTP_URL", "ftp://mail.example.com", "okr: OKR_SMTP_URL must start with smtp://"),
    ("OKR_WEEKLY_MAIL", "someday", "okr: OKR_WEEKLY_MAIL must be a weekday and a time"),
])
def test_serve_refuses_bad_email_settings_in_one_line(tmp_path, monkeypatch, name, value, words):
    import okr.__main__ as program

    monkeypatch.setenv("OKR_SMTP_URL", "smtp://mail.example.com")
    monkeypatch.setenv("OKR_MAIL_FROM", "okr@example.com")
    monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as stopped:
        program.main(["--database", str(tmp_path / "okr.db"), "--port", "0", "serve"])
    assert str(stopped.value.code).startswith(words)
    assert not (tmp_path / "okr.db").exists()
