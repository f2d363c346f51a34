"""Schemathesis attacks the API through its own OpenAPI document, with every check on.

JSON Schema cannot say that a referenced id must exist, that a range's minimum
is not above its maximum, that a decimal has at most six fractional digits, or
which ETag a resource has now. So for the cases schemathesis generates as
valid, and only for those, the ids are pointed at real records, such values are
made consistent and most preconditions name the present ETag before the call;
for a PATCH, consistent once merged over the stored record. Negative cases go
out as generated, except that a well-formed path id mostly names a real
record, so that the invalid part of the case is what the service judges
rather than a 404.
"""
import json
import os
import random
import sqlite3
from contextlib import closing
from decimal import Decimal

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from marshmallow import ValidationError
from schemathesis.config import SchemathesisConfig

from helpers import make_user
from okr.rules.request_signature import authorization_header
from okr.clock import utc_now
from okr.store.schema import connect
from okr.rules.fields import canonical_decimal
from okr.api.openapi import TAGS
from okr.api.paging import encode_token
from okr.rules.ids import UUID_RE

# Hypothesis seeds the global random module afresh for every example, so random.random() would give
# every case the same answer (and never point a path at a record that exists): draw from our own.
chance = random.Random(None if os.environ.get("FUZZ_RANDOM") == "1" else 0)

REFERENCES = {"cycle_id": "cycles", "team_id": "teams", "assignee_id": "users",
              "parent_objective_id": "objectives", "objective_id": "objectives",
              "key_result_id": "key_results", "user_id": "users", "author_id": "users", "owner_id": "users",
              "comment_id": "comments", "checkin_id": "checkins", "connection_id": "connections",
              "initiative_id": "initiatives"}

# A 412 depends on the resource's state, not on the request's data, as a 404 does: an If-Match
# naming a tag the resource no longer has (or an empty one) fails whether the body is valid or not.
# A negative case's headers may be any at all, a Host among them: the host guard refuses a name it was
# not given with a 421 (documented on every operation), before the rest of the request is judged.
CHECKS = {
    "positive_data_acceptance": {"expected-statuses": ["2xx", "3xx", "401", "403", "404", "409", "412", "429",
                                                       "5xx"]},
    "negative_data_rejection": {"expected-statuses": ["400", "401", "403", "404", "405", "406", "409", "412",
                                                      "415", "421", "422", "428", "429", "5xx"]},
}


def config(tag=None):
    """Every check on; with a tag, the operations of other tags turned off."""
    operations = [] if tag is None else [{"exclude-tag": tag, "enabled": False}]
    return SchemathesisConfig.from_dict({"checks": CHECKS, "operations": operations})


@pytest.fixture
def api(app, runner):
    """The app behind an API key, with a user to assign objectives to, and an admin whose key changes comments."""
    result = runner.invoke(args=["keys", "create", "--name", "fuzzer", "--json"])
    app.config["FUZZ_KEY"] = json.loads(result.output)
    make_user(runner)
    runner.invoke(args=["users", "add", "--name", "Ann Admin", "--email", "ann@example.com", "--role", "admin"])
    result = runner.invoke(args=["keys", "create", "--name", "admin", "--user", "ann@example.com", "--json"])
    app.config["FUZZ_ADMIN_KEY"] = json.loads(result.output)
    # A connection a source may read: an SQLite file of one number (a source's own rules judge the query).
    figures = os.path.join(os.path.dirname(app.config["DATABASE"]), "figures.db")
    with closing(sqlite3.connect(figures)) as db:
        db.execute("CREATE TABLE figures (value REAL)")
        db.execute("INSERT INTO figures VALUES (12)")
        db.commit()
    made = app.test_client().post("/v1/connections", json={"name": "Figures", "kind": "sqlite", "address": figures},
                                  headers=signed(app, "FUZZ_ADMIN_KEY"))
    assert made.status_code == 200, made.get_json()
    return app


def schema_of(app, tag=None):
    return schemathesis.openapi.from_wsgi("/v1/openapi.json", app, config=config(tag))


# One test per tag (one per resource), so that xdist's workers share the fuzzing out.
@pytest.fixture(params=list(TAGS))
def api_schema(request, api):
    return schema_of(api, request.param)


schema = schemathesis.pytest.from_fixture("api_schema")


def signed(app, key_name="FUZZ_KEY"):
    key = app.config[key_name]
    return {"Authorization": authorization_header(key["credential"], key["secret"], utc_now())}


# A comment: only its author or an admin changes it, and the service key's comments have no author.
COMMENT = "/v1/comments/{comment_id}"
# A check-in: likewise its author's (for 7 days) or an admin's to correct; the service key's, only an admin's.
CHECKIN = "/v1/checkins/{checkin_id}"
# The inbox: a person's own (a service key has none, and would only ever be answered 403).
INBOX = ("/v1/me/notifications", "/v1/me/notifications/read")


@schema.auth(refresh_interval=None, retry_on=[])
class SimpleOkrSigning:
    """Signs every request afresh, as a Simple OKR client does."""

    def get(self, case, context):
        key_name = "FUZZ_ADMIN_KEY" if case.operation.path in (COMMENT, CHECKIN, *INBOX) else "FUZZ_KEY"
        return signed(case.operation.app, key_name)["Authorization"]

    def set(self, case, data, context):
        case.headers = {**(case.headers or {}), "Authorization": data}


def existing_id(app, table):
    """The id of some row of table, or None when it is empty."""
    db = connect(app.config["DATABASE"], 5000)
    try:
        row = db.execute(f"SELECT id FROM {table} ORDER BY random() LIMIT 1").fetchone()
    finally:
        db.close()
    return row[0] if row else None


def stored_row(app, table, row_id):
    """The row of table with this id, as a dict, or None."""
    db = connect(app.config["DATABASE"], 5000)
    try:
        row = db.execute(f"SELECT * FROM {table} WHERE id = ?", (row_id,)).fetchone()
    finally:
        db.close()
    return None if row is None else dict(row)


def a_cycle(app):
    found = existing_id(app, "cycles")
    if found:
        return found
    client = app.test_client()
    return client.post("/v1/cycles", json={"name": "fuzz"}, headers=signed(app)).get_json()["id"]


def a_team(app):
    """Some team's id; one is made when there is none (none made yet, or the fuzzer deleted them), so that a
    team's paths, its members' too, mostly reach a real team."""
    found = existing_id(app, "teams")
    if found:
        return found
    client = app.test_client()
    return client.post("/v1/teams", json={"name": "fuzz"}, headers=signed(app)).get_json()["id"]


def valid_decimal(value, low=-(10**15), high=10**15):
    try:
        number = Decimal(canonical_decimal(value))
    except ValidationError:
        return False
    return low <= number <= high and abs(number) < 10**15


def fix_decimals(body):
    for name in ("current_value", "target_value_min", "target_value_max", "value"):
        if body.get(name) is not None and not valid_decimal(body[name]):
            body[name] = chance.choice(["0", "12.5", "-3.25", 100])
    for name in ("confidence", "score"):  # a fraction from 0 to 1 (a score may also be null)
        if body.get(name) is not None and not valid_decimal(body[name], 0, 1):
            body[name] = chance.choice(["0", "0.75", 1])


def fix_targets(body):
    kind = body.get("type")
    low, high = body.get("target_value_min"), body.get("target_value_max")
    if kind in ("positive", "negative", "range") and low is None:
        body["target_value_min"] = low = "10"
    if kind == "range" and high is None:
        body["target_value_max"] = high = "20"
    if kind in ("positive", "negative", "milestone", "baseline"):
        body.pop("target_value_max", None)
    if kind == "baseline":
        body.pop("target_value_min", None)
    if kind == "milestone" and low is not None and Decimal(canonical_decimal(low)) != 1:
        body["target_value_min"] = "1"
    if kind == "range" and Decimal(canonical_decimal(low)) > Decimal(canonical_decimal(high)):
        body["target_value_min"], body["target_value_max"] = high, low


# A team member's path: a DELETE there mostly finds a member (make_consistent).
MEMBER = "/v1/teams/{team_id}/members/{user_id}"
# The record a PATCH path names: (table, path parameter).
PATCHED = {"/v1/objectives/{objective_id}": ("objectives", "objective_id"),
           "/v1/keyresults/{key_result_id}": ("key_results", "key_result_id"),
           "/v1/cycles/{cycle_id}": ("cycles", "cycle_id"),
           "/v1/comments/{comment_id}": ("comments", "comment_id"),
           "/v1/initiatives/{initiative_id}": ("initiatives", "initiative_id"),
           "/v1/checkins/{checkin_id}": ("checkins", "checkin_id"),
           "/v1/connections/{connection_id}": ("connections", "connection_id")}


def fix_dates(body):
    """A cycle's ends_on is not before its starts_on: swaps them when it is; whether it did."""
    starts_on, ends_on = body.get("starts_on"), body.get("ends_on")
    if isinstance(starts_on, str) and isinstance(ends_on, str) and ends_on < starts_on:
        body["starts_on"], body["ends_on"] = ends_on, starts_on
        return True
    return False


def make_patch_consistent(case, app, body):
    """A merge patch is validated merged over the stored record: makes that merge consistent."""
    table, parameter = PATCHED[case.operation.path]
    stored = stored_row(app, table, case.path_parameters[parameter])
    if stored is None or table in ("comments", "connections", "initiatives"):
        return  # a 404, whatever the body; a comment's, a connection's or an initiative's body is all JSON Schema says
    if table == "objectives":
        if body.get("is_company", stored["is_company"]) and body.get("is_personal", stored["is_personal"]):
            body["is_personal"] = False
        fix_decimals(body)  # its close-out score
        return
    if table == "checkins":
        fix_decimals(body)  # the stored value and confidence are valid; what the patch sends must be too
        return
    if table == "cycles":
        merged = {"starts_on": stored["starts_on"], "ends_on": stored["ends_on"], **body}
        if fix_dates(merged):
            body["starts_on"], body["ends_on"] = merged["starts_on"], merged["ends_on"]
        return
    fix_decimals(body)
    targets = ("type", "target_value_min", "target_value_max")
    merged = {**{name: stored[name] for name in targets}, **body}
    fix_targets(merged)
    for name in targets[1:]:
        # Send a target only where the patch did, or where the stored one no longer fits.
        if name in body or merged.get(name) != stored[name]:
            body[name] = merged.get(name)


def present_etag(case, app):
    """The ETag of the resource a case's precondition is about, or None when it does not exist."""
    # A check-in's If-Match is about its key result.
    path = case.formatted_path.removesuffix("/checkins")
    return app.test_client().get(path, headers=signed(app)).headers.get("ETag")


def make_preconditions_hold(case, app):
    """Mostly, If-Match names the present ETag or *; If-None-Match half the time. Else as generated."""
    headers = case.headers or {}
    for name, odds in (("If-Match", 0.8), ("If-None-Match", 0.5)):
        if name in headers and chance.random() < odds:
            tag = present_etag(case, app)
            headers[name] = chance.choice([tag, "*", f'"0", {tag}']) if tag else "*"


def make_consistent(case, app):
    """Turns a schema-valid case into one the service's cross-field rules accept too."""
    for name in list(case.path_parameters or {}):
        if chance.random() < 0.7:  # most of the time, a record that exists
            found = a_team(app) if name == "team_id" else existing_id(app, REFERENCES[name])
            case.path_parameters[name] = found or case.path_parameters[name]
    if case.operation.path == MEMBER and case.method.upper() == "DELETE" and chance.random() < 0.5:
        # Half the time, a membership to remove: else nearly every pair is none, and the answer a 404.
        app.test_client().put(case.formatted_path, headers=signed(app))
    make_preconditions_hold(case, app)
    query = case.query or {}
    if "page_token" in query:
        query["page_token"] = encode_token(chance.randrange(0, 10**6))
    if "cycle_id" in query and chance.random() < 0.7:
        query["cycle_id"] = a_cycle(app)
    if "after" in query and chance.random() < 0.7:
        query["after"] = existing_id(app, "events") or query["after"]  # else always the 400 of an unknown event
    if "resource_id" in query and chance.random() < 0.5:
        query["resource_id"] = existing_id(app, "objectives") or query["resource_id"]
    for name in ("team_id", "assignee_id", "parent_objective_id"):
        if name in query and query[name] != "none" and chance.random() < 0.5:
            query[name] = existing_id(app, REFERENCES[name]) or query[name]  # filters that match rows
    body = case.body
    if not isinstance(body, dict):
        return
    if "cycle_id" in body:
        body["cycle_id"] = a_cycle(app)
    for field in ("team_id", "assignee_id", "parent_objective_id", "author_id", "owner_id", "connection_id"):
        if body.get(field) is not None:
            body[field] = existing_id(app, REFERENCES[field])
    patching = case.method.upper() == "PATCH"
    if case.operation.path == "/v1/objectives/{objective_id}" and (not patching or "parent_objective_id" in body):
        body["parent_objective_id"] = None  # an existing parent could close a loop; a stored one does not
    if body.get("is_company") and body.get("is_personal"):
        body["is_personal"] = False
    fix_dates(body)
    if patching:
        make_patch_consistent(case, app, body)
    elif "type" in body or "value" in body:
        fix_decimals(body)
        fix_targets(body)


def aim_negative_case(case, app):
    """Points the well-formed path ids of an invalid case at real records, and mostly makes its If-Match
    hold, so that what is invalid in it (the body, a query argument) is what the service judges."""
    ids = case.path_parameters or {}
    if not all(isinstance(value, str) and UUID_RE.fullmatch(value) for value in ids.values()):
        return  # a malformed id is the case's invalid part: it goes out as generated
    for name, value in ids.items():
        if chance.random() < 0.7:
            ids[name] = existing_id(app, REFERENCES[name]) or value
    headers = case.headers or {}
    if "If-Match" in headers and chance.random() < 0.7:
        headers["If-Match"] = present_etag(case, app) or "*"  # else a stale tag answers 412 first


# CI runs a fixed, repeatable set of examples; FUZZ_EXAMPLES=2000 FUZZ_RANDOM=1 digs deeper.
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "50"))
RANDOM = os.environ.get("FUZZ_RANDOM") == "1"


@schema.parametrize()
@settings(max_examples=EXAMPLES, derandomize=not RANDOM, deadline=None,
          suppress_health_check=list(HealthCheck), database=None)
@pytest.mark.slow
def test_api_survives_the_fuzzer(case, api):
    if case.meta is not None and case.meta.generation.mode.is_positive:
        make_consistent(case, api)
    elif case.meta is not None:
        aim_negative_case(case, api)
    case.call_and_validate()


def test_the_fuzzer_reaches_every_documented_operation(api):
    """Schemathesis reads every operation of the document, none is skipped as unreadable, and the tags that
    split the fuzzing cover them all."""
    document = api.test_client().get("/v1/openapi.json").get_json()
    documented = {(method.upper(), path) for path, item in document["paths"].items()
                  for method in item if method != "parameters"}
    fuzzed = {(result.ok().method.upper(), result.ok().path)
              for tag in TAGS for result in schema_of(api, tag).get_all_operations()}
    assert len(fuzzed) == sum(1 for tag in TAGS for _ in schema_of(api, tag).get_all_operations())  # each once
    # The document itself is left out: schemathesis does not fuzz the endpoint it reads the schema from.
    assert fuzzed == documented - {("GET", "/v1/openapi.json")}
    assert ("POST", "/v1/keyresults/{key_result_id}/checkins") in fuzzed
    assert {("GET", "/v1/me"), ("GET", "/v1/teams/{team_id}/members"), ("PUT", MEMBER), ("DELETE", MEMBER)} <= fuzzed
    assert {("PATCH", "/v1/cycles/{cycle_id}"), ("GET", "/v1/cycles/{cycle_id}/report.csv")} <= fuzzed
    assert {("GET", "/v1/cycles/{cycle_id}/retrospective"), ("GET", "/v1/cycles/{cycle_id}/calibration")} <= fuzzed
    assert ("GET", "/v1/cycles/{cycle_id}/checks") in fuzzed
    assert {("POST", "/v1/keyresults/{key_result_id}/initiatives"), ("PATCH", "/v1/initiatives/{initiative_id}"),
            ("DELETE", "/v1/initiatives/{initiative_id}")} <= fuzzed
    assert ("GET", "/v1/events") in fuzzed
    assert {("GET", INBOX[0]), ("POST", INBOX[1])} <= fuzzed
    parents = ("/v1/objectives/{objective_id}/comments", "/v1/keyresults/{key_result_id}/comments")
    assert {(method, path) for method in ("POST", "GET") for path in parents} <= fuzzed
    assert {(method, path) for method in ("GET", "PATCH", "DELETE") for path in (COMMENT, CHECKIN)} <= fuzzed
