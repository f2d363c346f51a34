"""Correcting and deleting a check-in from a key result's history: /checkins/<id>/edit and /checkins/<id>/delete.

Who may is okr.accounts.access.checkin_change_refusal's rule (its author within 7 days, an admin at any time),
the values okr.web.forms.checkin_values' (the check-in form's), the writes okr.store.checkins'.
"""
from flask import redirect, render_template, request, url_for

from .. import clock
from ..accounts import access, sessions
from ..db import get_db
from ..errors import Conflict, Invalid
from ..store import checkins, key_results
from . import editing, forms, wording
from .errors import PageError
from .views import bp


@bp.app_template_global()
def may_change_checkin(row):
    """Whether this person may correct or delete a check-in of the history (a row of checkins.latest)."""
    return not row["is_start"] and access.checkin_change_refusal(access.current_actor(), row,
                                                                 clock.utc_now()) is None


def changeable(checkin_id):
    """The check-in this person may change: a 404 page when missing, a 403 page saying why when not theirs to
    change, a 409 page for the starting check-in."""
    row = checkins.get(get_db(), checkin_id)
    refusal = access.checkin_change_refusal(access.current_actor(), row, clock.utc_now())
    if refusal is not None:
        raise PageError(403, "Not allowed", f"You may not change this check-in: {refusal}.")
    if row["is_start"]:
        raise PageError(409, "Not allowed", f"This check-in may not be changed: {checkins.STARTING}.")
    return row


def back_to(row):
    return url_for("web.show_key_result", key_result_id=row["key_result_id"]) + "#history-heading"


@bp.route("/checkins/<checkin_id>/edit", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def edit_checkin(checkin_id):
    """Shows a check-in's correction form, and saves its value, confidence and comment."""
    db = get_db()
    stored = changeable(checkin_id)
    kr = key_results.get(db, stored["key_result_id"])
    if request.method == "GET":
        form = {"value": wording.number(stored["value"]), "confidence": wording.percent(stored["confidence"]),
                "comment": stored["comment"] or "", "done": "1" if float(stored["value"]) >= 1 else ""}
        return render_template("checkin-form.html", kr=kr, checkin=stored, form=form, errors={},
                               back=back_to(stored))
    form = editing.typed(("value", "confidence", "comment", "done"))
    try:
        values = forms.checkin_values(form, kr)
        checkins.correct(db, stored, values["value"], values.get("confidence", stored["confidence"]),
                         values["comment"])
    except Invalid as error:
        return render_template("checkin-form.html", kr=kr, checkin=stored, form=form, errors=error.fields,
                               back=back_to(stored)), 400
    return redirect(back_to(stored), 303)


@bp.route("/checkins/<checkin_id>/delete", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def delete_checkin(checkin_id):
    """Asks before deleting a check-in, and deletes it; the key result goes back to its latest remaining one."""
    stored = changeable(checkin_id)
    if request.method == "GET":
        return editing.confirm_delete("Delete a check-in", f"this check-in ({wording.number(stored['value'])})",
                                      ["The key result goes back to its latest remaining check-in."],
                                      back_to(stored))
    try:
        checkins.delete(get_db(), stored)
    except Conflict as error:
        raise PageError(409, "Not allowed", str(error)) from None
    return redirect(back_to(stored), 303)
