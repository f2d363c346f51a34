"""The cycle page's review: a cycle report a page at a time, with the whole report's figures.

A page holds PER_PAGE top objectives (those whose parent is not in the report) with everything aligned below
them, built by okr.reports.alignment from their rows alone: each objective's progress and status depend only on
what is below it, so they are the report's. The whole report's figures (status counts, progress, counts) come
from one read of its rows as they stream (okr.reports.streaming.cycle_summary's way), kept in this process until
anything they depend on changes. Filtered by key result (owner, status, words), a page holds the objectives
with matching key results instead, each with the report's figures, found by the same read.

Knows neither SQL nor Flask.
"""
import threading
from array import array
from collections import OrderedDict

from .. import progress
from ..records import cycle_details_json
from ..store import reports as report_rows
from ..store import timelines as stored_timelines
from ..store import visibility
from .alignment import alignment_tree, cycle_with_pace, flattened, key_result_node, never_stale, pace_test, \
    stale_by_time
from .streaming import NO_RANK, Means, Tree

PER_PAGE = 50  # top objectives (or, filtered by key result, objectives) a page
KEEP = 8  # whole-report figures kept per process, the least recently shown dropped first
KEPT, KEPT_LOCK = OrderedDict(), threading.Lock()


class Choice:
    """What a page keeps of a report's key results: an owner's, those of some statuses, those whose name (or
    their objective's) holds some words (case-insensitive); None or empty: any."""

    def __init__(self, owner_id=None, statuses=(), words=""):
        self.owner_id, self.statuses, self.words = owner_id, frozenset(statuses), (words or "").casefold()

    def __bool__(self):
        return bool(self.owner_id or self.statuses or self.words)

    def key(self):
        return self.owner_id, tuple(sorted(self.statuses)), self.words

    def named(self, objective):
        """Whether an objective's own name holds the words (and there are words)."""
        return bool(self.words) and self.words in objective["name"].casefold()

    def keeps(self, key_result, objective_named):
        """Whether a key result node is kept; objective_named: whether its objective's name holds the words."""
        return ((self.owner_id is None or key_result.get("owner_id") == self.owner_id)
                and (not self.statuses or key_result["status"] in self.statuses)
                and (not self.words or objective_named or self.words in key_result["name"].casefold()))

    def keeps_bare(self):
        """Whether an objective whose name holds the words is kept without a key result kept."""
        return self.owner_id is None and not self.statuses


class Figures(Tree):
    """A report's objectives and key results read once for their figures: each objective's roll-up as
    okr.reports.streaming.Tree finds it, but no text kept; with a Choice, the seqs of the objectives it keeps."""

    def __init__(self):  # noqa: super().__init__ opens the text files this never writes
        self.index, self.parents, self.cycles, self.seqs = {}, [], [], array("q")
        self.first, self.worst = array("q"), array("b")
        self.counts = dict.fromkeys(progress.STATUSES, 0)
        self.count = self.matched = 0
        self.kept = {}  # position: id, of the objectives a Choice keeps
        self.hide = bytearray()  # whether each objective is hidden from the viewer: counted, not shown
        self.own = self.roots = self.children = self.rolled = self.sources = self.statuses = None

    def read(self, objectives, key_results, stale, pace, choice=None, hidden=frozenset()):
        means, named = Means(), {}
        cycles = {}
        for row in objectives:
            position = len(self.parents)
            self.index[row["id"]] = position
            self.hide.append(row["id"] in hidden)
            self.parents.append(row["parent_objective_id"])
            self.cycles.append(cycles.setdefault(row["cycle_id"], row["cycle_id"]))
            self.seqs.append(row["seq"])
            self.first.append(-1)
            self.worst.append(NO_RANK)
            means.append()
            if choice and choice.named(row) and not self.hide[position]:
                named[position] = row["id"]
        index, first, worst, rank, counts = self.index, self.first, self.worst, progress.RANK, self.counts
        kept = dict(named) if choice and choice.keeps_bare() else {}
        hide = self.hide
        for row in key_results:
            node, value = key_result_node(row, stale, pace)
            position = index[row["objective_id"]]
            first[position] = 1  # has key results of its own
            means.add(position, value, row["weight"])
            worst[position] = min(worst[position], rank[node["status"]])
            if hide[position]:
                continue
            counts[node["status"]] += 1
            self.count += 1
            if choice and choice.keeps(node, position in named):
                kept[position] = row["objective_id"]
                self.matched += 1
        self.kept = kept
        self.own = [means.mean(position) for position in range(len(self.parents))]


def figures(db, cycle, now, team_id=None, assignee_id=None, choice=None, fingerprint=None):
    """A cycle report's figures (okr.reports.alignment.cycle_tree's, without its tree): {"cycle" (with elapsed and
    status_counts), "progress", "objectives_count", "key_results_count"}; with a Choice, also "kept": [(seq,
    id)] of the objectives it keeps in creation order, "matched": how many key results, and "objective": id -> the
    objective's report figures (progress, progress_from, status). Kept in this process until its rows change
    (okr.store.timelines.cycle_fingerprint; fingerprint: the cycle's, when the caller has it) or the day does
    (statuses follow the day, not the hour)."""
    today = now.date()
    hidden = visibility.hidden_ids(db, cycle["id"])
    key = (cycle["id"], cycle["starts_on"], cycle["ends_on"], cycle["name"], today, team_id, assignee_id,
           choice.key() if choice else None, fingerprint or stored_timelines.cycle_fingerprint(db, cycle["id"]),
           hidden)
    with KEPT_LOCK:
        if key in KEPT:
            KEPT.move_to_end(key)
            return KEPT[key]
    found = figures_now(db, cycle, now, team_id, assignee_id, choice, hidden)
    with KEPT_LOCK:
        KEPT[key] = found
        while len(KEPT) > KEEP:
            KEPT.popitem(last=False)
    return found


def figures_now(db, cycle, now, team_id=None, assignee_id=None, choice=None, hidden=frozenset()):
    objectives, key_results = report_rows.streamed_cycle_rows(db, cycle["id"], team_id, assignee_id)
    shown = cycle_details_json(cycle, now.date())
    stale = never_stale if shown["state"] == "finished" else stale_by_time(now)
    tree = Figures()
    tree.read(objectives, key_results, stale, pace_test([cycle], now.date()), choice, hidden)
    hidden_count = sum(tree.hide)
    found = {"progress": progress.mean_figure(tree.own), "objectives_count": len(tree.own) - hidden_count,
             "key_results_count": tree.count, "hidden_objectives_count": hidden_count,
             "cycle": cycle_with_pace(shown, cycle, now.date(), tree.counts)}
    if choice:
        tree.roll_up()
        found["matched"] = tree.matched
        found["kept"] = [(tree.seqs[position], tree.kept[position]) for position in sorted(tree.kept)]
        found["objective"] = {objective_id: (progress.figure(tree.rolled[position]), tree.sources[position],
                                             tree.statuses[position]) for position, objective_id in tree.kept.items()}
    return found


def page(db, cycle, now, after=0, team_id=None, assignee_id=None, choice=None, found=None, per_page=PER_PAGE):
    """One page of a cycle report: {"objectives": the page's report nodes, "after": the seq its next page starts
    after (None: it is the last), "before": the seq the page before starts after (0: the first page; None: there
    is none)}; after: the seq this page starts after. With a Choice (found: figures() with it), the objectives it
    keeps, each without its aligned children (they are rows of their own) and with its kept key results only."""
    shown = cycle_details_json(cycle, now.date())
    stale = never_stale if shown["state"] == "finished" else stale_by_time(now)
    pace = pace_test([cycle], now.date())
    if choice:
        return chosen_page(db, found, choice, after, per_page, stale, pace)
    tops = report_rows.top_objectives(db, cycle["id"], after, per_page + 1, team_id, assignee_id)
    more, tops = len(tops) > per_page, tops[:per_page]
    roots, before = [], None
    if tops:
        objectives, key_results = report_rows.subtree_rows(db, cycle["id"], [row[1] for row in tops], team_id,
                                                           assignee_id)
        roots = alignment_tree(objectives, key_results, stale, pace,
                               hidden=visibility.hidden_around(db, cycle["id"]))[0]
        earlier = report_rows.top_objectives_before(db, cycle["id"], tops[0][0], per_page, team_id, assignee_id)
        if earlier:
            before = min(earlier) - 1 if len(earlier) == per_page else 0
    return {"objectives": roots, "after": tops[-1][0] if more else None, "before": before}


def chosen_page(db, found, choice, after, per_page, stale, pace):
    kept = found["kept"]
    start = next((number for number, (seq, _) in enumerate(kept) if seq > after), len(kept))
    chosen = kept[start:start + per_page]
    objectives, key_results = report_rows.objectives_rows(db, [objective_id for _, objective_id in chosen])
    # Each one a row of its own, its aligned children (if kept) rows of their own too.
    roots, _, _ = alignment_tree([{**row, "parent_objective_id": None} for row in objectives], key_results, stale,
                                 pace)
    for node in roots:
        node["progress"], node["progress_from"], node["status"] = found["objective"][node["id"]]
        named = choice.named(node)
        node["key_results"] = [k for k in node["key_results"] if choice.keeps(k, named)]
    before = None
    if start > 0:
        before = kept[start - per_page - 1][0] if start > per_page else 0
    return {"objectives": roots, "after": chosen[-1][0] if start + per_page < len(kept) else None,
            "before": before}


def key_result_ids(nodes):
    """The ids of the key results of these report nodes and everything below them."""
    return [k["id"] for node in flattened(nodes) for k in node["key_results"]]
