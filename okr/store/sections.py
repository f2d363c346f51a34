"""The tables as the okr-export format's sections (okr.store.bulk's FIELDS) read back, and the lookups of the
importers' checks: okr export streams every section from a cursor of its own, okr import and okr
import-simpleokr ask whether a row exists, what it holds, and the newest seq before they write.
"""
from .bulk import FIELDS, NOT_GIVEN

# Each section's whole rows in FIELDS order; a check-in names its key result by id.
SELECT = {name: f"SELECT {', '.join(fields)} FROM {name} ORDER BY seq" for name, fields in FIELDS.items()}
SELECT["checkins"] = (
    "SELECT c.id, k.id, c.value, c.confidence, c.comment, c.author_id, c.created_at"
    " FROM checkins c JOIN key_results k ON k.seq = c.key_result_seq ORDER BY c.seq"
)


def section_cursor(db, name):
    """A cursor over a section's rows, as plain tuples of its FIELDS' values as stored, in the order made: read
    one at a time as it goes, whatever the table's size."""
    cursor = db.cursor()
    cursor.row_factory = None  # plain tuples: sqlite3.Row costs more than the rest
    cursor.execute(SELECT[name])
    return cursor


def exists(db, name, row_id):
    """Whether the section's table holds a row with this id (an API key: this credential)."""
    column = "credential" if name == "api_keys" else "id"
    return db.execute(f"SELECT 1 FROM {name} WHERE {column} = ?", (row_id,)).fetchone() is not None


def stored(db, name, row_id):
    """The fields of FIELDS[name] of the stored row with this id, or None."""
    return db.execute(f"SELECT {', '.join(FIELDS[name])} FROM {name} WHERE id = ?", (row_id,)).fetchone()


def newest_seq(db, name):
    """The largest seq of the section's table (0 when empty): a row written later with a larger one was added."""
    return db.execute(f"SELECT coalesce(max(seq), 0) FROM {name}").fetchone()[0]


# The cycles a row is in as stored, and the one its record puts it in (a row moved is in two): what okr import
# asks when a closed cycle may be touched. A check-in is its key result's; a comment its objective's or key result's.
CYCLES_OF = {
    "objectives": "SELECT cycle_id FROM objectives WHERE id = :id UNION SELECT :cycle_id",
    "key_results": """SELECT cycle_id FROM key_results WHERE id = :id
                      UNION SELECT cycle_id FROM objectives WHERE id = :objective_id""",
    "checkins": "SELECT cycle_id FROM key_results WHERE id = :key_result_id",
    "comments": """SELECT coalesce(o.cycle_id, k.cycle_id) FROM comments c LEFT JOIN objectives o ON o.id = c.objective_id
                       LEFT JOIN key_results k ON k.id = c.key_result_id WHERE c.id = :id
                   UNION SELECT cycle_id FROM objectives WHERE id = :objective_id
                   UNION SELECT cycle_id FROM key_results WHERE id = :key_result_id""",
    "initiatives": """SELECT k.cycle_id FROM initiatives i JOIN key_results k ON k.id = i.key_result_id WHERE i.id = :id
                      UNION SELECT cycle_id FROM key_results WHERE id = :key_result_id""",
}


def cycles_of(db, name, row):
    """The ids of the cycles a row of the section (a dict of its FIELDS) is in, stored or as the record has it; a
    cycle's own id for a cycle; an empty set for a section outside cycles (users, teams, events...)."""
    if name == "cycles":
        return {row["id"]}
    if name not in CYCLES_OF:
        return set()
    return {cycle_id for (cycle_id,) in db.execute(CYCLES_OF[name], row) if cycle_id is not None}


RECORDED_CHECKIN = """SELECT 1 FROM checkins c JOIN key_results k ON k.seq = c.key_result_seq
    WHERE c.id = :id AND k.id = :key_result_id"""
# What a write never changes in a stored row: its key, when it was made, and its revision (okr.store.bulk).
KEPT = ("id", "created_at", "revision")


def unchanged(db, name, row):
    """Whether the stored row holds what the record (a dict of its FIELDS) has, so that writing it would change
    nothing (a field NOT_GIVEN is kept as stored); a check-in: whether it is recorded on its key result."""
    if name == "checkins":
        return db.execute(RECORDED_CHECKIN, row).fetchone() is not None
    stored_row = stored(db, name, row["id"])
    return stored_row is not None and all(
        row[field] is NOT_GIVEN or row[field] == stored_row[field] for field in FIELDS[name] if field not in KEPT)
