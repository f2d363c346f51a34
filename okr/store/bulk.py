"""The bulk writes of the importers: whole rows by id (API keys by credential), added, updated or left alone.

okr import and okr import-simpleokr write through here, inside the caller's
transaction, rows already checked (okr.transfer.rows). Each write is one
prepared statement: a row is one tuple of values in FIELDS order, so that an
import of half a million rows builds nothing per row but its parameters.
okr import-simpleokr records each row's event as it writes it; okr import
does not (record=False): its file brings the rows' history, and the import
records one event of its own (okr.transfer.importer).

Only the fields listed are ever written: what else a row holds (a user's
password_hash) stays as it is. An OPTIONAL field may be NOT_GIVEN (a file of
an earlier format lacks it): a new row then gets the column's default, and a
stored row keeps its value.
"""
import json
from decimal import Decimal
from functools import cache

from ..rules.email_addresses import email_key
from ..records import (checkin_json, cycle_dates_json, key_json, key_result_details_json, membership_json,
                       objective_json, team_json, user_role_json)
from . import assistant_grants, events, users

# The fields of a whole row of each table, in the order the writes below take them (the okr-export
# format's records have them in this order too). A key result's cycle is its objective's; a check-in
# names its key result by id; a team member is a team's id and a user's. An event's actor, data and
# changes are JSON values, stored as JSON text (event_text). Events come first: the okr-export format
# has its sections in this order (okr.transfer), so that an import adds the file's history before the
# events of its own writes.
FIELDS = {
    "events": ("id", "type", "created_at", "actor", "person_id", "resource_type", "resource_id", "parent_id",
               "cycle_id", "team_id", "data", "changes"),
    "users": ("id", "name", "email", "role", "is_active", "created_at", "revision", "weekly_email", "oidc_issuer",
              "oidc_subject"),
    "teams": ("id", "name", "created_at", "revision"),
    "team_members": ("team_id", "user_id", "joined_at"),
    "cycles": ("id", "name", "created_at", "revision", "starts_on", "ends_on", "closed_at", "closed_by"),
    "objectives": ("id", "name", "description", "is_company", "is_personal", "cycle_id", "team_id", "assignee_id",
                   "parent_objective_id", "created_at", "modified_at", "revision", "outcome", "score", "reflection",
                   "carried_from_id", "created_by", "visibility"),
    "key_results": ("id", "objective_id", "name", "type", "confidence", "current_value", "target_value_min",
                    "target_value_max", "created_at", "modified_at", "revision", "owner_id", "unit", "unit_position",
                    "score", "weight", "progress_from"),
    "checkins": ("id", "key_result_id", "value", "confidence", "comment", "author_id", "created_at"),
    "comments": ("id", "objective_id", "key_result_id", "author_id", "body", "created_at", "modified_at", "revision"),
    "initiatives": ("id", "key_result_id", "name", "owner_id", "state", "due_on", "link", "done_at", "created_at",
                    "modified_at", "revision"),
    "api_keys": ("credential", "secret", "name", "read_only", "created_at", "revoked_at", "user_id"),
}
# Fields a row may come without: a new row then gets the column's default (schema.sql: a user's role
# editor, weekly emails on and no identity-provider link, an API key's user_id null, a service key, a cycle's
# dates and closing, an objective's close-out and carried-from link, a key result's owner, unit and score null and
# its weight 1 and its progress its measure's, an objective's creator unknown and everyone seeing it),
# and a stored row keeps its own.
OPTIONAL = {"users": ("role", "weekly_email", "oidc_issuer", "oidc_subject"), "api_keys": ("user_id",),
            "cycles": ("starts_on", "ends_on", "closed_at", "closed_by"),
            "objectives": ("outcome", "score", "reflection", "carried_from_id", "created_by", "visibility"),
            "key_results": ("owner_id", "unit", "unit_position", "score", "weight", "progress_from")}
# A user's private settings, which no API field shows (okr.store.users): a change of them alone leaves the
# revision, hence the ETag, as it is.
PRIVATE = {"users": ("weekly_email", "oidc_issuer", "oidc_subject")}


class NotGiven:
    """The value of an OPTIONAL field a row comes without."""

    def __repr__(self):
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()


def upsert(table, conflict, fields, kept=("created_at",), revised=True, values=None, updates=None, private=()):
    """INSERT of a row, or UPDATE of the row with its conflict key when anything but `kept` differs.

    values: {field: SQL} for a field whose VALUES entry is an expression of its parameter, not the
    parameter itself; updates: {field: SQL} for a field whose new value is not simply excluded's;
    private: fields whose change alone leaves the revision as it is.
    """
    values, updates = values or {}, updates or {}
    changing = [field for field in fields if field not in (conflict, "revision", *kept)]
    new = {field: updates.get(field, f"excluded.{field}") for field in changing}
    sets = [f"{field} = {new[field]}" for field in changing]
    if revised:
        revision = "max(revision + 1, excluded.revision)"
        public = [field for field in changing if field not in private]
        if len(public) < len(changing):
            revision = (f"CASE WHEN {' OR '.join(f'{field} IS NOT {new[field]}' for field in public)} "
                        f"THEN {revision} ELSE revision END")
        sets.append(f"revision = {revision}")
    differs = " OR ".join(f"{field} IS NOT {new[field]}" for field in changing)
    return (f"INSERT INTO {table} ({', '.join(fields)}) VALUES ({', '.join(values.get(f, '?') for f in fields)}) "
            f"ON CONFLICT ({conflict}) DO UPDATE SET {', '.join(sets)} WHERE {differs} RETURNING seq")


# The columns a write sets beyond FIELDS: a user's email key (from the email), a key result's cycle
# (its objective's: the parameter is the objective's id).
DERIVED = {"users": ("email_key",), "key_results": ("cycle_id",)}


def columns(name):
    return FIELDS[name] + DERIVED.get(name, ())


@cache
def write_statement(name, omitted=()):
    """The write of a row of table name that sets every column but the omitted ones."""
    fields = tuple(field for field in columns(name) if field not in omitted)
    if name == "team_members":
        # A membership is its pair; one already stored keeps its joined_at, as a row keeps its created_at.
        return ("INSERT INTO team_members (team_id, user_id, joined_at) VALUES (?, ?, ?) "
                "ON CONFLICT (team_id, user_id) DO NOTHING RETURNING seq")
    if name == "key_results":
        return upsert(name, "id", fields, values={"cycle_id": "(SELECT cycle_id FROM objectives WHERE id = ?)"})
    if name == "api_keys":
        # A revoked key stays revoked, whatever the file says.
        return upsert(name, "credential", fields, revised=False,
                      updates={"revoked_at": "coalesce(revoked_at, excluded.revoked_at)"})
    if name == "users":
        # A stored identity-provider link stays, whatever the file says: it signs its person in, and a file
        # that replaced it would choose who that is. One is taken only for a user who has none.
        return upsert(name, "id", fields, private=PRIVATE[name], updates={
            "oidc_issuer": "CASE WHEN oidc_subject IS NULL THEN excluded.oidc_issuer ELSE oidc_issuer END",
            "oidc_subject": "coalesce(oidc_subject, excluded.oidc_subject)"})
    return upsert(name, "id", fields)


# A cycle closed as an okr-export file has it, once everything inside it is written: schema.sql's triggers refuse
# writes into a closed cycle. Its revision is the file's when its row was just written from the file, else it moves
# on as an upsert's does.
CLOSE_CYCLE = """UPDATE cycles SET closed_at = :closed_at, closed_by = :closed_by,
    revision = CASE WHEN :written THEN revision ELSE max(revision + 1, :revision) END
    WHERE id = :id AND (closed_at IS NOT :closed_at OR closed_by IS NOT :closed_by) RETURNING seq"""


def close_cycle(db, cycle_id, closed_at, closed_by, revision, written):
    """Sets the cycle's closed_at and closed_by (either may be None: open, or closed by a user since deleted);
    written: its row was just added or updated from the same record. Its seq when that changed it, else None."""
    answer = db.execute(CLOSE_CYCLE, {"id": cycle_id, "closed_at": closed_at, "closed_by": closed_by,
                                      "revision": revision, "written": written}).fetchone()
    return None if answer is None else answer[0]


ADD_CHECKIN = """INSERT INTO checkins (id, key_result_seq, value, confidence, comment, author_id, created_at)
    SELECT ?, k.seq, ?, ?, ?, ?, ? FROM key_results k WHERE k.id = ? {unless} RETURNING seq"""
UNLESS_RECORDED = "AND NOT EXISTS (SELECT 1 FROM checkins c WHERE c.key_result_seq = k.seq AND c.id = ?)"


def write_parameters(name, values):
    """The parameters of write_statement(name, omitted), and omitted: the fields NOT_GIVEN."""
    if name == "users":
        values = (*values, email_key(values[FIELDS["users"].index("email")]))
    elif name == "key_results":
        values = (*values, values[FIELDS["key_results"].index("objective_id")])
    if NOT_GIVEN not in values:
        return values, ()
    omitted = tuple(field for field, value in zip(columns(name), values) if value is NOT_GIVEN)
    return tuple(value for value in values if value is not NOT_GIVEN), omitted


ADD_CHECKINS = {False: ADD_CHECKIN.format(unless=""), True: ADD_CHECKIN.format(unless=UNLESS_RECORDED)}


# Each table's row as its events show it, and where they place it: (kind, the SELECT of a row by seq or by
# its key, the JSON of the row, its event's place: {"parent_id", "cycle_id", "team_id": column}). A team
# member's events are its team's (team.member_added).
KEY_RESULT_ROW = "SELECT k.*, (SELECT team_id FROM objectives o WHERE o.id = k.objective_id) AS team_id FROM key_results k"
EVENTS = {
    "users": ("user", "SELECT * FROM users", user_role_json, {}),
    "teams": ("team", "SELECT * FROM teams", team_json, {"team_id": "id"}),
    "team_members": ("team", "SELECT m.team_id, u.id, u.name FROM team_members m JOIN users u ON u.id = m.user_id",
                     lambda row: membership_json(row["team_id"], row), {"team_id": "team_id"}),
    "cycles": ("cycle", "SELECT * FROM cycles", cycle_dates_json, {"cycle_id": "id"}),
    "objectives": ("objective", "SELECT * FROM objectives", objective_json,
                   {"cycle_id": "cycle_id", "team_id": "team_id"}),
    "key_results": ("key_result", KEY_RESULT_ROW, key_result_details_json,
                    {"parent_id": "objective_id", "cycle_id": "cycle_id", "team_id": "team_id"}),
    "api_keys": ("key", "SELECT * FROM api_keys", key_json, {}),
}
SEQ_COLUMN = {"team_members": "m.seq", "key_results": "k.seq"}
KEY_COLUMN = {"api_keys": "credential", "key_results": "k.id"}


def stored_row(db, name, values):
    """The stored row with the key values name, as EVENTS shows it, or None."""
    select = EVENTS[name][1]
    if name == "team_members":
        return db.execute(f"{select} WHERE m.team_id = ? AND m.user_id = ?", values[:2]).fetchone()
    key = KEY_COLUMN.get(name, "id")
    return db.execute(f"{select} WHERE {key} = ?", (values[FIELDS[name].index(key.split('.')[-1])],)).fetchone()


def record_written(db, name, seq, before):
    """Records the event of the row of table name with this seq, just written: created when before (its row
    before the write) is None, else updated."""
    kind, select, shown, place = EVENTS[name]
    row = db.execute(f"{select} WHERE {SEQ_COLUMN.get(name, 'seq')} = ?", (seq,)).fetchone()
    data = shown(row)
    action = "member_added" if name == "team_members" else "created" if before is None else "updated"
    events.record(db, kind, action, data["team_id"] if name == "team_members" else data["id"], data,
                  before=None if before is None else shown(before),
                  **{field: row[column] for field, column in place.items()})


def write_row(db, name, values, new=False, record=True):
    """Adds the row of table name (values in FIELDS[name] order), or updates the stored one with its id
    when anything but created_at differs (a team member: adds it unless stored), with its event unless
    record is false; the row's seq when written, None when it was left as it was. new: the caller knows no
    row with its id is stored (an import into an empty database), which saves reading it first."""
    # The stored row: for its event, and for a user to know whether their links die with the change.
    before = None if new or not (record or name == "users") else stored_row(db, name, values)
    parameters, omitted = write_parameters(name, values)
    answer = db.execute(write_statement(name, omitted), parameters).fetchone()
    if answer is None:
        return None
    if name == "users" and before is not None:
        after = dict(zip(FIELDS[name], values))
        if users.voids_links(before, after):
            users.void_links(db, before["id"])  # as okr users update and deactivate do
        if users.ends_assistants(before, after):
            assistant_grants.end_all_of(db, before["id"])  # as okr users deactivate and set-role do
    if record:
        record_written(db, name, answer[0], before)
    return answer[0]


CHECKIN_ROW = """SELECT c.*, k.id AS key_result_id, k.cycle_id,
    (SELECT team_id FROM objectives o WHERE o.id = k.objective_id) AS team_id
    FROM checkins c JOIN key_results k ON k.seq = c.key_result_seq WHERE c.seq = ?"""


def add_checkin(db, checkin, skip_recorded=False, record=True):
    """Adds a check-in (a dict of FIELDS["checkins"]) to the key result it names, with its event unless
    record is false; with skip_recorded, not when one with its id is already recorded there. Its seq, or
    None when it was not added."""
    parameters = (checkin["id"], checkin["value"], checkin["confidence"], checkin["comment"], checkin["author_id"],
                  checkin["created_at"], checkin["key_result_id"])
    answer = db.execute(ADD_CHECKINS[skip_recorded], parameters + ((checkin["id"],) if skip_recorded else ())).fetchone()
    if answer is None or not record:
        return None if answer is None else answer[0]
    row = db.execute(CHECKIN_ROW, (answer[0],)).fetchone()
    events.record(db, "checkin", "created", row["id"], checkin_json(row), parent_id=row["key_result_id"],
                  cycle_id=row["cycle_id"], team_id=row["team_id"])
    return answer[0]


# An event's columns holding JSON text.
EVENT_JSON = frozenset({"actor", "data", "changes"})
ADD_EVENT = (f"INSERT INTO events ({', '.join(FIELDS['events'])}) VALUES ({', '.join('?' * len(FIELDS['events']))}) "
             "ON CONFLICT (id) DO NOTHING RETURNING seq")


def decimal_number(value):
    """A number json read as a Decimal, as the float it was written from (okr.store.events wrote floats)."""
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def event_text(value):
    """The JSON text okr.store.events stores for an event's actor, data or changes: compact, UTF-8 as is.
    ValueError for a number no float holds (1e400)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=decimal_number)


def add_event(db, values):
    """Adds an event of the activity feed's past (values in FIELDS["events"] order; actor, data and changes
    JSON values), unless one with its id is stored: events are never edited, so a stored one stays as it is.

    Unlike okr.store.events.record, it puts the event in no webhook's outbox (it is history, not a change
    made now) and records no event of its own. Its seq, or None when it was already stored."""
    parameters = tuple(None if value is None and field == "changes" else event_text(value) if field in EVENT_JSON
                       else value for field, value in zip(FIELDS["events"], values))
    answer = db.execute(ADD_EVENT, parameters).fetchone()
    return None if answer is None else answer[0]
