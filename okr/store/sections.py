"""The tables as the okr-export format's sections (okr.store.bulk's FIELDS) read back, and the lookups of the
importers' checks: okr export streams every section from a cursor of its own, okr import and okr
import-simpleokr ask whether a row exists, what it holds, and the newest seq before they write.
"""
from .bulk import FIELDS

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
