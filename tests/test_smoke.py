from helpers import assert_error, make_cycle, make_objective, make_user, UUID4


def test_health_is_open_and_ok(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok"}


def test_builders_work(client, runner):
    cycle = make_cycle(client)
    assert UUID4.fullmatch(cycle["id"])
    user = make_user(runner)
    objective = make_objective(client, cycle["id"], assignee_id=user["id"])
    assert objective["assignee_id"] == user["id"]
    assert_error(client.get("/v1/nothing"), 404)
