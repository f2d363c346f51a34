"""Carry over by choice (issue 36): the copy page lists the cycle's objectives and key results, each with a box,
achieved and dropped objectives and key results at 100 % unchecked at first; only what is checked goes, each
copy linked to the objective it came from."""
import sqlite3
import uuid
from contextlib import closing

import pytest

from edit_forms import get, post_form
from helpers import make_cycle, make_key_result, make_objective
from html_tree import parse

pytestmark = pytest.mark.usefixtures("fast_hashing")


def rows(app, sql, *params):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        return db.execute(sql, params).fetchall()


def ended(client, objective, outcome):
    response = client.patch(f"/v1/objectives/{objective['id']}", json={"outcome": outcome})
    assert response.status_code == 200, response.get_json()


def checkin(client, key_result, value):
    response = client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": value})
    assert response.status_code == 200, response.get_json()


@pytest.fixture
def quarter(client):
    """Q1: Grow (missed, two key results, one of them done), Ship (achieved), Tidy (dropped), Learn (partly)."""
    q1 = make_cycle(client, "2026 Q1")
    grow = make_objective(client, q1["id"], "Grow")
    reach = make_key_result(client, grow["id"], "Reach 100", current_value="0", target_value_min="100")
    done = make_key_result(client, grow["id"], "Hire two", current_value="0", target_value_min="2")
    checkin(client, reach, "40")
    checkin(client, done, "2")
    ship = make_objective(client, q1["id"], "Ship")
    launch = make_key_result(client, ship["id"], "Launch", type="milestone", target_value_min=None)
    tidy = make_objective(client, q1["id"], "Tidy")
    learn = make_objective(client, q1["id"], "Learn", parent_objective_id=grow["id"])
    read = make_key_result(client, learn["id"], "Read 5 books", current_value="0", target_value_min="5")
    ended(client, grow, "missed")
    ended(client, ship, "achieved")
    ended(client, tidy, "dropped")
    ended(client, learn, "partly_achieved")
    return {"cycle": q1, "grow": grow, "reach": reach, "done": done, "ship": ship, "launch": launch, "tidy": tidy,
            "learn": learn, "read": read}


def boxes(tree, name):
    """{value: checked} of the form's checkboxes called name, in page order."""
    return {el.attrs["value"]: "checked" in el.attrs for el in tree.one("form", method="post")
            .find_all("input", type="checkbox", name=name)}


def test_the_page_lists_every_objective_and_key_result_with_the_finished_ones_unchecked(client, quarter):
    tree = get(client, f"/cycles/{quarter['cycle']['id']}/copy")
    assert boxes(tree, "objective") == {quarter["grow"]["id"]: True, quarter["learn"]["id"]: True,
                                        quarter["ship"]["id"]: False, quarter["tidy"]["id"]: False}
    assert boxes(tree, "key_result") == {quarter["reach"]["id"]: True, quarter["done"]["id"]: False,
                                         quarter["read"]["id"]: True, quarter["launch"]["id"]: True}
    # Parents before their children; each key result's box under its objective's; every box labelled.
    items = tree.one("ul", cls="carry-objectives").find_all("li")
    grow = next(li for li in items if li.find_all("input", value=quarter["grow"]["id"]))
    assert [el.attrs["value"] for el in grow.find_all("input", name="key_result")] == [
        quarter["reach"]["id"], quarter["done"]["id"]]
    for box in tree.find_all("input", type="checkbox"):
        assert tree.one("label", **{"for": box.attrs["id"]}).text.strip()
    assert "(achieved)" in grow.parent.text and "Hire two (100%)" in grow.text


def post_copy(client, quarter, **fields):
    form = {"name": "2026 Q2", "starts_on": "2026-04-01", "ends_on": "2026-06-30", "picked": "yes", **fields}
    return post_form(client, f"/cycles/{quarter['cycle']['id']}/copy", "/cycles/new", **form)


def copied(app, name="2026 Q2"):
    objectives = rows(app, """SELECT o.name, s.name FROM objectives o JOIN cycles c ON c.id = o.cycle_id
                              LEFT JOIN objectives s ON s.id = o.carried_from_id WHERE c.name = ? ORDER BY o.seq""",
                      name)
    key_results = rows(app, """SELECT k.name, o.name FROM key_results k JOIN objectives o ON o.id = k.objective_id
                               JOIN cycles c ON c.id = k.cycle_id WHERE c.name = ? ORDER BY k.seq""", name)
    return objectives, key_results


def test_only_the_checked_objectives_and_key_results_go_each_linked_to_its_source(app, client, quarter):
    # Learn's key result is checked but Learn is not: it stays behind whatever its box says.
    response = post_copy(client, quarter, objective=[quarter["grow"]["id"], quarter["tidy"]["id"]],
                         key_result=[quarter["reach"]["id"], quarter["read"]["id"]])
    assert response.status_code == 200
    assert "2 objectives and 1 key result were copied" in parse(response.get_data(as_text=True)).text
    assert copied(app) == ([("Grow", "Grow"), ("Tidy", "Tidy")], [("Reach 100", "Grow")])


def test_the_defaults_submitted_as_they_are_leave_the_finished_behind(app, client, quarter):
    tree = get(client, f"/cycles/{quarter['cycle']['id']}/copy")
    picks = {name: [value for value, on in boxes(tree, name).items() if on] for name in ("objective", "key_result")}
    assert post_copy(client, quarter, **picks).status_code == 200
    assert copied(app) == ([("Grow", "Grow"), ("Learn", "Learn")], [("Reach 100", "Grow"), ("Read 5 books", "Learn")])


def test_nothing_checked_makes_an_empty_cycle(app, client, quarter):
    assert post_copy(client, quarter).status_code == 200
    assert copied(app) == ([], [])
    assert rows(app, "SELECT count(*) FROM cycles WHERE name = '2026 Q2'") == [(1,)]


def test_a_refused_date_keeps_the_boxes_as_they_were_sent_and_makes_nothing(app, client, quarter):
    response = post_copy(client, quarter, ends_on="2026-01-01", objective=[quarter["ship"]["id"]],
                         key_result=[quarter["done"]["id"]])
    assert response.status_code == 400
    tree = parse(response.get_data(as_text=True))
    assert tree.one(id="ends_on-error").text == "Choose an end date on or after the start date."
    assert [value for value, on in boxes(tree, "objective").items() if on] == [quarter["ship"]["id"]]
    assert [value for value, on in boxes(tree, "key_result").items() if on] == [quarter["done"]["id"]]
    assert rows(app, "SELECT count(*) FROM cycles") == [(1,)]


def test_a_cycle_without_objectives_says_the_copy_starts_empty(client):
    cycle = make_cycle(client, "Empty")
    tree = get(client, f"/cycles/{cycle['id']}/copy")
    assert boxes(tree, "objective") == {} and "has no objectives: the new cycle starts empty" in tree.text


def test_a_cycle_of_a_thousand_objectives_is_one_form_that_copies_whole(app, client):
    """Every box checked sends 4,000 ids (about 190 kB): under the form's size limit, so the copy goes through."""
    big = make_cycle(client, "Big")
    stamp = "2026-01-05T09:00:00Z"
    objectives = [(str(uuid.uuid4()), f"Objective {n}") for n in range(1000)]
    key_results = [(str(uuid.uuid4()), objective_id, f"KR {n}") for objective_id, _ in objectives for n in range(3)]
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.executemany("""INSERT INTO objectives (id, name, is_company, is_personal, cycle_id, created_at, modified_at)
                          VALUES (?, ?, 0, 0, ?, ?, ?)""", [(i, name, big["id"], stamp, stamp) for i, name in objectives])
        db.executemany("""INSERT INTO key_results (id, objective_id, cycle_id, name, type, confidence, current_value,
                              target_value_min, created_at, modified_at)
                          VALUES (?, ?, ?, ?, 'positive', '0.50', '10', '100', ?, ?)""",
                       [(i, o, big["id"], name, stamp, stamp) for i, o, name in key_results])
    tree = get(client, f"/cycles/{big['id']}/copy")
    picks = {name: [value for value, on in boxes(tree, name).items() if on] for name in ("objective", "key_result")}
    assert (len(picks["objective"]), len(picks["key_result"])) == (1000, 3000)
    response = post_form(client, f"/cycles/{big['id']}/copy", "/cycles/new", name="Big again", starts_on="",
                         ends_on="", picked="yes", **picks)
    assert response.status_code == 200
    assert "1,000 objectives and 3,000 key results were copied" in parse(response.get_data(as_text=True)).text
