"""Initiatives on a key result's page: the list, each one's state changed inline, and the form to add one
(templates/initiatives.html, which the page includes with initiative_list), and /initiatives/<id>/edit and
/initiatives/<id>/delete.

Each form's fields are the API's (name, owner_id, state, due_on, link), checked by its InitiativeSchema and written
by okr.store.initiatives; viewers see the list but get no form.
"""
from flask import g, redirect, render_template, request, url_for

from ..accounts import access, sessions
from ..db import get_db
from ..errors import Invalid
from ..rules.body_schemas import INITIATIVE_STATES, initiative_schema
from ..store import initiatives, key_results, users
from . import editing
from .views import bp, render_key_result

FIELDS = ("name", "owner_id", "state", "due_on", "link")
LABELS = {"name": "the name", "owner_id": "the owner", "state": "the state", "due_on": "the due date",
          "link": "the link"}
STATE_WORDS = {"planned": "Planned", "in_progress": "In progress", "done": "Done", "blocked": "Blocked"}
RULE_WORDS = {"No user with this id exists.": "Choose a person from the list.",
              "Not a valid date: send one such as \"2026-10-01\".": "Enter a date such as 2026-12-15."}


@bp.app_template_global()
def initiative_state(state):
    """An initiative's state as the pages say it ("In progress")."""
    return STATE_WORDS.get(state, state)


@bp.app_template_global()
def initiative_list(key_result_id):
    """What initiatives.html shows under a key result: its initiatives (each with its owner's name), how many are
    done, the people who may own one, and the new one's form (what was typed and why it was refused, when one just
    was)."""
    db = get_db()
    rows = initiatives.of_key_result(db, key_result_id)
    me = access.person_id()
    return {"initiatives": rows, "done": sum(row["state"] == "done" for row in rows), "states": STATE_WORDS,
            "people": [(u["id"], u["name"]) for u in users.owner_choices(db, ("", ""))],
            "full": len(rows) >= initiatives.MAX_PER_KEY_RESULT,
            "action": url_for("web.add_initiative", key_result_id=key_result_id),
            "form": g.get("initiative_form", {"name": "", "owner_id": me or "", "state": "planned", "due_on": "",
                                              "link": ""}),
            "errors": g.get("initiative_errors", {})}


def checked(form, stored=None):
    """The typed fields as InitiativeSchema's values (an empty owner, date or link is none), its owner one who may
    own one (or stored's present owner); Invalid beside each field, in words for people."""
    body = {"name": form["name"], "owner_id": editing.optional(form["owner_id"]),
            "state": form["state"] or "planned", "due_on": editing.optional(form["due_on"]),
            "link": form["link"].strip()}
    try:
        values = editing.load(initiative_schema, body)
        key_results.check_owner(get_db(), values, stored)
        return values
    except Invalid as error:
        raise Invalid({field: RULE_WORDS.get(text, text) for field, text in error.fields.items()}) from None


def key_result_url(key_result_id, anchor="initiatives"):
    return url_for("web.show_key_result", key_result_id=key_result_id, _anchor=anchor)


@bp.post("/keyresults/<key_result_id>/initiatives")
@sessions.editors_only
@editing.unlocked
def add_initiative(key_result_id):
    """Adds an initiative under a key result from the form on its page."""
    initiatives.key_result_of(get_db(), key_result_id)  # an unknown key result is a 404, whatever was typed
    form = editing.typed(FIELDS)
    try:
        row = initiatives.create(get_db(), key_result_id, checked(form))
    except Invalid as error:
        g.initiative_form, g.initiative_errors = form, error.fields
        return render_key_result(key_result_id), 400
    return redirect(key_result_url(key_result_id, f"i-{row['id']}"), 303)


@bp.post("/initiatives/<initiative_id>/state")
@sessions.editors_only
@editing.unlocked
def change_initiative_state(initiative_id):
    """Moves an initiative to the state chosen in its row (planned, in progress, done, blocked)."""
    stored = initiatives.get(get_db(), initiative_id)
    state = request.form.get("state", "")
    if state not in INITIATIVE_STATES:
        g.initiative_errors = {"state": "Choose one of the four states."}
        return render_key_result(stored["key_result_id"]), 400
    if state != stored["state"]:
        values = {field: stored[field] for field in FIELDS}
        initiatives.update(get_db(), stored, {**values, "state": state})
    return redirect(key_result_url(stored["key_result_id"], f"i-{initiative_id}"), 303)


@bp.route("/initiatives/<initiative_id>/edit", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def edit_initiative(initiative_id):
    """Shows an initiative's form, and saves it unless someone changed it meanwhile."""
    db = get_db()
    stored = initiatives.get(db, initiative_id)
    back = key_result_url(stored["key_result_id"], f"i-{initiative_id}")

    def render(form, errors=None, conflict=None, revision=None, original=None):
        keep = (form.get("owner_id", ""), stored["owner_id"] or "")
        people = [(u["id"], u["name"] + ("" if u["role"] in key_results.OWNER_ROLES and u["is_active"] else
                                         " (may not own one now)")) for u in users.owner_choices(db, keep)]
        return render_template("initiative-form.html", initiative=stored, back=back, form=form, errors=errors or {},
                               conflict=conflict, revision=revision, original=original, people=people,
                               states=list(STATE_WORDS.items()))

    def save(values):
        initiatives.update(db, stored, values)
        return redirect(back, 303)

    shown = {"name": stored["name"], "owner_id": stored["owner_id"] or "", "state": stored["state"],
             "due_on": stored["due_on"] or "", "link": stored["link"] or ""}
    return editing.edit_page(FIELDS, shown, stored["revision"], render, lambda form: checked(form, stored), save,
                             LABELS)


@bp.route("/initiatives/<initiative_id>/delete", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def delete_initiative(initiative_id):
    """Asks before deleting an initiative, and deletes it."""
    stored = initiatives.get(get_db(), initiative_id)
    back = key_result_url(stored["key_result_id"])
    if request.method == "GET":
        return editing.confirm_delete(f"Delete {stored['name']}", f"the initiative “{stored['name']}”", [], back)
    initiatives.delete(get_db(), stored)
    return redirect(back, 303)
