"""The charts' time series: values and progress as they stood at the end of each day (UTC), by okr.progress's rules.

A day's value is that of its last check-in by the day's end; before a key result's first check-in it did not
exist yet and counts for nothing, as in a report of that moment (okr.reports.alignment.cycle_report_as_of). One
point a day at most, from one read of the check-ins (okr.store.timelines), replayed in time order: a day without
a check-in repeats the day before without recomputing it.
"""
from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal

from .. import progress
from ..store import timelines as stored


def day_of(timestamp):
    """The UTC day of a stored timestamp (2026-11-22T10:15:30Z)."""
    return date.fromisoformat(timestamp[:10])


def days(first, last):
    """The dates from first to last, both included (none when last is before first)."""
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def last_each_day(checkins):
    """{day: value} of (created_at, value) pairs in the order they were made: the last of a day wins."""
    found = {}
    for created_at, value in checkins:
        found[day_of(created_at)] = value
    return found


def daily_values(checkins, first, last):
    """[(day, value)] for every day from first to last: the value as it stood at the day's end, None before the
    first check-in. checkins: (created_at, value) pairs in the order they were made."""
    by_day = sorted(last_each_day(checkins).items())
    shown, value, index = [], None, 0
    for day in days(first, last):
        while index < len(by_day) and by_day[index][0] <= day:
            value = by_day[index][1]
            index += 1
        shown.append((day, value))
    return shown


def key_result_timeline(db, node, starts_on, ends_on):
    """A key result's chart: {"points": [(day, value)] for each day it had a check-in (the day's last), "first"
    and "last" (the days the chart spans), "expected": the line from its start value on the cycle's start to its
    target on its end, as ((day, value), (day, value)), or None (no cycle dates, or no target)}; None without a
    check-in. node is its report node (okr.reports.alignment), with its start value."""
    points = sorted(last_each_day(stored.key_result_checkins(db, node["id"])).items())
    found = span(starts_on, ends_on, [day for day, _ in points])
    if found is None or not points:
        return None
    first, last = found
    aim = aimed_at(node["type"], node["start_value"], node["target_value_min"], node["target_value_max"])
    dated = bool(starts_on and ends_on)
    expected = ((first, node["start_value"]), (last, aim)) if dated and aim is not None else None
    return {"points": points, "first": first, "last": last, "expected": expected}


def aimed_at(kind, start, low, high):
    """Where a key result's expected line ends: its target; for a range the nearer end of it (the start itself
    when inside it); None for a baseline."""
    if kind == "baseline" or low is None:
        return None
    if kind == "range" and high is not None:
        begin = Decimal(start)
        return low if begin < Decimal(low) else high if begin > Decimal(high) else start
    return low


def with_expected(shown, first, last, starts_on, ends_on):
    """A progress chart: {"points": [(day, figure, expected figure)], "first", "last", "expected": the expected
    line's ends ((day, figure), (day, figure)), or None for an undated cycle}; expected by okr.progress.elapsed."""
    def hoped(day):
        return progress.figure(progress.elapsed(starts_on, ends_on, day))

    dated = bool(starts_on and ends_on)
    return {"points": [(day, value, hoped(day) if dated else None) for day, value in shown],
            "first": first, "last": last,
            "expected": ((first, hoped(first)), (last, hoped(last))) if dated else None}


def span(starts_on, ends_on, points_days):
    """The days a chart runs over: a dated cycle's (starts_on to ends_on), else from the first to the last day
    with a check-in; None when there is neither. The points run to the last day or today, whichever is first."""
    if starts_on and ends_on:
        return date.fromisoformat(starts_on), date.fromisoformat(ends_on)
    if points_days:
        return min(points_days), max(points_days)
    return None


class Replay:
    """Key results' progress replayed day by day from their check-ins (tuples of okr.store.timelines.COLUMNS, each
    key result's in the order made)."""

    def __init__(self, checkins):
        self.changes = defaultdict(list)  # day: [(key result, value)], in the order made
        self.meta = {}  # key result: (objective, type, start, low, high)
        for key_result, objective, kind, low, high, value, created_at in checkins:
            if key_result not in self.meta:
                self.meta[key_result] = (objective, kind, value, low, high)  # the first: its start value
            self.changes[day_of(created_at)].append((key_result, value))
        self.by_objective = defaultdict(dict)  # objective: {key result: progress}, of those that exist by now

    def days_with_changes(self):
        return sorted(self.changes)

    def apply(self, day):
        """Brings each key result to how it stood at the end of day; the objectives whose key results changed."""
        touched = set()
        for key_result, value in self.changes.get(day, ()):
            objective, kind, start, low, high = self.meta[key_result]
            exact = progress.key_result_progress(kind, start, value, low, high)
            self.by_objective[objective][key_result] = exact
            touched.add(objective)
        return touched

    def own(self, objective):
        """An objective's own progress as it stands: the mean of its key results' (okr.progress.mean)."""
        return progress.mean(self.by_objective[objective].values())

    def series(self, first, last, measure):
        """[(day, measure(touched objectives) as it stood)] for every day from first to last; measure is called
        once before first (with the changes up to then) and then only on a day with changes."""
        pending = [day for day in self.days_with_changes() if day < first]
        touched = set()
        for day in pending:
            touched |= self.apply(day)
        current = measure(touched)
        shown = []
        for day in days(first, last):
            if day in self.changes:
                current = measure(self.apply(day))
            shown.append((day, current))
        return shown


def cycle_progress(db, cycle, today, team_id=None, assignee_id=None):
    """A cycle's burn-up (see with_expected), a progress figure or None a day from its start (or first
    check-in) to today or its end: the mean over its objectives of each one's own progress, as its report
    figures it today (okr.reports.alignment.cycle_tree: okr.progress.mean_figure). None: nothing to draw."""
    replay = Replay(stored.cycle_checkins(db, cycle["id"], team_id, assignee_id))
    found = span(cycle["starts_on"], cycle["ends_on"], replay.days_with_changes())
    if found is None:
        return None
    first, last = found
    own = {}

    def measure(touched):
        for objective in touched:
            own[objective] = replay.own(objective)
        return progress.mean_figure(own.values())

    return with_expected(replay.series(first, min(last, today), measure), first, last, cycle["starts_on"],
                         cycle["ends_on"])


def objective_progress(db, node, today, starts_on=None, ends_on=None):
    """An objective's progress over time (see with_expected), a figure or None a day, rolled up from its
    aligned objectives of its cycle when it has none of its own key results (okr.progress.rolled_up), as its page
    shows it today; None when there is nothing to draw. node is its report node (okr.reports.alignment)."""
    replay = Replay(stored.objective_checkins(db, node["id"]))
    found = span(starts_on, ends_on, replay.days_with_changes())
    if found is None:
        return None
    first, last = found

    def rolled(objective):
        own = replay.own(objective["id"])
        children = [rolled(child) for child in objective["children"] if child["cycle_id"] == objective["cycle_id"]]
        return progress.rolled_up(own, bool(replay.by_objective[objective["id"]]), children)[0]

    shown = replay.series(first, min(last, today), lambda touched: progress.figure(rolled(node)))
    return with_expected(shown, first, last, starts_on, ends_on)
