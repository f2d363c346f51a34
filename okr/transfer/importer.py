"""okr import: an okr-export file checked whole, then written in the caller's transaction through okr.store.bulk."""
import json
import os
import sqlite3
import uuid

from ..rules.email_addresses import RULE_WORDS, email_key
from ..rules.ids import UUID_RE
from ..rules.strict_json import reject_constant, reject_duplicate_keys
from ..store import bulk, events, locks, objectives, sections, users
from ..store import database as database_rows
from .export import section_rows
from .json_stream import file_digest, records
from .rows import DATA_SECTIONS, FIELDS, NOT_GIVEN, PLURAL, SECTIONS, SINGULAR, Refusal, checked, closed_refusal


def contents(db):
    """What the database holds, in words ("2 users, 1 cycle"); "" when it is empty."""
    counts = database_rows.counts(db, DATA_SECTIONS)
    return ", ".join(f"{counts[name]} {SINGULAR[name] if counts[name] == 1 else PLURAL[name]}"
                     for name in DATA_SECTIONS if counts[name])


def compact(uuid_text):
    """A checked lowercase UUID's 16 bytes: 49 bytes of memory rather than the text's 85, for the ids a check keeps."""
    return bytes.fromhex(uuid_text.replace("-", ""))


def uuid_text(key):
    return str(uuid.UUID(bytes=key))


class Check:
    """The first pass: every record checked, every reference resolved; nothing written. db is the database
    written to (None: the records are a database's own rows, checked alone).

    It keeps the ids it has seen, in 16 bytes each, to resolve references: what
    an import holds in memory grows with the file's ids, not with its records
    (docs/design.md has the figures).
    """

    def __init__(self, db, merge):
        self.db, self.merge = db, merge
        # id -> index in its section (credential for API keys, team and user for team members); key results'
        # and events' ids alone, the bulk
        self.ids = {name: set() if name in ("key_results", "events") else {} for name in SECTIONS}
        self.emails = {}  # email_key -> index in users
        self.links = {}  # (oidc_issuer, oidc_subject) -> index in users
        self.parents = {}  # objective id -> its parent's id, or None
        self.forward = []  # (index, parent id) of parents not seen yet when checked
        self.carried = []  # (index, carried_from_id) of objectives carried from one not seen yet when checked

    def in_database(self, name, value):
        return self.merge and sections.exists(self.db, name, value)

    def exists(self, name, value):
        return compact(value) in self.ids[name] or self.in_database(name, value)

    def missing(self, where, field, value, name):
        place = "the file or the database" if self.merge else "the file"
        return Refusal(f"{where}: {field} {value} does not exist: no {SINGULAR[name]} in {place} has that id")

    def record(self, name, index, values):
        where = f"{name}[{index}]"
        row = dict(zip(FIELDS[name], values))
        if name == "api_keys":
            key, what = row["credential"], f"credential {row['credential']}"
        elif name == "team_members":
            key = compact(row["team_id"]) + compact(row["user_id"])
            what = f"user {row['user_id']}'s membership of team {row['team_id']}"
        else:
            key, what = compact(row["id"]), f"id {row['id']}"
        seen = self.ids[name]
        # Check-in ids are not kept: the database holds them without a unique index too.
        if name != "checkins":
            if key in seen:
                first = f" (first as {name}[{seen[key]}])" if isinstance(seen, dict) else " in the file"
                raise Refusal(f"{where}: {what} appears twice{first}")
            if isinstance(seen, dict):
                seen[key] = index
            else:
                seen.add(key)
        getattr(self, f"check_{name}")(where, index, row, key)

    def check_users(self, where, index, row, key):
        folded = email_key(row["email"])
        if folded in self.emails:
            raise Refusal(f"{where}: email {row['email']} is the same as users[{self.emails[folded]}]'s "
                          f"({RULE_WORDS})")
        self.emails[folded] = index
        if self.merge:
            holder = users.id_by_email_key(self.db, folded)
            if holder and holder != row["id"] and compact(holder) not in self.ids["users"]:
                raise Refusal(f"{where}: email {row['email']} belongs to another user in the database "
                              f"({holder})")
        self.check_link(where, index, row)

    def check_link(self, where, index, row):
        """Refuses an identity-provider link that two users would have. A merge never replaces a stored user's
        link (okr.store.bulk), so one that another user in the database holds is refused, whatever the file
        says of that user."""
        link = (row["oidc_issuer"], row["oidc_subject"])
        if link[1] in (None, NOT_GIVEN):
            return
        if link in self.links:
            raise Refusal(f"{where}: the identity provider's oidc_subject {link[1]} is users[{self.links[link]}]'s "
                          f"too (at {link[0]})")
        self.links[link] = index
        holder = self.merge and users.find_by_oidc_subject(self.db, *link)
        if holder and holder["id"] != row["id"]:
            raise Refusal(f"{where}: the identity provider's oidc_subject {link[1]} belongs to another user in the "
                          f"database ({holder['id']})")

    def check_teams(self, where, index, row, key):
        pass

    check_events = check_teams  # an event's ids name rows that may be gone: no references to resolve

    def check_cycles(self, where, index, row, key):
        if row["closed_by"] not in (None, NOT_GIVEN) and not self.exists("users", row["closed_by"]):
            raise self.missing(where, "closed_by", row["closed_by"], "users")

    def check_team_members(self, where, index, row, key):
        for field, name in (("team_id", "teams"), ("user_id", "users")):
            if not self.exists(name, row[field]):
                raise self.missing(where, field, row[field], name)

    def check_objectives(self, where, index, row, key):
        for field, name in (("cycle_id", "cycles"), ("team_id", "teams"), ("assignee_id", "users")):
            if row[field] is not None and not self.exists(name, row[field]):
                raise self.missing(where, field, row[field], name)
        parent = row["parent_objective_id"]
        self.parents[key] = None if parent is None else compact(parent)
        if parent is not None and not self.exists("objectives", parent):
            self.forward.append((index, parent))  # perhaps further down the file
        if row["created_by"] not in (None, NOT_GIVEN) and not self.exists("users", row["created_by"]):
            raise self.missing(where, "created_by", row["created_by"], "users")
        source = row["carried_from_id"]
        if source not in (None, NOT_GIVEN) and not self.exists("objectives", source):
            self.carried.append((index, source))  # likewise

    def check_key_results(self, where, index, row, key):
        if not self.exists("objectives", row["objective_id"]):
            raise self.missing(where, "objective_id", row["objective_id"], "objectives")

    def check_checkins(self, where, index, row, key):
        if not self.exists("key_results", row["key_result_id"]):
            raise self.missing(where, "key_result_id", row["key_result_id"], "key_results")
        if row["author_id"] is not None and not self.exists("users", row["author_id"]):
            raise self.missing(where, "author_id", row["author_id"], "users")

    def check_comments(self, where, index, row, key):
        for field, name in (("objective_id", "objectives"), ("key_result_id", "key_results"), ("author_id", "users")):
            if row[field] is not None and not self.exists(name, row[field]):
                raise self.missing(where, field, row[field], name)

    def check_initiatives(self, where, index, row, key):
        for field, name in (("key_result_id", "key_results"), ("owner_id", "users")):
            if row[field] is not None and not self.exists(name, row[field]):
                raise self.missing(where, field, row[field], name)

    def check_api_keys(self, where, index, row, key):
        if row["user_id"] not in (None, NOT_GIVEN) and not self.exists("users", row["user_id"]):
            raise self.missing(where, "user_id", row["user_id"], "users")
        if self.db is not None and not self.merge and sections.exists(self.db, "api_keys", row["credential"]):
            raise Refusal(f"{where}: an API key with credential {row['credential']} exists in the database; "
                          "pass --merge to update it")

    def section_done(self, name):
        if name == "objectives":
            for index, parent in self.forward:
                if compact(parent) not in self.parents:
                    raise self.missing(f"objectives[{index}]", "parent_objective_id", parent, "objectives")
            self.forward = []
            for index, source in self.carried:
                if compact(source) not in self.ids["objectives"]:
                    raise self.missing(f"objectives[{index}]", "carried_from_id", source, "objectives")
            self.carried = []
            self.check_loops()

    def parent_of(self, objective):
        if objective in self.parents:
            return self.parents[objective]
        parent = self.merge and objectives.parent_id_of(self.db, uuid_text(objective))
        return compact(parent) if parent and UUID_RE.fullmatch(parent) else None

    def check_loops(self):
        """Refuses a parent_objective_id that makes the alignment a loop, in the file or with the database."""
        clear = set()  # objectives whose chain ends
        for start in self.parents:
            path, node = set(), start
            while node is not None and node not in clear:
                if node in path:
                    culprit = node if node in self.ids["objectives"] else start
                    raise Refusal(f"objectives[{self.ids['objectives'][culprit]}]: parent_objective_id makes the "
                                  "alignment a loop")
                path.add(node)
                node = self.parent_of(node)
            clear |= path


def import_file(db, path, merge=False, include_keys=False):
    """Imports an okr-export file into db, inside the caller's write transaction (BEGIN IMMEDIATE).

    The whole file is read and checked first; only then is it read again and
    written. A user record without a role (format version 1) makes a new user
    an editor and leaves a stored user's role as it is; an API key without a
    user_id likewise. An import is refused when the database had an active
    admin and would have none after it. API keys are read, checked and written
    only with include_keys: otherwise a file's keys are passed over, and a
    merge leaves the database's keys as they are. Returns {section: {"added": n, "updated": n,
    "unchanged": n}}, and for api_keys passed over {"left_out": n}.
    Raises Refusal, with nothing written, when anything is wrong; the caller
    rolls back.

    The file's events (its "events" section, first in the file) are its rows' history: they are added as
    they are (an event already stored, by id, is left alone; none goes into a webhook's outbox: see
    okr.store.bulk.add_event), and the rows are written without events of their own, which would say each
    change twice. The import then records one event, data.imported, last: the file's name and SHA-256 (its
    resource_id) and the counts returned.
    """
    if not merge:
        held = contents(db)
        if held:
            raise Refusal(f"the database is not empty: it holds {held}; import into an empty database "
                          "(okr --database NEW.db init-db makes one), or pass --merge to add and update by id")
    check = Check(db, merge)
    hashes, current, canonical = [], None, True
    for name, index, record in records(path, hashes):
        if name == "api_keys" and not include_keys:
            continue
        if name != current:
            if current is not None:
                check.section_done(current)
            current = name
        values = checked(name, index, record)
        canonical = canonical and values == tuple(record.get(field, NOT_GIVEN) for field in FIELDS[name])
        check.record(name, index, values)
    if current is not None:
        check.section_done(current)
    # The check is done: write, reading the file again.
    had_an_admin = users.any_active_admin(db)
    db.execute("PRAGMA defer_foreign_keys = ON")  # a parent may come after its child; checked above
    counts = {name: {"added": 0, "updated": 0, "unchanged": 0} for name in SECTIONS}
    if not include_keys:
        counts["api_keys"] = {"left_out": 0}
    newest = {name: sections.newest_seq(db, name) for name in SECTIONS}
    closed = locks.closed_cycles(db) if merge else {}  # what may not change: an empty database has none
    closings = []  # how the file's cycles are closed, set once what is inside them is written
    written = []
    try:
        for name, index, record in records(path, written):
            if name == "api_keys" and not include_keys:
                counts[name]["left_out"] += 1
                continue
            # Values stored as the file has them need no second check: the file is the same (see below).
            values = (tuple(record.get(field, NOT_GIVEN) for field in FIELDS[name]) if canonical
                      else checked(name, index, record))
            if name == "cycles":
                values, closing = open_for_now(values)
            if closed and inside_closed(db, closed, name, index, values):
                seq = None  # the same as stored: nothing to write (schema.sql's triggers would refuse even that)
            else:
                seq = write(db, name, index, values, merge)
            outcome = "unchanged" if seq is None else "added" if seq > newest[name] else "updated"
            counts[name][outcome] += 1
            if name == "cycles" and closing is not None:
                closings.append((index, *closing, seq is not None))
    except (Refusal, KeyError, TypeError, sqlite3.Error):
        if file_digest(path) != hashes[0]:  # what failed was not what was checked
            raise Refusal("it changed while it was being imported") from None
        raise
    if written != hashes:
        raise Refusal("it changed while it was being imported")
    for index, cycle_id, closed_at, closed_by, revision, row_written in closings:
        if bulk.close_cycle(db, cycle_id, closed_at, closed_by, revision, row_written) is not None:
            if cycle_id in closed:  # reopened, or closed at another time, by the file
                raise Refusal(f"cycles[{index}]: {closed_refusal(closed[cycle_id])}")
            if not row_written:
                counts["cycles"]["unchanged"] -= 1
                counts["cycles"]["updated"] += 1
    events.place(db, newest["events"], keep_missing=True)
    if had_an_admin and not users.any_active_admin(db):
        # As okr.store.users keeps one: someone must be left to manage people.
        raise Refusal("it would leave no active admin: it demotes or deactivates every admin the database has; "
                      "give one of them role admin and is_active true in the file")
    # Its name, not its path: where the file was on this machine is no part of the data.
    events.record(db, "data", "imported", hashes[0], {"file": os.path.basename(path), "sha256": hashes[0],
                                                      "merge": merge, "counts": counts})
    return counts


def write(db, name, index, values, merge):
    """Writes one checked record: its seq when added or updated, None when left as it was."""
    try:
        if name == "events":
            return bulk.add_event(db, values)
        if name == "checkins":
            return bulk.add_checkin(db, dict(zip(FIELDS[name], values)), skip_recorded=merge, record=False)
        return bulk.write_row(db, name, values, new=not merge, record=False)
    except sqlite3.IntegrityError as error:
        raise Refusal(f"{name}[{index}]: the database refuses it: {error}") from None


CLOSED_AT, CLOSED_BY, CYCLE_REVISION = (FIELDS["cycles"].index(field) for field in ("closed_at", "closed_by",
                                                                                     "revision"))


def open_for_now(values):
    """A cycle's values to write first, without its closing (a stored row keeps its own, a new one is open: the
    rows inside it come after it in the file, and schema.sql's triggers refuse them in a closed cycle), and
    (id, closed_at, closed_by, revision) to set after them; None when the record does not say (an older format)."""
    closed_at, closed_by = values[CLOSED_AT], values[CLOSED_BY]
    if closed_at is NOT_GIVEN:
        return values, None
    opened = tuple(NOT_GIVEN if position in (CLOSED_AT, CLOSED_BY) else value for position, value in enumerate(values))
    return opened, (values[0], closed_at, None if closed_by is NOT_GIVEN else closed_by, values[CYCLE_REVISION])


def inside_closed(db, closed, name, index, values):
    """Whether the record is, or would be, inside a cycle closed in the database (closed: by id), holding what is
    stored; Refusal naming the cycle when it would change anything there: an import changes nothing in one."""
    row = dict(zip(FIELDS[name], values))
    touched = [cycle_id for cycle_id in sections.cycles_of(db, name, row) if cycle_id in closed]
    if not touched:
        return False
    if not sections.unchanged(db, name, row):
        raise Refusal(f"{name}[{index}]: {closed_refusal(closed[touched[0]])}")
    return True


STRICT_JSON = json.JSONDecoder(parse_constant=reject_constant, object_pairs_hook=reject_duplicate_keys)


def stored_events(db):
    """Yields the events table's rows as section_rows does, after checking that each one's actor, data and
    changes are JSON text exactly as okr.store.events writes it; Refusal naming the first that is not."""
    texts = [(index, field) for index, field in enumerate(FIELDS["events"]) if field in bulk.EVENT_JSON]
    for place, row in enumerate(sections.section_cursor(db, "events")):
        row = list(row)
        for index, field in texts:
            text = row[index]
            if text is None:
                continue  # changes may be null; an actor or data that is is refused by its check
            try:
                row[index] = STRICT_JSON.decode(text)
                proper = bulk.event_text(row[index])
            except (TypeError, ValueError, RecursionError):
                raise Refusal(f"events[{place}]: {field} is not JSON text okr can read: {str(text)[:100]!r}") from None
            if text != proper:
                raise Refusal(f"events[{place}]: {field} is stored as {text[:100]!r}, not as okr stores it "
                              f"({proper[:100]!r})")
        yield tuple(row)


def check_stored(db):
    """Checks every row of an open database (a backup about to be restored) as okr import checks a file's
    records, and that each is stored exactly as okr stores it; Refusal naming the first bad row. Events are
    checked too, as a file's are: the activity feed and the webhooks read them back."""
    check = Check(None, merge=False)
    for name in SECTIONS:
        for index, row in enumerate(stored_events(db) if name == "events" else section_rows(db, name)):
            values = checked(name, index, dict(zip(FIELDS[name], row)))
            for field, stored, proper in zip(FIELDS[name], row, values):
                if stored != proper:
                    raise Refusal(f"{name}[{index}]: {field} is stored as {stored!r}, not as okr stores it "
                                  f"({proper!r})")
            check.record(name, index, values)
        check.section_done(name)
    # Not a field of the format, but the key every lookup by email uses: a backup could hand one user's key
    # to another. (An upgrade from version 0 leaves a clashing user's key NULL.)
    for index, (email, key) in enumerate(users.emails_and_keys(db)):
        if key is not None and key != email_key(email):
            raise Refusal(f"users[{index}]: email_key {key!r} is not the key of its email {email!r}")
