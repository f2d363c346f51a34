"""Who made an objective: recorded as it is made (the person behind the request; nobody for a service key or open
access), filled from the activity feed for objectives made before it was kept (schema 16), shown on the objective's
page, and carried by okr export."""
import json
import sqlite3
from contextlib import closing

from helpers import make_cycle, make_user
from okr.db import transaction
from okr.store.schema import record_creators


def creator(app, objective_id):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT created_by FROM objectives WHERE id = ?", (objective_id,)).fetchone()[0]


def create(client, cycle_id, headers=None):
    response = client.post("/v1/objectives", json={"name": "Grow", "cycle_id": cycle_id, "is_company": False,
                                                   "is_personal": False}, headers=headers or {})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_the_person_behind_the_request_is_its_creator(app, client, make_person):
    cycle = make_cycle(client)
    anonymous = create(client, cycle["id"])  # open access: nobody known
    editor = make_person("editor", name="Eddie Editor")
    made = create(client, cycle["id"], editor.headers())
    assert (creator(app, anonymous["id"]), creator(app, made["id"])) == (None, editor.user["id"])
    assert "created_by" not in made  # the spec's objective is unchanged


def test_the_objective_page_names_its_creator(app, client, runner):
    ada = make_user(runner)  # no password: sign-in stays off
    made = create(client, make_cycle(client)["id"])
    assert "<dt>Made by</dt><dd>Unknown</dd>" in client.get(f"/objectives/{made['id']}").text
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.execute("UPDATE objectives SET created_by = ?", (ada["id"],))
    assert "<dt>Made by</dt><dd>Ada Lovelace</dd>" in client.get(f"/objectives/{made['id']}").text


def test_objectives_made_before_get_their_creator_from_the_feed(app, client, make_person):
    cycle = make_cycle(client)
    editor = make_person("editor")
    made = create(client, cycle["id"], editor.headers())
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.execute("UPDATE objectives SET created_by = NULL")
    with app.app_context(), transaction() as db:
        record_creators(db)
    assert creator(app, made["id"]) == editor.user["id"]


def test_okr_export_carries_the_creator(app, client, runner, make_person, tmp_path):
    cycle = make_cycle(client)
    editor = make_person("editor")
    made = create(client, cycle["id"], editor.headers())
    path = tmp_path / "all.json"
    assert runner.invoke(args=["export", str(path)]).exit_code == 0
    [record] = [o for o in json.loads(path.read_text(encoding="utf-8"))["objectives"] if o["id"] == made["id"]]
    assert list(record)[-2:] == ["created_by", "visibility"] and record["created_by"] == editor.user["id"]
