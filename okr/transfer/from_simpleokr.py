"""Importing from a Simple OKR API: users, teams, cycles, objectives and key results, by id, into a database.

The core of `okr import-simpleokr` (okr/cli/import_simpleokr.py is its command line).
It reads the source through okr.transfer.api_client (signed requests, retries) a page at a
time, and writes to an open SQLite connection, never through Flask: every row
is checked by okr.transfer.rows' checked_record (the API's own marshmallow schemas,
as okr import checks a file) and written by okr.store.bulk's upserts, so that the
rules for a row live in one place.

What a run does:

- Users, teams and cycles, page by page; then every cycle's objectives, read
  whole before any is written; then cycle by cycle its key results, page by
  page. A page (of objectives, a batch of 500 or more) is written in one
  transaction, taken once it has arrived, so no lock is held while waiting on
  the network; each row in a savepoint: a bad row is rolled back alone and
  reported, the others go in.
- Rows are written in the source's list order, so the lists here come out in
  the same order (a list is in creation order). A child objective may come
  before its parent (in its cycle or an earlier one): foreign keys are then
  checked at the batch's commit, and a batch only ends where no objective in
  it still waits for its parent. So every commit leaves each objective with its
  parent, each key result with its objective: what a failed run leaves is
  consistent, and a rerun completes it.
- A row is created when its id is new here, updated when any field differs from
  the stored row (its created_at aside: it never changes; its revision, hence
  its ETag, moves past the stored one), and left alone otherwise. A row here
  that the source lacks is kept: nothing is deleted.
- A row fails, with its id and the reason, when the API's schemas refuse it
  (okr.transfer.rows.checked_record), when the database refuses it (an email that
  is another user's under the email rule of okr.rules.email_addresses), when a row it refers to failed
  or exists neither in the source nor here, or when its alignment is a loop.
  A parent objective the source does not list is taken when it exists here.
- A key result gets a check-in from its value, as the API records one: on
  creation (its first, the start of its progress) and whenever an update moves
  its current_value or confidence. It is dated the key result's modified_at,
  when the source set that value.
- A cycle closed here is locked (okr.store.locks): before writing anything, a
  run reads that cycle, its objectives and its key results from the source,
  and stops, naming the cycle, when any of them is new or differs from what is
  stored. A row the source has moved out of a closed cycle (listed under
  another cycle) fails alone, with the same words.
- A dry run does all of this on a private copy of the database, which it then
  deletes: the counts are the real run's, and the database is not touched.

Memory: the objectives of every cycle are held while they are planned (about
a kilobyte each); users, teams, cycles and key results a page at a time.
"""
import hashlib
import os
import re
import sqlite3
import urllib.parse
from contextlib import closing
from datetime import datetime, timezone

from ..clock import new_id
from ..rules import names
from ..rules.email_addresses import RULE_WORDS
from ..rules.ids import UUID_PATTERN
from ..store import bulk, locks, sections, users
from ..store import objectives as stored_objectives
from ..store.bulk import NOT_GIVEN, OPTIONAL
from ..store.schema import connect, migrate
from ..store.scratch import remove_leftovers, scratch_folder
from .api_client import ApiError
from .rows import FIELDS, NULLABLE, SINGULAR, Refusal, checked_record, closed_refusal

RESOURCES = ("users", "teams", "cycles", "objectives", "key_results")
OUTCOMES = ("created", "updated", "unchanged", "failed")
# What the source lists each resource as: path and the key of the page's array.
LISTS = {
    "users": ("/v1/users", "users"),
    "teams": ("/v1/teams", "teams"),
    "cycles": ("/v1/cycles", "cycles"),
    "objectives": ("/v1/objectives", "objectives"),
    "key_results": ("/v1/keyresults", "keyresults"),
}
# An RFC 3339 time with any offset and fraction; stored in UTC to the second, as this service keeps times.
RFC3339 = re.compile(r"(\d{4}-\d\d-\d\d)[Tt ](\d\d:\d\d:\d\d)(\.\d+)?([Zz]|[+-]\d\d:\d\d)")
UUID_ANY_CASE = re.compile(UUID_PATTERN, re.IGNORECASE)
# Where each objective row keeps its parent, and the rows each row refers to: (field, resource).
PARENT = FIELDS["objectives"].index("parent_objective_id")
REFERENCES = {
    "objectives": (("cycle_id", "cycles"), ("team_id", "teams"), ("assignee_id", "users"),
                   ("parent_objective_id", "objectives")),
    "key_results": (("objective_id", "objectives"),),
}
# Text shown on pages and terminals; a control character there (ESC above all) is refused, tab and newline aside.
TEXT_FIELDS = ("name", "email")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
OBJECTIVES_BATCH = 500  # objectives to a transaction, at least
# A source that never stops paging is cut off here (10 million rows at 100 a page), or sooner by a repeated token.
MAX_PAGES = 100_000
# A page token is a short opaque text (this service's are a few bytes); the ones seen are kept as digests.
MAX_TOKEN = 4096


class SourceError(Exception):
    """The source cannot be read (unreachable, refused, or not this API), in one line; `result` holds
    what the run had done by then, all of it written whole."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result


class Result:
    """Per resource, how many rows were created, updated, unchanged and failed; the failures' ids and
    reasons; and (for a dry run's report) the fields each update changes."""

    def __init__(self, dry_run=False):
        self.dry_run = dry_run
        self.counts = {name: dict.fromkeys(OUTCOMES, 0) for name in RESOURCES}
        self.failures = []  # (resource, id, reason), in the order they happened
        self.updates = []  # (resource, id, [changed fields])
        self.complete = False

    def as_json(self):
        return {
            "dry_run": self.dry_run, "complete": self.complete,
            **{name: dict(counts) for name, counts in self.counts.items()},
            "failed": [{"resource": name, "id": row_id, "reason": reason} for name, row_id, reason in self.failures],
            "updated": [{"resource": name, "id": row_id, "fields": fields} for name, row_id, fields in self.updates],
        }


def canonical_time(value):
    """An RFC 3339 time as this service stores it (UTC, to the second); the value itself when it is not one."""
    if not isinstance(value, str):
        return value
    match = RFC3339.fullmatch(value)
    if not match:
        return value
    date, time, _fraction, offset = match.groups()
    try:
        moment = datetime.fromisoformat(f"{date}T{time}{'+00:00' if offset in 'Zz' else offset}")
    except ValueError:
        return value  # February 30th: checked_record names it
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def as_record(name, item):
    """A source object as okr.transfer's record of the resource: its fields, revision 0 (moved on update).

    A nullable field the source leaves out is null; other missing fields are
    refused; fields this service does not keep (a key result's cycle_id) are
    ignored. UUIDs are lowercased, times brought to UTC to the second.
    """
    # Simple OKR has no roles: a new user gets the default one (editor), a stored one keeps theirs.
    fields = [field for field in FIELDS[name] if field != "revision" and field not in OPTIONAL.get(name, ())]
    missing = [field for field in fields if field not in item and field not in NULLABLE]
    if missing:
        raise Refusal(f"missing field{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    record = {field: item.get(field) for field in fields}
    for field in TEXT_FIELDS:
        control = CONTROL.search(record[field]) if isinstance(record.get(field), str) else None
        if control:
            raise Refusal(f"{field}: holds the control character U+{ord(control.group()):04X}")
    for field, value in record.items():
        if field == "id" or field.endswith("_id"):
            record[field] = lower_uuid(value)
        elif field in ("created_at", "modified_at"):
            record[field] = canonical_time(value)
    if name == "users" and isinstance(record.get("name"), str):
        # A person's name here holds no control character (okr.rules.names); the source's may: copied on one
        # line, rather than the person refused and everything assigned to them with them.
        record["name"] = names.one_line(record["name"]) or record["name"]
    record["revision"] = 0
    return record


def item_id(item):
    """A source object's id as reported (lowercased when it is a UUID), or a stand-in when it has none."""
    value = item.get("id") if isinstance(item, dict) else None
    if isinstance(value, str) and value:
        return lower_uuid(value)
    return "(no id)"


def lower_uuid(value):
    """value lowercased when it is a UUID in any case, as this service writes ids; else as it is."""
    return value.lower() if isinstance(value, str) and UUID_ANY_CASE.fullmatch(value) else value


def token_digest(token):
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class Source:
    """The source's lists, a page at a time, each answer's shape checked; SourceError for what stops a run."""

    def __init__(self, client):
        self.client = client
        self.requests = 0

    def pages(self, name, **params):
        """Yields each page's list of objects."""
        path, key = LISTS[name]
        token, seen = None, set()
        for _ in range(MAX_PAGES):
            query = dict(params, page_token=token) if token else params
            page = self.get(path, query)
            if not isinstance(page, dict) or not isinstance(page.get(key), list):
                raise SourceError(f"{self.where(path)} does not answer like a Simple OKR API: "
                                  f"its answer has no {key!r} list")
            for index, item in enumerate(page[key]):
                if not isinstance(item, dict):
                    raise SourceError(f"{self.where(path)} does not answer like a Simple OKR API: item {index} "
                                      f"of its {key!r} list is not an object")
            yield page[key]
            token = page.get("next_page_token")
            if token is None or token == "":
                return
            if not isinstance(token, str) or len(token) > MAX_TOKEN or token_digest(token) in seen:
                raise SourceError(f"{self.where(path)} does not answer like a Simple OKR API: "
                                  f"its next_page_token {token[:100]!r} is not a new page's")
            seen.add(token_digest(token))
        raise SourceError(f"{self.where(path)} never stops paging: {MAX_PAGES:,} pages read")

    def where(self, path):
        return f"{self.client.base_url.rstrip('/')}{path}"

    def get(self, path, params):
        self.requests += 1
        try:
            return self.client.request("GET", path, params=params or None)
        except ApiError as error:
            raise SourceError(self.problem(path, error)) from None

    def problem(self, path, error):
        where = self.where(path)
        if error.status is None:
            return f"cannot read {where}: {error.message}"
        if error.status == 401:
            return (f"{where} refused the credentials (401: {error.message}); check --credential and --secret "
                    "(or OKR_CREDENTIAL and OKR_SECRET)")
        if error.status == 403:
            return f"{where} refused access (403: {error.message})"
        if error.status == 404 or 200 <= error.status < 300:
            return f"{where} does not answer like a Simple OKR API ({error.status}: {error.message})"
        return f"{where} failed: {error}"


class RowRefused(Exception):
    """A row the database refused while its batch was being written: the batch is written again without it."""

    def __init__(self, name, row_id, reason):
        super().__init__(reason)
        self.name, self.row_id, self.reason = name, row_id, reason


class Importer:
    """One run into an open database (an autocommit connection: it takes its own transactions)."""

    def __init__(self, db, source, result, progress=None, batch=None):
        self.db, self.source, self.result = db, source, result
        self.batch = batch or OBJECTIVES_BATCH
        self.progress = progress or (lambda **event: None)
        self.failed = {name: {} for name in RESOURCES}  # id -> reason, for rows failed in this run
        self.closed = {}  # the cycles closed here, by id: nothing in them may change

    # --- the run

    def run(self):
        self.closed = locks.closed_cycles(self.db)
        if self.closed:
            self.require_closed_unchanged()
        cycles = []
        for name in ("users", "teams", "cycles"):
            self.progress(stage=name)
            for page in self.source.pages(name):
                self.write_page(name, page)
                if name == "cycles":
                    cycles += [item_id(item) for item in page if isinstance(item, dict)]
        # Every cycle's objectives are read before any is written: a child may be listed before its
        # parent, in another cycle too, and both are written in the source's order all the same.
        self.progress(stage="objectives")
        objectives = []
        for cycle_id in cycles:
            for page in self.source.pages("objectives", cycle_id=cycle_id):
                objectives += [self.checked("objectives", item) for item in page]
                self.progress(stage="page", resource="objectives", rows=len(page))
        self.write_objectives(objectives)
        del objectives
        for position, cycle_id in enumerate(cycles, 1):
            self.progress(stage="cycle", position=position, total=len(cycles))
            for page in self.source.pages("key_results", cycle_id=cycle_id):
                self.write_page("key_results", page)
        self.result.complete = True

    def require_closed_unchanged(self):
        """SourceError naming the cycle, before anything is written, when the source would change anything in a
        cycle closed here: the cycle itself, or an objective or key result it lists in it (new or different)."""
        listed = []  # closed here and listed by the source: a cycle only here has nothing to compare
        for page in self.source.pages("cycles"):
            for item in page:
                if item_id(item) in self.closed:
                    self.require_unchanged("cycles", item, item_id(item))
                    listed.append(item_id(item))
        for cycle_id in listed:
            for name in ("objectives", "key_results"):
                for page in self.source.pages(name, cycle_id=cycle_id):
                    for item in page:
                        self.require_unchanged(name, item, cycle_id)

    def require_unchanged(self, name, item, cycle_id):
        row_id, values, reason = self.checked(name, item)
        if reason:
            return  # the run reports it as a failed row, and writes nothing of it
        stored = sections.stored(self.db, name, row_id)
        if stored is None or self.differs(name, dict(zip(FIELDS[name], values)), stored):
            what = "changes" if stored is not None else "adds"
            raise SourceError(f"{closed_refusal(self.closed[cycle_id])} (the source {what} {SINGULAR[name]} "
                              f"{row_id} in it): nothing imported")

    def checked(self, name, item):
        """(id, the row's values as stored, None) for a source object the API's schemas take; (id, None, why)
        for one they refuse."""
        row_id = item_id(item)
        try:
            if not isinstance(item, dict):
                raise Refusal("not a JSON object")
            return row_id, checked_record(name, as_record(name, item)), None
        except Refusal as refusal:
            return row_id, None, str(refusal)

    def write_page(self, name, page):
        """Users, teams, cycles or key results: a page in one transaction, a row in one savepoint."""
        outcomes = []
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for item in page:
                row_id, values, reason = self.checked(name, item)
                reason = reason or self.missing_reference(name, dict(zip(FIELDS[name], values)))
                if not reason:
                    try:
                        outcomes.append((name, row_id, *self.saved(name, values)))
                        continue
                    except RowRefused as refused:
                        reason = refused.reason
                outcomes.append((name, row_id, "failed", reason))
            self.db.execute("COMMIT")
        finally:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
        self.count(outcomes)
        self.progress(stage="page", resource=name, rows=len(page))

    def count(self, outcomes):
        """Counts what a committed transaction did."""
        for name, row_id, outcome, detail in outcomes:
            self.result.counts[name][outcome] += 1
            if outcome == "failed":
                self.failed[name][row_id] = detail
                self.result.failures.append((name, row_id, detail))
            elif outcome == "updated":
                self.result.updates.append((name, row_id, detail))

    # --- objectives: planned whole, then written in the source's order

    def write_objectives(self, objectives):
        """Fails what cannot be taken (refused, a reference that failed or is nowhere, a loop), then writes
        the rest in order, a batch to a transaction: a batch ends only where no row in it waits for a
        parent further down, so every commit leaves each objective with its parent."""
        seen = set()  # a row the source lists twice is taken once, where it first came
        objectives[:] = [entry for entry in objectives if not (entry[0] in seen or seen.add(entry[0]))]
        where = {row_id: position for position, (row_id, values, _) in enumerate(objectives) if values is not None}
        reasons = self.plan(objectives, where)
        self.progress(stage="writing", resource="objectives", rows=len(objectives))
        start = 0
        while start < len(objectives):
            end, reach = start, start
            while end < len(objectives) and (end - start < self.batch or end <= reach):
                row_id, values, _ = objectives[end]
                parent = values[PARENT] if values else None
                if row_id not in reasons and parent in where:
                    reach = max(reach, where[parent])
                end += 1
            self.write_objective_batch(objectives, start, end, where, reasons)
            start = end

    def plan(self, objectives, where):
        """id -> why, for every objective that cannot be taken; follows parents up the source's own list."""
        reasons, listed = {}, {row_id for row_id, _, _ in objectives}
        for row_id, values, reason in objectives:
            if reason:
                reasons[row_id] = reason
            else:
                row = dict(zip(FIELDS["objectives"], values))
                reason = self.missing_reference("objectives", row, source_parents=listed)
                if reason:
                    reasons[row_id] = reason
        parents = {row_id: values[PARENT] for row_id, values, _ in objectives if values is not None}
        parents.update({row_id: None for row_id, values, _ in objectives if values is None})
        settled = set()
        for start in parents:
            path, node = [], start
            while node in parents and node not in settled and node not in path and node not in reasons:
                path.append(node)
                node = parents[node]
            if node in path:  # a loop in the source's alignment
                loop = path[path.index(node):]
                for member in loop:
                    reasons[member] = "parent_objective_id makes the alignment a loop"
                path = path[:path.index(node)]
                node = loop[0]
            if node in reasons:  # everything below a failed objective fails with it
                for child in reversed(path):
                    reasons[child] = f"parent_objective_id {parents[child]}: that objective was not imported"
            settled.update(path)
        return reasons

    def write_objective_batch(self, objectives, start, end, where, reasons):
        while True:
            outcomes = []
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute("PRAGMA defer_foreign_keys = ON")  # a parent may come later in the batch
                for row_id, values, _ in objectives[start:end]:
                    if row_id in reasons:
                        outcomes.append(("objectives", row_id, "failed", reasons[row_id]))
                    else:
                        outcomes.append(("objectives", row_id, *self.saved("objectives", values)))
                self.db.execute("COMMIT")
            except RowRefused as refused:
                # Its children in this batch may be written already: write the batch again without them.
                self.db.execute("ROLLBACK")
                reasons[refused.row_id] = refused.reason
                self.fail_descendants(objectives, reasons)
                continue
            finally:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
            self.count(outcomes)
            return

    def fail_descendants(self, objectives, reasons):
        grew = True
        while grew:
            grew = False
            for row_id, values, _ in objectives:
                if values is not None and row_id not in reasons and values[PARENT] in reasons:
                    reasons[row_id] = f"parent_objective_id {values[PARENT]}: that objective was not imported"
                    grew = True

    # --- one row

    def saved(self, name, values):
        """Writes one checked row in a savepoint: (outcome, the fields that differ); RowRefused if the
        database refuses it."""
        row = dict(zip(FIELDS[name], values))
        self.db.execute("SAVEPOINT import_row")
        try:
            outcome = self.upsert(name, row, values)
        except (Refusal, sqlite3.IntegrityError) as problem:
            self.db.execute("ROLLBACK TO import_row")
            self.db.execute("RELEASE import_row")
            reason = str(problem) if isinstance(problem, Refusal) else f"the database refuses it: {problem}"
            closed = [cycle_id for cycle_id in sections.cycles_of(self.db, name, row) if cycle_id in self.closed]
            if closed:  # moved in or out of a closed cycle: schema.sql's triggers refused it
                reason = str(closed_refusal(self.closed[closed[0]]))
            raise RowRefused(name, row["id"], reason) from None
        self.db.execute("RELEASE import_row")
        return outcome

    def upsert(self, name, row, values):
        """Creates or updates the row when it differs from the stored one; ("created" | "updated" |
        "unchanged", the fields that differ)."""
        stored = sections.stored(self.db, name, row["id"])
        if name == "users":
            holder = users.other_with_email(self.db, row["email"], row["id"])
            if holder:
                raise Refusal(f"email {row['email']} is user {holder}'s here: emails are one user "
                              f"{RULE_WORDS}")
        if stored is None:
            bulk.write_row(self.db, name, values)
            if name == "key_results":
                self.check_in(row)
            return "created", []
        changed = self.differs(name, row, stored)
        if not changed:
            return "unchanged", []
        bulk.write_row(self.db, name, values)
        if name == "key_results" and ("current_value" in changed or "confidence" in changed):
            self.check_in(row)
        return "updated", changed

    @staticmethod
    def differs(name, row, stored):
        """The fields whose value the row would change in the stored one; none when only modified_at would (a
        change made here since, such as closing its cycle, stamped the stored row after the source's)."""
        # created_at never changes; revision is this database's own count.
        fields = [field for field in FIELDS[name] if field not in ("id", "created_at", "revision")
                  and row[field] is not NOT_GIVEN and stored[field] != row[field]]
        return [] if fields == ["modified_at"] else fields

    def check_in(self, row):
        """The check-in the API records when a key result is created or its value moves."""
        bulk.add_checkin(self.db, {"id": new_id(), "key_result_id": row["id"], "value": row["current_value"],
                                   "confidence": row["confidence"], "comment": None, "author_id": None,
                                   "created_at": row["modified_at"]})

    def missing_reference(self, name, row, source_parents=()):
        """Why a row cannot be taken for a row it refers to, or None. A parent objective the source lists
        is planned with it (source_parents); any other must exist here, without making a loop."""
        for field, target in REFERENCES.get(name, ()):
            value = row[field]
            if value is None or (field == "parent_objective_id" and value in source_parents):
                continue
            if value in self.failed[target]:
                return f"{field} {value}: that {SINGULAR[target]} was not imported"
            if not sections.exists(self.db, target, value):
                return (f"{field} {value} does not exist: neither the source nor this database has that "
                        f"{SINGULAR[target]}")
            if field == "parent_objective_id" and self.loops(row):
                return "parent_objective_id makes the alignment a loop"
        return None

    def loops(self, row):
        """True when the chain of parents above the row's parent, as stored here, comes back to the row."""
        node, seen = row["parent_objective_id"], set()
        while node is not None and node not in seen:
            if node == row["id"]:
                return True
            seen.add(node)
            node = stored_objectives.parent_id_of(self.db, node)
        return False


def run(db, client, result, progress=None):
    """Imports from the client's source into db; SourceError (with result) when the source stops it."""
    importer = Importer(db, Source(client), result, progress)
    try:
        importer.run()
    except SourceError as error:
        error.result = result
        raise
    return result


def import_simpleokr(database, client, *, dry_run=False, busy_timeout_ms=5000, schema=None, progress=None):
    """Imports a Simple OKR API's data into the database file (which must exist, with this release's schema,
    unless dry_run, which works on a migrated private copy and writes nothing). Returns a Result."""
    result = Result(dry_run)
    if not dry_run:
        with closing(connect(database, busy_timeout_ms)) as db:
            db.execute("PRAGMA cache_size = -16384")
            return run(db, client, result, progress)
    # The copy holds every key's secret: beside the database, private, gone after the run (or removed by the next).
    remove_leftovers(database, ("dry-run",))
    with scratch_folder(database, "dry-run") as folder:
        copy = os.path.join(folder, "copy.db")
        # Read-write but only read: read-only would leave -wal and -shm files behind; this closes without a trace.
        with closing(sqlite3.connect(f"file:{urllib.parse.quote(os.path.abspath(database))}?mode=rw", uri=True,
                                     timeout=busy_timeout_ms / 1000)) as original, \
                closing(sqlite3.connect(copy)) as target:
            original.backup(target)
        with closing(connect(copy, busy_timeout_ms)) as db:
            if schema is not None:
                migrate(db, schema)
            return run(db, client, result, progress)
