"""Closing out a cycle: /cycles/<id>/close, where an editor gives each objective an outcome, a score and a
reflection and each key result a score (suggested from its final progress), in as many sittings as needed, then
closes the cycle; and /cycles/<id>/reopen, where an admin reopens it.

The suggestions are okr.reports.closing's, the writes okr.store.closing's, the score's rule the API's
(okr.rules.body_schemas.ClosingFields), so that a page accepts exactly what PATCH accepts.
"""
from flask import redirect, render_template, request, url_for
from marshmallow import ValidationError

from .. import clock
from ..accounts import access, sessions
from ..db import get_db
from ..errors import Invalid
from ..progress import parse_timestamp
from ..reports import closing as closing_report
from ..rules.body_schemas import OUTCOMES, closing_schema
from ..store import closing, cycles, key_results, objectives
from . import editing, forms, wording
from .views import bp

PER_PAGE = 25  # objectives on one page of the close-out, each with its key results
ACTIONS = ("save", "next", "close")


def moment():
    return parse_timestamp(clock.utc_now())


def shown_score(text):
    """A stored or suggested score as the form shows it: "0.7" for "0.70"; "" for none."""
    return "" if text is None else wording.number(text)


def form_of(nodes):
    """The form's fields for these objective nodes: what is stored, else what is suggested."""
    form = {}
    for node in nodes:
        form[f"o-{node['id']}-outcome"] = node["outcome"] or node["suggested_outcome"]
        form[f"o-{node['id']}-score"] = shown_score(node["score"] or node["suggested_score"])
        form[f"o-{node['id']}-reflection"] = node["reflection"] or ""
        for key_result in node["key_results"]:
            form[f"k-{key_result['id']}-score"] = shown_score(key_result["score"] or key_result["suggested_score"])
    return form


def score_value(text, name, errors):
    """A typed score ("0.7", "70 %") as the rules' text, None when empty; its sentence in errors when wrong."""
    try:
        typed = forms.confidence(text)
        return None if typed is None else closing_schema.load({"score": typed})["score"]
    except (forms.FieldError, ValidationError):
        errors[name] = "Enter a score from 0 to 1, such as 0.7 or 70 %."
        return None


def checked(nodes, form):
    """The page's values to save: {objective id: {outcome, score, reflection}}, {key result id: score}; Invalid
    naming each field that is wrong (nothing is saved then)."""
    errors, scored, key_scores = {}, {}, {}
    for node in nodes:
        prefix = f"o-{node['id']}-"
        outcome = form.get(prefix + "outcome", "").strip() or None
        if outcome is not None and outcome not in OUTCOMES:
            errors[prefix + "outcome"] = "Choose one of the outcomes."
        reflection = form.get(prefix + "reflection", "").strip() or None
        try:
            closing_schema.load({"reflection": reflection})
        except ValidationError:
            errors[prefix + "reflection"] = "Write at most 10,000 characters."
        scored[node["id"]] = {"outcome": outcome, "score": score_value(form.get(prefix + "score", ""),
                                                                         prefix + "score", errors),
                              "reflection": reflection}
        for key_result in node["key_results"]:
            name = f"k-{key_result['id']}-score"
            key_scores[key_result["id"]] = score_value(form.get(name, ""), name, errors)
    if errors:
        raise Invalid(errors)
    return scored, key_scores


def page_of(nodes, number):
    pages = max(1, -(-len(nodes) // PER_PAGE))
    number = min(max(number, 1), pages)
    return nodes[(number - 1) * PER_PAGE:number * PER_PAGE], number, pages


def page_number():
    try:
        return int(request.values.get("page", "1"))
    except ValueError:
        return 1


@bp.route("/cycles/<cycle_id>/close", methods=["GET", "POST"])
@sessions.editors_only
@editing.unlocked
def close_out_cycle(cycle_id):
    """Shows a page of the cycle's close-out, saves it, and closes the cycle when asked."""
    db = get_db()
    cycle = cycles.get(db, cycle_id)
    now = moment()
    closing_report.require_closable(cycle, now.date())
    nodes = closing_report.close_out(db, cycle, now)
    shown, number, pages = page_of(nodes, page_number())
    if request.method == "GET":
        return render(cycle, shown, number, pages, form_of(shown), {})
    form = request.form.to_dict()
    action = form.get("action") if form.get("action") in ACTIONS else "save"
    try:
        scored, key_scores = checked(shown, form)
    except Invalid as error:
        return render(cycle, shown, number, pages, form, error.fields), 400
    for objective_id, values in scored.items():
        closing.score_objective(db, objectives.get(db, objective_id), values)
    for key_result_id, score in key_scores.items():
        closing.score_key_result(db, key_results.get(db, key_result_id), score)
    if action == "close":
        closing.close(db, cycle_id, access.person_id(), closing_report.suggestions_for_all(db, cycle, now))
        return redirect(url_for("web.show_cycle", cycle_id=cycle_id), 303)
    following = number + 1 if action == "next" and number < pages else number
    return redirect(url_for("web.close_out_cycle", cycle_id=cycle_id, page=following, saved=1), 303)


def render(cycle, shown, number, pages, form, errors):
    return render_template("close-out.html", cycle=cycle, nodes=shown, page=number, pages=pages, form=form,
                           errors=errors, outcomes=list(wording.OUTCOME_WORDS.items()),
                           saved=request.args.get("saved") == "1")


@bp.post("/cycles/<cycle_id>/reopen")
@sessions.reopeners_only
def reopen_cycle(cycle_id):
    """Reopens a closed cycle (an admin only); its scores and reflections stay."""
    closing.reopen(get_db(), cycle_id)
    return redirect(url_for("web.show_cycle", cycle_id=cycle_id), 303)
