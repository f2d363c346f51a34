"""The pages of metric sources, through Flask's test client: the Connections pages (admins), a key result's Source
section on its edit page (editors and admins: Save, Test, Sync now, Fill back, Start again, Remove), what its page
and history show everyone, the evidence page with Recompute, and a source's marks on the chart. Every form refuses
a post without its CSRF token; a secret typed is never in a page or the log.

The source is an SQLite file the test makes (the sqlite kind: a real reader, in-process).
"""
import logging
import re
import sqlite3
from contextlib import closing
from datetime import date

import pytest

from okr.db import transaction
from okr.sources import reading
from okr.store import connections, sources
from okr.web import charts

from edit_forms import CSRF, get
from helpers import user_with_password
from html_tree import BROWSER, parse
from people_page import PASSWORD, sign_in

SECRET = "s3cret-token-that-must-never-show"
AS_OF_QUERY = "SELECT value FROM figures WHERE day <= substr(coalesce(:as_of, '9999'), 1, 10) ORDER BY day DESC LIMIT 1"
NOW_QUERY = "SELECT value FROM figures ORDER BY day DESC LIMIT 1"


@pytest.fixture
def quarter(client, clock):
    """A cycle of the first quarter of 2026 with a positive key result (0 to 100), made on 1 January; the clock
    then stands on 5 January."""
    clock.now = "2026-01-01T09:00:00Z"
    cycle = client.post("/v1/cycles", json={"name": "Q1", "starts_on": "2026-01-01",
                                            "ends_on": "2026-03-31"}).get_json()
    objective = client.post("/v1/objectives", json={"name": "Grow", "cycle_id": cycle["id"], "is_company": False,
                                                    "is_personal": False}).get_json()
    key_result = client.post(f"/v1/objectives/{objective['id']}/keyresults", json={
        "name": "Customers", "type": "positive", "current_value": "0", "target_value_min": "100",
        "confidence": "0.7"}).get_json()
    clock.now = "2026-01-05T10:00:00Z"
    return key_result["id"]


def post_form(client, target, token_page, **fields):
    """Posts fields to target as a browser does, with the CSRF token of token_page (a form may have a field named
    path, which edit_forms.post_form takes for the address)."""
    token = CSRF.search(client.get(token_page, headers=BROWSER).get_data(as_text=True)).group(1)
    return client.post(target, data={"csrf_token": token, **fields}, headers=BROWSER)


def form_of(tree, action_end):
    """The form whose action ends with action_end."""
    found = [form for form in tree.find_all("form") if form.attrs.get("action", "").endswith(action_end)]
    assert len(found) == 1, [form.attrs.get("action") for form in tree.find_all("form")]
    return found[0]


def add_connection(client, name="Metrics", address="/nowhere.db", secret="", kind="sqlite", **more):
    response = post_form(client, "/connections", "/connections", name=name, kind=kind, address=address,
                         headers=more.pop("headers", ""), secret=secret, **more)
    assert response.status_code == 303, response.get_data(as_text=True)[:3000]
    return next(c for c in connection_rows(client) if c["name"] == name)


def connection_rows(client):
    with client.application.app_context(), transaction() as db:
        return connections.listed(db)


def source_of(client, key_result_id):
    with client.application.app_context(), transaction() as db:
        return sources.of_key_result(db, key_result_id)


def save_source(client, key_result_id, connection_id, query=AS_OF_QUERY, path="", every="60"):
    edit = f"/keyresults/{key_result_id}/edit"
    return post_form(client, f"/keyresults/{key_result_id}/source", edit, connection_id=connection_id, query=query,
                     path=path, every_minutes=every)


def act(client, key_result_id, action, **fields):
    return post_form(client, f"/keyresults/{key_result_id}/source/{action}", f"/keyresults/{key_result_id}/edit",
                     **fields)


def said(response):
    return parse(response.get_data(as_text=True)).one(id="source-said").text


def history_authors(client, key_result_id):
    tree = get(client, f"/keyresults/{key_result_id}")
    return [cell.text for cell in tree.one("table", cls="history").find_all("td", data_label="Author")]


@pytest.fixture
def attached(client, quarter, metrics):
    """The quarter's key result attached to the metrics file by a query that takes :as_of; 12 on 5 January."""
    metrics.set("2026-01-05", 12)
    connection = add_connection(client, address=metrics.address)
    assert save_source(client, quarter, connection["id"]).status_code == 303
    return {"key_result": quarter, "connection": connection, "metrics": metrics}


# --- the Connections pages ---------------------------------------------------------------------------------------


def test_an_admin_adds_a_connection_whose_secret_is_kept_sealed_and_shown_nowhere(client, app, caplog):
    caplog.set_level(logging.DEBUG)
    page = get(client, "/")
    assert page.one("a", href="/connections").text == "Connections"  # beside People and Webhooks
    added = add_connection(client, name="Jira", kind="http_json", address="https://jira.example/rest/api/2/search",
                           headers="Accept: application/json\nAuthorization: Bearer {secret}", secret=SECRET,
                           inside_network="on")
    assert added["sealed_secret"] and SECRET not in added["sealed_secret"]
    assert added["headers"] == {"Accept": "application/json", "Authorization": "Bearer {secret}"}
    row = get(client, "/connections").one("tr", id=f"c-{added['id']}")
    cells = {cell.attrs["data-label"]: cell.text for cell in row.iter() if "data-label" in cell.attrs}
    assert cells == {"Name": "Jira", "Kind": "HTTP JSON", "Address": "https://jira.example/rest/api/2/search",
                     "Inside our network": "yes", "Secret": "has a secret", "Sources": "0"}
    edit = get(client, f"/connections/{added['id']}/edit")
    assert edit.one("input", id="secret").attrs["value"] == "" and edit.one("input", id="secret").attrs["type"] == \
        "password"
    assert edit.one("textarea", id="headers").raw_text() == \
        "Accept: application/json\nAuthorization: Bearer {secret}"
    for path in ("/", "/connections", f"/connections/{added['id']}/edit", f"/connections/{added['id']}/delete"):
        assert SECRET not in client.get(path, headers=BROWSER).get_data(as_text=True), path
    assert SECRET not in caplog.text


def test_an_empty_secret_keeps_it_the_box_removes_it_and_a_new_one_replaces_it(client):
    added = add_connection(client, secret=SECRET)
    path = f"/connections/{added['id']}/edit"
    fields = {"name": "Metrics, renamed", "address": "/elsewhere.db", "headers": "", "secret": ""}
    assert post_form(client, path, path, **fields).status_code == 303
    kept = connection_rows(client)[0]
    assert (kept["name"], kept["address"], kept["sealed_secret"]) == ("Metrics, renamed", "/elsewhere.db",
                                                                      added["sealed_secret"])
    assert post_form(client, path, path, **{**fields, "secret": "another"}).status_code == 303
    replaced = connection_rows(client)[0]["sealed_secret"]
    assert replaced not in (None, added["sealed_secret"])
    assert "Remove its secret" in get(client, path).text
    assert post_form(client, path, path, **fields, remove_secret="on").status_code == 303
    assert connection_rows(client)[0]["sealed_secret"] is None
    assert "Remove its secret" not in get(client, path).text
    row = get(client, "/connections").one("tr", id=f"c-{added['id']}")
    assert row.one(data_label="Secret").text == "none"


def test_a_refused_connection_says_why_beside_each_field_and_never_echoes_the_secret(client):
    response = post_form(client, "/connections", "/connections", name=" ", kind="sqlite", address="/x.db",
                         headers="no colon here", secret=SECRET)
    assert response.status_code == 400
    html = response.get_data(as_text=True)
    assert SECRET not in html
    tree = parse(html)
    assert tree.one(id="name-error").text == "Fill this in."
    assert tree.one(id="headers-error").text == "Line 1 is not “Name: value”."
    assert tree.one("input", id="name").attrs["aria-invalid"] == "true"
    assert tree.one("input", id="secret").attrs["value"] == ""
    assert connection_rows(client) == []
    add_connection(client, name="Taken")
    taken = post_form(client, "/connections", "/connections", name="Taken", kind="sqlite", address="/y.db",
                      headers="", secret="")
    assert taken.status_code == 400 and parse(taken.get_data(as_text=True)).one(id="name-error").text == \
        "Another connection has this name."


def test_the_reader_s_refusal_of_an_address_is_beside_the_address(client, monkeypatch):
    monkeypatch.setattr(reading, "connection_problem", lambda kind, address, headers: "Give an http:// or https:// URL.")
    response = post_form(client, "/connections", "/connections", name="Web", kind="http_json", address="ftp://x",
                         headers="", secret="")
    assert response.status_code == 400
    assert parse(response.get_data(as_text=True)).one(id="address-error").text == "Give an http:// or https:// URL."


def test_a_connection_a_source_uses_is_not_deleted_and_says_why_and_an_unused_one_is(client, attached):
    used = attached["connection"]["id"]
    path = f"/connections/{used}/delete"
    assert "Delete the connection “Metrics”?" in get(client, path).text
    refused = post_form(client, path, path)
    assert refused.status_code == 409
    assert "1 key result read this connection: remove their sources first" in parse(
        refused.get_data(as_text=True)).one("main").text
    assert len(connection_rows(client)) == 1
    spare = add_connection(client, name="Spare")
    spare_path = f"/connections/{spare['id']}/delete"
    assert post_form(client, spare_path, spare_path).status_code == 303
    assert [c["name"] for c in connection_rows(client)] == ["Metrics"]


def test_a_connection_whose_secret_this_server_cannot_open_needs_its_secret_again(client, app, tmp_path):
    added = add_connection(client, secret=SECRET)
    key_file = tmp_path / "okr.db.key"
    assert key_file.exists()
    key_file.unlink()  # a database restored where its key is not
    row = get(client, "/connections").one("tr", id=f"c-{added['id']}")
    assert row.one(data_label="Secret").text == "needs its secret again"
    assert "needs its secret again" in get(client, f"/connections/{added['id']}/edit").text


# --- the Source section --------------------------------------------------------------------------------------------


def test_the_source_section_attaches_a_key_result_and_says_its_state(client, quarter, metrics):
    edit = get(client, f"/keyresults/{quarter}/edit")
    section = edit.one("section", cls="source-section")
    assert "No connection yet" in section.text
    connection = add_connection(client, address=metrics.address)
    choices = get(client, f"/keyresults/{quarter}/edit").one("select", id="connection_id").find_all("option")
    assert [(option.attrs["value"], option.text) for option in choices] == [
        ("", "Choose a connection"), (connection["id"], "Metrics (SQLite file)")]
    assert save_source(client, quarter, connection["id"], every="360").status_code == 303
    stored = source_of(client, quarter)
    assert (stored["query"], stored["path"], stored["every_minutes"], stored["state"]) == (AS_OF_QUERY, None, 360,
                                                                                          "active")
    tree = get(client, f"/keyresults/{quarter}/edit")
    assert tree.one(id="source-state").text == "Reads its value from Metrics , every 6 hours. Active, not read yet, " \
                                               "next now."
    assert tree.one("textarea", id="query").raw_text() == AS_OF_QUERY
    chosen = [option for option in tree.one("select", id="every_minutes").find_all("option")
              if "selected" in option.attrs]
    assert [option.attrs["value"] for option in chosen] == ["360"]


def test_a_refused_source_says_why_beside_each_field(client, quarter, metrics, monkeypatch):
    connection = add_connection(client, address=metrics.address)
    response = save_source(client, quarter, "", query="  ", every="5")
    assert response.status_code == 400
    tree = parse(response.get_data(as_text=True))
    assert tree.one(id="connection_id-error").text == "Choose a connection."
    assert tree.one(id="query-error").text == "Fill this in."
    assert tree.one(id="every_minutes-error").text == "Choose between every 15 minutes and once a day."
    assert source_of(client, quarter) is None
    monkeypatch.setattr(reading, "source_problem", lambda kind, query, path: {"query": "Only a SELECT is read."})
    bad = save_source(client, quarter, connection["id"], query="DELETE FROM figures")
    assert bad.status_code == 400
    tree = parse(bad.get_data(as_text=True))
    assert tree.one(id="query-error").text == "Only a SELECT is read."
    assert tree.one("textarea", id="query").raw_text() == "DELETE FROM figures"  # what was typed is kept
    assert source_of(client, quarter) is None


def test_test_shows_the_value_and_what_it_read_and_writes_nothing(client, quarter, metrics):
    metrics.set("2026-01-04", 41.5)
    connection = add_connection(client, address=metrics.address)
    before = history_authors(client, quarter)
    response = act(client, quarter, "test", connection_id=connection["id"], query=NOW_QUERY, path="",
                   every_minutes="60")
    assert response.status_code == 200
    result = parse(response.get_data(as_text=True)).one("section", id="test-result")
    assert "It would write 41.5 (nothing was written)." in result.text
    assert result.one("pre", cls="request").raw_text() == NOW_QUERY
    assert result.one("pre", cls="answer").raw_text() == '{"columns": ["value"], "rows": [["41.5"]]}'
    assert source_of(client, quarter) is None and history_authors(client, quarter) == before
    failed = act(client, quarter, "test", connection_id=connection["id"], query="SELECT value FROM nowhere",
                 path="", every_minutes="60")
    assert parse(failed.get_data(as_text=True)).one("section", id="test-result").one("p", cls="error").text == \
        "It read nothing: SQLite: no such table: nowhere."


def test_sync_now_records_a_changed_value_and_says_so(client, clock, attached):
    key_result = attached["key_result"]
    assert said(act(client, key_result, "sync")) == "Read 12 and recorded it as a check-in."
    assert said(act(client, key_result, "sync")) == "Read 12, the value it has now: nothing was recorded."
    assert history_authors(client, key_result) == ["the source “Metrics” · Evidence", "—"]
    clock.now = "2026-01-05T10:30:00Z"
    tree = get(client, f"/keyresults/{key_result}/edit")
    assert re.fullmatch(r"Reads its value from Metrics , every hour\. Active, last read 30 minutes ago, next in "
                        r"(2[0-9]|3[0-9]) minutes\.", tree.one(id="source-state").text)


def test_a_failing_source_says_so_to_editors_and_on_the_key_result_s_page_and_stops_after_20(client, clock, attached,
                                                                                             tmp_path):
    key_result, metrics = attached["key_result"], attached["metrics"]
    act(client, key_result, "sync")
    with closing(sqlite3.connect(metrics.address)) as db:
        db.execute("DROP TABLE figures")
    response = act(client, key_result, "sync")
    assert said(response) == ("It read nothing: SQLite: no such table: figures. The key result keeps its "
                              "value; that is 1 failure in a row.")
    state = parse(response.get_data(as_text=True)).one(id="source-state")
    assert state.text.endswith("Failing since 5 Jan 2026, 10:00 UTC: SQLite: no such table: figures.")
    assert "failing" in state.classes
    page = get(client, f"/keyresults/{key_result}")
    assert page.one(id="source-line").text == ("Updated by the source “Metrics”. Source failing since 5 Jan 2026, "
                                               "10:00 UTC: SQLite: no such table: figures")
    for _ in range(19):
        last = act(client, key_result, "sync")
    assert said(last).endswith("that is 20 failures in a row. It has stopped: Start again once it is fixed.")
    tree = parse(last.get_data(as_text=True))
    assert tree.one(id="source-state").text.endswith(
        "Stopped after 20 failures: SQLite: no such table: figures.")
    assert form_of(tree, "/source/restart").one("button").text == "Start again"
    assert "Source stopped after 20 failures" in get(client, f"/keyresults/{key_result}").one(id="source-line").text
    assert act(client, key_result, "restart").status_code == 303
    assert source_of(client, key_result)["state"] == "active"
    assert get(client, f"/keyresults/{key_result}/edit").find_all("form", action=f"/keyresults/{key_result}/source/"
                                                                                 "restart") == []


def test_fill_back_fills_the_history_weekly_and_a_bad_date_is_refused_beside_it(client, clock, attached):
    key_result, metrics = attached["key_result"], attached["metrics"]
    for day, value in (("2026-01-01", 1), ("2026-01-08", 5), ("2026-01-15", 9), ("2026-01-22", 20)):
        metrics.set(day, value)
    clock.now = "2026-01-25T10:00:00Z"
    bad = act(client, key_result, "fill", **{"from": "2026-01-20", "to": "2026-01-10", "step": "weekly"})
    assert bad.status_code == 400
    assert parse(bad.get_data(as_text=True)).one(id="to-error").text == "Must not be before from."
    filled = act(client, key_result, "fill", **{"from": "", "to": "", "step": "weekly"})
    assert filled.status_code == 200
    assert said(filled) == ("Read 4 days and recorded 4 check-ins (a day whose value had not changed adds none).")
    values = [c["value"] for c in client.get(f"/v1/keyresults/{key_result}/checkins").get_json()["checkins"]]
    assert sorted(values) == ["0.00", "1.00", "20.00", "5.00", "9.00"]
    assert history_authors(client, key_result).count("the source “Metrics” · Evidence") == 4


def test_a_fill_back_that_reads_nothing_says_why_and_writes_nothing(client, clock, attached):
    key_result, metrics = attached["key_result"], attached["metrics"]
    with closing(sqlite3.connect(metrics.address)) as db:
        db.execute("DROP TABLE figures")
    clock.now = "2026-01-25T10:00:00Z"
    failed = act(client, key_result, "fill", **{"from": "", "to": "", "step": "daily"})
    assert said(failed) == "Nothing was filled: SQLite: no such table: figures."
    assert history_authors(client, key_result) == ["—"]


def test_sync_now_after_the_cycle_has_ended_reads_nothing_and_says_why(client, clock, attached):
    clock.now = "2026-04-02T10:00:00Z"
    assert said(act(client, attached["key_result"], "sync")) == "Not read: its cycle has ended."
    assert history_authors(client, attached["key_result"]) == ["—"]


def test_a_source_changed_while_it_was_read_records_nothing_and_says_so(client, attached, metrics, monkeypatch):
    from okr.sources import syncing
    key_result = attached["key_result"]
    other = add_connection(client, name="Other", address=metrics.address)
    real_read = syncing.read_now

    def read_while_someone_changes_it(config, row, *read):
        found = real_read(config, row, *read)
        with client.application.app_context(), transaction() as db:
            sources.put(db, row["key_result_seq"], other["seq"], NOW_QUERY, None, 60)
        return found

    monkeypatch.setattr(syncing, "read_now", read_while_someone_changes_it)
    response = act(client, key_result, "sync")
    assert response.status_code == 409
    assert said(response) == ("Nothing was recorded: the key result's source changed while it was read: nothing "
                              "was written; run it again.")
    assert history_authors(client, key_result) == ["—"]


def test_fill_back_is_offered_only_for_a_query_that_takes_as_of(client, quarter, metrics):
    connection = add_connection(client, address=metrics.address)
    save_source(client, quarter, connection["id"], query=NOW_QUERY)
    tree = get(client, f"/keyresults/{quarter}/edit")
    assert tree.find_all("form", action=f"/keyresults/{quarter}/source/fill") == []
    save_source(client, quarter, connection["id"], query=AS_OF_QUERY)
    assert form_of(get(client, f"/keyresults/{quarter}/edit"), "/source/fill").one("button").text == "Fill back"


def test_remove_asks_then_detaches_and_the_values_written_stay(client, attached):
    key_result = attached["key_result"]
    act(client, key_result, "sync")
    path = f"/keyresults/{key_result}/source/delete"
    assert "The values it wrote, and their evidence, stay in the history." in get(client, path).text
    assert post_form(client, path, path).status_code == 303
    assert source_of(client, key_result) is None
    assert history_authors(client, key_result)[0] == "the source “Metrics” · Evidence"
    assert "source-line" not in client.get(f"/keyresults/{key_result}", headers=BROWSER).get_data(as_text=True)


# --- the evidence page -------------------------------------------------------------------------------------------


def evidence_link(client, key_result_id):
    tree = get(client, f"/keyresults/{key_result_id}")
    return tree.one("table", cls="history").one("a", href=re.compile(r"/checkins/.*/evidence")).attrs["href"]


def test_the_evidence_page_shows_what_a_value_was_read_from_and_recompute_tells_a_changed_answer(client, clock,
                                                                                                 attached):
    import hashlib
    key_result, metrics = attached["key_result"], attached["metrics"]
    act(client, key_result, "sync")
    checkin = client.get(f"/v1/keyresults/{key_result}/checkins").get_json()["checkins"][-1]
    path = f"/checkins/{checkin['id']}/evidence"
    tree = get(client, path)
    facts = dict(zip((dt.text for dt in tree.find_all("dt")), (dd.text for dd in tree.find_all("dd"))))
    answer = client.get(f"/checkins/{checkin['id']}/evidence/answer", headers=BROWSER)
    assert answer.headers["Content-Disposition"] == f'attachment; filename="evidence-{checkin["id"]}.bin"'
    assert facts == {"The request as run": f"{AS_OF_QUERY} -- :as_of = 2026-01-05T10:00:00Z", "As of": "5 Jan 2026, 10:00 UTC",
                     "Read at": "5 Jan 2026, 10:00 UTC", "SHA-256 of the answer": hashlib.sha256(answer.data).hexdigest(),
                     "Size of the answer": f"{len(answer.data)} bytes"}
    assert [a.attrs["href"] for a in tree.find_all("a") if "download" in a.attrs] == [
        f"/checkins/{checkin['id']}/evidence/answer"]
    same = post_form(client, f"/checkins/{checkin['id']}/recompute", path)
    assert parse(same.get_data(as_text=True)).one(id="recomputed").text == \
        "The answer still matches: the same SHA-256, and the same value, 12."
    metrics.set("2026-01-05", 13)
    changed = parse(post_form(client, f"/checkins/{checkin['id']}/recompute", path).get_data(as_text=True))
    assert changed.one(id="recomputed").text.startswith("The answer has changed: its SHA-256 is now ")
    assert changed.one(id="recomputed").text.endswith("and the value would now be 13, not 12.")
    assert len(client.get(f"/v1/keyresults/{key_result}/checkins").get_json()["checkins"]) == 2  # nothing written


def test_a_person_s_check_in_has_no_evidence_page(client, quarter):
    checkin = client.get(f"/v1/keyresults/{quarter}/checkins").get_json()["checkins"][0]
    assert client.get(f"/checkins/{checkin['id']}/evidence", headers=BROWSER).status_code == 404


# --- the chart ---------------------------------------------------------------------------------------------------


def test_the_chart_draws_a_source_s_points_as_diamonds_with_a_legend_and_says_so_in_its_table():
    points = [(date(2026, 1, 1), "0"), (date(2026, 1, 5), "12"), (date(2026, 1, 9), "20")]
    drawn = parse(str(charts.value_chart(points, date(2026, 1, 1), date(2026, 3, 31), "positive", "100",
                                         sourced={date(2026, 1, 5)})))
    svg = drawn.one("svg", cls="chart")
    assert len(svg.find_all("circle", cls="dot")) == 2 and len(svg.find_all("path", cls="source")) == 1
    assert svg.one("path", cls="source").one("title").text == "5 Jan 2026: 12, by the source"
    assert "1 written by its source (diamonds)" in svg.attrs["aria-label"]
    assert [li.text for li in drawn.one("ul", cls="chart-marks").find_all("li")] == [
        "a person's check-in", "written by its source"]
    rows = [[cell.text for cell in row.find_all()] for row in drawn.one("tbody").find_all("tr")]
    assert [row[-1] for row in rows] == ["a person", "its source", "a person"]
    plain = parse(str(charts.value_chart(points, date(2026, 1, 1), date(2026, 3, 31), "positive", "100")))
    assert plain.find_all("path", cls="source") == [] and plain.find_all("ul", cls="chart-marks") == []


def test_the_key_result_s_page_draws_the_source_s_points_apart(client, attached):
    act(client, attached["key_result"], "sync")
    tree = get(client, f"/keyresults/{attached['key_result']}")
    assert len(tree.one("svg", cls="chart").find_all("path", cls="source")) == 1
    assert tree.one("ul", cls="chart-marks")


# --- the activity feed -------------------------------------------------------------------------------------------


def test_the_activity_page_names_the_source_and_words_its_failure(client, attached):
    key_result, metrics = attached["key_result"], attached["metrics"]
    act(client, key_result, "sync")
    with closing(sqlite3.connect(metrics.address)) as db:
        db.execute("DROP TABLE figures")
    act(client, key_result, "sync")
    items = [item.text for item in get(client, "/activity").one("ol", cls="activity").find_all("li", recursive=None)
             if item.parent.tag == "ol"]
    assert items[:2] == [
        "The source “Metrics” failed: SQLite: no such table: figures (1 failure in a row); key result "
        "“Customers” keeps its value, 12 just now",
        "The source “Metrics” checked in 12 (confidence 70%) on key result “Customers” just now"]


# --- who may -----------------------------------------------------------------------------------------------------


@pytest.fixture
def people(app, client, attached, fast_hashing):
    """Maya (an admin), Ed (an editor) and Vi (a viewer), once the source has written 12 and failed once."""
    key_result, metrics = attached["key_result"], attached["metrics"]
    act(client, key_result, "sync")
    with closing(sqlite3.connect(metrics.address)) as db:
        db.execute("DROP TABLE figures")
    act(client, key_result, "sync")
    user_with_password(app, PASSWORD)
    user_with_password(app, PASSWORD, "Ed Itor", "ed@example.com", "editor")
    user_with_password(app, PASSWORD, "Vi Ewer", "vi@example.com", "viewer")
    return attached


def signed_in(app, email):
    client = app.test_client()
    assert sign_in(client, email).status_code == 303
    return client


def test_a_viewer_sees_that_a_source_updates_it_and_why_it_fails_but_never_a_query(app, people):
    key_result = people["key_result"]
    viewer = signed_in(app, "vi@example.com")
    page = viewer.get(f"/keyresults/{key_result}", headers=BROWSER).get_data(as_text=True)
    tree = parse(page)
    assert tree.one(id="source-line").text.startswith("Updated by the source “Metrics”. Source failing since")
    assert AS_OF_QUERY not in page and "/evidence" not in page
    assert history_authors(viewer, key_result)[0] == "the source “Metrics”"
    checkin = re.search(r'/checkins/([0-9a-f-]{36})/evidence', signed_in(app, "ed@example.com").get(
        f"/keyresults/{key_result}", headers=BROWSER).get_data(as_text=True)).group(1)
    for path in (f"/checkins/{checkin}/evidence", f"/checkins/{checkin}/evidence/answer"):
        refused = viewer.get(path, headers=BROWSER)
        assert refused.status_code == 403
        assert "Only an editor or an admin may work with a key result's source (its query, its evidence); you are " \
               "a viewer." in parse(refused.get_data(as_text=True)).one("main").text
    token = CSRF.search(page).group(1)
    for action in ("sync", "test", "fill", "restart"):
        assert viewer.post(f"/keyresults/{key_result}/source/{action}", data={"csrf_token": token},
                           headers=BROWSER).status_code == 403
    assert viewer.get("/connections", headers=BROWSER).status_code == 403
    assert source_of(viewer, key_result)["failures"] == 1


def test_an_editor_attaches_and_syncs_a_source_but_may_not_manage_connections(app, people):
    key_result = people["key_result"]
    editor = signed_in(app, "ed@example.com")
    assert "/connections" not in editor.get("/", headers=BROWSER).get_data(as_text=True)
    refused = editor.get("/connections", headers=BROWSER)
    assert refused.status_code == 403 and "Only an admin may manage the connections of metric sources; you are an " \
        "editor." in parse(refused.get_data(as_text=True)).one("main").text
    token = CSRF.search(editor.get("/", headers=BROWSER).get_data(as_text=True)).group(1)
    assert editor.post("/connections", data={"csrf_token": token, "name": "Mine", "kind": "sqlite",
                                             "address": "/x.db"}, headers=BROWSER).status_code == 403
    connection = people["connection"]["id"]
    assert editor.get(f"/connections/{connection}/edit", headers=BROWSER).status_code == 403
    edit = get(editor, f"/keyresults/{key_result}/edit")
    assert "Choose a connection" in edit.one("select", id="connection_id").text
    assert "an admin adds them" not in edit.text
    assert save_source(editor, key_result, connection, query=NOW_QUERY).status_code == 303
    assert source_of(editor, key_result)["query"] == NOW_QUERY


def test_an_admin_sees_the_connections_link(app, people):
    admin = signed_in(app, "maya@example.com")
    assert parse(admin.get("/", headers=BROWSER).get_data(as_text=True)).one("a", href="/connections")


@pytest.mark.parametrize("path", [
    "/connections", "/connections/{connection}/edit", "/connections/{connection}/delete", "/keyresults/{kr}/source",
    "/keyresults/{kr}/source/test", "/keyresults/{kr}/source/sync", "/keyresults/{kr}/source/fill",
    "/keyresults/{kr}/source/restart", "/keyresults/{kr}/source/delete", "/checkins/{checkin}/recompute"])
def test_every_form_is_refused_without_its_csrf_token(client, attached, path):
    act(client, attached["key_result"], "sync")
    checkin = client.get(f"/v1/keyresults/{attached['key_result']}/checkins").get_json()["checkins"][-1]["id"]
    before = (connection_rows(client), source_of(client, attached["key_result"]))
    target = path.format(connection=attached["connection"]["id"], kr=attached["key_result"], checkin=checkin)
    response = client.post(target, data={"name": "Other", "kind": "sqlite", "address": "/y.db", "query": NOW_QUERY,
                                         "connection_id": attached["connection"]["id"], "every_minutes": "60"},
                           headers=BROWSER)
    assert response.status_code == 400
    assert "This form has expired or did not come from this page." in response.get_data(as_text=True)
    assert (connection_rows(client), source_of(client, attached["key_result"])) == before
