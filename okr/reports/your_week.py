"""Your week: what a signed-in person looks after in the current cycles, those needing an update first; with
none there, their key results in the cycles to come.

The key results the person owns (key_results.owner_id) or whose objective is assigned to them, and
their teams' objectives, in the cycles whose dates hold today (okr.progress.cycle_state). Every
figure comes from okr.reports.alignment' own nodes; the queries are a fixed number, whatever the count of key
results: the current cycles, the person's key results (okr.store.your_week: the reports' query, one for all
of them), the person's teams, then one filtered cycle report per team and current cycle.
"""
from .. import progress
from ..records import cycle_details_json
from ..store import cycles as stored_cycles
from ..store import initiatives, team_members, your_week
from . import alignment

# At most this many of a team's objectives are listed per cycle; the cycle page, filtered by the team, has
# them all.
TEAM_OBJECTIVES_SHOWN = 30


# The cycles current today: okr.reports.alignment' rule, which the weekly emails share.
current_cycles = alignment.current_cycles


def needs_update(node, now):
    """Whether a key result waits for a check-in: never updated since it was made, or none for a week."""
    if node["status"] == "no_update":
        return True
    return now - progress.parse_timestamp(node["last_checkin_at"]) > progress.NEEDS_UPDATE_AFTER


def week(db, person_id, now):
    """Your week's data for a person: {"cycles", "key_results", "teams"}.

    key_results: the report's key-result nodes, each with "objective_name", "cycle" (the cycle's details)
    and "needs_update", those needing an update first, then by cycle (newest first) and creation.
    teams: [{"team", "cycle", "objectives": [report nodes, flattened], "more"}] per team and current cycle.
    now is an aware datetime.
    """
    today = now.date()
    cycles = current_cycles(db, today)
    details = {row["id"]: cycle_details_json(row, today) for row in cycles}
    order = {row["id"]: position for position, row in enumerate(cycles)}
    stale = alignment.stale_by_time(now)  # a current cycle is not finished
    pace = alignment.pace_test(cycles, today)
    key_results = []
    if cycles:
        rows = your_week.key_results_of(db, person_id, details)
        for row in rows:
            node = alignment.key_result_node(row, stale, pace)[0]
            node["objective_name"] = row["objective_name"]
            node["cycle"] = details[row["cycle_id"]]
            node["needs_update"] = needs_update(node, now)
            key_results.append((not node["needs_update"], order[row["cycle_id"]], row["seq"], node))
    key_results.sort(key=lambda entry: entry[:3])
    teams = []
    if cycles:
        memberships = team_members.teams_of(db, person_id)
        for team in memberships:
            for cycle in cycles:
                report = alignment.cycle_report(db, cycle, now, team_id=team["id"])
                objectives = flattened(report["objectives"])
                if objectives:
                    teams.append({"team": team, "cycle": report["cycle"],
                                  "objectives": objectives[:TEAM_OBJECTIVES_SHOWN],
                                  "more": len(objectives) > TEAM_OBJECTIVES_SHOWN})
    upcoming = [] if key_results else upcoming_key_results(db, person_id, today, stale)
    return {"cycles": list(details.values()), "key_results": [entry[3] for entry in key_results], "teams": teams,
            "upcoming": upcoming, "initiatives": open_initiatives(db, person_id, details, today)}


def open_initiatives(db, person_id, cycles, today):
    """The initiatives the person owns that are not done, in the current cycles, soonest due first: each as a dict
    with its key result's name, and "overdue" when its due date has passed."""
    if not cycles:
        return []
    day = today.isoformat()
    return [{**dict(row), "overdue": row["due_on"] is not None and row["due_on"] < day}
            for row in initiatives.owned_open(db, person_id, cycles)]


def upcoming_key_results(db, person_id, today, stale):
    """The person's key results in the cycles that start later (the report's nodes, each with "objective_name"
    and "cycle", its start date included), the soonest cycle first: what Your week shows to someone who has
    none in a current cycle yet."""
    cycles = stored_cycles.upcoming(db, today)
    if not cycles:
        return []
    details = {row["id"]: cycle_details_json(row, today) for row in cycles}
    order = {row["id"]: position for position, row in enumerate(cycles)}
    found = []
    pace = alignment.pace_test(cycles, today)
    for row in your_week.key_results_of(db, person_id, details):
        node = alignment.key_result_node(row, stale, pace)[0]
        node["objective_name"], node["cycle"] = row["objective_name"], details[row["cycle_id"]]
        found.append((order[row["cycle_id"]], row["seq"], node))
    return [entry[2] for entry in sorted(found, key=lambda entry: entry[:2])]


flattened = alignment.flattened
