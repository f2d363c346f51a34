"""A cycle's retrospective, for the company or one team: its objectives' scores, outcomes and reflections, the
biggest movers, the key results that went from on track to off track, what was carried over, and the confidence
calibration (okr.reports.calibration), as of the cycle's close (or now, while it is open).

From a fixed number of queries (okr.store.reports.retrospective_rows: no query per row), every figure from
okr.progress; neither SQL nor Flask. docs/dashboard.md#the-retrospective says what each part means.
"""
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
    """A cycle's kept objectives and key results as they stood at its close, each key result with its history."""

    def __init__(self, db, cycle, now, team_id=None):
        self.cycle = cycle
        self.moment, self.stamp = moment_of(cycle, now)
        self.objectives, self.key_results, checkins, self.copies = report_rows.retrospective_rows(
            db, cycle["id"], self.stamp, team_id)
        self.owner_names, self.team_names = report_rows.names_in_cycle(db, cycle["id"])
        self.team_of = {row["id"]: row["team_id"] for row in self.objectives}
        history = {}
        for seq, value, confidence, created_at in checkins:
            found = history.get(seq)
            if found is None:
                history[seq] = found = []
            found.append((value, confidence, created_at))
        self.history = history
        self.first_checkin_at = None
        dated = cycle["starts_on"] is not None and cycle["ends_on"] is not None
        if not dated:
            self.first_checkin_at = report_rows.first_checkin_at(db, cycle["id"])
        for row in self.key_results:
            made = history.get(row["seq"]) or [(row["current_value"], row["confidence"], row["modified_at"])]
            row["start_value"] = made[0][0]
            row["current_value"], row["confidence"], row["last_checkin_at"] = made[-1]
            row["updated"] = len(made) > 1
            exact = progress.key_result_progress(row["type"], row["start_value"], row["current_value"],
                                                 row["target_value_min"], row["target_value_max"])
            row["exact_at_close"] = exact
            row["final_score"] = row["score"] if row["score"] is not None else progress.figure(exact)

    def calibration(self):
        late = calibration.late_test(self.cycle["starts_on"], self.cycle["ends_on"], self.first_checkin_at,
                                     self.moment)
        entries = ((row, self.team_of.get(row["objective_id"]), row["final_score"],
                    [(confidence, created_at) for _, confidence, created_at in self.history.get(row["seq"], ())[1:]])
                   for row in self.key_results)
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
        "went_off_track": went_off_track(closing),
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
        "score": row["score"], "progress_at_start": progress.figure(start_progress(row)),
        "progress_at_close": node["progress"], "status": node["status"], "final_score": row["final_score"],
        "achieved": None if row["final_score"] is None else bool(calibration.achieved(row["final_score"])),
    }


def start_progress(row):
    """A key result's progress at its starting check-in (None for a baseline)."""
    return progress.key_result_progress(row["type"], row["start_value"], row["start_value"],
                                        row["target_value_min"], row["target_value_max"])


def movers(key_results):
    """The MOVERS key results whose progress rose most from the start to the close (rose: change above 0), and
    the MOVERS that fell most or stayed flat (fell: change 0 or below, lowest first); ties in creation order.
    Baselines have no progress: left out."""
    changes = []
    for row in key_results:
        start, close = start_progress(row), row["exact_at_close"]
        if start is not None and close is not None:
            changes.append((close - start, row["seq"], row, start, close))
    rose = sorted((c for c in changes if c[0] > 0), key=lambda c: (-c[0], c[1]))[:MOVERS]
    fell = sorted((c for c in changes if c[0] <= 0), key=lambda c: (c[0], c[1]))[:MOVERS]
    return {"rose": [mover(c) for c in rose], "fell": [mover(c) for c in fell]}


def mover(change):
    difference, _, row, start, close = change
    return {"id": row["id"], "name": row["name"], "objective_id": row["objective_id"],
            "progress_at_start": progress.figure(start), "progress_at_close": progress.figure(close),
            "change": progress.figure(difference)}


def checkin_status(row, index, value, confidence, created_at, cycle, days):
    """A key result's status after one of its check-ins, as its report showed it on that check-in's day
    (okr.progress.key_result_status: confidence and pace); days caches the cycle's timing by day."""
    day = created_at[:10]
    timing = days.get(day)
    if timing is None:
        today = progress.parse_timestamp(created_at).date()
        timing = days[day] = (progress.elapsed(cycle["starts_on"], cycle["ends_on"], today),
                              progress.cycle_state(cycle["starts_on"], cycle["ends_on"], today) == "finished")
    exact = progress.key_result_progress(row["type"], row["start_value"], value, row["target_value_min"],
                                         row["target_value_max"])
    return progress.key_result_status(confidence, index > 0, row["type"], exact, *timing)


GOOD = ("on_track", "done")


def went_off_track(closing):
    """The key results that were on track (or done) after some check-in and off track after their last one before
    the close, each with the time of the first check-in after which it stayed off track (off_track_since)."""
    found, days = [], {}
    for row in closing.key_results:
        made = closing.history.get(row["seq"])
        if not made:
            continue
        since = None
        index = len(made) - 1
        while index >= 0:
            value, confidence, created_at = made[index]
            if checkin_status(row, index, value, confidence, created_at, closing.cycle, days) != "off_track":
                break
            since = created_at
            index -= 1
        if since is None:
            continue
        while index >= 0 and checkin_status(row, index, *made[index], closing.cycle, days) not in GOOD:
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
