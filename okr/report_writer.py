"""Big reports written as JSON to a file within a memory bound: the very bytes of okr.reports' dicts, compacted.

okr.reports builds a report as nested dicts, which a 100,000-objective cycle
makes 400 MB of (and its JSON text as much again). Here rows stream from two
cursors, in the order of the objectives: each objective's own fields and its
key results are encoded at once and appended to an unnamed temporary file,
and only what the tree and the roll-up need stays in memory (each objective's
index, parent, cycle and exact progress, and where its text lies: about 300
bytes an objective). Then the tree is walked and written out, each node's text
read back from the file, with the rolled-up progress put in its place.

Knows SQL but not Flask: encode is the JSON encoder of one value, as compact as
the API's (okr/api/reports.py passes the app's own).
"""
import os
import tempfile
from array import array

from . import progress
from .records import cycle_details_json, objective_json
from .reports import DESCENDANTS, KEY_RESULTS_WITH_HISTORY, key_result_node, never_stale, stale_by_time, stale_test

# The key results of the objectives kept, objective by objective (in the objectives' order), each's in order:
# driven from the objectives, each objective's key results taken by key_results_by_objective (the unary +
# keeps SQLite from walking them by cycle instead), so nothing is sorted. okr/transfer/export.py does the same.
CYCLE_KEY_RESULTS = f"""
SELECT h.* FROM objectives o
CROSS JOIN ({KEY_RESULTS_WITH_HISTORY.format(where="+k.cycle_id = ?")}) h ON h.objective_id = o.id
WHERE {{kept}}
ORDER BY o.seq, h.seq
"""

OBJECTIVE_KEY_RESULTS = DESCENDANTS + f"""
SELECT h.* FROM objectives o
CROSS JOIN ({KEY_RESULTS_WITH_HISTORY.format(where="+k.objective_id IN tree")}) h ON h.objective_id = o.id
WHERE o.id IN tree
ORDER BY o.seq, h.seq
"""

FLUSH_BYTES = 1 << 16


def cycle_filter(cycle_id, team_id=None, assignee_id=None):
    """The condition on objectives o that a cycle report keeps, and its parameters."""
    conditions, params = ["o.cycle_id = ?"], [cycle_id]
    for column, value in (("team_id", team_id), ("assignee_id", assignee_id)):
        if value is not None:
            conditions.append(f"o.{column} = ?")
            params.append(value)
    return " AND ".join(conditions), params


def cycle_objective_count(db, cycle_id, team_id=None, assignee_id=None):
    """How many objectives a cycle report would show: one walk of an index."""
    kept, params = cycle_filter(cycle_id, team_id, assignee_id)
    return db.execute(f"SELECT count(*) FROM objectives o WHERE {kept}", params).fetchone()[0]


def descendant_count(db, objective_id):
    """How many objectives an objective report would show (0 when the objective is missing)."""
    return db.execute(DESCENDANTS + "SELECT count(*) FROM objectives WHERE id IN tree", (objective_id,)).fetchone()[0]


def write_cycle_report(db, cycle, now, out, encode, team_id=None, assignee_id=None):
    """Writes the JSON of okr.reports.cycle_report(db, cycle, now, ...) to the binary file out."""
    kept, params = cycle_filter(cycle["id"], team_id, assignee_id)
    shown = cycle_details_json(cycle, now.date())
    stale = never_stale if shown["state"] == "finished" else stale_by_time(now)
    with Tree(encode) as tree:
        tree.read(rows(db, f"SELECT * FROM objectives o WHERE {kept} ORDER BY o.seq", params),
                  rows(db, CYCLE_KEY_RESULTS.format(kept=kept), [cycle["id"], *params]), stale)
        tree.roll_up()
        out.write((f'{{"cycle":{encode(shown)},"progress":{encode(progress.mean_figure(tree.own))},'
                   f'"objectives_count":{len(tree.own)},"key_results_count":{tree.key_results_count},'
                   '"objectives":').encode())
        tree.write(out, tree.roots)
        out.write(b"}")


def write_objective_report(db, objective_id, now, out, encode):
    """Writes the JSON of okr.reports.objective_report(db, objective_id, now) to the binary file out; False
    (writing nothing) when the objective is missing."""
    with Tree(encode) as tree:
        tree.read(rows(db, DESCENDANTS + "SELECT * FROM objectives WHERE id IN tree ORDER BY seq", [objective_id]),
                  rows(db, OBJECTIVE_KEY_RESULTS, [objective_id]), stale_test(db, now), root_id=objective_id)
        if not tree.own:
            return False
        tree.roll_up()
        out.write(b'{"objective":')
        tree.write(out, tree.roots[:1], bare=True)
        out.write(b"}")
        return True


def rows(db, sql, params):
    """A query's rows as dicts (as okr.reports.dict_rows), one at a time."""
    cursor = db.cursor()
    cursor.row_factory = None
    cursor.execute(sql, params)
    names = [column[0] for column in cursor.description]
    for row in cursor:
        yield dict(zip(names, row))


class Tree:
    """A report's objectives, their text in a temporary file, and what the alignment tree needs in memory."""

    def __init__(self, encode):
        self.encode = encode
        self.file = tempfile.TemporaryFile()
        self.size = 0
        self.index = {}  # objective id: its position in creation order
        self.parents, self.cycles, self.own = [], [], []
        self.spans = array("q")  # per objective: where its text starts, its key results start, and both end
        self.key_results_count = 0
        self.roots, self.children, self.rolled = [], None, None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def put(self, text):
        data = text.encode()
        self.file.write(data)
        self.size += len(data)

    def read(self, objectives, key_results, stale, root_id=None):
        """Reads the objectives in creation order, and their key results objective by objective (in the
        same order), each's in creation order."""
        encode, cycles = self.encode, {}
        pending = next(key_results, None)
        for row in objectives:
            self.index[row["id"]] = len(self.own)
            self.parents.append(None if row["id"] == root_id else row["parent_objective_id"])
            self.cycles.append(cycles.setdefault(row["cycle_id"], row["cycle_id"]))
            start = self.size
            self.put(encode(objective_json(row))[:-1])  # without its closing brace: more fields follow
            middle, exact = self.size, []
            while pending is not None and pending["objective_id"] == row["id"]:
                node, value = key_result_node(pending, stale)
                self.put(("," if exact else "") + encode(node))
                exact.append(value)
                pending = next(key_results, None)
            self.spans.extend((start, middle, self.size))
            self.own.append(progress.mean(exact))
            self.key_results_count += len(exact)
        if pending is not None:  # the two queries disagree on the order: a bug, never a report short of rows
            raise RuntimeError("a key result came out of its objective's order")
        self.file.flush()

    def roll_up(self):
        """Finds the roots and each objective's children, in creation order, and each one's rolled-up progress
        and its source (okr.reports.roll_up)."""
        count = len(self.own)
        self.children = children = [None] * count
        for position, parent in enumerate(self.parents):
            above = self.index.get(parent) if parent is not None else None
            if above is None:
                self.roots.append(position)
            elif children[above] is None:
                children[above] = [position]
            else:
                children[above].append(position)
        self.index = self.parents = None  # no longer needed
        order, stack = [], list(self.roots)
        while stack:
            position = stack.pop()
            order.append(position)
            stack.extend(children[position] or ())
        self.rolled = rolled = [None] * count
        self.sources = sources = [None] * count
        spans, cycles = self.spans, self.cycles
        for position in reversed(order):  # every child before its parent
            kids = children[position] or ()
            rolled[position], sources[position] = progress.rolled_up(
                self.own[position], spans[3 * position + 2] > spans[3 * position + 1],
                [rolled[kid] for kid in kids if cycles[kid] == cycles[position]])

    def write(self, out, roots, bare=False):
        """Writes the JSON array of the nodes at roots with everything below them (bare: the one node at roots,
        not in an array)."""
        fd, spans, children, encode = self.file.fileno(), self.spans, self.children, self.encode
        chunks, size = [] if bare else [b"["], 1
        # One iterator of positions per open array, the innermost last; each node's text is written when it
        # is reached, and its children's array and its brace closed once they are all written.
        stack, first = [iter(roots)], [True]
        while stack:
            for position in stack[-1]:
                start, middle, end = spans[3 * position:3 * position + 3]
                text = os.pread(fd, end - start, start)
                figure = progress.figure(self.rolled[position])
                if not first[-1]:
                    chunks.append(b",")
                first[-1] = False
                chunks += (text[:middle - start], b',"progress":', encode(figure).encode(),
                           b',"progress_from":', encode(self.sources[position]).encode(), b',"key_results":[',
                           text[middle - start:], b'],"children":[')
                size += len(text) + 64
                if size >= FLUSH_BYTES:
                    out.write(b"".join(chunks))
                    chunks, size = [], 0
                kids = children[position]
                if kids:
                    stack.append(iter(kids))
                    first.append(True)
                    break
                chunks.append(b"]}")
            else:
                stack.pop()
                first.pop()
                chunks.append(b"]}" if stack else b"" if bare else b"]")
        out.write(b"".join(chunks))


def cycle_summary(db, cycle, now):
    """What the cycles list shows of a cycle's report: its progress and counts, and how many key results are at
    risk or off track, stale, or without an update; from the rows as they stream, with no tree (a big cycle's
    list entry costs its report's reading, not its memory)."""
    kept, params = cycle_filter(cycle["id"])
    shown = cycle_details_json(cycle, now.date())
    stale = never_stale if shown["state"] == "finished" else stale_by_time(now)
    key_results = rows(db, CYCLE_KEY_RESULTS.format(kept=kept), [cycle["id"], *params])
    own, at_risk, stale_count, waiting, count = [], 0, 0, 0, 0
    pending = next(key_results, None)
    for (objective_id,) in db.execute(f"SELECT o.id FROM objectives o WHERE {kept} ORDER BY o.seq", params):
        exact = []
        while pending is not None and pending["objective_id"] == objective_id:
            node, value = key_result_node(pending, stale)
            exact.append(value)
            at_risk += node["status"] in ("at_risk", "off_track")
            waiting += node["status"] == "no_update"
            stale_count += node["stale"]
            pending = next(key_results, None)
        own.append(progress.mean(exact))
        count += len(exact)
    return {"cycle": shown, "progress": progress.mean_figure(own), "objectives_count": len(own),
            "key_results_count": count, "at_risk": at_risk, "stale": stale_count, "no_update": waiting}
