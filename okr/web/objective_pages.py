"""The objective pages: /objectives/<id> (its own page), /objectives/new, /objectives/<id>/edit and
/objectives/<id>/delete.

Each form's fields are the API's (name, description, team_id, assignee_id, parent_objective_id, cycle_id),
but for "kind", one choice that stands for the API's is_company and is_personal. The values are checked by
okr.rules.body_schemas through okr.web.editing.load and written by okr.store.objectives; only editors and admins
open the forms (sessions.editors_only).
"""
from functools import partial

from flask import redirect, render_template, request, url_for
from markupsafe import Markup

from ..accounts import sessions
from ..db import get_db
from ..errors import Invalid, NotFound
from ..reports import alignment, quality, timelines
from ..rules.body_schemas import objective_schema, objective_update_schema
from ..store import cycles, objectives, teams, users
from . import charts, editing
from .tree import key_result_html
from .views import bp, mark_closed, now

FIELDS = ("name", "description", "kind", "team_id", "assignee_id", "parent_objective_id", "cycle_id", "visibility")
# The form's kind, and the API's (is_company, is_personal) it stands for.
KINDS = {"company": (True, False), "team": (False, False), "personal": (False, True)}
KIND_WORDS = {"company": "Company", "team": "Team", "personal": "Personal"}
# Who may see it (okr.store.visibility), as the form offers it.
VISIBILITY_WORDS = {"everyone": "Everyone", "team": "Its team", "private": "Only its people"}
LABELS = {"name": "the name", "description": "the description", "kind": "the kind", "team_id": "the team",
          "assignee_id": "the owner", "parent_objective_id": "the parent objective", "cycle_id": "the cycle",
          "visibility": "who may see it"}
DOOMED_WORDS = {"key_results": "key result", "checkins": "check-in"}
# The field beside which the form shows each quality check's hint; the others (how many key results) head the form.
ADVICE_FIELDS = {"objective_without_owner": "assignee_id"}
# The most parent choices a form lists; more, and it shows a search box (parent_q) to narrow them.
PARENT_CHOICES = 200
REFERENCE_WORDS = {
    "team_id": "Choose a team from the list.",
    "assignee_id": "Choose a person from the list.",
    "parent_objective_id": "Choose an objective from the list.",
    "cycle_id": "Choose a cycle from the list.",
}


def kind_of(row):
    """The form's kind of a stored objective (its is_company and is_personal)."""
    return "company" if row["is_company"] else "personal" if row["is_personal"] else "team"


def shown(row):
    """A stored objective's fields as its form shows them (none as "")."""
    return {"name": row["name"], "description": row["description"] or "", "kind": kind_of(row),
            "team_id": row["team_id"] or "", "assignee_id": row["assignee_id"] or "",
            "parent_objective_id": row["parent_objective_id"] or "", "cycle_id": row["cycle_id"],
            "visibility": row["visibility"]}


def checked(schema, form):
    """The form's values as the schema loads them (kind as is_company and is_personal, "" as none); Invalid with
    a sentence for people beside each wrong field."""
    flags = KINDS.get(form["kind"])
    body = {"name": form["name"], "description": editing.optional(form["description"]),
            "cycle_id": form["cycle_id"].strip(),
            **{name: editing.optional(form[name]) for name in ("team_id", "assignee_id", "parent_objective_id")}}
    if flags is not None:
        body["is_company"], body["is_personal"] = flags
    errors = {}
    try:
        values = editing.load(schema, body, labels={"is_company": "kind", "is_personal": "kind"})
    except Invalid as error:
        errors = error.fields
    if flags is None:
        errors["kind"] = "Choose company, team or personal."
    # Absent from a form opened before it was asked: the stored one stays (None), a new one is everyone's.
    seen_by = form.get("visibility", "")
    if seen_by and seen_by not in VISIBILITY_WORDS:
        errors["visibility"] = "Choose who may see it from the list."
    if errors:
        raise Invalid(errors)
    return {**values, "visibility": seen_by or None}


def stored_refusal(error):
    """The store's refusal of a reference (no such row, a loop) worded for the form."""
    return {field: ("Choose a parent that is not aligned under this objective: this one would make a loop."
                    if "loop" in text else REFERENCE_WORDS.get(field, text))
            for field, text in error.fields.items()}


def parent_choices(db, objective_id, cycle_id, query, keep):
    """The objectives a form offers as the parent, grouped by cycle (the form's cycle first, then the newest):
    [(cycle name, [(id, name)])], with how many there are in all and whether the list is cut.

    Never the objective itself nor one aligned under it (a loop); at most PARENT_CHOICES of them, narrowed to
    names holding query when given; the ids in keep (the present parent) always among them.
    """
    picked, total = objectives.parent_candidates(db, objective_id, cycle_id, query, PARENT_CHOICES)
    present = {row["id"] for row in picked}
    for kept in keep:
        if kept and kept not in present:
            row = objectives.parent_choice(db, kept)
            if row is not None:
                picked.append(row)
                present.add(kept)
    names = {row["id"]: row["name"] or "Unnamed cycle"
             for row in cycles.names_of(db, sorted({row["cycle_id"] for row in picked}))}
    groups = {}
    for row in picked:
        groups.setdefault(row["cycle_id"], []).append((row["id"], row["name"]))
    order = sorted(groups, key=lambda cycle: cycle != cycle_id)  # stable: the form's cycle first
    return [(names.get(cycle, "?"), groups[cycle]) for cycle in order], total, total > PARENT_CHOICES


def choices(db, row, form):
    """The selects' choices besides the parent's: teams, people (the active ones and the present owner), cycles."""
    keep = (form.get("assignee_id", ""), row["assignee_id"] if row is not None else "")
    people = users.choices(db, keep)
    return {
        "teams": [(t["id"], t["name"] or "Unnamed team")
                  for t in teams.pick_list(db)],
        "people": [(u["id"], u["name"] + ("" if u["is_active"] else " (inactive)")) for u in people],
        "cycles": [(c["id"], c["name"] or "Unnamed cycle")
                   for c in cycles.pick_list(db)],
        "visibilities": list(VISIBILITY_WORDS.items()),
    }


def render_form(row=None, form=None, errors=None, conflict=None, revision=None, original=None):
    """The new or edit form of an objective (row: the stored one, None for a new one)."""
    db = get_db()
    form = form or {}
    query = request.args.get("parent_q", "").strip()[:200]
    keep = [form.get("parent_objective_id", ""), row["parent_objective_id"] if row is not None else ""]
    groups, total, cut = parent_choices(db, row["id"] if row is not None else None,
                                        form.get("cycle_id") or (row["cycle_id"] if row is not None else ""),
                                        query, keep)
    advice, notes = {}, []
    if row is not None:  # the checks on the objective as stored
        found = quality.cycle_checks(db, cycles.get(db, row["cycle_id"]), now().date())
        advice, notes = editing.advice(quality.about_objective(found, row["id"]), ADVICE_FIELDS)
    return render_template("objective-form.html", objective=row, form=form, errors=errors or {},
                           advice=advice, advice_notes=notes,
                           conflict=conflict, revision=revision, original=original, kinds=KIND_WORDS,
                           parents=groups, parent_total=total, parent_cut=cut, parent_q=query,
                           parent_shown=sum(len(options) for _, options in groups),
                           parent_search=cut or bool(query), **choices(db, row, form))


@bp.get("/objectives/<objective_id>")
def show_objective(objective_id):
    """Shows an objective: what it is, who owns it, its progress, key results and aligned objectives."""
    db = get_db()
    moment = now()
    creator_id = objectives.get(db, objective_id)["created_by"]  # 404 to whoever may not see it
    report = alignment.objective_report(db, objective_id, moment)
    if report is None:
        raise NotFound("objective")
    node = report["objective"]
    cycle = cycles.get(db, node["cycle_id"])
    mark_closed(db, cycle["id"])
    people = {row["id"]: row["name"] for row in users.names_of(
        db, [node["assignee_id"], creator_id, *(k.get("owner_id") for k in node["key_results"])])}
    team = teams.named(db, node["team_id"])
    parent = objectives.named(db, node["parent_objective_id"])
    links = request.script_root + "/keyresults/"
    key_results = Markup("".join(key_result_html(k, (), moment, links, people) for k in node["key_results"]))
    line = timelines.objective_progress(db, node, moment.date(), cycle["starts_on"], cycle["ends_on"])
    chart = None if line is None else charts.progress_chart(line["points"], line["first"], line["last"],
                                                            line["expected"], moment.date())
    return render_template("objective.html", o=node, kind=KIND_WORDS[kind_of(node)], cycle=cycle, team=team,
                           parent=parent, assignee=people.get(node["assignee_id"]), key_results=key_results,
                           chart=chart, creator=people.get(creator_id),
                           hidden_count=report["hidden_objectives_count"])


@bp.route("/objectives/new", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def new_objective():
    """Shows the new objective form, and creates the objective from it."""
    db = get_db()
    if request.method == "GET":
        cycle_id = request.args.get("cycle_id", "")
        if cycle_id:
            cycles.get(db, cycle_id)
        else:
            cycle_id = cycles.newest_id(db) or ""
        return render_form(form={"kind": "team", "cycle_id": cycle_id, "visibility": "everyone",
                                 "parent_objective_id": request.args.get("parent_objective_id", "")})
    form = editing.typed(FIELDS)
    try:
        values = checked(objective_schema, form)
        row = objectives.create(db, values)
    except Invalid as error:
        return render_form(form=form, errors=stored_refusal(error)), 400
    return redirect(url_for("web.show_objective", objective_id=row["id"]), 303)


@bp.route("/objectives/<objective_id>/edit", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def edit_objective(objective_id):
    """Shows an objective's form, and saves it unless someone changed it meanwhile."""
    db = get_db()
    stored = objectives.get(db, objective_id)

    def save(values):
        try:
            objectives.replace(db, objective_id, values)
        except Invalid as error:
            raise Invalid(stored_refusal(error)) from None
        return redirect(url_for("web.show_objective", objective_id=objective_id), 303)

    return editing.edit_page(FIELDS, shown(stored), stored["revision"], partial(render_form, stored),
                             partial(checked, objective_update_schema), save, LABELS)


@bp.route("/objectives/<objective_id>/delete", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def delete_objective(objective_id):
    """Asks before deleting an objective (saying what goes with it), and deletes it."""
    db = get_db()
    row = objectives.get(db, objective_id)
    if request.method == "GET":
        counts = objectives.doomed(db, objective_id)
        return editing.confirm_delete(
            f"Delete {row['name']}", f"the objective “{row['name']}”",
            [editing.doomed_sentence(counts, DOOMED_WORDS),
             editing.doomed_sentence(counts, {"children": "aligned objective"}, "will lose their parent"
                                     if counts["children"] != 1 else "will lose its parent")],
            url_for("web.edit_objective", objective_id=objective_id))
    objectives.delete(db, objective_id)
    return redirect(url_for("web.show_cycle", cycle_id=row["cycle_id"]), 303)
