"""A cycle's retrospective, for the company or one team: its objectives' scores, outcomes and reflections, the
biggest movers, the key results that went from on track to off track, what was carried over, and the confidence
calibration (okr.reports.calibration), as of the cycle's close (or now, while it is open).

From a fixed number of queries (okr.store.reports.retrospective_rows: no query per row), every figure from
okr.progress; neither SQL nor Flask. docs/dashboard.md#the-retrospective says what each part means.
"""
from datetime import timezone
from decimal import Decimal

from .. import progress
from ..records import cycle_details_json
from ..store import reports as report_rows
from ..store import visibility
from . import alignment, calibration

MOVERS = 5
OUTCOMES = ("achieved", "partly_achieved", "missed", "dropped", "carried_over")


def moment_of(cycle, now):
    """The moment a retrospective is as of: the cycle's close, else now (an aware datetime), and as stored text."""
    if cycle["closed_at"] is not None:
        return progress.parse_timestamp(cycle["closed_at"]), cycle["closed_at"]
    return now, now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Closing:
    """A cycle's kept objectives and key results as they stood at its close, each key result with its history:
    its check-ins' confidences, values and times (lists, oldest first), its start and close (the exact progress
    of its first and last value) and its final score."""

    def __init__(self, db, cycle, now, team_id=None, confidences=True):
        """confidences=False leaves each key result's confidences out (None) but its last one (confidence): the
        calibration needs them all, a retrospective only those it walks back (with_confidences)."""
        self.db, self.cycle = db, cycle
        self.moment, self.stamp = moment_of(cycle, now)
        self.objectives, self.key_results, self.copies = report_rows.retrospective_rows(
            db, cycle["id"], self.stamp, team_id, confidences)
        self.owner_names, self.team_names = report_rows.names_in_cycle(db, cycle["id"])
        self.team_of = {row["id"]: row["team_id"] for row in self.objectives}
        self.by_objective, self.team_id = {}, team_id
        for row in self.key_results:
            history = row["history"]
            if history and confidences:
                parts = history.split(" ")
                row["confidences"], row["values"], row["times"] = parts[0::3], parts[1::3], parts[2::3]
                row["confidence"] = row["confidences"][-1]
            elif history:
                parts = history.split(" ")
                row["confidences"], row["values"], row["times"] = None, parts[0::2], parts[1::2]
                row["confidence"] = row["confidence_then"]
            else:  # a row written behind the API's back: its present values
                row["confidences"], row["values"], row["times"] = (
                    [row["confidence"]], [row["current_value"]], [row["modified_at"]])
            start = row["start_value"] = row["values"][0]
            row["current_value"] = row["values"][-1]
            row["last_checkin_at"], row["updated"] = row["times"][-1], len(row["values"]) > 1
            kind, low, high = row["type"], row["target_value_min"], row["target_value_max"]
            if row["progress_from"] == "initiatives":  # no history of them is kept: nothing done at the start
                row["exact_at_start"] = progress.ZERO
                exact = row["exact_at_close"] = alignment.key_result_exact(row)
            else:
                row["exact_at_start"] = progress.key_result_progress(kind, start, start, low, high)
                exact = row["exact_at_close"] = progress.key_result_progress(kind, start, row["current_value"], low,
                                                                             high)
            row["progress_at_close"] = progress.figure(exact)
            row["final_score"] = row["score"] if row["score"] is not None else row["progress_at_close"]
            self.by_objective.setdefault(row["objective_id"], []).append(row)
        # Every figure counts them all (at_close); what is listed is what the viewer may see.
        self.every_objective, self.every_key_result = self.objectives, self.key_results
        hidden = visibility.hidden_around(db, cycle["id"]) | visibility.hidden_of(
            db, [row["id"] for row in self.copies])
        self.hidden_count = sum(row["id"] in hidden for row in self.objectives)
        if hidden:
            self.objectives = [visibility.shown_among(row, hidden) for row in self.objectives
                               if row["id"] not in hidden]
            self.key_results = [row for row in self.key_results if row["objective_id"] not in hidden]
            self.copies = [row for row in self.copies if row["id"] not in hidden]

    def with_confidences(self, rows):
        """These key rows given their confidences, when they were left out: one read for them all."""
        wanted = [row for row in rows if row["confidences"] is None]
        if wanted:
            found = report_rows.checkin_confidences(self.db, (row["seq"] for row in wanted), self.stamp)
            for row in wanted:
                row["confidences"] = found[row["seq"]].split(" ")
        return rows

    def first_checkin_at(self):
        """When the cycle's first check-in was made (None without any): from the rows when they are the whole
        cycle's, else read."""
        if self.team_id is not None:
            return report_rows.first_checkin_at(self.db, self.cycle["id"])
        return min((row["times"][0] for row in self.key_results), default=None)

    def calibration(self):
        dated = self.cycle["starts_on"] is not None and self.cycle["ends_on"] is not None
        late = calibration.late_test(self.cycle["starts_on"], self.cycle["ends_on"],
                                     None if dated else self.first_checkin_at(), self.moment)
        entries = ((row, self.team_of.get(row["objective_id"]), row["final_score"], row["confidences"][1:],
                    row["times"][1:]) for row in self.key_results)
        return calibration.calibrate(entries, late, self.owner_names, self.team_names)


def heading(cycle, closing, team):
    return {"cycle": cycle_details_json(cycle, closing.moment.date()), "team": team,
            "as_of": closing.stamp, "closed": cycle["closed_at"] is not None}


def cycle_calibration(db, cycle, now, team=None):
    """GET /v1/cycles/<id>/calibration: the calibration per owner and per team, of one team's objectives when
    team (its id and name) is given."""
    closing = Closing(db, cycle, now, team and team["id"])
    return {**heading(cycle, closing, team), "achieved_from": str(progress.ACHIEVED), **closing.calibration()}


def retrospective(db, cycle, now, team=None):
    """GET /v1/cycles/<id>/retrospective: what the retrospective page shows but the calibration, of one team's
    objectives when team (its id and name) is given."""
    return retrospective_of(Closing(db, cycle, now, team and team["id"], confidences=False), team)


def retrospective_page(db, cycle, now, team=None):
    """The retrospective page's figures: the retrospective, with its calibration (one read for both)."""
    closing = Closing(db, cycle, now, team and team["id"])
    return {**retrospective_of(closing, team), "calibration": closing.calibration()}


def retrospective_of(closing, team):
    cycle = closing.cycle
    nodes, cycle_progress = at_close(closing)
    return {
        **heading(cycle, closing, team),
        "progress": cycle_progress,
        "objectives_count": len(closing.objectives),
        "key_results_count": len(closing.key_results),
        "hidden_objectives_count": closing.hidden_count,
        "outcome_counts": outcome_counts(row["outcome"] for row in closing.objectives),
        "objectives": [objective_entry(row, nodes[row["id"]], closing) for row in closing.objectives],
        "movers": movers(closing.key_results),
        "went_off_track": went_off_track(closing),
        "carried_over": {
            "objectives": [{"id": row["id"], "name": row["name"]} for row in closing.objectives
                           if row["outcome"] == "carried_over"],
            "copies": closing.copies,
        },
    }


def at_close(closing):
    """Each key result's status at the close (status_at_close, as its report showed it then), each objective's
    progress and status then ({id: node}, by okr.reports.alignment's roll-up, as the report rolls them up), and
    the cycle's progress: the report's figures at the close, without the rest of its nodes."""
    cycle, today = closing.cycle, closing.moment.date()
    expected = progress.elapsed(cycle["starts_on"], cycle["ends_on"], today)
    ended = progress.cycle_state(cycle["starts_on"], cycle["ends_on"], today) == "finished"
    nodes = {row["id"]: {"id": row["id"], "cycle_id": row["cycle_id"], "key_results": [], "children": []}
             for row in closing.every_objective}
    exact_of = {row["id"]: [] for row in closing.every_objective}
    weights_of = {row["id"]: [] for row in closing.every_objective}
    for row in closing.every_key_result:
        status = row["status_at_close"] = progress.key_result_status(
            row["confidence"], row["updated"], alignment.judged_kind(row), row["exact_at_close"], expected, ended)
        nodes[row["objective_id"]]["key_results"].append({"status": status})
        exact_of[row["objective_id"]].append(row["exact_at_close"])
        weights_of[row["objective_id"]].append(row["weight"])
    roots = []
    for row in closing.every_objective:
        exact_of[row["id"]] = progress.mean(exact_of[row["id"]], weights_of[row["id"]])
        parent = nodes.get(row["parent_objective_id"])
        (parent["children"] if parent is not None else roots).append(nodes[row["id"]])
    alignment.roll_up(roots, exact_of)
    return nodes, progress.mean_figure(exact_of.values())


def outcome_counts(outcomes):
    """How many objectives have each outcome, and how many none yet (not_scored)."""
    counts = dict.fromkeys((*OUTCOMES, "not_scored"), 0)
    for outcome in outcomes:
        counts[outcome or "not_scored"] += 1
    return counts


def objective_entry(row, node, closing):
    """An objective of the retrospective: its close-out, its progress and status at the close, and its key results
    with their progress at the start and the close and their final score."""
    team_id = row["team_id"]
    return {
        "id": row["id"], "name": row["name"], "parent_objective_id": row["parent_objective_id"],
        "team_id": team_id, "team_name": closing.team_names.get(team_id) if team_id else None,
        "outcome": row["outcome"], "score": row["score"], "reflection": row["reflection"],
        "carried_from_id": row["carried_from_id"], "progress": node["progress"], "status": node["status"],
        "key_results": [key_result_entry(entry, closing) for entry in closing.by_objective.get(row["id"], ())],
    }


def key_result_entry(row, closing):
    owner_id = row["owner_id"]
    return {
        "id": row["id"], "name": row["name"], "type": row["type"], "owner_id": owner_id,
        "owner_name": closing.owner_names.get(owner_id) if owner_id else None,
        "score": row["score"], "progress_at_start": progress.figure(row["exact_at_start"]),
        "progress_at_close": row["progress_at_close"], "status": row["status_at_close"],
        "final_score": row["final_score"],
        "achieved": None if row["final_score"] is None else bool(calibration.achieved(row["final_score"])),
    }


def movers(key_results):
    """The MOVERS key results whose progress rose most from the start to the close (rose: change above 0), and
    the MOVERS that fell most or stayed flat (fell: change 0 or below, lowest first); ties in creation order.
    Baselines have no progress: left out."""
    rose, fell = [], []
    for row in key_results:
        start, close = row["exact_at_start"], row["exact_at_close"]
        if start is not None and close is not None:
            change = close if start is progress.ZERO else close - start  # most start at nothing
            (rose if change > 0 else fell).append((change, row["seq"], row, start, close))
    return {"rose": [mover(c) for c in least(rose, -1)], "fell": [mover(c) for c in least(fell, 1)]}


def least(changes, sign):
    """The MOVERS changes least by sign * change, then creation order: first by their floats, then exactly among
    those that may be in (exact comparisons of thousands of fractions cost more than the rest of a mover)."""
    if len(changes) <= MOVERS:
        return sorted(changes, key=lambda c: (sign * c[0], c[1]))
    rough = [(sign * c[0].numerator / c[0].denominator, c) for c in changes]
    near = sorted(value for value, _ in rough)[MOVERS - 1] + 1e-9
    kept = [c for value, c in rough if value <= near]
    return sorted(kept, key=lambda c: (sign * c[0], c[1]))[:MOVERS]


def mover(change):
    difference, _, row, start, close = change
    return {"id": row["id"], "name": row["name"], "objective_id": row["objective_id"],
            "progress_at_start": progress.figure(start), "progress_at_close": progress.figure(close),
            "change": progress.figure(difference)}


def checkin_status(row, index, cycle, days):
    """A key result's status after its check-in number index, as its report showed it on that check-in's day
    (okr.progress.key_result_status: confidence and pace); days caches the cycle's timing by day."""
    created_at = row["times"][index]
    day = created_at[:10]
    timing = days.get(day)
    if timing is None:
        today = progress.parse_timestamp(created_at).date()
        timing = days[day] = (progress.elapsed(cycle["starts_on"], cycle["ends_on"], today),
                              progress.cycle_state(cycle["starts_on"], cycle["ends_on"], today) == "finished")
    if row["progress_from"] == "initiatives":  # as they stand at the close: no history of them is kept
        return progress.key_result_status(row["confidences"][index], index > 0, alignment.judged_kind(row),
                                          row["exact_at_close"], *timing)
    exact = progress.key_result_progress(row["type"], row["start_value"], row["values"][index],
                                         row["target_value_min"], row["target_value_max"])
    return progress.key_result_status(row["confidences"][index], index > 0, row["type"], exact, *timing)


GOOD = ("on_track", "done")
# Kinds whose progress moves one way with the value: done at some check-in only if at its highest or lowest value.
MONOTONIC = ("positive", "negative", "milestone")


def ever_done(row):
    """Whether the key result may have been done (progress 1) at some check-in: a range may always have been;
    a monotonic kind only if at its highest or lowest value; a baseline never."""
    if row["type"] not in MONOTONIC:
        return row["type"] == "range"
    values = sorted(row["values"], key=Decimal)
    return any(progress.key_result_progress(row["type"], row["start_value"], value, row["target_value_min"],
                                            row["target_value_max"]) == 1 for value in (values[0], values[-1]))


def went_off_track(closing):
    """The key results that were on track (or done) after some check-in and off track after their last one before
    the close, each with the time of the first check-in after which it stayed off track (off_track_since).

    Only those off track at the close (at_close) are walked: the pace expected at the close is at least that of
    any day before, so none other is off track after its last check-in. A check-in whose confidence is off track
    is off track (the worse of confidence and pace) unless the key result was done then, which ever_done rules
    out for most, without working out each check-in's progress."""
    found, days, cycle = [], {}, closing.cycle
    for row in closing.with_confidences([row for row in closing.key_results if row["status_at_close"] == "off_track"]):
        confidences, last = row["confidences"], len(row["values"]) - 1
        maybe_done = ever_done(row)

        def status(index):
            if index > 0 and not maybe_done and progress.status(confidences[index]) == "off_track":
                return "off_track"
            return checkin_status(row, index, cycle, days)

        index = last
        while index > 0 and status(index) == "off_track":
            index -= 1
        if index == last:
            continue  # not off track after its last check-in
        since = row["times"][index + 1]
        if not maybe_done and not any(progress.status(c) == "on_track" for c in confidences[:index + 1]):
            continue  # never on track: no confidence of ON_TRACK, never done
        while index >= 0 and status(index) not in GOOD:
            index -= 1
        if index >= 0:
            found.append({"id": row["id"], "name": row["name"], "objective_id": row["objective_id"],
                          "owner_id": row["owner_id"], "off_track_since": since})
    return found

# The CSV download: a row per objective, then one per each of its key results (kind says which); TEXT_COLUMNS are
# free text, the others ids, fixed words and figures.
CSV_COLUMNS = ("kind", "objective_id", "objective", "team", "key_result_id", "key_result", "owner", "outcome",
               "score", "progress_at_start", "progress_at_close", "final_score", "achieved", "reflection")
TEXT_COLUMNS = frozenset({"objective", "team", "key_result", "owner", "reflection"})


def csv_rows(retro):
    """The retrospective's rows, each a dict of some of CSV_COLUMNS."""
    for objective in retro["objectives"]:
        shared = {"objective_id": objective["id"], "objective": objective["name"], "team": objective["team_name"]}
        yield {**shared, "kind": "objective", "outcome": objective["outcome"], "score": objective["score"],
               "progress_at_close": objective["progress"], "reflection": objective["reflection"]}
        for key_result in objective["key_results"]:
            achieved = key_result["achieved"]
            yield {**shared, "kind": "key_result", "key_result_id": key_result["id"], "key_result": key_result["name"],
                   "owner": key_result["owner_name"], "score": key_result["score"],
                   "progress_at_start": key_result["progress_at_start"],
                   "progress_at_close": key_result["progress_at_close"], "final_score": key_result["final_score"],
                   "achieved": None if achieved is None else "true" if achieved else "false"}
