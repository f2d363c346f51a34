"""The marshmallow schema of every request body: what the API, the pages, the commands and the importers accept."""
import copy
import re
import unicodedata
from decimal import Decimal

from marshmallow import EXCLUDE, Schema, fields, ValidationError, missing, post_load, pre_load, validate, validates_schema

from .fields import DateText, DecimalString, PersonName, StrictBool, Text, UnitPosition, UnitText, WebLink, WholeNumber

KEY_RESULT_TYPES = ("milestone", "baseline", "range", "positive", "negative")
# Who may see an objective besides its own people (okr.store.visibility).
VISIBILITIES = ("everyone", "team", "private")
NAME_MAX = 500
GROUP_NAME_MAX = 200
DESCRIPTION_MAX = 10_000
DEFAULT_CONFIDENCE = "0.50"  # a new key result's
# How an objective ended, given as its cycle is closed out.
OUTCOMES = ("achieved", "partly_achieved", "missed", "dropped", "carried_over")
REFLECTION_MAX = 10_000


class BodySchema(Schema):
    class Meta:
        # Unknown and read-only fields are ignored, so a client can send back what it fetched.
        unknown = EXCLUDE


class ObjectiveSchema(BodySchema):
    """Creates an objective."""

    name = Text(required=True, max_length=NAME_MAX, not_blank=True)
    cycle_id = Text(required=True, max_length=100)
    is_company = StrictBool(required=True)
    is_personal = StrictBool(required=True)
    description = Text(max_length=DESCRIPTION_MAX, allow_none=True, load_default=None)
    team_id = Text(max_length=100, allow_none=True, load_default=None)
    assignee_id = Text(max_length=100, allow_none=True, load_default=None)
    parent_objective_id = Text(max_length=100, allow_none=True, load_default=None)

    @validates_schema
    def not_company_and_personal(self, data, **kwargs):
        if data.get("is_company") and data.get("is_personal"):
            message = "An objective cannot be both a company and a personal objective."
            raise ValidationError({"is_company": [message], "is_personal": [message]})


class ObjectiveUpdateSchema(ObjectiveSchema):
    """Replaces an objective: omitted bools are false, omitted strings null."""

    is_company = StrictBool(load_default=False)
    is_personal = StrictBool(load_default=False)


class ClosingFields(BodySchema):
    """An objective's close-out, which the spec's objective has not (PATCH, the close-out page): absent is
    unchanged, null is none."""

    outcome = Text(allow_none=True, validate=validate.OneOf(OUTCOMES), metadata={"description": (
        "How it ended: achieved, partly_achieved, missed, dropped or carried_over.")})
    score = DecimalString(minimum=0, maximum=1, allow_none=True, metadata={"description": (
        "Its final score, 0.00 to 1.00 (the close-out page suggests its final progress).")})
    reflection = Text(max_length=REFLECTION_MAX, allow_none=True, metadata={"description": (
        "What worked, what did not, what next.")})


class ObjectiveEditSchema(ObjectiveUpdateSchema, ClosingFields):
    """Replaces an objective with its close-out too (PATCH): outcome, score and reflection, when given; and who
    may see it."""

    visibility = Text(validate=validate.OneOf(VISIBILITIES), metadata={"description": (
        "Who may see it: everyone (the default), team (its team's members) or private; its assignee, its key "
        "results' owners, its creator and admins always do.")})


class KeyResultFields(BodySchema):
    """What the spec's key result is made of, and its target rules."""

    name = Text(required=True, max_length=NAME_MAX, not_blank=True)
    type = Text(required=True, validate=validate.OneOf(KEY_RESULT_TYPES))
    confidence = DecimalString(minimum=0, maximum=1, load_default=DEFAULT_CONFIDENCE)
    current_value = DecimalString(load_default="0.00")
    target_value_min = DecimalString(allow_none=True, load_default=None)
    target_value_max = DecimalString(allow_none=True, load_default=None)

    @validates_schema
    def targets_fit_type(self, data, **kwargs):
        kind, low, high = data["type"], data["target_value_min"], data["target_value_max"]
        errors = {}
        if kind in ("positive", "negative", "range") and low is None:
            errors["target_value_min"] = f"Required for a {kind} key result."
        if kind == "range" and high is None:
            errors["target_value_max"] = "Required for a range key result."
        if kind in ("positive", "negative", "milestone", "baseline") and high is not None:
            errors["target_value_max"] = f"Must be null for a {kind} key result."
        if kind == "baseline" and low is not None:
            errors["target_value_min"] = "Must be null for a baseline key result."
        if kind == "milestone" and low is not None and Decimal(low) != 1:
            errors["target_value_min"] = "A milestone's target is always 1.00."
        if kind == "range" and low is not None and high is not None and Decimal(low) > Decimal(high):
            errors["target_value_min"] = "Must not be greater than target_value_max."
        if errors:
            raise ValidationError(errors)

    @post_load
    def milestone_target(self, data, **kwargs):
        if data["type"] == "milestone":
            data["target_value_min"] = "1.00"
        return data


PROGRESS_SOURCES = ("measure", "initiatives")
WEIGHT_DESCRIPTION = ("How much it counts in its objective's progress, the weighted mean of its key results' progress: "
                      "a whole number from 0 (not at all) to 100; 1 by default, and key results of equal weights "
                      "count equally.")


class KeyResultSchema(KeyResultFields):
    """Creates a key result, maybe with its owner (a user id) and its weight (1 unless given)."""

    owner_id = Text(max_length=100, allow_none=True, load_default=None)
    weight = WholeNumber(low=0, high=100, load_default=1, metadata={"description": WEIGHT_DESCRIPTION})
    progress_from = Text(load_default="measure", validate=validate.OneOf(PROGRESS_SOURCES), metadata={"description": (
        "Where its progress comes from: \"measure\" (its values against its targets) or \"initiatives\" (the share "
        "of its initiatives done); measure when absent.")})


class UnitFields(BodySchema):
    """A key result's unit and where it goes, which the spec's key result has not (PATCH, the pages): absent is
    unchanged; a null or empty unit is none, and takes its position with it; a unit without a position goes
    after the number."""

    unit = UnitText(allow_none=True, metadata={"description": (
        "What the key result counts, shown with its figures: \"$\", \"%\", \"ms\", \"users\". At most 12 "
        "characters once trimmed, no control characters; null or \"\" is none.")})
    unit_position = UnitPosition(allow_none=True, metadata={"description": (
        "Where the unit goes: \"before\" the number ($60,000) or \"after\" it (12 ms). Null or \"\" with a "
        "unit is \"after\"; without a unit it is null.")})

    @post_load
    def position_with_unit(self, data, **kwargs):
        if "unit" in data:
            data["unit_position"] = (data.get("unit_position") or "after") if data["unit"] else None
        else:
            data.pop("unit_position", None)  # nothing to place
        return data


class KeyResultUpdateSchema(KeyResultFields):
    """Replaces a key result (the spec's POST): omitted decimals are "0.00", omitted targets null; its owner
    stays."""

    confidence = DecimalString(minimum=0, maximum=1, load_default="0.00")


class KeyResultEditSchema(KeyResultUpdateSchema, UnitFields):
    """Replaces a key result with its owner too (PATCH, the pages): an omitted owner is none; its unit, when
    given (UnitFields)."""

    owner_id = Text(max_length=100, allow_none=True, load_default=None)
    score = DecimalString(minimum=0, maximum=1, allow_none=True, metadata={"description": (
        "Its final score, 0.00 to 1.00, given as its cycle is closed out (absent is unchanged, null none).")})
    weight = WholeNumber(low=0, high=100, metadata={"description": WEIGHT_DESCRIPTION + " Absent is unchanged."})
    progress_from = Text(validate=validate.OneOf(PROGRESS_SOURCES), metadata={"description": (
        "Where its progress comes from: \"measure\" (its values against its targets, as the spec has it) or "
        "\"initiatives\" (the share of its initiatives done; 0 while it has none). Absent is unchanged.")})


def merge_patch_schema(update_schema, name):
    """The body of a merge patch over what update_schema replaces: every field optional, without a
    default (absent means unchanged), and nullable exactly where the full update's field is.

    It describes PATCH bodies in the OpenAPI document; what validates them is update_schema, applied
    to the merged result (load_merge_patch). Built from it, the description cannot drift.
    """
    fields = {}
    for field_name, field in update_schema._declared_fields.items():
        field = copy.copy(field)
        field.required, field.load_default = False, missing
        fields[field_name] = field
    return type(name, (BodySchema,), {"__doc__": f"Changes some of what {update_schema.__name__} replaces.",
                                      **fields})


ObjectivePatchSchema = merge_patch_schema(ObjectiveEditSchema, "ObjectivePatchSchema")
KeyResultPatchSchema = merge_patch_schema(KeyResultEditSchema, "KeyResultPatchSchema")


class CheckinSchema(BodySchema):
    """Records a check-in on a key result; confidence defaults to the key result's present one."""

    value = DecimalString(required=True)
    confidence = DecimalString(minimum=0, maximum=1)
    comment = Text(max_length=DESCRIPTION_MAX, allow_none=True, load_default=None)
    author_id = Text(max_length=100, allow_none=True, load_default=None)


class CheckinCorrectionSchema(BodySchema):
    """Corrects a check-in: its value, confidence and comment, by the rules a new check-in meets."""

    value = DecimalString(required=True)
    confidence = DecimalString(required=True, minimum=0, maximum=1)
    comment = Text(max_length=DESCRIPTION_MAX, allow_none=True, load_default=None)


class CheckinPatchSchema(CheckinCorrectionSchema):
    """A JSON Merge Patch of a check-in (OpenAPI's body: every field optional)."""

    value = DecimalString()
    confidence = DecimalString(minimum=0, maximum=1)


COMMENT_MAX = 10_000


class CommentSchema(BodySchema):
    """Writes a comment on an objective or a key result: its body, plain text kept as sent."""

    body = Text(required=True, max_length=COMMENT_MAX, not_blank=True)


CommentPatchSchema = merge_patch_schema(CommentSchema, "CommentPatchSchema")

class NotificationsReadSchema(BodySchema):
    """Marks the signer's notifications read: all (all: true), else those of ids (none when there are none)."""

    ids = fields.List(Text(max_length=100), validate=validate.Length(min=1, max=1000))
    all = StrictBool(load_default=False)


notifications_read_schema = NotificationsReadSchema()

INITIATIVE_STATES = ("planned", "in_progress", "done", "blocked")


class InitiativeSchema(BodySchema):
    """Creates an initiative under a key result, or replaces one (PATCH merges over it): the work that moves the key
    result, with its owner (an editor or an admin), its state, and maybe a due date and a link."""

    name = Text(required=True, max_length=NAME_MAX, not_blank=True)
    owner_id = Text(max_length=100, allow_none=True, load_default=None, metadata={"description": (
        "The user who does it: an editor or an admin; null for nobody.")})
    state = Text(load_default="planned", validate=validate.OneOf(INITIATIVE_STATES), metadata={"description": (
        "planned, in_progress, done or blocked; planned when absent.")})
    due_on = DateText(allow_none=True, load_default=None, metadata={"description": (
        "When it is due, a date such as \"2026-12-15\"; null for none.")})
    link = WebLink(allow_none=True, load_default=None, metadata={"description": (
        "The ticket or page elsewhere that tracks it: an http or https address of at most 2,000 characters; null "
        "or \"\" for none.")})


InitiativePatchSchema = merge_patch_schema(InitiativeSchema, "InitiativePatchSchema")


class GroupSchema(BodySchema):
    """Creates a cycle or a team; the name is optional."""

    name = Text(max_length=GROUP_NAME_MAX, load_default="")


class GroupUpdateSchema(BodySchema):
    """Renames a cycle or a team; "" is a valid name."""

    name = Text(required=True, max_length=GROUP_NAME_MAX)


class CycleDates(BodySchema):
    """A cycle's dates (ISO dates; either may be null or absent, an open end), the end not before the start."""

    starts_on = DateText(allow_none=True, load_default=None)
    ends_on = DateText(allow_none=True, load_default=None)

    @validates_schema
    def dates_in_order(self, data, **kwargs):
        starts_on, ends_on = data.get("starts_on"), data.get("ends_on")
        if starts_on and ends_on and ends_on < starts_on:
            raise ValidationError({"ends_on": ["Must not be before starts_on."]})


class CycleSchema(CycleDates, GroupSchema):
    """Creates a cycle, maybe with its dates."""


class CycleUpdateSchema(CycleDates, GroupUpdateSchema):
    """Replaces a cycle's name and dates (PATCH, the pages, okr import): omitted dates are null."""


CyclePatchSchema = merge_patch_schema(CycleUpdateSchema, "CyclePatchSchema")


objective_schema = ObjectiveSchema()
objective_update_schema = ObjectiveUpdateSchema()
objective_edit_schema = ObjectiveEditSchema()
closing_schema = ClosingFields()
key_result_schema = KeyResultSchema()
key_result_update_schema = KeyResultUpdateSchema()
key_result_edit_schema = KeyResultEditSchema()
checkin_schema = CheckinSchema()
checkin_correction_schema = CheckinCorrectionSchema()
unit_schema = UnitFields()
comment_schema = CommentSchema()
initiative_schema = InitiativeSchema()
group_schema = GroupSchema()
group_update_schema = GroupUpdateSchema()
cycle_schema = CycleSchema()
cycle_update_schema = CycleUpdateSchema()


class UserSchema(BodySchema):
    """A user, as the People page, `okr users add`, `update` and `import` and `okr import` take it: the name holds
    no control character (okr.rules.names), the email is kept in NFC."""

    name = PersonName(required=True, max_length=NAME_MAX, not_blank=True)
    email = Text(required=True, max_length=320, validate=validate.Email())

    @pre_load
    def email_in_nfc(self, data, **kwargs):
        # A decomposed accent is the same text, but the email validator takes combining marks for junk.
        if isinstance(data.get("email"), str):
            data = {**data, "email": unicodedata.normalize("NFC", data["email"])}
        return data


user_schema = UserSchema()


# Metric sources (okr.sources): an admin's connection, an editor's source, a fill-back.
SOURCE_KINDS = ("http_json", "csv", "postgresql", "sqlite", "prometheus")
SECRET_MAX = 10_000
HEADERS_MOST = 20
HEADER_NAME = re.compile(r"[A-Za-z0-9-]+")


class Headers(fields.Dict):
    """A connection's headers: {name: value} of text, at most HEADERS_MOST, names of HTTP token characters,
    no line breaks anywhere."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, dict):
            raise ValidationError("Must be an object of header names and values.")
        if len(value) > HEADERS_MOST:
            raise ValidationError(f"At most {HEADERS_MOST} headers.")
        for name, text in value.items():
            if not (isinstance(name, str) and name and len(name) <= 100 and HEADER_NAME.fullmatch(name)):
                raise ValidationError("Each header name must be letters, digits and -, up to 100 characters.")
            if not isinstance(text, str) or len(text) > 2000 or any(ord(char) < 32 or ord(char) == 127
                                                                    for char in text):
                raise ValidationError(f"The value of {name} must be text of up to 2,000 characters on one line.")
        return dict(value)


class ConnectionSchema(BodySchema):
    """Adds a connection (an admin's): its secret is sealed, never shown again."""

    name = Text(required=True, max_length=100, not_blank=True)
    kind = Text(required=True, validate=validate.OneOf(SOURCE_KINDS))
    address = Text(required=True, max_length=2000, not_blank=True)
    headers = Headers(load_default=dict)
    secret = Text(max_length=SECRET_MAX, allow_none=True, load_default=None)
    inside_network = StrictBool(load_default=False)


class ConnectionPatchSchema(BodySchema):
    """Changes a connection: the fields sent; secret: a new one, or null for none (absent: it stays)."""

    name = Text(max_length=100, not_blank=True)
    kind = Text(validate=validate.OneOf(SOURCE_KINDS))
    address = Text(max_length=2000, not_blank=True)
    headers = Headers()
    secret = Text(max_length=SECRET_MAX, allow_none=True)
    inside_network = StrictBool()


class SourceSchema(BodySchema):
    """Attaches a key result to a connection (an editor's): the query (and JSONPath or cell) and how often."""

    connection_id = Text(required=True, max_length=100)
    query = Text(required=True, max_length=10_000, not_blank=True)
    path = Text(max_length=1000, allow_none=True, load_default=None)
    every_minutes = WholeNumber(low=15, high=1440, load_default=60)


class SourceTestSchema(BodySchema):
    """Tests a source before it is saved; all absent: the key result's own."""

    connection_id = Text(max_length=100)
    query = Text(max_length=10_000, not_blank=True)
    path = Text(max_length=1000, allow_none=True)


class FillSchema(BodySchema):
    """Fills a key result's history back from its source: from (the cycle's start), to (yesterday), step."""

    first = DateText(data_key="from", allow_none=True, load_default=None)
    last = DateText(data_key="to", allow_none=True, load_default=None)
    step = Text(load_default="daily", validate=validate.OneOf(("daily", "weekly")))

    @validates_schema
    def in_order(self, data, **kwargs):
        if data.get("first") and data.get("last") and data["last"] < data["first"]:
            raise ValidationError({"to": ["Must not be before from."]})


connection_schema = ConnectionSchema()
connection_patch_schema = ConnectionPatchSchema()
source_schema = SourceSchema()
source_test_schema = SourceTestSchema()
fill_schema = FillSchema()
