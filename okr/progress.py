"""How OKRs are going: progress per key-result type, its roll-ups, and status.

The one home of these rules: the API's reports, the dashboard and the exports
all call this module, which knows nothing of Flask or SQL. Decimals arrive as
the canonical strings the database stores. Every figure is computed exactly
(comparisons and differences as Decimal, which is exact at the contract's
21 digits; ratios and means as Fraction) and only the final one is rounded,
to two places, half to even.

A report computes thousands of these, so the common cases take short cuts:
clamped and yes/no progress is the shared ZERO or ONE, and status is cached
per confidence string.
"""
from datetime import date, datetime, timedelta
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction
from functools import lru_cache
from math import gcd

ON_TRACK = Decimal("0.70")
AT_RISK = Decimal("0.40")
# Pace: how far progress may fall short of the cycle's elapsed fraction and still be on track, or at risk.
PACE_ON_TRACK = Fraction(10, 100)
PACE_AT_RISK = Fraction(25, 100)
# Every status, worst first: every sort and every "worst of" follows this order.
STATUSES = ("off_track", "at_risk", "no_update", "on_track", "done")
RANK = {name: rank for rank, name in enumerate(STATUSES)}
STALE_AFTER = timedelta(days=14)
# A key result needs an update (its owner's week lists it first) after this long without a check-in.
NEEDS_UPDATE_AFTER = timedelta(days=7)
NO_UPDATE = "no_update"
ZERO, ONE = Fraction(0), Fraction(1)


def key_result_progress(kind, start, current, target_min, target_max):
    """A key result's progress from 0 to 1 as an exact Fraction; None for a baseline.

    start is the value of its first check-in; all values are decimal strings. A key result whose progress comes
    from its initiatives is of kind "initiatives", its value "done/count" (as the charts replay it).
    """
    if kind == "baseline":
        return None
    if kind == "initiatives":
        done, _, count = current.partition("/")
        return initiatives_progress(int(done), int(count))
    current = Decimal(current)
    if kind == "milestone":
        return ONE if current >= 1 else ZERO
    low = Decimal(target_min)
    if kind == "range":
        return ONE if low <= current <= Decimal(target_max) else ZERO
    start = Decimal(start)
    if kind == "positive":
        if start == low:
            return ONE if current >= low else ZERO
        return clamped_ratio(current - start, low - start)
    if kind == "negative":
        if start == low:
            return ONE if current <= low else ZERO
        return clamped_ratio(start - current, start - low)
    raise ValueError(f"unknown key result type {kind!r}")


def initiatives_progress(done, count):
    """A key result's progress when it comes from its initiatives: the share of them done, exactly; 0 while it has
    none (nothing done yet)."""
    if not count:
        return ZERO
    if done >= count:
        return ONE
    return Fraction(done, count) if done > 0 else ZERO


def clamped_ratio(gained, needed):
    """gained / needed (exact Decimals, needed not 0) clamped to 0..1, as a Fraction."""
    if needed < 0:
        gained, needed = -gained, -needed
    if gained <= 0:
        return ZERO
    if gained >= needed:
        return ONE
    top, top_scale = gained.as_integer_ratio()
    bottom, bottom_scale = needed.as_integer_ratio()
    return Fraction(top * bottom_scale, bottom * top_scale)


def mean(values, weights=None):
    """The mean of the Fractions that are not None, or None when there are none: plain, or weighted by the whole
    numbers weights gives one per value (an objective's own progress: its key results' weights, where a weight of 0
    leaves one out; None when every weight is 0). Weights of 1 are the plain mean exactly."""
    # Summed as numerator and denominator: Fraction's own + costs five times as much.
    top, bottom, count = 0, 1, 0
    for value, weight in zip(values, weights) if weights is not None else ((value, 1) for value in values):
        if value is not None and weight:
            top, bottom = top * value.denominator + weight * value.numerator * bottom, bottom * value.denominator
            common = gcd(top, bottom)
            top, bottom = top // common, bottom // common
            count += weight
    return Fraction(top, bottom * count) if count else None


# Digits for mean_figure's bounds: far more than any two-decimal figure needs.
BOUND_DIGITS = 60
TIE_SPACING = 200  # ties of two-decimal rounding are the odd multiples of 1/200


def mean_figure(values):
    """figure(mean(values)), for many values: the same string, found without an exact sum.

    Thousands of unlike fractions have a common denominator thousands of digits
    long (47,609 bits for 10,000 objectives), which makes their exact sum cost
    far more than linear time. Instead the mean is bounded from below and above
    with 60-digit decimals rounded down and up; when no rounding tie lies
    between the bounds, every number between them, the exact mean included,
    shows as the same figure. Only when one does (an exact tie, say) is the
    mean summed exactly.
    """
    present = [value for value in values if value is not None]
    if not present:
        return None
    found = figure_between(bound_sum(present, ROUND_FLOOR), bound_sum(present, ROUND_CEILING), len(present))
    return figure(mean(present)) if found is None else found


def figure_between(low_total, high_total, count):
    """The figure that every mean from low_total / count to high_total / count shows (bound_sum's sums of
    count values, rounded down and up); None when a rounding tie lies between them (mean_figure)."""
    with localcontext() as context:
        context.prec = BOUND_DIGITS
        context.rounding = ROUND_FLOOR
        low = low_total / count
        first_tie = (low * TIE_SPACING).to_integral_value(ROUND_CEILING)
        if first_tie % 2 == 0:
            first_tie += 1
        context.rounding = ROUND_CEILING
        if first_tie <= high_total / count * TIE_SPACING:
            return None
    return f"{low.quantize(Decimal('0.01'), ROUND_HALF_EVEN):f}"


def bound_sum(fractions, rounding, total=Decimal(0)):
    """total plus the sum of fractions as a decimal of BOUND_DIGITS digits, every step rounded one way."""
    with localcontext() as context:
        context.prec = BOUND_DIGITS
        context.rounding = rounding
        for value in fractions:
            if value.denominator == 1:
                total += value.numerator
            else:
                total += Decimal(value.numerator) / value.denominator
        return total


def figure(value):
    """An exact progress as the API shows it: two decimals, rounded half to even ("0.67"); None stays None."""
    if value is None:
        return None
    if value is ZERO or value is ONE:  # a short cut: most key results are done or not started
        return "1.00" if value is ONE else "0.00"
    hundredths, rest = divmod(abs(value.numerator) * 100, value.denominator)
    if 2 * rest > value.denominator or (2 * rest == value.denominator and hundredths % 2):
        hundredths += 1
    sign = "-" if value.numerator < 0 and hundredths else ""
    return f"{sign}{hundredths // 100}.{hundredths % 100:02d}"


@lru_cache(maxsize=1024)
def status(confidence):
    """on_track (confidence at least 0.70), at_risk (at least 0.40) or off_track."""
    confidence = Decimal(confidence)
    if confidence >= ON_TRACK:
        return "on_track"
    return "at_risk" if confidence >= AT_RISK else "off_track"


def key_result_status(confidence, updated, kind=None, exact=None, expected=None, ended=False):
    """A key result's status: done, no_update, or the worse of its pace status and its confidence status.

    done when its exact progress is 1 (a range only once its cycle has ended: until then staying in the band is
    being on track); no_update while it has had no check-in since it was created (a new key result's confidence is
    a default, not anyone's judgement: calling it at risk would put a whole new quarter at risk on its first day);
    otherwise the worse of pace_status (none for a baseline or an undated cycle) and status(confidence).
    """
    if exact == 1 and (kind != "range" or ended):
        return "done"
    if not updated:
        return NO_UPDATE
    return worst((status(confidence), pace_status(kind, exact, expected)))


def pace_status(kind, exact, expected):
    """How a key result keeps pace with its cycle: on_track, at_risk or off_track; None without an expected
    progress (a cycle without both dates) or a progress (a baseline).

    expected is the cycle's elapsed fraction (elapsed); the shortfall is expected - exact (exact is clamped 0..1):
    at most PACE_ON_TRACK on track, at most PACE_AT_RISK at risk, else off track. A range is on track inside its
    band and off track outside it, whatever the date.
    """
    if expected is None or exact is None:
        return None
    if kind == "range":
        return "on_track" if exact == 1 else "off_track"
    shortfall = expected - exact
    if shortfall <= PACE_ON_TRACK:
        return "on_track"
    return "at_risk" if shortfall <= PACE_AT_RISK else "off_track"


def worst(statuses):
    """The worst of these statuses by STATUSES (None skipped); None when there are none."""
    found = None
    for name in statuses:
        if name is not None and (found is None or RANK[name] < RANK[found]):
            found = name
    return found


def objective_status(key_result_statuses, children_statuses):
    """An objective's status: the worst of its key results' (done only when all are); without key results, the
    worst of its aligned children's; None when there is neither."""
    key_result_statuses = list(key_result_statuses)
    return worst(key_result_statuses if key_result_statuses else children_statuses)


def status_counts(statuses):
    """How many of these statuses there are of each name in STATUSES, zeros included, in that order."""
    counts = dict.fromkeys(STATUSES, 0)
    for name in statuses:
        counts[name] += 1
    return counts


# A close-out's score at or above which an objective is suggested as achieved, and below which missed (between:
# partly achieved); a key result scored ACHIEVED or more counts as achieved in confidence calibration.
ACHIEVED = Decimal("0.70")
PARTLY = Decimal("0.30")
# Confidence calibration: a key result "called green, landed red" had a confidence of at least ON_TRACK at a check-in
# made in the last LATE part of its cycle, and a final score below LANDED_RED.
LANDED_RED = Decimal("0.40")
LATE = Fraction(2, 3)


def suggested_score(progress_figure):
    """The score a close-out suggests for a final progress (two decimals as the API shows it, or None): the
    progress itself, within 0 and 1; None without one (a baseline)."""
    if progress_figure is None:
        return None
    return str(min(max(Decimal(progress_figure), Decimal("0.00")), Decimal("1.00")).quantize(Decimal("0.01")))


def suggested_outcome(score):
    """The outcome a close-out suggests for a score (two-decimal text, or None: missed): achieved from ACHIEVED,
    partly achieved from PARTLY, else missed."""
    value = Decimal(score) if score is not None else Decimal(0)
    return "achieved" if value >= ACHIEVED else "partly_achieved" if value >= PARTLY else "missed"


def cycle_state(starts_on, ends_on, today):
    """upcoming before starts_on, finished after ends_on, current in between (ISO dates or None; a missing
    one is an open end, so an undated cycle is current). today is a datetime.date."""
    day = today.isoformat()
    if starts_on is not None and day < starts_on:
        return "upcoming"
    if ends_on is not None and day > ends_on:
        return "finished"
    return "current"


def elapsed(starts_on, ends_on, today):
    """How much of a cycle has gone by on today (a datetime.date), as an exact Fraction from 0 to 1: (today - start)
    / (end - start) in days, clamped; None unless both dates are set (ISO dates). A one-day cycle (start = end) is
    0 before its day and 1 from it. A key result's expected progress is this fraction."""
    if starts_on is None or ends_on is None:
        return None
    start, end = date.fromisoformat(starts_on), date.fromisoformat(ends_on)
    if today <= start:
        return ONE if today == start == end else ZERO
    if today >= end:
        return ONE
    return Fraction((today - start).days, (end - start).days)


def rolled_up(own, has_key_results, children):
    """An objective's exact progress and where it comes from: with key results of its own, theirs (own); without,
    the mean of its aligned children's (their rolled-up progress, those of its cycle only). The source is
    "key_results", "children", or None when there is no progress to show."""
    if has_key_results:
        return own, "key_results" if own is not None else None
    value = mean(children)
    return value, "children" if value is not None else None


def parse_timestamp(text):
    """An RFC 3339 UTC timestamp as stored (2026-11-22T10:15:30Z), as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def is_stale(last_checkin_at, now):
    """True when the last check-in is more than STALE_AFTER before now (an aware datetime)."""
    return now - parse_timestamp(last_checkin_at) > STALE_AFTER


def checkin_overdue(last_checkin_at, now):
    """True when the last check-in is more than NEEDS_UPDATE_AFTER before now (an aware datetime):
    the weekly reminder lists the key result."""
    return now - parse_timestamp(last_checkin_at) > NEEDS_UPDATE_AFTER


def stale_test(now):
    """is_stale(·, now) for many timestamps: compares the stored text with one cut-off, parsing none.

    Stored timestamps are all of one form (2026-11-22T10:15:30Z), so they sort as
    text; anything else is parsed.
    """
    cutoff = (now - STALE_AFTER).strftime("%Y-%m-%dT%H:%M:%SZ")

    def stale(last_checkin_at):
        if len(last_checkin_at) == len(cutoff) and last_checkin_at.endswith("Z"):
            return last_checkin_at < cutoff
        return is_stale(last_checkin_at, now)

    return stale
