"""Quality checks on a cycle's OKRs: the one set of rules that GET /v1/cycles/<id>/checks, the cycle page's Quality
panel, the edit pages' hints and the assistants' quality_checks tool all show (docs/quality.md states them and their
wording).

- an objective has FEWEST_KEY_RESULTS to MOST_KEY_RESULTS key results (one without key results of its own whose
  progress comes from objectives aligned under it in the cycle is not counted short);
- each key result has an owner;
- a key result whose name starts with a task's verb (TASK_VERBS) reads as a task: consider an initiative;
- a baseline key result (no target) is flagged once more than BASELINE_GRACE of its cycle has gone by
  (okr.progress.elapsed; a cycle without both dates never flags);
- no person owns more than FOCUS_MOST key results in a cycle;
- an objective has a team or an assignee.

Each finding is a dict: code, severity, the subject (objective_id and objective_name; a key result's also
key_result_id and key_result_name; a person's user_id and user_name; the others None), message (a sentence that
names the subject) and hint (a short one that does not, for beside a form's field). Knows neither Flask nor SQL:
its rows come from okr.store.quality, two queries whatever the cycle's size.
"""
import re
from fractions import Fraction

from .. import progress
from ..store import quality as stored

FEWEST_KEY_RESULTS = 2
MOST_KEY_RESULTS = 5
FOCUS_MOST = 5  # key results one person owns in a cycle
BASELINE_GRACE = Fraction(1, 3)  # the part of its cycle a baseline may go without a target
# A key result whose name starts with one of these verbs reads as a task, something to do rather than an outcome to
# measure: the base form only, a whole word (not "Launches", "Relaunch" or "Write-offs"), whatever the case; a
# two-word verb with any spaces between its words.
TASK_VERBS = ("launch", "implement", "migrate", "build", "ship", "release", "deploy", "create", "write",
              "develop", "design", "integrate", "install", "refactor", "upgrade", "set up", "roll out")
TASK_START = re.compile(r"\s*(" + "|".join(verb.replace(" ", r"\s+") for verb in TASK_VERBS) + r")(?![\w'’-])",
                        re.IGNORECASE)
WARNING, SUGGESTION = "warning", "suggestion"
SEVERITIES = (WARNING, SUGGESTION)
# Every code with its severity, in the order a subject's findings come.
CODES = {
    "objective_without_owner": WARNING,
    "too_few_key_results": WARNING,
    "too_many_key_results": WARNING,
    "key_result_without_owner": WARNING,
    "key_result_reads_as_task": SUGGESTION,
    "baseline_after_first_third": WARNING,
    "owner_over_focus": WARNING,
}


def task_verb(name):
    """The task's verb a key result's name starts with (lowercase, one space in a two-word verb), or None."""
    found = TASK_START.match(name)
    return None if found is None else " ".join(found.group(1).lower().split())


def key_results_words(count):
    return "no key results" if count == 0 else f"{count} key result{'s' if count != 1 else ''}"


def finding(code, message, hint, objective=None, key_result=None, person=None):
    """A finding about an objective, a key result (of objective) or a person ((user_id, user_name))."""
    return {"code": code, "severity": CODES[code],
            "objective_id": objective and objective["id"], "objective_name": objective and objective["name"],
            "key_result_id": key_result and key_result["id"], "key_result_name": key_result and key_result["name"],
            "user_id": person and person[0], "user_name": person and person[1],
            "message": message, "hint": hint}


def objective_findings(objective, count, rolls_up):
    """An objective's own findings: its team or assignee, how many key results it has (count)."""
    found, name = [], objective["name"]
    if objective["team_id"] is None and objective["assignee_id"] is None:
        found.append(finding("objective_without_owner", f"“{name}” has neither a team nor an owner: give it one.",
                             "no team and no owner: choose a team or an owner", objective))
    if count < FEWEST_KEY_RESULTS and not (count == 0 and rolls_up):
        found.append(finding(
            "too_few_key_results",
            f"“{name}” has {key_results_words(count)}; an objective has {FEWEST_KEY_RESULTS} to {MOST_KEY_RESULTS}.",
            f"{key_results_words(count)}: an objective has {FEWEST_KEY_RESULTS} to {MOST_KEY_RESULTS}",
            objective))
    elif count > MOST_KEY_RESULTS:
        found.append(finding(
            "too_many_key_results",
            f"“{name}” has {count} key results; an objective has {FEWEST_KEY_RESULTS} to {MOST_KEY_RESULTS}: keep "
            "the ones that matter most.",
            f"{count} key results: keep the {MOST_KEY_RESULTS} that matter most", objective))
    return found


def key_result_findings(key_result, objective, late):
    """A key result's own findings; late: more than BASELINE_GRACE of its cycle has gone by."""
    found, name = [], key_result["name"]
    if key_result["owner_id"] is None:
        found.append(finding("key_result_without_owner", f"“{name}” has no owner: choose who updates it.",
                             "no owner: choose who updates it", objective, key_result))
    verb = task_verb(name)
    if verb is not None:
        found.append(finding(
            "key_result_reads_as_task",
            f"“{name}” reads like a task (it starts with “{verb}”): consider making it an initiative, and measuring "
            "what it should change.",
            "reads like a task: consider making it an initiative", objective, key_result))
    if late and key_result["type"] == "baseline":
        found.append(finding(
            "baseline_after_first_third",
            f"“{name}” is a baseline with no target, and a third of the cycle has gone by: set a target.",
            "no target, and a third of the cycle has gone by: choose a type with a target and set it",
            objective, key_result))
    return found


def checks(objectives, key_results, elapsed):
    """The findings on a cycle's objectives and key results (okr.store.quality.cycle_rows' rows, in creation order),
    elapsed being the cycle's elapsed fraction (None without both dates): each objective's, then each of its key
    results', in creation order; then each person over FOCUS_MOST, most key results first (then by name)."""
    late = elapsed is not None and elapsed > BASELINE_GRACE
    by_objective, owned, names = {}, {}, {}
    for row in key_results:
        by_objective.setdefault(row["objective_id"], []).append(row)
        if row["owner_id"] is not None:
            owned[row["owner_id"]] = owned.get(row["owner_id"], 0) + 1
            names[row["owner_id"]] = row["owner_name"]
    parents = {row["parent_objective_id"] for row in objectives}
    found = []
    for objective in objectives:
        own = by_objective.get(objective["id"], [])
        found += objective_findings(objective, len(own), objective["id"] in parents)
        for key_result in own:
            found += key_result_findings(key_result, objective, late)
    for user_id, count in sorted(owned.items(), key=lambda pair: (-pair[1], names[pair[0]] or "", pair[0])):
        if count > FOCUS_MOST:
            found.append(finding(
                "owner_over_focus",
                f"{names[user_id]} owns {count} key results in this cycle; more than {FOCUS_MOST} spreads focus thin.",
                f"{names[user_id]} owns {count} key results in this cycle, more than {FOCUS_MOST}: hand some on",
                person=(user_id, names[user_id])))
    return found


def cycle_checks(db, cycle, today):
    """The findings on a cycle (its row) on today (a date), in checks' order."""
    objectives, key_results = stored.cycle_rows(db, cycle["id"])
    return checks(objectives, key_results, progress.elapsed(cycle["starts_on"], cycle["ends_on"], today))


def answer(cycle_id, found):
    """GET /v1/cycles/<id>/checks' JSON: {"cycle_id", "checks" (each finding without its hint), "count"}."""
    return {"cycle_id": cycle_id, "checks": [{k: v for k, v in f.items() if k != "hint"} for f in found],
            "count": len(found)}


def about_objective(found, objective_id):
    """The findings on an objective itself (not on its key results)."""
    return [f for f in found if f["objective_id"] == objective_id and f["key_result_id"] is None]


def about_key_result(found, key_result):
    """The findings on a key result (its row), and on its owner's focus."""
    owner = key_result["owner_id"]
    return [f for f in found if f["key_result_id"] == key_result["id"]
            or (owner is not None and f["user_id"] == owner)]
