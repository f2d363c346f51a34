"""The bulk writes of the importers: whole rows by id (API keys by credential), added, updated or left alone.

okr import and okr import-simpleokr write through here, inside the caller's
transaction, rows already checked (okr.transfer.rows). Each write is one
prepared statement: a row is one tuple of values in FIELDS order, so that an
import of half a million rows builds nothing per row but its parameters.
"""
from ..emails import email_key

# The fields of a whole row of each table, in the order the writes below take them (the okr-export
# format's records have them in this order too). A key result's cycle is its objective's; a check-in
# names its key result by id.
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




ADD_CHECKINS = {False: ADD_CHECKIN.format(unless=""), True: ADD_CHECKIN.format(unless=UNLESS_RECORDED)}


def write_row(db, name, values):
    """Adds the row of table name (values in FIELDS[name] order), or updates the stored one with its id
    when anything but created_at differs; the row's seq when written, None when it was left as it was."""
    answer = db.execute(WRITES[name], write_parameters(name, values)).fetchone()
    return None if answer is None else answer[0]


def add_checkin(db, checkin, skip_recorded=False):
    """Adds a check-in (a dict of FIELDS["checkins"]) to the key result it names; with skip_recorded, not
    when one with its id is already recorded there. Its seq, or None when it was not added."""
    parameters = (checkin["id"], checkin["value"], checkin["confidence"], checkin["comment"], checkin["author_id"],
                  checkin["created_at"], checkin["key_result_id"])
    answer = db.execute(ADD_CHECKINS[skip_recorded], parameters + ((checkin["id"],) if skip_recorded else ())).fetchone()
    return None if answer is None else answer[0]
