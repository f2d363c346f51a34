"""The number in a document: a JSON answer's node that an RFC 9535 JSONPath selects, a CSV file's cell."""
import csv
import functools
import io
import json
import re
from decimal import Decimal

import jsonpath_rfc9535

from .values import SourceFailed, number, shown

# A cell in a spreadsheet's notation: a column's letters and a line's number (A1 is the header line's first).
CELL = re.compile(r"([A-Za-z]{1,3})([1-9][0-9]{0,6})")
# A number with thousands separators: 1,234 or -1,234,567.89 (the separator only between groups of three).
GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


@functools.lru_cache(maxsize=1024)
def compiled(path):
    """path (a str) compiled, kept: a source's path is checked and used at every run, and compiling it costs more
    than finding its node. JSONPathError for one that does not parse."""
    return jsonpath_rfc9535.compile(path)


def path_problem(path):
    """Why path is not an RFC 9535 JSONPath, or None."""
    if not isinstance(path, str) or not path.strip():
        return "the path must be a JSONPath such as $.total_count"
    try:
        compiled(path)
    except jsonpath_rfc9535.JSONPathError as error:
        return f"the JSONPath does not parse: {error}"
    return None


def refuse_constant(name):
    raise ValueError(f"{name} is not JSON")


def json_number(body, path):
    """The number that path selects in body (JSON, bytes): exactly one node, a JSON number (not a bool) or a
    string holding a decimal number."""
    try:
        document = json.loads(body.decode("utf-8-sig"), parse_float=Decimal, parse_constant=refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise SourceFailed(f"the answer is not JSON (it starts {shown(start_of(body))})") from None
    problem = path_problem(path)
    if problem:
        raise SourceFailed(problem)
    nodes = compiled(path).find(document)
    if len(nodes) == 0:
        raise SourceFailed(f"the path {path} selects nothing in the answer")
    if len(nodes) > 1:
        raise SourceFailed(f"the path {path} selects {len(nodes)} values, not one")
    return number(nodes[0].value, f"what {path} selects")


def start_of(body):
    return " ".join(body[:60].decode("utf-8", "replace").split())


def cell_problem(path):
    """Why path is not a cell (B7, or column@row: the column headed "column", in the row whose first cell is
    "row"), or None."""
    if not isinstance(path, str) or not path.strip():
        return "the cell must be given as B7 or as column@row, such as Revenue@2026-03"
    if "@" in path:
        column, row = (part.strip() for part in path.split("@", 1))
        if not column or not row:
            return "the cell column@row needs both a column's header and a row's first cell, as in Revenue@2026-03"
        return None
    if not CELL.fullmatch(path.strip()):
        return "the cell must be given as B7 (a column's letters and a line's number) or as column@row"
    return None


def column_index(letters):
    index = 0
    for letter in letters.upper():
        index = index * 26 + ord(letter) - ord("A") + 1
    return index - 1


def csv_number(body, path, content_type=""):
    """The number in the cell path of body (a CSV file, UTF-8, a BOM allowed)."""
    if content_type.startswith("text/html"):
        raise SourceFailed("the answer is a web page, not a CSV file (is the sheet published as CSV?)")
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SourceFailed("the answer is not UTF-8 text") from None
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as error:
        raise SourceFailed(f"the answer is not CSV: {error}") from None
    problem = cell_problem(path)
    if problem:
        raise SourceFailed(problem)
    if "@" in path:
        value, name = keyed_cell(rows, *(part.strip() for part in path.split("@", 1)))
    else:
        value, name = lettered_cell(rows, path.strip().upper())
    return cell_value(value, name)


def lettered_cell(rows, path):
    letters, line = CELL.fullmatch(path).groups()
    column, line = column_index(letters), int(line)
    if line > len(rows):
        raise SourceFailed(f"the file has {len(rows)} lines: there is no line {line} for the cell {path}")
    if column >= len(rows[line - 1]):
        raise SourceFailed(f"line {line} has {len(rows[line - 1])} cells: there is no column {letters} for "
                           f"the cell {path}")
    return rows[line - 1][column], f"the cell {path}"


def keyed_cell(rows, header, key):
    if not rows:
        raise SourceFailed("the file is empty")
    columns = [index for index, cell in enumerate(rows[0]) if cell.strip() == header]
    if not columns:
        raise SourceFailed(f"no column of the header line is headed {header!r}")
    if len(columns) > 1:
        raise SourceFailed(f"{len(columns)} columns are headed {header!r}, not one")
    lines = [number for number, row in enumerate(rows[1:], 2) if row and row[0].strip() == key]
    if not lines:
        raise SourceFailed(f"no line starts with {key!r}")
    if len(lines) > 1:
        raise SourceFailed(f"lines {', '.join(map(str, lines))} all start with {key!r}, not one")
    row = rows[lines[0] - 1]
    if columns[0] >= len(row):
        raise SourceFailed(f"line {lines[0]} has no cell in the column {header!r}")
    return row[columns[0]], f"the cell {header}@{key}"


def cell_value(value, name):
    """A cell's number: spaces around it, thousands separators (1,234.5) and a trailing % (read as the number
    shown: 12.5% is 12.5) allowed."""
    text = value.strip()
    if not text:
        raise SourceFailed(f"{name} is empty")
    if text.endswith("%"):
        text = text[:-1].rstrip()
    if GROUPED.fullmatch(text):
        text = text.replace(",", "")
    return number(text, name) if text else number(value, name)
