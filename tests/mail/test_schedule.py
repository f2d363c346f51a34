"""When the weekly emails go: from OKR_WEEKLY_MAIL's weekday and hour in OKR_TIMEZONE to the week's end, by the
server's background job, which retries a mail server that refused or timed out at its next round."""
import threading

import pytest

from okr.outbound import smtp, weekly_emails

from mail_helpers import NOW, WEEK, moment

PARIS = {"WEEKLY_MAIL": "monday 09:00", "TIMEZONE": "Europe/Paris"}


@pytest.mark.parametrize("stamp, due", [
    ("2026-06-15T06:59:00Z", None),  # Monday 08:59 in Paris (summer time, UTC+2)
    ("2026-06-15T07:00:00Z", "2026-W25"),  # Monday 09:00 in Paris
    ("2026-06-21T21:59:00Z", "2026-W25"),  # Sunday 23:59 in Paris: still that week's
    ("2026-06-21T22:00:00Z", None),  # Monday 00:00 in Paris: a new week, not yet due
    ("2026-06-14T23:00:00Z", None),  # Monday 01:00 in Paris
])
def test_due_from_the_weekday_and_hour_in_the_time_zone(stamp, due):
    assert weekly_emails.due_week(moment(stamp), weekly_emails.schedule(PARIS)) == due


def test_the_default_is_monday_09_00_utc():
    when = weekly_emails.schedule({})
    assert str(when) == "Monday 09:00 (UTC)"
    assert weekly_emails.due_week(moment("2026-06-15T08:59:00Z"), when) is None
    assert weekly_emails.due_week(moment("2026-06-15T09:00:00Z"), when) == "2026-W25"


@pytest.mark.parametrize("setting", ["friday 16:30", "Fri 16:30", "FRIDAY  16:30"])
def test_a_schedule_names_its_weekday_and_time(setting):
    when = weekly_emails.schedule({"WEEKLY_MAIL": setting})
    assert (when.weekday, when.hour, when.minute) == (4, 16, 30)


@pytest.mark.parametrize("config, words", [
    ({"WEEKLY_MAIL": "someday 09:00"}, "OKR_WEEKLY_MAIL"), ({"WEEKLY_MAIL": "monday 25:00"}, "OKR_WEEKLY_MAIL"),
    ({"WEEKLY_MAIL": "monday"}, "OKR_WEEKLY_MAIL"), ({"WEEKLY_MAIL": "t 09:00"}, "OKR_WEEKLY_MAIL"),
    ({"TIMEZONE": "Mars/Olympus"}, "OKR_TIMEZONE"),
])
def test_a_bad_schedule_says_which_setting(config, words):
    with pytest.raises(smtp.MailSettingsError, match=words):
        weekly_emails.schedule(config)


def run_job(app, monkeypatch, clock_at, until, seconds=10):
    """Runs the background job, checking every few milliseconds, until until() or the time is up."""
    monkeypatch.setattr(weekly_emails, "CHECK_EVERY_SECONDS", 0.02)
    monkeypatch.setattr(weekly_emails, "current_time", lambda: clock_at[0])
    stop = threading.Event()
    thread = threading.Thread(target=weekly_emails.weekly_mail_job, args=(app, stop))
    thread.start()
    try:
        finished = threading.Event()
        for _ in range(int(seconds / 0.02)):
            if until():
                finished.set()
                break
            stop.wait(0.02)
    finally:
        stop.set()
        thread.join(5)
    return finished.is_set()


@pytest.mark.slow
def test_the_job_sends_nothing_before_monday_09_00_then_once(app, reminder_world, smtp_server, monkeypatch):
    clock_at = [moment("2026-06-15T08:59:00Z")]
    assert not run_job(app, monkeypatch, clock_at, lambda: smtp_server.messages, seconds=0.3)
    clock_at[0] = NOW
    assert run_job(app, monkeypatch, clock_at, lambda: len(smtp_server.messages) == 2)
    clock_at[0] = moment("2026-06-16T10:00:00Z")  # a restart the next day: already sent this week
    run_job(app, monkeypatch, clock_at, lambda: False, seconds=0.3)
    assert len(smtp_server.messages) == 2


@pytest.mark.slow
def test_a_refusing_server_is_tried_again_at_the_next_round(app, reminder_world, smtp_server, settings, monkeypatch):
    smtp_server.recorder.refuse = "550 5.7.1 Try later"
    refused = weekly_emails.send_round(app.config, settings, NOW, WEEK)
    assert refused.sent == [] and "550 5.7.1 Try later" in refused.error
    smtp_server.recorder.refuse = None
    clock_at = [NOW]
    assert run_job(app, monkeypatch, clock_at, lambda: len(smtp_server.messages) == 2)


@pytest.mark.slow
def test_a_server_that_times_out_leaves_the_claims_free(app, reminder_world, smtp_server, settings, silent_server):
    silent = smtp.settings({**app.config, "SMTP_URL": silent_server, "SMTP_TIMEOUT": 0.3})
    timed_out = weekly_emails.send_round(app.config, silent, NOW, WEEK)
    assert timed_out.sent == [] and "did not answer within 0.3 seconds" in timed_out.error
    assert len(weekly_emails.send_round(app.config, settings, NOW, WEEK).sent) == 2
