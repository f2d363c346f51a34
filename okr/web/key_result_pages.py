"""The key result edit pages: /keyresults/new, /keyresults/<id>/edit and /keyresults/<id>/delete.

Each form's fields are the API's (name, type, target_value_min, target_value_max, current_value, confidence,
owner_id, unit, unit_position, weight, progress_from), checked by okr.rules.body_schemas through okr.web.editing.load and written by
okr.store.key_results; only editors and admins open them (sessions.editors_only). Values and targets are read
as people write them ("$60,000", "60k": okr.web.forms.quantity, with the unit the form gives). As in the API, a
changed current value or confidence is recorded as a check-in.
"""
from decimal import Decimal
from functools import partial

from flask import redirect, render_template, request, url_for

from ..accounts import access, sessions
from ..db import get_db
from ..errors import Invalid
from ..reports import quality
from ..rules.body_schemas import key_result_edit_schema, key_result_schema, unit_schema
from ..store import cycles, key_results, objectives, users
from . import editing, forms, wording
from .views import bp, now

FIELDS = ("name", "type", "target_value_min", "target_value_max", "current_value", "confidence", "owner_id", "unit",
          "unit_position", "weight", "progress_from")
UNIT_FIELDS = ("unit", "unit_position")
POSITIONS = [("after", "After the number: 12 ms, 1,250 users, 40%"), ("before", "Before the number: $60,000")]
SOURCES = [("measure", "Its measure: the current value against the target"),
           ("initiatives", "Its initiatives: the share of them done")]
NUMBERS = ("target_value_min", "target_value_max", "current_value")
# The five types, each with what it means in plain words.
TYPES = {
    "positive": "Positive: a number to raise to the target, such as customers won.",
    "negative": "Negative: a number to bring down to the target, such as open bugs.",
    "range": "Range: a number to keep between a lowest and a highest target.",
    "milestone": "Milestone: done or not done (1 when done, 0 until then).",
    "baseline": "Baseline: a number to measure for now, with no target.",
}
LABELS = {"name": "the name", "type": "the type", "target_value_min": "the target",
          "target_value_max": "the highest target", "current_value": "the current value",
          "confidence": "the confidence", "owner_id": "the owner", "unit": "the unit",
          "unit_position": "the unit's place", "weight": "the weight", "progress_from": "where its progress comes from"}
# The rules' refusals of targets, as a person at the form reads them.
RULE_WORDS = {
    "No user with this id exists.": "Choose a person from the list.",
}
DOOMED_WORDS = {"checkins": "check-in"}
WEIGHT_WORDS = "Enter a whole number from 0 to 100."
# The field beside which the form shows each quality check's hint (okr.reports.quality) on the stored key result.
ADVICE_FIELDS = {"key_result_reads_as_task": "name", "key_result_without_owner": "owner_id",
                 "owner_over_focus": "owner_id", "baseline_after_first_third": "target_value_min"}


def forbidden_targets(form, typed):
    """The target fields the form's type has no use for but which hold text, with why: {field: sentence}.
    typed holds the numbers as read (decimal text) of the fields that are numbers."""
    kind, low, high = form["type"], form["target_value_min"].strip(), form["target_value_max"].strip()
    errors = {}
    if kind == "baseline" and low:
        errors["target_value_min"] = "A baseline key result has no target: leave this empty."
    if kind == "milestone" and "target_value_min" in typed and typed["target_value_min"]:
        if Decimal(typed["target_value_min"]) != 1:
            errors["target_value_min"] = "A milestone's target is always 1: leave this empty."
    if kind in ("positive", "negative", "milestone", "baseline") and high:
        errors["target_value_max"] = "Only a range key result has a highest target: leave this empty."
    if kind in ("positive", "negative", "range") and not low:
        errors["target_value_min"] = f"A {kind} key result needs a target: fill this in."
    if kind == "range" and not high:
        errors["target_value_max"] = "A range key result needs a highest target: fill this in."
    if kind == "range" and typed.get("target_value_min") and typed.get("target_value_max"):
        if Decimal(typed["target_value_min"]) > Decimal(typed["target_value_max"]):
            errors["target_value_min"] = "Make this no greater than the highest target."
    return errors


def typed_unit(form):
    """The form's unit and its place as the rules take them ({"unit", "unit_position"}), or Invalid."""
    return editing.load(unit_schema, {name: form[name] for name in UNIT_FIELDS})


def checked(schema, form, editing_one):
    """The form's values as the schema loads them; Invalid with a sentence for people beside each wrong field.

    A new key result's empty current value and confidence take the API's defaults (0 and 50 %); an edited
    one's must be filled in (the API's full update would make them 0).
    """
    errors, unit = {}, {}
    try:
        unit = typed_unit(form)
    except Invalid as error:
        errors.update(error.fields)
    typed = {}
    for field in NUMBERS:
        try:
            typed[field] = forms.quantity(form[field], unit.get("unit"), unit.get("unit_position"))
        except forms.FieldError as error:
            errors[field] = str(error)
    if form["type"] in TYPES:
        errors.update(forbidden_targets(form, typed))
    body = {"name": form["name"], "type": form["type"], "owner_id": editing.optional(form["owner_id"]),
            "target_value_min": typed.get("target_value_min") or None,
            "target_value_max": typed.get("target_value_max") or None}
    if form["type"] == "milestone" and "target_value_min" not in errors:
        body["target_value_min"] = None  # 1 or empty: the rules make it 1
    if typed.get("current_value"):
        body["current_value"] = typed["current_value"]
    elif form["current_value"].strip():
        pass  # refused above
    elif editing_one:
        errors["current_value"] = "Fill this in."
    try:
        confidence = forms.confidence(form["confidence"])
        if confidence is not None:
            body["confidence"] = confidence
        elif editing_one:
            errors["confidence"] = forms.ENTER_A_CONFIDENCE
    except forms.FieldError as error:
        errors["confidence"] = str(error)
    weight = form["weight"].strip()
    if weight.isdecimal() and weight.isascii() and len(weight) <= 3 and int(weight) <= 100:
        body["weight"] = int(weight)
    elif weight or editing_one and "weight" in request.form:
        errors["weight"] = WEIGHT_WORDS  # none sent (a form of an earlier release): it stays, or a new one's 1
    if form["progress_from"] in dict(SOURCES):
        body["progress_from"] = form["progress_from"]
    elif form["progress_from"]:  # none sent (a form of an earlier release): it stays as it is
        errors["progress_from"] = "Choose where its progress comes from."
    try:
        values = editing.load(schema, body, numbers=NUMBERS, unit=unit)
    except Invalid as error:
        for field, text in error.fields.items():
            errors.setdefault(field, RULE_WORDS.get(text, text))
        values = None
    if form["type"] not in TYPES:
        errors["type"] = "Choose one of the five types."
    if errors:
        raise Invalid(errors)
    return {**values, **unit}


def shown(row):
    """A stored key result's fields as its form shows them (numbers as people write them, none as "")."""
    return {"name": row["name"], "type": row["type"],
            "target_value_min": "" if row["type"] == "milestone" else wording.number(row["target_value_min"]),
            "target_value_max": wording.number(row["target_value_max"]),
            "current_value": wording.number(row["current_value"]),
            "confidence": wording.percent(row["confidence"]).replace("%", " %"),
            "owner_id": row["owner_id"] or "", "unit": row["unit"] or "",
            "unit_position": row["unit_position"] or "after", "weight": str(row["weight"]),
            "progress_from": row["progress_from"]}


def render_form(objective, row=None, form=None, errors=None, conflict=None, revision=None, original=None):
    """The new or edit form of a key result of objective (row: the stored one, None for a new one)."""
    db = get_db()
    form = form or {}
    keep = (form.get("owner_id", ""), row["owner_id"] if row is not None else "")
    people = users.owner_choices(db, keep)
    advice = {}
    if row is not None:  # the checks on the key result as stored
        found = quality.cycle_checks(db, cycles.get(db, objective["cycle_id"]), now().date())
        advice = editing.advice(quality.about_key_result(found, row), ADVICE_FIELDS)[0]
    return render_template(
        "keyresult-form.html", objective=objective, kr=row, form=form, errors=errors or {}, advice=advice,
        conflict=conflict,
        revision=revision, original=original, types=list(TYPES.items()), positions=POSITIONS, sources=SOURCES,
        people=[(u["id"], u["name"] + owner_note(u)) for u in people])


def owner_note(user):
    """What the owner select says after a person who may not own a key result (kept as its present owner)."""
    if not user["is_active"]:
        return " (inactive)"
    return "" if user["role"] in key_results.OWNER_ROLES else " (a viewer: choose a new owner)"


@bp.route("/keyresults/new", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def new_key_result():
    """Shows the new key result form, and creates the key result, with its first check-in, from it."""
    db = get_db()
    objective = objectives.get(db, request.args.get("objective_id", ""))
    if request.method == "GET":
        return render_form(objective, form={"type": "positive", "current_value": "0", "confidence": "50 %",
                                            "unit": "", "unit_position": "after", "weight": "1",
                                            "progress_from": "measure"})
    form = editing.typed(FIELDS)
    try:
        values = checked(key_result_schema, form, editing_one=False)
        row = key_results.create(db, objective, values, access.person_id())
    except Invalid as error:
        return render_form(objective, form=form, errors={f: RULE_WORDS.get(t, t) for f, t in error.fields.items()}), 400
    return redirect(url_for("web.show_key_result", key_result_id=row["id"]), 303)


@bp.route("/keyresults/<key_result_id>/edit", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def edit_key_result(key_result_id):
    """Shows a key result's form, and saves it unless someone changed it meanwhile (a new value is a check-in)."""
    db = get_db()
    stored = key_results.get(db, key_result_id)
    objective = objectives.get(db, stored["objective_id"])

    def check(form):
        try:
            values = checked(key_result_edit_schema, form, editing_one=True)
            key_results.check_owner(db, values, stored)
        except Invalid as error:
            raise Invalid({field: RULE_WORDS.get(text, text) for field, text in error.fields.items()}) from None
        return values

    def save(values):
        key_results.replace(db, stored, values, access.person_id())
        return redirect(url_for("web.show_key_result", key_result_id=key_result_id), 303)

    return editing.edit_page(FIELDS, shown(stored), stored["revision"], partial(render_form, objective, stored),
                             check, save, LABELS)


def stored_form(key_result_id):
    """A key result's edit page as a GET shows it (its form holding the stored values), for the pages that act on
    its Source section and show it again with what they did."""
    stored = key_results.get(get_db(), key_result_id)
    objective = objectives.get(get_db(), stored["objective_id"])
    values = shown(stored)
    return render_form(objective, stored, values, revision=stored["revision"], original=editing.snapshot(values))


@bp.route("/keyresults/<key_result_id>/delete", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def delete_key_result(key_result_id):
    """Asks before deleting a key result (saying how many check-ins go with it), and deletes it."""
    db = get_db()
    row = key_results.get(db, key_result_id)
    if request.method == "GET":
        return editing.confirm_delete(
            f"Delete {row['name']}", f"the key result “{row['name']}”",
            [editing.doomed_sentence(key_results.doomed(db, key_result_id), DOOMED_WORDS)],
            url_for("web.edit_key_result", key_result_id=key_result_id))
    key_results.delete(db, key_result_id)
    return redirect(url_for("web.show_objective", objective_id=row["objective_id"]), 303)

