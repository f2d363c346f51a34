"""A CSV of people, the People page's way to add and update many at once: the file read and each row checked
(the one rule, Flask-free), then set against the people and teams stored (a plan: who is added, who changes,
who stays as they are, which rows are skipped and why), then applied in the caller's transaction through
okr.store, whose writes record their events as a single add, a role change or a new member does.

The file: UTF-8 (a byte-order mark is taken), at most MAX_BYTES and MAX_ROWS rows besides its header. The header
names the columns, in any order, whatever their case: name, email and role, and teams if wanted (team names
separated by ";"); no other. A row whose email is a stored person's (under the email rule,
okr.rules.email_addresses) updates that person: their name and role become the row's, and they join the row's
teams (teams are only ever added to: a membership the row does not name stays). Everything the row needs is
checked before anything is written; a row that fails a check is skipped, with its reasons, and the others go on.
"""
import csv
import io
from dataclasses import dataclass, field

from marshmallow import ValidationError

from ..rules import names
from ..rules.body_schemas import user_schema
from ..rules.email_addresses import email_key
from ..rules.messages import flatten
from ..store import invitations, team_members, teams, users

MAX_BYTES = 1_000_000  # 1 MB: a file's bytes (a pasted text's, its line breaks counted as one byte each)
MAX_ROWS = 5_000  # rows besides the header, blank ones included
COLUMNS = ("name", "email", "role", "teams")
REQUIRED = ("name", "email", "role")
TEAM_SEPARATOR = ";"
COLUMN_WORDS = "name, email, role and (if wanted) teams"


class Refused(Exception):
    """The file as a whole is refused (too large, not UTF-8, no usable header...): nothing of it is applied. Its
    message is a sentence for beside the form's field."""


@dataclass
class Row:
    """A row of the file as read: its row number (the line it starts on), its cells trimmed, and its problems."""
    number: int
    name: str = ""
    email: str = ""
    role: str = ""
    teams: list = field(default_factory=list)
    problems: list = field(default_factory=list)


@dataclass
class Entry:
    """A row as the plan has it: what it does (changes, in words; the teams it joins, as (id, name)), or why it
    is skipped (reasons); user: the stored person it updates."""
    row: Row
    changes: list = field(default_factory=list)
    teams: list = field(default_factory=list)
    reasons: list = field(default_factory=list)
    user: object = None


@dataclass
class Plan:
    """What applying the file does: rows added, changed, unchanged (a stored person the row changes nothing of)
    and skipped, each in the file's order."""
    text: str
    added: list = field(default_factory=list)
    changed: list = field(default_factory=list)
    unchanged: list = field(default_factory=list)
    skipped: list = field(default_factory=list)


def text_of(data):
    """The text of a file (bytes) or of a pasted text (str), within the limits; Refused otherwise."""
    if isinstance(data, bytes):
        size = len(data)
        if size <= MAX_BYTES:
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError as error:
                raise Refused(f"The file is not UTF-8 text (its byte {error.start + 1:,} is not): save it as "
                              "“CSV UTF-8” and choose it again.") from None
    else:
        text = data.removeprefix("\ufeff")
        size = len(text.replace("\r\n", "\n").encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise Refused(f"The file is larger than 1 MB: at most {MAX_BYTES:,} bytes are taken. Split it into smaller "
                      "files and apply each.")
    if not text.strip():
        raise Refused(f"The file is empty: it needs a header ({COLUMN_WORDS}), then a row per person.")
    if "\x00" in text:  # no text holds one (a UTF-16 file read as UTF-8 holds many), and a page cannot carry it
        raise Refused("The file holds NUL characters, as a UTF-16 file does: save it as “CSV UTF-8” and choose it "
                      "again.")
    return text


def read(data):
    """(text, rows): the file's text and each of its rows as read and checked on its own (Row), blank rows left
    out; Refused for the file as a whole."""
    text = text_of(data)
    reader = csv.reader(io.StringIO(text, newline=""))
    header, rows, count, ended = None, [], 0, 0
    try:
        for cells in reader:
            number, ended = ended + 1, reader.line_num  # the line the row starts on, and the one it ends on
            if header is None:
                if any(cell.strip() for cell in cells):
                    header = columns(cells)
                continue
            count += 1
            if count > MAX_ROWS:
                raise Refused(f"The file has more than {MAX_ROWS:,} rows besides its header: split it into smaller "
                              "files and apply each.")
            if any(cell.strip() for cell in cells):
                rows.append(checked(number, cells, header))
    except csv.Error as error:
        raise Refused(f"Row {ended + 1:,} cannot be read as CSV ({error}).") from None
    if header is None:
        raise Refused(f"The file is empty: it needs a header ({COLUMN_WORDS}), then a row per person.")
    mark_duplicates(rows)
    return text, rows


def columns(cells):
    """The header's column names, each one of COLUMNS; Refused for anything else."""
    named = [cell.strip().lower() for cell in cells]
    if any("@" in cell for cell in named):
        raise Refused(f"The first row must be the header, naming the columns {COLUMN_WORDS}; it holds an email.")
    for position, name in enumerate(named, start=1):
        if not name:
            raise Refused(f"Column {position} of the header has no name: the columns are {COLUMN_WORDS}.")
        if name not in COLUMNS:
            shown = names.one_line(cells[position - 1].strip())[:40]
            raise Refused(f"The header names a column “{shown}”: the columns are {COLUMN_WORDS}.")
        if named.count(name) > 1:
            raise Refused(f"The header names the column {name} twice.")
    missing = [name for name in REQUIRED if name not in named]
    if missing:
        raise Refused(f"The header has no column {' nor '.join(missing)}: the columns are {COLUMN_WORDS}, in any "
                      "order.")
    return named


def checked(number, cells, header):
    """The row's cells checked on their own (not against what is stored): a Row with its problems."""
    row = Row(number)
    if len(cells) > len(header):
        row.problems.append(f"it has {len(cells)} cells but the header names {len(header)} columns (put a cell "
                            "that holds a comma in double quotes)")
        return row
    cells = dict(zip(header, cells))  # a cell left off at the end is empty
    controlled = [column for column in header if names.CONTROL.search(cells.get(column, ""))]
    for column in controlled:
        row.problems.append(f"its {column} holds a control character, such as a line break or a tab"
                            + (" (a double quote left open?)" if "\n" in cells[column] or "\r" in cells[column]
                               else ""))
    row.name, row.email = cells.get("name", "").strip(), cells.get("email", "").strip()
    try:
        loaded = user_schema.load({"name": row.name, "email": row.email})
        row.name, row.email = loaded["name"], loaded["email"]
    except ValidationError as error:
        for column, message in flatten(error.messages).items():
            if column not in controlled:
                row.problems.append(f"its {column}: {message[:1].lower()}{message[1:].rstrip('.')}")
    row.role = cells.get("role", "").strip().lower()
    if row.role not in users.ROLES:
        shown = names.one_line(cells.get("role", "").strip())[:40]
        row.problems.append(f"its role is “{shown}”, not admin, editor or viewer" if shown
                            else "it has no role: admin, editor or viewer")
    seen = set()
    for team in cells.get("teams", "").split(TEAM_SEPARATOR):
        team = team.strip()
        if team and team.casefold() not in seen:
            seen.add(team.casefold())
            row.teams.append(team)
    return row


def mark_duplicates(rows):
    """Every row whose email (under the email rule) another row has too is skipped: which was meant is unknown."""
    numbers = {}
    for row in rows:
        if row.email and not any(problem.startswith("its email") for problem in row.problems):
            numbers.setdefault(email_key(row.email), []).append(row.number)
    for row in rows:
        others = [n for n in numbers.get(email_key(row.email), ()) if n != row.number] if row.email else []
        if others:
            row.problems.append(f"its email is on row {', '.join(f'{n:,}' for n in others)} too")


def plan(db, text, rows):
    """The Plan of the rows (read's) against what db holds now."""
    result = Plan(text)
    keys = [email_key(row.email) for row in rows if not row.problems]
    stored = {row["email_key"]: row for row in users.with_email_keys(db, keys)}
    joined = {}
    for membership in team_members.memberships_of(db, [user["id"] for user in stored.values()]):
        joined.setdefault(membership["user_id"], set()).add(membership["team_id"])
    named = {}
    for team in teams.pick_list(db):
        named.setdefault(team["name"].strip().casefold(), []).append(team)
    admins = users.active_admin_count(db)
    for row in rows:
        entry = Entry(row, reasons=list(row.problems))
        if not entry.reasons:
            entry.teams = chosen_teams(row, named, entry.reasons)
        user = None if entry.reasons else stored.get(email_key(row.email))
        if entry.reasons:
            result.skipped.append(entry)
        elif user is None:
            entry.changes = [f"joins {', '.join(team['name'] for team in entry.teams)}"] if entry.teams else []
            admins += row.role == "admin"
            result.added.append(entry)
        elif not user["is_active"]:
            entry.reasons.append(f"{user['email']} is deactivated: reactivate them first, or leave the row out")
            result.skipped.append(entry)
        else:
            entry.user = user
            entry.teams = [team for team in entry.teams if team["id"] not in joined.get(user["id"], ())]
            if user["role"] == "admin" and row.role != "admin" and admins <= 1:
                entry.reasons.append(f"{user['email']} is the last active admin: make another admin first")
                result.skipped.append(entry)
                continue
            admins += (row.role == "admin") - (user["role"] == "admin")
            entry.changes = changes(user, row, entry.teams)
            (result.changed if entry.changes else result.unchanged).append(entry)
    return result


def chosen_teams(row, named, reasons):
    """The teams (id, name) the row names; a reason for each name that is no team's, or more than one's."""
    chosen, unknown = [], []
    for name in row.teams:
        found = named.get(name.casefold(), [])
        if len(found) == 1:
            chosen.append(found[0])
        elif found:
            reasons.append(f"{len(found)} teams are named “{name}”: rename one of them")
        else:
            unknown.append(f"“{name}”")
    if unknown:
        reasons.append(f"no team is named {', '.join(unknown)}")
    return chosen


def changes(user, row, new_teams):
    """What the row changes of the stored person, in words."""
    said = []
    if user["name"] != row.name:
        said.append(f"name: {user['name']} → {row.name}")
    if user["role"] != row.role:
        said.append(f"role: {user['role']} → {row.role}")
    if new_teams:
        said.append(f"joins {', '.join(team['name'] for team in new_teams)}")
    return said


def apply(db, planned, invite):
    """Writes the plan (plan's, made in this same transaction): the people added, with their teams, and the
    changes of those changed, each with its event. With invite, an invitation for each person added: [(their
    row, the invitation's token)]; else []."""
    invited = []
    for entry in planned.added:
        row = entry.row
        user = users.create(db, row.name, row.email, row.role)
        for team in entry.teams:
            team_members.add(db, team["id"], user["id"])
        if invite:
            invited.append((user, invitations.create(db, user)))
    for entry in planned.changed:
        row, user = entry.row, entry.user
        if user["name"] != row.name:
            user = users.update(db, user, row.name, user["email"])
        if user["role"] != row.role:
            user = users.set_role(db, user, row.role)
        for team in entry.teams:
            team_members.add(db, team["id"], user["id"])
    return invited
