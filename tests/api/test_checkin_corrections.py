"""Correcting and deleting check-ins (issue 36): PATCH and DELETE /v1/checkins/:id by the author within 7 days
and an admin at any time, never the starting check-in; the key result follows its latest remaining check-in;
each change an event with its before and after."""
import json
import sqlite3
from contextlib import closing

from helpers import assert_error, fetch, signed
from okr.db import transaction
from okr.store import webhooks


def check_in(client, key_result, value, headers=None, **more):
    response = client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": value, **more},
                           headers=headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def starting(client, key_result, headers=None):
    response = client.get(f"/v1/keyresults/{key_result['id']}/checkins", headers=headers)
    return response.get_json()["checkins"][0]


def age(app, checkin, days):
    """Makes a check-in as if made days ago."""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.execute("UPDATE checkins SET created_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now', ?) WHERE id = ?",
                   (f"-{days} days", checkin["id"]))


def checkin_events(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        rows = db.execute("SELECT type, resource_id, parent_id, data, changes FROM events "
                          "WHERE type GLOB 'checkin.*' ORDER BY seq").fetchall()
    return [(row[0], row[1], row[2], json.loads(row[3]), row[4] and json.loads(row[4])) for row in rows]


def test_a_correction_changes_the_check_in_and_the_key_result_follows(app, client, key_result):
    first = check_in(client, key_result, "200")
    last = check_in(client, key_result, "300", confidence="0.6")
    corrected = client.patch(f"/v1/checkins/{last['id']}", json={"value": "310", "comment": "typo"})
    assert corrected.status_code == 200
    assert corrected.get_json() == {**last, "value": "310.00", "comment": "typo"}
    assert fetch(client, f"/v1/checkins/{last['id']}") == corrected.get_json()
    assert fetch(client, f"/v1/keyresults/{key_result['id']}")["current_value"] == "310.00"
    # correcting an older one leaves the key result on the latest
    assert client.patch(f"/v1/checkins/{first['id']}", json={"value": "210"}).status_code == 200
    assert fetch(client, f"/v1/keyresults/{key_result['id']}")["current_value"] == "310.00"
    kind, resource, parent, data, changes = checkin_events(app)[-2]
    assert (kind, resource, parent) == ("checkin.updated", last["id"], key_result["id"])
    assert changes == {"value": ["300.00", "310.00"], "comment": [None, "typo"]}
    assert data["value"] == "310.00"


def test_a_delete_moves_the_key_result_back_and_a_second_delete_is_a_404(app, client, key_result):
    check_in(client, key_result, "200", confidence="0.7")
    wrong = check_in(client, key_result, "9000", confidence="0.2")
    response = client.delete(f"/v1/checkins/{wrong['id']}")
    assert (response.status_code, response.data) == (200, b"")
    body = fetch(client, f"/v1/keyresults/{key_result['id']}")
    assert (body["current_value"], body["confidence"]) == ("200.00", "0.70")
    assert checkin_events(app)[-1][:4] == ("checkin.deleted", wrong["id"], key_result["id"], wrong)
    assert assert_error(client.delete(f"/v1/checkins/{wrong['id']}"), 404)
    assert_error(client.patch(f"/v1/checkins/{wrong['id']}", json={"value": "1"}), 404)


def test_the_starting_check_in_is_never_changed(client, key_result):
    start = starting(client, key_result)
    body = assert_error(client.patch(f"/v1/checkins/{start['id']}", json={"value": "1"}), 409)
    assert "starting check-in" in body["message"]
    assert_error(client.delete(f"/v1/checkins/{start['id']}"), 409)
    assert fetch(client, f"/v1/checkins/{start['id']}") == start


def test_bad_values_are_refused_as_a_new_check_in_would_be_and_nothing_changes(app, client, key_result):
    made = check_in(client, key_result, "200")
    for body, field in (({"value": "lots"}, "value"), ({"confidence": "2"}, "confidence"),
                        ({"value": None}, "value"), ({"comment": "x" * 100_001}, "comment")):
        refused = assert_error(client.patch(f"/v1/checkins/{made['id']}", json=body), 400)
        assert field in refused["details"]
    assert fetch(client, f"/v1/checkins/{made['id']}") == made
    assert [event[0] for event in checkin_events(app)][-1] == "checkin.created"


def test_the_author_within_7_days_and_an_admin_any_time(app, client, make_person, key_result, key):
    author, other, admin, viewer = (make_person("editor"), make_person("editor"), make_person("admin"),
                                    make_person("viewer"))
    made = check_in(client, key_result, "200", headers=author.headers())
    path = f"/v1/checkins/{made['id']}"
    for refused in (other, viewer):
        assert_error(client.patch(path, json={"value": "1"}, headers=refused.headers()), 403)
        assert_error(client.delete(path, headers=refused.headers()), 403)
    body = assert_error(client.patch(path, json={"value": "1"}, headers=signed(key)), 403)
    assert body["message"] == "only a check-in's author or an admin may correct or delete it"
    assert client.patch(path, json={"value": "210"}, headers=author.headers()).status_code == 200
    age(app, made, 8)
    body = assert_error(client.patch(path, json={"value": "220"}, headers=author.headers()), 403)
    assert "7 days" in body["message"]
    assert client.patch(path, json={"value": "230"}, headers=admin.headers()).status_code == 200
    served = check_in(client, key_result, "240", headers=signed(key))
    assert_error(client.delete(f"/v1/checkins/{served['id']}", headers=signed(key)), 403)
    assert client.delete(f"/v1/checkins/{served['id']}", headers=admin.headers()).status_code == 200
    assert client.delete(path, headers=admin.headers()).status_code == 200


def test_a_webhook_for_check_ins_is_given_the_correction_and_the_delete(app, client, key_result):
    with app.app_context(), transaction() as db:
        hook = webhooks.add(db, "https://hooks.example.com/okr", ["checkin.updated", "checkin.deleted"])
    made = check_in(client, key_result, "200")
    assert client.patch(f"/v1/checkins/{made['id']}", json={"value": "210"}).status_code == 200
    assert client.delete(f"/v1/checkins/{made['id']}").status_code == 200
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        queued = db.execute("""SELECT e.type FROM webhook_outbox o JOIN events e ON e.seq = o.event_seq
                               WHERE o.hook_seq = ? ORDER BY e.seq""", (hook["seq"],)).fetchall()
    assert [row[0] for row in queued] == ["checkin.updated", "checkin.deleted"]
