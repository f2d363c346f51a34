"""Search across cycles: objectives, key results, teams and people whose names (and people's emails) hold a
query, case-insensitively; the rule a query meets, and a page of matches in one order (objectives, key results,
teams, people, each in creation order).

A match's position is one integer, rank * RANK_SPAN + seq (rank: its kind's place in KINDS), so that the API's
page tokens (base64 row ids) and the page's links name a place in that order as they name a row elsewhere.
"""
from ..errors import Invalid
from . import visibility

KINDS = ("objective", "key_result", "team", "user")
# Row ids (seq) count up from 1 and no table nears 2**61 rows, so no seq reaches RANK_SPAN: rank and seq never
# overlap, and the largest position, 3 * 2**61 + seq, stays below 2**63, the largest row id a token takes.
RANK_SPAN = 2**61
LONGEST_QUERY = 200

# What each kind reads: the rows, with their cycle's name and (a key result's) objective's, and the columns a
# query is matched on. `hit` is the table's alias.
SOURCES = {
    "objective": ("SELECT hit.seq, hit.id, hit.name, hit.cycle_id, NULL AS objective_id, cycles.name AS cycle_name, "
                  "NULL AS objective_name FROM objectives AS hit JOIN cycles ON cycles.id = hit.cycle_id",
                  ("hit.name",)),
    "key_result": ("SELECT hit.seq, hit.id, hit.name, hit.cycle_id, hit.objective_id, cycles.name AS cycle_name, "
                   "objectives.name AS objective_name FROM key_results AS hit "
                   "JOIN objectives ON objectives.id = hit.objective_id JOIN cycles ON cycles.id = hit.cycle_id",
                   ("hit.name",)),
    "team": ("SELECT hit.seq, hit.id, hit.name, NULL AS cycle_id, NULL AS objective_id, NULL AS cycle_name, "
             "NULL AS objective_name FROM teams AS hit", ("hit.name",)),
    "user": ("SELECT hit.seq, hit.id, hit.name, NULL AS cycle_id, NULL AS objective_id, NULL AS cycle_name, "
             "NULL AS objective_name FROM users AS hit", ("hit.name", "hit.email")),
}
# What of each kind the viewer may see (okr.store.visibility): (sql, params).
SEEN = {"objective": lambda: visibility.seeing("hit"), "key_result": lambda: visibility.condition("hit.objective_id"),
        "team": lambda: ("1", ()), "user": lambda: ("1", ())}
# The SQL function a query with other letters than ASCII is matched with (registered for that query).
CONTAINS = "okr_search_contains"


def query_text(text):
    """The query a search runs: text without whitespace at both ends, 1 to 200 characters; Invalid naming q
    otherwise."""
    query = (text or "").strip()
    if not query:
        raise Invalid({"q": "Type something to search for."})
    if len(query) > LONGEST_QUERY:
        raise Invalid({"q": f"At most {LONGEST_QUERY} characters."})
    return query


def position(kind, seq):
    """A match's place in the search's order."""
    return KINDS.index(kind) * RANK_SPAN + seq


def contains(text, folded_query):
    """Whether text holds the query, letters of every script compared by their case folding ("ÉTÉ", "été")."""
    return text is not None and folded_query in text.casefold()


def matcher(db, query):
    """(condition, parameter) that match a column holding query: LIKE, which folds ASCII only, when the query is
    all ASCII; else the case-folding function, registered on db. (LIKE's pattern would end at a NUL: such a
    query is matched by the function too.)"""
    if query.isascii() and "\x00" not in query:
        escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return "{column} LIKE ? ESCAPE '\\'", f"%{escaped}%"
    db.create_function(CONTAINS, 2, contains, deterministic=True)
    return f"{CONTAINS}({{column}}, ?)", query.casefold()


def page(db, query, after, limit):
    """Up to limit matches of query (query_text's) after the position after, in order: each row with its kind,
    position, id, name, cycle_id, objective_id, cycle_name and objective_name. Reads at most limit rows."""
    condition, parameter = matcher(db, query)
    found = []
    start_rank, start_seq = divmod(after, RANK_SPAN)
    for rank in range(start_rank, len(KINDS)):
        if len(found) >= limit:
            break
        kind = KINDS[rank]
        select, columns = SOURCES[kind]
        where = " OR ".join(condition.format(column=column) for column in columns)
        seen, seen_params = SEEN[kind]()
        rows = db.execute(f"{select} WHERE hit.seq > ? AND ({where}) AND {seen} ORDER BY hit.seq LIMIT ?",
                          (start_seq if rank == start_rank else 0, *[parameter] * len(columns), *seen_params,
                           limit - len(found))).fetchall()
        found.extend({**dict(row), "kind": kind, "position": position(kind, row["seq"])} for row in rows)
    return found
