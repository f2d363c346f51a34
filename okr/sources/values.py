"""What every kind of source shares: a Reading, the SourceFailed sentence, a number's rule, moments as text."""
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal

# An answer is read up to one byte past this: more is a failure, not a truncated value.
ANSWER_BYTES = 1_000_000  # 1 MB, as the failure says


class SourceFailed(Exception):
    """Why a source gave no value, in plain words for a person (str(error)); never holds a secret."""


@dataclass(frozen=True)
class Reading:
    value: Decimal  # the number read (finite; never NaN or infinite)
    request: str  # what was run, for people: the URL or the query as run, every secret replaced by ***
    replay: dict  # JSON-able: what was run, exactly enough to run it again (no secret in it)
    answer: bytes  # the whole answer as received
    as_of: datetime | None  # the moment asked for (UTC), None for "now"


# A decimal number as written in text: a sign, digits with an optional fraction, an optional exponent.
NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def number(value, what):
    """value (an int, a Decimal, a float or a numeric string) as a finite Decimal; SourceFailed naming what
    (e.g. "the cell B7") otherwise. A bool is no number, though Python counts it as one."""
    if isinstance(value, bool) or value is None:
        raise SourceFailed(f"{what} is {shown(value)}, not a number")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        value = repr(value)
    if isinstance(value, Decimal):
        found = value
    elif isinstance(value, str):
        text = value.strip()
        if not NUMBER.fullmatch(text):
            raise SourceFailed(f"{what} is {shown(value)}, not a number")
        found = Decimal(text)
    else:
        raise SourceFailed(f"{what} is {shown(value)}, not a number")
    if not found.is_finite():
        raise SourceFailed(f"{what} is {found}, not a finite number")
    try:
        return found + 0  # an exponent too big for a Decimal's context fails here
    except ArithmeticError:  # decimal's Overflow and InvalidOperation
        raise SourceFailed(f"{what} is too large a number") from None


def shown(value):
    """A value as a person reads it in a sentence, cut short."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def moment_text(moment):
    """A moment (an aware datetime) in RFC 3339, in UTC, to the second: 2026-03-31T23:59:59Z."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def moment_of(text):
    """The aware UTC datetime that moment_text wrote, or None for None."""
    if text is None:
        return None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def checked_moment(moment):
    """moment when it is an aware datetime (in UTC), else SourceFailed."""
    if not isinstance(moment, datetime) or moment.tzinfo is None or moment.utcoffset() is None:
        raise SourceFailed("the moment to read for must be a date and time with its time zone")
    return moment.astimezone(timezone.utc)


def masked(text, secret):
    """text with every occurrence of the secret replaced by ***."""
    return text.replace(secret, "***") if secret else text
