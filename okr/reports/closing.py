"""A cycle's close-out: each objective and key result with its final progress and the score and outcome it
suggests (okr.progress's rules), for the close-out page and for closing, which gives what nobody scored its
suggestion."""
from .. import progress
from ..errors import Conflict
from ..store import visibility
from .alignment import cycle_report, flattened

UPCOMING = "an upcoming cycle cannot be closed: it has not started"


def require_closable(cycle, today):
    """Conflict unless the cycle (its row) may be closed on today (a date): open, and finished or current."""
    if cycle["closed_at"] is not None:
        raise Conflict("cycle is already closed")
    if progress.cycle_state(cycle["starts_on"], cycle["ends_on"], today) == "upcoming":
        raise Conflict(UPCOMING)


def close_out(db, cycle, now):
    """The cycle's objectives, parents before children as its report has them, each a report node (with its
    key results) plus suggested_score and suggested_outcome; each key result node with suggested_score."""
    nodes = flattened(cycle_report(db, cycle, now)["objectives"])
    for node in nodes:
        node["suggested_score"] = progress.suggested_score(node["progress"])
        node["suggested_outcome"] = progress.suggested_outcome(node["score"] or node["suggested_score"])
        for key_result in node["key_results"]:
            key_result["suggested_score"] = progress.suggested_score(key_result["progress"])
    return nodes


def suggestions_for_all(db, cycle, now):
    """suggestions of every objective of the cycle, whoever closes it: the close scores those the closer may not
    see too (okr.store.visibility), as it would for anyone."""
    with visibility.viewing_as(None):
        return suggestions(close_out(db, cycle, now))


def suggestions(nodes):
    """The scores closing gives whatever is not scored, from close_out's nodes: {"objectives": {id: score},
    "key_results": {id: score}} (None for a baseline)."""
    return {"objectives": {node["id"]: node["suggested_score"] for node in nodes},
            "key_results": {key_result["id"]: key_result["suggested_score"]
                            for node in nodes for key_result in node["key_results"]}}


# What a copy of a cycle leaves unchecked at first: an objective that ended so, and a key result at full progress.
LEFT_BEHIND = ("achieved", "dropped")
FULL = "1.00"


def carry_choices(db, cycle, now):
    """The cycle's objectives as a copy of it offers them (parents before children, as its report has them), each
    a report node with carry: whether it is picked at first (not when achieved or dropped), and each of its key
    results with carry (not when its progress is 1.00)."""
    nodes = flattened(cycle_report(db, cycle, now)["objectives"])
    for node in nodes:
        node["carry"] = node["outcome"] not in LEFT_BEHIND
        for key_result in node["key_results"]:
            key_result["carry"] = key_result["progress"] != FULL
    return nodes
