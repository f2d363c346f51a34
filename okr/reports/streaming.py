"""Big reports written as JSON to a file within a memory bound: the very bytes of okr.reports.alignment' dicts, compacted.

okr.reports.alignment builds a report as nested dicts, which a 100,000-objective cycle
makes over a gigabyte of (with its JSON text). Here the rows of the same
queries stream: each objective's own fields and each key result are encoded
as they come and appended to unnamed temporary files, and only what the tree
and the roll-up need stays in memory, in lists and arrays (each objective's
position, parent, cycle and running mean of its key results' progress; where
each text lies, and each objective's key results as a chain of positions).
Then the tree is walked and written out, each node's text read back from the
files, its rolled-up progress put in its place.

Knows neither SQL nor Flask: the rows stream from okr.store.reports' cursors, and encode is
the JSON encoder of one value, as compact as the API's (okr/reports/spooled.py makes it from the app's).
"""
import os
import tempfile
from array import array
from fractions import Fraction
from math import gcd

from .. import progress
from ..records import cycle_details_json, objective_details_json
from ..store import reports as report_rows
from ..store import visibility
from .alignment import (cycle_with_pace, key_result_node, never_stale, pace_in_any_cycle, pace_test, stale_by_time,
                        stale_test)

FLUSH_BYTES = 1 << 16
NO_RANK = len(progress.STATUSES)  # an objective without key results of its own


def write_cycle_report(db, cycle, now, out, encode, team_id=None, assignee_id=None):
    """Writes the JSON of okr.reports.alignment.cycle_report(db, cycle, now, ...) to the binary file out."""
    hidden = visibility.hidden_around(db, cycle["id"])
    objectives, key_results = report_rows.streamed_cycle_rows(db, cycle["id"], team_id, assignee_id)
    shown = cycle_details_json(cycle, now.date())
    stale = never_stale if shown["state"] == "finished" else stale_by_time(now)
    with Tree(encode) as tree:
        tree.read(objectives, key_results, stale, pace_test([cycle], now.date()), hidden=hidden)
        tree.roll_up()
        shown = cycle_with_pace(shown, cycle, now.date(), progress.status_counts(tree.key_result_statuses))
        hidden_count = sum(tree.hide)
        out.write((f'{{"cycle":{encode(shown)},"progress":{encode(progress.mean_figure(tree.own))},'
                   f'"objectives_count":{len(tree.own) - hidden_count},'
                   f'"key_results_count":{tree.key_results_count},"hidden_objectives_count":{hidden_count},'
                   '"objectives":').encode())
        tree.write(out, tree.roots)
        out.write(b"}")


def write_objective_report(db, objective_id, now, out, encode):
    """Writes the JSON of okr.reports.alignment.objective_report(db, objective_id, now) to the binary file out; False
    (writing nothing) when the objective is missing."""
    with Tree(encode) as tree:
        tree.read(*report_rows.streamed_objective_tree(db, objective_id), stale_test(db, now),
                  pace_in_any_cycle(db, now), root_id=objective_id, hidden=visibility.hidden_ids(db))
        if not tree.own:
            return False
        tree.roll_up()
        out.write(b'{"objective":')
        tree.write(out, tree.roots[:1], bare=True)
        out.write(f',"hidden_objectives_count":{sum(tree.hide[1:])}}}'.encode())
        return True


class Means:
    """Running weighted means of Fractions, one per position, as okr.progress.mean finds them (numerator and
    denominator summed, reduced at each step): the same Fraction, without keeping the values."""

    def __init__(self):
        self.tops, self.bottoms, self.counts = [], [], array("l")

    def append(self):
        self.tops.append(0)
        self.bottoms.append(1)
        self.counts.append(0)

    def add(self, position, value, weight=1):
        if value is None or not weight:
            return
        top = self.tops[position] * value.denominator + weight * value.numerator * self.bottoms[position]
        bottom = self.bottoms[position] * value.denominator
        common = gcd(top, bottom)
        self.tops[position], self.bottoms[position] = top // common, bottom // common
        self.counts[position] += weight

    def mean(self, position):
        count = self.counts[position]
        return Fraction(self.tops[position], self.bottoms[position] * count) if count else None


# Between two objects of a list of flat objects whose first field is "id", as the encoder writes it: never
# inside a string, where every quote is escaped ({\"), nor inside a UTF-8 character (all ASCII).
NEXT_OBJECT = b',{"id":'
BATCH = 256


class Texts:
    """Dicts encoded a batch at a time (one encoder call per batch: per dict, the call costs as much as the
    encoding) and appended to a file; each one's start and end go to spans."""

    def __init__(self, file, encode, spans, strip=0):
        self.file, self.encode, self.spans, self.strip = file, encode, spans, strip
        self.size, self.batch = 0, []

    def add(self, value):
        self.batch.append(value)
        if len(self.batch) >= BATCH:
            self.flush()

    def flush(self):
        if not self.batch:
            return
        data = self.encode(self.batch).encode()
        pieces = data[1:-1].split(NEXT_OBJECT)
        if len(pieces) != len(self.batch):  # a dict whose first field is not "id": a bug
            raise RuntimeError("a report's objects did not split apart")
        start, spans, strip = self.size, self.spans, self.strip
        for number, piece in enumerate(pieces):
            length = len(piece) + (len(NEXT_OBJECT) - 1 if number else 0)  # the comma is not the object's
            spans.append(start)
            spans.append(start + length - strip)
            start += length + 1
        self.file.write(data[1:-1] + b",")  # the comma: as between two objects of one batch
        self.size = start
        self.batch = []
        self.file.flush()


class Tree:
    """A report's objectives and key results, their text in temporary files, and what the tree needs in memory."""

    def __init__(self, encode):
        self.encode = encode
        self.objective_file, self.key_result_file = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self.index = {}  # objective id: its position in creation order
        self.parents, self.cycles = [], []
        # Where each objective's text starts and ends in objective_file; the same for each key result.
        self.objective_ends, self.key_result_ends = array("q"), array("q")
        # Each objective's key results, in creation order: the first's and the last's positions, and after each
        # key result the next one's (-1: none).
        self.first, self.last, self.next = array("q"), array("q"), array("q")
        self.means = Means()
        # The rank (okr.progress.RANK) of the worst status among each objective's key results (NO_RANK: none),
        # and every key result's status, in reading order.
        self.worst, self.key_result_statuses = array("b"), []
        # Whether each objective is hidden from the viewer (counted, not shown), and how many key results are not.
        self.hide, self.shown_key_results = bytearray(), 0
        self.own = self.roots = self.children = self.rolled = self.sources = self.statuses = None

    @property
    def key_results_count(self):
        return self.shown_key_results

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.objective_file.close()
        self.key_result_file.close()

    def read(self, objectives, key_results, stale, pace, root_id=None, hidden=frozenset()):
        """Reads the objectives, then the key results, each in creation order; those objectives whose ids are in
        hidden count in the figures, and are pruned from the tree (okr.reports.alignment.pruned)."""
        cycles = {}
        objective_texts = Texts(self.objective_file, self.encode, self.objective_ends, strip=1)
        for row in objectives:
            self.index[row["id"]] = len(self.parents)
            self.parents.append(None if row["id"] == root_id else row["parent_objective_id"])
            self.cycles.append(cycles.setdefault(row["cycle_id"], row["cycle_id"]))
            self.hide.append(row["id"] in hidden)
            # without its closing brace: more fields follow
            objective_texts.add(objective_details_json(visibility.shown_among(row, hidden)))
            self.first.append(-1)
            self.last.append(-1)
            self.worst.append(NO_RANK)
            self.means.append()
        objective_texts.flush()
        key_result_texts = Texts(self.key_result_file, self.encode, self.key_result_ends)
        index, first, last, chain, means = self.index, self.first, self.last, self.next, self.means
        worst, statuses, rank, hide = self.worst, self.key_result_statuses, progress.RANK, self.hide
        for row in key_results:
            node, value = key_result_node(row, stale, pace)
            key_result_texts.add(node)
            position, objective = len(chain), index[row["objective_id"]]
            if not hide[objective]:
                statuses.append(node["status"])
                self.shown_key_results += 1
            chain.append(-1)
            if first[objective] < 0:
                first[objective] = position
            else:
                chain[last[objective]] = position
            last[objective] = position
            means.add(objective, value, row["weight"])
            worst[objective] = min(worst[objective], rank[node["status"]])
        key_result_texts.flush()
        self.own = [means.mean(position) for position in range(len(self.parents))]
        self.means = None

    def roll_up(self):
        """Finds the roots and each objective's children, in creation order, and each one's rolled-up progress
        and its source, and each one's status (okr.reports.alignment.roll_up)."""
        count = len(self.own)
        self.roots, self.children = roots, children = [], [None] * count
        for position, parent in enumerate(self.parents):
            above = self.index.get(parent) if parent is not None else None
            if above is None:
                roots.append(position)
            elif children[above] is None:
                children[above] = [position]
            else:
                children[above].append(position)
        self.index = self.parents = None  # no longer needed
        order, stack = [], list(roots)
        while stack:
            position = stack.pop()
            order.append(position)
            stack.extend(children[position] or ())
        self.rolled = rolled = [None] * count
        self.sources = sources = [None] * count
        self.statuses = statuses = [None] * count
        cycles, first, worst = self.cycles, self.first, self.worst
        for position in reversed(order):  # every child before its parent
            kin = [kid for kid in children[position] or () if cycles[kid] == cycles[position]]
            rolled[position], sources[position] = progress.rolled_up(
                self.own[position], first[position] >= 0, [rolled[kid] for kid in kin])
            own = () if worst[position] == NO_RANK else (progress.STATUSES[worst[position]],)
            statuses[position] = progress.objective_status(own, (statuses[kid] for kid in kin))
        if any(self.hide):
            self.prune()

    def prune(self):
        """Leaves the hidden objectives out of roots and children: a hidden one's children take its place, under
        its nearest ancestor the viewer sees (or as roots), in okr.reports.alignment.pruned's order."""
        hide, children = self.hide, self.children
        roots, kept = [], [None] * len(children)
        stack = [(self.roots, None)]
        while stack:
            positions, into = stack.pop()
            for position in positions:
                if hide[position]:
                    stack.append((children[position] or (), into))
                    continue
                if into is None:
                    roots.append(position)
                elif kept[into] is None:
                    kept[into] = [position]
                else:
                    kept[into].append(position)
                stack.append((children[position] or (), position))
        self.roots, self.children = roots, kept

    def write(self, out, roots, bare=False):
        """Writes the JSON array of the nodes at roots with everything below them (bare: the one node at roots,
        not in an array)."""
        objective_fd, key_result_fd = self.objective_file.fileno(), self.key_result_file.fileno()
        objective_ends, key_result_ends, first, chain = self.objective_ends, self.key_result_ends, self.first, self.next
        children, rolled, sources, statuses = self.children, self.rolled, self.sources, self.statuses
        encoded = {}  # a figure or a source: its JSON, as bytes (a few hundred different ones)

        def encode(value):
            if value not in encoded:
                encoded[value] = self.encode(value).encode()
            return encoded[value]

        chunks, size = [] if bare else [b"["], 1
        # One iterator of positions per open array, the innermost last; each node's text is written when it
        # is reached, and its children's array and its brace closed once they are all written.
        stack, opened = [iter(roots)], [True]
        while stack:
            for position in stack[-1]:
                start, end = objective_ends[2 * position], objective_ends[2 * position + 1]
                text = os.pread(objective_fd, end - start, start)
                if not opened[-1]:
                    chunks.append(b",")
                opened[-1] = False
                chunks += (text, b',"progress":', encode(progress.figure(rolled[position])), b',"progress_from":',
                           encode(sources[position]), b',"status":', encode(statuses[position]),
                           b',"key_results":[')
                size += len(text) + 64
                key_result, comma = first[position], False
                while key_result >= 0:
                    start, end = key_result_ends[2 * key_result], key_result_ends[2 * key_result + 1]
                    text = os.pread(key_result_fd, end - start, start)
                    if comma:
                        chunks.append(b",")
                    chunks.append(text)
                    size += len(text)
                    comma, key_result = True, chain[key_result]
                chunks.append(b'],"children":[')
                if size >= FLUSH_BYTES:
                    out.write(b"".join(chunks))
                    chunks, size = [], 0
                kids = children[position]
                if kids:
                    stack.append(iter(kids))
                    opened.append(True)
                    break
                chunks.append(b"]}")
            else:
                stack.pop()
                opened.pop()
                chunks.append(b"]}" if stack else b"" if bare else b"]")
        out.write(b"".join(chunks))


def cycle_summary(db, cycle, now):
    """What the cycles list shows of a cycle's report: its progress and counts, and how many key results are at
    risk or off track, stale, or without an update; from the rows as they stream, with no tree (a big cycle's
    list entry costs its report's reading, not its memory)."""
    hidden = visibility.hidden_ids(db, cycle["id"])
    objectives, key_results = report_rows.streamed_cycle_rows(db, cycle["id"])
    shown = cycle_details_json(cycle, now.date())
    stale = never_stale if shown["state"] == "finished" else stale_by_time(now)
    index, means = {}, Means()
    pace = pace_test([cycle], now.date())
    for row in objectives:
        index[row["id"]] = len(index)
        means.append()
    at_risk = stale_count = waiting = count = 0
    statuses = []
    for row in key_results:
        node, value = key_result_node(row, stale, pace)
        means.add(index[row["objective_id"]], value, row["weight"])
        if row["objective_id"] in hidden:  # in the progress, not the counts
            continue
        statuses.append(node["status"])
        at_risk += node["status"] in ("at_risk", "off_track")
        waiting += node["status"] == "no_update"
        stale_count += node["stale"]
        count += 1
    own = [means.mean(position) for position in range(len(index))]
    shown = cycle_with_pace(shown, cycle, now.date(), progress.status_counts(statuses))
    return {"cycle": shown, "progress": progress.mean_figure(own), "objectives_count": len(own) - len(hidden),
            "hidden_objectives_count": len(hidden), "key_results_count": count, "at_risk": at_risk, "stale": stale_count, "no_update": waiting}
