"""A cycle's retrospective, for the company or one team: its objectives' scores, outcomes and reflections, the
biggest movers, the key results that went from on track to off track, what was carried over, and the confidence
calibration (okr.reports.calibration), as of the cycle's close (or now, while it is open).

From a fixed number of queries (okr.store.reports.retrospective_rows: no query per row), every figure from
okr.progress; neither SQL nor Flask. docs/dashboard.md#the-retrospective says what each part means.
"""
import heapq
from datetime import timezone

from .. import progress
from ..records import cycle_details_json
from ..store import reports as report_rows
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

    def __init__(self, db, cycle, now, team_id=None):
        self.cycle = cycle
        self.moment, self.stamp = moment_of(cycle, now)
        self.objectives, self.key_results, self.copies = report_rows.retrospective_rows(
            db, cycle["id"], self.stamp, team_id)
        self.owner_names, self.team_names = report_rows.names_in_cycle(db, cycle["id"])
        self.team_of = {row["id"]: row["team_id"] for row in self.objectives}
        dated = cycle["starts_on"] is not None and cycle["ends_on"] is not None
        self.first_checkin_at = None if dated else report_rows.first_checkin_at(db, cycle["id"])
        for row in self.key_results:
            history = row["history"]
            if history:
                parts = history.split(" ")
                row["confidences"], row["values"], row["times"] = parts[0::3], parts[1::3], parts[2::3]
            else:  # a row written behind the API's back: its present values
                row["confidences"], row["values"], row["times"] = (
                    [row["confidence"]], [row["current_value"]], [row["modified_at"]])
            start = row["start_value"] = row["values"][0]
            row["current_value"], row["confidence"] = row["values"][-1], row["confidences"][-1]
            row["last_checkin_at"], row["updated"] = row["times"][-1], len(row["values"]) > 1
            kind, low, high = row["type"], row["target_value_min"], row["target_value_max"]
            row["exact_at_start"] = progress.key_result_progress(kind, start, start, low, high)
            exact = row["exact_at_close"] = progress.key_result_progress(kind, start, row["current_value"], low, high)
            row["final_score"] = row["score"] if row["score"] is not None else progress.figure(exact)

    def calibration(self):
        late = calibration.late_test(self.cycle["starts_on"], self.cycle["ends_on"], self.first_checkin_at,
                                     self.moment)
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
    """GET /v1/cycles/<id>/retrospective: everything the retrospective page shows, of one team's objectives when
    team (its id and name) is given."""
    closing = Closing(db, cycle, now, team and team["id"])
    report = alignment.cycle_tree(cycle, closing.moment, closing.objectives, closing.key_results)
    nodes = {node["id"]: node for node in alignment.flattened(report["objectives"])}
    by_id = {row["id"]: row for row in closing.key_results}
    objectives = [objective_entry(nodes[row["id"]], by_id, closing) for row in closing.objectives]
    return {
        **heading(cycle, closing, team),
        "progress": report["progress"],
        "objectives_count": report["objectives_count"],
        "key_results_count": report["key_results_count"],
        "outcome_counts": outcome_counts(row["outcome"] for row in closing.objectives),
        "objectives": objectives,
        "movers": movers(closing.key_results),
        "went_off_track": went_off_track(closing, {entry["id"] for node in nodes.values()
                                                   for entry in node["key_results"] if entry["status"] == "off_track"}),
        "carried_over": {
            "objectives": [{"id": row["id"], "name": row["name"]} for row in closing.objectives
                           if row["outcome"] == "carried_over"],
            "copies": closing.copies,
        },
        "calibration": closing.calibration(),
    }


def outcome_counts(outcomes):
    """How many objectives have each outcome, and how many none yet (not_scored)."""
    counts = dict.fromkeys((*OUTCOMES, "not_scored"), 0)
    for outcome in outcomes:
        counts[outcome or "not_scored"] += 1
    return counts


def objective_entry(node, by_id, closing):
    """An objective of the retrospective: its close-out, its progress and status at the close, and its key results
    with their progress at the start and the close and their final score."""
    team_id = node["team_id"]
    return {
        "id": node["id"], "name": node["name"], "parent_objective_id": node["parent_objective_id"],
        "team_id": team_id, "team_name": closing.team_names.get(team_id) if team_id else None,
        "outcome": node["outcome"], "score": node["score"], "reflection": node["reflection"],
        "carried_from_id": node["carried_from_id"], "progress": node["progress"], "status": node["status"],
        "key_results": [key_result_entry(entry, by_id[entry["id"]], closing) for entry in node["key_results"]],
    }


def key_result_entry(node, row, closing):
    owner_id = row["owner_id"]
    return {
        "id": row["id"], "name": row["name"], "type": row["type"], "owner_id": owner_id,
        "owner_name": closing.owner_names.get(owner_id) if owner_id else None,
        "score": row["score"], "progress_at_start": progress.figure(row["exact_at_start"]),
        "progress_at_close": node["progress"], "status": node["status"], "final_score": row["final_score"],
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
    return {"rose": [mover(c) for c in heapq.nsmallest(MOVERS, rose, key=lambda c: (-c[0], c[1]))],
            "fell": [mover(c) for c in heapq.nsmallest(MOVERS, fell, key=lambda c: (c[0], c[1]))]}


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
    exact = progress.key_result_progress(row["type"], row["start_value"], row["values"][index],
                                         row["target_value_min"], row["target_value_max"])
    return progress.key_result_status(row["confidences"][index], index > 0, row["type"], exact, *timing)


GOOD = ("on_track", "done")


def went_off_track(closing, off_at_close):
    """The key results that were on track (or done) after some check-in and off track after their last one before
    the close, each with the time of the first check-in after which it stayed off track (off_track_since).

    off_at_close: the ids of the key results off track at the close; only those can be off track after their last
    check-in (the pace expected at the close is at least that of any day before)."""
    found, days, cycle = [], {}, closing.cycle
    for row in closing.key_results:
        if row["id"] not in off_at_close:
            continue
        index = len(row["values"]) - 1
        while index > 0 and checkin_status(row, index, cycle, days) == "off_track":
            index -= 1
        if index == len(row["values"]) - 1:
            continue  # not off track after its last check-in
        since = row["times"][index + 1]
        while index >= 0 and checkin_status(row, index, cycle, days) not in GOOD:
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
