"""A cycle as CSV at /cycles/<id>.csv (the bytes `okr export --format csv` writes), an old wallboard link
(/cycles/<id>?board=1) leading to the wallboard, and a read-only key's session, which lasts 30 days."""
import re
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime

import pytest

from helpers import create_key, make_cycle, make_key_result, make_objective, make_user
from html_tree import BROWSER, parse


@pytest.fixture
def filled(client, runner, clock):
    clock.now = "2026-02-01T09:00:00Z"
    ada = make_user(runner, "Ada Lovelace", "ada@example.com")
    cycle = make_cycle(client, "2026 Q1 / <Sales>")
    objective = make_objective(client, cycle["id"], "=Grow, \"revenue\"", assignee_id=ada["id"])
    make_key_result(client, objective["id"], "Reach 500 customers", current_value="100", target_value_min="500")
    make_key_result(client, objective["id"], "Ship it", type="milestone", current_value="0", target_value_min=None)
    clock.now = "2026-03-01T09:00:00Z"
    return cycle


def test_the_csv_is_the_clis_file_byte_for_byte(client, runner, filled, tmp_path):
    path = tmp_path / "cycle.csv"
    result = runner.invoke(args=["export", "--format", "csv", "--cycle", filled["id"], str(path)])
    assert result.exit_code == 0, result.output
    response = client.get(f"/cycles/{filled['id']}.csv", headers=BROWSER)
    assert response.status_code == 200
    assert response.data == path.read_bytes()
    assert response.headers["Content-Type"] == "text/csv; charset=utf-8"
    assert response.headers["Content-Disposition"] == 'attachment; filename="2026-Q1-Sales.csv"'
    assert b"Reach 500 customers" in response.data and b"'=Grow" in response.data


def test_a_cycle_without_a_usable_name_downloads_under_its_id(client):
    cycle = make_cycle(client, "«»")
    response = client.get(f"/cycles/{cycle['id']}.csv")
    assert response.headers["Content-Disposition"] == f'attachment; filename="{cycle["id"]}.csv"'


@pytest.mark.parametrize("cycle_id", ["8a4c5d3e-0000-4000-8000-000000000000", "nothing"])
def test_an_unknown_cycles_csv_is_a_404(client, cycle_id):
    assert client.get(f"/cycles/{cycle_id}.csv", headers=BROWSER).status_code == 404


def test_the_cycle_page_is_still_the_cycle_page(client, filled):
    response = client.get(f"/cycles/{filled['id']}", headers=BROWSER)
    assert response.status_code == 200 and response.mimetype == "text/html"


# --- the wallboard ---------------------------------------------------------------------------------------


def test_board_1_goes_to_the_wallboards_own_page(client, filled):
    """An old wallboard link (?board=1 on the cycle page) leads to the wallboard (tests/web/test_wallboard.py)."""
    response = client.get(f"/cycles/{filled['id']}?board=1", headers=BROWSER)
    assert response.status_code == 302 and response.headers["Location"] == f"/cycles/{filled['id']}/board"
    assert client.get(response.headers["Location"], headers=BROWSER).status_code == 200


def test_the_cycle_page_is_no_wallboard_and_links_to_it(client, filled):
    doc = parse(client.get(f"/cycles/{filled['id']}", headers=BROWSER).get_data(as_text=True))
    assert "board" not in doc.one("body").classes
    assert not [m for m in doc.find_all("meta") if m.attrs.get("http-equiv")]
    assert doc.find_all("a", href=f"/cycles/{filled['id']}/board")
    assert not doc.find_all("a", href=f"/cycles/{filled['id']}?board=1")


# --- a read-only key's session lasts 30 days -------------------------------------------------------------


def log_in_with(client, key):
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").get_data(as_text=True)).group(1)
    response = client.post("/login", data={"csrf_token": token, "credential": key["credential"],
                                           "secret": key["secret"]})
    assert response.status_code == 303
    return response


def cookie_expires(response):
    [header] = [h for h in response.headers.getlist("Set-Cookie") if h.startswith("okr_session=")]
    attributes = {part.strip().partition("=")[0].lower(): part.strip().partition("=")[2]
                  for part in header.split(";")[1:]}
    return parsedate_to_datetime(attributes["expires"])


@pytest.mark.parametrize("read_only, days", [(True, 30), (False, 0.5)])
def test_a_read_only_keys_session_lasts_30_days_and_others_12_hours(client, runner, filled, later,
                                                                     read_only, days):
    key = create_key(runner, "wallboard", read_only=read_only)
    before = datetime.now(timezone.utc)
    expires = cookie_expires(log_in_with(client, key))
    assert abs(expires - (before + timedelta(days=days))) < timedelta(minutes=2), expires
    board = f"/cycles/{filled['id']}/board"
    later.advance(int(days * 86400) - 60)
    assert client.get(board, headers=BROWSER).status_code == 200
    later.advance(61)
    response = client.get(board, headers=BROWSER)
    assert response.status_code == 303 and "/login" in response.headers["Location"]


def test_a_person_signed_in_after_a_read_only_key_keeps_its_own_12_hours(app, client, runner, filled, later,
                                                                         fast_hashing):
    from okr.db import transaction
    from okr.accounts import passwords
    from okr.store import users

    wallboard = app.test_client()
    log_in_with(wallboard, create_key(runner, "wallboard", read_only=True))
    with app.app_context(), transaction() as db:
        user = users.create(db, "Ed", "ed@example.com", "editor")
        users.set_password(db, user, passwords.hash_password("correct horse battery"))
    later.advance(13 * 3600)
    token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/login").get_data(as_text=True)).group(1)
    response = client.post("/login", data={"csrf_token": token, "email": "ed@example.com",
                                           "password": "correct horse battery"})
    assert response.status_code == 303
    # Ed's sign-in did not clear the board's 13-hour-old session away.
    assert wallboard.get(f"/cycles/{filled['id']}/board", headers=BROWSER).status_code == 200
    later.advance(12 * 3600 + 60)
    assert client.get("/", headers=BROWSER).status_code == 303
