"""The cycle edit pages: /cycles/new, /cycles/<id>/edit, /cycles/<id>/delete and /cycles/<id>/copy.

Each form's fields are the API's (name, starts_on, ends_on), checked by okr.rules.body_schemas through
okr.web.editing.load and written by okr.store.cycles; only editors and admins open them (sessions.editors_only).
"""
import calendar
import re
from datetime import date, timedelta
from functools import partial

from flask import redirect, render_template, request, url_for

from ..accounts import access, sessions
from ..db import get_db
from ..errors import Invalid
from ..reports import closing
from ..rules.body_schemas import cycle_schema, cycle_update_schema
from ..store import cycles, visibility
from . import editing
from .views import bp, now

FIELDS = ("name", "starts_on", "ends_on")
LABELS = {"name": "the name", "starts_on": "the start date", "ends_on": "the end date"}
DOOMED_WORDS = {"objectives": "objective", "key_results": "key result", "checkins": "check-in"}
# The rules' refusals of a date, as a person at the form reads them.
DATE_WORDS = {
    'Not a valid date: send one such as "2026-10-01".': "Enter a date such as 2026-10-01.",
    "Must not be before starts_on.": "Choose an end date on or after the start date.",
}
QUARTER = re.compile(r"(\d{4})(\s*-?\s*)Q([1-4])")  # "2026 Q4", "2026-Q4", "2026Q4"


def shown(cycle):
    """A stored cycle's fields as its form shows them (a missing date as "")."""
    return {"name": cycle["name"], "starts_on": cycle["starts_on"] or "", "ends_on": cycle["ends_on"] or ""}


def checked(schema, form):
    """The form's values as the schema loads them (an empty date is none); Invalid, worded for people."""
    body = {"name": form["name"], "starts_on": editing.optional(form["starts_on"]),
            "ends_on": editing.optional(form["ends_on"])}
    try:
        return editing.load(schema, body)
    except Invalid as error:
        raise Invalid({field: DATE_WORDS.get(text, text) for field, text in error.fields.items()}) from None


def render_form(cycle=None, form=None, errors=None, conflict=None, revision=None, original=None):
    return render_template("cycle-form.html", cycle=cycle, form=form or {}, errors=errors or {},
                           conflict=conflict, revision=revision, original=original)


@bp.route("/cycles/new", methods=["GET", "POST"])
@sessions.editors_only
def new_cycle():
    """Shows the new cycle form, and creates the cycle from it."""
    if request.method == "GET":
        return render_form()
    form = editing.typed(FIELDS)
    try:
        values = checked(cycle_schema, form)
    except Invalid as error:
        return render_form(form=form, errors=error.fields), 400
    cycle = cycles.create(get_db(), values["name"], values["starts_on"], values["ends_on"])
    return redirect(url_for("web.show_cycle", cycle_id=cycle["id"]), 303)


@bp.route("/cycles/<cycle_id>/edit", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def edit_cycle(cycle_id):
    """Shows a cycle's form, and saves its name and dates unless someone changed them meanwhile."""
    db = get_db()
    stored = cycles.get(db, cycle_id)

    def save(values):
        cycles.update(db, cycle_id, values)
        return redirect(url_for("web.show_cycle", cycle_id=cycle_id), 303)

    return editing.edit_page(FIELDS, shown(stored), stored["revision"], partial(render_form, stored),
                             partial(checked, cycle_update_schema), save, LABELS)


@bp.route("/cycles/<cycle_id>/delete", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def delete_cycle(cycle_id):
    """Asks before deleting a cycle (saying what goes with it), and deletes it."""
    db = get_db()
    cycle = cycles.get(db, cycle_id)
    if request.method == "GET":
        name = cycle["name"] or "Unnamed cycle"
        hidden = len(visibility.hidden_ids(db, cycle_id))  # deleted too: said, as the cycle's page says it
        return editing.confirm_delete(f"Delete {name}", f"the cycle “{name}”",
                                      [editing.doomed_sentence(cycles.doomed(db, cycle_id), DOOMED_WORDS),
                                       hidden and f"They include {editing.counted(hidden, 'objective')} you cannot "
                                                  "see."],
                                      url_for("web.edit_cycle", cycle_id=cycle_id))
    cycles.delete(db, cycle_id)
    return redirect(url_for("web.show_cycles"), 303)


@bp.route("/cycles/<cycle_id>/copy", methods=["GET", "POST"])
@sessions.editors_only
def copy_cycle(cycle_id):
    """Shows the form for a copy of a cycle (the next one, its name and dates suggested, what goes picked), and
    makes it with the objectives and key results picked."""
    db = get_db()
    source = cycles.get(db, cycle_id)
    if request.method == "GET":
        return copy_form(db, source, suggested(source))
    form = editing.typed(FIELDS)
    picks = posted_picks()
    try:
        values = checked(cycle_update_schema, form)
    except Invalid as error:
        return copy_form(db, source, form, picks, error.fields), 400
    objective_ids, key_result_ids = picks or (None, None)
    cycle = cycles.copy(db, cycle_id, values, author_id=access.person_id(), objective_ids=objective_ids,
                        key_result_ids=key_result_ids)
    held = cycles.doomed(db, cycle["id"])  # what the new cycle holds: the copies
    copied = (f"{editing.counted(held['objectives'], 'objective')} and "
              f"{editing.counted(held['key_results'], 'key result')} were")
    return render_template("cycle-copy.html", source=source, cycle=cycle, copied=copied)


def copy_form(db, source, form, picks=None, errors=None):
    """The copy form, its boxes checked as picks says (None: as okr.reports.closing.carry_choices says), which is
    read only here: a copy made needs no report of the source."""
    choices = closing.carry_choices(db, source, now())
    objective_ids, key_result_ids = picks or default_picks(choices)
    return render_template("cycle-copy.html", source=source, form=form, errors=errors or {}, choices=choices,
                           objective_ids=objective_ids, key_result_ids=key_result_ids)


def default_picks(choices):
    """The ids checked at first: okr.reports.closing.carry_choices says which."""
    return ({node["id"] for node in choices if node["carry"]},
            {key_result["id"] for node in choices for key_result in node["key_results"] if key_result["carry"]})


def posted_picks():
    """The ids of the objectives and key results checked in the posted form, or None when it sent no boxes (a form
    without them copies everything, as before there were boxes; with them, none checked is a pick too)."""
    if not request.form.get("picked"):
        return None
    return set(request.form.getlist("objective")), set(request.form.getlist("key_result"))


def suggested(source):
    """The copy form's fields: the next quarter's name ("2026 Q4" → "2027 Q1") or "<name> (copy)", and the
    dates after the source's (see next_dates)."""
    name = source["name"]
    match = QUARTER.fullmatch(name.strip())
    if match:
        year, quarter = int(match.group(1)), int(match.group(3))
        year, quarter = (year + 1, 1) if quarter == 4 else (year, quarter + 1)
        name = f"{year}{match.group(2)}Q{quarter}"
    elif name:
        name = f"{name} (copy)"
    starts_on, ends_on = next_dates(source["starts_on"], source["ends_on"])
    return {"name": name, "starts_on": starts_on, "ends_on": ends_on}


def next_dates(starts_on, ends_on):
    """The dates of the cycle after one: it starts the day after this one ends; when this one has both dates
    it lasts as long (as many whole months when this one is whole months, so a quarter follows a quarter,
    else as many days). ("", "") when this one has no end."""
    if not ends_on:
        return "", ""
    end = date.fromisoformat(ends_on)
    start = end + timedelta(days=1)
    if not starts_on:
        return start.isoformat(), ""
    first = date.fromisoformat(starts_on)
    if first.day == 1 and end.day == calendar.monthrange(end.year, end.month)[1]:
        months = (end.year - first.year) * 12 + end.month - first.month  # whole months, less one
        last_month = start.year * 12 + start.month - 1 + months
        year, month = divmod(last_month, 12)
        new_end = date(year, month + 1, calendar.monthrange(year, month + 1)[1])
    else:
        new_end = start + (end - first)
    return start.isoformat(), new_end.isoformat()
