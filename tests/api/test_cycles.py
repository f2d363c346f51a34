"""Delivery cycles: /v1/cycles. What cycles share with teams is in test_named_resources.py."""
from helpers import assert_error, make_cycle, make_key_result, make_objective


def test_delete_removes_its_objectives_and_their_key_results(client):
    doomed, kept = make_cycle(client, "doomed"), make_cycle(client, "kept")
    objectives = [make_objective(client, doomed["id"], name=f"o{i}") for i in range(2)]
    key_results = [make_key_result(client, o["id"]) for o in objectives]
    other = make_objective(client, kept["id"])
    other_key_result = make_key_result(client, other["id"])

    assert client.delete(f"/v1/cycles/{doomed['id']}").status_code == 200

    for objective in objectives:
        assert_error(client.get(f"/v1/objectives/{objective['id']}"), 404)
        assert_error(client.get(f"/v1/objectives/{objective['id']}/keyresults"), 404)
    for key_result in key_results:
        assert_error(client.get(f"/v1/keyresults/{key_result['id']}"), 404)
    assert_error(client.get("/v1/objectives", query_string={"cycle_id": doomed["id"]}), 404)
    assert client.get(f"/v1/objectives/{other['id']}").get_json() == other
    assert client.get(f"/v1/keyresults/{other_key_result['id']}").get_json() == other_key_result
    listed = client.get("/v1/keyresults", query_string={"cycle_id": kept["id"]}).get_json()
    assert listed == {"next_page_token": None, "keyresults": [other_key_result]}


def test_delete_keeps_children_in_other_cycles_without_their_parent(client):
    doomed, kept = make_cycle(client, "doomed"), make_cycle(client, "kept")
    parent = make_objective(client, doomed["id"], name="parent")
    child = make_objective(client, kept["id"], name="child", parent_objective_id=parent["id"])
    assert client.delete(f"/v1/cycles/{doomed['id']}").status_code == 200
    assert client.get(f"/v1/objectives/{child['id']}").get_json()["parent_objective_id"] is None
