"""The weekly digest in chat: each team's digest (okr.outbound.weekly_emails.team_digest) to every slack-format webhook.

Due when the weekly emails are (OKR_WEEKLY_MAIL in OKR_TIMEZONE) and sent without email being set up.
Each (hook, team) gets one message a week: claimed in weekly_mail as kind "chat", recipient "HOOK/TEAM",
before it is posted, as the emails are; a failed post releases its claim, so that the next round (a minute
later) tries again. Each attempt is in the hook's delivery log, as "digest".

Knows nothing of Flask: it reads a config mapping and opens its own connections.
"""
import logging
from contextlib import closing

from .. import clock
from ..store import teams, visibility, webhooks, weekly_mail
from ..store.schema import connect
from . import smtp, webhook_request, weekly_emails

logger = logging.getLogger("okr")

CHAT = "chat"


def planned(db, now, week, base_url):
    """[(hook row, team digest)] not yet claimed in the week: every active slack hook, every team with objectives
    in a current cycle. A digest is built only for a team some hook still waits for, once."""
    hooks = webhooks.active_chat_hooks(db)
    if not hooks:
        return []
    done = weekly_mail.recipients(db, CHAT, week)
    built, work = {}, []
    for team in teams.oldest_first(db):
        for hook in hooks:
            if recipient_of(hook, team) in done:
                continue
            if team["id"] not in built:
                # A channel is read by whoever is in it: what everyone may see (okr.store.visibility).
                with visibility.viewing_as(visibility.ANYONE):
                    built[team["id"]] = weekly_emails.team_digest(db, team, now, base_url)
            if built[team["id"]]["objectives"]:
                work.append((hook, built[team["id"]]))
    return work


def recipient_of(hook, team):
    return f"{hook['id']}/{team['id']}"


def finish(db, hook, recipient, week, outcome):
    """Logs the attempt in the hook's delivery log; releases the claim of a failed one."""
    db.execute("BEGIN IMMEDIATE")
    try:
        webhooks.log_attempts(db, hook["seq"], [(recipient, "digest", clock.utc_now(), outcome.status, outcome.error)])
        if not outcome.ok:
            weekly_mail.release(db, CHAT, recipient, week)
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")


def send_round(config, now, week, post=None):
    """Posts the week's unsent chat digests; (sent, failed) counts. post(hook, message) sends one
    (okr.outbound.webhook_request.post_slack unless a test gives another)."""
    post = post or webhook_request.post_slack
    sent = failed = 0
    with closing(connect(config["DATABASE"], config["BUSY_TIMEOUT_MS"])) as db:
        db.execute("BEGIN")
        try:
            work = planned(db, now, week, smtp.public_base(config))
        finally:
            db.execute("ROLLBACK")
        for hook, digest in work:
            recipient = recipient_of(hook, digest["team"])
            if not weekly_mail.claim(db, CHAT, recipient, week):
                continue
            outcome = post(hook, weekly_emails.digest_slack_message(digest))
            finish(db, hook, recipient, week, outcome)
            if outcome.ok:
                sent += 1
            else:
                failed += 1
                logger.warning("the chat digest of team %s to webhook %s was not sent, tried again in a minute: %s",
                               digest["team"]["id"], hook["id"], outcome.error or outcome.status)
    return sent, failed


def chat_digest_job(app, stop):
    """Job of the server's background process (okr/server/background.py): about once a minute, posts the chat
    digests that are due and not yet sent."""
    config = app.config
    when = weekly_emails.schedule(config)
    while not stop.is_set():
        try:
            now = weekly_emails.current_time()
            week = weekly_emails.due_week(now, when)
            if week is not None:
                send_round(config, now, week)
        except Exception:  # a busy or broken database: tried again at the next round
            logger.exception("sending the chat digests failed")
        stop.wait(weekly_emails.CHECK_EVERY_SECONDS)
