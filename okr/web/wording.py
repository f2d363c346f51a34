"""How the pages put figures into words and pictures: numbers, key-result targets, times, SVG lines.

Presentation only: every figure shown comes from okr.progress and okr.reports.alignment.
"""
from datetime import date
from decimal import Decimal
from functools import lru_cache

from .. import progress
from ..rules import percentages
from ..rules.quantities import shown

STATUS_WORDS = {"on_track": "on track", "at_risk": "at risk", "off_track": "off track",
                "no_update": "no update yet", "done": "done"}
STATE_WORDS = {"current": "Current", "upcoming": "Upcoming", "finished": "Finished"}
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def number(decimal_text):
    """A stored decimal as a person writes it: "500.00" is "500", "12.50" is "12.5".

    Stored decimals are canonical plain notation, so trimming the text is enough.
    """
    if decimal_text is None:
        return ""
    text = decimal_text
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "", "-") else text


# "0.80" as "80%": the one rule the weekly emails and the chat digest share.
percent = percentages.percent


def target_words(kind, start, current, low, high, unit=None, position=None):
    """Start, current and target in words, with the unit: "$42,000 of $60,000", "stay between 1 and 4 ms: now
    3 ms", "done"."""
    def said(value):
        return shown(value, unit, position)
    if kind == "positive":
        return f"{said(current)} of {said(low)} (from {said(start)})"
    if kind == "negative":
        return f"from {said(start)} down to {said(low)}: now {said(current)}"
    if kind == "range":
        return f"stay between {said(low)} and {said(high)}: now {said(current)}"
    if kind == "milestone":
        return "done" if Decimal(current) >= 1 else "not yet"
    return f"now {said(current)} (no target)"


def day(iso_date, with_year=True):
    """ "2026-10-01" as "1 Oct 2026" (or "1 Oct"); text that is not a date stays as it is."""
    try:
        when = date.fromisoformat(iso_date)
    except (TypeError, ValueError):
        return iso_date or ""
    return f"{when.day} {MONTHS[when.month - 1]}" + (f" {when.year}" if with_year else "")


def date_range(starts_on, ends_on):
    """A cycle's dates in words: "1 Oct – 31 Dec 2026", "from 1 Oct 2026", "until 31 Dec 2026", or ""."""
    if starts_on and ends_on:
        same_year = starts_on[:4] == ends_on[:4] and len(starts_on) == len(ends_on) == 10
        return f"{day(starts_on, with_year=not same_year)} – {day(ends_on)}"
    if starts_on:
        return f"from {day(starts_on)}"
    if ends_on:
        return f"until {day(ends_on)}"
    return ""


def first_lines(text, limit=200, lines=3):
    """The start of a description: its first non-empty lines, at most limit characters, with an ellipsis when
    more follows; "" for none."""
    kept = [line.strip() for line in (text or "").splitlines() if line.strip()]
    shown = " ".join(kept[:lines])
    if len(shown) > limit:
        return shown[:limit].rstrip() + "…"
    return shown + ("…" if len(kept) > lines else "")


def time_ago(timestamp, now):
    """A stored timestamp in words relative to now: "just now", "5 minutes ago", "3 days ago"."""
    seconds = int((now - progress.parse_timestamp(timestamp)).total_seconds())
    if seconds < 0:
        return "just now"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return "just now"


def sparkline(values, width=60, height=16):
    """The points of a sparkline (an SVG polyline) of decimal strings; "" for fewer than two.

    Pixels need no exactness: floats are enough here.
    """
    if len(values) < 2:
        return ""
    numbers = [float(v) for v in values]
    low, high = min(numbers), max(numbers)
    points = spark_points(len(numbers), width)
    if low == high:
        return points.format(*[height // 2] * len(numbers))
    scale, bottom = (height - 2) / (high - low), height - 1
    return points.format(*[round(bottom - (n - low) * scale) for n in numbers])


@lru_cache(maxsize=64)
def spark_points(count, width):
    """ "0,{} 5,{} …": count points spread over width, their ys to fill in (a cycle page draws 4,000)."""
    step = width / (count - 1)
    return " ".join(f"{i * step:.0f},{{}}" for i in range(count))


def time_gone(starts_on, ends_on, today, elapsed):
    """How much of a dated cycle has gone by on today, in words: "Week 7 of 13 · 46% of the time gone" (elapsed:
    okr.progress.elapsed's figure, as a report gives it); "" for a cycle without both dates."""
    if not (starts_on and ends_on) or elapsed is None:
        return ""
    start, end = date.fromisoformat(starts_on), date.fromisoformat(ends_on)
    weeks = (end - start).days // 7 + 1
    week = min(max((today - start).days // 7 + 1, 1), weeks)
    said = f"{percent(elapsed)} of the time gone"
    if today < start:
        return f"Starts in {(start - today).days} day{'s' if (start - today).days != 1 else ''} · {said}"
    if today > end:
        return f"Ended {day(ends_on)} · {said}"
    return f"Week {week} of {weeks} · {said}"


OUTCOME_WORDS = {"achieved": "Achieved", "partly_achieved": "Partly achieved", "missed": "Missed",
                 "dropped": "Dropped", "carried_over": "Carried over"}


def closed_note(cycle):
    """What a page says of a closed cycle (a row with name, closed_at and closed_by_name): who closed it, when,
    and that nothing in it changes until an admin reopens it."""
    who = cycle["closed_by_name"] or "someone without a name (an API key, or while sign-in was off)"
    name = cycle["name"] or "Unnamed cycle"
    return (f"{name} is closed: {who} closed it on {day(cycle['closed_at'][:10])}. Nothing in it can be "
            "changed, checked in or commented on until an admin reopens it.")


# A metric source's kinds (okr.sources.reading.KINDS), as the connection pages name them.
SOURCE_KIND_WORDS = {"http_json": "HTTP JSON", "csv": "CSV", "postgresql": "PostgreSQL", "sqlite": "SQLite file",
                     "prometheus": "Prometheus"}
# How often a source may run (15 minutes to a day), as its form offers it.
EVERY_WORDS = {15: "Every 15 minutes", 30: "Every 30 minutes", 60: "Every hour", 120: "Every 2 hours",
               360: "Every 6 hours", 720: "Every 12 hours", 1440: "Once a day"}


def every(minutes):
    """A source's schedule in words: 60 is "Every hour"; one the API set otherwise, "Every 45 minutes"."""
    return EVERY_WORDS.get(minutes) or f"Every {minutes} minutes"


def clock_time(timestamp):
    """A stored timestamp as a day and a UTC time: "28 Nov 2026, 10:05 UTC"."""
    return f"{day(timestamp[:10])}, {timestamp[11:16]} UTC"


def time_until(timestamp, now):
    """A stored timestamp to come, in words relative to now: "in 5 minutes", "in 2 hours"; "now" once due."""
    seconds = int((progress.parse_timestamp(timestamp) - now).total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = seconds // size
            return f"in {count} {unit}{'s' if count != 1 else ''}"
    return "now"


def source_trouble(source):
    """What a key result's page says to everyone of a source that fails (its reason, never its query): "Source
    failing since 28 Nov 2026, 10:05 UTC: the reason"; None when it is active."""
    if source["state"] == "stopped":
        return f"Source stopped after {source['failures']} failures: {source['last_error']}"
    if source["state"] == "failing":
        return f"Source failing since {clock_time(source['failing_since'])}: {source['last_error']}"
    return None


def source_state(source, now):
    """A source's state in words (a row of okr.store.sources): "Active, last read 5 minutes ago, next in 55
    minutes", "Failing since 28 Nov 2026, 10:05 UTC: the reason", "Stopped after 20 failures: the reason"."""
    trouble = source_trouble(source)
    if trouble:
        said = trouble.removeprefix("Source ")
        return said[:1].upper() + said[1:]
    read = f"last read {time_ago(source['last_run_at'], now)}" if source["last_run_at"] else "not read yet"
    return f"Active, {read}, next {time_until(source['next_run_at'], now)}"
