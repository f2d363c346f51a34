"""What every edit page shares: a form read and checked by the API's own schemas, a conflict caught by the
revision a form was made from, and the confirmation page before a delete.

The pages for cycles, teams, objectives and key results (okr.web.edit_*) build on these; the writes are
okr.store's, the rules okr.rules.body_schemas', so that a page accepts exactly what the API accepts. The quality
checks' hints (okr.reports.quality) are advice beside the fields, never a refusal.
"""
import json
from functools import wraps

from flask import render_template, request
from marshmallow import ValidationError

from ..db import get_db
from ..errors import Invalid
from ..rules import merging
from ..store import events, locks
from ..rules.messages import flatten
from . import forms

# The hidden fields every edit form carries: the revision it was made from, and what its fields held then.
REVISION_FIELD = "revision"
ORIGINAL_FIELD = "original"


def unlocked(view):
    """A page's view that changes something in a cycle: a 409 page (okr.store.locks) when that cycle is closed,
    found from the view's objective, key result, check-in, comment, initiative or cycle id, or the form's query."""
    @wraps(view)
    def guarded(**ids):
        db = get_db()
        given = {**request.args.to_dict(), **ids}
        for name, table in (("checkin_id", "checkins"), ("comment_id", "comments"), ("initiative_id", "initiatives")):
            if name in given:
                locks.require_open(db, locks.cycle_of(db, table, given[name]))
        for name, table in (("cycle_id", "cycles"), ("objective_id", "objectives"),
                            ("parent_objective_id", "objectives"), ("key_result_id", "key_results")):
            if given.get(name):
                locks.require_open(db, locks.cycle_of(db, table, given[name]))
        return view(**ids)
    return guarded


def advice(found, field_of):
    """Quality checks' findings (okr.reports.quality) as a form shows them: ({field: sentences} beside the field
    field_of names for each code, [sentences] of the codes it names no field for). Each hint becomes a sentence."""
    beside, general = {}, []
    for finding in found:
        sentence = finding["hint"][:1].upper() + finding["hint"][1:] + "."
        field = field_of.get(finding["code"])
        if field is None:
            general.append(sentence)
        else:
            beside[field] = f"{beside[field]} {sentence}" if field in beside else sentence
    return beside, general


def typed(names):
    """The fields of the posted form, as typed (missing ones as "")."""
    return {name: request.form.get(name, "") for name in names}


def load(schema, body, numbers=(), labels=None, unit=None):
    """schema.load(body), its refusals worded for people beside each field: Invalid({field: sentence}).

    numbers names the fields that hold numbers, unit the key result's {"unit", "unit_position"} they may be
    written with; labels maps a rule's field to the form's field that shows it, when they differ (the form's
    "kind" shows the rules' is_company and is_personal).
    """
    try:
        return schema.load(body)
    except ValidationError as error:
        errors = {}
        for field, text in flatten(error.messages).items():
            shown = (labels or {}).get(field, field)
            errors.setdefault(shown, forms.for_people(field, text, numbers=numbers, unit=(unit or {}).get("unit"),
                                                      position=(unit or {}).get("unit_position")))
        raise Invalid(errors) from None


def optional(text):
    """A form's text as a rule's value: "" (an empty field, a select's "none" choice) is None."""
    text = text.strip()
    return text or None


def snapshot(values):
    """What an edit form's fields hold when it is made, for its hidden ORIGINAL_FIELD."""
    return json.dumps(values, separators=(",", ":"), sort_keys=True)


def opened_with(form):
    """What the posted form's fields held when it was opened (its ORIGINAL_FIELD), or None when that is gone."""
    try:
        original = json.loads(form.get(ORIGINAL_FIELD, ""))
    except ValueError:
        return None
    return original if isinstance(original, dict) else None


class Conflict:
    """A save refused because a field was changed on both sides: the sentence above the form (its str) and, per
    such field, rows of {label, theirs, who, when, mine}."""

    def __init__(self, message, rows):
        self.message, self.rows = message, rows

    def __str__(self):
        return self.message


def edit_page(fields, now_values, revision, render, check, save, labels):
    """The flow of every edit page, GET and POST: the form made from the stored values, then a save that is
    refused beside the fields (400, the form keeping the revision it was made from), or done.

    When someone changed the record after the form was opened, the fields merge (okr.rules.merging): their
    changes are kept, mine applied; only a field both changed differently refuses the save (409, nothing
    written), the page naming per field their value, who and when, and mine; the form is then on the stored
    revision, holding their other changes and my values, so that saving it (Use mine) overwrites only those.

    fields: the form's field names; now_values: the stored record's values as the form shows them; revision:
    its revision; render(form, errors=None, conflict=None, revision=None, original=None): the form's page;
    check(form): the values to save, or Invalid; save(values): writes them (or Invalid) and answers.
    """
    if request.method == "GET":
        return render(now_values, revision=revision, original=snapshot(now_values))
    form = typed(fields)
    kept = {"revision": request.form.get(REVISION_FIELD, ""), "original": request.form.get(ORIGINAL_FIELD, "")}
    clashes = []
    if kept["revision"] != str(revision):
        base = opened_with(request.form)
        if base is None:  # nothing tells what the form showed: every field that differs is a clash
            base = {name: None for name in fields}
        form, clashes = merging.merge(base, now_values, form)
    try:
        values = check(form)
    except Invalid as error:
        return render(form, errors=error.fields, **kept), 400
    if clashes:
        return render(form, conflict=conflict_of(clashes, now_values, form, labels), revision=revision,
                      original=snapshot(now_values)), 409
    try:
        return save(values)
    except Invalid as error:  # what only the stored records can tell (a reference gone, an alignment loop)
        return render(form, errors=error.fields, **kept), 400


def conflict_of(clashes, theirs, mine, labels):
    """The Conflict of a save refused over these fields: per field their value, who changed it and when (from
    the activity feed), and mine."""
    resource_id = next(iter((request.view_args or {}).values()), None)
    rows = []
    for name in clashes:
        change = events.last_change(get_db(), resource_id, name) if resource_id else None
        who, when = (change[0].get("name") or "someone", change[1]) if change else ("someone", None)
        rows.append({"field": name, "label": labels.get(name, name.replace("_", " ")), "theirs": theirs.get(name),
                     "who": who, "when": when, "mine": mine.get(name)})
    return Conflict(conflict_message(clashes, labels), rows)


def conflict_message(changed, labels):
    """The sentence above a form that was not saved because someone changed these fields too meanwhile."""
    named = listing([labels.get(name, name.replace("_", " ")) for name in changed])
    return (f"Someone else changed {named} after you opened this form, so nothing was saved. Their other changes "
            f"are kept and the form holds yours; Use mine saves your value over theirs.")


def listing(parts):
    """["a", "b", "c"] as "a, b and c"."""
    parts = list(parts)
    if len(parts) <= 1:
        return "".join(parts)
    return f"{', '.join(parts[:-1])} and {parts[-1]}"


def counted(number, singular, plural=None):
    """3, "objective" as "3 objectives"; 1 as "1 objective"."""
    return f"{number:,} {singular if number == 1 else plural or singular + 's'}"


def doomed_sentence(counts, words, verb="will be deleted"):
    """What a delete takes with it, as a sentence: {"objectives": 3, "key_results": 11} with words
    {"objectives": "objective", ...} as "3 objectives and 11 key results will be deleted"; None when nothing."""
    parts = [counted(counts[name], words[name]) for name in words if counts.get(name)]
    return f"{listing(parts)} {verb}." if parts else None


def confirm_delete(title, what, consequences, back_url):
    """The confirmation page of a delete: what it is, what goes with it (sentences, None skipped), a Delete
    button that posts to this same address, and Cancel, a link back (nothing is deleted)."""
    return render_template("confirm-delete.html", title=title, what=what,
                           consequences=[sentence for sentence in consequences if sentence], back_url=back_url)
