"""The dashboard's pages: / (your week, or the cycles), /cycles, /cycles/<id> (also as a wallboard and as
CSV), /keyresults/<id> (okr.web.sign_in_pages has signing in, okr.web.account_pages the account and people).

The app may be mounted under a prefix in another WSGI app (DispatcherMiddleware at
/okr, say): every link, form, redirect and static URL is built with url_for or
request.script_root, never a bare "/".
"""
import base64
import binascii
import gzip
import hashlib
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

from urllib.parse import unquote, urlsplit

from flask import (Blueprint, current_app, g, make_response, redirect, render_template, request, stream_template,
                   url_for)
from markupsafe import Markup

from .. import clock, progress, proxies
from ..accounts import access, passwords, sessions
from ..db import get_db
from ..errors import Invalid, NotFound
from ..progress import parse_timestamp
from ..records import cycle_details_json
from ..reports import alignment, quality, review, spooled, streaming, timelines, your_week
from ..rules import body_schemas, quantities
from ..rules.ids import MAX_ROW_ID, UUID_RE
from ..store import checkins, cycles, key_results, locks, objectives, sources, teams, users
from ..store import reports as report_rows
from ..store import timelines as stored_timelines
from ..transfer.export import cycle_csv_bytes, write_cycle_csv
from . import charts, forms, wording
from . import service_index
from .errors import PageError
from .tree import Rows, review_html

bp = Blueprint("web", __name__, template_folder="templates", static_folder="static", static_url_path="/static")

CYCLES_PER_PAGE = 20
SPARK_POINTS = 12
HISTORY_ROWS = 100
QUALITY_SHOWN = 100  # findings listed in a cycle page's Quality panel; the count says how many there are in all
STATIC = Path(__file__).parent / "static"
# Changes with the static files, so that their long cache life never serves an old one.
STYLE_VERSION = hashlib.sha256(b"".join(path.read_bytes() for path in sorted(STATIC.glob("*.*")))).hexdigest()[:12]
CHECKIN_FIELDS = ("value", "done", "confidence", "comment", "confirmed")
STATES = ("current", "upcoming", "finished")  # the cycles page's groups, in order
# The rules' limits that forms state (maxlength, hints), so that a page says what the rule checks.
LIMITS = {"name": body_schemas.NAME_MAX, "group_name": body_schemas.GROUP_NAME_MAX, "comment": body_schemas.COMMENT_MAX,
          "password_min": passwords.MIN_LENGTH, "password_max": passwords.MAX_LENGTH}


@bp.app_context_processor
def page_globals():
    return {
        "wording": wording,
        "csrf_token": sessions.csrf_token,
        "style_version": STYLE_VERSION,
        "signed_in": sessions.current_actor,
        "signed_out": signed_out,
        "may_write": lambda: not signed_out() and access.may_write(page_actor(), "POST"),
        "may_manage_people": lambda: not signed_out() and access.may_manage_people(page_actor()),
        "may_manage_connections": lambda: not signed_out() and access.may_manage_connections(page_actor()),
        "may_see_sources": lambda: not signed_out() and access.may_see_sources(page_actor()),
        "may_change": lambda: not signed_out() and access.may_write(page_actor(), "POST") and
        g.get("closed_cycle") is None,
        "closed_cycle": lambda: g.get("closed_cycle"),
        "may_reopen": lambda: not signed_out() and access.may_reopen_cycles(page_actor()),
        "has_endpoint": has_endpoint,
        "service_root": proxies.service_root,
        "limits": LIMITS,
    }


@bp.app_template_filter("quantity")
def quantity_filter(decimal_text, unit=None, position=None):
    """{{ value|quantity(kr.unit, kr.unit_position) }}: a stored decimal as people read it ("$42,000", "12 ms")."""
    return quantities.shown(decimal_text, unit, position)


def mark_closed(db, cycle_id):
    """Draws this page as one of a cycle: when it is closed, a note says so (who, when) and may_change() is false,
    so that no control offers a change the lock would refuse."""
    g.closed_cycle = locks.closed_cycle(db, cycle_id)


def signed_out():
    """Whether a sign-in is needed and nobody is signed in: the login page, or an error page, seen signed out."""
    return sessions.current_actor() is None and sessions.login_required()


def page_actor():
    """Who a page is drawn for: the request's actor, or on a page anyone may open (signing in, an error page),
    the session's; None while the service is open."""
    return access.current_actor() or sessions.current_actor()


def has_endpoint(name):
    """Whether a view is registered under this endpoint (pages another module adds may not be there yet)."""
    return name in current_app.view_functions


def now():
    return parse_timestamp(clock.utc_now())


@bp.get("/")
def show_dashboard():
    """Shows a person their week, anyone else the cycles; the JSON index for API clients."""
    if not access.wants_page():
        body = service_index.show_index(request.script_root)
    elif access.person_id() is not None:
        body = render_week()
    else:
        body = cycles_page("web.show_dashboard")
    response = make_response(body)
    response.vary.add("Accept")  # one URL, two answers: a cache must keep them apart
    return response


@bp.get("/cycles")
def show_cycles():
    """Shows the cycles, current, upcoming and finished, newest first, with their dates and progress."""
    return cycles_page("web.show_cycles")


def render_week(checked=None, form=None, errors=None, confirm=None):
    """The signed-in person's week; checked, form and errors: a refused inline check-in's key result id, its
    typed values and the refusals, shown beside its fields; confirm: the value to confirm (far_jump)."""
    moment = now()
    data = your_week.week(get_db(), access.person_id(), moment)
    return render_template("week.html", **data, checked=checked, form=form or {}, errors=errors or {},
                           confirm=confirm, moment=moment)


def cycles_page(endpoint):
    """The cycles list, 20 a page (before: the position the page starts under), grouped by state."""
    db = get_db()
    before = request.args.get("before", "")
    if before and not (before.isascii() and before.isdigit() and len(before) <= 19):
        raise PageError(400, "Bad page link", "The link's 'before' is not a cycle position.")
    listed = cycles.newest_first(db, min(int(before), MAX_ROW_ID) if before else MAX_ROW_ID, CYCLES_PER_PAGE + 1)
    older = listed[CYCLES_PER_PAGE]["seq"] + 1 if len(listed) > CYCLES_PER_PAGE else None
    moment = now()
    summaries = [streaming.cycle_summary(db, cycle, moment) for cycle in listed[:CYCLES_PER_PAGE]]
    for summary in summaries:  # the cycle page's bar of key results by status, from the report's own counts
        counts = summary["cycle"]["status_counts"]
        summary["status_bar"] = charts.status_bar([(s, counts.get(s, 0)) for s in wording.STATUS_WORDS],
                                                  wording.STATUS_WORDS)
    groups = [(state, [c for c in summaries if c["cycle"]["state"] == state]) for state in STATES]
    return render_template("dashboard.html", cycles=summaries, groups=[g for g in groups if g[1]], older=older,
                           endpoint=endpoint)


@bp.get("/cycles/<cycle_id>")
def show_cycle(cycle_id):
    """Shows a cycle's review: its facts, a legend, filters, and its objectives' and key results' rows a page of
    top objectives at a time (okr.reports.review)."""
    db = get_db()
    cycle = cycles.get(db, cycle_id)
    if request.args.get("board", "") not in ("", "0"):  # an old wallboard link: the wallboard has its own page
        return redirect(url_for("web.show_board", cycle_id=cycle["id"]), 302)
    board = False
    chosen = {name: filter_arg(name) for name in ("team_id", "assignee_id", "owner_id")}
    choice = review.Choice(chosen["owner_id"], status_args(), words_arg())
    after = page_arg()
    if not spooled.is_big(report_rows.cycle_objective_count(db, cycle["id"], chosen["team_id"],
                                                            chosen["assignee_id"])):
        return render_template("cycle.html", **cycle_page(db, cycle, chosen, choice, after, board))
    # A big cycle's page streams: its top goes out at once, the rest as the whole cycle's figures are read (in
    # one of the report slots, which bound how many such reads run at once; given back once the page is sent).
    held, app, given_back = spooled.slot(), current_app._get_current_object(), []

    def give_back():  # once, when the page is sent or abandoned (outside the request: in its own app context)
        if not given_back:
            given_back.append(True)
            with app.app_context():
                held.__exit__(None, None, None)

    held.__enter__()
    try:
        response = current_app.response_class(stream_template(
            "cycle.html", **cycle_page(db, cycle, chosen, choice, after, board, big=True)), mimetype="text/html")
    except BaseException:
        give_back()
        raise
    response.call_on_close(give_back)
    return response


class Lazy:
    """A value worked out when a page first reads it (make()): a streamed page sends what comes before first."""

    def __init__(self, make):
        self.make, self.made = make, False

    def value(self):
        if not self.made:
            self.found, self.made = self.make(), True
        return self.found

    def __getattr__(self, name):
        if name in ("make", "made", "found"):
            raise AttributeError(name)
        return self.value()[name]

    def __bool__(self):
        return bool(self.value())

    def __html__(self):
        return Markup(self.value() or "")


def cycle_page(db, cycle, chosen, choice, after, board=False, big=False):
    """The review page's context, its costly parts Lazy; big: a cycle whose burn-up is read as its check-ins
    stream (a point a week), too big to replay them in memory."""
    moment = now()
    mark_closed(db, cycle["id"])
    kept = {"team_id": chosen["team_id"], "assignee_id": chosen["assignee_id"]}
    # What tells whether the figures and the burn-up kept still hold: read once for both (a big cycle's walks
    # millions of check-ins).
    fingerprint = Lazy(lambda: stored_timelines.cycle_fingerprint(db, cycle["id"]))
    found = Lazy(lambda: review.figures(db, cycle, moment, **kept, choice=choice, fingerprint=fingerprint.value()))
    team_rows, user_rows = teams.pick_list(db), users.pick_list(db)

    def rows():
        shown = review.page(db, cycle, moment, after, **kept, choice=choice, found=found.value() if choice else None)
        nodes = shown["objectives"]
        owners = {k["owner_id"] for node in alignment.flattened(nodes) for k in node["key_results"] if k["owner_id"]}
        drawn = Rows(team_names={row["id"]: row["name"] for row in team_rows},
                     user_names={row["id"]: row["name"] for row in user_rows},
                     user_roles=users.roles_of(db, owners),
                     sparks=report_rows.recent_checkins(db, review.key_result_ids(nodes), SPARK_POINTS),
                     now=moment, root=request.script_root, link_objectives=has_endpoint("web.show_objective"),
                     fold=not (choice or kept["team_id"] or kept["assignee_id"]))
        return {"tree": review_html(nodes, drawn), "objectives": nodes,
                "next_token": None if shown["after"] is None else page_token(shown["after"]),
                "previous_token": None if shown["before"] is None else page_token(shown["before"])}

    def chart():
        line = timelines.cycle_progress(db, cycle, moment.date(), **kept, streamed=big,
                                        fingerprint=fingerprint.value())
        return None if line is None else charts.progress_chart(line["points"], line["first"], line["last"],
                                                               line["expected"], moment.date())

    def checked():  # the whole cycle's, whatever the filters
        found = quality.cycle_checks(db, cycle, moment.date())
        return {"count": len(found), "shown": found[:QUALITY_SHOWN]}

    query = {**{name: value for name, value in chosen.items() if value}, "status": sorted(choice.statuses),
             "q": choice.words and request.args.get("q", "").strip()}
    elapsed = progress.figure(progress.elapsed(cycle["starts_on"], cycle["ends_on"], moment.date()))
    return dict(
        cycle=cycle_details_json(cycle, moment.date()), report=found, chosen=chosen, choice=choice,
        words=request.args.get("q", "").strip(), teams=team_rows, users=user_rows, view=Lazy(rows), board=board,
        chart=Lazy(chart), big=big, moment=moment, quality=Lazy(checked),
        query={name: value for name, value in query.items() if value},
        time_gone=wording.time_gone(cycle["starts_on"], cycle["ends_on"], moment.date(), elapsed),
        statuses=Lazy(lambda: charts.status_bar(list(found.cycle["status_counts"].items()), wording.STATUS_WORDS)),
        per_page=review.PER_PAGE, spark_points=SPARK_POINTS)


def status_args():
    """The statuses a page keeps (status=at_risk&status=off_track); a 400 page for any other word."""
    found = request.args.getlist("status")
    for status in found:
        if status not in wording.STATUS_WORDS:
            raise PageError(400, "Bad filter", "The status in this link is not one of "
                            + ", ".join(s for s in wording.STATUS_WORDS) + ".")
    return found


WORDS_MAX = 200  # characters of a page's text filter


def words_arg():
    """The text filter (q), trimmed; a 400 page when it is too long to be a name."""
    words = request.args.get("q", "").strip()
    if len(words) > WORDS_MAX:
        raise PageError(400, "Bad filter", f"The text to look for is longer than {WORDS_MAX} characters.")
    return words


def page_token(seq):
    """A page's place as a link carries it: the seq it starts after, in URL-safe base64 (0: the first page)."""
    return base64.urlsafe_b64encode(str(seq).encode("ascii")).decode("ascii").rstrip("=") if seq else ""


def page_arg():
    """The seq a page starts after, from its page token (none: 0, the first page); a 400 page for a bad one."""
    token = request.args.get("page", "")
    if not token:
        return 0
    try:
        digits = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True).decode("ascii")
    except (binascii.Error, ValueError):
        digits = ""
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 19):
        raise PageError(400, "Bad page link", "The link's page is not a place in this cycle.")
    return min(int(digits), MAX_ROW_ID)


@bp.get("/cycles/<cycle_id>.csv")
def download_cycle_csv(cycle_id):
    """Sends a cycle's key results as CSV: the bytes `okr export --format csv --cycle ID` writes."""
    db = get_db()
    cycle = cycles.get(db, cycle_id)
    moment = now()  # the clock the CLI's export and reports use
    headers = {"Content-Disposition": f'attachment; filename="{csv_file_name(cycle)}.csv"'}
    if spooled.is_big(report_rows.cycle_objective_count(db, cycle["id"])):
        spool, size, _ = spooled.build(lambda out: write_cycle_csv(db, cycle["id"], moment, out), "exports")
        return spooled.file_response(spool, size, "text/csv", headers)
    response = make_response(cycle_csv_bytes(db, cycle_id, moment))
    response.mimetype = "text/csv"
    response.charset = "utf-8"
    response.headers.update(headers)
    return response


def csv_file_name(cycle):
    """A file name from a cycle's name (letters, digits, dots, dashes and underscores), else its id."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", cycle["name"] or "").strip("-.")
    return name[:100] or cycle["id"]


def filter_arg(name):
    """A filter's value: None when empty or absent; a 400 page when it is not an id."""
    value = request.args.get(name, "")
    if not value:
        return None
    if not UUID_RE.fullmatch(value):
        raise PageError(400, "Bad filter", f"The {name.replace('_id', '')} in this link is not a valid id.")
    return value


@bp.get("/keyresults/<key_result_id>")
def show_key_result(key_result_id):
    """Shows a key result's history as a table and a chart, with a check-in form."""
    return render_key_result(key_result_id)


@bp.post("/keyresults/<key_result_id>")
def check_in_key_result(key_result_id):
    """Records a check-in from the form, through the store's own check-in; one that moves the value very far
    (quantities.far_jump) comes back to be confirmed first, unless the form confirms that very value."""
    form = {name: request.form.get(name, "") for name in CHECKIN_FIELDS}
    db = get_db()
    node = alignment.key_result_report(db, key_result_id, now())
    if node is None:
        raise NotFound("key result")
    try:
        body = forms.checkin_values(form, node)
        new = Decimal(body["value"])
        if (quantities.far_jump(node["type"], node["start_value"], node["current_value"], node["target_value_min"],
                                node["target_value_max"], new) and not confirmed(form["confirmed"], new)):
            if back_to_week():
                return render_week(checked=key_result_id, form=form, confirm=body["value"])
            return render_key_result(key_result_id, form=form, confirm=body["value"])
        checkins.check_in(db, key_result_id, body["value"], body.get("confidence"), body["comment"],
                          access.person_id())
    except Invalid as error:  # the form's refusals, worded for people, and the store's
        if back_to_week():
            return render_week(checked=key_result_id, form=form, errors=error.fields), 400
        return render_key_result(key_result_id, form=form, errors=error.fields), 400
    back = next_path()
    if back is not None:
        return redirect(request.script_root + back, 303)
    return redirect(url_for("web.show_key_result", key_result_id=key_result_id), 303)


def confirmed(text, value):
    """Whether the form's hidden confirmed field holds this very value: "Save anyway" confirms what was shown,
    not whatever is typed after."""
    try:
        return Decimal(text) == value
    except (InvalidOperation, ValueError):
        return False


def next_path():
    """The form's `next`, a path in this app (anything else is /), or None when the form sent none."""
    target = request.form.get("next", "")
    return local_path(target) if target else None


def local_path(target):
    """target when it is a path in this app, else /: a login must never send anyone elsewhere.

    Nor out of the app's own prefix when it is mounted under one: a dot segment
    (/../, also spelt %2e%2e) would climb out of it once a browser resolves it.
    """
    if any(ord(character) < 0x20 or ord(character) == 0x7F for character in target):
        return "/"  # urlsplit would drop them, and a header cannot carry them
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    if any(unquote(segment) in (".", "..") for segment in parts.path.split("/")):
        return "/"
    return target


def back_to_week():
    """Whether a check-in came from Your week's inline form (its next is /) of a signed-in person."""
    back = next_path()
    return back is not None and urlsplit(back).path == "/" and access.person_id() is not None


def render_key_result(key_result_id, form=None, errors=None, confirm=None):
    db = get_db()
    moment = now()
    node = alignment.key_result_report(db, key_result_id, moment)
    if node is None:
        raise NotFound("key result")
    objective = objectives.get(db, node["objective_id"])
    owner = users.name_of(db, node["owner_id"])
    # Made a viewer since they were given it: the key result keeps them but wants a new owner.
    owner_is_viewer = owner is not None and users.role_of(db, node["owner_id"]) not in key_results.OWNER_ROLES
    history = checkins.latest(db, key_result_id, HISTORY_ROWS + 1)
    shown = history[:HISTORY_ROWS]
    cycle = cycles.get(db, objective["cycle_id"])
    mark_closed(db, cycle["id"])
    # A key result always has a first check-in, unless rows were deleted behind the API's back.
    line = timelines.key_result_timeline(db, node, cycle["starts_on"], cycle["ends_on"])
    chart = None if line is None else charts.value_chart(
        line["points"], line["first"], line["last"], node["type"], node["target_value_min"],
        node["target_value_max"], line["expected"], moment.date(), node["unit"], node["unit_position"],
        line["sourced"])
    if form is None:
        form = {"value": "", "confidence": wording.percent(node["confidence"]), "comment": "",
                "done": "1" if Decimal(node["current_value"]) >= 1 else ""}  # a milestone's box says where it is
    return render_template(
        "keyresult.html", kr=node, objective=objective, history=shown, more=len(history) > HISTORY_ROWS,
        chart=chart, form=form, errors=errors or {}, moment=moment, owner=owner, confirm=confirm,
        owner_is_viewer=owner_is_viewer, source=sources.of_key_result(db, key_result_id),
        by_source=sources.evidence_names(db, key_results.get(db, key_result_id)["seq"]),
    )


# Pages this big or more go out gzipped to clients that take it (every browser): a big cycle's page is
# megabytes of HTML, and a tenth of that compressed (docs/design.md, What was chosen).
GZIP_FROM_BYTES = 16 * 1024


@bp.after_app_request
def compress_pages(response):
    """Gzips a big HTML page for a client that accepts gzip."""
    if (response.mimetype == "text/html" and response.status_code == 200 and not response.direct_passthrough
            and not response.is_streamed and "Content-Encoding" not in response.headers):
        response.vary.add("Accept-Encoding")
        if "gzip" in request.accept_encodings and (response.content_length or 0) >= GZIP_FROM_BYTES:
            response.set_data(gzip.compress(response.get_data(), compresslevel=GZIP_LEVEL, mtime=0))
            response.headers["Content-Encoding"] = "gzip"
    return response


# zlib's level 1 compresses a cycle page to about a tenth in a few milliseconds; higher levels gain little more.
GZIP_LEVEL = 1
