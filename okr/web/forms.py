"""Form fields as people type them, and refusals as people read them.

A form sends text; the rules (okr.rules.body_schemas) take the API's values. In between,
a page reads "80 %" as the confidence 0.80, "$60,000" or "60k" as the value 60000
(okr.rules.quantities, with the key result's unit), a milestone's Done box as 1 or 0,
and a rule's refusal ("Not a valid decimal: send a string ...") becomes a sentence for
the person at the form ("Write a number such as 60000, 60,000, 60k or $60,000.").
"""
import re
from decimal import Decimal, InvalidOperation

from marshmallow import ValidationError

from ..errors import Invalid
from ..rules import fields
from ..rules.messages import flatten
from ..rules.body_schemas import checkin_schema
from ..rules import quantities

ENTER_A_NUMBER = "Enter a number such as 42 or 3.5."
ENTER_A_CONFIDENCE = quantities.ENTER_A_CONFIDENCE
TYPED_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)")
MAX_TYPED = quantities.MAX_TYPED  # characters: a 1,000,000-digit number is a typo or an attack
MAX_LENGTH = re.compile(r"Longer than maximum length (\d+)\.")

# What the rules say, and what a person at a form reads instead.
PEOPLE_WORDS = {
    "Missing data for required field.": "Fill this in.",
    "Must not be empty or only whitespace.": "Fill this in.",
    fields.TOO_MANY_FRACTION_DIGITS: f"Use at most {fields.MAX_FRACTION_DIGITS} digits after the decimal point.",
    fields.TOO_LARGE: f"Enter a number below {10 ** fields.MAX_INTEGER_DIGITS:,}.",
    "Must not contain NUL characters.": "Remove the invisible control characters.",
    "Must be valid Unicode (no lone surrogates).": "Remove the characters that are not text.",
}


class FieldError(ValueError):
    """A field a person filled in wrongly, with the sentence to show beside it."""


def confidence(text):
    """A confidence as typed (okr.rules.quantities.typed_confidence): "80 %" or "0.8" as the rules' "0.8"; "" as
    None (keep the present one); FieldError otherwise."""
    try:
        return quantities.typed_confidence(text)
    except quantities.NotANumber as error:
        raise FieldError(str(error)) from None


def decimal(text, message=ENTER_A_NUMBER):
    """A number as typed (digits, a point, a sign: nobody types an exponent), as a Decimal; FieldError with
    message unless it is one."""
    text = text.strip()
    if len(text) > MAX_TYPED or not TYPED_NUMBER.fullmatch(text):
        raise FieldError(message)
    try:
        return Decimal(text)
    except InvalidOperation:
        raise FieldError(message) from None


def quantity(text, unit=None, position=None):
    """A value or target as typed ("$60,000", "60k", "12 %": okr.rules.quantities.typed, with the key result's
    unit) as the rules' decimal text, "" left as it is (the rules say whether it may be empty); FieldError with
    what is taken unless it is one."""
    if not text.strip():
        return text.strip()
    try:
        return format(quantities.typed(text, unit, position), "f")
    except quantities.NotANumber as error:
        raise FieldError(str(error)) from None


def for_people(field, message, numbers=(), unit=None, position=None):
    """A rule's refusal of field as a sentence for the form; numbers names the fields that hold numbers, which
    the key result's unit (and position) may come with."""
    if message in PEOPLE_WORDS:
        return PEOPLE_WORDS[message]
    longest = MAX_LENGTH.fullmatch(message)
    if longest:
        return f"Shorten this to at most {int(longest.group(1)):,} characters."
    if field == "confidence":
        return ENTER_A_CONFIDENCE
    if field in numbers:
        return quantities.examples(unit, position)
    return message


def checkin_values(form, key_result):
    """The check-in form's fields (value, or a milestone's done; confidence, comment: text as typed) as
    CheckinSchema's values; Invalid with a sentence for people beside each field that is wrong. key_result is
    its row or report node: its type and its unit (for "$60,000")."""
    errors, body = {}, {"comment": form["comment"] or None}
    unit, position = key_result["unit"], key_result["unit_position"]
    if key_result["type"] == "milestone":
        body["value"] = "1" if form.get("done") else "0"  # a box left unticked is not done
    else:
        try:
            body["value"] = quantity(form["value"], unit, position)
        except FieldError as error:
            errors["value"] = str(error)
    try:
        typed = confidence(form["confidence"])
        if typed is not None:  # left empty: the key result keeps its confidence
            body["confidence"] = typed
    except FieldError as error:
        errors["confidence"] = str(error)
    try:
        values = checkin_schema.load(body)
    except ValidationError as error:
        for field, text in flatten(error.messages).items():
            errors.setdefault(field, for_people(field, text, numbers=("value",), unit=unit, position=position))
    if errors:
        raise Invalid(errors)
    return values
