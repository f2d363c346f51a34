"""okr.outbound.smtp: the settings, and sending through a real SMTP server on loopback, in clear to a local relay, with
STARTTLS and a password, with TLS from the start; a server that refuses or never answers is one MailError."""
import re
import time
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime

import pytest

from okr.outbound import smtp

BASE = {"HOST": "127.0.0.1", "PORT": 8080}


def send_one(settings, to="ada@example.com"):
    smtp.send(settings, smtp.message(settings, "Ada Lovelace", to, "Hello", "Line one\nLine two\n"))


@pytest.mark.slow
def test_a_message_reaches_the_server_as_plain_text(smtp_server, settings):
    send_one(settings)
    [message] = smtp_server.messages
    assert message["From"] == "OKR <okr@example.com>" and message["To"] == "Ada Lovelace <ada@example.com>"
    assert message["Subject"] == "Hello" and message["Auto-Submitted"] == "auto-generated"
    assert message.get_content_type() == "text/plain"
    assert message.get_content().replace("\r\n", "\n") == "Line one\nLine two\n"


@pytest.mark.slow
def test_a_message_is_dated_as_rfc_5322_says(smtp_server, settings):
    send_one(settings)
    [message] = smtp_server.messages
    [date] = message.get_all("Date")
    assert re.fullmatch(r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{1,2} [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d [+-]\d{4}", date), date
    sent = parsedate_to_datetime(date)
    assert sent.tzinfo is not None and abs(datetime.now(timezone.utc) - sent) < timedelta(minutes=1)
    assert message["Message-ID"]  # beside it, as ever


@pytest.mark.slow
def test_starttls_with_user_and_password(starttls_server):
    # The password in OKR_SMTP_PASSWORD; "s3cret: pass" would need percent-encoding in the URL.
    settings = smtp.settings({**BASE, "SMTP_URL": starttls_server.url, "SMTP_PASSWORD": "s3cret: pass",
                              "MAIL_FROM": "okr@example.com"})
    send_one(settings)
    assert len(starttls_server.messages) == 1 and starttls_server.tls == [True]
    assert starttls_server.logins == [(b"okr", b"s3cret: pass")]


@pytest.mark.slow
def test_the_password_may_stand_in_the_url_percent_encoded(starttls_server):
    url = starttls_server.url.replace("smtp://okr@", "smtp://okr:s3cret%3A%20pass@")
    settings = smtp.settings({**BASE, "SMTP_URL": url, "MAIL_FROM": "okr@example.com"})
    assert settings.password == "s3cret: pass" and "s3cret" not in repr(settings)
    send_one(settings)
    assert starttls_server.tls == [True]


@pytest.mark.slow
def test_a_wrong_password_is_one_mail_error_without_the_password(starttls_server):
    settings = smtp.settings({**BASE, "SMTP_URL": starttls_server.url, "SMTP_PASSWORD": "not it at all",
                              "MAIL_FROM": "okr@example.com"})
    with pytest.raises(smtp.MailError, match="refused the user name or password") as refused:
        send_one(settings)
    assert "not it at all" not in str(refused.value)


@pytest.mark.slow
def test_smtps_is_tls_from_the_start(smtps_server):
    settings = smtp.settings({**BASE, "SMTP_URL": smtps_server.url, "MAIL_FROM": "okr@example.com"})
    send_one(settings)
    assert smtps_server.tls == [True]


@pytest.mark.slow
def test_no_starttls_is_refused_unless_the_server_is_this_machine(smtp_server, settings, monkeypatch):
    monkeypatch.setattr(smtp, "is_loopback", lambda host: False)
    with pytest.raises(smtp.MailError, match="offers no STARTTLS"):
        send_one(settings)
    assert smtp_server.messages == []


@pytest.mark.slow
def test_a_refusing_server_is_a_mail_error(smtp_server, settings):
    smtp_server.recorder.refuse = "550 5.7.1 Not today"
    with pytest.raises(smtp.MailError, match="refused the message: 550 5.7.1 Not today"):
        send_one(settings)


@pytest.mark.slow
def test_a_server_that_never_answers_is_a_mail_error_after_the_timeout(silent_server):
    settings = smtp.settings({**BASE, "SMTP_URL": silent_server, "MAIL_FROM": "okr@example.com",
                              "SMTP_TIMEOUT": 0.5})
    started = time.monotonic()
    with pytest.raises(smtp.MailError, match="did not answer within 0.5 seconds"):
        send_one(settings)
    assert time.monotonic() - started < 5


def test_no_server_listening_is_a_mail_error():
    settings = smtp.settings({**BASE, "SMTP_URL": "smtp://127.0.0.1:1", "MAIL_FROM": "okr@example.com"})
    with pytest.raises(smtp.MailError, match="cannot send through the mail server smtp://127.0.0.1:1"):
        send_one(settings)


def test_without_an_smtp_url_email_is_not_set_up():
    assert smtp.settings(BASE) is None and smtp.settings({**BASE, "SMTP_URL": ""}) is None


@pytest.mark.parametrize("changes, words", [
    ({"SMTP_URL": "http://mail.example.com"}, "must start with smtp:// (STARTTLS) or smtps://"),
    ({"SMTP_URL": "smtp://"}, "must name a host"),
    ({"SMTP_URL": "smtp://mail.example.com:99999"}, "port"),
    ({"SMTP_URL": "smtp://mail.example.com/path"}, "no path"),
    ({"SMTP_URL": "smtp://:pw@mail.example.com"}, "needs a user name"),
    ({"MAIL_FROM": None}, "OKR_MAIL_FROM is not"),
    ({"MAIL_FROM": "nobody"}, "is not an email address"),
    ({"BASE_URL": "ftp://okr.example.com"}, "OKR_BASE_URL"),
    ({"HOST": "0.0.0.0"}, "set OKR_PUBLIC_URL"),
])
def test_bad_settings_say_which(changes, words):
    config = {**BASE, "SMTP_URL": "smtp://mail.example.com", "MAIL_FROM": "okr@example.com", **changes}
    with pytest.raises(smtp.MailSettingsError, match=words.replace("(", r"\(").replace(")", r"\)")):
        smtp.settings(config)


def test_the_defaults_the_scheme_gives():
    plain = smtp.settings({**BASE, "SMTP_URL": "smtp://mail.example.com", "MAIL_FROM": "okr@example.com"})
    tls = smtp.settings({**BASE, "SMTP_URL": "smtps://u@mail.example.com", "MAIL_FROM": "okr@example.com",
                         "SMTP_PASSWORD": "pw"})
    assert (plain.port, plain.user, plain.password, plain.timeout) == (587, None, None, 30)
    assert (tls.port, tls.user, tls.password) == (465, "u", "pw")
    assert plain.base_url == "http://127.0.0.1:8080"
