"""The wallboard, a cycle on a TV: /cycles/<id>/board for anyone who may read the cycle, and /boards/<token>
for a board link, a secret URL that opens that board and nothing else; and the Board links page (admins
only) that makes, lists and revokes them.

A board is built for 1920×1080 with no navigation: first a summary, then the objectives a screenful at a
time, each page's meta refresh leading to the next after REFRESH_SECONDS and the last back to the summary
(no script). Every figure and status is the cycle report's (okr.reports.alignment): nothing is computed here
but how the rows are laid out on pages.
"""
from flask import make_response, redirect, render_template, request, url_for

from .. import clock, proxies
from ..accounts import access, sessions
from ..db import get_db
from ..progress import parse_timestamp
from ..reports import alignment, spooled, streaming, timelines
from ..store import board_links, cycles, users, visibility
from ..store import reports as report_rows
from . import charts, wording
from .editing import confirm_delete
from .errors import PageError
from .views import bp

REFRESH_SECONDS = 30
# Rows (an objective's heading, or a key result) on one page of objectives: what fits 1920×1080 in the
# board's type with the page's heading (the browser test holds every page to the screen).
ROWS_PER_PAGE = 18
OFF_TRACK_SHOWN = 8  # the summary's list of what is off track; "and N more" after
# What a board link's answer must not let out: its URL (the token) to another site, or into a cache or an index.
LINK_HEADERS = {"Referrer-Policy": "no-referrer", "Cache-Control": "no-store", "X-Robots-Tag": "noindex"}


@bp.get("/cycles/<cycle_id>/board")
def show_board(cycle_id):
    """Shows a page of a cycle's wallboard: the summary first, then its objectives a screenful at a time."""
    db = get_db()
    cycle = cycles.get(db, cycle_id)
    return render_board(db, cycle, url_for("web.show_board", cycle_id=cycle["id"]))


@bp.get("/boards/<token>")
def show_board_link(token):
    """Shows the wallboard a board link opens, to whoever holds the link (no sign-in): the objectives everyone may
    see, whoever is signed in."""
    db = get_db()
    cycle_id = board_links.cycle_of(db, token)
    if cycle_id is None:
        raise PageError(404, "No such board", "This board link does not exist, or an admin revoked it.",
                        headers=LINK_HEADERS.items())
    with visibility.viewing_as(visibility.ANYONE):
        response = make_response(render_board(db, cycles.get(db, cycle_id),
                                              url_for("web.show_board_link", token=token)))
    response.headers.update(LINK_HEADERS)
    return response


def render_board(db, cycle, base):
    """The board page ?page= asks for (1, the summary, when it is past the last: the objectives changed); with
    ?hold=1, without the refresh that turns to the next."""
    asked = request.args.get("page", "1")
    if not (asked.isascii() and asked.isdigit() and len(asked) <= 6):
        raise PageError(400, "Bad page link", "The link's page is not a page number.")
    moment = parse_timestamp(clock.utc_now())
    big = spooled.is_big(report_rows.cycle_objective_count(db, cycle["id"]))
    if big:  # a page of a big cycle would cost its whole report: its summary only (docs/dashboard.md)
        summary = streaming.cycle_summary(db, cycle, moment)
        shown, progress, roots, pages = summary["cycle"], summary["progress"], [], []
    else:
        report = alignment.cycle_report(db, cycle, moment)
        shown, progress, roots = report["cycle"], report["progress"], report["objectives"]
        pages = packed(roots)
    total = 1 + len(pages)
    number = int(asked) if 1 <= int(asked) <= total else 1
    following = number % total + 1
    owners = {row["id"]: row["name"] for row in users.pick_list(db)}
    here = base if number == 1 else f"{base}?page={number}"
    # A person may stop the turning (WCAG's timing adjustable): ?hold=1 is the page without its refresh.
    held = request.args.get("hold") == "1"
    context = {"cycle": shown, "progress": progress, "number": number, "total": total, "big": big,
               "refresh": None if held else
               f"{REFRESH_SECONDS}; url={base if following == 1 else f'{base}?page={following}'}",
               "hold": here if held else f"{base}?page={number}&hold=1", "held": held,
               "owners": owners, "statuses": status_bar(shown["status_counts"])}
    if number == 1:
        context["off_track"] = off_track(roots)
        line = None if big else timelines.cycle_progress(db, cycle, moment.date())
        context["chart"] = None if line is None else charts.progress_chart(
            line["points"], line["first"], line["last"], line["expected"], moment.date())
    else:
        context["rows"] = pages[number - 2]
    return render_template("board.html", **context)


def status_bar(counts):
    return charts.status_bar([(status, counts.get(status, 0)) for status in wording.STATUS_WORDS],
                             wording.STATUS_WORDS)


def off_track(roots):
    """The report's off-track key results, each with its objective, in the report's order."""
    return [(objective, key_result) for objective in alignment.flattened(roots)
            for key_result in objective["key_results"] if key_result["status"] == "off_track"]


def with_depth(nodes, depth=0):
    for node in nodes:
        yield node, depth
        yield from with_depth(node["children"], depth + 1)


def packed(roots, budget=ROWS_PER_PAGE):
    """The objectives in the report's order (aligned ones after their parent, indented by depth) as pages of at
    most budget rows: each part is (objective, depth, its key results on this page, whether it is continued from
    the page before). An objective that fits on a page is never split (it starts the next page instead); one
    with more key results than a page holds fills the page and goes on over the pages after."""
    pages, page, used = [], [], 0
    for objective, depth in with_depth(roots):
        results, start = objective["key_results"], 0
        while True:
            left = len(results) - start
            # All of it when it fits on a page of its own, else its heading and a key result at least.
            needed = 1 + (left if 1 + left <= budget else min(1, left))
            if page and used + needed > budget:
                pages.append(page)
                page, used = [], 0
            taken = results[start:start + budget - used - 1]
            page.append((objective, depth, taken, start > 0))
            used += 1 + len(taken)
            start += len(taken)
            if start >= len(results):
                break
    if page:
        pages.append(page)
    return pages


# --- the Board links page -----------------------------------------------------------------------------------


def render_links(form=None, errors=None, made=None, status=200):
    db = get_db()
    chosen = form or {"cycle_id": request.args.get("cycle_id", ""), "label": ""}
    return render_template("board-links.html", links=board_links.listed(db), cycles=cycles.pick_list(db),
                           form=chosen, errors=errors or {}, made=made,
                           label_max=board_links.LABEL_MAX), status


@bp.get("/board-links")
@sessions.board_managers_only
def show_board_links():
    """Lists the board links, with a form to make one."""
    return render_links()


@bp.post("/board-links")
@sessions.board_managers_only
def make_board_link():
    """Makes a board link to a cycle's wallboard and shows its URL, this once."""
    db = get_db()
    form = {"cycle_id": request.form.get("cycle_id", ""), "label": " ".join(request.form.get("label", "").split())}
    errors = {}
    if not form["label"]:
        errors["label"] = "Name the link, such as the room its TV is in."
    elif len(form["label"]) > board_links.LABEL_MAX:
        errors["label"] = f"Keep the name to {board_links.LABEL_MAX} characters."
    if not cycles.exists(db, form["cycle_id"]):
        errors["cycle_id"] = "Choose one of the cycles."
    if errors:
        return render_links(form, errors, status=400)
    _, token = board_links.create(db, form["cycle_id"], form["label"], access.person_id())
    made = {"label": form["label"], "url": proxies.link_to("web.show_board_link", token=token)}
    return render_links(made=made)


@bp.route("/board-links/<link_id>/revoke", methods=["GET", "POST"])
@sessions.board_managers_only
def revoke_board_link(link_id):
    """Asks before revoking a board link, and revokes it: its URL opens nothing from then on."""
    db = get_db()
    link = board_links.get(db, link_id)
    if request.method == "GET":
        return confirm_delete(f"Revoke {link['label']}", f"the board link “{link['label']}” to "
                              f"{link['cycle_name'] or 'an unnamed cycle'}",
                              ["A TV showing it shows “No such board” at its next page."],
                              url_for("web.show_board_links"))
    board_links.revoke(db, link_id)
    return redirect(url_for("web.show_board_links"), 303)
