"""Teams: /v1/teams. What teams share with cycles is in test_named_resources.py."""
from helpers import assert_error, make_cycle, make_objective, make_team


def test_delete_leaves_its_objectives_with_team_id_null(client):
    cycle = make_cycle(client)
    doomed, kept = make_team(client, "doomed"), make_team(client, "kept")
    orphans = [make_objective(client, cycle["id"], name=n, team_id=doomed["id"]) for n in "ab"]
    other = make_objective(client, cycle["id"], name="other", team_id=kept["id"])

    assert client.delete(f"/v1/teams/{doomed['id']}").status_code == 200

    for objective in orphans:
        fetched = client.get(f"/v1/objectives/{objective['id']}").get_json()
        assert fetched["team_id"] is None
        assert {**fetched, "team_id": objective["team_id"], "modified_at": None} == {
            **objective, "modified_at": None}
    assert client.get(f"/v1/objectives/{other['id']}").get_json()["team_id"] == kept["id"]
    listed = client.get("/v1/objectives", query_string={"cycle_id": cycle["id"]}).get_json()
    assert [o["team_id"] for o in listed["objectives"]] == [None, None, kept["id"]]


def test_deleted_team_can_no_longer_be_assigned(client):
    cycle, team = make_cycle(client), make_team(client)
    assert client.delete(f"/v1/teams/{team['id']}").status_code == 200
    body = {"name": "o", "cycle_id": cycle["id"], "is_company": False, "is_personal": False,
            "team_id": team["id"]}
    assert_error(client.post("/v1/objectives", json=body), 400, "team_id")
