"""Everything out as an okr-export file, and a cycle's key results as CSV (the report's own figures)."""
import csv
import io
import json

from .. import progress
from ..reports import alignment
from ..store import reports as report_rows
from ..store import sections
from ..store.bulk import EVENT_JSON
from .rows import BOOLS, FIELDS, FORMAT, SECTIONS, VERSION, WRITTEN


def export_json(db, out, include_keys=False):
    """Writes everything in db to the text file out in the okr-export format; returns the count per section.

    Streams: one cursor per section, one record at a time, so memory stays flat
    whatever the size. Run it inside one read transaction for a consistent copy.
    """
    encode = json.JSONEncoder(ensure_ascii=False).encode
    counts = {}
    out.write(f'{{"format": "{FORMAT}", "version": {VERSION}')
    for name in SECTIONS if include_keys else WRITTEN:
        fields = FIELDS[name]
        out.write(f',\n"{name}": [')
        count = 0
        for row in section_rows(db, name):
            out.write((",\n" if count else "\n") + encode(dict(zip(fields, row))))
            count += 1
        out.write("\n]" if count else "]")
        counts[name] = count
    out.write("\n}\n")
    return counts


def section_rows(db, name, parse=json.loads):
    """Yields the rows of a section as tuples of its FIELDS' values, as the file has them (bools as bools, an
    event's actor, data and changes as JSON values, read from their text by parse)."""
    cursor = sections.section_cursor(db, name)
    if name == "events":
        texts = [index for index, field in enumerate(FIELDS[name]) if field in EVENT_JSON]
        for row in cursor:
            row = list(row)
            for index in texts:
                if row[index] is not None:
                    row[index] = parse(row[index])
            yield tuple(row)
        return
    flags = [index for index, field in enumerate(FIELDS[name]) if field in BOOLS]
    if not flags:
        yield from cursor
        return
    for row in cursor:
        row = list(row)
        for index in flags:
            row[index] = bool(row[index])
        yield tuple(row)


# A cycle's key results for spreadsheets: one row each, objective by objective.
CSV_COLUMNS = ("objective_id", "objective", "team_id", "team", "assignee_id", "assignee", "key_result_id",
               "key_result", "type", "start_value", "current_value", "target_value_min", "target_value_max",
               "progress", "confidence", "status", "stale", "last_checkin_at", "owner_id", "owner",
               "unit", "unit_position", "expected_progress", "pace_status", "objective_status", "weight",
               "progress_from", "initiatives_done", "initiatives_count")
# Free text, which a spreadsheet might take for a formula. The other columns are
# ids, fixed words, timestamps and the service's own decimal strings, which stay
# numbers ("-5.00" is minus five, not a formula).
TEXT_COLUMNS = frozenset({"objective", "team", "assignee", "key_result", "owner", "unit"})
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # OWASP's list for CSV injection

def cycle_key_results(db, cycle_id, now):
    """Yields (row, report entry) for each key result of a cycle, objective by objective, as they are read.

    The entry is the cycle report's (okr.reports.alignment.key_result_node): start value,
    progress, status, stale and last check-in by the same rules. now is an aware
    datetime, for staleness.
    """
    stale, pace = alignment.stale_test(db, now), alignment.pace_in_any_cycle(db, now)
    for row in report_rows.spreadsheet_rows(db, cycle_id):
        yield row, alignment.key_result_node(row, stale, pace)[0]


def with_objective_status(entries):
    """Yields (row, entry, its objective's status) for cycle_key_results' entries: one objective's at a time are
    held, whose key results give its status (okr.progress.objective_status, as in the report)."""
    held = []
    for row, node in entries:
        if held and held[0][0]["objective_id"] != row["objective_id"]:
            yield from objective_entries(held)
            held = []
        held.append((row, node))
    yield from objective_entries(held)


def objective_entries(held):
    status = progress.objective_status((node["status"] for _, node in held), ())
    for row, node in held:
        yield row, node, status


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
    for row, node, objective_status in with_objective_status(cycle_key_results(db, cycle_id, now)):
        values = {
            "objective_id": row["objective_id"], "objective": row["objective_name"],
            "team_id": row["objective_team_id"], "team": row["team_name"],
            "assignee_id": row["objective_assignee_id"], "assignee": row["assignee_name"],
            "key_result_id": node["id"], "key_result": node["name"], "type": node["type"],
            "start_value": node["start_value"], "current_value": node["current_value"],
            "target_value_min": node["target_value_min"], "target_value_max": node["target_value_max"],
            "progress": node["progress"], "confidence": node["confidence"], "status": node["status"],
            "stale": "true" if node["stale"] else "false", "last_checkin_at": node["last_checkin_at"],
            "owner_id": node["owner_id"], "owner": row["owner_name"],
            "unit": node["unit"], "unit_position": node["unit_position"],
            "expected_progress": node["expected_progress"], "pace_status": node["pace_status"],
            "objective_status": objective_status, "weight": node["weight"], "progress_from": node["progress_from"],
            "initiatives_done": node["initiatives_done"], "initiatives_count": node["initiatives_count"],
        }
        writer.writerow([spreadsheet_text(values[column]) if column in TEXT_COLUMNS
                         else "" if values[column] is None else values[column] for column in CSV_COLUMNS])
        count += 1
    return count


CSV_ENCODING = "utf-8-sig"  # with a byte order mark, so that spreadsheets read the file as UTF-8


def write_cycle_csv(db, cycle_id, now, out):
    """Writes the bytes of cycle_csv_bytes to the binary file out (a big cycle's, which may not fit in memory)."""
    text = io.TextIOWrapper(out, encoding=CSV_ENCODING, newline="")
    export_csv(db, cycle_id, text, now)
    text.flush()
    text.detach()  # leaves out open


def cycle_csv_bytes(db, cycle_id, now):
    """The bytes of the file okr export --format csv --cycle writes, for a download of a small cycle (a big
    one is spooled: okr.reports.spooled)."""
    out = io.StringIO(newline="")
    export_csv(db, cycle_id, out, now)
    return out.getvalue().encode(CSV_ENCODING)
