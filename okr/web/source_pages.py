"""A key result's source on its edit page (editors and admins; viewers never see a query): attaching it to a
connection with a query, Test, Sync now, Fill back, Start again, Remove; and the evidence of a value a source
wrote, /checkins/<id>/evidence, with the bytes kept to download and Recompute.

The same store, rules and runner as /v1/keyresults/<id>/source and /v1/checkins/<id>/evidence
(okr.store.sources, okr.rules.body_schemas, okr.sources.reading's checks, okr.sources.syncing). A view that reads
a source over the network is reads_first: its request holds no write lock meanwhile (okr.db).
"""
from datetime import date

from flask import current_app, g, redirect, render_template, request, url_for

from ..accounts import access, sessions
from ..db import InRequest, finish_reading, get_db, reads_first
from ..errors import Conflict, Invalid, NotFound
from ..rules import quantities
from ..rules.body_schemas import fill_schema, source_schema
from ..sources import reading, syncing
from ..store import connections, key_results, sources
from . import editing, key_result_pages, wording
from .views import bp, now

SOURCE_FIELDS = ("connection_id", "query", "path", "every_minutes")
FILL_FIELDS = ("from", "to", "step")
FILL_STEPS = {"daily": "One value a day", "weekly": "One value a week"}


def shown_source(row):
    """A stored source's fields as its form shows them."""
    return {"connection_id": row["connection_id"], "query": row["query"], "path": row["path"] or "",
            "every_minutes": str(row["every_minutes"])}


@bp.app_template_global()
def source_section(kr):
    """What the edit page's Source section shows for a key result (its row): the source and its state in words,
    the connections to pick from, the form (as stored, or as typed when refused) and what an action said."""
    db = get_db()
    source = sources.of_key_result(db, kr["id"])
    made = g.get("source_shown") or {}
    every = dict(wording.EVERY_WORDS)
    if source is not None:
        every.setdefault(source["every_minutes"], wording.every(source["every_minutes"]))
    return {
        "source": source,
        "state": None if source is None else wording.source_state(source, now()),
        "takes_as_of": source is not None and reading.takes_as_of(source["kind"], source["query"]),
        "connections": [(c["id"], f"{c['name']} ({wording.SOURCE_KIND_WORDS[c['kind']]})")
                        for c in connections.listed(db)],
        "every": [(str(minutes), words) for minutes, words in sorted(every.items())],
        "form": made.get("form") or (shown_source(source) if source else {"every_minutes": "60"}),
        "errors": made.get("errors") or {},
        "fill_form": made.get("fill_form") or {"step": "daily"},
        "fill_errors": made.get("fill_errors") or {},
        "steps": list(FILL_STEPS.items()),
        "test": made.get("test"),
        "said": made.get("said"),
    }


def edit_page(key_result_id, status=200, **shown):
    """The key result's edit page again, its Source section showing what an action did (shown: form, errors,
    fill_form, fill_errors, test, said)."""
    g.source_shown = shown
    return key_result_pages.stored_form(key_result_id), status


def back_to_section(key_result_id):
    return redirect(url_for("web.edit_key_result", key_result_id=key_result_id) + "#source-heading", 303)


def typed_source(form):
    """The Source form's values as the API's body for PUT .../source; Invalid beside each wrong field."""
    body = {"connection_id": form["connection_id"], "query": form["query"], "path": editing.optional(form["path"])}
    minutes = form["every_minutes"].strip()
    if not (minutes.isascii() and minutes.isdigit() and len(minutes) <= 5):
        raise Invalid({"every_minutes": "Choose how often it reads."})
    body["every_minutes"] = int(minutes)
    errors = {}
    if not body["connection_id"]:
        errors["connection_id"] = "Choose a connection."
    try:
        values = editing.load(source_schema, body)
    except Invalid as error:
        errors.update({name: text for name, text in error.fields.items() if name not in errors})
        values = None
    if "every_minutes" in errors:
        errors["every_minutes"] = "Choose between every 15 minutes and once a day."
    if errors:
        raise Invalid(errors)
    return values


def checked_source(db, values):
    """The connection a source's values name, and the reader's own refusals of its query and path beside them."""
    connection = connections.get_or_invalid(db, values["connection_id"])
    syncing.checked_query(connection, values["query"], values["path"])
    return connection


@bp.post("/keyresults/<key_result_id>/source")
@sessions.source_editors_only
@editing.unlocked
def save_source(key_result_id):
    """Attaches the key result to a connection with its query, or changes its source: active again, run soon."""
    db = get_db()
    key_result = key_results.get(db, key_result_id)
    form = editing.typed(SOURCE_FIELDS)
    try:
        values = typed_source(form)
        connection = checked_source(db, values)
    except Invalid as error:
        return edit_page(key_result_id, 400, form=form, errors=error.fields)
    sources.put(db, key_result["seq"], connection["seq"], values["query"], values["path"], values["every_minutes"],
                access.person_id())
    return back_to_section(key_result_id)


@bp.post("/keyresults/<key_result_id>/source/test")
@sessions.source_editors_only
@reads_first
def test_source(key_result_id):
    """Reads the source the form describes (saved or not) and shows what it would write and what it read; writes
    nothing."""
    db = get_db()
    key_results.get(db, key_result_id)
    form = editing.typed(SOURCE_FIELDS)
    try:
        values = typed_source(form)
        connection = checked_source(db, values)
    except Invalid as error:
        return edit_page(key_result_id, 400, form=form, errors=error.fields)
    finish_reading()
    tried = syncing.trial(current_app.config, connection, values["query"], values["path"])
    cut = tried["ok"] and tried["answer_size"] > syncing.EXCERPT_BYTES  # the page says it shows the start only
    return edit_page(key_result_id, form=form, test={**tried, "cut": cut})


def run_words(outcome, unit=None, position=None):
    """What Sync now did, in a sentence (a run's answer, okr.sources.syncing.run_result)."""
    def shown(value):
        return quantities.shown(value, unit, position)
    if outcome["outcome"] == "written":
        return f"Read {shown(outcome['value'])} and recorded it as a check-in."
    if outcome["outcome"] == "unchanged":
        return f"Read {shown(outcome['value'])}, the value it has now: nothing was recorded."
    if outcome["outcome"] == "idle":
        return f"Not read: {outcome['reason']}."
    stopped = " It has stopped: Start again once it is fixed." if outcome["state"] == "stopped" else ""
    return (f"It read nothing: {outcome['error']}. The key result keeps its value; that is "
            f"{editing.counted(outcome['failures'], 'failure')} in a row.{stopped}")


def source_of(key_result_id):
    """The key result's source: a 404 page for an unknown key result, or one without a source."""
    db = get_db()
    key_results.get(db, key_result_id)
    row = sources.of_key_result(db, key_result_id)
    if row is None:
        raise NotFound("source")
    return row


@bp.post("/keyresults/<key_result_id>/source/sync")
@sessions.source_editors_only
@editing.unlocked
@reads_first
def sync_source(key_result_id):
    """Runs the source now (Sync now): a changed value becomes a check-in with its evidence; a failure counts."""
    row = source_of(key_result_id)
    kr = key_results.get(get_db(), key_result_id)
    try:
        outcome = syncing.sync(current_app.config, InRequest(), row["id"])
    except Conflict as changed:  # changed by someone else while it was read
        return edit_page(key_result_id, 409, said=f"Nothing was recorded: {changed}.")
    return edit_page(key_result_id, said=run_words(outcome, kr["unit"], kr["unit_position"]))


def typed_fill(form):
    """The Fill back form's values as okr.sources.syncing.fill takes them (first, last: dates or None; step);
    Invalid beside each wrong field."""
    body = {"from": editing.optional(form["from"]), "to": editing.optional(form["to"]), "step": form["step"]}
    values = editing.load(fill_schema, body)
    return tuple(None if values[name] is None else date.fromisoformat(values[name])
                 for name in ("first", "last")) + (values["step"],)


@bp.post("/keyresults/<key_result_id>/source/fill")
@sessions.source_editors_only
@editing.unlocked
@reads_first
def fill_source(key_result_id):
    """Fills the key result's history back from its source (Fill back), one value a day or a week."""
    row = source_of(key_result_id)
    form = editing.typed(FILL_FIELDS)
    try:
        first, last, step = typed_fill(form)
        outcome = syncing.fill(current_app.config, InRequest(), row["id"], first, last, step)
    except Invalid as error:
        return edit_page(key_result_id, 400, fill_form=form, fill_errors=error.fields)
    except Conflict as changed:  # changed by someone else while it was read
        return edit_page(key_result_id, 409, fill_form=form, said=f"Nothing was filled: {changed}.")
    if outcome["outcome"] == "failed":
        said = f"Nothing was filled: {outcome['error']}."
    else:
        said = (f"Read {editing.counted(outcome['read'], 'day')} and recorded "
                f"{editing.counted(outcome['written'], 'check-in')} (a day whose value had not changed adds none).")
    return edit_page(key_result_id, fill_form=form, said=said)


@bp.post("/keyresults/<key_result_id>/source/restart")
@sessions.source_editors_only
@editing.unlocked
def restart_source(key_result_id):
    """Starts a stopped or failing source again: active, due now."""
    sources.restart(get_db(), source_of(key_result_id))
    return back_to_section(key_result_id)


@bp.route("/keyresults/<key_result_id>/source/delete", methods=["GET", "POST"])
@sessions.source_editors_only
@editing.unlocked
def remove_source(key_result_id):
    """Asks, then detaches the key result from its source; the values it wrote and their evidence stay."""
    row = source_of(key_result_id)
    if request.method == "GET":
        return editing.confirm_delete("Remove the source", f"the source of “{row['key_result_name']}”",
                                      ["The values it wrote, and their evidence, stay in the history.",
                                       "The key result is updated by people again."],
                                      url_for("web.edit_key_result", key_result_id=key_result_id))
    sources.remove(get_db(), row)
    return back_to_section(key_result_id)


def evidence_page(checkin_id, recomputed=None):
    kept = sources.evidence_of(get_db(), checkin_id)
    kr = key_results.get(get_db(), kept["key_result_id"])
    return render_template("evidence.html", evidence=kept, kr=kr, recomputed=recomputed)


@bp.get("/checkins/<checkin_id>/evidence")
@sessions.source_editors_only
def show_evidence(checkin_id):
    """What a value a source wrote was read from: the request as run, as_of, when, the answer's SHA-256 and
    size, its bytes to download, and Recompute."""
    return evidence_page(checkin_id)


@bp.get("/checkins/<checkin_id>/evidence/answer")
@sessions.source_editors_only
def download_evidence(checkin_id):
    """The bytes of the answer a value was read from, as kept (the first 64 KB), to download."""
    kept = sources.evidence_of(get_db(), checkin_id)
    response = current_app.response_class(bytes(kept["answer"]), mimetype="application/octet-stream")
    response.headers["Content-Disposition"] = f'attachment; filename="evidence-{checkin_id}.bin"'
    return response


@bp.post("/checkins/<checkin_id>/recompute")
@sessions.source_editors_only
@reads_first
def recompute_evidence(checkin_id):
    """Runs the request a value was read from again, as it was run, and says whether the answer still matches;
    writes nothing."""
    try:
        outcome = syncing.recompute(current_app.config, InRequest(), checkin_id)
    except Conflict as failure:  # its connection is gone
        outcome = {"error": str(failure)}
    return evidence_page(checkin_id, outcome)
