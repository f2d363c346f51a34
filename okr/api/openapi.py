"""GET /v1/openapi.json: the OpenAPI 3 document, generated from the request schemas.

Request bodies come from the marshmallow schemas that validate them, so the
document cannot drift from what the service accepts. Response bodies are
described by small schemas here, which exist only for the document: the views
build responses straight from rows. Two rules that marshmallow fields do not
carry are added to the built document: every id is a lowercase UUID, and a key
result's targets depend on its type (a oneOf with a discriminator on type).
"""
import copy
from functools import cache

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Blueprint, current_app
from flask import request as incoming  # build_document has a `request` of its own
from marshmallow import Schema, fields

from .. import progress, settings
from ..progress import STALE_AFTER
from ..reports import quality
from ..rules import body_schemas
from ..rules.fields import (DECIMAL_TEXT, ISO_DATE, MAX_FRACTION_DIGITS, MAX_INTEGER_DIGITS, DateText, DecimalString,
                            StrictBool, Text, UnitPosition, UnitText, WHITESPACE, WebLink, WholeNumber)
from ..rules.ids import UUID_PATTERN
from ..store import key_results, notifications, search, users
from ..store.events import MAX_ID_LENGTH, PAGE_BYTES
from .auth import SCHEME
from .bodies import MAX_BODY_BYTES
from .paging import BOOLEANS, MAX_PAGE_SIZE, PAGE_SIZE

bp = Blueprint("openapi", __name__)

DECIMAL_OUT = rf"^-?[0-9]+\.[0-9]{{2,{MAX_FRACTION_DIGITS}}}$"
TIMESTAMP = {"type": "string", "format": "date-time", "example": "2026-11-22T10:15:30Z"}
UUID = f"^{UUID_PATTERN}$"
# A path's or a query's id, as the answers' ids are described (id_patterns).
UUID_ARGUMENT = {"type": "string", "format": "uuid", "pattern": UUID}
# A page token is the base64url of a row's seq, in ASCII digits (okr/api/paging.py). Each 4 characters hold 3
# digits: the first and second say 0011 (digits are 0x30-0x39) and the digit's top bits, the third and fourth
# the next two digits' bits.
TOKEN_HEAD = "(?:[MN][DTjz]|O[DT])"  # the first digit, and the next one's top half
TOKEN_GROUP = f"{TOKEN_HEAD}[AEIMQUYcgk][w-z0-5]"  # three digits
# What paging.decode_token accepts, no more: padding optional, any '=' after a whole group, and the bits that
# pad a last partial group not checked (Python's base64 ignores them), '+' and '/' included.
PAGE_TOKEN = (f"^(?:{TOKEN_GROUP})*(?:{TOKEN_GROUP}=*|[MN][A-Za-z0-9+/_-](?:==?)?|O[A-Za-f](?:==?)?"
              f"|{TOKEN_HEAD}[A-Za-n]=?)?$")
# What paging.encode_token gives: padded, the unused bits zero, never empty.
NEXT_PAGE_TOKEN = f"^(?:{TOKEN_GROUP})*(?:{TOKEN_GROUP}|[MN][AQgw]==|O[AQ]==|{TOKEN_HEAD}[AEIMQUYcgk]=)$"
# A progress figure (okr.progress.figure): from 0 to 1, two decimals.
PROGRESS = r"^(0\.[0-9]{2}|1\.00)$"


def uuid_field(**kwargs):
    return fields.String(required=True, metadata={"format": "uuid"}, **kwargs)  # id_patterns adds the pattern


def timestamp_field():
    return fields.String(required=True, metadata=TIMESTAMP)


def decimal_field(metadata=(), **kwargs):
    return fields.String(required=True, metadata={"pattern": DECIMAL_OUT, "example": "0.50", **dict(metadata)},
                         **kwargs)


class Objective(Schema):
    id = uuid_field()
    name = fields.String(required=True)
    created_at = timestamp_field()
    modified_at = timestamp_field()
    team_id = uuid_field(allow_none=True)
    assignee_id = uuid_field(allow_none=True)
    description = fields.String(required=True, allow_none=True)
    is_personal = fields.Boolean(required=True)
    is_company = fields.Boolean(required=True)
    parent_objective_id = uuid_field(allow_none=True)
    cycle_id = uuid_field()


SCORE = r"^(0\.[0-9]{2}|1\.00)$"


def score_field(description):
    return fields.String(required=True, allow_none=True, metadata={"pattern": SCORE, "example": "0.70",
                                                                   "description": description})


class ObjectiveDetails(Objective):
    outcome = fields.String(required=True, allow_none=True, metadata={
        "enum": [*body_schemas.OUTCOMES, None],
        "description": "How it ended, given as its cycle is closed out; null until then."})
    score = score_field("Its final score (0.00 to 1.00), given as its cycle is closed out; null until then.")
    reflection = fields.String(required=True, allow_none=True, metadata={
        "description": "What worked, what did not, what next; null when none was written."})
    carried_from_id = uuid_field(allow_none=True)  # the objective of an earlier cycle it was carried over from
    visibility = fields.String(required=True, metadata={
        "enum": list(body_schemas.VISIBILITIES),
        "description": "Who may see it: everyone, team (its team's members) or private; its assignee, its key "
                       "results' owners, its creator and admins always do. Whoever may not see it gets 404."})


class KeyResult(Schema):
    id = uuid_field()
    name = fields.String(required=True)
    created_at = timestamp_field()
    modified_at = timestamp_field()
    objective_id = uuid_field()
    confidence = decimal_field()
    type = fields.String(required=True, metadata={"enum": list(body_schemas.KEY_RESULT_TYPES)})
    current_value = decimal_field()
    target_value_min = decimal_field(allow_none=True)
    target_value_max = decimal_field(allow_none=True)


class Cycle(Schema):
    id = uuid_field()
    name = fields.String(required=True)
    created_at = timestamp_field()


class Team(Cycle):
    pass


def date_field(description):
    return fields.String(required=True, allow_none=True, metadata={
        "format": "date", "example": "2026-10-01", "description": description})


class CycleDetails(Cycle):
    starts_on = date_field("The cycle's first day, or null (an open start).")
    ends_on = date_field("The cycle's last day, or null (an open end).")
    state = fields.String(required=True, metadata={
        "enum": ["current", "upcoming", "finished"],
        "description": "upcoming before starts_on, finished after ends_on, current in between (by today's date "
                       "in UTC; a cycle without dates is current)."})
    closed_at = fields.String(required=True, allow_none=True, metadata={
        "format": "date-time", "example": "2026-11-22T10:15:30Z",
        "description": "When it was closed (it is then locked), or null while it is open."})
    closed_by = uuid_field(allow_none=True)  # the user who closed it, or null (open, or closed by a service key)


class KeyResultDetails(KeyResult):
    owner_id = uuid_field(allow_none=True)  # the user who owns it, or null
    unit = fields.String(required=True, allow_none=True, metadata={
        "example": "$", "description": "What it counts, shown with its figures (\"$\", \"%\", \"ms\", \"users\"), "
                                       "or null: PATCH sets it."})
    unit_position = fields.String(required=True, allow_none=True, metadata={
        "enum": ["before", "after", None],
        "description": "Where the unit goes: before the number ($60,000) or after it (12 ms); null without a unit."})
    score = score_field("Its final score (0.00 to 1.00), given as its cycle is closed out; null until then.")
    weight = fields.Integer(required=True, metadata={
        "minimum": 0, "maximum": 100, "example": 1,
        "description": "How much it counts in its objective's progress (a weighted mean of its key results'): 0 "
                       "(not at all) to 100, 1 by default. PATCH sets it."})
    progress_from = fields.String(required=True, metadata={
        "enum": ["measure", "initiatives"],
        "description": "Where its progress comes from: its measure (its values against its targets, the spec's "
                       "rule) or the share of its initiatives done. PATCH sets it."})


class User(Schema):
    id = uuid_field()
    name = fields.String(required=True)
    email = fields.String(required=True, metadata={"format": "email"})
    is_active = fields.Boolean(required=True)
    created_at = timestamp_field()


class SigningKey(Schema):
    credential = fields.String(required=True)
    name = fields.String(required=True)
    read_only = fields.Boolean(required=True, metadata={"description": "A read-only key only reads."})


class Me(Schema):
    user = fields.Nested(User, required=True, allow_none=True, metadata={
        "description": "The user whose key signs the request, as GET /v1/users/{user_id} gives it; null for a "
                       "service key (one without a user), and while auth is off."})
    role = fields.String(required=True, allow_none=True, metadata={
        "enum": [*users.ROLES, None],
        "description": "The user's role: a viewer only reads, an editor also writes, an admin also manages "
                       "people. Null for a service key (it writes like an editor) and while auth is off."})
    key = fields.Nested(SigningKey, required=True, allow_none=True, metadata={
        "description": "The API key that signs the request; null while auth is off."})


class Checkin(Schema):
    id = uuid_field()
    key_result_id = uuid_field()
    value = decimal_field()
    confidence = decimal_field()
    comment = fields.String(required=True, allow_none=True)
    author_id = uuid_field(allow_none=True)
    created_at = timestamp_field()


# What an event names a resource or an actor by: a UUID, or an API key's credential (any text up to a limit).
RESOURCE_ID = f"^[^\\u0000-\\u001f]{{1,{MAX_ID_LENGTH}}}$"


class EventActor(Schema):
    type = fields.String(required=True, metadata={"enum": ["user", "key", "system", "source"]})
    id = fields.String(required=True, allow_none=True, metadata={
        "pattern": RESOURCE_ID, "description": "A user's id, an API key's credential; null for the system."})
    name = fields.String(required=True, allow_none=True)
    key = fields.Dict(metadata={"description": "A person acting through their own API key: the key's id "
                                               "(credential) and name."})


class EventResource(Schema):
    type = fields.String(required=True, metadata={"example": "objective"})
    id = fields.String(required=True, metadata={"pattern": RESOURCE_ID,
                                                "description": "Its id; an API key's is its credential."})


class Event(Schema):
    id = uuid_field()
    type = fields.String(required=True, metadata={
        "example": "objective.updated",
        "description": "<resource>.created, .updated or .deleted (cycle, team, objective, key_result, checkin, "
                       "comment, user, key), team.member_added and team.member_removed, or data.imported "
                       "(okr import)."})
    created_at = timestamp_field()
    actor = fields.Nested(EventActor, required=True)
    resource = fields.Nested(EventResource, required=True)
    data = fields.Dict(required=True, metadata={
        "description": "The resource as the API shows it after the change; before it, for a delete."})
    changes = fields.Dict(metadata={"description": "Updates only: {field: [before, after]} of each field that "
                                                   "changed."})
class Comment(Schema):
    id = uuid_field()
    body = fields.String(required=True, metadata={
        "description": "Plain text, as written (line breaks kept); never read as Markdown or HTML."})
    objective_id = uuid_field(allow_none=True)  # exactly one of the two is set: what the comment is on
    key_result_id = uuid_field(allow_none=True)
    author_id = uuid_field(allow_none=True)
    created_at = timestamp_field()
    modified_at = timestamp_field()


class Initiative(Schema):
    id = uuid_field()
    key_result_id = uuid_field()
    name = fields.String(required=True)
    owner_id = uuid_field(allow_none=True)  # the user who does it, or null
    state = fields.String(required=True, metadata={"enum": list(body_schemas.INITIATIVE_STATES)})
    due_on = fields.String(required=True, allow_none=True, metadata={
        "format": "date", "example": "2026-12-15", "description": "When it is due, or null."})
    link = fields.String(required=True, allow_none=True, metadata={
        "format": "uri", "description": "The ticket or page elsewhere that tracks it (http or https), or null."})
    created_at = timestamp_field()
    modified_at = timestamp_field()


def text_field(description, allow_none=True, **metadata):
    return fields.String(required=True, allow_none=allow_none, metadata={"description": description, **metadata})


def moment_field(description):
    return fields.String(required=True, allow_none=True, metadata={
        "format": "date-time", "example": "2026-11-22T10:15:30Z", "description": description})


SHA256 = {"pattern": "^[0-9a-f]{64}$"}


class Connection(Schema):
    id = uuid_field()
    name = text_field("What people call it (unique).", allow_none=False)
    kind = fields.String(required=True, metadata={"enum": list(body_schemas.SOURCE_KINDS)})
    address = text_field("A base URL (http_json, csv, prometheus), postgresql://user@host:port/db, or an SQLite "
                         "file's path.", allow_none=False)
    headers = fields.Dict(required=True, keys=fields.String(), values=fields.String(), metadata={
        "description": "Headers sent with each request (HTTP kinds); {secret} in a value stands for the secret."})
    has_secret = fields.Boolean(required=True, metadata={"description": "Whether it has a secret (never shown)."})
    needs_secret = fields.Boolean(required=True, metadata={
        "description": "Its secret is sealed under a key this server does not have (a restored database): give "
                       "it again; its sources fail until then."})
    inside_network = fields.Boolean(required=True, metadata={
        "description": "Private and loopback addresses allowed (HTTP kinds); link-local and metadata never."})
    sources = fields.Integer(required=True, metadata={"description": "How many key results read it."})
    created_at = timestamp_field()
    modified_at = timestamp_field()


class Source(Schema):
    id = uuid_field()
    key_result_id = uuid_field()
    connection_id = uuid_field()
    connection_name = text_field("The connection's name: the author of the values it writes.", allow_none=False)
    kind = fields.String(required=True, metadata={"enum": list(body_schemas.SOURCE_KINDS)})
    query = text_field("The URL's path and query, the SQL or the PromQL.", allow_none=False)
    path = text_field("The JSONPath (http_json) or the cell (csv), else null.")
    every_minutes = fields.Integer(required=True, metadata={"minimum": 15, "maximum": 1440})
    takes_as_of = fields.Boolean(required=True, metadata={
        "description": "Whether it reads a past moment ({as_of}, :as_of, or Prometheus): it can fill back."})
    state = fields.String(required=True, metadata={"enum": ["active", "failing", "stopped"]})
    failures = fields.Integer(required=True, metadata={"description": "Failures in a row."})
    failing_since = moment_field("The first of the failures in a row, or null.")
    last_error = text_field("Why the last run failed, in plain words, or null.")
    last_run_at = moment_field("When it last ran, or null.")
    next_run_at = moment_field("When it runs next (stopped: not until started again).")
    created_at = timestamp_field()
    modified_at = timestamp_field()


class SourceTest(Schema):
    ok = fields.Boolean(required=True, metadata={"description": "Whether it read a number."})
    error = text_field("Why it read none, in plain words; null when ok.")
    value = fields.String(required=True, allow_none=True, metadata={"pattern": DECIMAL_OUT})
    request = text_field("The URL or query as run, secrets as ***; null when it failed.")
    sha256 = fields.String(required=True, allow_none=True, metadata=SHA256)
    answer_size = fields.Integer(required=True, allow_none=True)
    answer_excerpt = text_field("The answer's first 2,000 bytes as text.")


class SourceRun(Schema):
    outcome = fields.String(required=True, metadata={"enum": ["written", "unchanged", "failed", "idle"]})
    reason = text_field("idle: why nothing was read (its cycle has not begun, has ended, or is closed).")
    value = fields.String(required=True, allow_none=True, metadata={"pattern": DECIMAL_OUT})
    checkin_id = uuid_field(allow_none=True)  # written: the new check-in
    error = text_field("failed: why, in plain words.")
    failures = fields.Integer(required=True, allow_none=True)
    state = fields.String(required=True, allow_none=True, metadata={"enum": ["active", "failing", "stopped", None]})


class SourceFill(Schema):
    outcome = fields.String(required=True, metadata={"enum": ["filled", "failed"]})
    read = fields.Integer(required=True, metadata={"description": "The moments read."})
    written = fields.Integer(required=True, metadata={"description": "The check-ins written (changes only)."})
    error = text_field("failed: why, in plain words (nothing was written).")


class Evidence(Schema):
    checkin_id = uuid_field()
    key_result_id = uuid_field()
    value = decimal_field()
    source_name = text_field("The connection's name when it wrote the value.", allow_none=False)
    request = text_field("The URL or query as run, secrets as ***.", allow_none=False)
    as_of = moment_field("The moment asked for.")
    read_at = timestamp_field()
    sha256 = fields.String(required=True, metadata=SHA256)
    answer_size = fields.Integer(required=True)
    answer_kept = fields.Integer(required=True, metadata={"description": "Bytes kept (the first 64 KB)."})


class Recomputation(Schema):
    checkin_id = uuid_field()
    matches = fields.Boolean(required=True, metadata={"description": "The answer has the same SHA-256."})
    value_matches = fields.Boolean(required=True)
    value = fields.String(required=True, allow_none=True, metadata={"pattern": DECIMAL_OUT})
    value_then = fields.String(required=True, allow_none=True, metadata={"pattern": DECIMAL_OUT})
    sha256 = fields.String(required=True, allow_none=True, metadata=SHA256)
    sha256_then = fields.String(required=True, allow_none=True, metadata=SHA256)
    read_at = moment_field("When it was read again.")
    read_at_then = moment_field("When the value was read.")
    error = text_field("Why it read nothing now, or null.")


class Notification(Schema):
    id = uuid_field()
    kind = fields.String(required=True, metadata={
        "enum": list(notifications.KINDS),
        "description": "mentioned: in a comment or a reflection; commented: on an objective you are assigned or a "
                       "key result you own; changed: your key result checked in or edited by someone else; "
                       "source_failed: your key result's metric source is failing; checkin_due: your key results "
                       "had no check-in this week."})
    created_at = timestamp_field()
    read_at = moment_field("When it was marked read; null while unread.")
    actor_id = uuid_field(allow_none=True)  # who caused it; null for the service itself
    actor_name = text_field("Their name, as it is now.")
    objective_id = uuid_field(allow_none=True)
    objective_name = text_field("The objective's name (a key result's objective's), as it is now.")
    key_result_id = uuid_field(allow_none=True)
    key_result_name = text_field("The key result's name, as it is now.")
    comment_id = uuid_field(allow_none=True)
    comment_body = text_field("The comment's text, as it is now (plain text).")


class NotificationsMarked(Schema):
    marked = fields.Integer(required=True, metadata={"description": "How many were unread and are now read."})
    unread = fields.Integer(required=True, metadata={"description": "How many are unread now."})


def page_of(name, item, title=None):
    return type(title or f"{item.__name__}Page", (Schema,), {
        "next_page_token": fields.String(required=True, allow_none=True, metadata={
            "pattern": NEXT_PAGE_TOKEN, "example": "MTI=",
            "description": "Pass it as page_token for the next page; null on the last page."}),
        name: fields.List(fields.Nested(item), required=True),
    })


ObjectivePage = page_of("objectives", Objective)
ConnectionPage = page_of("connections", Connection)
KeyResultPage = page_of("keyresults", KeyResult)
CyclePage = page_of("cycles", Cycle)
TeamPage = page_of("teams", Team)
UserPage = page_of("users", User)
CheckinPage = page_of("checkins", Checkin)
EventPage = page_of("events", Event)
CommentPage = page_of("comments", Comment)
InitiativePage = page_of("initiatives", Initiative)
NotificationPage = page_of("notifications", Notification)


class SearchResult(Schema):
    type = fields.String(required=True, metadata={"enum": list(search.KINDS)})
    id = uuid_field()
    name = fields.String(required=True, metadata={"description": "The objective's, key result's or team's name; a "
                                                                 "user's is the person's name."})
    cycle_id = uuid_field(allow_none=True)  # an objective's or a key result's; else null
    objective_id = uuid_field(allow_none=True)  # a key result's; else null


SearchPage = page_of("results", SearchResult, "SearchPage")


def progress_field():
    return fields.String(required=True, allow_none=True, metadata={
        "pattern": PROGRESS, "example": "0.67",
        "description": "From 0.00 to 1.00; null where nothing has a progress (only baselines, or nothing)."})


# Worst first, as okr.progress.STATUSES orders them.
STATUS_ENUM = list(progress.STATUSES)
PACE_ENUM = ["off_track", "at_risk", "on_track"]


class KeyResultNode(KeyResultDetails):
    start_value = decimal_field(metadata={"description": "The value of its first check-in."})
    progress = progress_field()
    status = fields.String(required=True, metadata={
        "enum": STATUS_ENUM,
        "description": "done when its progress is exactly 1 (a range: in its band once its cycle has ended); "
                       "no_update while it has had no check-in since it was created; else the worse of pace_status "
                       "and the confidence's status (at least 0.70 on track, at least 0.40 at risk, else off "
                       "track)."})
    stale = fields.Boolean(required=True, metadata={
        "description": f"No check-in for more than {STALE_AFTER.days} days (never in a finished cycle)."})
    last_checkin_at = timestamp_field()
    expected_progress = fields.String(required=True, allow_none=True, metadata={
        "pattern": PROGRESS, "example": "0.50",
        "description": "How much of its cycle has gone by (0.00 to 1.00): the progress expected by now; null when "
                       "its cycle lacks a start or an end date."})
    pace_status = fields.String(required=True, allow_none=True, metadata={
        "enum": [*PACE_ENUM, None],
        "description": "expected_progress minus progress: at most 0.10 on track, at most 0.25 at risk, else off "
                       "track (a range: on track inside its band, off track outside); null without "
                       "expected_progress or for a baseline."})
    initiatives_count = fields.Integer(required=True, metadata={
        "minimum": 0, "maximum": 50, "description": "How many initiatives it has."})
    initiatives_done = fields.Integer(required=True, metadata={
        "minimum": 0, "maximum": 50, "description": "How many of its initiatives are done."})


class ObjectiveNode(ObjectiveDetails):
    progress = progress_field()
    progress_from = fields.String(required=True, allow_none=True, metadata={
        "enum": ["key_results", "children", None],
        "description": "key_results: the mean of its own key results' progress; children: it has no key results, "
                       "so the mean of its aligned children's in its cycle (recursively); null: no progress."})
    status = fields.String(required=True, allow_none=True, metadata={
        "enum": [*STATUS_ENUM, None],
        "description": "The worst of its key results' statuses (done only when all are done); without key results, "
                       "the worst of its aligned children's in its cycle; null when there is none."})
    key_results = fields.List(fields.Nested(KeyResultNode), required=True)
    # Recursive: descendants in creation order.
    children = fields.List(fields.Nested(lambda: ObjectiveNode), required=True)


class StatusCounts(Schema):
    off_track = fields.Integer(required=True, metadata={"minimum": 0})
    at_risk = fields.Integer(required=True, metadata={"minimum": 0})
    no_update = fields.Integer(required=True, metadata={"minimum": 0})
    on_track = fields.Integer(required=True, metadata={"minimum": 0})
    done = fields.Integer(required=True, metadata={"minimum": 0})


class ReportCycle(CycleDetails):
    elapsed = fields.String(required=True, allow_none=True, metadata={
        "pattern": PROGRESS, "example": "0.50",
        "description": "How much of the cycle has gone by today (UTC), from 0.00 to 1.00; null unless it has both "
                       "dates."})
    status_counts = fields.Nested(StatusCounts, required=True, metadata={
        "description": "How many of the report's key results have each status."})


class CycleReport(Schema):
    cycle = fields.Nested(ReportCycle, required=True)
    progress = progress_field()
    objectives_count = fields.Integer(required=True, metadata={
        "minimum": 0, "description": "How many of its objectives the reader may see."})
    key_results_count = fields.Integer(required=True, metadata={
        "minimum": 0, "description": "How many key results of those objectives there are."})
    hidden_objectives_count = fields.Integer(required=True, metadata={"minimum": 0, "description": (
        "How many of its objectives the reader may not see: counted in its progress and their parents', shown "
        "nowhere; 0 for whoever sees everything.")})
    objectives = fields.List(fields.Nested(ObjectiveNode), required=True)


class ObjectiveReport(Schema):
    objective = fields.Nested(ObjectiveNode, required=True)
    hidden_objectives_count = fields.Integer(required=True, metadata={"minimum": 0, "description": (
        "How many of its aligned descendants the reader may not see: counted in the figures, shown nowhere.")})


# A figure that may be negative (a change of progress, an over-confidence): two decimals, -1.00 to 1.00.
SIGNED_FIGURE = r"^-?(0\.[0-9]{2}|1\.00)$"


def figure_field(description, signed=False):
    return fields.String(required=True, allow_none=True, metadata={
        "pattern": SIGNED_FIGURE if signed else PROGRESS, "example": "0.25", "description": description})


class ChosenTeam(Schema):
    id = uuid_field()
    name = fields.String(required=True)


class CalledGreenLandedRed(Schema):
    id = uuid_field()
    name = fields.String(required=True)
    objective_id = uuid_field()
    confidence = fields.String(required=True, metadata={
        "example": "0.80", "description": "The confidence of its last check-in of 0.70 or more in the cycle's last "
                                          "third."})
    checked_in_at = timestamp_field()
    final_score = figure_field("Its final score, below 0.40.")


class CalibrationGroup(Schema):
    name = fields.String(required=True, metadata={"description": "The owner's or team's name; \"No owner\" or "
                                                                 "\"No team\" for the key results without one."})
    key_results = fields.Integer(required=True, metadata={
        "minimum": 0, "description": "Its key results with a final score (a baseline nobody scored has none)."})
    checkins = fields.Integer(required=True, metadata={
        "minimum": 0, "description": "The check-ins people made on them (not their starting check-ins)."})
    brier = figure_field("The mean over those check-ins of (confidence - achieved)^2, achieved 1 when the key "
                         "result's final score is at least 0.70, else 0; null without check-ins.")
    over_confidence = figure_field("The mean over the same check-ins of confidence - achieved (negative: "
                                   "under-confident); null without check-ins.", signed=True)
    called_green_landed_red = fields.List(fields.Nested(CalledGreenLandedRed), required=True, metadata={
        "description": "Key results given a confidence of 0.70 or more at a check-in in the cycle's last third "
                       "that ended with a final score below 0.40."})


class OwnerCalibration(CalibrationGroup):
    owner_id = uuid_field(allow_none=True)  # null: the key results without an owner


class TeamCalibration(CalibrationGroup):
    team_id = uuid_field(allow_none=True)  # null: the key results of objectives without a team


class CalibrationGroups(Schema):
    owners = fields.List(fields.Nested(OwnerCalibration), required=True)
    teams = fields.List(fields.Nested(TeamCalibration), required=True)


class RetrospectiveHeading(Schema):
    cycle = fields.Nested(CycleDetails, required=True)
    team = fields.Nested(ChosenTeam, required=True, allow_none=True, metadata={
        "description": "The team asked for with team_id, or null for the whole cycle."})
    as_of = fields.String(required=True, metadata={
        **TIMESTAMP, "description": "The moment the figures are of: the cycle's closed_at, or now while it is open."})
    closed = fields.Boolean(required=True)


class Calibration(RetrospectiveHeading, CalibrationGroups):
    achieved_from = fields.String(required=True, metadata={
        "example": "0.70", "description": "The final score from which a key result counts as achieved."})


class RetrospectiveKeyResult(Schema):
    id = uuid_field()
    name = fields.String(required=True)
    type = fields.String(required=True, metadata={"enum": list(body_schemas.KEY_RESULT_TYPES)})
    owner_id = uuid_field(allow_none=True)
    owner_name = fields.String(required=True, allow_none=True)
    score = score_field("Its score given at the close-out, or null.")
    progress_at_start = figure_field("Its progress at its starting check-in; null for a baseline.")
    progress_at_close = figure_field("Its progress at its last check-in up to the close; null for a baseline.")
    status = fields.String(required=True, metadata={"enum": STATUS_ENUM})
    final_score = figure_field("score when set, else progress_at_close; null for a baseline nobody scored.")
    achieved = fields.Boolean(required=True, allow_none=True, metadata={
        "description": "final_score is at least 0.70; null without one."})


class RetrospectiveObjective(Schema):
    id = uuid_field()
    name = fields.String(required=True)
    parent_objective_id = uuid_field(allow_none=True)
    team_id = uuid_field(allow_none=True)
    team_name = fields.String(required=True, allow_none=True)
    outcome = fields.String(required=True, allow_none=True, metadata={"enum": [*body_schemas.OUTCOMES, None]})
    score = score_field("Its score given at the close-out, or null.")
    reflection = fields.String(required=True, allow_none=True)
    carried_from_id = uuid_field(allow_none=True)
    progress = figure_field("Its progress at the close, as its report shows it.")
    status = fields.String(required=True, allow_none=True, metadata={"enum": [*STATUS_ENUM, None]})
    key_results = fields.List(fields.Nested(RetrospectiveKeyResult), required=True)


class Mover(Schema):
    id = uuid_field()
    name = fields.String(required=True)
    objective_id = uuid_field()
    progress_at_start = figure_field("Progress at its starting check-in.")
    progress_at_close = figure_field("Progress at its last check-in up to the close.")
    change = figure_field("progress_at_close - progress_at_start.", signed=True)


class Movers(Schema):
    rose = fields.List(fields.Nested(Mover), required=True, metadata={
        "description": "The five key results whose progress rose most (ties in creation order)."})
    fell = fields.List(fields.Nested(Mover), required=True, metadata={
        "description": "The five that fell most or stayed flat (change 0 or below), lowest first."})


class WentOffTrack(Schema):
    id = uuid_field()
    name = fields.String(required=True)
    objective_id = uuid_field()
    owner_id = uuid_field(allow_none=True)
    off_track_since = fields.String(required=True, metadata={
        **TIMESTAMP, "description": "When the first check-in after which it stayed off track was made."})


class CarriedObjective(Schema):
    id = uuid_field()
    name = fields.String(required=True)


class CarriedCopy(Schema):
    id = uuid_field()
    name = fields.String(required=True)
    cycle_id = uuid_field()
    cycle_name = fields.String(required=True)
    carried_from_id = uuid_field()


class CarriedOver(Schema):
    objectives = fields.List(fields.Nested(CarriedObjective), required=True, metadata={
        "description": "This cycle's objectives whose outcome is carried_over."})
    copies = fields.List(fields.Nested(CarriedCopy), required=True, metadata={
        "description": "Objectives of any cycle carried over from this cycle's (carried_from_id)."})


class OutcomeCounts(Schema):
    achieved = fields.Integer(required=True, metadata={"minimum": 0})
    partly_achieved = fields.Integer(required=True, metadata={"minimum": 0})
    missed = fields.Integer(required=True, metadata={"minimum": 0})
    dropped = fields.Integer(required=True, metadata={"minimum": 0})
    carried_over = fields.Integer(required=True, metadata={"minimum": 0})
    not_scored = fields.Integer(required=True, metadata={"minimum": 0})


class Retrospective(RetrospectiveHeading):
    progress = figure_field("The cycle's progress at the close, as its report shows it.")
    objectives_count = fields.Integer(required=True, metadata={"minimum": 0})
    key_results_count = fields.Integer(required=True, metadata={"minimum": 0})
    hidden_objectives_count = fields.Integer(required=True, metadata={"minimum": 0, "description": (
        "How many of its objectives the reader may not see: counted in its progress, listed nowhere.")})
    outcome_counts = fields.Nested(OutcomeCounts, required=True)
    objectives = fields.List(fields.Nested(RetrospectiveObjective), required=True, metadata={
        "description": "Every objective the reader may see, in creation order, with its key results."})
    movers = fields.Nested(Movers, required=True)
    went_off_track = fields.List(fields.Nested(WentOffTrack), required=True, metadata={
        "description": "Key results on track (or done) after some check-in and off track after their last one."})
    carried_over = fields.Nested(CarriedOver, required=True)


class QualityCheck(Schema):
    code = fields.String(required=True, metadata={"enum": list(quality.CODES)})
    severity = fields.String(required=True, metadata={
        "enum": list(quality.SEVERITIES),
        "description": "warning: something to fix; suggestion: worth a thought (a name that reads like a task)."})
    objective_id = uuid_field(allow_none=True)  # the objective's, or a key result's objective; null for a person
    objective_name = fields.String(required=True, allow_none=True)
    key_result_id = uuid_field(allow_none=True)  # a key result's check; else null
    key_result_name = fields.String(required=True, allow_none=True)
    user_id = uuid_field(allow_none=True)  # owner_over_focus: the person; else null
    user_name = fields.String(required=True, allow_none=True)
    message = fields.String(required=True, metadata={"description": "What to fix, in a sentence naming its subject."})


class CycleChecks(Schema):
    cycle_id = uuid_field()
    checks = fields.List(fields.Nested(QualityCheck), required=True, metadata={
        "description": "Each objective's findings, then each of its key results', in creation order; then each "
                       "person who owns too many key results, most first."})
    count = fields.Integer(required=True, metadata={"minimum": 0})


class ApiError(Schema):
    code = fields.Integer(required=True)
    message = fields.String(required=True)
    details = fields.Dict(keys=fields.String(), values=fields.String())


class HealthDetails(Schema):
    replication = fields.String(required=True, metadata={
        "enum": ["ok", "failing"],
        "description": "failing: Litestream reported an error since the replica last caught up, or the lag passed "
                       "--replicate-max-lag. Its error is not shown here: it is in the server's log and `okr "
                       "replication status`."})
    replication_lag_seconds = fields.String(required=True, metadata={
        "example": "0.6", "description": "Seconds since the replica last caught up with the database."})


class Health(Schema):
    status = fields.String(required=True, metadata={
        "enum": ["ok", "degraded"],
        "description": "degraded: replication is failing, but the replica has not yet been behind for longer than "
                       "--replicate-max-lag (then the answer is 503)."})
    details = fields.Nested(HealthDetails, metadata={"description": "With --replicate only."})


class ServiceLinks(Schema):
    openapi = fields.String(required=True, metadata={"example": "/v1/openapi.json"})
    healthz = fields.String(required=True, metadata={"example": "/healthz"})


class ServiceIndex(Schema):
    name = fields.String(required=True, metadata={"example": "okr-service"})
    version = fields.String(required=True, metadata={"example": "0.1.0"})
    links = fields.Nested(ServiceLinks, required=True)


def text_properties(self, field, **kwargs):
    """maxLength and a pattern for the rules a Text field enforces: no NUL, maybe not blank."""
    if not isinstance(field, Text):
        return {}
    result = {}
    if field.max_length is not None:
        result["maxLength"] = field.max_length
    if field.not_blank:
        result["pattern"] = f"^[^\\u0000]*[^\\u0000{WHITESPACE}][^\\u0000]*$"
    else:
        result["pattern"] = "^[^\\u0000]*$"
    return result


# A unit's rule (okr.rules.quantities), as ECMA-262 patterns: its control characters (okr.rules.names), and
# the whitespace str.strip() trims that is not one of them.
CONTROL = "\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029"
SPACE = "\\u0020\\u00a0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000"
UNIT_PATTERN = f"^[{SPACE}]*(?:[^{SPACE}{CONTROL}](?:[^{CONTROL}]{{0,10}}[^{SPACE}{CONTROL}])?)?[{SPACE}]*$"


def unit_properties(self, field, **kwargs):
    """A unit: at most 12 characters once trimmed, no control characters (blank clears it); its place: before,
    after or "" (none)."""
    if isinstance(field, UnitText):
        return {"pattern": UNIT_PATTERN}
    if isinstance(field, UnitPosition):
        return {"pattern": "^(before|after)?$"}
    return {}


# A link's rule (okr.rules.fields.WebLink): http or https, a host, no whitespace or control character; "" is none.
LINK_PATTERN = f"^(?:[hH][tT][tT][pP][sS]?://[^/?#{CONTROL}{WHITESPACE}][^{CONTROL}{WHITESPACE}]*)?$"


def link_properties(self, field, **kwargs):
    """A link is an http(s) address, or "" for none."""
    if not isinstance(field, WebLink):
        return {}
    return {"pattern": LINK_PATTERN, "example": "https://tracker.example.com/PROJ-12"}


def date_properties(self, field, **kwargs):
    """A date is ISO 8601 text ("2026-10-01")."""
    if not isinstance(field, DateText):
        return {}
    return {"format": "date", "pattern": f"^{ISO_DATE.pattern}$", "example": "2026-10-01"}


def whole_number_properties(self, field, **kwargs):
    """A whole number is a JSON integer within its bounds."""
    if not isinstance(field, WholeNumber):
        return {}
    return {"type": "integer", "minimum": field.low, "maximum": field.high}


def decimal_properties(self, field, **kwargs):
    """A decimal is a string in decimal or exponent notation, or a JSON number."""
    if not isinstance(field, DecimalString):
        return {}
    number = {"type": "number", "exclusiveMinimum": True, "exclusiveMaximum": True,
              "minimum": -10**MAX_INTEGER_DIGITS, "maximum": 10**MAX_INTEGER_DIGITS}
    if field.minimum is not None:
        number.update(minimum=field.minimum, maximum=field.maximum,
                      exclusiveMinimum=False, exclusiveMaximum=False)
    result = {
        "anyOf": [{"type": "string", "pattern": f"^{DECIMAL_TEXT.pattern}$"}, number],
        "description": f"An exact decimal: at most {MAX_FRACTION_DIGITS} fractional digits, absolute value below "
                       f"10^{MAX_INTEGER_DIGITS}"
        + (f", from {field.minimum} to {field.maximum}" if field.minimum is not None else "")
        + ". Returned as a string with at least two fractional digits.",
    }
    if kwargs["ret"].get("nullable"):
        result["nullable"] = True
    return result


CSV = "text/csv"  # a response that is a CSV file, not JSON
BYTES = "application/octet-stream"  # a response of bytes as kept

# (operationId, path, method, summary, request schema, response schema, query parameters)
LIST = ("page_token", "page_size")
OPERATIONS = [
    ("createObjective", "/v1/objectives", "post", "Create an objective", body_schemas.ObjectiveSchema, Objective, ()),
    ("listObjectives", "/v1/objectives", "get", "List a cycle's objectives", None, ObjectivePage,
     ("cycle_id", "team_id", "assignee_id", "parent_objective_id", "is_company", "is_personal", *LIST)),
    ("getObjective", "/v1/objectives/{objective_id}", "get", "Get an objective", None, Objective, ()),
    ("replaceObjective", "/v1/objectives/{objective_id}", "post",
     "Replace an objective", body_schemas.ObjectiveUpdateSchema,
     Objective, ()),
    ("updateObjective", "/v1/objectives/{objective_id}", "patch",
     "Change some of an objective's attributes (JSON Merge Patch)",
     body_schemas.ObjectivePatchSchema, ObjectiveDetails, ()),
    ("deleteObjective", "/v1/objectives/{objective_id}", "delete",
     "Delete an objective and its key results", None, None, ()),
    ("getObjectiveReport", "/v1/objectives/{objective_id}/report", "get",
     "Report an objective and its aligned descendants (any cycle) with progress and status",
     None, ObjectiveReport, ()),
    ("createKeyResult", "/v1/objectives/{objective_id}/keyresults", "post", "Create a key result",
     body_schemas.KeyResultSchema, KeyResult, ()),
    ("listObjectiveKeyResults", "/v1/objectives/{objective_id}/keyresults", "get",
     "List an objective's key results", None, KeyResultPage,
     ("type", *LIST)),
    ("listKeyResults", "/v1/keyresults", "get", "List a cycle's key results", None, KeyResultPage,
     ("cycle_id", "type", *LIST)),
    ("getKeyResult", "/v1/keyresults/{key_result_id}", "get", "Get a key result", None, KeyResult, ()),
    ("replaceKeyResult", "/v1/keyresults/{key_result_id}", "post",
     "Replace a key result", body_schemas.KeyResultUpdateSchema,
     KeyResult, ()),
    ("updateKeyResult", "/v1/keyresults/{key_result_id}", "patch",
     "Change some of a key result's attributes (JSON Merge Patch)",
     body_schemas.KeyResultPatchSchema, KeyResultDetails, ()),
    ("deleteKeyResult", "/v1/keyresults/{key_result_id}", "delete",
     "Delete a key result and its check-ins", None, None, ()),
    ("createCheckin", "/v1/keyresults/{key_result_id}/checkins", "post",
     "Record a check-in: it becomes the key result's current value and confidence",
     body_schemas.CheckinSchema, Checkin, ()),
    ("listCheckins", "/v1/keyresults/{key_result_id}/checkins", "get",
     "List a key result's check-ins, oldest first", None,
     CheckinPage, LIST),
    ("createObjectiveComment", "/v1/objectives/{objective_id}/comments", "post",
     "Comment on an objective", body_schemas.CommentSchema, Comment,
     ()),
    ("listObjectiveComments", "/v1/objectives/{objective_id}/comments", "get",
     "List an objective's comments, oldest first", None,
     CommentPage, LIST),
    ("createKeyResultComment", "/v1/keyresults/{key_result_id}/comments", "post",
     "Comment on a key result", body_schemas.CommentSchema, Comment,
     ()),
    ("listKeyResultComments", "/v1/keyresults/{key_result_id}/comments", "get",
     "List a key result's comments, oldest first", None,
     CommentPage, LIST),
    ("createInitiative", "/v1/keyresults/{key_result_id}/initiatives", "post",
     "Add an initiative (the work that moves it) under a key result", body_schemas.InitiativeSchema, Initiative, ()),
    ("listInitiatives", "/v1/keyresults/{key_result_id}/initiatives", "get",
     "List a key result's initiatives in the order made", None, InitiativePage, LIST),
    ("getInitiative", "/v1/initiatives/{initiative_id}", "get", "Get an initiative", None, Initiative, ()),
    ("updateInitiative", "/v1/initiatives/{initiative_id}", "patch",
     "Change some of an initiative's fields, its state say (JSON Merge Patch)", body_schemas.InitiativePatchSchema,
     Initiative, ()),
    ("deleteInitiative", "/v1/initiatives/{initiative_id}", "delete", "Delete an initiative", None, None, ()),
    ("getCheckin", "/v1/checkins/{checkin_id}", "get", "Get a check-in", None, Checkin, ()),
    ("updateCheckin", "/v1/checkins/{checkin_id}", "patch",
     "Correct a check-in's value, confidence or comment (JSON Merge Patch)", body_schemas.CheckinPatchSchema,
     Checkin, ()),
    ("deleteCheckin", "/v1/checkins/{checkin_id}", "delete", "Delete a check-in", None, None, ()),
    ("getComment", "/v1/comments/{comment_id}", "get", "Get a comment", None, Comment, ()),
    ("updateComment", "/v1/comments/{comment_id}", "patch",
     "Change a comment's body (JSON Merge Patch)", body_schemas.CommentPatchSchema,
     Comment, ()),
    ("deleteComment", "/v1/comments/{comment_id}", "delete", "Delete a comment", None, None, ()),
    ("createCycle", "/v1/cycles", "post", "Create a cycle, maybe with its dates", body_schemas.CycleSchema, Cycle, ()),
    ("listCycles", "/v1/cycles", "get", "List cycles", None, CyclePage, LIST),
    ("getCycle", "/v1/cycles/{cycle_id}", "get", "Get a cycle", None, Cycle, ()),
    ("renameCycle", "/v1/cycles/{cycle_id}", "post", "Rename a cycle", body_schemas.GroupUpdateSchema, Cycle, ()),
    ("updateCycle", "/v1/cycles/{cycle_id}", "patch", "Change a cycle's name or dates (JSON Merge Patch)",
     body_schemas.CyclePatchSchema, CycleDetails, ()),
    ("deleteCycle", "/v1/cycles/{cycle_id}", "delete", "Delete a cycle with its objectives", None, None, ()),
    ("closeCycle", "/v1/cycles/{cycle_id}/close", "post",
     "Close a cycle: what is not scored takes its suggested score and outcome, and the cycle is locked", None,
     CycleDetails, ()),
    ("reopenCycle", "/v1/cycles/{cycle_id}/reopen", "post", "Reopen a closed cycle (an admin only)", None,
     CycleDetails, ()),
    ("getCycleReportCsv", "/v1/cycles/{cycle_id}/report.csv", "get",
     "A cycle's key results as CSV, one row each", None, CSV, ()),
    ("getCycleReport", "/v1/cycles/{cycle_id}/report", "get",
     "Report a cycle's alignment tree with progress and status, maybe for one team or assignee",
     None, CycleReport, ("team_id", "assignee_id")),
    ("getCycleRetrospective", "/v1/cycles/{cycle_id}/retrospective", "get",
     "A cycle's retrospective: scores, outcomes, reflections, movers, what went off track or was carried over, "
     "maybe for one team", None, Retrospective, ("team_id",)),
    ("getCycleCalibration", "/v1/cycles/{cycle_id}/calibration", "get",
     "A cycle's confidence calibration per owner and per team: Brier score, over-confidence, called green and "
     "landed red", None, Calibration, ("team_id",)),
    ("listCycleChecks", "/v1/cycles/{cycle_id}/checks", "get",
     "What to fix in a cycle's OKRs: the quality checks' findings, each with its code, subject and message", None,
     CycleChecks, ()),
    ("listConnections", "/v1/connections", "get", "List the connections of metric sources (an admin only)", None,
     ConnectionPage, LIST),
    ("createConnection", "/v1/connections", "post", "Add a connection (an admin only); its secret is sealed and never "
     "shown again", body_schemas.ConnectionSchema, Connection, ()),
    ("getConnection", "/v1/connections/{connection_id}", "get", "Get a connection, without its secret", None,
     Connection, ()),
    ("updateConnection", "/v1/connections/{connection_id}", "patch",
     "Change a connection (JSON Merge Patch): secret sets a new one, null removes it",
     body_schemas.ConnectionPatchSchema, Connection, ()),
    ("deleteConnection", "/v1/connections/{connection_id}", "delete", "Delete a connection no source reads", None,
     None, ()),
    ("putSource", "/v1/keyresults/{key_result_id}/source", "put",
     "Attach a key result to a connection with its query, or change its source (an editor)",
     body_schemas.SourceSchema, Source, ()),
    ("getSource", "/v1/keyresults/{key_result_id}/source", "get",
     "Get a key result's source: its query, path, schedule and state (an editor)", None, Source, ()),
    ("deleteSource", "/v1/keyresults/{key_result_id}/source", "delete",
     "Detach a key result from its source; its values and their evidence stay", None, None, ()),
    ("testSource", "/v1/keyresults/{key_result_id}/source/test", "post",
     "Read a source now and show the value it would write, writing nothing", body_schemas.SourceTestSchema,
     SourceTest, ()),
    ("syncSource", "/v1/keyresults/{key_result_id}/source/sync", "post",
     "Run a key result's source now: a changed value becomes a check-in with its evidence", None, SourceRun, ()),
    ("fillSource", "/v1/keyresults/{key_result_id}/source/fill", "post",
     "Fill a key result's history back from its source, daily or weekly, from the cycle's start to yesterday",
     body_schemas.FillSchema, SourceFill, ()),
    ("getEvidence", "/v1/checkins/{checkin_id}/evidence", "get",
     "What a source-written check-in's value was read from", None, Evidence, ()),
    ("getEvidenceAnswer", "/v1/checkins/{checkin_id}/evidence/answer", "get",
     "The bytes of the answer a value was read from, as kept (the first 64 KB)", None, BYTES, ()),
    ("recomputeEvidence", "/v1/checkins/{checkin_id}/recompute", "post",
     "Run a value's request again and say whether the answer still matches, writing nothing", None,
     Recomputation, ()),
    ("createTeam", "/v1/teams", "post", "Create a team", body_schemas.GroupSchema, Team, ()),
    ("listTeams", "/v1/teams", "get", "List teams", None, TeamPage, LIST),
    ("getTeam", "/v1/teams/{team_id}", "get", "Get a team", None, Team, ()),
    ("renameTeam", "/v1/teams/{team_id}", "post", "Rename a team", body_schemas.GroupUpdateSchema, Team, ()),
    ("deleteTeam", "/v1/teams/{team_id}", "delete", "Delete a team; its objectives keep living", None, None, ()),
    ("listTeamMembers", "/v1/teams/{team_id}/members", "get",
     "List a team's members in the order they joined", None, UserPage,
     LIST),
    ("addTeamMember", "/v1/teams/{team_id}/members/{user_id}", "put", "Make a user a member of a team", None, User, ()),
    ("removeTeamMember", "/v1/teams/{team_id}/members/{user_id}", "delete",
     "Take a user out of a team", None, None, ()),
    ("listUsers", "/v1/users", "get", "List users", None, UserPage, LIST),
    ("getUser", "/v1/users/{user_id}", "get", "Get a user", None, User, ()),
    ("getMe", "/v1/me", "get", "Who signs this request: its user, role and API key", None, Me, ()),
    ("listMyNotifications", "/v1/me/notifications", "get", "List the signer's notifications, newest first", None,
     NotificationPage, ("unread", *LIST)),
    ("markMyNotificationsRead", "/v1/me/notifications/read", "post", "Mark the signer's notifications read",
     body_schemas.NotificationsReadSchema, NotificationsMarked, ()),
    ("listEvents", "/v1/events", "get", "List the activity feed: every change, oldest first", None, EventPage,
     ("type", "resource_id", "cycle_id", "after", *LIST)),
    ("search", "/v1/search", "get", "Search objectives, key results, teams and people across cycles", None,
     SearchPage, ("q", *LIST)),
    ("getOpenApiDocument", "/v1/openapi.json", "get", "This document", None, None, ()),
    ("getHealth", "/healthz", "get", "Health check for process supervisors", None, Health, ()),
    ("getIndex", "/", "get", "Index: the service's name and version, and links to this document and /healthz",
     None, ServiceIndex, ()),
]

# A PATCH body is a JSON Merge Patch (RFC 7396), declared once (plain JSON is read the same way, which the
# description says): two media types of one schema give generated clients two bodies of one type.
REQUEST_MEDIA_TYPES = {"patch": ("application/merge-patch+json",)}
REQUEST_DESCRIPTIONS = {
    "patch": "A JSON Merge Patch (RFC 7396) over the stored record: fields sent change, fields absent stay, "
             "and null clears a nullable field (it is a 400 for any other). The merged record is validated "
             "as a full update (POST) is. Sent as application/json, or with no Content-Type, it is read the same "
             "way.",
}

QUERY_PARAMETERS = {
    "q": {"required": True, "description": "The text to find (case-insensitive, in any script; % and _ are "
                                           "plain characters): 1 to 200 characters once whitespace at both ends "
                                           "is trimmed.",
          # The trimmed query's first and last characters are not str.strip's whitespace (WHITESPACE), in
          # Python's dialect and ECMA-262's alike; between them, any character.
          "schema": {"type": "string", "pattern": f"^[{WHITESPACE}]*[^{WHITESPACE}]"
                                                  f"(?:(?:[{WHITESPACE}]|[^{WHITESPACE}]){{0,{search.LONGEST_QUERY - 2}}}"
                                                  f"[^{WHITESPACE}])?[{WHITESPACE}]*$"}},
    "cycle_id": {"required": True, "description": "The cycle whose records are listed.",
                 "schema": UUID_ARGUMENT},
    "page_token": {"description": "next_page_token of the previous page (base64url, padding optional).",
                   "schema": {"type": "string", "pattern": PAGE_TOKEN}},
    "page_size": {"description": f"Rows per page, 1 to {MAX_PAGE_SIZE}; {PAGE_SIZE} when absent.",
                  "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE}},
    "team_id": {"description": "Only objectives of this team.", "schema": UUID_ARGUMENT},
    "assignee_id": {"description": "Only objectives assigned to this user.",
                    "schema": UUID_ARGUMENT},
    "parent_objective_id": {"description": "Only children of this objective; none for objectives without a parent.",
                            "schema": {"type": "string", "pattern": f"^({UUID_PATTERN}|none)$"}},
    "is_company": {"description": "Only company objectives (true) or only the others (false).",
                   "schema": {"type": "string", "enum": list(BOOLEANS)}},
    "is_personal": {"description": "Only personal objectives (true) or only the others (false).",
                    "schema": {"type": "string", "enum": list(BOOLEANS)}},
    "type": {"description": "Only key results of this type.",
             "schema": {"type": "string", "enum": list(body_schemas.KEY_RESULT_TYPES)}},
}

# Where an operation's query parameter means something else than QUERY_PARAMETERS says.
PATH_QUERY_PARAMETERS = {
    ("/v1/events", "type"): {"description": "Only events whose type begins with this, e.g. objective. or "
                                            "checkin.created.",
                             "schema": {"type": "string", "pattern": "^[a-z_]+(\\.[a-z_]*)?$"}},
    ("/v1/events", "cycle_id"): {"description": "Only events of this cycle and what it holds (a deleted cycle's "
                                                "too).", "schema": UUID_ARGUMENT},
    ("/v1/events", "resource_id"): {"description": "Only events of this resource (a UUID, or an API key's "
                                                   "credential).",
                                    "schema": {"type": "string", "pattern": RESOURCE_ID}},
    ("/v1/me/notifications", "unread"): {"description": "Only the unread ones (true), or all (false, as when "
                                                        "absent).",
                                         "schema": {"type": "string", "enum": list(BOOLEANS)}},
    ("/v1/events", "after"): {"description": "Only events after the one with this id, to resume from a known "
                                             "event; a 404 when it is no longer kept (pruned).",
                              "schema": UUID_ARGUMENT},
}
COMMENT_AUTHOR = ("The author is the user whose key signs (a service key's comments, and those made while auth is "
                  f"off, have none). The body is plain text of 1 to {body_schemas.COMMENT_MAX:,} characters, not only "
                  "whitespace; it is "
                  "kept as sent and never read as Markdown or HTML.")
CHECKIN_CHANGE = ("Its author may, within 7 days of making it; an admin may at any time (with auth on); a service "
                  "key's check-ins only an admin. The starting check-in, made with the key result, never (409). "
                  "The key result's current value and confidence follow its latest remaining check-in.")
COMMENT_CHANGE = ("Only the comment's author or an admin (with auth on) may; a service key changes no comment. "
                  "Deleting its objective or key result deletes it too.")

# Who may own a key result (okr.store.key_results.check_owner), as the operations that take owner_id say it.
OWNER_RULE = (f"owner_id must name an editor or an admin: a viewer is refused with a 400 whose details name "
              f"owner_id (\"{key_results.NOT_AN_OWNER_ROLE}\"), as is an id that names no user. An owner made a "
              "viewer later is kept, as needing a new owner.")

# The retrospective's and the calibration's rules, as their operations say them.
RETROSPECTIVE_RULES = (
    "A key result's final score is its score when given, else its progress at the close; it is achieved from "
    "0.70. Only check-ins people made count, not a key result's starting one. Brier score: the mean over the "
    "check-ins of (confidence - achieved)^2, achieved 1 or 0; over-confidence: the mean of confidence - achieved; "
    "both to two decimals, half to even. Called green, landed red: a confidence of 0.70 or more at a check-in in "
    "the last third of the cycle's dates (without both dates, of the time from its first check-in to its close) "
    "and a final score below 0.40.")



def quality_rules():
    """The quality checks' rules (okr.reports.quality), as their operation says them."""
    return (f"The checks: an objective has {quality.FEWEST_KEY_RESULTS} to {quality.MOST_KEY_RESULTS} key results "
            "(too_few_key_results, too_many_key_results; one without key results of its own whose progress comes "
            "from objectives aligned under it is not short); it has a team or an assignee (objective_without_owner); "
            "each key result has an owner (key_result_without_owner); a key result whose name starts with a task's "
            f"verb ({', '.join(quality.TASK_VERBS)}) reads as a task and is suggested as an initiative "
            "(key_result_reads_as_task, a suggestion); a baseline key result (no target) is flagged once more than "
            "a third of its cycle's dates have gone by (baseline_after_first_third; never without both dates); nobody "
            f"owns more than {quality.FOCUS_MOST} key results in the cycle (owner_over_focus).")


# Said of one operation beyond its summary.
DESCRIPTIONS = {
    ("/v1/objectives/{objective_id}/comments", "post"): COMMENT_AUTHOR,
    ("/v1/keyresults/{key_result_id}/comments", "post"): COMMENT_AUTHOR,
    ("/v1/checkins/{checkin_id}", "patch"): CHECKIN_CHANGE,
    ("/v1/checkins/{checkin_id}", "delete"): CHECKIN_CHANGE,
    ("/v1/comments/{comment_id}", "patch"): COMMENT_CHANGE,
    ("/v1/comments/{comment_id}", "delete"): COMMENT_CHANGE,
    ("/v1/cycles", "post"):
        "starts_on and ends_on (ISO dates, either may be null or absent) are kept but, as the spec's cycle has "
        "neither, not answered here: the cycle report and PATCH show them.",
    ("/v1/cycles/{cycle_id}", "post"):
        "Renames the cycle; its dates stay as they are.",
    ("/v1/cycles/{cycle_id}", "patch"):
        "Answers the cycle with its dates, state and closing; its ETag is the one GET gives.",
    ("/v1/cycles/{cycle_id}/close", "post"):
        "An editor or an admin closes a finished or current cycle. Each objective without a score takes its "
        "final progress as its score, and without an outcome the one its score suggests (achieved from 0.70, "
        "partly_achieved from 0.30, else missed); each key result without a score takes its progress. The "
        "cycle is then locked: nothing in it is made, changed, moved or deleted, and nothing is commented, "
        "until an admin reopens it (409 \"cycle is closed\"). 409 too for a cycle closed already or upcoming. "
        "The body, if any, is not read.",
    ("/v1/cycles/{cycle_id}/reopen", "post"):
        "An admin reopens a closed cycle; its scores, outcomes and reflections stay. 403 for anyone else, 409 for "
        "a cycle that is not closed. The body, if any, is not read.",
    ("/v1/objectives/{objective_id}", "patch"):
        "outcome, score and reflection (the cycle's close-out) may be changed too; the answer shows them with "
        "carried_from_id, and its ETag is the one GET gives. A POST (the spec's full update) leaves them as they "
        "are.",
    ("/v1/objectives/{objective_id}/keyresults", "post"):
        "owner_id (a user's id, or null) and weight (0 to 100, 1 when absent) are kept but, as the spec's key "
        "result has neither, not answered here: the reports and PATCH show them. " + OWNER_RULE,
    ("/v1/keyresults/{key_result_id}", "post"):
        "Replaces what the spec's key result holds; its owner_id, unit and weight stay as they are.",
    ("/v1/keyresults/{key_result_id}", "patch"):
        "owner_id, unit, unit_position, score (the close-out's), weight and progress_from may be changed too (null or \"\" clears a "
        "unit; a unit without a position goes after the number); the answer shows them, and its ETag is the one GET "
        "gives. A POST (the spec's full update) leaves the owner, the unit and the weight as they are. " + OWNER_RULE,
    ("/v1/cycles/{cycle_id}/report.csv", "get"):
        "The file okr export --format csv --cycle writes: one row per key result, objective by objective, with "
        "the report's figures.",
    ("/v1/cycles/{cycle_id}/retrospective", "get"):
        "As of the cycle's close, or now while it is open (closed is then false). Viewers may read it. With "
        "team_id, only that team's objectives and their key results. Its calibration is "
        "GET /v1/cycles/{cycle_id}/calibration's. " + RETROSPECTIVE_RULES,
    ("/v1/cycles/{cycle_id}/calibration", "get"):
        "Per key-result owner and per team, as of the cycle's close (or now while it is open). Viewers may read "
        "it. With team_id, only that team's objectives and their key results. "
        + RETROSPECTIVE_RULES,
    ("/v1/cycles/{cycle_id}/checks", "get"):
        "Viewers may read it. " + quality_rules() + " The same findings show in the cycle page's Quality panel "
        "and beside the edit forms' fields.",
    ("/v1/events", "get"):
        "Each create, update and delete of a cycle, team, membership, objective, key result, check-in, comment, "
        "user or API key, whatever made it (the API, the dashboard, a command, an import), written in the "
        "change's own transaction. Viewers may read it. Events older than the server's retention period "
        f"({settings.default('EVENT_RETENTION_DAYS')} days unless set otherwise) are pruned. A page may end early, "
        f"before page_size events: once the events in it weigh about {PAGE_BYTES >> 20} MB (their stored JSON; "
        "always at least one event), with next_page_token "
        "for the rest, which is null only when no more events match.",
    ("/v1/search", "get"):
        "Objectives and key results of every cycle, teams and people whose name holds q, and people whose email "
        "does, whatever the case: objectives first, then key results, teams and people, each in the order they "
        "were made. Viewers may read it.",
    ("/v1/me", "get"):
        "The user (as GET /v1/users/{user_id} gives it), role and API key the request is signed with. A service "
        "key (one made without a user) has user and role null. While auth is off (open mode: no API key was ever "
        "created and no user has a password) requests are not signed and anyone may do anything: the answer is "
        "then 200 with user, role and key all null.",
    ("/v1/me/notifications", "get"):
        "The signer's inbox: a mention in a comment or a reflection, a comment on an objective they are assigned or "
        "a key result they own, their key result checked in or edited by someone else, its metric source failing, "
        "a check-in due. Never their own actions; only what they may see now. Names and a comment's text are as "
        "they are now; a deleted comment's notifications are gone. Any role, a read-only key included; a service "
        "key has no inbox (403).",
    ("/v1/me/notifications/read", "post"):
        "Marks the signer's notifications read: {\"all\": true} all of them (ids are then not read), else "
        "{\"ids\": [...]} those (1 to 1,000 ids); with neither, none. Ids of others' or unknown notifications are "
        "passed over. Any role may, a viewer included, but not a read-only key nor a service key "
        "(403).",
    ("/v1/teams/{team_id}/members", "get"):
        "The members as GET /v1/users/{user_id} gives each, in the order they joined the team. 404 for an unknown "
        "team.",
    ("/v1/teams/{team_id}/members/{user_id}", "put"):
        "Idempotent: a user who is a member already stays one, and the answer is the same. With auth on, needs "
        "an editor's or an admin's key, or a service key. 404 for an unknown team or user. The body, if any, is "
        "not read.",
    ("/v1/teams/{team_id}/members/{user_id}", "delete"):
        "With auth on, needs an editor's or an admin's key, or a service key. 404 for an unknown team, or a user "
        "who is not a member of it.",
    ("/v1/keyresults/{key_result_id}/checkins", "post"):
        "A user's key records the check-in as its user's: author_id is that user when left out, and naming "
        "another user is a 403. A service key may name any author, or none.",
}

ERRORS = {
    400: "Invalid JSON, a validation error, or a bad query argument",
    401: "Missing or invalid S1-HMAC-SHA256 signature, or a key whose user is deactivated",
    403: "Signed with a read-only API key, which may only GET, or with a viewer's key, which may only read; "
         "or a write from a page of another origin (Origin)",
    404: "No such record",
    409: "The change conflicts with what is stored; \"cycle is closed\": what it changes is in a closed cycle, "
         "locked until an admin reopens it",
    405: "Method not allowed on this path",
    412: "If-Match names none of the resource's present ETags: it changed since it was read",
    413: f"A declared body larger than {MAX_BODY_BYTES >> 20} MiB, on any method",
    421: "The Host header names neither a loopback name, an IP address nor a name given with --allowed-host",
    503: "The database stayed busy past the busy timeout, or its file is not writable; retry",
    507: "The disk is full; nothing was written",
}
# A big report's or CSV's 503 (okr/reports/spooled.py), which carries Retry-After as every 503 of ERRORS does.
BUSY_REPORT = ("The database stayed busy past the busy timeout, or its file is not writable; or the report is big "
               "(2,000 objectives or more, by default) and the server's slots for big reports stayed taken: retry "
               "after Retry-After seconds")
REPORT_PATHS = ("/v1/cycles/{cycle_id}/report", "/v1/cycles/{cycle_id}/report.csv",
                "/v1/objectives/{objective_id}/report")
# Where a code means something else than ERRORS says, and carries no header.
# Paths whose every operation, reads included, needs a right beyond reading: connections an admin's, sources and
# evidence an editor's (a query can name the company's systems).
ADMIN_ONLY = ("/v1/connections", "/v1/connections/{connection_id}")
# Paths of a person's own (their inbox): a service key has none.
PERSON_ONLY = ("/v1/me/notifications", "/v1/me/notifications/read")
EDITOR_ONLY = ("/v1/keyresults/{key_result_id}/source", "/v1/checkins/{checkin_id}/evidence",
               "/v1/checkins/{checkin_id}/evidence/answer")
PATH_ERRORS = {
    ("/v1/events", 404): "after names no event the service keeps: none had that id, or it was pruned",
    ("/healthz", 503): "The database file is missing or does not answer a query, and details.database says why; "
                       "or, with --replicate, the replica has been behind for longer than --replicate-max-lag or "
                       "replication has not started: details.replication (failing, not started) and "
                       "details.replication_lag_seconds",
    ("/v1/keyresults/{key_result_id}/checkins", 403):
        "Signed with a read-only API key or a viewer's key; or a user's key naming another author_id; or a write "
        "from a page of another origin (Origin)",
    ("/v1/checkins/{checkin_id}", 403):
        "Signed by neither the check-in's author (within 7 days of making it) nor an admin, or with a read-only "
        "API key or a viewer's key; or a write from a page of another origin (Origin)",
    ("/v1/checkins/{checkin_id}", 409): "The starting check-in, made with its key result, is never changed; or "
                                        "\"cycle is closed\": its cycle is locked until an admin reopens it",
    ("/v1/cycles/{cycle_id}/close", 409): "The cycle is closed already, or upcoming (it has not started)",
    ("/v1/cycles/{cycle_id}/retrospective", 404): "No such cycle, or team_id names no team",
    ("/v1/cycles/{cycle_id}/calibration", 404): "No such cycle, or team_id names no team",
    ("/v1/cycles/{cycle_id}/reopen", 403): "Signed by anyone but an admin; or a write from a page of another "
                                           "origin (Origin)",
    ("/v1/cycles/{cycle_id}/reopen", 409): "The cycle is not closed",
    **{(path, 403): "Signed by anyone but an admin, or with a read-only API key; or a write from a page of "
                    "another origin (Origin)" for path in ADMIN_ONLY},
    **{(path, 403): "Signed with a viewer's key or a read-only API key, which never see a source's query nor its "
                    "evidence; or a write from a page of another origin (Origin)" for path in EDITOR_ONLY},
    ("/v1/me/notifications", 403): "Signed with a service key, which has no inbox",
    ("/v1/me/notifications/read", 403): "Signed with a service key, which has no inbox, or a read-only API key; or "
                                        "a write from a page of another origin (Origin)",
    ("/v1/connections/{connection_id}", 409): "Some key result reads this connection: remove its sources first",
    ("/v1/keyresults/{key_result_id}/source/fill", 409): "The key result's cycle is closed",
    ("/v1/comments/{comment_id}", 403):
        "Signed by neither the comment's author nor an admin (a service key included), or with a read-only API "
        "key or a viewer's key; or a write from a page of another origin (Origin)",
}
ERROR_HEADERS = {
    401: {"WWW-Authenticate": {"schema": {"type": "string", "enum": [SCHEME]}}},
    405: {"Allow": {"schema": {"type": "string"}}},
    503: {"Retry-After": {"schema": {"type": "string"}}},
}


# The single resources with an ETag (conditional.tagged): a GET honours If-None-Match, and the 200 of a
# GET or an update carries the ETag.
TAGGED = ("/v1/objectives/{objective_id}", "/v1/keyresults/{key_result_id}", "/v1/cycles/{cycle_id}",
          "/v1/teams/{team_id}", "/v1/users/{user_id}", "/v1/comments/{comment_id}", "/v1/initiatives/{initiative_id}")
# Where a write honours If-Match: those resources, and a key result's check-ins (the key result's ETag).
IF_MATCH_PATHS = (*TAGGED, "/v1/keyresults/{key_result_id}/checkins")
ETAG_SCHEMA = {"type": "string", "pattern": '^"[0-9a-f]+"$'}
ETAG_HEADER = {"ETag": {
    "description": "The resource's strong entity tag; it changes with every change of the resource.",
    "required": True, "schema": ETAG_SCHEMA}}
# The creates, whose answer carries the new resource's ETag as a GET of it would (conditional.tagged); a check-in
# carries its key result's (what the next check-in's or edit's If-Match names), a new member the user's.
CREATES = {
    ("/v1/objectives", "post"): None,
    ("/v1/objectives/{objective_id}/keyresults", "post"): None,
    ("/v1/objectives/{objective_id}/comments", "post"): None,
    ("/v1/keyresults/{key_result_id}/comments", "post"): None,
    ("/v1/keyresults/{key_result_id}/initiatives", "post"): None,
    ("/v1/cycles", "post"): None,
    ("/v1/teams", "post"): None,
    ("/v1/keyresults/{key_result_id}/checkins", "post"):
        "The key result's new entity tag (a check-in moves it), as GET /v1/keyresults/{key_result_id} gives it: "
        "send it as If-Match with the next check-in or edit.",
    ("/v1/teams/{team_id}/members/{user_id}", "put"):
        "The user's entity tag, as GET /v1/users/{user_id} gives it.",
}
# No pattern: the service reads any value (RFC 9110 lists of tags, or *) and a tag it never gave just
# does not match.
CONDITIONS = {
    "If-None-Match": "ETags from earlier answers (comma-separated), or *: a 304 without a body when one of "
                     "them is the resource's present ETag.",
    "If-Match": "ETags from earlier answers (comma-separated), or *: a 412 unless one of them is the "
                "resource's present ETag (* matches any existing resource); a missing resource is still a 404.",
}
NOT_MODIFIED = {"description": "Not Modified: If-None-Match names the present ETag; no body", "headers": ETAG_HEADER}


def condition(path, method):
    """The precondition header an operation honours, or None."""
    if path in TAGGED and method == "get":
        return "If-None-Match"
    if path in IF_MATCH_PATHS and method != "get":
        return "If-Match"
    return None


# The paths whose writes a closed cycle refuses (409), by their first word; a new cycle is never closed.
LOCKED_WORDS = ("objectives", "keyresults", "checkins", "comments", "initiatives", "cycles")


def locked(path):
    words = path.split("/")
    return len(words) > 2 and words[2] in LOCKED_WORDS and path != "/v1/cycles"


def error_codes(path, method, body, parameters):
    codes = [405]
    if path.startswith("/v1/") and path != "/v1/openapi.json" or path == "/healthz":
        codes.append(503)
    if path.startswith("/v1/") and path != "/v1/openapi.json":
        codes.append(401)
    if method != "get" or path in ADMIN_ONLY or path in EDITOR_ONLY or path in PERSON_ONLY:
        codes.append(403)  # signed with a read-only key, or sent from another site's page
    if method in ("post", "put", "patch", "delete"):
        codes.append(507)  # any write may find the disk full
    if body or parameters:
        codes.append(400)
    if "{" in path or "cycle_id" in parameters and (path, "cycle_id") not in PATH_QUERY_PARAMETERS:
        codes.append(404)
    if "after" in parameters:
        codes.append(404)  # after names no event kept
    if condition(path, method) == "If-Match":
        codes.append(412)
    if path == "/v1/connections/{connection_id}" and method == "delete":
        codes.append(409)  # a connection some source reads
    if method != "get" and locked(path):
        codes.append(409)  # a closed cycle (and the starting check-in, a cycle closed already)
    codes.append(413)  # any request that declares a body over the limit
    codes.append(421)  # any request to a host name the server was not given
    return sorted(codes)


# One tag per resource, which generated clients group operations by (one class or module each).
TAGS = {
    "Objectives": "Objectives, and their alignment.",
    "KeyResults": "Key results, under their objective and by cycle.",
    "Checkins": "A key result's history: each check-in moves it.",
    "Comments": "Comments on an objective or a key result.",
    "Initiatives": "The work under a key result: owners, states, due dates, links.",
    "Cycles": "Delivery cycles, with their dates.",
    "Teams": "Teams, and their members.",
    "Users": "Users (read-only), and who signs a request.",
    "Events": "The activity feed: every change, with its author.",
    "Search": "Objectives, key results, teams and people across cycles, by name.",
    "Reports": "Progress and status: a cycle's or an objective's alignment tree, and a cycle as CSV.",
    "Sources": "Metric sources: connections (admins), a key result's source, and the evidence of its values.",
    "Service": "The service itself: its index, its health and this document.",
}
# A path's tag, by its last word that is not a parameter.
TAG_OF_WORD = {"objectives": "Objectives", "keyresults": "KeyResults", "checkins": "Checkins",
               "comments": "Comments", "initiatives": "Initiatives", "cycles": "Cycles", "teams": "Teams", "members": "Teams", "users": "Users",
               "me": "Users", "events": "Events", "search": "Search", "report": "Reports", "report.csv": "Reports",
               "retrospective": "Reports", "calibration": "Reports", "checks": "Reports",
               "close": "Cycles", "reopen": "Cycles", "connections": "Sources", "source": "Sources",
               "test": "Sources", "sync": "Sources", "fill": "Sources", "evidence": "Sources", "answer": "Sources",
               "recompute": "Sources",
               "notifications": "Users", "read": "Users"}


def tag_of(path):
    words = [part for part in path.split("/") if part and not part.startswith("{")]
    return TAG_OF_WORD.get(words[-1], "Service") if words else "Service"


def operation(operation_id, path, method, summary, body, response, parameters):
    spec = {"summary": summary, "operationId": operation_id, "tags": [tag_of(path)], "responses": {}}
    if (path, method) in DESCRIPTIONS:
        spec = {"summary": summary, "description": DESCRIPTIONS[path, method], **spec}  # after the summary
    if response is CSV:
        spec["responses"]["200"] = {"description": "OK: UTF-8 with a byte order mark, a header row first",
                                    "content": {"text/csv": {"schema": {"type": "string"}}},
                                    "headers": {"Content-Disposition": {"schema": {"type": "string"}}}}
    elif response is BYTES:
        spec["responses"]["200"] = {"description": "OK: the bytes as kept",
                                    "content": {BYTES: {"schema": {"type": "string", "format": "binary"}}},
                                    "headers": {"Content-Disposition": {"schema": {"type": "string"}}}}
    elif response is not None:
        spec["responses"]["200"] = {"description": "OK", "content": {"application/json": {"schema": response}}}
    else:
        spec["responses"]["200"] = {"description": "OK; the body is empty" if method == "delete" else "OK"}
    if path in TAGGED and method != "delete":
        spec["responses"]["200"]["headers"] = ETAG_HEADER
    if (path, method) in CREATES:
        described = CREATES[path, method] or ETAG_HEADER["ETag"]["description"]
        spec["responses"]["200"]["headers"] = {"ETag": {**ETAG_HEADER["ETag"], "description": described}}
    if body is not None:
        # An empty body counts as {}, so it is only required where a field is.
        required = any(field.required for field in body._declared_fields.values())
        media_types = REQUEST_MEDIA_TYPES.get(method, ("application/json",))
        spec["requestBody"] = {"required": required, "content": {media: {"schema": body} for media in media_types}}
        if method in REQUEST_DESCRIPTIONS:
            spec["requestBody"]["description"] = REQUEST_DESCRIPTIONS[method]
    spec["parameters"] = [{"in": "query", "name": name,
                           **PATH_QUERY_PARAMETERS.get((path, name), QUERY_PARAMETERS.get(name))}
                          for name in parameters]
    header = condition(path, method)
    if header:
        spec["parameters"].append({"in": "header", "name": header, "description": CONDITIONS[header],
                                   "schema": {"type": "string"}})
    if not spec["parameters"]:
        del spec["parameters"]
    if header == "If-None-Match":
        spec["responses"]["304"] = NOT_MODIFIED
    for code in error_codes(path, method, body, parameters):
        special = PATH_ERRORS.get((path, code))
        busy = code == 503 and path in REPORT_PATHS
        spec["responses"][str(code)] = {
            "description": special or (BUSY_REPORT if busy else ERRORS[code]),
            "content": {"application/json": {"schema": "ApiError"}},
            **({"headers": ERROR_HEADERS[code]} if code in ERROR_HEADERS and not special else {}),
        }
    if not path.startswith("/v1/") or path == "/v1/openapi.json":
        spec["security"] = []
    return spec


# What KeyResultSchema.targets_fit_type asks of each type: (target_value_min, target_value_max), each
# "decimal" (required), "null" (null, or absent from a request) or "one" (a milestone's target).
TARGETS = {
    "milestone": ("one", "null"),
    "baseline": ("null", "null"),
    "range": ("decimal", "decimal"),
    "positive": ("decimal", "null"),
    "negative": ("decimal", "null"),
}
# Every text the service reads as 1; of exponent forms, only that the digits are a power of ten.
ONE_TEXT = r"^\+?(0*1(\.0*)?|(0*10*(\.0*)?|0*\.0*10*)[eE][+-]?[0-9]+)$"
# Components split per type: request bodies, then responses.
BY_TYPE = {"KeyResultInput": True, "KeyResultReplacement": True, "KeyResult": False, "KeyResultDetails": False,
           "KeyResultNode": False}


def target_property(described, rule, kind, request):
    """A target's schema in the variant of one key-result type."""
    if rule == "null":
        absent = ", or absent" if request else ""
        # Null only. OpenAPI 3.0 would say enum [null], on which code generators crash; no string is at least 1
        # and at most 0 characters long.
        return {"type": "string", "nullable": True, "minLength": 1, "maxLength": 0,
                "description": f"Null for a {kind} key result{absent}."}
    if rule == "one":
        if not request:
            return {"type": "string", "enum": ["1.00"], "description": "A milestone's target is always 1.00."}
        return {"anyOf": [{"type": "string", "pattern": ONE_TEXT}, {"type": "number", "minimum": 1, "maximum": 1}],
                "nullable": True, "description": "1, null or absent: a milestone's target is always 1.00."}
    described = {key: value for key, value in described.items() if key not in ("nullable", "default")}
    also = " Not greater than target_value_max." if request and kind == "range" else ""
    described["description"] = f"{described.get('description', 'A decimal.')} Required for a {kind} key result.{also}"
    return described


def split_by_type(components, name, request):
    """Replaces a key-result component by a oneOf of one variant per type, discriminated by type."""
    base = components[name]
    mapping = {}
    for kind in body_schemas.KEY_RESULT_TYPES:
        variant = copy.deepcopy(base)
        variant["properties"]["type"] = {"type": "string", "enum": [kind]}
        for target, rule in zip(("target_value_min", "target_value_max"), TARGETS[kind]):
            variant["properties"][target] = target_property(base["properties"][target], rule, kind, request)
            if rule == "decimal":
                variant["required"] = sorted({*variant["required"], target})
        components[f"{name}{kind.capitalize()}"] = variant
        mapping[kind] = f"#/components/schemas/{name}{kind.capitalize()}"
    components[name] = {
        "oneOf": [{"$ref": ref} for ref in mapping.values()],
        "discriminator": {"propertyName": "type", "mapping": mapping},
        "description": "A key result's targets depend on its type: one schema per type.",
    }


def id_patterns(components):
    """Every id, and every *_id, that a body carries is a lowercase UUID, as the service writes them."""
    for component_name, component in components.items():
        if component_name in ("EventActor", "EventResource"):
            continue  # an event may name an API key, by its credential
        for name, described in component.get("properties", {}).items():
            if name == "id" or name.endswith("_id"):
                described.update(format="uuid", pattern=UUID)


def nullable_refs(components):
    """A nullable nested object as OpenAPI 3.0 says it: apispec's anyOf with a bare {"type": "object"} would
    take any object at all."""
    for component in components.values():
        for name, described in component.get("properties", {}).items():
            branches = described.get("anyOf", [])
            refs = [branch for branch in branches if "$ref" in branch]
            if len(branches) == 2 and len(refs) == 1 and {"type": "object", "nullable": True} in branches:
                rest = {key: value for key, value in described.items() if key != "anyOf"}
                component["properties"][name] = {**rest, "allOf": refs, "nullable": True}


# The shared decimals a request body holds, by the number branch's bounds (request_decimal_name): inline, a
# generator would make a model of each, named for the field it sits in (KeyResultInputMilestoneConfidence).
DECIMAL_COMPONENTS = {
    "Decimal": f"An exact decimal: a string in decimal or exponent notation (at most {MAX_FRACTION_DIGITS} fractional "
               f"digits), or a JSON number; absolute value below 10^{MAX_INTEGER_DIGITS}.",
    "Fraction": f"An exact decimal from 0 to 1: a string in decimal or exponent notation (at most "
                f"{MAX_FRACTION_DIGITS} fractional digits), or a JSON number.",
    "MilestoneTarget": "A milestone's target: 1, as a string or a JSON number.",
}


def request_decimal_name(described):
    """The shared component an inline decimal of a request body is (DECIMAL_COMPONENTS), or None."""
    branches = described.get("anyOf", [])
    if [branch.get("type") for branch in branches] != ["string", "number"]:
        return None
    number = branches[1]
    if branches[0]["pattern"] == ONE_TEXT:
        return "MilestoneTarget"
    return "Fraction" if (number["minimum"], number["maximum"]) == (0, 1) else "Decimal"


def named_decimals(components):
    """Every inline decimal of a request body refers to its shared component instead; its own description, and
    whether it may be null, stay beside the reference (as nullable_refs does for objects)."""
    for component in list(components.values()):
        for name, described in component.get("properties", {}).items():
            shared = request_decimal_name(described)
            if shared is None:
                continue
            components.setdefault(shared, {"anyOf": described["anyOf"], "description": DECIMAL_COMPONENTS[shared]})
            assert components[shared]["anyOf"] == described["anyOf"], shared  # one shape per name
            rest = {key: value for key, value in described.items() if key != "anyOf"}
            component["properties"][name] = {**rest, "allOf": [{"$ref": f"#/components/schemas/{shared}"}]}


@cache
def build_document(version):
    """The whole document as a dict."""
    plugin = MarshmallowPlugin(schema_name_resolver=schema_name)
    spec = APISpec(
        title="OKR service", version=version, openapi_version="3.0.3", plugins=[plugin],
        info={"description": "Objectives, key results, delivery cycles, teams and users over JSON."},
        security=[{SCHEME: []}], tags=[{"name": name, "description": text} for name, text in TAGS.items()],
    )
    plugin.converter.add_attribute_function(text_properties)
    plugin.converter.add_attribute_function(date_properties)
    plugin.converter.add_attribute_function(link_properties)
    plugin.converter.add_attribute_function(decimal_properties)
    plugin.converter.add_attribute_function(unit_properties)
    plugin.converter.add_attribute_function(whole_number_properties)
    plugin.map_to_openapi_type(StrictBool, "boolean", None)
    spec.components.security_scheme(SCHEME, {
        "type": "apiKey", "in": "header", "name": "Authorization",
        "description": f"{SCHEME} Credential=<credential>&Timestamp=<RFC 3339 UTC>&Signature=<hex>; "
                       "the signature is the lowercase hex HMAC-SHA256 of credential + timestamp, "
                       "keyed with the secret. A key made for a user acts with the user's role (a viewer "
                       "only reads; an editor or an admin also writes); a service key (no user) writes like an "
                       "editor; a read-only key only reads, whatever its user's role. Auth is on once any API key "
                       "was created or any user has a password; before that requests need no signature.",
    })
    spec.components.schema("ApiError", schema=ApiError)
    paths = {}
    for operation_id, path, method, *rest in OPERATIONS:
        paths.setdefault(path, {})[method] = operation(operation_id, path, method, *rest)
    for path, operations in paths.items():
        # Any other string is only a 404, but no id the service gives out looks otherwise.
        parameters = [{"in": "path", "name": name, "required": True, "description": "A lowercase UUID.",
                       "schema": UUID_ARGUMENT}
                      for name in path_parameters(path)]
        spec.path(path=path, operations=operations, parameters=parameters)
    document = spec.to_dict()
    components = document["components"]["schemas"]
    id_patterns(components)
    nullable_refs(components)
    for name, request in BY_TYPE.items():
        split_by_type(components, name, request)
    named_decimals(components)
    return document


# The request schemas' names in the document: what each body is, not the Python class that checks it.
COMPONENT_NAMES = {
    body_schemas.ObjectiveSchema: "ObjectiveInput",
    body_schemas.ObjectiveUpdateSchema: "ObjectiveReplacement",
    body_schemas.ObjectivePatchSchema: "ObjectivePatch",
    body_schemas.KeyResultSchema: "KeyResultInput",
    body_schemas.KeyResultUpdateSchema: "KeyResultReplacement",
    body_schemas.KeyResultPatchSchema: "KeyResultPatch",
    body_schemas.CheckinSchema: "CheckinInput",
    body_schemas.CommentSchema: "CommentInput",
    body_schemas.NotificationsReadSchema: "NotificationsRead",
    body_schemas.CheckinPatchSchema: "CheckinPatch",
    body_schemas.CommentPatchSchema: "CommentPatch",
    body_schemas.InitiativeSchema: "InitiativeInput",
    body_schemas.InitiativePatchSchema: "InitiativePatch",
    body_schemas.CycleSchema: "CycleInput",
    body_schemas.CyclePatchSchema: "CyclePatch",
    body_schemas.GroupSchema: "TeamInput",
    body_schemas.GroupUpdateSchema: "Rename",
    body_schemas.ConnectionSchema: "ConnectionInput",
    body_schemas.ConnectionPatchSchema: "ConnectionPatch",
    body_schemas.SourceSchema: "SourceInput",
    body_schemas.SourceTestSchema: "SourceTestInput",
    body_schemas.FillSchema: "FillInput",
}


def schema_name(schema):
    cls = schema if isinstance(schema, type) else type(schema)
    return COMPONENT_NAMES.get(cls, cls.__name__)


def path_parameters(path):
    return [part[1:-1] for part in path.split("/") if part.startswith("{")]


@bp.get("/v1/openapi.json")
def get_openapi():
    """Returns the OpenAPI 3 document of this API.

    Mounted under a prefix (/okr), the document names it as its one server, so
    that a generated client calls /okr/v1/...; at the host's root it names no
    server, which OpenAPI reads as "/".
    """
    document = build_document(current_app.config["API_VERSION"])
    root = incoming.script_root
    if not root:
        return document
    # A relative URL: it holds whatever scheme and host the document was fetched with.
    servers = [{"url": root}]
    mounted = {}
    for name, value in document.items():  # the cached document stays as it is
        mounted[name] = value
        if name == "info":
            mounted["servers"] = servers
    mounted.setdefault("servers", servers)
    return mounted
