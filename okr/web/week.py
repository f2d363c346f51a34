"""Your week: what a signed-in person looks after in the current cycles, those needing an update first.

The key results the person owns (key_results.owner_id) or whose objective is assigned to them, and
their teams' objectives, in the cycles whose dates hold today (okr.progress.cycle_state). Every
figure comes from okr.reports' own nodes; the queries are a fixed number, whatever the count of key
results: the current cycles, the person's key results (okr.reports' query, one for all of them), the
person's teams, then one filtered cycle report per team and current cycle.
"""
import json

from .. import progress, reports
from ..records import cycle_details_json

# The person's key results in the given cycles, with their objective's name: okr.reports' own query
# (start value and last check-in), one for all of them. Each half of the UNION takes its own index
# (key_results_with_owner, objectives_with_assignee), so the person's rows are found without a scan.
MY_KEY_RESULTS = f"""
SELECT h.*, o.name AS objective_name
FROM ({reports.KEY_RESULTS_WITH_HISTORY.format(where='''k.seq IN (
        SELECT seq FROM key_results WHERE owner_id = :person
        UNION
        SELECT k2.seq FROM objectives o2 JOIN key_results k2 ON k2.objective_id = o2.id
        WHERE o2.assignee_id = :person)
    AND k.cycle_id IN (SELECT value FROM json_each(:cycles))''')}) h
JOIN objectives o ON o.id = h.objective_id
"""

# At most this many of a team's objectives are listed per cycle; the cycle page, filtered by the team, has
# them all.
TEAM_OBJECTIVES_SHOWN = 30


# The cycles current today: okr.reports' rule, which the weekly emails share.
current_cycles = reports.current_cycles


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
    stale = reports.stale_by_time(now)  # a current cycle is not finished
    key_results = []
    if cycles:
        rows = db.execute(MY_KEY_RESULTS, {"person": person_id, "cycles": json_list(details)}).fetchall()
        for row in rows:
            node = reports.key_result_node(row, stale)[0]
            node["objective_name"] = row["objective_name"]
            node["cycle"] = details[row["cycle_id"]]
            node["needs_update"] = needs_update(node, now)
            key_results.append((not node["needs_update"], order[row["cycle_id"]], row["seq"], node))
    key_results.sort(key=lambda entry: entry[:3])
    teams = []
    if cycles:
        memberships = db.execute(
            """SELECT t.id, t.name FROM team_members m JOIN teams t ON t.id = m.team_id
               WHERE m.user_id = ? ORDER BY t.name, t.seq""", (person_id,)).fetchall()
        for team in memberships:
            for cycle in cycles:
                report = reports.cycle_report(db, cycle, now, team_id=team["id"])
                objectives = flattened(report["objectives"])
                if objectives:
                    teams.append({"team": team, "cycle": report["cycle"],
                                  "objectives": objectives[:TEAM_OBJECTIVES_SHOWN],
                                  "more": len(objectives) > TEAM_OBJECTIVES_SHOWN})
    return {"cycles": list(details.values()), "key_results": [entry[3] for entry in key_results], "teams": teams}


flattened = reports.flattened


def json_list(ids):
    """Ids as a JSON array, for json_each: one parameter, whatever their count."""
    return json.dumps(list(ids))
