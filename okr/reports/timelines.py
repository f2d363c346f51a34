"""The charts' time series: values and progress as they stood at the end of each day (UTC), by okr.progress's rules.

A day's value is that of its last check-in by the day's end; before a key result's first check-in it did not
exist yet and counts for nothing, as in a report of that moment (okr.reports.alignment.cycle_report_as_of). One
point a day at most, from one read of the check-ins (okr.store.timelines), replayed in time order: a day without
a check-in repeats the day before without recomputing it.
"""
import threading
from collections import OrderedDict, defaultdict
from datetime import date, timedelta
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from itertools import groupby
from operator import itemgetter

from .. import progress
from ..store import timelines as stored

# A cycle with more objectives than this has one burn-up point a week (and today's), not one a day: each point
# is the mean over all of them, which a 1,000-objective cycle's page would otherwise take most of its time on.
DAILY_UP_TO = 250
KEEP = 32  # burn-ups kept per process, the least recently shown dropped first
KEPT, KEPT_LOCK = OrderedDict(), threading.Lock()


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
    target on its end, as ((day, value), (day, value)), or None (no cycle dates, or no target), "sourced": the
    days whose last check-in a metric source wrote}; None without a check-in. node is its report node
    (okr.reports.alignment), with its start value."""
    made = stored.key_result_checkins(db, node["id"])
    points = sorted(last_each_day((at, value) for at, value, _ in made).items())
    sourced = {day for day, by_source in last_each_day((at, by_source) for at, _, by_source in made).items()
               if by_source}
    found = span(starts_on, ends_on, [day for day, _ in points])
    if found is None or not points:
        return None
    first, last = found
    aim = aimed_at(node["type"], node["start_value"], node["target_value_min"], node["target_value_max"])
    dated = bool(starts_on and ends_on)
    expected = ((first, node["start_value"]), (last, aim)) if dated and aim is not None else None
    return {"points": points, "first": first, "last": last, "expected": expected, "sourced": sourced}


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
    """Key results' progress replayed day by day from their check-ins: key_results and checkins as
    okr.store.timelines reads them, each key result's check-ins in the order made."""

    def __init__(self, key_results, checkins):
        last, starts = {}, {}  # (key result, day as text): the day's last value; key result: its first value
        for key_result, value, created_at in checkins:
            if key_result not in starts:
                starts[key_result] = value
            last[key_result, created_at[:10]] = value
        self.changes = defaultdict(list)  # day: [(key result, value)]
        for (key_result, day), value in last.items():
            self.changes[day].append((key_result, value))
        self.changes = {date.fromisoformat(day): changed for day, changed in self.changes.items()}
        # key result: (objective, type, start, low, high), of those with a check-in; and its weight
        self.meta = {row[0]: (row[1], row[2], starts[row[0]], row[3], row[4]) for row in key_results
                     if row[0] in starts}
        self.weights = {row[0]: row[5] for row in key_results}
        self.pending = {}  # key result: its value since the last point
        self.values = {}  # key result: its value at the last point
        self.by_objective = defaultdict(dict)  # objective: {key result: progress}, of those that exist by now
        self.known = {}  # the progress of each (type, start, value, low, high) met: many repeat (0, 1, a range's)

    def days_with_changes(self):
        return sorted(self.changes)

    def apply(self, day):
        """Takes in the values of day's check-ins (each key result's last that day)."""
        for key_result, value in self.changes.get(day, ()):
            self.pending[key_result] = value

    def settle(self):
        """Brings each key result's progress to its latest value: the objectives whose key results' changed."""
        touched = set()
        for key_result, value in self.pending.items():
            if self.values.get(key_result) == value:
                continue  # the same value, the same progress
            self.values[key_result] = value
            objective, kind, start, low, high = self.meta[key_result]
            figures = (kind, start, value, low, high)
            exact = self.known.get(figures)
            if exact is None and figures not in self.known:
                exact = self.known[figures] = progress.key_result_progress(*figures)
            self.by_objective[objective][key_result] = exact
            touched.add(objective)
        self.pending = {}
        return touched

    def own(self, objective):
        """An objective's own progress as it stands: the weighted mean of its key results' (okr.progress.mean)."""
        exact = self.by_objective[objective]
        return progress.mean(exact.values(), [self.weights[key_result] for key_result in exact])

    def series(self, first, last, measure, step=1):
        """[(day, measure(touched objectives) as it stood)] from first to last, a point every step days and on
        last; measure is called once before first (with the changes up to then) and then only at a point after a
        change."""
        for day in self.days_with_changes():
            if day < first:
                self.apply(day)
        current = measure(self.settle())
        shown, spanned = [], days(first, last)
        for index, day in enumerate(spanned):
            self.apply(day)
            if index % step == 0 or index == len(spanned) - 1:
                touched = self.settle()
                if touched:
                    current = measure(touched)
                shown.append((day, current))
        return shown


def cycle_progress(db, cycle, today, team_id=None, assignee_id=None, streamed=False, fingerprint=None):
    """cycle_progress_now (streamed: cycle_progress_streamed, for a cycle too big to replay in memory), kept in
    this process until anything it depends on changes (okr.store.timelines.cycle_fingerprint) or the day does: a
    wallboard reloads a big cycle's page every few minutes. fingerprint: the cycle's, when the caller has it."""
    key = (cycle["id"], cycle["starts_on"], cycle["ends_on"], today, team_id, assignee_id, streamed,
           fingerprint or stored.cycle_fingerprint(db, cycle["id"]))
    with KEPT_LOCK:
        if key in KEPT:
            KEPT.move_to_end(key)
            return KEPT[key]
    found = (cycle_progress_streamed if streamed else cycle_progress_now)(db, cycle, today, team_id, assignee_id)
    with KEPT_LOCK:
        KEPT[key] = found
        while len(KEPT) > KEEP:
            KEPT.popitem(last=False)
    return found


def cycle_progress_now(db, cycle, today, team_id=None, assignee_id=None):
    """A cycle's burn-up (see with_expected), a progress figure or None a day from its start (or first
    check-in) to today or its end: the mean over its objectives of each one's own progress, as its report
    figures it today (okr.reports.alignment.cycle_tree: okr.progress.mean_figure). None: nothing to draw."""
    replay = Replay(*stored.cycle_checkins(db, cycle["id"], team_id, assignee_id))
    found = span(cycle["starts_on"], cycle["ends_on"], replay.days_with_changes())
    if found is None:
        return None
    first, last = found
    own, figured = {}, []

    def measure(touched):
        changed = False
        for objective in touched:
            value = replay.own(objective)
            changed = changed or objective not in own or own[objective] != value
            own[objective] = value
        if changed or not figured:
            figured[:] = [progress.mean_figure(own.values())]
        return figured[0]

    objectives = len({objective for objective, *_ in replay.meta.values()})
    step = 1 if objectives <= DAILY_UP_TO else 7
    return with_expected(replay.series(first, min(last, today), measure, step), first, last, cycle["starts_on"],
                         cycle["ends_on"])


def objective_progress(db, node, today, starts_on=None, ends_on=None):
    """An objective's progress over time (see with_expected), a figure or None a day, rolled up from its
    aligned objectives of its cycle when it has none of its own key results (okr.progress.rolled_up), as its page
    shows it today; None when there is nothing to draw. node is its report node (okr.reports.alignment)."""
    replay = Replay(*stored.objective_checkins(db, node["id"]))
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


# A streamed burn-up sums its objectives' progress this many at a time, point by point (progress.bound_sum).
BATCH = 1024


def cycle_progress_streamed(db, cycle, today, team_id=None, assignee_id=None, step=7):
    """cycle_progress_now's burn-up of a dated cycle, a point every step days (and today's), read objective by
    objective as the check-ins stream (okr.store.timelines.cycle_checkins_by_objective): the memory of one
    objective's check-ins and of a few sums a point, not of the cycle's check-ins (which a 100,000-objective cycle
    has millions of). An undated cycle's runs from its first check-in's day to its last's (span); None: nothing
    to draw."""
    found = span(cycle["starts_on"], cycle["ends_on"], [day_of(stamp) for stamp in stored.cycle_checkin_span(
        db, cycle["id"], team_id, assignee_id) if stamp] if not (cycle["starts_on"] and cycle["ends_on"]) else [])
    if found is None:
        return None
    first, last = found
    spanned = days(first, min(last, today))
    points = [day for index, day in enumerate(spanned) if index % step == 0 or index == len(spanned) - 1]
    figures = points_figures(db, cycle["id"], [day.isoformat() for day in points], team_id, assignee_id)
    return with_expected(list(zip(points, figures)), first, last, cycle["starts_on"], cycle["ends_on"])


def points_figures(db, cycle_id, points, team_id=None, assignee_id=None, exact=()):
    """The cycle's progress figure at the end of each of these days (ISO dates), as Replay figures it: each
    objective's own progress then (the mean of its key results' that existed by then), their mean
    (okr.progress.mean_figure, bounded a batch at a time); exact: the points to sum exactly (a tie between the
    bounds), read again."""
    lows, highs = [Decimal(0)] * len(points), [Decimal(0)] * len(points)
    counts, batches = [0] * len(points), [[] for _ in points]
    kept = {point: [] for point in exact}

    def flush(number):
        batch = batches[number]
        lows[number] = progress.bound_sum(batch, ROUND_FLOOR, lows[number])
        highs[number] = progress.bound_sum(batch, ROUND_CEILING, highs[number])
        counts[number] += len(batch)
        batches[number] = []

    rows = stored.cycle_checkins_by_objective(db, cycle_id, team_id, assignee_id)
    for _, objective_rows in groupby(rows, key=itemgetter(0)):
        owns, weights = [[] for _ in points], [[] for _ in points]
        for _, key_result_rows in groupby(objective_rows, key=itemgetter(1)):
            last_of_day = {}  # day: its last check-in's value, as Replay keeps them
            for _, _, kind, low, high, weight, value, created_at in key_result_rows:
                if not last_of_day:
                    start = value
                last_of_day[created_at[:10]] = value
            changes, index, value, known = sorted(last_of_day.items()), 0, None, {}
            for number, point in enumerate(points):
                while index < len(changes) and changes[index][0] <= point:
                    value = changes[index][1]
                    index += 1
                if value is not None:
                    if value not in known:
                        known[value] = progress.key_result_progress(kind, start, value, low, high)
                    owns[number].append(known[value])
                    weights[number].append(weight)
        for number, point in enumerate(points):
            if not owns[number]:
                continue  # no key result of it existed by then
            own = progress.mean(owns[number], weights[number])
            if own is None:
                continue
            if point in kept:
                kept[point].append(own)
            batches[number].append(own)
            if len(batches[number]) >= BATCH:
                flush(number)
    figures = []
    for number, point in enumerate(points):
        flush(number)
        if point in kept:
            figures.append(progress.mean_figure(kept[point]))
        elif not counts[number]:
            figures.append(None)
        else:
            figures.append(progress.figure_between(lows[number], highs[number], counts[number]))
    ties = [point for point, found in zip(points, figures) if found is None and point not in kept and
            counts[points.index(point)]]
    if ties:
        again = points_figures(db, cycle_id, points, team_id, assignee_id, exact=ties)
        figures = [again[number] if point in ties else found for number, (point, found) in enumerate(zip(points, figures))]
    return figures
