"""How OKRs are going: progress per key-result type, its roll-ups, and status.

The one home of these rules: the API's reports, the dashboard and the exports
all call this module, which knows nothing of Flask or SQL. Decimals arrive as
the canonical strings the database stores. Every figure is computed exactly
(as fractions) and only the final one is rounded, to two places, half to even.
"""
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction

ON_TRACK = Fraction(70, 100)
AT_RISK = Fraction(40, 100)
STALE_AFTER = timedelta(days=14)


def exact(decimal_text):
    """The exact value of a stored decimal string, or None."""
    return None if decimal_text is None else Fraction(Decimal(decimal_text))


def clamp(value):
    return min(max(value, Fraction(0)), Fraction(1))


def key_result_progress(kind, start, current, target_min, target_max):
    """A key result's progress from 0 to 1 as an exact Fraction; None for a baseline.

    start is the value of its first check-in; all values are decimal strings.
    """
    if kind == "baseline":
        return None
    current = exact(current)
    low = exact(target_min)
    if kind == "milestone":
        return Fraction(1 if current >= 1 else 0)
    if kind == "range":
        return Fraction(1 if low <= current <= exact(target_max) else 0)
    start = exact(start)
    if kind == "positive":
        if start == low:
            return Fraction(1 if current >= low else 0)
        return clamp((current - start) / (low - start))
    if kind == "negative":
        if start == low:
            return Fraction(1 if current <= low else 0)
        return clamp((start - current) / (start - low))
    raise ValueError(f"unknown key result type {kind!r}")


def mean(values):
    """The plain mean of the values that are not None, or None when there are none."""
    present = [value for value in values if value is not None]
    return sum(present, Fraction(0)) / len(present) if present else None


def figure(value):
    """An exact progress as the API shows it: two decimals, rounded half to even ("0.67"); None stays None."""
    if value is None:
        return None
    rounded = round(value, 2)  # Fraction rounds half to even, exactly
    return f"{Decimal(rounded.numerator) / rounded.denominator:.2f}"


def status(confidence):
    """on_track (confidence at least 0.70), at_risk (at least 0.40) or off_track."""
    confidence = exact(confidence)
    if confidence >= ON_TRACK:
        return "on_track"
    return "at_risk" if confidence >= AT_RISK else "off_track"


def parse_timestamp(text):
    """An RFC 3339 UTC timestamp as stored (2026-11-22T10:15:30Z), as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def is_stale(last_checkin_at, now):
    """True when the last check-in is more than 14 days before now (an aware datetime)."""
    return now - parse_timestamp(last_checkin_at) > STALE_AFTER
