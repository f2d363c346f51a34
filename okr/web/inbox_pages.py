"""The inbox (/inbox: a person's notifications, newest first, each marked read one at a time or all at once), the
unread count in every page's header, and the account page's switches of which notifications also come by email.

What writes a notification, and who may see which, is okr.store.notifications'. Every role may read and mark their
own (sessions.own_account); a read-only key's session only reads; a service key's session, or an open server, has no
inbox.
"""
from flask import redirect, render_template, request, url_for

from ..accounts import access, sessions
from ..db import get_db
from ..store import notifications
from .errors import PageError
from .views import bp, now, page_actor, page_arg, page_token

SHOWN = 50  # notifications a page lists; "Older" goes on
NO_INBOX = "Only a person signed in as themselves has an inbox."
# What each kind says, after who did it.
SAYS = {"mentioned": "mentioned you", "commented": "commented on what you answer for",
        "changed": "changed your key result", "source_failed": "Your key result's source is failing",
        "checkin_due": "Your key results are due a check-in"}
EMAIL_KINDS = {"mentioned": "Someone mentions you (@ and your name or email) in a comment or a reflection",
               "commented": "Someone comments on an objective you are assigned or a key result you own",
               "changed": "Someone else checks in or edits a key result you own",
               "source_failed": "A metric source of a key result you own is failing",
               "checkin_due": "Your key results are due a check-in"}


@bp.app_template_global()
def unread_count():
    """The signed-in person's unread notifications (for the header); None for anyone without an inbox."""
    actor = page_actor()
    if actor is None or actor.user_id is None:
        return None
    return notifications.count_unread(get_db(), actor.user_id)


def inbox_owner():
    actor = access.current_actor()
    if actor is None or actor.user_id is None:
        raise PageError(403, "No inbox", NO_INBOX)
    return actor.user_id


@bp.get("/inbox")
def show_inbox():
    """Shows the signed-in person's notifications, newest first (unread=1: only the unread; page: older ones)."""
    person = inbox_owner()
    unread_only = request.args.get("unread") == "1"
    before = page_arg()  # the seq the page starts below (0: the newest)
    rows = notifications.page(get_db(), person, before, SHOWN + 1, unread_only=unread_only)
    older = page_token(rows[SHOWN - 1]["seq"]) if len(rows) > SHOWN else None
    return render_template("inbox.html", rows=rows[:SHOWN], older=older, unread_only=unread_only, says=SAYS,
                           unread=notifications.count_unread(get_db(), person), moment=now(),
                           may_mark=access.may_change_own_account(access.current_actor()))


@bp.post("/inbox/read")
@sessions.own_account
def mark_inbox_read():
    """Marks one notification read (id), or all of the signed-in person's (all)."""
    person = inbox_owner()
    ids = None if request.form.get("all") else request.form.getlist("id")
    notifications.mark_read(get_db(), person, ids)
    back = url_for("web.show_inbox", unread=request.form.get("unread") or None)
    return redirect(back, 303)


@bp.post("/account/notification-email")
@sessions.own_account
def set_notification_email():
    """Keeps which kinds of notification the signed-in person also takes by email (a box each)."""
    person = inbox_owner()
    notifications.set_email_choices(get_db(), person, {kind: request.form.get(kind) == "on"
                                                       for kind in notifications.KINDS})
    return redirect(url_for("web.show_account") + "#notification-email-heading", 303)


@bp.app_template_global()
def notification_email_choices():
    """The account page's email switches: [(kind, what it is, on)] for the signed-in person; [] for no person."""
    actor = page_actor()
    if actor is None or actor.user_id is None:
        return []
    chosen = notifications.email_choices(get_db(), actor.user_id)
    return [(kind, EMAIL_KINDS[kind], chosen[kind]) for kind in notifications.KINDS]
