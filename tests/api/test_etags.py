"""ETags on single objectives, key results, cycles, teams and users (issue 11).

Every GET of one carries a strong ETag that changes on every update, even two in the same second
and an update that changes nothing visible; If-None-Match answers 304 while it is fresh; If-Match
on an update, delete or check-in answers 412 once it is stale.
"""
import json
import re
import threading

import pytest

from helpers import assert_error, make_cycle, make_key_result, make_objective, make_team, make_user

MISSING = "00000000-0000-4000-8000-000000000000"
STRONG_ETAG = re.compile(r'"[\x21\x23-\x7e]+"')
KINDS = ("objective", "key_result", "cycle", "team", "user")
WRITABLE = ("objective", "key_result", "cycle", "team")


@pytest.fixture
def frozen(clock):
    """One second for every write: nothing but the revision tells two updates apart."""
    clock.now = "2026-05-05T05:05:05Z"
    return clock


@pytest.fixture
def world(client, runner, frozen):
    cycle = make_cycle(client, "Q1")
    team = make_team(client, "Red")
    user = make_user(runner)
    objective = make_objective(client, cycle["id"], "Grow", team_id=team["id"])
    key_result = make_key_result(client, objective["id"], "Reach", current_value="5", confidence="0.5")
    return {
        "cycle": cycle, "team": team, "user": user, "objective": objective, "key_result": key_result,
        "paths": {
            "objective": f"/v1/objectives/{objective['id']}",
            "key_result": f"/v1/keyresults/{key_result['id']}",
            "cycle": f"/v1/cycles/{cycle['id']}",
            "team": f"/v1/teams/{team['id']}",
            "user": f"/v1/users/{user['id']}",
        },
    }


def get(client, path, **headers):
    response = client.get(path, headers=headers)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response


def etag_of(client, path):
    etag = get(client, path).headers.get("ETag")
    assert etag is not None and STRONG_ETAG.fullmatch(etag), etag
    return etag


def patch(client, path, body, **headers):
    return client.patch(path, data=json.dumps(body), content_type="application/merge-patch+json",
                        headers=headers)


def cli(runner, *args):
    result = runner.invoke(args=list(args))
    assert result.exit_code == 0, result.output
    return result


# Updates that change nothing visible (the clock is frozen, so not even modified_at moves).
def same_objective_post(client, world, **headers):
    o = world["objective"]
    body = {key: o[key] for key in ("name", "description", "is_company", "is_personal", "cycle_id",
                                     "team_id", "assignee_id", "parent_objective_id")}
    return client.post(world["paths"]["objective"], json=body, headers=headers)


def same_key_result_post(client, world, **headers):
    kr = world["key_result"]
    body = {key: kr[key] for key in ("name", "type", "confidence", "current_value", "target_value_min",
                                      "target_value_max")}
    return client.post(world["paths"]["key_result"], json=body, headers=headers)


def same_group_post(kind):
    def update(client, world, **headers):
        return client.post(world["paths"][kind], json={"name": world[kind]["name"]}, headers=headers)
    return update


def empty_patch(kind):
    def update(client, world, **headers):
        return patch(client, world["paths"][kind], {}, **headers)
    return update


def same_name_patch(kind):
    def update(client, world, **headers):
        return patch(client, world["paths"][kind], {"name": world[kind]["name"]}, **headers)
    return update


def user_command(*args):
    def update(runner, world):
        cli(runner, "users", *args[:1], world["user"]["email"], *args[1:])
    return update


INVISIBLE_UPDATES = {
    "objective POST": ("objective", same_objective_post),
    "objective PATCH {}": ("objective", empty_patch("objective")),
    "objective PATCH same name": ("objective", same_name_patch("objective")),
    "key result POST": ("key_result", same_key_result_post),
    "key result PATCH {}": ("key_result", empty_patch("key_result")),
    "key result PATCH same name": ("key_result", same_name_patch("key_result")),
    "cycle POST same name": ("cycle", same_group_post("cycle")),
    "team POST same name": ("team", same_group_post("team")),
}


# --- the header -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_get_carries_a_strong_etag_that_stays_while_nothing_changes(client, world, kind):
    path = world["paths"][kind]
    first = etag_of(client, path)
    assert not first.startswith("W/")
    assert etag_of(client, path) == first


def test_each_resource_has_its_own_etag_header_after_its_own_updates(client, world):
    """Another resource's update leaves an ETag alone."""
    before = {kind: etag_of(client, world["paths"][kind]) for kind in KINDS}
    response = empty_patch("objective")(client, world)
    assert response.status_code == 200, response.get_json()
    after = {kind: etag_of(client, world["paths"][kind]) for kind in KINDS}
    assert after["objective"] != before["objective"]
    assert {k: v for k, v in after.items() if k != "objective"} == {
        k: v for k, v in before.items() if k != "objective"}


@pytest.mark.parametrize("name", list(INVISIBLE_UPDATES))
def test_every_update_changes_the_etag_even_in_the_same_second_and_when_nothing_shows(client, world, name):
    kind, update = INVISIBLE_UPDATES[name]
    path = world["paths"][kind]
    body = get(client, path).get_json()
    seen = [etag_of(client, path)]
    for _ in range(3):
        response = update(client, world)
        assert response.status_code == 200, response.get_json()
        seen.append(etag_of(client, path))
        assert get(client, path).get_json() == body  # nothing visible changed
    assert len(set(seen)) == len(seen), seen


@pytest.mark.parametrize("name", list(INVISIBLE_UPDATES))
def test_the_answer_to_an_update_carries_the_new_etag(client, world, name):
    kind, update = INVISIBLE_UPDATES[name]
    path = world["paths"][kind]
    before = etag_of(client, path)
    response = update(client, world)
    assert response.status_code == 200, response.get_json()
    assert response.headers.get("ETag") == etag_of(client, path) != before


def test_visible_updates_change_the_etag_back_and_forth(client, world):
    path = world["paths"]["objective"]
    seen = [etag_of(client, path)]
    for name in ("Other", "Grow", "Other", "Grow"):
        assert patch(client, path, {"name": name}).status_code == 200
        seen.append(etag_of(client, path))
    assert len(set(seen)) == len(seen), seen


def test_a_checkin_changes_the_key_results_etag(client, world):
    path = world["paths"]["key_result"]
    seen = [etag_of(client, path)]
    for value in ("6", "6", "6"):  # the same value and confidence each time
        response = client.post(f"{path}/checkins", json={"value": value})
        assert response.status_code == 200, response.get_json()
        seen.append(etag_of(client, path))
    assert len(set(seen)) == len(seen), seen


@pytest.mark.parametrize("command", [
    ("update", "--name", "Ada Lovelace"),      # the same name: nothing visible
    ("update", "--name", "Ada King"),
    ("update", "--email", "ADA@example.com"),
    ("deactivate",),
    ("activate",),                             # already active: nothing visible
])
def test_user_commands_change_the_users_etag(client, runner, world, command):
    path = world["paths"]["user"]
    before = etag_of(client, path)
    user_command(*command)(runner, world)
    assert etag_of(client, path) != before
    response = client.get(path, headers={"If-None-Match": before})
    assert response.status_code == 200
    assert response.get_json()["id"] == world["user"]["id"]


def test_deactivate_then_activate_gives_a_new_etag_each_time(client, runner, world):
    path = world["paths"]["user"]
    seen = [etag_of(client, path)]
    for command in ("deactivate", "activate", "deactivate"):
        user_command(command)(runner, world)
        seen.append(etag_of(client, path))
    assert len(set(seen)) == len(seen), seen


def test_deleting_a_team_changes_its_objectives_etag(client, world):
    path = world["paths"]["objective"]
    before = etag_of(client, path)
    assert client.delete(world["paths"]["team"]).status_code == 200
    assert get(client, path).get_json()["team_id"] is None
    assert etag_of(client, path) != before
    assert client.get(path, headers={"If-None-Match": before}).status_code == 200


def test_deleting_a_parent_objective_changes_its_childrens_etag(client, world):
    child = make_objective(client, world["cycle"]["id"], "Child",
                           parent_objective_id=world["objective"]["id"])
    path = f"/v1/objectives/{child['id']}"
    before = etag_of(client, path)
    assert client.delete(world["paths"]["objective"]).status_code == 200
    assert get(client, path).get_json()["parent_objective_id"] is None
    assert etag_of(client, path) != before
    assert client.get(path, headers={"If-None-Match": before}).status_code == 200


# --- If-None-Match --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_if_none_match_fresh_is_304_without_a_body(client, world, kind):
    path = world["paths"][kind]
    etag = etag_of(client, path)
    for header in (etag, "*", f'"0000", {etag}'):
        response = client.get(path, headers={"If-None-Match": header})
        assert response.status_code == 304, header
        assert response.get_data() == b""


@pytest.mark.parametrize("name", list(INVISIBLE_UPDATES))
def test_if_none_match_stale_is_200_with_the_body_and_new_etag(client, world, name):
    kind, update = INVISIBLE_UPDATES[name]
    path = world["paths"][kind]
    stale = etag_of(client, path)
    assert update(client, world).status_code == 200
    response = client.get(path, headers={"If-None-Match": stale})
    assert response.status_code == 200
    assert response.get_json() == get(client, path).get_json()
    assert response.headers["ETag"] == etag_of(client, path) != stale


def test_if_none_match_after_a_checkin_is_200(client, world):
    path = world["paths"]["key_result"]
    stale = etag_of(client, path)
    response = client.post(f"{path}/checkins", json={"value": "9"})
    assert response.status_code == 200, response.get_json()
    response = client.get(path, headers={"If-None-Match": stale})
    assert response.status_code == 200
    assert response.get_json()["current_value"] == "9.00"


@pytest.mark.parametrize("kind", KINDS)
def test_if_none_match_on_a_missing_resource_is_404(client, world, kind):
    path = world["paths"][kind].rsplit("/", 1)[0] + "/" + MISSING
    assert_error(client.get(path, headers={"If-None-Match": "*"}), 404)


# --- If-Match -------------------------------------------------------------------------------


def objective_post(client, world, **headers):
    body = {"name": "Renamed", "cycle_id": world["cycle"]["id"], "is_company": False, "is_personal": False}
    return client.post(world["paths"]["objective"], json=body, headers=headers)


def key_result_post(client, world, **headers):
    body = {"name": "Renamed", "type": "positive", "target_value_min": "100"}
    return client.post(world["paths"]["key_result"], json=body, headers=headers)


def rename(kind):
    def write(client, world, **headers):
        return client.post(world["paths"][kind], json={"name": "Renamed"}, headers=headers)
    return write


def rename_patch(kind):
    def write(client, world, **headers):
        return patch(client, world["paths"][kind], {"name": "Renamed"}, **headers)
    return write


def delete(kind):
    def write(client, world, **headers):
        return client.delete(world["paths"][kind], headers=headers)
    return write


def checkin_post(client, world, **headers):
    return client.post(f"{world['paths']['key_result']}/checkins", json={"value": "77"}, headers=headers)


# name: (the resource whose ETag counts, the write)
CONDITIONAL_WRITES = {
    "objective POST": ("objective", objective_post),
    "objective PATCH": ("objective", rename_patch("objective")),
    "objective DELETE": ("objective", delete("objective")),
    "key result POST": ("key_result", key_result_post),
    "key result PATCH": ("key_result", rename_patch("key_result")),
    "key result DELETE": ("key_result", delete("key_result")),
    "check-in POST": ("key_result", checkin_post),
    "cycle POST": ("cycle", rename("cycle")),
    "cycle DELETE": ("cycle", delete("cycle")),
    "team POST": ("team", rename("team")),
    "team DELETE": ("team", delete("team")),
}


def state(client, world):
    """Everything the writes could change, as GET shows it (None for a 404)."""
    out = {}
    for kind in KINDS:
        response = client.get(world["paths"][kind])
        out[kind] = response.get_json() if response.status_code == 200 else None
    response = client.get(f"{world['paths']['key_result']}/checkins")
    out["checkins"] = response.get_json() if response.status_code == 200 else None
    return out


@pytest.mark.parametrize("name", list(CONDITIONAL_WRITES))
def test_if_match_stale_is_412_and_changes_nothing(client, world, name):
    kind, write = CONDITIONAL_WRITES[name]
    stale = etag_of(client, world["paths"][kind])
    touch = empty_patch(kind) if kind in ("objective", "key_result") else same_group_post(kind)
    assert touch(client, world).status_code == 200
    assert etag_of(client, world["paths"][kind]) != stale
    before = state(client, world)
    assert_error(write(client, world, **{"If-Match": stale}), 412)
    assert_error(write(client, world, **{"If-Match": '"not-the-etag"'}), 412)
    assert state(client, world) == before


@pytest.mark.parametrize("name", list(CONDITIONAL_WRITES))
def test_if_match_current_proceeds(client, world, name):
    kind, write = CONDITIONAL_WRITES[name]
    before = state(client, world)
    response = write(client, world, **{"If-Match": etag_of(client, world["paths"][kind])})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert state(client, world) != before


@pytest.mark.parametrize("name", list(CONDITIONAL_WRITES))
def test_if_match_star_proceeds(client, world, name):
    kind, write = CONDITIONAL_WRITES[name]
    before = state(client, world)
    response = write(client, world, **{"If-Match": "*"})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert state(client, world) != before


@pytest.mark.parametrize("name", list(CONDITIONAL_WRITES))
def test_if_match_list_with_the_current_etag_proceeds(client, world, name):
    kind, write = CONDITIONAL_WRITES[name]
    etag = etag_of(client, world["paths"][kind])
    response = write(client, world, **{"If-Match": f'"stale-one", {etag}'})
    assert response.status_code == 200, response.get_data(as_text=True)


@pytest.mark.parametrize("name", list(CONDITIONAL_WRITES))
def test_without_if_match_writes_proceed_as_before(client, world, name):
    kind, write = CONDITIONAL_WRITES[name]
    before = state(client, world)
    response = write(client, world)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert state(client, world) != before


@pytest.mark.parametrize("name", list(CONDITIONAL_WRITES))
@pytest.mark.parametrize("header", ['"0123abcd"', "*"])
def test_missing_resource_is_404_before_412(client, world, name, header):
    kind, write = CONDITIONAL_WRITES[name]
    world = {**world, "paths": {k: v.rsplit("/", 1)[0] + "/" + MISSING for k, v in world["paths"].items()}}
    assert_error(write(client, world, **{"If-Match": header}), 404)


def test_the_second_of_two_writers_with_the_same_etag_gets_412(client, world):
    path = world["paths"]["objective"]
    etag = etag_of(client, path)
    first = patch(client, path, {"description": "first"}, **{"If-Match": etag})
    assert first.status_code == 200, first.get_json()
    second = patch(client, path, {"description": "second"}, **{"If-Match": etag})
    assert_error(second, 412)
    assert get(client, path).get_json()["description"] == "first"
    third = patch(client, path, {"description": "third"}, **{"If-Match": first.headers["ETag"]})
    assert third.status_code == 200, third.get_json()


def test_a_checkin_makes_an_earlier_etag_stale_for_if_match(client, world):
    path = world["paths"]["key_result"]
    etag = etag_of(client, path)
    assert client.post(f"{path}/checkins", json={"value": "8"}).status_code == 200
    assert_error(patch(client, path, {"name": "Late"}, **{"If-Match": etag}), 412)
    assert_error(client.post(f"{path}/checkins", json={"value": "9"}, headers={"If-Match": etag}), 412)
    assert get(client, path).get_json()["current_value"] == "8.00"


def test_deleting_a_team_makes_an_objectives_earlier_etag_stale_for_if_match(client, world):
    path = world["paths"]["objective"]
    etag = etag_of(client, path)
    assert client.delete(world["paths"]["team"]).status_code == 200
    assert_error(patch(client, path, {"name": "Late"}, **{"If-Match": etag}), 412)


@pytest.mark.slow
def test_etag_and_304_over_real_http(client, live_server, world):
    path = world["paths"]["key_result"]
    first = live_server.get(path)
    assert first.ok() == get(client, path).get_json()
    etag = {name.lower(): value for name, value in first.headers.items()}["etag"]  # waitress says "Etag"
    assert etag == etag_of(client, path)
    fresh = live_server.get(path, headers={"If-None-Match": etag})
    assert (fresh.status, fresh.payload) == (304, b"")
    assert live_server.post(f"{path}/checkins", {"value": "12"},
                            headers={"Content-Type": "application/json", "If-Match": etag}).status == 200
    stale = live_server.post(f"{path}/checkins", {"value": "13"},
                             headers={"Content-Type": "application/json", "If-Match": etag})
    assert stale.status == 412 and stale.json()["code"] == 412
    again = live_server.get(path, headers={"If-None-Match": etag})
    assert again.status == 200 and again.json()["current_value"] == "12.00"


@pytest.mark.slow
def test_if_match_compares_strongly(client, world):
    path = world["paths"]["objective"]
    etag = etag_of(client, path)
    assert_error(patch(client, path, {"name": "Weak"}, **{"If-Match": f"W/{etag}"}), 412)
    assert get(client, path).get_json()["name"] == "Grow"


def test_if_none_match_compares_weakly(client, world):
    path = world["paths"]["objective"]
    response = client.get(path, headers={"If-None-Match": f"W/{etag_of(client, path)}"})
    assert response.status_code == 304


@pytest.mark.slow
def test_concurrent_writers_with_one_etag_make_exactly_one_change(client, live_server, world):
    """The If-Match check and the write are one transaction: of eight racing PATCHes, one wins."""
    path = world["paths"]["objective"]
    etag = etag_of(client, path)
    barrier = threading.Barrier(8)
    statuses = []

    def writer(n):
        barrier.wait()
        response = live_server.request("PATCH", path, {"description": f"writer {n}"},
                                       headers={"Content-Type": "application/json", "If-Match": etag})
        statuses.append(response.status)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(statuses) == [200] + [412] * 7, statuses
    assert get(client, path).get_json()["description"].startswith("writer ")


# --- creates answer with the ETag (issue 34): a client's first If-Match edit needs no GET ----------------------


def test_every_create_answers_the_etag_a_get_gives(client, runner, world):
    cycle, objective, key_result = world["cycle"], world["objective"], world["key_result"]
    creates = [
        (client.post("/v1/cycles", json={"name": "Q2"}), "/v1/cycles/{}"),
        (client.post("/v1/teams", json={"name": "Blue"}), "/v1/teams/{}"),
        (client.post("/v1/objectives", json={"name": "O", "cycle_id": cycle["id"], "is_company": False,
                                              "is_personal": False}), "/v1/objectives/{}"),
        (client.post(f"/v1/objectives/{objective['id']}/keyresults", json={"name": "K", "type": "baseline"}),
         "/v1/keyresults/{}"),
        (client.post(f"/v1/objectives/{objective['id']}/comments", json={"body": "a"}), "/v1/comments/{}"),
        (client.post(f"/v1/keyresults/{key_result['id']}/comments", json={"body": "b"}), "/v1/comments/{}"),
    ]
    for created, path in creates:
        assert created.status_code == 200, created.get_json()
        tag = created.headers.get("ETag")
        assert tag is not None and STRONG_ETAG.fullmatch(tag), path
        assert tag == etag_of(client, path.format(created.get_json()["id"])), path


def test_a_create_s_etag_makes_the_first_edit_safe_without_a_get(client, world):
    created = client.post("/v1/cycles", json={"name": "Q2"})
    path = f"/v1/cycles/{created.get_json()['id']}"
    first = patch(client, path, {"name": "Q2 2026"}, **{"If-Match": created.headers["ETag"]})
    assert first.status_code == 200
    assert_error(patch(client, path, {"name": "Q2 2027"}, **{"If-Match": created.headers["ETag"]}), 412)


def test_a_check_in_answers_its_key_result_s_new_etag(client, world):
    path = world["paths"]["key_result"]
    before = etag_of(client, path)
    answer = client.post(f"{path}/checkins", json={"value": "7"}, headers={"If-Match": before})
    assert answer.status_code == 200 and answer.get_json()["value"] == "7.00"
    assert answer.headers["ETag"] != before
    assert answer.headers["ETag"] == etag_of(client, path)
    # So check-ins chain without a GET between them.
    chained = client.post(f"{path}/checkins", json={"value": "8"}, headers={"If-Match": answer.headers["ETag"]})
    assert chained.status_code == 200
    assert_error(client.post(f"{path}/checkins", json={"value": "9"}, headers={"If-Match": answer.headers["ETag"]}),
                 412)


def test_a_new_member_answers_the_user_s_etag(client, world):
    team, user = world["team"], world["user"]
    added = client.put(f"/v1/teams/{team['id']}/members/{user['id']}")
    assert added.status_code == 200 and added.get_json() == user
    assert added.headers["ETag"] == etag_of(client, world["paths"]["user"])
