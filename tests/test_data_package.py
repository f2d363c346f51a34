"""The data package's rule, read from the sources: SQL, reads as well as writes, lives in okr/store/.

Outside it, only the schema and its migrations may hold SQL text or run statements; any module may
control a transaction (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE) or set a PRAGMA. A module that
writes with SQL of its own fails as one that reads does.
"""
import ast
import pathlib
import re

import okr

PACKAGE = pathlib.Path(okr.__file__).parent
ROOT = PACKAGE.parent

# Where SQL may live, as paths from the checkout's root.
DATA_PACKAGE = "okr/store/"
SCHEMA_MODULES = set()  # the schema and its migrations are the data package's too (okr/store/schema.py)
NOT_YET_MOVED = set()  # modules whose SQL has yet to move into the data package: none
# Modules that run an editor's query on another system's database (a metric source), never on the service's own.
OTHER_DATABASES = {"okr/sources/sql_queries.py"}

EXECUTE = {"execute", "executemany", "executescript"}
CONTROL = re.compile(r"""\s*(?:BEGIN(?:\s+(?:DEFERRED|IMMEDIATE|EXCLUSIVE))?|COMMIT|END|ROLLBACK(?:\s+TO\s+\w+)?
                         |SAVEPOINT\s+\w+|RELEASE(?:\s+SAVEPOINT)?\s+\w+|PRAGMA\s+\w[^;]*)\s*""", re.X)

# A statement's start, in the capitals the project writes SQL in (a sentence's "Delete this cycle?" is not
# one) and in a statement's shape.
STATEMENT = re.compile(r"""\s*(?:SELECT(?:\s|\Z)|INSERT\s+(?:OR\s+[A-Z]+\s+)?INTO\s|REPLACE\s+INTO\s|DELETE\s+FROM\s
                           |UPDATE\s+\S+\s+SET\s|WITH\s+(?:RECURSIVE\s+)?\w+\b.*?\bAS\s*\(
                           |CREATE\s+(?:UNIQUE\s+|TEMP\s+|TEMPORARY\s+|VIRTUAL\s+)?(?:TABLE|INDEX|TRIGGER|VIEW)\s
                           |ALTER\s+TABLE\s|DROP\s+(?:TABLE|INDEX|TRIGGER|VIEW)\s)""", re.X | re.S)
# A query inside text: a condition with a subquery, one of a UNION's parts.
QUERY = re.compile(r"\(\s*SELECT\s|\bSELECT\s[^\n]*?\bFROM\s")

PLACE = "\x00"  # an f-string's {value}, in the text the patterns read


def python_files():
    return sorted(path for path in PACKAGE.rglob("*.py"))


def where(path):
    return path.relative_to(ROOT).as_posix()


def checked(name):
    return not (name.startswith(DATA_PACKAGE) or name in SCHEMA_MODULES or name in NOT_YET_MOVED
                or name in OTHER_DATABASES)


def text_of(node):
    """A string literal's text ({value} parts of an f-string as one placeholder), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else PLACE for part in node.values)
    return None


def controls_a_transaction(node):
    """True when the statement given to execute is transaction control or a PRAGMA, whichever branch runs."""
    if isinstance(node, ast.IfExp):
        return controls_a_transaction(node.body) and controls_a_transaction(node.orelse)
    text = text_of(node)
    return text is not None and CONTROL.fullmatch(text) is not None


def docstrings(tree):
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def problems(source, name):
    """Each SQL statement run, or SQL text held, in a module's source: (line, what)."""
    tree = ast.parse(source, name)
    found, skipped = [], docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skipped.update(id(part) for part in node.values)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in EXECUTE
                and not (node.args and controls_a_transaction(node.args[0]))):
            found.append((node.lineno, f"runs SQL through .{node.func.attr}"))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        text = text_of(node)
        if text is not None and (STATEMENT.match(text) or QUERY.search(text)):
            found.append((node.lineno, f"holds SQL text: {text.strip()[:60]!r}"))
    return sorted(set(found))


def test_sql_lives_in_the_data_package():
    found = [f"{where(path)}:{line}: {what}" for path in python_files() if checked(where(path))
             for line, what in problems(path.read_text(encoding="utf-8"), where(path))]
    assert not found, "SQL outside okr/store/ (move it into the resource's module there):\n" + "\n".join(found)


def test_the_allowed_modules_exist():
    for name in SCHEMA_MODULES | NOT_YET_MOVED | OTHER_DATABASES:
        assert (ROOT / name).is_file(), f"{name} is allowed SQL but does not exist: point the list at its new name"


def test_the_check_tells_sql_from_sentences():
    source = '''
def f(db, table, x):
    """A SELECT in a docstring: words about SQL, not SQL."""
    db.execute("BEGIN IMMEDIATE")
    db.execute("BEGIN" if x else "BEGIN IMMEDIATE")
    db.execute(f"PRAGMA cache_size = {x}")
    db.execute("SAVEPOINT row")
    db.execute("ROLLBACK TO row")
    db.execute("RELEASE row")
    db.execute("COMMIT")
    flash("Delete this cycle? Select a team from the list, then update it.")
    words = ("DELETE", "UPDATE", "Insert into the form", "With a team as its owner", "Drop table names.")
    q = "SELECT id FROM users WHERE id = ?"
    q = f"SELECT {x} FROM {table}"
    q = "SELECT " + x
    q = f"UPDATE {table} SET name = ?"
    q = "INSERT OR IGNORE INTO teams (id) VALUES (?)"
    q = "DELETE FROM teams WHERE id = ?"
    q = "WITH RECURSIVE tree(id) AS (SELECT 1)"
    q = "x.id IN (SELECT value FROM json_each(?))"
    db.execute(q)
    db.executemany("PRAGMA x", [])
'''
    lines = source.splitlines()
    found = problems(source, "example.py")
    assert [lines[line - 1] for line, what in found if what.startswith("holds")] == [
        line for line in lines if line.startswith("    q =")]
    assert [lines[line - 1] for line, what in found if what.startswith("runs")] == ["    db.execute(q)"]
