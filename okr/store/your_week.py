"""Your week's reads: the key results a person looks after in the given cycles (okr.reports.your_week builds it,
for the page and the assistants).

The team's objectives come from okr.store.reports (a cycle report per team), the person's teams from
okr.store.team_members.
"""
import json

from .reports import KEY_RESULTS_WITH_HISTORY

# The person's key results in the given cycles, with their objective's name: the reports' own query
# (start value and last check-in), one for all of them. Each half of the UNION takes its own index
# (key_results_with_owner, objectives_with_assignee), so the person's rows are found without a scan.
MY_KEY_RESULTS = f"""
SELECT h.*, o.name AS objective_name
FROM ({KEY_RESULTS_WITH_HISTORY.format(where='''k.seq IN (
        SELECT seq FROM key_results WHERE owner_id = :person
        UNION
        SELECT k2.seq FROM objectives o2 JOIN key_results k2 ON k2.objective_id = o2.id
        WHERE o2.assignee_id = :person)
    AND k.cycle_id IN (SELECT value FROM json_each(:cycles))''')}) h
JOIN objectives o ON o.id = h.objective_id
"""


def key_results_of(db, person_id, cycle_ids):
    """The key results the person owns or whose objective is assigned to them, in these cycles, each with its
    history (as a report's) and its objective's name as objective_name, in creation order."""
    return db.execute(MY_KEY_RESULTS, {"person": person_id, "cycles": json.dumps(list(cycle_ids))}).fetchall()
