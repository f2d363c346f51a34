"""A connection's secret: sealed with the server's key (OKR_SECRET_KEY or DATABASE.key, mode 0600), never in the
database in clear, never shown again, never in an answer, an event, an export or the log; a database restored
where its key is not shows the connection as needing its secret again, and its sources do not run."""
import json
import logging
import os
import sqlite3
import stat
from contextlib import closing

import pytest
from cryptography.fernet import Fernet

from okr import create_app
from okr.sources import sealing

SECRET = "pg-Pa55word-7731"


@pytest.fixture
def metrics(tmp_path):
    path = tmp_path / "metrics.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE figures (value REAL)")
        db.execute("INSERT INTO figures VALUES (3)")
        db.commit()
    return str(path)


def add_connection(client, metrics, **fields):
    response = client.post("/v1/connections", json={"name": "Warehouse", "kind": "sqlite", "address": metrics,
                                                     "secret": SECRET, **fields})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def attached_key_result(client, connection):
    cycle = client.post("/v1/cycles", json={"name": "Q"}).get_json()
    objective = client.post("/v1/objectives", json={"name": "o", "cycle_id": cycle["id"], "is_company": False,
                                                    "is_personal": False}).get_json()
    kr = client.post(f"/v1/objectives/{objective['id']}/keyresults", json={"name": "k", "type": "baseline"}).get_json()
    assert client.put(f"/v1/keyresults/{kr['id']}/source", json={
        "connection_id": connection["id"], "query": "SELECT value FROM figures"}).status_code == 200
    return kr["id"]


def test_the_secret_is_sealed_in_the_database_and_shown_nowhere(app, client, metrics, runner, caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    connection = add_connection(client, metrics, headers={"Authorization": "Bearer {secret}"})
    key_result = attached_key_result(client, connection)
    client.post(f"/v1/keyresults/{key_result}/source/sync")
    assert connection["has_secret"] is True and connection["needs_secret"] is False
    answers = [client.get(path).get_data(as_text=True) for path in (
        "/v1/connections", f"/v1/connections/{connection['id']}", f"/v1/keyresults/{key_result}/source",
        "/v1/events?page_size=1000", f"/v1/keyresults/{key_result}/checkins")]
    assert not any(SECRET in answer for answer in answers)
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        (sealed,) = db.execute("SELECT sealed_secret FROM connections").fetchone()
        dump = "\n".join(db.iterdump())
    assert SECRET not in dump and sealing.unseal(app.config, sealed) == SECRET
    with open(app.config["DATABASE"], "rb") as file:
        assert SECRET.encode() not in file.read()
    exported = tmp_path / "all.json"
    assert runner.invoke(args=["export", str(exported)]).exit_code == 0
    assert SECRET not in exported.read_text() and str(metrics) not in exported.read_text()
    assert SECRET not in caplog.text
    key_file = sealing.key_path(app.config["DATABASE"])
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600


def test_a_database_restored_without_its_key_needs_the_secret_again(app, client, metrics, tmp_path):
    connection = add_connection(client, metrics)
    key_result = attached_key_result(client, connection)
    restored = tmp_path / "elsewhere" / "okr.db"
    restored.parent.mkdir()
    with closing(sqlite3.connect(app.config["DATABASE"])) as live, closing(sqlite3.connect(restored)) as copy:
        live.backup(copy)  # as okr backup copies it; its key file stays behind
    elsewhere = create_app({"TESTING": True, "DATABASE": str(restored)}).test_client()
    shown = elsewhere.get(f"/v1/connections/{connection['id']}").get_json()
    assert shown["has_secret"] is True and shown["needs_secret"] is True
    run = elsewhere.post(f"/v1/keyresults/{key_result}/source/sync").get_json()
    assert run["outcome"] == "failed" and "needs its secret again" in run["error"]
    assert len(elsewhere.get(f"/v1/keyresults/{key_result}/checkins").get_json()["checkins"]) == 1
    assert elsewhere.patch(f"/v1/connections/{connection['id']}", json={"secret": SECRET}).status_code == 200
    assert elsewhere.get(f"/v1/connections/{connection['id']}").get_json()["needs_secret"] is False
    assert elsewhere.post(f"/v1/keyresults/{key_result}/source/sync").get_json()["outcome"] == "written"


def test_okr_secret_key_seals_instead_of_a_key_file(tmp_path, new_database, metrics):
    key = Fernet.generate_key().decode()
    app = create_app({"TESTING": True, "DATABASE": new_database(tmp_path / "okr.db"), "SECRET_KEY": key})
    add_connection(app.test_client(), metrics)
    assert not os.path.exists(sealing.key_path(app.config["DATABASE"]))
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        (sealed,) = db.execute("SELECT sealed_secret FROM connections").fetchone()
    assert Fernet(key.encode()).decrypt(sealed.encode()).decode() == SECRET


def test_a_bad_secret_key_is_refused_when_the_app_is_made(tmp_path, new_database):
    with pytest.raises(ValueError, match="^OKR_SECRET_KEY must be a Fernet key"):
        create_app({"TESTING": True, "DATABASE": new_database(tmp_path / "okr.db"), "SECRET_KEY": "short"})


def test_removing_and_keeping_the_secret(client, metrics):
    connection = add_connection(client, metrics)
    kept = client.patch(f"/v1/connections/{connection['id']}", json={"name": "Renamed"}).get_json()
    assert kept["has_secret"] is True and kept["name"] == "Renamed"
    removed = client.patch(f"/v1/connections/{connection['id']}", json={"secret": None}).get_json()
    assert removed["has_secret"] is False


def test_the_secret_never_appears_in_an_error(client, metrics):
    response = client.post("/v1/connections", json={"name": "W", "kind": "sqlite", "address": "",
                                                     "secret": SECRET})
    assert response.status_code == 400 and SECRET not in json.dumps(response.get_json())


@pytest.mark.parametrize("suffix", ["", "-wal", ".key"])
def test_the_service_s_own_database_is_no_source(app, client, suffix):
    response = client.post("/v1/connections", json={"name": "Me", "kind": "sqlite",
                                                    "address": app.config["DATABASE"] + suffix})
    assert response.status_code == 400
    assert response.get_json()["details"]["address"] == ("that is this service's own database: a source reads "
                                                          "another system's")


def test_a_secret_typed_into_a_query_is_masked_in_the_evidence(client, metrics):
    connection = add_connection(client, metrics)
    cycle = client.post("/v1/cycles", json={"name": "Q"}).get_json()
    objective = client.post("/v1/objectives", json={"name": "o", "cycle_id": cycle["id"], "is_company": False,
                                                    "is_personal": False}).get_json()
    kr = client.post(f"/v1/objectives/{objective['id']}/keyresults", json={"name": "k", "type": "baseline"}).get_json()
    assert client.put(f"/v1/keyresults/{kr['id']}/source", json={
        "connection_id": connection["id"], "query": f"SELECT value FROM figures -- {SECRET}"}).status_code == 200
    run = client.post(f"/v1/keyresults/{kr['id']}/source/sync").get_json()
    evidence = client.get(f"/v1/checkins/{run['checkin_id']}/evidence").get_json()
    assert evidence["request"].startswith("SELECT value FROM figures -- ***")
    assert SECRET not in json.dumps(evidence)
    tested = client.post(f"/v1/keyresults/{kr['id']}/source/test").get_json()
    assert tested["ok"] and SECRET not in json.dumps(tested)
