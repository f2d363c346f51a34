"""okr webhooks: outbound webhooks, which the server's background process delivers (okr.outbound.webhook_queue)."""
import click
from flask.cli import AppGroup

from .. import clock
from ..db import transaction
from ..errors import Invalid, NotFound
from ..outbound import webhook_request
from ..rules import webhook_receivers
from ..store import events, webhooks
from .common import echo_json, read_database, reports_errors, use_database

webhooks_cli = AppGroup("webhooks", help="Webhooks: add, list, remove, enable, test, deliveries.")


def hook_id_argument(command):
    return click.argument("hook_id", metavar="ID")(command)


def found(db, hook_id):
    try:
        return webhooks.get(db, hook_id)
    except NotFound:
        raise click.ClickException(f"no webhook with id {hook_id} (see okr webhooks list)") from None


def refusal(error):
    """An Invalid as one line: its sentences, without the field names the pages put beside fields."""
    return click.ClickException("; ".join(error.fields.values()))


@webhooks_cli.command("add")
@click.argument("url")
@click.option("--events", "patterns", metavar="PATTERN,...",
              help='Event types or GLOB patterns, comma-separated, e.g. "objective.*,checkin.created"; '
                   'default "*" (every event).')
@click.option("--format", "hook_format", type=click.Choice(webhooks.FORMATS), default="events", show_default=True,
              help="slack: the weekly digest as a Slack incoming-webhook message, instead of events.")
@click.option("--allow-private", is_flag=True,
              help="Allow a loopback, private or link-local address (a receiver on this machine or network).")
@click.option("--json", "as_json", is_flag=True, help='Print {"id": ..., "secret": ..., ...}.')
@reports_errors
def add_hook(url, patterns, hook_format, allow_private, as_json):
    """Add a webhook; its signing secret is printed now and never again.

    Each event whose type matches a pattern is POSTed to URL as JSON, signed
    per the Standard Webhooks specification with the secret (whsec_...).
    See docs/webhooks.md.
    """
    problem = webhook_receivers.url_problem(url)
    if problem:
        raise click.ClickException(problem)
    try:
        webhook_request.check_destination(url, allow_private)
    except webhook_request.Refused as refused:
        raise click.ClickException(str(refused)) from None
    use_database()
    try:
        with transaction() as db:
            hook = webhooks.add(db, url, patterns or (), hook_format, allow_private)
    except Invalid as error:
        raise refusal(error) from None
    if as_json:
        echo_json({**webhooks.public(hook), "secret": hook["secret"]})
    else:
        what = "the weekly digest" if hook_format == "slack" else "events " + ",".join(hook["patterns"])
        click.echo(f"id:     {hook['id']}\nsecret: {hook['secret']}\nurl:    {url} ({what})\n"
                   "The secret is shown only this once: store it now (the receiver verifies with it).")


@webhooks_cli.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per webhook (never its secret).")
@reports_errors
def list_hooks(as_json):
    """List webhooks: id, state, events waiting, patterns, URL."""
    read_database()
    with transaction(write=False) as db:
        hooks = webhooks.all_hooks(db)
    if not hooks and not as_json:
        click.echo("no webhooks yet; add one with okr webhooks add URL")
    for hook in hooks:
        if as_json:
            echo_json(webhooks.public(hook))
            continue
        state = "active" if hook["is_active"] else f"disabled ({hook['disabled_reason'] or 'by an admin'})"
        what = "slack digest" if hook["format"] == "slack" else ",".join(hook["patterns"])
        click.echo(f"{hook['id']}  {state}  {hook['pending']} waiting  {what}  {hook['url']}")


@webhooks_cli.command("remove")
@hook_id_argument
@reports_errors
def remove_hook(hook_id):
    """Remove a webhook; the events still waiting for it are dropped."""
    use_database()
    with transaction() as db:
        found(db, hook_id)
        webhooks.remove(db, hook_id)
    click.echo(f"removed webhook {hook_id}")


@webhooks_cli.command("enable")
@hook_id_argument
@reports_errors
def enable_hook(hook_id):
    """Enable a disabled webhook; delivery resumes from its first undelivered event."""
    use_database()
    with transaction() as db:
        found(db, hook_id)
        webhooks.enable(db, hook_id)
        waiting = webhooks.pending_by_id(db, hook_id)
    click.echo(f"enabled webhook {hook_id}; {waiting} waiting events go out now (a running server sends them)")


@webhooks_cli.command("test")
@hook_id_argument
@reports_errors
def test_hook(hook_id):
    """Send a ping event (or, to a slack hook, a test message) now; print the answer."""
    use_database()
    with transaction(write=False) as db:
        hook = found(db, hook_id)
    outcome, message_id = webhook_request.send_ping(hook, events.ACTOR.get())
    with transaction() as db:
        webhooks.log_attempts(db, hook["seq"], [(message_id, "ping", clock.utc_now(), outcome.status, outcome.error)])
    if not outcome.ok:
        raise click.ClickException(f"ping failed: {outcome.error}")
    click.echo(f"ping delivered: HTTP {outcome.status}")


@webhooks_cli.command("deliveries")
@hook_id_argument
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per attempt.")
@reports_errors
def list_deliveries(hook_id, as_json):
    """The webhook's last attempts, newest first: time, event, status, error."""
    read_database()
    with transaction(write=False) as db:
        found(db, hook_id)
        attempts = webhooks.deliveries(db, hook_id)
    if not attempts and not as_json:
        click.echo("no attempts yet")
    for attempt in attempts:
        if as_json:
            echo_json(dict(attempt))
        else:
            status = attempt["status"] if attempt["status"] is not None else "---"
            error = f"  {attempt['error']}" if attempt["error"] else ""
            click.echo(f"{attempt['attempted_at']}  {status}  {attempt['event_type']}  {attempt['event_id']}{error}")
