"""Optional filters on the objective and key-result lists, combined with cycle_id and paging."""
import pytest

import okr.api.paging
from helpers import assert_error, make_cycle, make_key_result, make_objective
from okr.store.schema import connect

UNKNOWN = "0b0e7f4a-3c1d-4e2f-8a9b-0c1d2e3f4a5b"


@pytest.fixture
def world(client, alignment):
    """Two cycles, two teams, two users, objectives with parents, key results of every type."""
    other_cycle = make_cycle(client, "Q2")
    o = alignment["o"]
    o["elsewhere"] = make_objective(client, other_cycle["id"], "elsewhere", team_id=alignment["red"],
                                    assignee_id=alignment["ada"])
    k = {}
    root = o["root"]["id"]
    k["pos"] = make_key_result(client, root, "pos")
    k["mile"] = make_key_result(client, root, "mile", type="milestone", target_value_min="1")
    k["range"] = make_key_result(client, root, "range", type="range", target_value_min="1",
                                 target_value_max="5")
    k["base"] = make_key_result(client, o["child"]["id"], "base", type="baseline", target_value_min=None)
    k["pos2"] = make_key_result(client, o["child"]["id"], "pos2")
    k["neg"] = make_key_result(client, o["elsewhere"]["id"], "neg", type="negative")
    return {**alignment, "other_cycle": other_cycle["id"], "k": k}


def names(response, key):
    assert response.status_code == 200, response.get_json()
    return [row["name"] for row in response.get_json()[key]]


@pytest.mark.parametrize("query, expected", [
    ("team_id={red}", ["root", "mine"]),
    ("team_id={blue}", ["child"]),
    ("assignee_id={ada}", ["root", "child"]),
    ("assignee_id={bob}", ["mine"]),
    ("parent_objective_id={root}", ["child", "mine"]),
    ("parent_objective_id=none", ["root", "loose"]),
    ("is_company=true", ["root"]),
    ("is_company=false", ["child", "mine", "loose"]),
    ("is_personal=true", ["mine"]),
    ("is_personal=false", ["root", "child", "loose"]),
])
def test_each_objective_filter_alone(client, world, query, expected):
    query = query.format(root=world["o"]["root"]["id"], **world)
    response = client.get(f"/v1/objectives?cycle_id={world['cycle']}&{query}")
    assert names(response, "objectives") == expected
    assert response.get_json()["next_page_token"] is None


@pytest.mark.parametrize("query, expected", [
    ("team_id={red}&assignee_id={ada}", ["root"]),
    ("team_id={red}&parent_objective_id=none", ["root"]),
    ("team_id={red}&parent_objective_id={root}&is_personal=true", ["mine"]),
    ("assignee_id={ada}&is_company=false", ["child"]),
    ("is_company=false&is_personal=false", ["child", "loose"]),
    ("team_id={blue}&assignee_id={bob}", []),
])
def test_objective_filters_combine(client, world, query, expected):
    query = query.format(root=world["o"]["root"]["id"], **world)
    response = client.get(f"/v1/objectives?cycle_id={world['cycle']}&{query}")
    assert names(response, "objectives") == expected


def test_objective_filters_stay_within_the_cycle(client, world):
    response = client.get(f"/v1/objectives?cycle_id={world['other_cycle']}&team_id={world['red']}")
    assert names(response, "objectives") == ["elsewhere"]


@pytest.mark.parametrize("name", ["team_id", "assignee_id", "parent_objective_id"])
def test_unknown_well_formed_ids_match_nothing(client, world, name):
    response = client.get(f"/v1/objectives?cycle_id={world['cycle']}&{name}={UNKNOWN}")
    assert response.status_code == 200
    assert response.get_json() == {"next_page_token": None, "objectives": []}


@pytest.mark.parametrize("query, expected", [
    ("type=positive", ["pos", "pos2"]),
    ("type=milestone", ["mile"]),
    ("type=range", ["range"]),
    ("type=baseline", ["base"]),
    ("type=negative", []),
])
def test_type_filters_a_cycles_key_results(client, world, query, expected):
    response = client.get(f"/v1/keyresults?cycle_id={world['cycle']}&{query}")
    assert names(response, "keyresults") == expected


def test_type_filter_stays_within_the_cycle(client, world):
    response = client.get(f"/v1/keyresults?cycle_id={world['other_cycle']}&type=negative")
    assert names(response, "keyresults") == ["neg"]


@pytest.mark.parametrize("objective, query, expected", [
    ("root", "type=positive", ["pos"]),
    ("root", "type=range", ["range"]),
    ("root", "type=baseline", []),
    ("child", "type=baseline", ["base"]),
])
def test_type_filters_an_objectives_key_results(client, world, objective, query, expected):
    response = client.get(f"/v1/objectives/{world['o'][objective]['id']}/keyresults?{query}")
    assert names(response, "keyresults") == expected


def all_pages(client, url, key, size):
    """Every page of a list, as (names on the page, next_page_token)."""
    pages, token = [], None
    while True:
        suffix = f"&page_token={token}" if token else ""
        response = client.get(f"{url}&page_size={size}{suffix}")
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        token = body["next_page_token"]
        pages.append(([row["name"] for row in body[key]], token))
        if token is None:
            return pages


def test_objective_filters_page_by_matching_rows(client, world):
    c, red = world["cycle"], world["red"]
    for i in range(4):
        make_objective(client, c, f"red{i}", team_id=red, parent_objective_id=world["o"]["root"]["id"])
        make_objective(client, c, f"other{i}")
    make_objective(client, c, "trailing")  # non-matching rows after the last match
    url = f"/v1/objectives?cycle_id={c}&team_id={red}&parent_objective_id={world['o']['root']['id']}"
    pages = all_pages(client, url, "objectives", 2)
    assert [page for page, _ in pages] == [["mine", "red0"], ["red1", "red2"], ["red3"]]
    assert [token is None for _, token in pages] == [False, False, True]
    pages = all_pages(client, f"/v1/objectives?cycle_id={c}&parent_objective_id=none&is_company=false",
                      "objectives", 4)
    assert [page for page, _ in pages] == [["loose", "other0", "other1", "other2"], ["other3", "trailing"]]
    # Exactly filling the last page: the token is null though non-matching rows follow.
    pages = all_pages(client, f"/v1/objectives?cycle_id={c}&team_id={red}", "objectives", 3)
    assert pages == [(["root", "mine", "red0"], pages[0][1]), (["red1", "red2", "red3"], None)]
    assert pages[0][1] is not None


def test_type_filter_pages_by_matching_rows(client, world):
    root = world["o"]["root"]["id"]
    for i in range(3):
        make_key_result(client, root, f"p{i}")
        make_key_result(client, root, f"m{i}", type="milestone", target_value_min="1")
    pages = all_pages(client, f"/v1/keyresults?cycle_id={world['cycle']}&type=positive", "keyresults", 2)
    assert [page for page, _ in pages] == [["pos", "pos2"], ["p0", "p1"], ["p2"]]
    pages = all_pages(client, f"/v1/objectives/{root}/keyresults?type=milestone", "keyresults", 2)
    assert pages[0][0] == ["mile", "m0"] and pages[1] == (["m1", "m2"], None)


@pytest.mark.parametrize("query, argument", [
    ("team_id=", "team_id"),
    ("team_id=nope", "team_id"),
    ("team_id=0B0E7F4A-3C1D-4E2F-8A9B-0C1D2E3F4A5B", "team_id"),
    (f"team_id={UNKNOWN}&team_id={UNKNOWN}", "team_id"),
    ("team_id=none", "team_id"),
    ("assignee_id=", "assignee_id"),
    (f"assignee_id={UNKNOWN}x", "assignee_id"),
    ("parent_objective_id=", "parent_objective_id"),
    ("parent_objective_id=None", "parent_objective_id"),
    ("parent_objective_id=null", "parent_objective_id"),
    ("parent_objective_id=none&parent_objective_id=none", "parent_objective_id"),
    ("is_company=", "is_company"),
    ("is_company=True", "is_company"),
    ("is_company=1", "is_company"),
    ("is_company=true&is_company=true", "is_company"),
    ("is_personal=yes", "is_personal"),
    ("is_personal=", "is_personal"),
])
def test_bad_objective_filters_are_400_naming_the_argument(client, world, query, argument):
    response = client.get(f"/v1/objectives?cycle_id={world['cycle']}&{query}")
    body = assert_error(response, 400, argument)
    assert set(body["details"]) == {argument}


@pytest.mark.parametrize("query", ["type=", "type=Positive", "type=other", "type=positive&type=positive"])
@pytest.mark.parametrize("path", ["/v1/keyresults?cycle_id={cycle}", "/v1/objectives/{root}/keyresults?x=1"])
def test_bad_type_is_400_naming_the_argument(client, world, path, query):
    url = path.format(cycle=world["cycle"], root=world["o"]["root"]["id"])
    body = assert_error(client.get(f"{url}&{query}"), 400, "type")
    assert set(body["details"]) == {"type"}


class Recorder:
    """A connection that notes each statement it runs, with its parameters."""

    def __init__(self, db, log):
        self.db, self.log = db, log

    def execute(self, sql, params=()):
        self.log.append((sql, params))
        return self.db.execute(sql, params)


@pytest.fixture
def statements(monkeypatch):
    log = []
    real = okr.api.paging.get_db
    monkeypatch.setattr(okr.api.paging, "get_db", lambda: Recorder(real(), log))
    return log


PLANNED = [
    "/v1/objectives?cycle_id={cycle}&team_id={red}",
    "/v1/objectives?cycle_id={cycle}&assignee_id={ada}",
    "/v1/objectives?cycle_id={cycle}&parent_objective_id={root}",
    "/v1/objectives?cycle_id={cycle}&parent_objective_id=none",
    "/v1/objectives?cycle_id={cycle}&is_company=true",
    "/v1/objectives?cycle_id={cycle}&is_personal=false",
    "/v1/objectives?cycle_id={cycle}&team_id={red}&assignee_id={ada}&parent_objective_id=none"
    "&is_company=true&is_personal=false&page_size=1",
    "/v1/keyresults?cycle_id={cycle}&type=positive",
    "/v1/objectives/{root}/keyresults?type=range&page_size=1",
]


@pytest.mark.parametrize("url", PLANNED)
def test_each_filter_searches_an_index(app, client, world, statements, url):
    url = url.format(root=world["o"]["root"]["id"], **world)
    assert client.get(url).status_code == 200
    (sql, params), = statements
    db = connect(app.config["DATABASE"], 5000)
    try:
        plan = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
    finally:
        db.close()
    assert any(step.startswith("SEARCH ") and "USING INDEX" in step for step in plan), plan
    assert not any(step.startswith("SCAN ") for step in plan), plan


def test_unfiltered_answers_are_unchanged(client, world, statements):
    """Without a filter the same SQL runs, and the same rows come back, byte for byte."""
    c, root = world["cycle"], world["o"]["root"]["id"]
    expected = {
        f"/v1/objectives?cycle_id={c}":
            "SELECT * FROM objectives WHERE cycle_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        f"/v1/keyresults?cycle_id={c}":
            "SELECT * FROM key_results WHERE cycle_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        f"/v1/objectives/{root}/keyresults":
            "SELECT * FROM key_results WHERE objective_id = ? AND seq > ? ORDER BY seq LIMIT ?",
    }
    for url, sql in expected.items():
        statements.clear()
        response = client.get(url)
        assert response.status_code == 200
        assert statements == [(sql, (url.split("=")[-1] if "cycle_id" in url else root, 0, 101))]
    assert names(client.get(f"/v1/objectives?cycle_id={c}"), "objectives") == \
        ["root", "child", "mine", "loose"]
    assert names(client.get(f"/v1/keyresults?cycle_id={c}"), "keyresults") == \
        ["pos", "mile", "range", "base", "pos2"]
    body = client.get(f"/v1/objectives?cycle_id={c}&page_size=2").get_json()
    assert [o["name"] for o in body["objectives"]] == ["root", "child"]
    assert body["next_page_token"] is not None
    assert body["objectives"][0] == world["o"]["root"]
