"""Moving data in and out: the okr-export JSON format (okr export, okr import) and a cycle's key results as CSV.

The core of the two commands (okr/cli/transfer.py is their command line). It
works on an open SQLite connection and on files, never on Flask's app or
request: rows are checked with the API's own marshmallow schemas
(okr.rules.schemas) and CSV figures come from the report's query and
okr.progress, so that a rule lives in one place.

The okr-export format, version 1
--------------------------------

One JSON object in UTF-8. okr export writes it like this, one record to a line,
and okr import reads it as it streams by, whatever its layout:

    {"format": "okr-export", "version": 1,
    "users": [
    {"id": "5c0e…", "name": "Ada Lovelace", "email": "ada@example.com", "is_active": true,
     "created_at": "2026-11-22T10:15:30Z", "revision": 0},
    …
    ],
    "teams": [ … ],
    "cycles": [ … ],
    "objectives": [ … ],
    "key_results": [ … ],
    "checkins": [ … ],
    "api_keys": [ … ]
    }

"format" and "version" come first; then the sections, in this order, each an
array of records in creation order (the database's seq). "api_keys" is there
only when exported with --include-keys; the other six are always there, empty
or not. Every record has exactly these fields, in this order; a field the
database holds as NULL is null:

    users        id, name, email, is_active, created_at, revision
    teams        id, name, created_at, revision
    cycles       id, name, created_at, revision
    objectives   id, name, description, is_company, is_personal, cycle_id, team_id,
                 assignee_id, parent_objective_id, created_at, modified_at, revision
    key_results  id, objective_id, name, type, confidence, current_value,
                 target_value_min, target_value_max, created_at, modified_at, revision
    checkins     id, key_result_id, value, confidence, comment, author_id, created_at
    api_keys     credential, secret, name, read_only, created_at, revoked_at

Values are as the API shows them: ids are lowercase UUIDs, timestamps RFC 3339
UTC to the second ("2026-11-22T10:15:30Z"), decimals the stored strings
("0.50", "-5.00"), is_* and read_only true or false, revision the row's update
counter (part of its ETag). A key result's cycle is its objective's, so it is
not written; a check-in names its key result by id. An API key's secret is the
secret itself, as the database keeps it (the server needs it to check
signatures): a file exported with --include-keys grants access to the API.

okr import checks the whole file before it writes anything, and then writes it
in one transaction: a problem anywhere leaves the database as it was. It
refuses a file of another format, of a newer version, invalid or truncated
JSON, a record with a missing or unknown field, a value the API would refuse
(through the API's own schemas: names, types and targets, decimals, confidence
from 0 to 1, the company/personal rule, text lengths), a time that is not one,
an id that is not a lowercase UUID or appears twice in its section (check-ins
aside: the database keeps their ids without a unique index too), two users
whose emails are one under Unicode case folding, a reference to a row that is
neither in the file nor (with --merge) in the database, and an alignment loop.
The refusal names the first problem and its place, counted from 0:
"objectives[3]: cycle_id … does not exist: no cycle in the file has that id".
A value the API would take in another spelling (0.5, "0.500", a decomposed
accent in an email) is stored as the API stores it. Any layout of the JSON
will do, so long as "format" and "version" come first and the sections follow
in the order above. Into an empty
database (no users, teams, cycles, objectives, key results or check-ins; API
keys do not count) rows keep their ids, timestamps and revisions and are
stored in file order, so that exporting again gives the same bytes. With
--merge, rows are matched by id (API keys by credential): a new one is added
after the existing ones, a changed one is updated (its created_at kept, its
revision moved past both), an identical one left alone; a check-in already
recorded on its key result is left alone (check-ins are never edited), and a
revoked key stays revoked. Nothing is deleted.

The CSV of a cycle
------------------

okr export --format csv --cycle ID writes one row per key result of the cycle,
objective by objective in creation order, each objective's key results in
theirs, with the columns of CSV_COLUMNS below. It is UTF-8 with a byte-order
mark (without one, Excel reads it in the local code page) and CRLF line ends.
start_value, progress, status, stale and last_checkin_at are the cycle
report's own (okr.reports, okr.progress); a baseline's progress is empty.
Names are free text, which a spreadsheet would run as a formula when it begins
with = + - @, a tab or a carriage return: such a name gets a leading single
quote (OWASP's advice on CSV injection). Every other column holds an id, a
fixed word, a time or a decimal the service wrote, so none is quoted:
"-5.00" stays the number minus five.
"""
import codecs
import csv
import hashlib
import json
import re
import sqlite3
import uuid
from datetime import datetime
from decimal import Decimal, InvalidOperation

from marshmallow import ValidationError

from . import progress, reports
from .rules.fields import StrictBool, Text
from .rules.ids import UUID_RE
from .rules.messages import flatten
from .rules.schemas import (BodySchema, UserSchema, checkin_schema, group_update_schema, key_result_schema,
                            objective_schema)
from .rules.strict_json import reject_constant, reject_duplicate_keys
from .emails import email_key

FORMAT = "okr-export"
VERSION = 1

# Each section's fields, in the file's order; SELECT gives them in this order too.
FIELDS = {
    "users": ("id", "name", "email", "is_active", "created_at", "revision"),
    "teams": ("id", "name", "created_at", "revision"),
    "cycles": ("id", "name", "created_at", "revision"),
    "objectives": ("id", "name", "description", "is_company", "is_personal", "cycle_id", "team_id", "assignee_id",
                   "parent_objective_id", "created_at", "modified_at", "revision"),
    "key_results": ("id", "objective_id", "name", "type", "confidence", "current_value", "target_value_min",
                    "target_value_max", "created_at", "modified_at", "revision"),
    "checkins": ("id", "key_result_id", "value", "confidence", "comment", "author_id", "created_at"),
    "api_keys": ("credential", "secret", "name", "read_only", "created_at", "revoked_at"),
}
SECTIONS = tuple(FIELDS)
DATA_SECTIONS = SECTIONS[:-1]  # what makes a database not empty; always in the file
BOOLS = frozenset({"is_active", "is_company", "is_personal", "read_only"})
TIMESTAMPS = frozenset({"created_at", "modified_at", "revoked_at"})
NULLABLE = frozenset({"description", "team_id", "assignee_id", "parent_objective_id", "target_value_min",
                      "target_value_max", "comment", "author_id", "revoked_at"})
SINGULAR = {"users": "user", "teams": "team", "cycles": "cycle", "objectives": "objective",
            "key_results": "key result", "checkins": "check-in", "api_keys": "API key"}

SELECT = {name: f"SELECT {', '.join(fields)} FROM {name} ORDER BY seq" for name, fields in FIELDS.items()}
SELECT["checkins"] = (
    "SELECT c.id, k.id, c.value, c.confidence, c.comment, c.author_id, c.created_at"
    " FROM checkins c JOIN key_results k ON k.seq = c.key_result_seq ORDER BY c.seq"
)


class Refusal(Exception):
    """Why a file cannot be imported, in one line (where, then what)."""


# --- export ----------------------------------------------------------------------------------


def export_json(db, out, include_keys=False):
    """Writes everything in db to the text file out in the okr-export format; returns the count per section.

    Streams: one cursor per section, one record at a time, so memory stays flat
    whatever the size. Run it inside one read transaction for a consistent copy.
    """
    encode = json.JSONEncoder(ensure_ascii=False).encode
    counts = {}
    out.write(f'{{"format": "{FORMAT}", "version": {VERSION}')
    for name in SECTIONS if include_keys else DATA_SECTIONS:
        fields = FIELDS[name]
        flags = [index for index, field in enumerate(fields) if field in BOOLS]
        cursor = db.cursor()
        cursor.row_factory = None  # plain tuples: sqlite3.Row costs more than the rest
        cursor.execute(SELECT[name])
        out.write(f',\n"{name}": [')
        count = 0
        for row in cursor:
            if flags:
                row = list(row)
                for index in flags:
                    row[index] = bool(row[index])
            out.write((",\n" if count else "\n") + encode(dict(zip(fields, row))))
            count += 1
        out.write("\n]" if count else "]")
        counts[name] = count
    out.write("\n}\n")
    return counts


# A cycle's key results for spreadsheets: one row each, objective by objective.
CSV_COLUMNS = ("objective_id", "objective", "team_id", "team", "assignee_id", "assignee", "key_result_id",
               "key_result", "type", "start_value", "current_value", "target_value_min", "target_value_max",
               "progress", "confidence", "status", "stale", "last_checkin_at")
# Free text, which a spreadsheet might take for a formula. The other columns are
# ids, fixed words, timestamps and the service's own decimal strings, which stay
# numbers ("-5.00" is minus five, not a formula).
TEXT_COLUMNS = frozenset({"objective", "team", "assignee", "key_result"})
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # OWASP's list for CSV injection

# The report's own query (start value and last check-in), driven from the
# cycle's objectives in order: the unary + keeps SQLite from walking the key
# results by cycle, so it takes each objective's by key_results_by_objective,
# already in order. Nothing is sorted or held: rows stream.
CYCLE_KEY_RESULTS = f"""
SELECT h.*, o.name AS objective_name, o.team_id AS objective_team_id, t.name AS team_name,
    o.assignee_id AS objective_assignee_id, u.name AS assignee_name
FROM objectives o
CROSS JOIN ({reports.KEY_RESULTS_WITH_HISTORY.format(where="+k.cycle_id = ?")}) h ON h.objective_id = o.id
LEFT JOIN teams t ON t.id = o.team_id
LEFT JOIN users u ON u.id = o.assignee_id
WHERE o.cycle_id = ?
ORDER BY o.seq, h.seq
"""


def cycle_key_results(db, cycle_id, now):
    """Yields (row, report entry) for each key result of a cycle, objective by objective, as they are read.

    The entry is the cycle report's (okr.reports.key_result_node): start value,
    progress, status, stale and last check-in by the same rules. now is an aware
    datetime, for staleness.
    """
    stale = progress.stale_test(now)
    for row in db.execute(CYCLE_KEY_RESULTS, (cycle_id, cycle_id)):
        yield row, reports.key_result_node(row, stale)[0]


def spreadsheet_text(text):
    """Text a spreadsheet shows as text: one starting like a formula gets a leading single quote."""
    if text is None:
        return ""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def export_csv(db, cycle_id, out, now):
    """Writes a cycle's key results to the text file out (opened with newline=""); returns how many."""
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    count = 0
    for row, node in cycle_key_results(db, cycle_id, now):
        values = {
            "objective_id": row["objective_id"], "objective": row["objective_name"],
            "team_id": row["objective_team_id"], "team": row["team_name"],
            "assignee_id": row["objective_assignee_id"], "assignee": row["assignee_name"],
            "key_result_id": node["id"], "key_result": node["name"], "type": node["type"],
            "start_value": node["start_value"], "current_value": node["current_value"],
            "target_value_min": node["target_value_min"], "target_value_max": node["target_value_max"],
            "progress": node["progress"], "confidence": node["confidence"], "status": node["status"],
            "stale": "true" if node["stale"] else "false", "last_checkin_at": node["last_checkin_at"],
        }
        writer.writerow([spreadsheet_text(values[column]) if column in TEXT_COLUMNS
                         else "" if values[column] is None else values[column] for column in CSV_COLUMNS])
        count += 1
    return count


# --- reading a file as it streams by -----------------------------------------------------------

WHITESPACE = re.compile(r"[ \t\n\r]*")
CHUNK = 1 << 16
MAX_VALUE = 1 << 20  # characters; a valid record is far smaller (a description holds 10,000)


class HashingText:
    """A file's text, read in chunks, with the SHA-256 of its bytes so far."""

    def __init__(self, path):
        self.file = open(path, "rb")
        self.digest = hashlib.sha256()
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()

    def read(self):
        data = self.file.read(CHUNK)
        self.digest.update(data)
        try:
            return self.decoder.decode(data, final=not data)
        except UnicodeDecodeError:
            raise Refusal("it is not UTF-8 text") from None

    def close(self):
        self.file.close()


class JsonStream:
    """Reads one JSON text value by value: the top level by hand, each record with json's raw_decode.

    Only the record being read is in memory (and a 64 kB chunk). Numbers that are
    not whole are Decimals, as the API reads them; NaN, Infinity and a key given
    twice are refused.
    """

    def __init__(self, text):
        self.text = text
        self.buffer, self.position, self.lines_before, self.ended = "", 0, 0, False
        self.decoder = json.JSONDecoder(parse_float=Decimal, parse_constant=reject_constant,
                                        object_pairs_hook=reject_duplicate_keys)

    def more(self):
        """Reads the next chunk into the buffer; False at the end of the file."""
        chunk = self.text.read()
        if not chunk:
            self.ended = True
            return False
        self.lines_before += self.buffer.count("\n", 0, self.position)
        self.buffer = self.buffer[self.position:] + chunk
        self.position = 0
        return True

    def peek(self):
        """The next character that is not whitespace ("" at the end), left unread."""
        while True:
            self.position = WHITESPACE.match(self.buffer, self.position).end()
            if self.position < len(self.buffer):
                return self.buffer[self.position]
            if not self.more():
                return ""

    def where(self, position=None):
        position = self.position if position is None else position
        line = self.lines_before + self.buffer.count("\n", 0, position) + 1
        start = self.buffer.rfind("\n", 0, position) + 1
        return f"line {line}" + (f" column {position - start + 1}" if start or line == 1 else "")

    def invalid(self, what, position=None):
        position = self.position if position is None else position
        if self.ended and (not self.buffer[position:].strip() or what.startswith("unterminated string")):
            return Refusal(f"it ends early, at {self.where(position)}: the file is truncated")
        return Refusal(f"it is not valid JSON: {what} at {self.where(position)}")

    def take(self, char, what):
        if self.peek() != char:
            raise self.invalid(f"expected {what}")
        self.position += 1

    def value(self):
        """The next JSON value, whole."""
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buffer, self.position)
            except json.JSONDecodeError as error:
                # Maybe only cut off by the chunk's end: read on, unless no record is that long.
                if self.ended or len(self.buffer) - self.position > MAX_VALUE:
                    raise self.invalid(error.msg[:1].lower() + error.msg[1:], error.pos) from None
                self.more()
                continue
            except ValueError as error:  # NaN, Infinity, a key twice
                raise self.invalid(str(error)) from None
            except InvalidOperation:
                raise self.invalid("a number whose exponent is out of range") from None
            except RecursionError:
                raise self.invalid("nested too deep") from None
            if end == len(self.buffer) and not self.ended and self.more():
                continue  # a number may go on in the next chunk
            self.position = end
            return value

    def members(self):
        """Yields the top-level object's member names; the caller reads each one's value before the next."""
        self.take("{", "an object ({)")
        if self.peek() == "}":
            self.position += 1
        else:
            while True:
                if self.peek() != '"':
                    raise self.invalid("expected a member name")
                key = self.value()
                self.take(":", "':'")
                yield key
                if self.peek() == ",":
                    self.position += 1
                    continue
                self.take("}", "',' or '}'")
                break
        if self.peek() != "":
            raise self.invalid("more after the end of the object")

    def items(self):
        """Yields the values of the array that comes next, one at a time."""
        self.take("[", "an array ([)")
        if self.peek() == "]":
            self.position += 1
            return
        while True:
            yield self.value()
            if self.peek() == ",":
                self.position += 1
                continue
            self.take("]", "',' or ']'")
            return


def records(path, hashes):
    """Yields (section, index, record) of an okr-export file, after checking its format and version.

    Refusal names anything wrong with the file's shape. hashes gets the file's
    SHA-256 once it has been read to the end.
    """
    text = HashingText(path)
    try:
        stream = JsonStream(text)
        if stream.peek() != "{":
            raise Refusal(f"it is not an {FORMAT} file: it does not begin with {{") if stream.peek() \
                else Refusal("it is empty")
        members = stream.members()
        seen = []
        for key in members:
            if not seen:
                if key != "format":
                    raise Refusal(f'it is not an {FORMAT} file: it does not begin with "format": "{FORMAT}"')
                value = stream.value()
                if value != FORMAT:
                    raise Refusal(f'it is not an {FORMAT} file: its format is {json.dumps(value, default=str)}')
            elif len(seen) == 1:
                if key != "version":
                    raise Refusal('"version" must follow "format"')
                version = stream.value()
                if type(version) is not int or version < 1:
                    raise Refusal(f"its version is {json.dumps(version, default=str)}, not a whole number from 1")
                if version > VERSION:
                    raise Refusal(f"it is format version {version}, newer than this okr reads ({VERSION}); "
                                  "import it with a newer okr")
            elif key not in FIELDS:
                raise Refusal(f'unknown section "{key}"; the sections are {", ".join(SECTIONS)}')
            elif key in seen:
                raise Refusal(f'the section "{key}" appears twice')
            elif seen[-1] in FIELDS and SECTIONS.index(key) < SECTIONS.index(seen[-1]):
                raise Refusal(f'the section "{key}" comes after "{seen[-1]}"; the sections go in the order '
                              + ", ".join(SECTIONS))
            else:
                for index, record in enumerate(stream.items()):
                    if not isinstance(record, dict):
                        raise Refusal(f"{key}[{index}]: not an object")
                    yield key, index, record
            seen.append(key)
        missing = [name for name in DATA_SECTIONS if name not in seen]
        if len(seen) < 2 or missing:
            raise Refusal("it has no " + ('"version"' if len(seen) < 2 else f'"{missing[0]}" section'))
        hashes.append(text.digest.hexdigest())
    finally:
        text.close()


# --- checking a record ---------------------------------------------------------------------------


class ApiKeySchema(BodySchema):
    """An API key's row; okr keys create makes them, so no request body describes them."""

    credential = Text(required=True, max_length=200, not_blank=True)
    secret = Text(required=True, max_length=200, not_blank=True)
    name = Text(required=True, max_length=500, not_blank=True)
    read_only = StrictBool(required=True)


api_key_schema = ApiKeySchema()



class UserRowSchema(UserSchema):
    """A user as the file holds it: as okr users add takes one, and whether it is active."""

    is_active = StrictBool(required=True)


# Per section, the schema that checks its rows: the API's own, but for what only the file holds.
SCHEMAS = {
    "users": UserRowSchema(),
    "teams": group_update_schema,
    "cycles": group_update_schema,
    "objectives": objective_schema,
    "key_results": key_result_schema,
    "checkins": checkin_schema,
    "api_keys": api_key_schema,
}
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def problems_of(error):
    return "; ".join(f"{field}: {text}" for field, text in flatten(error.messages).items())


def checked(name, index, record):
    """The record's values as they are stored, in FIELDS order; Refusal naming where and what is wrong."""
    try:
        return checked_record(name, record)
    except Refusal as refusal:
        raise Refusal(f"{name}[{index}]: {refusal}") from None


def checked_record(name, record):
    """The record's values as they are stored, in FIELDS order; Refusal saying what is wrong (not where).

    The one check of a row for every way in: okr import's records, and okr
    import-simpleokr's (okr.simpleokr), which name their place their own way.
    """
    fields = FIELDS[name]
    missing = [field for field in fields if field not in record]
    if missing:
        raise Refusal(f"missing field{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    unknown = [field for field in record if field not in fields]
    if unknown:
        raise Refusal(f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
    for field in fields:
        value = record[field]
        if value is None and field in NULLABLE:
            continue
        if (field == "id" or field.endswith("_id")) and not (isinstance(value, str) and UUID_RE.fullmatch(value)):
            raise Refusal(f"{field}: must be a lowercase UUID, not {json.dumps(value, default=str)}")
        if field in TIMESTAMPS and not valid_timestamp(value):
            raise Refusal(f"{field}: must be an RFC 3339 UTC time to the second, such as "
                          f"2026-11-22T10:15:30Z, not {json.dumps(value, default=str)}")
        if field == "revision" and not (type(value) is int and value >= 0):
            raise Refusal(f"revision: must be a whole number from 0, not {json.dumps(value, default=str)}")
    try:
        loaded = SCHEMAS[name].load(record)  # the schemas leave out the fields they do not know
    except ValidationError as error:
        raise Refusal(problems_of(error) or str(error)) from None
    return tuple(loaded[field] if field in loaded else record[field] for field in fields)


def valid_timestamp(value):
    if not (isinstance(value, str) and TIMESTAMP.fullmatch(value)):
        return False
    try:
        datetime.fromisoformat(value[:-1])  # a real date and time: no February 30th, no 24:00
    except ValueError:
        return False
    return True


# --- import --------------------------------------------------------------------------------------

COUNT_ROWS = " UNION ALL ".join(f"SELECT '{name}', count(*) FROM {name}" for name in DATA_SECTIONS)


PLURAL = {name: f"{word}s" for name, word in SINGULAR.items()}


def contents(db):
    """What the database holds, in words ("2 users, 1 cycle"); "" when it is empty."""
    counts = dict(db.execute(COUNT_ROWS).fetchall())
    return ", ".join(f"{counts[name]} {SINGULAR[name] if counts[name] == 1 else PLURAL[name]}"
                     for name in DATA_SECTIONS if counts[name])


def compact(uuid_text):
    """A checked lowercase UUID's 16 bytes: 49 bytes of memory rather than the text's 85, for the ids a check keeps."""
    return bytes.fromhex(uuid_text.replace("-", ""))


def uuid_text(key):
    return str(uuid.UUID(bytes=key))


class Check:
    """The first pass: every record checked, every reference resolved; nothing written.

    It keeps the ids it has seen, in 16 bytes each, to resolve references: what
    an import holds in memory, about 80 bytes per row (40 MB for 500,000), not
    the file's records.
    """

    def __init__(self, db, merge):
        self.db, self.merge = db, merge
        # id -> index in its section (credential for API keys); key results' ids alone, the bulk
        self.ids = {name: set() if name == "key_results" else {} for name in SECTIONS}
        self.emails = {}  # email_key -> index in users
        self.parents = {}  # objective id -> its parent's id, or None
        self.forward = []  # (index, parent id) of parents not seen yet when checked

    def in_database(self, name, value):
        column = "credential" if name == "api_keys" else "id"
        return self.merge and self.db.execute(f"SELECT 1 FROM {name} WHERE {column} = ?", (value,)).fetchone()

    def exists(self, name, value):
        return compact(value) in self.ids[name] or self.in_database(name, value)

    def missing(self, where, field, value, name):
        place = "the file or the database" if self.merge else "the file"
        return Refusal(f"{where}: {field} {value} does not exist: no {SINGULAR[name]} in {place} has that id")

    def record(self, name, index, values):
        where = f"{name}[{index}]"
        row = dict(zip(FIELDS[name], values))
        if name == "api_keys":
            key, what = row["credential"], "credential"
        else:
            key, what = compact(row["id"]), "id"
        seen = self.ids[name]
        # Check-in ids are not kept: the database holds them without a unique index too.
        if name != "checkins":
            if key in seen:
                first = f" (first as {name}[{seen[key]}])" if isinstance(seen, dict) else " in the file"
                raise Refusal(f"{where}: {what} {row[what]} appears twice{first}")
            if isinstance(seen, dict):
                seen[key] = index
            else:
                seen.add(key)
        getattr(self, f"check_{name}")(where, index, row, key)

    def check_users(self, where, index, row, key):
        folded = email_key(row["email"])
        if folded in self.emails:
            raise Refusal(f"{where}: email {row['email']} is the same as users[{self.emails[folded]}]'s under "
                          "Unicode case folding")
        self.emails[folded] = index
        if self.merge:
            holder = self.db.execute("SELECT id FROM users WHERE email_key = ?", (folded,)).fetchone()
            if holder and holder[0] != row["id"] and compact(holder[0]) not in self.ids["users"]:
                raise Refusal(f"{where}: email {row['email']} belongs to another user in the database "
                              f"({holder[0]})")

    def check_teams(self, where, index, row, key):
        pass

    check_cycles = check_teams

    def check_objectives(self, where, index, row, key):
        for field, name in (("cycle_id", "cycles"), ("team_id", "teams"), ("assignee_id", "users")):
            if row[field] is not None and not self.exists(name, row[field]):
                raise self.missing(where, field, row[field], name)
        parent = row["parent_objective_id"]
        self.parents[key] = None if parent is None else compact(parent)
        if parent is not None and not self.exists("objectives", parent):
            self.forward.append((index, parent))  # perhaps further down the file

    def check_key_results(self, where, index, row, key):
        if not self.exists("objectives", row["objective_id"]):
            raise self.missing(where, "objective_id", row["objective_id"], "objectives")

    def check_checkins(self, where, index, row, key):
        if not self.exists("key_results", row["key_result_id"]):
            raise self.missing(where, "key_result_id", row["key_result_id"], "key_results")
        if row["author_id"] is not None and not self.exists("users", row["author_id"]):
            raise self.missing(where, "author_id", row["author_id"], "users")

    def check_api_keys(self, where, index, row, key):
        if not self.merge and self.db.execute("SELECT 1 FROM api_keys WHERE credential = ?",
                                              (row["credential"],)).fetchone():
            raise Refusal(f"{where}: an API key with credential {row['credential']} exists in the database; "
                          "pass --merge to update it")

    def section_done(self, name):
        if name == "objectives":
            for index, parent in self.forward:
                if compact(parent) not in self.parents:
                    raise self.missing(f"objectives[{index}]", "parent_objective_id", parent, "objectives")
            self.forward = []
            self.check_loops()

    def parent_of(self, objective):
        if objective in self.parents:
            return self.parents[objective]
        row = self.merge and self.db.execute("SELECT parent_objective_id FROM objectives WHERE id = ?",
                                             (uuid_text(objective),)).fetchone()
        return compact(row[0]) if row and row[0] and UUID_RE.fullmatch(row[0]) else None

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


def upsert(table, conflict, fields, kept=("created_at",), revised=True, values=None, updates=None):
    """INSERT of a row, or UPDATE of the row with its conflict key when anything but `kept` differs.

    values: {field: SQL} for a field whose VALUES entry is an expression of its parameter, not the
    parameter itself; updates: {field: SQL} for a field whose new value is not simply excluded's.
    """
    values, updates = values or {}, updates or {}
    changing = [field for field in fields if field not in (conflict, "revision", *kept)]
    new = {field: updates.get(field, f"excluded.{field}") for field in changing}
    sets = [f"{field} = {new[field]}" for field in changing]
    if revised:
        sets.append("revision = max(revision + 1, excluded.revision)")
    differs = " OR ".join(f"{field} IS NOT {new[field]}" for field in changing)
    return (f"INSERT INTO {table} ({', '.join(fields)}) VALUES ({', '.join(values.get(f, '?') for f in fields)}) "
            f"ON CONFLICT ({conflict}) DO UPDATE SET {', '.join(sets)} WHERE {differs} RETURNING seq")


WRITES = {
    "users": upsert("users", "id", ("id", "name", "email", "email_key", "is_active", "created_at", "revision")),
    "teams": upsert("teams", "id", FIELDS["teams"]),
    "cycles": upsert("cycles", "id", FIELDS["cycles"]),
    "objectives": upsert("objectives", "id", FIELDS["objectives"]),
    # A key result's cycle is its objective's: its parameter is the objective's id.
    "key_results": upsert("key_results", "id", FIELDS["key_results"] + ("cycle_id",),
                          values={"cycle_id": "(SELECT cycle_id FROM objectives WHERE id = ?)"}),
    # A revoked key stays revoked, whatever the file says.
    "api_keys": upsert("api_keys", "credential", FIELDS["api_keys"], revised=False,
                       updates={"revoked_at": "coalesce(revoked_at, excluded.revoked_at)"}),
}
ADD_CHECKIN = """INSERT INTO checkins (id, key_result_seq, value, confidence, comment, author_id, created_at)
    SELECT ?, k.seq, ?, ?, ?, ?, ? FROM key_results k WHERE k.id = ? {unless} RETURNING seq"""
UNLESS_RECORDED = "AND NOT EXISTS (SELECT 1 FROM checkins c WHERE c.key_result_seq = k.seq AND c.id = ?)"


def write_parameters(name, values):
    row = dict(zip(FIELDS[name], values))
    if name == "users":
        return (row["id"], row["name"], row["email"], email_key(row["email"]), row["is_active"], row["created_at"],
                row["revision"])
    if name == "key_results":
        return (*values, row["objective_id"])
    return values


def file_digest(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def import_file(db, path, merge=False):
    """Imports an okr-export file into db, inside the caller's write transaction (BEGIN IMMEDIATE).

    The whole file is read and checked first; only then is it read again and
    written. Returns {section: {"added": n, "updated": n, "unchanged": n}}.
    Raises Refusal, with nothing written, when anything is wrong; the caller
    rolls back.
    """
    if not merge:
        held = contents(db)
        if held:
            raise Refusal(f"the database is not empty: it holds {held}; import into an empty database "
                          "(okr --database NEW.db init-db makes one), or pass --merge to add and update by id")
    check = Check(db, merge)
    hashes, current, canonical = [], None, True
    for name, index, record in records(path, hashes):
        if name != current:
            if current is not None:
                check.section_done(current)
            current = name
        values = checked(name, index, record)
        canonical = canonical and values == tuple(record[field] for field in FIELDS[name])
        check.record(name, index, values)
    if current is not None:
        check.section_done(current)
    # The check is done: write, reading the file again.
    db.execute("PRAGMA defer_foreign_keys = ON")  # a parent may come after its child; checked above
    counts = {name: {"added": 0, "updated": 0, "unchanged": 0} for name in SECTIONS}
    newest = {name: db.execute(f"SELECT coalesce(max(seq), 0) FROM {name}").fetchone()[0] for name in SECTIONS}
    add_checkin = ADD_CHECKIN.format(unless=UNLESS_RECORDED if merge else "")
    written = []
    try:
        for name, index, record in records(path, written):
            # Values stored as the file has them need no second check: the file is the same (see below).
            values = tuple(record[field] for field in FIELDS[name]) if canonical else checked(name, index, record)
            try:
                if name == "checkins":
                    row = dict(zip(FIELDS[name], values))
                    parameters = (row["id"], row["value"], row["confidence"], row["comment"], row["author_id"],
                                  row["created_at"], row["key_result_id"]) + ((row["id"],) if merge else ())
                    answer = db.execute(add_checkin, parameters).fetchone()
                else:
                    answer = db.execute(WRITES[name], write_parameters(name, values)).fetchone()
            except sqlite3.IntegrityError as error:
                raise Refusal(f"{name}[{index}]: the database refuses it: {error}") from None
            outcome = "unchanged" if answer is None else "added" if answer[0] > newest[name] else "updated"
            counts[name][outcome] += 1
    except (Refusal, KeyError, TypeError, sqlite3.Error):
        if file_digest(path) != hashes[0]:  # what failed was not what was checked
            raise Refusal("it changed while it was being imported") from None
        raise
    if written != hashes:
        raise Refusal("it changed while it was being imported")
    return counts
