"""The rules a row must meet to be imported, for every way in: okr import's records and okr import-simpleokr's.

The format's sections and fields, and one check of a row: its ids, times and
revision here, everything else by the API's own schemas (okr.rules.body_schemas).
"""
import json
import re
from datetime import datetime

from marshmallow import ValidationError, validate, validates_schema

from ..rules.fields import StrictBool, Text
from ..rules.ids import UUID_RE
from ..rules.messages import flatten
from ..rules.body_schemas import (NAME_MAX, BodySchema, ClosingFields, CommentSchema, InitiativeSchema, KeyResultEditSchema,
                                  KeyResultSchema, ObjectiveSchema, UnitFields, UserSchema, checkin_schema,
                                  cycle_update_schema, group_update_schema)
from ..store.bulk import FIELDS, NOT_GIVEN, OPTIONAL, event_text
from ..store.events import MAX_ID_LENGTH as MAX_EVENT_ID
from ..store.users import ROLES
from ..rules.body_schemas import VISIBILITIES

FORMAT = "okr-export"
# 2 added users' role, the team_members section, API keys' user_id, cycles' dates and key results' owner;
# 3 the comments section, and users' weekly_email, oidc_issuer and oidc_subject; 4 key results' unit and
# unit_position; 5 cycles' closed_at and closed_by, objectives' outcome, score, reflection and carried_from_id, key
# results' score; 6 key results' weight and progress_from, objectives' created_by, the initiatives section; 7
# objectives' visibility.
VERSION = 7

SECTIONS = tuple(FIELDS)  # in file order: events, the data, api_keys
WRITTEN = SECTIONS[:-1]  # always written; api_keys only when asked for
DATA_SECTIONS = WRITTEN[1:]  # what makes a database not empty: events alone do not
# Sections a file may lack: version 1 had no team members, neither it nor version 2 before events had
# events, neither version 1 nor 2 comments, and none before 6 initiatives.
OPTIONAL_SECTIONS = frozenset({"events", "team_members", "comments", "initiatives"})
REQUIRED_SECTIONS = tuple(name for name in DATA_SECTIONS if name not in OPTIONAL_SECTIONS)
BOOLS = frozenset({"is_active", "is_company", "is_personal", "read_only", "weekly_email"})
TIMESTAMPS = frozenset({"created_at", "modified_at", "revoked_at", "joined_at", "closed_at", "done_at"})
# Ids whose field name does not end in _id: who closed a cycle, who made an objective.
OTHER_IDS = frozenset({"closed_by", "created_by"})
# Fields that may be null (a team member's user_id may not: its schema refuses null).
NULLABLE = frozenset({"description", "team_id", "assignee_id", "parent_objective_id", "target_value_min",
                      "target_value_max", "comment", "author_id", "revoked_at", "user_id", "starts_on", "ends_on",
                      "owner_id", "oidc_issuer", "oidc_subject", "unit", "unit_position", "closed_at", "closed_by",
                      "outcome", "score", "reflection", "carried_from_id", "due_on", "link", "done_at",
                      "created_by"})
# And fields that may be null in one section only: a comment is on an objective or on a key result.
NULLABLE_IN = {"comments": frozenset({"objective_id", "key_result_id"})}
SINGULAR = {"events": "event", "users": "user", "teams": "team", "team_members": "team member", "cycles": "cycle",
            "objectives": "objective", "key_results": "key result", "checkins": "check-in", "comments": "comment",
            "initiatives": "initiative",
            "api_keys": "API key"}
PLURAL = {name: f"{word}s" for name, word in SINGULAR.items()}



class Refusal(Exception):
    """Why a file cannot be imported, in one line (where, then what)."""


def closed_refusal(cycle):
    """The refusal of a change inside a closed cycle (its row), naming it: every importer's words."""
    return Refusal(f"cycle {json.dumps(cycle['name'] or 'Unnamed cycle', ensure_ascii=False)} is closed; an admin "
                   "must reopen it before this import")


# What a file never holds, and why: {table, or table.column: (what, why)}. okr import's report names them,
# docs/operations.md lists them, and a test holds every table and column of schema.sql to being either a
# field of the format, derived from one (DERIVED_COLUMNS), or here.
WEBHOOKS = ("webhooks", "each holds the secret that signs its deliveries; add them again with okr webhooks add")
ASSISTANTS = ("connected assistants", "their tokens are bound to this server and kept only as hashes: people "
                                       "connect their assistants again")
LEFT_OUT = {
    "users.password_hash": ("passwords", "a file is copied and kept where a database is not, and a password hash "
                                         "can be attacked offline; people set theirs again (okr users invite)"),
    "invitations": ("invitations", "one-time links to choose a password; okr users invite makes new ones"),
    "password_resets": ("password resets", "one-time links, valid for an hour; people ask again"),
    "web_sessions": ("sessions", "the dashboard's signed-in browsers, bound to the server that made them: "
                                 "everyone signs in again"),
    "web_secrets": ("the session signing key", "a secret each database makes for itself"),
    "sign_in_failures": ("failed sign-ins", "a throttle's last fifteen minutes, with people's addresses"),
    "webhooks": WEBHOOKS, "webhook_patterns": WEBHOOKS, "webhook_outbox": WEBHOOKS, "webhook_deliveries": WEBHOOKS,
    "board_links": ("board links", "each is a secret URL to a wallboard; an admin makes new ones on the Board links "
                                   "page"),
    "weekly_mail": ("the record of weekly emails sent", "the server's own bookkeeping of which week's reminders "
                                                        "and digests went out"),
    "connections": ("the connections of metric sources", "their secrets are sealed under this server's key and "
                                                         "their addresses are the company's network: an admin "
                                                         "adds them again"),
    "sources": ("key results' metric sources", "each reads a connection the file does not hold: attach them "
                                               "again (the values they wrote are check-ins, and come along)"),
    "evidence": ("the evidence of source-written values", "bytes read from the company's systems, up to 64 KB "
                                                         "a value: the check-ins come along without it"),
    "oauth_clients": ASSISTANTS, "oauth_codes": ASSISTANTS, "assistant_grants": ASSISTANTS,
    "notifications": ("people's inboxes", "each notification is of a change as it happened, read or not on this "
                                          "server; the changes themselves come along"),
    "notification_email": ("people's choices of notification emails", "each person switches them again on their "
                                                                       "account page (mentions are on until then)"),
}
# Columns a file does not hold because they follow from what it holds: every table's seq (the order of its
# section), a user's email_key (from the email), a key result's cycle (its objective's), a check-in's key
# result's seq (from its key_result_id).
# An event's objective follows from what it is about (okr.store.events.place).
DERIVED_COLUMNS = frozenset({"users.email_key", "key_results.cycle_id", "checkins.key_result_seq",
                             "events.objective_id"})



# okr keys create makes 43 characters; a short secret would be guessed.
MIN_SECRET_LENGTH = 32
# An identity provider's issuer (a URL) and subject: OpenID Connect caps a subject at 255 ASCII characters;
# the bound leaves room for providers that do not keep to it.
MAX_OIDC_TEXT = 2000


class ApiKeySchema(BodySchema):
    """An API key's row; okr keys create makes them, so no request body describes them."""

    credential = Text(required=True, max_length=MAX_EVENT_ID, not_blank=True)  # events name keys by it
    secret = Text(required=True, max_length=200, validate=validate.Length(min=MIN_SECRET_LENGTH))
    name = Text(required=True, max_length=NAME_MAX, not_blank=True)
    read_only = StrictBool(required=True)


api_key_schema = ApiKeySchema()



class UserRowSchema(UserSchema):
    """A user as the file holds it: as okr users add takes one, whether it is active, its role (absent from
    files of version 1: see OPTIONAL), and its private settings (absent before version 3): whether the weekly
    emails go to them, and who they are at the identity provider (both or neither)."""

    is_active = StrictBool(required=True)
    role = Text(validate=validate.OneOf(ROLES, error=f"Must be one of: {', '.join(ROLES)}."))
    weekly_email = StrictBool()
    oidc_issuer = Text(max_length=MAX_OIDC_TEXT, not_blank=True, allow_none=True)
    oidc_subject = Text(max_length=MAX_OIDC_TEXT, not_blank=True, allow_none=True)

    @validates_schema
    def link_whole(self, data, **kwargs):
        issuer, subject = data.get("oidc_issuer"), data.get("oidc_subject")
        if (issuer is None) != (subject is None):
            field, other = ("oidc_subject", "oidc_issuer") if subject is None else ("oidc_issuer", "oidc_subject")
            raise ValidationError({field: [f"Given with {other}, or neither."]})


class CommentRowSchema(CommentSchema):
    """A comment as the file holds it: its body as the API takes one, on an objective or a key result."""

    objective_id = Text(max_length=100, allow_none=True, load_default=None)
    key_result_id = Text(max_length=100, allow_none=True, load_default=None)
    author_id = Text(max_length=100, allow_none=True, load_default=None)

    @validates_schema
    def on_one(self, data, **kwargs):
        on = [data.get("objective_id"), data.get("key_result_id")]
        if on.count(None) != 1:
            raise ValidationError({"objective_id": ["A comment is on an objective or a key result" +
                                                    (", not both." if None not in on else ".")]})


class KeyResultRowSchema(KeyResultSchema, UnitFields):
    """A key result as the file holds it: as the API creates one, with its unit, score and weight as PATCH sets them
    (absent from files before versions 4, 5 and 6: see OPTIONAL)."""

    score = KeyResultEditSchema._declared_fields["score"]  # PATCH's own rule (each schema copies its fields)
    weight = KeyResultEditSchema._declared_fields["weight"]  # absent stays absent: a stored row keeps its own
    progress_from = KeyResultEditSchema._declared_fields["progress_from"]


class ObjectiveRowSchema(ObjectiveSchema, ClosingFields):
    """An objective as the file holds it: as the API creates one, with its close-out as PATCH sets it (absent
    from files before version 5) and who may see it (before version 7)."""

    visibility = Text(validate=validate.OneOf(VISIBILITIES, error=f"Must be one of: {', '.join(VISIBILITIES)}."))


class TeamMemberSchema(BodySchema):
    """A team member as the file holds it: both ids are checked as ids are, and may not be null."""

    team_id = Text(required=True, max_length=100)
    user_id = Text(required=True, max_length=100)


# Per section, the schema that checks its rows: the API's own, but for what only the file holds.
SCHEMAS = {
    "users": UserRowSchema(),
    "teams": group_update_schema,
    "team_members": TeamMemberSchema(),
    "cycles": cycle_update_schema,
    "objectives": ObjectiveRowSchema(),
    "key_results": KeyResultRowSchema(),
    "checkins": checkin_schema,
    "comments": CommentRowSchema(),
    "initiatives": InitiativeSchema(),
    "api_keys": api_key_schema,
}
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def problems_of(error):
    return "; ".join(f"{field}: {text}" for field, text in flatten(error.messages).items())


def checked(name, index, record):
    """The record's values as they are stored, in FIELDS order; Refusal naming where and what is wrong."""
    try:
        return checked_record(name, record)
    except Refusal as refusal:
        raise Refusal(f"{name}[{index}]: {refusal}") from None


EVENT_TYPE = re.compile(r"[a-z_]+\.[a-z_]+")
RESOURCE_TYPE = re.compile(r"[a-z_]+")
ACTOR_TYPES = ("user", "key", "system", "source")
# An event's ids (MAX_EVENT_ID) may name rows that are gone.
MAX_EVENT_TEXT = NAME_MAX  # an actor's name: a user's or a key's


def shown(value):
    return json.dumps(value, default=str, ensure_ascii=False)


def text_or_null(value, limit, null=True):
    return value is None and null or isinstance(value, str) and 0 < len(value) <= limit


def checked_actor(actor):
    """Refusal unless actor is who an event names: {"type": "user"|"key"|"system", "id", "name"} and, for a
    person signed in with a key, "key": {"id", "name"}."""
    if not isinstance(actor, dict):
        raise Refusal(f"actor: must be an object, not {shown(actor)}")
    if actor.get("type") not in ACTOR_TYPES:
        raise Refusal(f"actor: type must be one of {', '.join(ACTOR_TYPES)}, not {shown(actor.get('type'))}")
    allowed = ("type", "id", "name", "key") if actor["type"] == "user" else ("type", "id", "name")
    unknown = [field for field in actor if field not in allowed]
    missing = [field for field in ("id", "name") if field not in actor]
    if unknown or missing:
        raise Refusal(f"actor: {'unknown' if unknown else 'missing'} field {(unknown or missing)[0]}")
    holders = [("actor", actor)]
    if "key" in actor:
        if not (isinstance(actor["key"], dict) and set(actor["key"]) == {"id", "name"}):
            raise Refusal(f"actor: key must be an object with id and name, not {shown(actor['key'])}")
        holders.append(("actor: key", actor["key"]))
    for place, holder in holders:
        if not text_or_null(holder["id"], MAX_EVENT_ID):
            raise Refusal(f"{place}: id must be null or text of up to {MAX_EVENT_ID} characters, "
                          f"not {shown(holder['id'])}")
        if not text_or_null(holder["name"], MAX_EVENT_TEXT):
            raise Refusal(f"{place}: name must be null or text of up to {MAX_EVENT_TEXT} characters, "
                          f"not {shown(holder['name'])}")


def checked_event(values):
    """Refusal unless an event's values (in FIELDS order) are an event as okr records one. Its ids are not
    references: they name rows that may be gone."""
    event = dict(zip(FIELDS["events"], values))
    if not (isinstance(event["id"], str) and UUID_RE.fullmatch(event["id"])):
        raise Refusal(f"id: must be a lowercase UUID, not {shown(event['id'])}")
    kind = event["type"]
    if not (isinstance(kind, str) and len(kind) <= 100 and EVENT_TYPE.fullmatch(kind)):
        raise Refusal(f"type: must be a resource and an action, such as objective.updated, not {shown(kind)}")
    if not valid_timestamp(event["created_at"]):
        raise Refusal("created_at: must be an RFC 3339 UTC time to the second, such as 2026-11-22T10:15:30Z, "
                      f"not {shown(event['created_at'])}")
    checked_actor(event["actor"])
    resource = event["resource_type"]
    if not (isinstance(resource, str) and len(resource) <= 100 and RESOURCE_TYPE.fullmatch(resource)):
        raise Refusal(f"resource_type: must be a resource's name, such as objective, not {shown(resource)}")
    for field in ("person_id", "resource_id", "parent_id", "cycle_id", "team_id"):
        if not text_or_null(event[field], MAX_EVENT_ID, null=field != "resource_id"):
            raise Refusal(f"{field}: must be {'' if field == 'resource_id' else 'null or '}text of up to "
                          f"{MAX_EVENT_ID} characters, not {shown(event[field])}")
    if not isinstance(event["data"], dict):
        raise Refusal(f"data: must be an object, not {shown(event['data'])}")
    changes = event["changes"]
    if changes is not None and not (isinstance(changes, dict) and all(
            isinstance(change, list) and len(change) == 2 for change in changes.values())):
        raise Refusal("changes: must be null or an object of [before, after] pairs, not " + shown(changes))
    for field in ("actor", "data", "changes"):
        try:
            event_text(event[field])  # as it will be stored
        except ValueError:
            raise Refusal(f"{field}: holds a number out of range") from None
        except RecursionError:
            raise Refusal(f"{field}: nested too deep") from None
    return values


def checked_record(name, record):
    """The record's values as they are stored, in FIELDS order; Refusal saying what is wrong (not where).

    The one check of a row for every way in: okr import's records, and okr
    import-simpleokr's (okr.transfer.from_simpleokr), which name their place their own way.
    An OPTIONAL field the record lacks is NOT_GIVEN (okr.store.bulk says what
    a write makes of it).
    """
    fields = FIELDS[name]
    optional = OPTIONAL.get(name, ())
    missing = [field for field in fields if field not in record and field not in optional]
    if missing:
        raise Refusal(f"missing field{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    unknown = [field for field in record if field not in fields]
    if unknown:
        raise Refusal(f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
    if name == "events":  # no API schema describes an event: the feed only shows them
        return checked_event(tuple(record[field] for field in fields))
    nullable = NULLABLE | NULLABLE_IN.get(name, frozenset())
    for field in fields:
        value = record.get(field, NOT_GIVEN)
        if value is NOT_GIVEN or value is None and field in nullable:
            continue
        if (field == "id" or field.endswith("_id") or field in OTHER_IDS) and not (isinstance(value, str) and UUID_RE.fullmatch(value)):
            raise Refusal(f"{field}: must be a lowercase UUID, not {json.dumps(value, default=str)}")
        if field in TIMESTAMPS and not valid_timestamp(value):
            raise Refusal(f"{field}: must be an RFC 3339 UTC time to the second, such as "
                          f"2026-11-22T10:15:30Z, not {json.dumps(value, default=str)}")
        if field == "revision" and not (type(value) is int and value >= 0):
            raise Refusal(f"revision: must be a whole number from 0, not {json.dumps(value, default=str)}")
    if name == "cycles" and record.get("closed_by") not in (None, NOT_GIVEN) and \
            record.get("closed_at") in (None, NOT_GIVEN):
        raise Refusal("closed_by: given without closed_at (a cycle closed by someone has the time it was closed)")
    if name == "initiatives" and (record.get("state") == "done") != (record.get("done_at") is not None):
        raise Refusal("done_at: must be set exactly when state is done (when it was last made done)")
    if name == "objectives" and record.get("carried_from_id") == record["id"]:
        raise Refusal("carried_from_id: must be another objective's id, not its own")
    try:
        loaded = SCHEMAS[name].load(record)  # the schemas leave out the fields they do not know
    except ValidationError as error:
        raise Refusal(problems_of(error) or str(error)) from None
    return tuple(loaded[field] if field in loaded else record.get(field, NOT_GIVEN) for field in fields)


def valid_timestamp(value):
    if not (isinstance(value, str) and TIMESTAMP.fullmatch(value)):
        return False
    try:
        datetime.fromisoformat(value[:-1])  # a real date and time: no February 30th, no 24:00
    except ValueError:
        return False
    return True

