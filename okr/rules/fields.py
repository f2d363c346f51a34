"""marshmallow fields with the contract's strict rules for text, bools and decimals."""
import re
from datetime import date
from decimal import Decimal, InvalidOperation

from marshmallow import ValidationError, fields

from . import names, quantities

MAX_FRACTION_DIGITS = 6
MAX_INTEGER_DIGITS = 15  # absolute values of 10**15 or more are rejected
# Exactly the characters str.isspace() accepts, as a regex class body usable in
# both Python and ECMA-262 (the OpenAPI document's dialect).
WHITESPACE = (
    "\\u0009-\\u000d\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a"
    "\\u2028\\u2029\\u202f\\u205f\\u3000"
)
NOT_BLANK = re.compile(f"[^{WHITESPACE}]")
TOO_MANY_FRACTION_DIGITS = f"Has more than {MAX_FRACTION_DIGITS} fractional digits."
TOO_LARGE = f"Absolute value must be less than 10^{MAX_INTEGER_DIGITS}."
NOT_A_DECIMAL = 'Not a valid decimal: send a string such as "0.50" or a number.'
DECIMAL_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


class Text(fields.String):
    """A string without NUL or lone surrogates, at most max_length characters."""

    def __init__(self, *, max_length=None, not_blank=False, **kwargs):
        super().__init__(**kwargs)
        self.max_length = max_length
        self.not_blank = not_blank

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if "\x00" in text:
            raise ValidationError("Must not contain NUL characters.")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError("Must be valid Unicode (no lone surrogates).") from None
        if self.max_length is not None and len(text) > self.max_length:
            raise ValidationError(f"Longer than maximum length {self.max_length}.")
        if self.not_blank and not NOT_BLANK.search(text):
            raise ValidationError("Must not be empty or only whitespace.")
        return text


class PersonName(Text):
    """A person's name: Text without control characters (okr.rules.names says why)."""

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        problem = names.problem(text)
        if problem:
            raise ValidationError(problem)
        return text


class UnitText(Text):
    """A key result's unit ("$", "%", "ms", "users"): trimmed, at most quantities.UNIT_MAX characters, no control
    characters; empty is none (None)."""

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        problem = quantities.unit_problem(text)  # a control character anywhere, even where strip() would trim it
        if problem:
            raise ValidationError(problem)
        return text.strip() or None


class UnitPosition(Text):
    """Where a unit goes: "before" the number ($) or "after" it (%, ms); "" is none (None)."""

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if text not in ("", *quantities.POSITIONS):
            raise ValidationError('Must be "before" or "after" (or null).')
        return text or None


LINK_MAX = 2000
LINK_SCHEMES = ("http", "https")


class WebLink(Text):
    """A link to a page elsewhere (an initiative's ticket): an absolute http or https URL with a host, at most
    LINK_MAX characters, no whitespace or control characters anywhere; "" is none (None). Anything else
    (javascript:, data:, a relative path) is refused: pages show it as a link people click."""

    def __init__(self, **kwargs):
        super().__init__(max_length=LINK_MAX, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if not text:
            return None
        problem = link_problem(text)
        if problem:
            raise ValidationError(problem)
        return text


def link_problem(text):
    """Why text is not a link WebLink takes, or None."""
    if any(character.isspace() or ord(character) < 32 or 127 <= ord(character) < 160 for character in text):
        return "Must not contain spaces or control characters."
    scheme, _, rest = text.partition("://")
    if scheme.lower() not in LINK_SCHEMES or not rest or rest[0] in "/?#":
        return "Must be a web address starting with https:// or http://."
    return None


ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class DateText(Text):
    """A calendar date as ISO 8601 text ("2026-10-01"), kept as that text."""

    def __init__(self, **kwargs):
        super().__init__(max_length=10, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        try:
            if ISO_DATE.fullmatch(text) and date.fromisoformat(text):
                return text
        except ValueError:
            pass
        raise ValidationError("Not a valid date: send one such as \"2026-10-01\".")


class StrictBool(fields.Field):
    """Only JSON true or false; no 1, "yes" or "true"."""

    def _deserialize(self, value, attr, data, **kwargs):
        if type(value) is not bool:
            raise ValidationError("Not a valid boolean (send true or false).")
        return value


def canonical_decimal(value):
    """Returns the contract's string for a decimal, or raises ValidationError.

    Accepts a string or a JSON number already parsed as Decimal or int. At most
    six fractional digits may be written ("1.0000000" has seven). The result is
    plain notation with at least two fractional digits: 0.5 gives "0.50", 1e3
    gives "1000.00", 0.125 stays "0.125". Nothing goes through float.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, Decimal)):
        raise ValidationError(NOT_A_DECIMAL)
    if isinstance(value, str):
        if not DECIMAL_TEXT.fullmatch(value):
            raise ValidationError(NOT_A_DECIMAL)
        try:
            value = Decimal(value)
        except InvalidOperation:  # an exponent beyond what Decimal can hold
            raise ValidationError("Not a valid decimal: the exponent is out of range.") from None
    elif isinstance(value, int):
        value = Decimal(value)
    if not value.is_finite():
        raise ValidationError("Must be a finite decimal.")
    sign, digits, exponent = value.as_tuple()
    if exponent < -MAX_FRACTION_DIGITS:
        raise ValidationError(TOO_MANY_FRACTION_DIGITS)
    if not any(digits):
        return "0.00"
    if len(digits) + exponent > MAX_INTEGER_DIGITS:
        raise ValidationError(TOO_LARGE)
    # The value decides the output: 1.500 is returned as 1.50.
    while exponent < 0 and digits[-1] == 0:
        digits, exponent = digits[:-1], exponent + 1
    text = format(Decimal((sign, digits, exponent)), "f")
    whole, _, fraction = text.partition(".")
    return f"{whole}.{fraction.ljust(2, '0')}"


class DecimalString(fields.Field):
    """A decimal kept exact, loaded as its canonical string."""

    def __init__(self, *, minimum=None, maximum=None, **kwargs):
        super().__init__(**kwargs)
        self.minimum = minimum
        self.maximum = maximum

    def _deserialize(self, value, attr, data, **kwargs):
        text = canonical_decimal(value)
        number = Decimal(text)
        if self.minimum is not None and number < Decimal(self.minimum) or (
            self.maximum is not None and number > Decimal(self.maximum)
        ):
            raise ValidationError(f"Must be between {self.minimum} and {self.maximum}.")
        return text



class WholeNumber(fields.Field):
    """A whole number given as a JSON number (parsed as an int or an integral Decimal), from low to high; never a
    bool, a string or a fraction."""

    def __init__(self, *, low, high, **kwargs):
        super().__init__(**kwargs)
        self.low, self.high = low, high

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)) or (
                isinstance(value, Decimal) and (not value.is_finite() or value != value.to_integral_value())):
            raise ValidationError("Must be a whole number.")
        if not self.low <= value <= self.high:
            raise ValidationError(f"Must be from {self.low} to {self.high}.")
        return int(value)
