"""The notifications' emails: each notification written with mail 'due' (its person takes its kind by email:
okr.store.notifications) is sent after its change committed, by the server's background process, a few seconds
later, through okr.outbound.smtp as every email is.

Each is claimed (mail 'due' to 'sent', a short write transaction of its own) before it is sent, so it goes at most
once however many processes send; a mail server's refusal is logged and the email given up. One whose person is no
longer active, or may no longer see the objective, is given up unsent.

Knows nothing of Flask: it reads a config mapping and opens its own connections.
"""
import logging
from contextlib import closing

from ..store import notifications, visibility
from ..store.schema import connect
from . import smtp

logger = logging.getLogger("okr")

# How often the background process looks for notifications to email, and the most it sends a round.
CHECK_EVERY_SECONDS = 5
BATCH = 100
SUBJECTS = {"mentioned": "{actor} mentioned you", "commented": "{actor} commented on {what}",
            "changed": "{actor} changed {what}", "source_failed": "The source of {what} is failing",
            "checkin_due": "Your key results are due a check-in"}


def link(mail_settings, row):
    if row["key_result_id"]:
        path = f"/keyresults/{row['key_result_id']}"
    elif row["concerns_id"]:
        path = f"/objectives/{row['concerns_id']}"
    else:
        path = "/inbox"
    return mail_settings.base_url + path + (f"#c-{row['comment_id']}" if row["comment_id"] else "")


def text(mail_settings, row):
    """(subject, body) of a notification's email (a due_mail row)."""
    what = f"“{row['key_result_name'] or row['objective_name']}”" if row["concerns_id"] else "your key results"
    subject = SUBJECTS[row["kind"]].format(actor=row["actor_name"] or "Someone", what=what)
    if row["kind"] == "mentioned":
        subject += f" in {'a comment on' if row['comment_id'] else 'the reflection of'} {what}"
    lines = [f"Hello {row['person_name']},", "", subject + "."]
    if row["comment_body"]:
        lines += ["", *("> " + line for line in row["comment_body"].splitlines())]
    lines += ["", link(mail_settings, row), "", "Your inbox: " + mail_settings.base_url + "/inbox",
              "Which notifications come by email is yours to choose on your account page: "
              + mail_settings.base_url + "/account"]
    return subject, "\n".join(lines) + "\n"


def send_due(config, mail_settings):
    """Sends the notifications' emails that are due, up to BATCH; returns how many were sent."""
    sent = 0
    with closing(connect(config["DATABASE"], config["BUSY_TIMEOUT_MS"])) as db:
        for row in notifications.due_mail(db, BATCH):
            if not notifications.claim_mail(db, row["seq"]):
                continue
            viewer = notifications.viewer_of(db, row["person_id"])
            if not row["person_active"] or (row["concerns_id"] is not None
                                            and not visibility.sees(db, viewer, row["concerns_id"])):
                continue
            subject, body = text(mail_settings, row)
            try:
                smtp.send(mail_settings, smtp.message(mail_settings, row["person_name"], row["person_email"],
                                                      subject, body))
                sent += 1
            except smtp.MailError as problem:
                logger.warning("a notification's email to user %s not sent: %s", row["person_id"], problem)
    return sent


def notification_mail_job(app, stop):
    """Job of the server's background process (okr/server/background.py): every few seconds, sends the
    notifications' emails that are due."""
    mail_settings = smtp.settings_or_none(app.config)
    if mail_settings is None:
        return  # email is not set up: notifications stay in the inbox only
    while not stop.is_set():
        try:
            while send_due(app.config, mail_settings) == BATCH and not stop.is_set():
                pass
        except Exception:  # a busy or broken database: tried again at the next round
            logger.exception("sending the notifications' emails failed")
        stop.wait(CHECK_EVERY_SECONDS)
