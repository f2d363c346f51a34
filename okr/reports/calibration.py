"""Confidence calibration: how well the confidence people gave at their check-ins foretold how their key results
ended, per owner and per team (docs/api.md#confidence-calibration has the formulas and a worked example).

Flask-free and SQL-free: okr.reports.retrospective gives each key result's final score and the check-ins people
made on it. Every threshold is okr.progress's; sums are exact Decimals and each mean is rounded once, to two
places, half to even (okr.progress.figure).
"""
from datetime import date, timedelta
from decimal import Decimal
from fractions import Fraction

from .. import progress

NO_OWNER, NO_TEAM = "No owner", "No team"


def achieved(final_score):
    """1 when a final score (two-decimal text) is at least okr.progress.ACHIEVED, else 0; None without one."""
    if final_score is None:
        return None
    return 1 if Decimal(final_score) >= progress.ACHIEVED else 0


def late_test(starts_on, ends_on, first_checkin_at, close):
    """Whether a check-in (its created_at) was made in the last third (okr.progress.LATE) of the cycle: of its
    dates when it has both (okr.progress.elapsed on the check-in's day), else of the time from the cycle's first
    check-in (first_checkin_at, a stored timestamp or None) to close (an aware datetime)."""
    if starts_on is not None and ends_on is not None:
        by_day = {}

        def late(created_at):
            day = created_at[:10]
            if day not in by_day:
                by_day[day] = progress.elapsed(starts_on, ends_on, date.fromisoformat(day)) >= progress.LATE
            return by_day[day]
        return late
    if first_checkin_at is None:
        return lambda created_at: False
    first = progress.parse_timestamp(first_checkin_at)
    span = close - first
    if span <= timedelta(0):
        return lambda created_at: True
    # (t - first) / span >= 2/3, in whole microseconds: exact
    top, bottom = progress.LATE.numerator, progress.LATE.denominator
    return lambda created_at: (progress.parse_timestamp(created_at) - first) * bottom >= span * top


class Exact(dict):
    """Confidence texts as Decimals (square=True: their squares), each computed once: there are few distinct ones."""

    def __init__(self, square=False):
        super().__init__()
        self.square = square

    def __missing__(self, text):
        value = Decimal(text)
        found = self[text] = value * value if self.square else value
        return found


class Tally:
    """One owner's or team's figures as key results are added: exact sums of (c - a)^2 and of (c - a) over their
    check-ins, each key result's worked out once from the sums of its c and c^2 (a is 0 or 1)."""

    __slots__ = ("key_results", "checkins", "squares", "differences", "green_red")

    def __init__(self):
        self.key_results, self.checkins = 0, 0
        self.squares, self.differences = Decimal(0), Decimal(0)
        self.green_red = []

    def add(self, count, squares, differences, called):
        """A key result's check-ins: how many, and the sums of their (c - a)^2 and (c - a)."""
        self.key_results += 1
        self.checkins += count
        self.squares += squares
        self.differences += differences
        if called is not None:
            self.green_red.append(called)

    def json(self):
        count = self.checkins
        return {"key_results": self.key_results, "checkins": count,
                "brier": progress.figure(Fraction(self.squares) / count) if count else None,
                "over_confidence": progress.figure(Fraction(self.differences) / count) if count else None,
                "called_green_landed_red": self.green_red}


def called_green(key_result, final_score, confidences, times, late):
    """The key result (whose final score is below okr.progress.LANDED_RED) as called green, landed red, with the
    confidence and time of its last green check-in in the last third; None without one."""
    for confidence, created_at in zip(reversed(confidences), reversed(times)):
        if progress.status(confidence) == "on_track" and late(created_at):
            return {"id": key_result["id"], "name": key_result["name"], "objective_id": key_result["objective_id"],
                    "confidence": confidence, "checked_in_at": created_at, "final_score": final_score}
    return None


def calibrate(entries, late, owner_names, team_names):
    """{"owners": [...], "teams": [...]} from entries: (key result, its team id, final score, confidences,
    times), where a key result has id, name, objective_id and owner_id, and confidences and times are those of
    the check-ins people made on it (not its starting one), oldest first; late is late_test's. A key result
    without a final score (a baseline nobody scored) is left out. Groups in the order of their names, "No
    owner" and "No team" last."""
    owners, teams = {}, {}
    values, squared = Exact(), Exact(square=True)
    for key_result, team_id, final_score, confidences, times in entries:
        if final_score is None:
            continue
        final = Decimal(final_score)
        hit = 1 if final >= progress.ACHIEVED else 0
        count = len(confidences)
        total = sum(map(values.__getitem__, confidences), Decimal(0))
        squares = sum(map(squared.__getitem__, confidences), Decimal(0))
        if hit:  # (c - 1)^2 = c^2 - 2c + 1
            squares, total = squares - 2 * total + count, total - count
        called = called_green(key_result, final_score, confidences, times, late) \
            if final < progress.LANDED_RED else None
        for groups, key in ((owners, key_result["owner_id"]), (teams, team_id)):
            tally = groups.get(key)
            if tally is None:
                tally = groups[key] = Tally()
            tally.add(count, squares, total, called)
    return {"owners": listed(owners, owner_names, "owner_id", NO_OWNER),
            "teams": listed(teams, team_names, "team_id", NO_TEAM)}


def listed(groups, names, field, nobody):
    """The tallies as JSON, each with its id (field) and name, in the order of their names, the one without last."""
    def order(key):
        return (key is None, (names.get(key) or "").casefold(), key or "")
    return [{field: key, "name": names.get(key) or "" if key is not None else nobody, **groups[key].json()}
            for key in sorted(groups, key=order)]
