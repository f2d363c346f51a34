"""The quality checks' reads (okr/reports/quality.py judges them): a cycle's objectives and its key results with
their owners' names, in two queries whatever the cycle's size, each one walk of its cycle's index."""
from . import visibility
from .reports import dict_rows

OBJECTIVES = """
SELECT id, name, team_id, assignee_id, parent_objective_id
FROM objectives
WHERE cycle_id = ?
ORDER BY seq
"""

KEY_RESULTS = """
SELECT k.id, k.name, k.objective_id, k.type, k.owner_id, u.name AS owner_name
FROM key_results k LEFT JOIN users u ON u.id = k.owner_id
WHERE k.cycle_id = ?
ORDER BY k.seq
"""


def cycle_rows(db, cycle_id):
    """A cycle's objectives (id, name, team_id, assignee_id, parent_objective_id) and key results (id, name,
    objective_id, type, owner_id, owner_name), each a list of dicts in creation order; those the viewer may see."""
    seen, params = visibility.seeing("objectives")
    objectives = dict_rows(db, OBJECTIVES.replace("WHERE cycle_id = ?", f"WHERE cycle_id = ? AND {seen}"),
                           (cycle_id, *params))
    seen, params = visibility.condition("k.objective_id")
    key_results = dict_rows(db, KEY_RESULTS.replace("WHERE k.cycle_id = ?", f"WHERE k.cycle_id = ? AND {seen}"),
                            (cycle_id, *params))
    return objectives, key_results
