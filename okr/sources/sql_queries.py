"""The SQL sources: one SELECT run against another system's database (PostgreSQL through psycopg 3, or a
SQLite file), read only, within a statement timeout; its one row's one column is the number.

The SQL here is an editor's, run on the connection's database: the service's own database is never opened."""
import ipaddress
import json
import os
import re
import socket
import sqlite3
import time
from urllib.parse import quote, unquote, urlsplit

from .values import SourceFailed, masked, number

# A statement runs at most this long (or the read's timeout, when shorter).
STATEMENT_SECONDS = 10
# Rows are counted up to this many past the one, for the sentence that says how many there were.
COUNTED_ROWS = 1000
# Words that write or change something: a query holding one as a word is refused before it is run.
WRITES = {"INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "DROP", "ALTER", "TRUNCATE",
          "GRANT", "REVOKE", "COPY", "CALL", "DO", "EXECUTE", "VACUUM", "REINDEX", "CLUSTER", "LOCK", "ATTACH",
          "DETACH", "PRAGMA", "SET", "RESET", "NOTIFY", "LISTEN", "INTO"}
# A PostgreSQL connection never goes to these (the cloud's metadata and link-local addresses).
NEVER = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fd00:ec2::254/128"))
TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>'(?:[^']|'')*(?:'|\Z)|"(?:[^"]|"")*(?:"|\Z)|`[^`]*(?:`|\Z))
  | (?P<dollar>\$(?P<tag>[A-Za-z_][A-Za-z_0-9]*)?\$)
  | (?P<as_of>(?<!:):as_of\b)
  | (?P<word>[A-Za-z_][A-Za-z_0-9$]*)
  | (?P<other>.)
""", re.X | re.S)


def tokens(query):
    """The query's tokens, (kind, text), a dollar-quoted string as one string."""
    found, at = [], 0
    while at < len(query):
        match = TOKEN.match(query, at)
        if match.group("dollar"):
            close = query.find(match.group("dollar"), match.end())
            end = len(query) if close < 0 else close + len(match.group("dollar"))
            found.append(("string", query[at:end]))
            at = end
            continue
        kind = next(name for name in ("space", "comment", "string", "as_of", "word", "other") if match.group(name))
        found.append((kind, match.group(0)))
        at = match.end()
    return found


def sql_problem(query):
    """Why query is not one SELECT (or WITH ... SELECT) that only reads, or None."""
    if not isinstance(query, str) or not query.strip():
        return "the query must be one SELECT statement"
    meaningful = [(kind, text) for kind, text in tokens(query) if kind not in ("space", "comment")]
    while meaningful and meaningful[-1] == ("other", ";"):
        meaningful.pop()
    if not meaningful:
        return "the query must be one SELECT statement"
    if ("other", ";") in meaningful:
        return "the query must be one statement: no ; between statements"
    first = meaningful[0][1].upper()
    if meaningful[0][0] != "word" or first not in ("SELECT", "WITH"):
        return "the query must be a SELECT (or WITH ... SELECT): a source only reads"
    writes = sorted({text.upper() for kind, text in meaningful if kind == "word" and text.upper() in WRITES})
    if writes:
        return f"the query must only read: it holds {', '.join(writes)}"
    return None


def takes_as_of(query):
    return isinstance(query, str) and any(kind == "as_of" for kind, _ in tokens(query))


def one_number(columns, rows, more):
    """The number in a result of one row of one column; SourceFailed in plain words otherwise."""
    if len(columns) != 1:
        raise SourceFailed(f"the query returned {len(columns)} columns, not one")
    if not rows:
        raise SourceFailed("the query returned no rows, not one")
    if len(rows) > 1:
        count = f"more than {COUNTED_ROWS}" if more else str(len(rows))
        raise SourceFailed(f"the query returned {count} rows, not one")
    return number(rows[0][0], "the query's value")


def answer_of(columns, rows):
    """The result as the bytes kept for evidence: JSON of its columns and rows, values as text."""
    return json.dumps({"columns": columns, "rows": [[None if cell is None else str(cell) for cell in row]
                                                    for row in rows]}, ensure_ascii=False).encode("utf-8")


# PostgreSQL

def postgresql_problem(address):
    """Why address is not postgresql://user@host[:port]/dbname (no password), or None."""
    if not isinstance(address, str):
        return "the address must be postgresql://user@host:port/dbname"
    try:
        parts = urlsplit(address)
        parts.port
    except ValueError as error:
        return f"the address is not a PostgreSQL URL: {error}"
    if parts.scheme not in ("postgresql", "postgres") or not parts.hostname or not parts.username:
        return "the address must be postgresql://user@host:port/dbname"
    if parts.password is not None:
        return "the address may not hold the password: the password is the connection's secret"
    if not parts.path.strip("/") or "/" in parts.path.strip("/"):
        return "the address must name one database: postgresql://user@host:port/dbname"
    if parts.query or parts.fragment:
        return "the address may not hold options (?...)"
    try:
        literal = ipaddress.ip_address(parts.hostname)
    except ValueError:
        return None
    if any(literal in network for network in NEVER):
        return f"{literal} is a link-local or metadata address, which a source may never reach"
    return None


def postgresql_host(host, port):
    """The address to connect to (pinned, so that the name cannot resolve elsewhere after the check)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise SourceFailed(f"{host} does not resolve: {error}") from None
    addresses = [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos
                 if info[0] in (socket.AF_INET, socket.AF_INET6)]
    for address in addresses:
        if any(address in network for network in NEVER):
            raise SourceFailed(f"{host} is {address}, a link-local or metadata address, which a source may "
                               "never reach")
    if not addresses:
        raise SourceFailed(f"{host} has no IP address")
    return str(addresses[0])


def psycopg_query(query):
    """query in psycopg's placeholders: :as_of as %(as_of)s, every other % doubled."""
    return "".join("%(as_of)s" if kind == "as_of" else text.replace("%", "%%") for kind, text in tokens(query))


def run_postgresql(address, secret, query, moment, timeout):
    """(columns, rows, more) of query on the PostgreSQL database at address, read only."""
    try:
        import psycopg  # imported when used: the rest of the service never needs it
    except ImportError as error:  # the single file leaves psycopg's own libpq out (its size goal): a system's
        raise SourceFailed(f"PostgreSQL sources need libpq on this machine ({error}): install it (Debian: "
                           "apt-get install libpq5), or run okr installed with pip, which brings its own") from None

    problem = postgresql_problem(address) or sql_problem(query)
    if problem:
        raise SourceFailed(problem)
    parts = urlsplit(address)
    port = parts.port or 5432
    statement_ms = int(min(STATEMENT_SECONDS, timeout) * 1000)
    try:
        with psycopg.connect(host=parts.hostname, hostaddr=postgresql_host(parts.hostname, port), port=port,
                             dbname=unquote(parts.path.strip("/")), user=unquote(parts.username),
                             password=secret or "", connect_timeout=max(2, int(min(timeout, STATEMENT_SECONDS))),
                             options=f"-c statement_timeout={statement_ms}",
                             application_name="okr-sources", autocommit=False) as connection:
            connection.read_only = True
            params = {"as_of": moment} if takes_as_of(query) else None
            with connection.cursor(name="okr_source") as cursor:
                cursor.execute(psycopg_query(query) if params else query, params)
                columns = [column.name for column in cursor.description or ()]
                rows = cursor.fetchmany(COUNTED_ROWS + 1)
            connection.rollback()
    except psycopg.errors.QueryCanceled:
        raise SourceFailed(f"the query ran longer than {statement_ms / 1000:g} s and was stopped") from None
    except psycopg.Error as error:
        raise SourceFailed(masked(f"PostgreSQL: {' '.join(str(error).split())}", secret)) from None
    return columns, rows[:COUNTED_ROWS], len(rows) > COUNTED_ROWS


# SQLite

def sqlite_problem(address):
    """Why address is not an absolute path of a SQLite file, or None."""
    if not isinstance(address, str) or not os.path.isabs(address) or "\x00" in address:
        return "the address must be the absolute path of a SQLite file, such as /srv/data/metrics.db"
    return None


def run_sqlite(address, query, moment, timeout):
    """(columns, rows, more) of query on the SQLite file at address, opened read only."""
    problem = sqlite_problem(address) or sql_problem(query)
    if problem:
        raise SourceFailed(problem)
    if not os.path.isfile(address):
        raise SourceFailed(f"there is no file {address}")
    limit = min(STATEMENT_SECONDS, timeout)
    end = time.monotonic() + limit
    try:
        connection = sqlite3.connect(f"file:{quote(address)}?mode=ro", uri=True, timeout=limit)
    except sqlite3.Error as error:
        raise SourceFailed(f"cannot open {address}: {error}") from None
    try:
        connection.execute("PRAGMA query_only = ON")
        connection.execute("PRAGMA schema_version")  # reads the file's header: another kind of file fails here
        # Called every thousand or so steps of the virtual machine: a non-zero answer interrupts the statement.
        connection.set_progress_handler(lambda: int(time.monotonic() > end), 1000)
        cursor = connection.execute(query, {"as_of": moment} if takes_as_of(query) else {})
        columns = [column[0] for column in cursor.description or ()]
        rows = cursor.fetchmany(COUNTED_ROWS + 1)
    except sqlite3.DatabaseError as error:
        if time.monotonic() > end:
            raise SourceFailed(f"the query ran longer than {limit:g} s and was stopped") from None
        if "file is not a database" in str(error):
            raise SourceFailed(f"{address} is not a SQLite database") from None
        raise SourceFailed(f"SQLite: {error}") from None
    finally:
        connection.close()
    return columns, rows[:COUNTED_ROWS], len(rows) > COUNTED_ROWS
