"""The dashboard under odd conditions: a database that does not answer, rows written behind the
API's back, and odd links. Each answers a page, never a 500."""
import re
import sqlite3
from contextlib import closing

import pytest

from html_tree import BROWSER


def run_sql(app, sql, *params):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        db.execute("PRAGMA foreign_keys = ON")
        db.execute(sql, params)
        db.commit()


def test_the_session_secret_is_made_when_the_server_starts_not_by_a_page(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        [(secret,)] = db.execute("SELECT value FROM web_secrets WHERE name = 'session'").fetchall()
    assert re.fullmatch(r"[0-9a-f]{64}", secret)


def test_a_page_that_cannot_open_its_session_says_so_with_a_503_page(tmp_path, key_result, app):
    from okr import create_app
    slow = create_app({"TESTING": True, "DATABASE": app.config["DATABASE"], "BUSY_TIMEOUT_MS": 100})
    run_sql(app, "DELETE FROM web_secrets")  # as after restoring a backup that had none
    with closing(sqlite3.connect(app.config["DATABASE"])) as holder:
        holder.execute("BEGIN IMMEDIATE")  # another process writing, past the busy timeout
        response = slow.test_client().get(f"/keyresults/{key_result['id']}", headers=BROWSER)
        holder.execute("ROLLBACK")
    assert response.status_code == 503 and response.mimetype == "text/html"
    assert "Try again" in response.get_data(as_text=True) and response.headers["Retry-After"] == "1"
    assert slow.test_client().get(f"/keyresults/{key_result['id']}", headers=BROWSER).status_code == 200


def test_a_key_result_without_check_ins_has_a_page_and_its_form_still_answers_400(app, client, key_result):
    run_sql(app, "DELETE FROM checkins")  # behind the API's back
    page = client.get(f"/keyresults/{key_result['id']}")
    assert page.status_code == 200 and "No check-ins yet" in page.get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True)).group(1)
    refused = client.post(f"/keyresults/{key_result['id']}", data={"value": "x", "csrf_token": token})
    assert refused.status_code == 400 and 'id="value-error"' in refused.get_data(as_text=True)


@pytest.mark.parametrize("before, status", [
    ("9223372036854775808", 200),        # past every row id: the oldest page, empty
    ("99999999999999999999", 400),       # longer than any row id
    ("²", 400), ("١٢", 400), ("-1", 400),
])
def test_an_odd_older_cycles_link_is_a_page_not_a_500(client, before, status):
    response = client.get("/", query_string={"before": before}, headers=BROWSER)
    assert response.status_code == status and response.mimetype == "text/html"


@pytest.mark.parametrize("target", ["/a\nb", "/a\r\nSet-Cookie: x=1", "/a\x7fb", "/\x00"])
def test_a_next_path_with_control_characters_goes_home(client, target):
    response = client.get("/login", query_string={"next": target})
    assert response.status_code == 303 and response.headers["Location"] == "/"
