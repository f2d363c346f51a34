"""The Activity page, /activity: every change recorded (okr.store.events), newest first, a page at a time, by team,
person and cycle; and the history of changes an objective's and a key result's pages show (history.html).

Everyone signed in reads them, viewers too: they show what the API lets a viewer read, but no email.
"""
from flask import render_template, request, url_for

from ..db import get_db
from ..reports import activity
from ..store import cycles, teams, users
from .errors import PageError
from .views import bp, filter_arg, has_endpoint, now

# Where each kind of resource a sentence names has its page (a user has none).
PAGES = {"objective": ("web.show_objective", "objective_id"), "key_result": ("web.show_key_result", "key_result_id"),
         "team": ("web.show_team", "team_id"), "cycle": ("web.show_cycle", "cycle_id")}


def link(part, names):
    """A sentence's part as (text, href): href None for plain text and for what no longer exists."""
    if not isinstance(part, activity.Ref) or not part.id or not names.exists(part.kind, part.id):
        return str(part), None
    endpoint, argument = PAGES.get(part.kind, (None, None))
    if endpoint is None or not has_endpoint(endpoint):
        return str(part), None
    return part.text, url_for(endpoint, **{argument: part.id})


def shown(db, entries):
    """Each entry with its sentence as (text, href) parts, and what people wrote with it."""
    names = activity.names(db, entries)
    return [{**event, "parts": [link(part, names) for part in activity.sentence(event, names)],
             "note": activity.note(event)} for event in entries]


def before_arg():
    """The page's "before" (a position in the feed), None when absent; a 400 page when it is not one."""
    before = request.args.get("before", "")
    if not before:
        return None
    if not (before.isascii() and before.isdigit() and len(before) <= 19):
        raise PageError(400, "Bad page link", "The link's 'before' is not a position in the activity feed.")
    return int(before)


@bp.get("/activity")
def show_activity():
    """Shows the changes everyone made, newest first, maybe of one team, person or cycle."""
    db = get_db()
    chosen = {name: filter_arg(name) for name in activity.FILTERS}
    entries, older = activity.feed(db, before=before_arg(), **chosen)
    return render_template(
        "activity.html", entries=shown(db, entries), older=older, chosen=chosen, moment=now(),
        older_link=url_for("web.show_activity", before=older, **{k: v for k, v in chosen.items() if v}),
        filtered=any(chosen.values()),
        teams=teams.pick_list(db), people=users.pick_list(db), cycles=cycles.pick_list(db))


def change_history(kind, resource_id):
    """The history.html partial's changes of one objective or key result: the latest HISTORY_SHOWN, or with
    ?history=all the latest HISTORY_MOST (okr.reports.activity). A template global, so that each page includes it with one line and no view changes."""
    db = get_db()
    everything = request.args.get("history") == "all"
    entries, more = activity.history(db, kind, resource_id,
                                     activity.HISTORY_MOST if everything else activity.HISTORY_SHOWN)
    return {"entries": shown(db, entries), "more": more, "everything": everything, "moment": now(),
            "all_link": request.path + "?history=all#change-history"}


@bp.app_context_processor
def history_globals():
    return {"change_history": change_history}
