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


class Tally:
    """One owner's or team's figures as key results are added."""

    __slots__ = ("key_results", "checkins", "squares", "differences", "green_red")

    def __init__(self):
        self.key_results, self.checkins = 0, 0
        self.squares, self.differences = Decimal(0), Decimal(0)
        self.green_red = []

    def add(self, key_result, final_score, made, late):
        """A key result (id, name, objective_id), its final score and the (confidence, created_at) of the
        check-ins people made on it."""
        hit = achieved(final_score)
        self.key_results += 1
        called = None
        for confidence, created_at in made:
            gap = Decimal(confidence) - hit
            self.squares += gap * gap
            self.differences += gap
            self.checkins += 1
            if progress.status(confidence) == "on_track" and late(created_at):
                called = (confidence, created_at)
        if called is not None and Decimal(final_score) < progress.LANDED_RED:
            self.green_red.append({"id": key_result["id"], "name": key_result["name"],
                                   "objective_id": key_result["objective_id"], "confidence": called[0],
                                   "checked_in_at": called[1], "final_score": final_score})

    def json(self):
        count = self.checkins
        return {"key_results": self.key_results, "checkins": count,
                "brier": progress.figure(Fraction(self.squares) / count) if count else None,
                "over_confidence": progress.figure(Fraction(self.differences) / count) if count else None,
                "called_green_landed_red": self.green_red}


def calibrate(entries, late, owner_names, team_names):
    """{"owners": [...], "teams": [...]} from entries: (key result, its team id, final score, made), where a key
    result has id, name, objective_id and owner_id, made is the (confidence, created_at) of the check-ins people
    made on it (not its starting one), and late is late_test's. A key result without a final score (a baseline
    nobody scored) is left out. Groups in the order of their names, "No owner" and "No team" last."""
    owners, teams = {}, {}
    for key_result, team_id, final_score, made in entries:
        if final_score is None:
            continue
        for groups, key in ((owners, key_result["owner_id"]), (teams, team_id)):
            tally = groups.get(key)
            if tally is None:
                tally = groups[key] = Tally()
            tally.add(key_result, final_score, made, late)
    return {"owners": listed(owners, owner_names, "owner_id", NO_OWNER),
            "teams": listed(teams, team_names, "team_id", NO_TEAM)}


def listed(groups, names, field, nobody):
    """The tallies as JSON, each with its id (field) and name, in the order of their names, the one without last."""
    def order(key):
        return (key is None, (names.get(key) or "").casefold(), key or "")
    return [{field: key, "name": names.get(key) or "" if key is not None else nobody, **groups[key].json()}
            for key in sorted(groups, key=order)]
