"""The bulk writes of the importers: whole rows by id (API keys by credential), added, updated or left alone.

okr import and okr import-simpleokr write through here, inside the caller's
transaction, rows already checked (okr.transfer.rows). Each write is one
prepared statement: a row is one tuple of values in FIELDS order, so that an
import of half a million rows builds nothing per row but its parameters.

Only the fields listed are ever written: what else a row holds (a user's
password_hash) stays as it is. An OPTIONAL field may be NOT_GIVEN (a file of
an earlier format lacks it): a new row then gets the column's default, and a
stored row keeps its value.
"""
from functools import cache

from ..emails import email_key

# The fields of a whole row of each table, in the order the writes below take them (the okr-export
# format's records have them in this order too). A key result's cycle is its objective's; a check-in
# names its key result by id; a team member is a team's id and a user's.
FIELDS = {
    "users": ("id", "name", "email", "role", "is_active", "created_at", "revision"),
    "teams": ("id", "name", "created_at", "revision"),
    "team_members": ("team_id", "user_id", "joined_at"),
    "cycles": ("id", "name", "created_at", "revision", "starts_on", "ends_on"),
    "objectives": ("id", "name", "description", "is_company", "is_personal", "cycle_id", "team_id", "assignee_id",
                   "parent_objective_id", "created_at", "modified_at", "revision"),
    "key_results": ("id", "objective_id", "name", "type", "confidence", "current_value", "target_value_min",
                    "target_value_max", "created_at", "modified_at", "revision", "owner_id"),
    "checkins": ("id", "key_result_id", "value", "confidence", "comment", "author_id", "created_at"),
    "api_keys": ("credential", "secret", "name", "read_only", "created_at", "revoked_at", "user_id"),
}
# Fields a row may come without: a new row then gets the column's default (schema.sql: a user's role
# editor, an API key's user_id null, a service key, a cycle's dates and a key result's owner null), and a
# stored row keeps its own.
OPTIONAL = {"users": ("role",), "api_keys": ("user_id",), "cycles": ("starts_on", "ends_on"),
            "key_results": ("owner_id",)}


class NotGiven:
    """The value of an OPTIONAL field a row comes without."""

    def __repr__(self):
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()


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
    return upsert(name, "id", fields)


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


def write_row(db, name, values):
    """Adds the row of table name (values in FIELDS[name] order), or updates the stored one with its id
    when anything but created_at differs (a team member: adds it unless stored); the row's seq when written,
    None when it was left as it was."""
    parameters, omitted = write_parameters(name, values)
    answer = db.execute(write_statement(name, omitted), parameters).fetchone()
    return None if answer is None else answer[0]


def add_checkin(db, checkin, skip_recorded=False):
    """Adds a check-in (a dict of FIELDS["checkins"]) to the key result it names; with skip_recorded, not
    when one with its id is already recorded there. Its seq, or None when it was not added."""
    parameters = (checkin["id"], checkin["value"], checkin["confidence"], checkin["comment"], checkin["author_id"],
                  checkin["created_at"], checkin["key_result_id"])
    answer = db.execute(ADD_CHECKINS[skip_recorded], parameters + ((checkin["id"],) if skip_recorded else ())).fetchone()
    return None if answer is None else answer[0]
