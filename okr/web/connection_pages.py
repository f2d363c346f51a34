"""The Connections pages (admins only): the connections of metric sources, adding one, changing one, deleting one
no source uses. The same rules and store as /v1/connections (okr.rules.body_schemas, okr.sources.reading's
check of an address, okr.store.connections).

A secret is written, never read back: its field is always empty, leaving it empty keeps the secret, a box removes
it; no page shows it, not even a refused form.
"""
from flask import current_app, redirect, render_template, request, url_for

from ..accounts import sessions
from ..db import get_db
from ..errors import Conflict, Invalid
from ..rules.body_schemas import connection_patch_schema, connection_schema
from ..sources import sealing, syncing
from ..store import connections
from . import editing, wording
from .errors import PageError
from .views import bp

FIELDS = ("name", "kind", "address", "headers", "secret", "inside_network", "remove_secret")
BLANK = {"name": "", "kind": "http_json", "address": "", "headers": "", "inside_network": False}


def needs_secret(row):
    """Whether a connection's secret does not open with this server's key (a database restored without it)."""
    return not sealing.opens(current_app.config, row["sealed_secret"])


def listed(db):
    return [{**row, "needs_secret": needs_secret(row)} for row in connections.listed(db)]


def headers_text(headers):
    """A connection's headers as its form shows them: one "Name: value" a line."""
    return "\n".join(f"{name}: {value}" for name, value in sorted((headers or {}).items()))


def typed_headers(text):
    """The headers field's lines ("Name: value") as a dict; Invalid beside the field for a line without a colon."""
    found = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise Invalid({"headers": f"Line {number} is not “Name: value”."})
        found[name.strip()] = value.strip()
    return found


def shown(row):
    """A stored connection's fields as its form shows them (never its secret)."""
    return {"name": row["name"], "kind": row["kind"], "address": row["address"],
            "headers": headers_text(row["headers"]), "inside_network": row["inside_network"]}


def typed_form():
    form = editing.typed(FIELDS)
    form["inside_network"] = form["inside_network"] == "on"
    form["remove_secret"] = form["remove_secret"] == "on"
    return form


def checked(schema, form, kind):
    """The form's values as the API takes them, checked by its rules and the reader's check of the address;
    Invalid with a sentence beside each wrong field. The secret is left out (the caller seals it)."""
    errors = {}
    try:
        headers = typed_headers(form["headers"])
    except Invalid as error:
        errors.update(error.fields)
        headers = {}
    body = {"name": form["name"].strip(), "kind": kind, "address": form["address"].strip(), "headers": headers,
            "inside_network": form["inside_network"]}
    if form["secret"]:
        body["secret"] = form["secret"]
    try:
        values = editing.load(schema, body)
    except Invalid as error:
        errors.update({name: text for name, text in error.fields.items() if name not in errors})
        values = None
    if values is not None and not errors:
        problem = syncing.connection_problem(current_app.config, kind, values["address"], values.get("headers") or {})
        if problem:
            errors["address"] = problem
    if errors:
        raise Invalid({name: with_secret_hidden(text, form["secret"]) for name, text in errors.items()})
    return values


def with_secret_hidden(text, secret):
    """A refusal's sentence that never repeats the secret typed."""
    return text.replace(secret, "***") if secret else text


def render_list(form=None, errors=None, status=200):
    return render_template("connections.html", connections=listed(get_db()), form=form or BLANK,
                           errors=errors or {}, kinds=wording.SOURCE_KIND_WORDS), status


@bp.get("/connections")
@sessions.connection_managers_only
def show_connections():
    """Lists the connections of metric sources, with a form to add one."""
    return render_list()


@bp.post("/connections")
@sessions.connection_managers_only
def add_connection():
    """Adds a connection; its secret is sealed and never shown again."""
    form = typed_form()
    kind = form["kind"] if form["kind"] in wording.SOURCE_KIND_WORDS else ""
    try:
        values = checked(connection_schema, form, kind)
        secret = sealing.seal(current_app.config, form["secret"]) if form["secret"] else None
        connections.create(get_db(), values, secret)
    except Invalid as error:
        return render_list({**form, "kind": kind or "http_json"}, error.fields, 400)
    return redirect(url_for("web.show_connections") + "#connections-heading", 303)


def render_form(row, form, errors=None, status=200):
    return render_template("connection-form.html", connection={**row, "needs_secret": needs_secret(row)},
                           form=form, errors=errors or {}, kinds=wording.SOURCE_KIND_WORDS), status


@bp.route("/connections/<connection_id>/edit", methods=["GET", "POST"])
@sessions.connection_managers_only
def edit_connection(connection_id):
    """Shows a connection's form (its secret field empty), and saves it: an empty secret keeps the one it has."""
    db = get_db()
    stored = connections.get(db, connection_id)
    if request.method == "GET":
        return render_form(stored, shown(stored))
    form = typed_form()
    try:
        values = checked(connection_patch_schema, form, stored["kind"])
        secret = connections.KEEP
        if form["remove_secret"]:
            secret = None
        elif form["secret"]:
            secret = sealing.seal(current_app.config, form["secret"])
        changed = {name: values[name] for name in ("name", "address", "headers", "inside_network")}
        connections.update(db, stored, changed, secret)
    except Invalid as error:
        return render_form(stored, {**form, "kind": stored["kind"]}, error.fields, 400)
    return redirect(url_for("web.show_connections") + f"#c-{connection_id}", 303)


@bp.route("/connections/<connection_id>/delete", methods=["GET", "POST"])
@sessions.connection_managers_only
def delete_connection(connection_id):
    """Asks before deleting a connection, and deletes it; refused, saying why, while a source uses it."""
    db = get_db()
    row = connections.get(db, connection_id)
    if request.method == "GET":
        return editing.confirm_delete(f"Delete {row['name']}", f"the connection “{row['name']}”",
                                      ["Its secret goes with it."],
                                      url_for("web.edit_connection", connection_id=connection_id))
    try:
        connections.delete(db, row)
    except Conflict as error:
        raise PageError(409, "Not deleted", f"The connection “{row['name']}” was not deleted: {error}.") from None
    return redirect(url_for("web.show_connections"), 303)
