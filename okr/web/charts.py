"""Charts drawn on the server: inline SVG on a dated x-axis, each followed by a table of the same points.

Pure functions from points and dates to markup, Flask-free. No script and no style attribute (the pages' CSP
forbids inline styles): every mark has a class the one stylesheet colours, through custom properties that
follow the reader's light or dark setting. Every text from outside is escaped. Pixels need no exactness:
positions are floats; the values shown in words are the stored decimals and the progress figures as they are.
"""
from datetime import date, timedelta
from decimal import ROUND_FLOOR, Decimal
from html import escape

from markupsafe import Markup

from ..rules import quantities
from . import wording

WIDTH, HEIGHT = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 28, 40  # room for the value labels, the dates and the marks' labels
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM


def date_ticks(first, last):
    """The dates to mark on an axis from first to last: every day for a week or less, every 7 days from first for
    up to 6 weeks (never more than 8 marks: a phone shows them all), the first of each month up to about 13
    months, else the first of each quarter's month."""
    length = (last - first).days
    if length <= 7:
        return [first + timedelta(days=n) for n in range(length + 1)]
    if length <= 42:
        return [first + timedelta(days=n) for n in range(0, length + 1, 7)]
    months = 1 if length <= 400 else 3
    ticks, year, month = [], first.year, first.month
    while True:
        day = date(year, month, 1)
        if day > last:
            return ticks
        if day >= first and (month - 1) % months == 0:
            ticks.append(day)
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)


def tick_label(day, first, last):
    """ "1 Oct"; with the year when the axis spans more than one."""
    return wording.day(day.isoformat(), with_year=first.year != last.year)


def value_ticks(low, high):
    """Round values (Decimals) for a value axis: about five, a step of 1, 2 or 5 times a power of ten, from at or
    below low to at or above high."""
    if high == low:
        pad = abs(low) / 10 or Decimal(1)
        low, high = low - pad, high + pad
    raw = (high - low) / 4
    power = Decimal(1).scaleb(raw.adjusted())
    step = next(power * m for m in (1, 2, 5, 10) if power * m >= raw)
    tick = (low / step).to_integral_value(rounding=ROUND_FLOOR) * step
    ticks = [tick]
    while ticks[-1] < high:
        ticks.append(ticks[-1] + step)
    return ticks


def plain(value):
    """A Decimal as a person writes it, digits in groups of three ("60,000", "12.5")."""
    return quantities.shown(f"{value:f}")


class Frame:
    """Where dates and values go: x from first to last, y from low to high (floats or Decimals)."""

    def __init__(self, first, last, low, high):
        self.first, self.days = first, max((last - first).days, 0)
        self.low, self.spread = float(low), float(high) - float(low) or 1.0

    def x(self, day):
        if self.days == 0:
            return LEFT + PLOT_W / 2
        return LEFT + (day - self.first).days / self.days * PLOT_W

    def y(self, value):
        return TOP + PLOT_H - (float(value) - self.low) / self.spread * PLOT_H


def axes(frame, first, last, y_ticks, unit):
    """The grid, the axes, the dates below and the values beside, and the unit above the values (none without)."""
    out = []
    for value, label in y_ticks:
        y = frame.y(value)
        out.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>'
                   f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(label)}</text>')
    for day in date_ticks(first, last):
        x = frame.x(day)
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + PLOT_H}"/>'
                   f'<text class="tick date" x="{x:.1f}" y="{HEIGHT - BOTTOM + 18}" text-anchor="middle">'
                   f'{escape(tick_label(day, first, last))}</text>')
    out.append(f'<line class="axis" x1="{LEFT}" y1="{TOP + PLOT_H}" x2="{WIDTH - RIGHT}" y2="{TOP + PLOT_H}"/>'
               f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + PLOT_H}"/>')
    if unit:
        out.append(f'<text class="unit" x="{LEFT - 6}" y="{TOP - 10}" text-anchor="end">{escape(unit)}</text>')
    return out


def today_mark(frame, first, last, today):
    """A vertical line labelled "today" when today is inside first..last; nothing otherwise."""
    if today is None or not first <= today <= last:
        return []
    x = frame.x(today)
    return [f'<line class="today" x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" y2="{TOP + PLOT_H}"/>'
            f'<text class="today-label" x="{x:.1f}" y="{TOP - 8}" text-anchor="middle">today</text>']


def series(frame, points, shown, radius=3, sourced=frozenset()):
    """The line through the points ((day, value), value None: not drawn) and a dot for each, titled with its date
    and shown value (shown(value): the value in words); a day in sourced (a metric source wrote its value) gets
    a diamond instead, a shape of its own, not only a colour."""
    drawn = [(day, value) for day, value in points if value is not None]
    out = []
    if len(drawn) > 1:
        line = " ".join(f"{frame.x(day):.1f},{frame.y(value):.1f}" for day, value in drawn)
        out.append(f'<polyline class="line" points="{line}"/>')
    for day, value in drawn:
        title = f'<title>{escape(wording.day(day.isoformat()))}: {escape(shown(value))}'
        x, y = frame.x(day), frame.y(value)
        if day in sourced:
            out.append(f'<path class="dot source" d="{diamond(x, y, radius + 3)}">{title}, by the source</title>'
                       "</path>")
        else:
            out.append(f'<circle class="dot" cx="{x:.1f}" cy="{y:.1f}" r="{radius}">{title}</title></circle>')
    return out


def diamond(x, y, half):
    """The path of a diamond centred on x, y, half wide."""
    return f"M{x:.1f} {y - half:.1f}L{x + half:.1f} {y:.1f}L{x:.1f} {y + half:.1f}L{x - half:.1f} {y:.1f}Z"


def marks_legend():
    """What the two marks of a key result's chart mean, under it: a person's check-in, and a source's."""
    circle = '<circle class="dot" cx="6" cy="6" r="3"/>'
    source = f'<path class="dot source" d="{diamond(6, 6, 5)}"/>'
    keys = [f'<svg class="chart-key" viewBox="0 0 12 12" width="12" height="12" aria-hidden="true">{mark}</svg>'
            for mark in (circle, source)]
    return (f'<ul class="legend chart-marks"><li>{keys[0]} a person\'s check-in</li>'
            f"<li>{keys[1]} written by its source</li></ul>")


def svg(label, parts):
    return (f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(label)}">'
            + "".join(parts) + "</svg>")


def table(caption, headings, rows):
    """The chart's points as a table, folded under a summary: rows are lists of cells, the first a date."""
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in headings)
    body = "".join(
        f'<tr><th scope="row"><time datetime="{day.isoformat()}">{escape(wording.day(day.isoformat()))}</time></th>'
        + "".join(f"<td>{escape(cell)}</td>" for cell in cells) + "</tr>"
        for day, *cells in rows)
    return (f'<details class="chart-table"><summary>{escape(caption)} as a table</summary>'
            f'<div class="scroll"><table><caption>{escape(caption)}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div></details>")


def value_chart(points, first, last, kind, target_min=None, target_max=None, expected=None, today=None, unit=None,
                position=None, sourced=frozenset()):
    """A key result's values over time.

    points: [(day, value)], its check-ins (a day's last), values decimal strings; first and last: the days the
    axis spans (the cycle's, or the first and last check-in's without cycle dates). kind is its type: a range's
    targets are a band, the others' target a line (a baseline has none). expected: ((day, value), (day, value)),
    the line from its start value at the cycle's start to its target at the cycle's end, or None. today is marked
    when inside first..last; unit (optional) labels the value axis, and the values in words carry it where it
    goes (position, as the key result's unit_position). sourced: the days whose value a metric source wrote, drawn
    as diamonds, with a legend and a column of the table saying so.
    """
    first = min([first, *(day for day, _ in points)])
    last = max([last, *(day for day, _ in points)])
    targets = [Decimal(t) for t in (target_min, target_max) if t is not None and kind != "baseline"]
    values = [Decimal(value) for _, value in points] + targets
    if expected is not None:
        values += [Decimal(value) for _, value in expected]
    ticks = value_ticks(min(values), max(values))
    frame = Frame(first, last, ticks[0], ticks[-1])
    unit = unit or ""
    def shown(value):
        return quantities.shown(value, unit or None, position)

    parts = axes(frame, first, last, [(tick, plain(tick)) for tick in ticks], unit)
    if kind == "range" and len(targets) == 2:
        top, bottom = frame.y(targets[1]), frame.y(targets[0])
        parts.append(f'<rect class="band" x="{LEFT}" y="{top:.1f}" width="{PLOT_W}"'
                     f' height="{max(bottom - top, 1):.1f}"/>'
                     f'<text class="target-label" x="{WIDTH - RIGHT - 4}" y="{top - 4:.1f}" text-anchor="end">'
                     f'target {escape(shown(str(targets[0])))} to {escape(shown(str(targets[1])))}</text>')
    elif targets:
        y = frame.y(targets[0])
        parts.append(f'<line class="target" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>'
                     f'<text class="target-label" x="{WIDTH - RIGHT - 4}" y="{y - 4:.1f}" text-anchor="end">'
                     f'target {escape(shown(str(targets[0])))}</text>')
    if expected is not None:
        parts.append(expected_line(frame, expected))
    parts += today_mark(frame, first, last, today)
    sourced = {day for day, _ in points if day in sourced}
    parts += series(frame, points, lambda value: shown(value), sourced=sourced)
    said = f"{len(points)} check-in day{'s' if len(points) != 1 else ''}"
    if points:
        said += f", from {shown(points[0][1])} on {wording.day(points[0][0].isoformat())}" \
                f" to {shown(points[-1][1])} on {wording.day(points[-1][0].isoformat())}"
    if sourced:
        said += f"; {len(sourced)} written by its source (diamonds)"
    if targets:
        said += "; target " + " to ".join(shown(str(t)) for t in targets)
    headings = ["Date", f"Value ({unit})" if unit else "Value"] + (["Written by"] if sourced else [])
    rows = [[day, plain(Decimal(value))] + (["its source" if day in sourced else "a person"] if sourced else [])
            for day, value in points]
    return Markup(svg(f"Value over time: {said}", parts) + (marks_legend() if sourced else "")
                  + table("The values", headings, rows))


def expected_line(frame, expected):
    (start_day, start_value), (end_day, end_value) = expected
    x1, y1, x2, y2 = frame.x(start_day), frame.y(start_value), frame.x(end_day), frame.y(end_value)
    return (f'<line class="expected" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}"/>'
            f'<text class="expected-label" x="{x2 - 4:.1f}" y="{y2 + 14:.1f}" text-anchor="end">expected</text>')


def progress_chart(points, first, last, expected=None, today=None, what="Progress"):
    """Progress over time from 0 to 100 %: points [(day, figure such as "0.43" or None, expected figure or None)],
    one a day; expected: ((day, figure), (day, figure)), the expected line's ends (0 at the cycle's start, 100 % at
    its end), or None (an undated cycle)."""
    frame = Frame(first, last, 0, 1)
    ticks = [(Decimal(n) / 4, f"{25 * n}%") for n in range(5)]
    parts = axes(frame, first, last, ticks, None)
    if expected is not None:
        parts.append(expected_line(frame, expected))
    parts += today_mark(frame, first, last, today)
    parts += series(frame, [(day, value) for day, value, _ in points], wording.percent, radius=2)
    drawn = [(day, value) for day, value, _ in points if value is not None]
    said = f"{what} over time"
    if drawn:
        said += f": {wording.percent(drawn[-1][1])} on {wording.day(drawn[-1][0].isoformat())}"
    if expected is not None:
        said += (f"; expected {wording.percent(expected[0][1])} on {wording.day(expected[0][0].isoformat())}"
                 f" to {wording.percent(expected[1][1])} on {wording.day(expected[1][0].isoformat())}")
    headings = ["Date", "Progress"] + (["Expected"] if expected is not None else [])
    rows = [[day, wording.percent(value) or "none yet"] + ([wording.percent(hoped)] if expected is not None else [])
            for day, value, hoped in points]
    return Markup(svg(said, parts) + table(f"{what} each day", headings, rows))


def status_bar(counts, words):
    """The counts of key results by status as one bar of coloured parts and a legend: counts is [(status,
    count)] in order; words names each status."""
    total = sum(count for _, count in counts) or 1
    x, rects, legend = 0.0, [], []
    for status, count in counts:
        if not count:
            continue
        width = count / total * 100
        name = words.get(status, status.replace("_", " "))
        rects.append(f'<rect class="part {escape(status)}" x="{x:.2f}" y="0" width="{width:.2f}" height="10">'
                     f'<title>{escape(name)}: {count}</title></rect>')
        legend.append(f'<li class="{escape(status)}"><span class="swatch"></span>{escape(name)} '
                      f'<span class="count">{count}</span></li>')
        x += width
    if not legend:
        return Markup("")
    return Markup('<div class="status-counts"><svg class="status-bar" viewBox="0 0 100 10" '
                  'preserveAspectRatio="none" aria-hidden="true">' + "".join(rects) + '</svg><ul class="legend">'
                  + "".join(legend) + "</ul></div>")
