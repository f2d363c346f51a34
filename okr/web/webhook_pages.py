"""The Webhooks page (admins only): the hooks, adding one (its secret shown once), removing (confirmed),
enabling, a test ping, and each hook's recent attempts. The same store and delivery as `okr webhooks`.

A page that sends (add's address check, test's ping) does so before its write transaction begins: no
network wait holds SQLite's write lock.
"""
from flask import redirect, render_template, request, url_for

from .. import clock
from ..accounts import access, sessions
from ..db import get_connection, get_db
from ..errors import Invalid
from ..outbound import webhook_request
from ..rules import webhook_receivers
from ..store import webhooks
from .editing import confirm_delete
from .views import bp


def render_webhooks(form=None, errors=None, added=None, status=200):
    hooks = webhooks.all_hooks(get_db())
    return render_template("webhooks.html", hooks=hooks, added=added, errors=errors or {},
                           formats=webhooks.FORMATS,
                           form=form or {"url": "", "events": "", "format": "events", "allow_private": False}), status


@bp.get("/webhooks")
@sessions.webhook_managers_only
def show_webhooks():
    """Lists the webhooks, with a form to add one."""
    return render_webhooks()


@bp.post("/webhooks")
@sessions.webhook_managers_only
def add_webhook():
    """Adds a webhook and shows its secret, this once."""
    form = {"url": request.form.get("url", "").strip(), "events": request.form.get("events", "").strip(),
            "format": request.form.get("format", "events"), "allow_private": request.form.get("allow_private") == "on"}
    problem = webhook_receivers.url_problem(form["url"])
    if problem is None:
        try:
            webhook_request.check_destination(form["url"], form["allow_private"])
        except webhook_request.Refused as refused:
            problem = f"{refused}".replace("add the hook with --allow-private", "tick “Allow a private address”")
    if problem:
        return render_webhooks(form, {"url": problem}, status=400)
    try:
        hook = webhooks.add(get_db(), form["url"], form["events"], form["format"], form["allow_private"])
    except Invalid as error:
        return render_webhooks(form, error.fields, status=400)
    return render_webhooks(added=hook)


def hook_page(hook_id, result=None, status=200):
    db = get_db()
    hook = webhooks.get(db, hook_id)
    shown = {**dict(hook), "patterns": webhooks.patterns_of(db, hook["seq"]),
             "pending": webhooks.pending(db, hook["seq"])}
    return render_template("webhook.html", hook=shown, attempts=webhooks.deliveries(db, hook_id),
                           result=result), status


@bp.get("/webhooks/<hook_id>")
@sessions.webhook_managers_only
def show_webhook(hook_id):
    """Shows a webhook and its last attempts."""
    return hook_page(hook_id)


@bp.post("/webhooks/<hook_id>/enable")
@sessions.webhook_managers_only
def enable_webhook(hook_id):
    """Enables a disabled webhook: delivery resumes from its first undelivered event."""
    webhooks.enable(get_db(), hook_id)
    return redirect(url_for("web.show_webhook", hook_id=hook_id), 303)


@bp.post("/webhooks/<hook_id>/test")
@sessions.webhook_managers_only
def test_webhook(hook_id):
    """Sends the webhook a ping now, and shows the answer."""
    hook = webhooks.get(get_connection(), hook_id)  # read outside the write transaction: the ping may take its whole timeout
    outcome, message_id = webhook_request.send_ping(hook, access.event_actor(access.current_actor()))
    webhooks.log_attempts(get_db(), hook["seq"], [(message_id, "ping", clock.utc_now(), outcome.status, outcome.error)])
    result = f"Ping delivered: HTTP {outcome.status}." if outcome.ok else f"Ping failed: {outcome.error}"
    return hook_page(hook_id, result)


@bp.route("/webhooks/<hook_id>/delete", methods=["GET", "POST"])
@sessions.webhook_managers_only
def remove_webhook(hook_id):
    """Asks, then removes a webhook with the events still waiting for it."""
    db = get_db()
    hook = webhooks.get(db, hook_id)
    if request.method == "GET":
        waiting = webhooks.pending(db, hook["seq"])
        return confirm_delete("Remove webhook", f"the webhook to {hook['url']}",
                              [f"{waiting} events waiting for it will never be sent." if waiting else None,
                               "Its receiver gets nothing more."],
                              url_for("web.show_webhook", hook_id=hook_id))
    webhooks.remove(db, hook_id)
    return redirect(url_for("web.show_webhooks"), 303)
