"""okr reminders: the weekly emails (check-in reminders and team digests) now, listed or sent.

The server sends them by itself at OKR_WEEKLY_MAIL (okr/outbound/weekly_emails.py); these commands are for a look before, and
for sending them now. Either way an email goes once a week per person: one already sent this week is neither
listed nor sent again.
"""
import click
from flask import current_app
from flask.cli import AppGroup, with_appcontext

from ..outbound import smtp, weekly_emails
from .common import read_database, reports_errors, use_database


def mail_setup():
    """(MailSettings or None, Schedule); a bad setting as one `okr:` line."""
    try:
        return smtp.settings(current_app.config), weekly_emails.schedule(current_app.config)
    except smtp.MailSettingsError as error:
        raise click.ClickException(str(error)) from None


def emails_now():
    """(the week, its unsent weekly emails) at this moment, in OKR_TIMEZONE's week."""
    _, when = mail_setup()
    now = weekly_emails.current_time()
    week = weekly_emails.week_of(now, when.zone)
    try:
        return week, weekly_emails.unsent(current_app.config, now, week)
    except smtp.MailSettingsError as error:
        raise click.ClickException(str(error)) from None


def plural(count, word):
    return f"{count} {word}{'s' if count != 1 else ''}"


@click.group("reminders", cls=AppGroup, invoke_without_command=True,
             short_help="Weekly reminders and digests by email: send, or --dry-run.")
@click.option("--dry-run", is_flag=True, help="Print each email that okr reminders send would send now (who "
                                              "gets what), and send nothing.")
@with_appcontext
@click.pass_context
@reports_errors
def reminders_cli(context, dry_run):
    """Weekly check-in reminders and team digests by email.

    The server sends them itself, at OKR_WEEKLY_MAIL (default "monday 09:00")
    in OKR_TIMEZONE (default UTC). okr reminders --dry-run prints those due now;
    okr reminders send sends them now. A person gets each kind at most once a
    week, however often either runs. docs/email.md says more.
    """
    if context.invoked_subcommand is not None:
        if dry_run:
            raise click.UsageError("--dry-run goes alone: okr reminders --dry-run")
        return
    if not dry_run:
        click.echo(context.get_help())
        return
    settings, when = mail_setup()
    read_database()
    week, emails = emails_now()
    if settings is None and emails:
        click.echo("Email is not set up (OKR_SMTP_URL and OKR_MAIL_FROM): nothing can be sent. Once it is, these "
                   "would be:\n")
    for email in emails:
        click.echo(f"To: {email.person['name']} <{email.person['email']}>\nSubject: {email.subject}\n")
        click.echo(email.body)
        click.echo("-" * 72)
    click.echo(f"{plural(len(emails), 'email')} of week {week} due now, none sent (the server sends them at "
               f"{when})" if emails else f"nothing to send now (week {week})")


@reminders_cli.command("send")
@reports_errors
def send_reminders():
    """Send the weekly emails due now, and print how many.

    Those already sent this week (by the server or an earlier run) are not sent
    again. A mail server that refuses or does not answer stops the sending; run
    it again to send the rest.
    """
    settings, when = mail_setup()
    if settings is None:
        raise click.ClickException(f"{smtp.NOT_SET_UP}: set OKR_SMTP_URL and OKR_MAIL_FROM (docs/email.md)")
    use_database()
    now = weekly_emails.current_time()
    week = weekly_emails.week_of(now, when.zone)
    try:
        result = weekly_emails.send_round(current_app.config, settings, now, week)
    except smtp.MailSettingsError as error:
        raise click.ClickException(str(error)) from None
    for email in result.sent:
        click.echo(f"sent {email.kind} to {email.person['email']}")
    if result.error:
        raise click.ClickException(f"{plural(len(result.sent), 'email')} sent, then: {result.error}; run okr "
                                   "reminders send again to send the rest")
    click.echo(f"{plural(len(result.sent), 'email')} sent (week {week})")
