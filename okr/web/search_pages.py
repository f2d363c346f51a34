"""The Search page, /search?q=: what the header's search form finds across cycles (okr.store.search's rule and
order), grouped by kind, each a link to its page; everyone signed in reads it, as they read the API's search."""
from flask import render_template, request, url_for

from ..db import get_db
from ..errors import Invalid
from ..store import search
from .account_pages import after_arg
from .views import bp

RESULTS_PER_PAGE = 50
HEADINGS = {"objective": "Objectives", "key_result": "Key results", "team": "Teams", "user": "People"}
# Where each kind has its page; a person's is their activity.
LINKS = {"objective": ("web.show_objective", "objective_id"), "key_result": ("web.show_key_result", "key_result_id"),
         "team": ("web.show_team", "team_id"), "user": ("web.show_activity", "person_id")}


def link_to(row):
    endpoint, argument = LINKS[row["kind"]]
    return url_for(endpoint, **{argument: row["id"]})


@bp.get("/search")
def show_search():
    """Shows what matches q, by kind; with no q, just the form; a refused q beside the field."""
    text = request.args.get("q", "")
    if not text.strip() and len(text) <= search.LONGEST_QUERY:
        return render_template("search.html", q=text, groups=[], searched=False, more=None, error=None)
    try:
        query = search.query_text(text)
    except Invalid as refused:
        return render_template("search.html", q=text, groups=[], searched=False, more=None,
                               error=refused.fields["q"]), 400
    rows = search.page(get_db(), query, after_arg(), RESULTS_PER_PAGE + 1)
    more = rows[RESULTS_PER_PAGE - 1]["position"] if len(rows) > RESULTS_PER_PAGE else None
    rows = rows[:RESULTS_PER_PAGE]
    groups = [(kind, HEADINGS[kind], [{**row, "href": link_to(row)} for row in rows if row["kind"] == kind])
              for kind in search.KINDS]
    return render_template("search.html", q=text, groups=[group for group in groups if group[2]], searched=True,
                           more=None if more is None else url_for("web.show_search", q=query, after=more), error=None)
