"""Metric sources: /v1/connections (admins), /v1/keyresults/<id>/source (editors), and the evidence of the values
sources wrote: /v1/checkins/<id>/evidence, …/evidence/answer, …/recompute."""
from datetime import date

from flask import Blueprint, current_app, request
from werkzeug.exceptions import Forbidden

from ..accounts import access
from ..db import InRequest, finish_reading, get_db, reads_first
from ..errors import Invalid, NotFound
from ..records import connection_json, evidence_json, source_json
from ..rules.body_schemas import (connection_patch_schema, connection_schema, fill_schema, source_schema,
                                  source_test_schema)
from ..sources import reading, sealing, syncing
from ..store import connections, key_results, sources
from .bodies import load_body, read_json_body
from .paging import paginate
from .responses import deleted

bp = Blueprint("sources", __name__, url_prefix="/v1")

def require_admin():
    if not access.may_manage_connections(access.current_actor()):
        raise Forbidden(access.refusal(access.current_actor(), "connections"))


def require_editor():
    if not access.may_see_sources(access.current_actor()):
        raise Forbidden(access.refusal(access.current_actor(), "sources"))


def shown_connection(row):
    return connection_json(row, needs_secret=not sealing.opens(current_app.config, row["sealed_secret"]))


def checked_connection(values):
    """Invalid unless the reader takes the connection's address and headers for its kind."""
    problem = syncing.connection_problem(current_app.config, values["kind"], values["address"],
                                         values.get("headers") or {})
    if problem:
        raise Invalid({"address": problem})


def sealed(secret):
    return None if secret is None else sealing.seal(current_app.config, secret)


@bp.get("/connections")
def list_connections():
    """Lists the connections of metric sources (an admin only), in creation order, a page at a time."""
    require_admin()
    return paginate("connections", connections.page, shown_connection)


@bp.post("/connections")
def create_connection():
    """Adds a connection (an admin only); its secret is sealed and never shown again."""
    require_admin()
    body = load_body(connection_schema)
    checked_connection(body)
    row = connections.create(get_db(), body, sealed(body["secret"]))
    return shown_connection(row)


@bp.get("/connections/<connection_id>")
def get_connection(connection_id):
    """Returns one connection (an admin only), without its secret."""
    require_admin()
    return shown_connection(connections.get(get_db(), connection_id))


@bp.patch("/connections/<connection_id>")
def patch_connection(connection_id):
    """Changes a connection (a JSON Merge Patch; an admin only): secret sets a new one, null removes it."""
    require_admin()
    stored = connections.get(get_db(), connection_id)
    editable = {name: stored[name] for name in ("name", "kind", "address", "headers", "inside_network")}
    sent = read_json_body()  # read once: whether it names the secret decides whether the secret changes
    body = connection_patch_schema.load({**editable, **sent})  # a merge patch, as load_merge_patch reads one
    checked_connection(body)
    secret = sealed(body["secret"]) if "secret" in sent else connections.KEEP
    values = {name: body[name] for name in editable}
    return shown_connection(connections.update(get_db(), stored, values, secret))


@bp.delete("/connections/<connection_id>")
def delete_connection(connection_id):
    """Deletes a connection no source uses (an admin only)."""
    require_admin()
    connections.delete(get_db(), connections.get(get_db(), connection_id))
    return deleted()


def source_of(key_result_id):
    """The key result's source: 404 for an unknown key result, or one without a source."""
    require_editor()
    key_results.get(get_db(), key_result_id)
    row = sources.of_key_result(get_db(), key_result_id)
    if row is None:
        raise NotFound("source")
    return row


def shown_source(row):
    return source_json(row, reading.takes_as_of(row["kind"], row["query"]))


@bp.put("/keyresults/<key_result_id>/source")
def put_source(key_result_id):
    """Attaches a key result to a connection with its query (an editor), or changes its source; it is active
    again and runs at once."""
    require_editor()
    db = get_db()
    key_result = key_results.get(db, key_result_id)
    body = load_body(source_schema)
    connection = connections.get_or_invalid(db, body["connection_id"])
    syncing.checked_query(connection, body["query"], body["path"])
    sources.put(db, key_result["seq"], connection["seq"], body["query"], body["path"], body["every_minutes"],
                access.person_id())
    return shown_source(sources.of_key_result(db, key_result_id))


@bp.get("/keyresults/<key_result_id>/source")
def get_source(key_result_id):
    """Returns a key result's source (an editor): its query, path, schedule and state, never a secret."""
    return shown_source(source_of(key_result_id))


@bp.delete("/keyresults/<key_result_id>/source")
def delete_source(key_result_id):
    """Detaches a key result from its source; the values it wrote and their evidence stay."""
    sources.remove(get_db(), source_of(key_result_id))
    return deleted()


@bp.post("/keyresults/<key_result_id>/source/test")
@reads_first
def test_source(key_result_id):
    """Reads a key result's source now and shows the value it would write and what it read, writing nothing; a
    body tests another connection, query or path first."""
    require_editor()
    db = get_db()
    key_results.get(db, key_result_id)
    stored = sources.of_key_result(db, key_result_id)
    body = load_body(source_test_schema) if request.content_length else {}
    if stored is None and not {"connection_id", "query"} <= set(body):
        raise Invalid({"connection_id": "The key result has no source: give connection_id and query to test one."})
    connection = (connections.get_or_invalid(db, body["connection_id"]) if "connection_id" in body
                  else connections.by_seq(db, stored["connection_seq"]))
    query = body.get("query", stored and stored["query"])
    path = body["path"] if "path" in body else stored and stored["path"]
    syncing.checked_query(connection, query, path)
    finish_reading()
    return syncing.trial(current_app.config, connection, query, path)


@bp.post("/keyresults/<key_result_id>/source/sync")
@reads_first
def sync_source(key_result_id):
    """Runs a key result's source now: a changed value becomes a check-in with its evidence; a failure counts as
    the schedule's do (a stopped source that reads well is active again)."""
    row = source_of(key_result_id)
    return syncing.sync(current_app.config, InRequest(), row["id"])


@bp.post("/keyresults/<key_result_id>/source/fill")
@reads_first
def fill_source(key_result_id):
    """Fills a key result's history back from its source, one value per day or week from the cycle's start to
    yesterday, each with its evidence, in one transaction."""
    row = source_of(key_result_id)
    body = load_body(fill_schema) if request.content_length else fill_schema.load({})
    first, last = (parsed_date(body[name]) for name in ("first", "last"))
    return syncing.fill(current_app.config, InRequest(), row["id"], first, last, body["step"])


def parsed_date(text):
    return None if text is None else date.fromisoformat(text)


@bp.get("/checkins/<checkin_id>/evidence")
def get_evidence(checkin_id):
    """Returns what a source-written check-in's value was read from (an editor): the request as run, when, the
    answer's SHA-256 and size."""
    require_editor()
    return evidence_json(sources.evidence_of(get_db(), checkin_id))


@bp.get("/checkins/<checkin_id>/evidence/answer")
def get_evidence_answer(checkin_id):
    """Returns the bytes of the answer a value was read from, as kept (its first 64 KB), to download."""
    require_editor()
    kept = sources.evidence_of(get_db(), checkin_id)
    response = current_app.response_class(bytes(kept["answer"]), mimetype="application/octet-stream")
    response.headers["Content-Disposition"] = f'attachment; filename="evidence-{checkin_id}.bin"'
    return response


@bp.post("/checkins/<checkin_id>/recompute")
@reads_first
def recompute_evidence(checkin_id):
    """Runs a source-written value's request again, as it was run, and says whether the answer still matches;
    writes nothing."""
    require_editor()
    return syncing.recompute(current_app.config, InRequest(), checkin_id)
