"""Every answer says nosniff; every page also forbids framing, scripts and styles from elsewhere, forms
posting elsewhere, and sends its address only to itself. Values from the database are escaped on the
cycle page, ids, types and times included."""
import pytest

from helpers import make_cycle, make_key_result, make_objective
from html_tree import BROWSER

CSP = "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'"


@pytest.mark.parametrize("path", ["/", "/nope", "/login", "/static/style.css"])
def test_pages_carry_the_page_policy(client, path):
    with client.get(path, headers=BROWSER) as response:
        pass
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Content-Security-Policy"] == CSP
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Referrer-Policy"] == "same-origin"


def test_a_cycle_and_a_key_result_page_carry_it_too(client):
    cycle = make_cycle(client)
    key_result = make_key_result(client, make_objective(client, cycle["id"])["id"])
    for path in (f"/cycles/{cycle['id']}", f"/keyresults/{key_result['id']}"):
        response = client.get(path, headers=BROWSER)
        assert response.status_code == 200
        assert response.headers["Content-Security-Policy"] == CSP, path


@pytest.mark.parametrize("path", ["/v1/cycles", "/v1/nope", "/healthz", "/v1/openapi.json"])
def test_api_answers_say_nosniff_without_the_page_policy(client, path):
    response = client.get(path)
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "Content-Security-Policy" not in response.headers


HOSTILE = '"><script>alert(1)</script>'


def test_a_hostile_id_type_or_time_in_the_database_is_escaped_on_the_cycle_page(app, client):
    """A restored backup or a row written behind the service's back: markup in an id runs nowhere."""
    cycle = make_cycle(client)
    objective = make_objective(client, cycle["id"])
    make_key_result(client, objective["id"])
    import sqlite3

    db = sqlite3.connect(app.config["DATABASE"])
    with db:  # foreign keys off, as in a file made elsewhere: the key result follows its objective's new id
        db.execute("UPDATE objectives SET id = ? WHERE id = ?", ("o" + HOSTILE, objective["id"]))
        db.execute("UPDATE key_results SET id = ?, objective_id = ? WHERE objective_id = ?",
                   ("k" + HOSTILE, "o" + HOSTILE, objective["id"]))
    db.close()
    page = client.get(f"/cycles/{cycle['id']}", headers=BROWSER)
    body = page.get_data(as_text=True)
    assert page.status_code == 200, body[:500]
    assert "<script>alert(1)</script>" not in body
    # the objective's id and its heading's link to its page, the key result's link
    assert body.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 3


def test_a_hostile_type_or_time_is_escaped_in_a_key_results_markup():
    from okr.progress import parse_timestamp
    from okr.web.tree import key_result_html

    node = {"id": "k", "name": "n", "type": "positive" + HOSTILE, "start_value": "0.00", "current_value": "1.00",
            "target_value_min": "2.00", "target_value_max": None, "progress": "0.50", "status": "on_track",
            "confidence": "0.50", "stale": False, "last_checkin_at": "2026-01-01T00:00:00Z"}
    markup = key_result_html(node, (), parse_timestamp("2026-01-02T00:00:00Z"))
    assert "<script>" not in markup and markup.count("&lt;script&gt;") == 1
    assert 'datetime="2026-01-01T00:00:00Z"' in markup  # quoted: a value with a space or > stays one value
