"""GET /v1/search: objectives, key results, teams and people across cycles whose names (people's emails too) hold a
query, whatever the case; in one order (objectives, key results, teams, people, each in creation order), a page at
a time (okr/store/search.py, okr/api/search.py)."""
import pytest

from helpers import assert_error, create_key, make_cycle, make_key_result, make_objective, make_team, make_user, signed
from okr.api.paging import encode_token
from okr.db import transaction
from okr.store import search


def found(client, query, **arguments):
    response = client.get("/v1/search", query_string={"q": query, **arguments})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def names(client, query, **arguments):
    return [result["name"] for result in found(client, query, **arguments)["results"]]


@pytest.fixture
def everything(client, runner):
    """Two cycles, with objectives and key results made in turns with teams and people, so that creation order
    and the order of kinds differ: {name: the record as the API answered it}."""
    spring, summer = make_cycle(client, "Spring"), make_cycle(client, "Été")
    made = {}
    made["Growth team"] = make_team(client, "Growth team")
    made["Grow revenue"] = make_objective(client, spring["id"], "Grow revenue")
    made["Gail Grower"] = make_user(runner, "Gail Grower", "gail@example.com")
    made["Hire growers"] = make_key_result(client, made["Grow revenue"]["id"], "Hire growers")
    made["Regrow the garden"] = make_objective(client, summer["id"], "Regrow the garden")
    made["Growing pains"] = make_team(client, "Growing pains")
    made["Grow twice"] = make_key_result(client, made["Regrow the garden"]["id"], "Grow twice")
    made["Bob"] = make_user(runner, "Bob", "bob@growco.example")
    return made


ALL_GROW = ["Grow revenue", "Regrow the garden", "Hire growers", "Grow twice", "Growth team", "Growing pains",
            "Gail Grower", "Bob"]


def test_results_come_by_kind_then_in_creation_order_across_cycles(client, everything):
    answer = found(client, "grow")
    assert [result["name"] for result in answer["results"]] == ALL_GROW
    assert answer["next_page_token"] is None
    assert [result["type"] for result in answer["results"]] == ["objective"] * 2 + ["key_result"] * 2 + \
        ["team"] * 2 + ["user"] * 2
    by_name = {result["name"]: result for result in answer["results"]}
    objective, key_result = everything["Regrow the garden"], everything["Grow twice"]
    assert by_name["Regrow the garden"] == {"type": "objective", "id": objective["id"], "name": "Regrow the garden",
                                            "cycle_id": objective["cycle_id"], "objective_id": None}
    assert by_name["Grow twice"] == {"type": "key_result", "id": key_result["id"], "name": "Grow twice",
                                     "cycle_id": objective["cycle_id"], "objective_id": objective["id"]}
    assert by_name["Growth team"] == {"type": "team", "id": everything["Growth team"]["id"], "name": "Growth team",
                                      "cycle_id": None, "objective_id": None}
    assert by_name["Bob"] == {"type": "user", "id": everything["Bob"]["id"], "name": "Bob", "cycle_id": None,
                              "objective_id": None}


@pytest.mark.parametrize("query, expected", [
    ("GROW", ALL_GROW),                                      # whatever the case
    ("  grow\t", ALL_GROW),                                  # whitespace at both ends trimmed
    ("OW REV", ["Grow revenue"]),                            # a substring in the middle, spaces inside kept
    ("ROWER", ["Hire growers", "Gail Grower"]),
    ("gail@", ["Gail Grower"]),                              # people's emails
    ("GROWCO.EXAMPLE", ["Bob"]),
    ("nothing like it", []),
])
def test_matching(client, everything, query, expected):
    assert names(client, query) == expected


def test_non_ascii_letters_match_whatever_their_case(client, cycle, runner):
    make_objective(client, cycle["id"], "Plan été")
    make_objective(client, cycle["id"], "Plan ete")  # no accent: another word
    make_team(client, "ÉTÉ crew")
    make_user(runner, "Zoë Straße", "zoe@example.com")
    assert names(client, "ÉTÉ") == ["Plan été", "ÉTÉ crew"]
    assert names(client, "été") == ["Plan été", "ÉTÉ crew"]
    assert names(client, "ZOË") == ["Zoë Straße"]
    assert names(client, "strasse") == []  # ASCII: matched by LIKE, letter for letter
    assert names(client, "STRAẞE") == ["Zoë Straße"]  # case folding: ẞ and ß are "ss"
    # The same connection searches again, ASCII then not: the function stays usable.
    assert names(client, "plan") == ["Plan été", "Plan ete"]
    assert names(client, "Été", page_size=1) == ["Plan été"]


@pytest.mark.parametrize("query, expected", [
    ("50%", ["Up 50% now"]),
    ("%", ["Up 50% now"]),
    ("a_b", ["a_b"]),
    ("_", ["a_b"]),
    ("\\", ["back\\slash"]),
    ("%é", []),  # the non-ASCII path takes them literally too
    ("0%_é", []),
])
def test_percent_underscore_and_backslash_are_plain_characters(client, cycle, query, expected):
    for name in ("Up 50% now", "Up 500 now", "a_b", "axb", "back\\slash", "backslash"):
        make_objective(client, cycle["id"], name)
    assert names(client, query) == expected


def test_percent_and_underscore_in_a_non_ascii_query(client, cycle):
    for name in ("été 50%", "été 500", "é_t", "éxt"):
        make_objective(client, cycle["id"], name)
    assert names(client, "É 50%") == ["été 50%"]
    assert names(client, "É_") == ["é_t"]


@pytest.mark.parametrize("size", [1, 2, 3])
@pytest.mark.parametrize("query", ["grow", "R"])
def test_paging_crosses_the_kinds_each_result_once_in_order(client, everything, size, query):
    whole = found(client, query, page_size=1000)["results"]
    assert len({result["type"] for result in whole}) == 4
    paged, token, pages = [], None, 0
    while pages <= len(whole):  # bounded: a token that does not move on fails here rather than loops
        answer = found(client, query, page_size=size, **({"page_token": token} if token else {}))
        assert len(answer["results"]) == size or answer["next_page_token"] is None
        paged += answer["results"]
        token, pages = answer["next_page_token"], pages + 1
        if token is None:
            break
    assert paged == whole
    assert pages == -(-len(whole) // size)  # no empty last page


def test_paging_a_non_ascii_query_across_kinds(client, cycle, runner):
    for number in range(3):
        make_objective(client, cycle["id"], f"Été {number}")
        make_team(client, f"été team {number}")
    whole = names(client, "ÉTÉ")
    first = found(client, "ÉTÉ", page_size=4)
    second = found(client, "ÉTÉ", page_size=4, page_token=first["next_page_token"])
    assert [r["name"] for r in first["results"] + second["results"]] == whole == \
        ["Été 0", "Été 1", "Été 2", "été team 0", "été team 1", "été team 2"]
    assert second["next_page_token"] is None


def test_any_page_token_is_a_place_in_the_order(client, everything):
    objective = everything["Regrow the garden"]
    after_first_objective = found(client, "grow", page_token=encode_token(
        search.position("objective", 1)))  # past the first objective (seq 1)
    assert [r["name"] for r in after_first_objective["results"]] == ALL_GROW[1:]
    teams_on = found(client, "grow", page_token=encode_token(search.position("key_result", 10**12)))
    assert [r["name"] for r in teams_on["results"]] == ALL_GROW[4:]
    assert found(client, "grow", page_token=encode_token(2**63 - 1)) == {"next_page_token": None, "results": []}
    assert found(client, "grow", page_token=encode_token(10**25)) == {"next_page_token": None, "results": []}
    assert after_first_objective["results"][0]["id"] == objective["id"]


def test_positions_fit_under_the_largest_row_id():
    assert search.position("user", search.RANK_SPAN - 1) == 2**63 - 1
    assert search.position("objective", 1) < search.position("key_result", 1) < search.position("team", 1) < \
        search.position("user", 1)


@pytest.mark.parametrize("arguments", [{}, {"q": ""}, {"q": " "}, {"q": " \t\n\u00a0\u2003 "}, {"q": "x" * 201},
                                       {"q": "é" * 201}, {"q": ["a", "b"]}])
def test_a_missing_empty_blank_long_or_repeated_query_is_a_400_naming_q(client, arguments):
    assert_error(client.get("/v1/search", query_string=arguments), 400, "q")


def test_a_query_of_200_characters_once_trimmed_is_taken(client, cycle):
    make_objective(client, cycle["id"], "x" * 210)
    assert names(client, " " * 30 + "x" * 200 + " " * 30) == ["x" * 210]
    assert names(client, "é" * 200) == []


@pytest.mark.parametrize("token", ["x", "!!!", "LTE=", "MS4w"])  # "-1", "1.0"
def test_a_bad_page_token_is_a_400_naming_it(client, token):
    assert_error(client.get("/v1/search", query_string={"q": "a", "page_token": token}), 400, "page_token")


@pytest.mark.parametrize("size", ["0", "1001", "x", "-1"])
def test_page_size_is_checked_as_in_every_list(client, size):
    assert_error(client.get("/v1/search", query_string={"q": "a", "page_size": size}), 400, "page_size")


def test_the_default_page_holds_100(client):
    for number in range(101):
        make_team(client, f"Team {number}")
    answer = found(client, "team")
    assert len(answer["results"]) == 100 and answer["next_page_token"] is not None
    assert names(client, "team", page_token=answer["next_page_token"]) == ["Team 100"]


class Recording:
    """A connection that records, for each statement, the LIMIT it asked for (its last parameter) and how many rows
    it answered."""

    def __init__(self, db):
        self.db, self.statements = db, []

    def execute(self, sql, params=()):
        assert sql.rstrip().endswith("LIMIT ?")
        rows = self.db.execute(sql, params).fetchall()
        self.statements.append((params[-1], len(rows)))
        return Fetched(rows)

    def create_function(self, *args, **kwargs):
        return self.db.create_function(*args, **kwargs)


class Fetched:
    def __init__(self, rows):
        self.rows = rows

    def fetchall(self):
        return self.rows


@pytest.mark.parametrize("query", ["grow", "GRÖW", "r", "É"])
@pytest.mark.parametrize("limit", [1, 2, 3, 5, 9])
def test_a_search_reads_at_most_its_limit_of_rows(app, everything, query, limit):
    with app.app_context(), transaction() as db:
        recording = Recording(db)
        rows = search.page(recording, query, 0, limit)
    assert len(rows) <= limit
    read = 0
    for asked, answered in recording.statements:  # each asks for what the page still lacks, never more
        assert asked == limit - read >= 1
        read += answered
    assert read == len(rows)


def test_unsigned_is_a_401_once_auth_is_on_and_any_role_reads(client, make_person, everything):
    create_key(client.application.test_cli_runner())
    response = client.get("/v1/search?q=grow")
    assert_error(response, 401)
    viewer = make_person("viewer")
    response = client.get("/v1/search?q=grow", headers=viewer.headers())
    assert response.status_code == 200
    assert [result["name"] for result in response.get_json()["results"]] == ALL_GROW


def test_a_read_only_key_reads_too(client, runner, everything):
    key = create_key(runner, "reader", read_only=True)
    response = client.get("/v1/search?q=gail", headers=signed(key))
    assert response.status_code == 200
    assert [result["type"] for result in response.get_json()["results"]] == ["user"]
