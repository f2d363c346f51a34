"""okr.store.cycles.copy: the next quarter from this one, in one transaction (issue 23)."""
import sqlite3
from contextlib import closing

import pytest

from helpers import make_cycle, make_key_result, make_objective, make_user
from okr.db import get_db
from okr.store import cycles


def checkin(client, key_result_id, value):
    assert client.post(f"/v1/keyresults/{key_result_id}/checkins", json={"value": value}).status_code == 200


@pytest.fixture
def quarter(client, runner):
    """Q1: a company objective, a team objective aligned to it (made first: a parent made after its child), an
    objective aligned to one of another cycle, and key results of several types with owners."""
    ada = make_user(runner)
    year = make_cycle(client, "2026")
    yearly = make_objective(client, year["id"], "Yearly")
    q1 = make_cycle(client, "Q1")
    child = make_objective(client, q1["id"], "Team", description="Ours", assignee_id=ada["id"])
    company = make_objective(client, q1["id"], "Company", is_company=True)
    assert client.patch(f"/v1/objectives/{child['id']}", json={"parent_objective_id": company["id"]}).status_code == 200
    outward = make_objective(client, q1["id"], "Outward", parent_objective_id=yearly["id"], is_personal=True)
    reach = make_key_result(client, child["id"], "Reach", current_value="10", target_value_min="100",
                            owner_id=ada["id"])
    checkin(client, reach["id"], "40")
    ship = make_key_result(client, company["id"], "Ship", type="milestone", target_value_min=None)
    checkin(client, ship["id"], "1")
    make_key_result(client, outward["id"], "Stay", type="range", target_value_min="1", target_value_max="4")
    return {"q1": q1, "yearly": yearly, "ada": ada}


def rows(app, sql, *params):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute(sql, params)]


@pytest.mark.slow
def test_a_copy_keeps_objectives_alignment_and_key_results_starting_from_where_they_are(app, client, quarter):
    with app.test_request_context():
        copy = cycles.copy(get_db(), quarter["q1"]["id"], {"name": "Q2", "starts_on": "2026-04-01",
                                                           "ends_on": "2026-06-30"}, author_id=quarter["ada"]["id"])
        get_db().commit()
    assert (copy["name"], copy["starts_on"], copy["ends_on"]) == ("Q2", "2026-04-01", "2026-06-30")
    objectives = {row["name"]: row for row in rows(app, "SELECT * FROM objectives WHERE cycle_id = ?", copy["id"])}
    assert set(objectives) == {"Team", "Company", "Outward"}
    team, company, outward = objectives["Team"], objectives["Company"], objectives["Outward"]
    assert team["parent_objective_id"] == company["id"]  # aligned to the copy, not to Q1's
    assert outward["parent_objective_id"] == quarter["yearly"]["id"]  # another cycle's parent stays
    assert (team["description"], team["assignee_id"], company["is_company"], outward["is_personal"]) == (
        "Ours", quarter["ada"]["id"], 1, 1)
    krs = {row["name"]: row for row in rows(app, "SELECT * FROM key_results WHERE cycle_id = ?", copy["id"])}
    assert (krs["Reach"]["current_value"], krs["Reach"]["target_value_min"], krs["Reach"]["owner_id"],
            krs["Reach"]["objective_id"]) == ("40.00", "100.00", quarter["ada"]["id"], team["id"])
    assert (krs["Ship"]["current_value"], krs["Ship"]["target_value_min"]) == ("0.00", "1.00")  # not done
    assert (krs["Stay"]["target_value_min"], krs["Stay"]["target_value_max"]) == ("1.00", "4.00")
    assert {row["confidence"] for row in krs.values()} == {"0.50"}
    # Each starts with one check-in, its starting value, by the person who copied.
    history = rows(app, """SELECT k.name, c.value, c.author_id FROM checkins c JOIN key_results k
                           ON k.seq = c.key_result_seq WHERE k.cycle_id = ? ORDER BY c.seq""", copy["id"])
    assert [(row["name"], row["value"], row["author_id"]) for row in history] == [
        ("Reach", "40.00", quarter["ada"]["id"]), ("Ship", "0.00", quarter["ada"]["id"]),
        ("Stay", "0.00", quarter["ada"]["id"])]
    report = client.get(f"/v1/cycles/{copy['id']}/report").get_json()
    assert report["objectives_count"] == 3 and report["key_results_count"] == 3
    assert {kr["status"] for node in report["objectives"] for kr in node["key_results"]} <= {"no_update"}
    # The source is as it was.
    assert len(rows(app, "SELECT 1 FROM objectives WHERE cycle_id = ?", quarter["q1"]["id"])) == 3


def test_a_copy_that_fails_midway_leaves_nothing(app, client, quarter, monkeypatch):
    before = rows(app, "SELECT count(*) AS n FROM objectives")[0]["n"]

    def broken(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(cycles, "record", broken)
    with app.test_request_context():
        db = get_db()
        with pytest.raises(sqlite3.OperationalError):
            cycles.copy(db, quarter["q1"]["id"], {"name": "Q2", "starts_on": None, "ends_on": None})
        db.rollback()
    assert rows(app, "SELECT count(*) AS n FROM objectives")[0]["n"] == before
    assert [row["name"] for row in rows(app, "SELECT name FROM cycles ORDER BY seq")] == ["2026", "Q1"]


# --- carry over by choice (issue 36): only what is picked goes, each copy linked to where it came from


def copy_of(app, source_id, **picks):
    with app.test_request_context():
        copy = cycles.copy(get_db(), source_id, {"name": "Q2", "starts_on": None, "ends_on": None}, **picks)
        get_db().commit()
    return copy


def by_name(app, table, cycle_id):
    return {row["name"]: row for row in rows(app, f"SELECT * FROM {table} WHERE cycle_id = ?", cycle_id)}


def test_a_copy_of_everything_links_each_objective_to_the_one_it_came_from(app, client, quarter):
    copy = copy_of(app, quarter["q1"]["id"])
    sources = by_name(app, "objectives", quarter["q1"]["id"])
    copies = by_name(app, "objectives", copy["id"])
    assert {name: row["carried_from_id"] for name, row in copies.items()} == {
        name: row["id"] for name, row in sources.items()}
    assert {row["carried_from_id"] for row in sources.values()} == {None}


def test_a_copy_takes_only_the_picked_objectives_and_key_results(app, client, quarter):
    sources = by_name(app, "objectives", quarter["q1"]["id"])
    krs = by_name(app, "key_results", quarter["q1"]["id"])
    # Team is picked without its parent Company; Company's key result Ship is picked but Company is not.
    copy = copy_of(app, quarter["q1"]["id"], objective_ids={sources["Team"]["id"], sources["Outward"]["id"]},
                   key_result_ids={krs["Reach"]["id"], krs["Ship"]["id"]})
    copies = by_name(app, "objectives", copy["id"])
    assert set(copies) == {"Team", "Outward"}
    # A parent left behind stays the parent, as one of another cycle does.
    assert copies["Team"]["parent_objective_id"] == sources["Company"]["id"]
    assert copies["Outward"]["parent_objective_id"] == quarter["yearly"]["id"]
    assert copies["Team"]["carried_from_id"] == sources["Team"]["id"]
    copied_krs = by_name(app, "key_results", copy["id"])
    assert set(copied_krs) == {"Reach"}  # Ship's objective stayed; Stay was not picked
    assert copied_krs["Reach"]["objective_id"] == copies["Team"]["id"]


def test_a_copy_with_nothing_picked_is_an_empty_cycle_and_ids_of_other_cycles_are_no_picks(app, client, quarter):
    empty = copy_of(app, quarter["q1"]["id"], objective_ids=set(), key_result_ids=set())
    assert by_name(app, "objectives", empty["id"]) == {}
    foreign = copy_of(app, quarter["q1"]["id"], objective_ids={quarter["yearly"]["id"]}, key_result_ids=set())
    assert by_name(app, "objectives", foreign["id"]) == {}


def test_a_copy_keeps_who_may_see_each_objective_and_copies_only_what_the_copier_sees(app, client, quarter):
    """A restricted objective's copy is restricted as it was, its maker kept (so the same people see it); a copy
    made by someone who may not see an objective leaves it behind."""
    [team] = rows(app, "SELECT id FROM objectives WHERE name = 'Team'")
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.execute("UPDATE objectives SET visibility = 'private', created_by = ? WHERE id = ?",
                   (quarter["ada"]["id"], team["id"]))
    from okr.store import visibility
    with app.test_request_context():
        everything = cycles.copy(get_db(), quarter["q1"]["id"], {"name": "Q2", "starts_on": None, "ends_on": None})
        with visibility.viewing_as("someone-who-sees-only-everyones"):
            theirs = cycles.copy(get_db(), quarter["q1"]["id"], {"name": "Q2b", "starts_on": None, "ends_on": None})
        get_db().commit()
    [copy] = rows(app, "SELECT visibility, created_by, carried_from_id FROM objectives WHERE cycle_id = ? "
                       "AND name = 'Team'", everything["id"])
    assert copy == {"visibility": "private", "created_by": quarter["ada"]["id"], "carried_from_id": team["id"]}
    assert {row["name"] for row in rows(app, "SELECT name FROM objectives WHERE cycle_id = ?", theirs["id"])} == {
        "Company", "Outward"}
