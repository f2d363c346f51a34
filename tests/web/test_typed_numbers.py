"""Numbers as people type and read them on the pages: check-in and edit forms take "60,000", "60k" and
"$60,000" (the key result's unit), refuse anything else beside the field, show figures with separators and
the unit; a milestone's check-in is a Done box; a far jump is confirmed before it is saved."""
import re
import sqlite3
from contextlib import closing

import pytest

import people_page
from helpers import fetch_key_result, make_key_result
from html_tree import BROWSER, parse

DOLLARS = "Write a number such as 60000, 60,000, 60k or $60,000."


def sql(app, statement, *params):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        return db.execute(statement, params).fetchall()


def set_unit(client, key_result, unit, position):
    response = client.patch(f"/v1/keyresults/{key_result['id']}", json={"unit": unit, "unit_position": position},
                            headers={"Content-Type": "application/merge-patch+json"})
    assert response.status_code == 200, response.get_json()


def page(client, path, status=200):
    response = client.get(path, headers=BROWSER)
    assert response.status_code == status, response.get_data(as_text=True)[:2000]
    return parse(response.get_data(as_text=True))


def token(client, path):
    return re.search(r'name="csrf_token" value="([^"]+)"', client.get(path, headers=BROWSER).get_data(
        as_text=True)).group(1)


def check_in(client, key_result, **fields):
    path = f"/keyresults/{key_result['id']}"
    return client.post(path, data={"csrf_token": token(client, path), "confidence": "", "comment": "", **fields},
                       headers=BROWSER)


def values(app, key_result):
    return [row[0] for row in sql(app, "SELECT value FROM checkins WHERE key_result_seq = "
                                       "(SELECT seq FROM key_results WHERE id = ?) ORDER BY seq", key_result["id"])]


@pytest.fixture
def dollars(client, objective):
    """Revenue: $42,000 of $60,000, from $10,000."""
    kr = make_key_result(client, objective["id"], "Revenue", current_value="10000", target_value_min="60000")
    set_unit(client, kr, "$", "before")
    client.post(f"/v1/keyresults/{kr['id']}/checkins", json={"value": "42000"})
    return kr


# --- typing numbers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("typed, stored", [
    ("$60,000", "60000.00"), ("60k", "60000.00"), ("60 000", "60000.00"), ("$ 0.5M", "500000.00"),
    ("59999.5", "59999.50"), ("-$5", "-5.00"), ("0.06M", "60000.00"),
])
def test_a_check_in_takes_numbers_as_people_write_them(app, client, dollars, typed, stored):
    response = check_in(client, dollars, value=typed)
    assert response.status_code == 303, response.get_data(as_text=True)[:2000]
    assert values(app, dollars)[-1] == stored
    assert fetch_key_result(client, dollars["id"])["current_value"] == stored


@pytest.mark.parametrize("typed", ["sixty", "60,00", "€60,000", "60 k$", "1e5", "", "1" * 41])
def test_a_refused_value_shows_what_is_taken_beside_the_field(app, client, dollars, typed):
    before = values(app, dollars)
    response = check_in(client, dollars, value=typed, comment="kept")
    assert response.status_code == 400
    doc = parse(response.get_data(as_text=True))
    form = doc.one("form", cls="checkin")
    field = form.one("input", name="value")
    assert field.attrs["value"] == typed and field.attrs.get("aria-invalid") == "true"
    error = form.one("p", cls="error")
    assert error.text == DOLLARS and error.attrs["id"] in field.attrs["aria-describedby"].split()
    assert form.one("textarea", name="comment").text == "kept"
    assert values(app, dollars) == before


def test_the_limits_still_apply_after_the_expansion(app, client, dollars):
    before = values(app, dollars)
    for typed, sentence in (("1.0000000001k", "Use at most 6 digits after the decimal point."),
                            ("2,000,000B", "Enter a number below 1,000,000,000,000,000.")):
        response = check_in(client, dollars, value=typed)
        assert response.status_code == 400
        assert parse(response.get_data(as_text=True)).one("form", cls="checkin").one("p", cls="error").text == sentence
    assert values(app, dollars) == before


def test_the_edit_form_sets_the_unit_and_reads_targets_with_it(app, client, key_result):
    path = f"/keyresults/{key_result['id']}/edit"
    form = page(client, path).one("form", cls="key-result-form")
    fields = {i.attrs["name"]: i.attrs.get("value", "") for i in form.find_all("input") if "name" in i.attrs}
    assert fields["unit"] == ""
    response = client.post(path, data={**fields, "type": "positive", "owner_id": "", "unit": " $ ",
                                       "unit_position": "before", "target_value_min": "$1.5M",
                                       "current_value": "250k", "confidence": "80 %"}, headers=BROWSER)
    assert response.status_code == 303, response.get_data(as_text=True)[:3000]
    stored = client.patch(f"/v1/keyresults/{key_result['id']}", json={},
                          headers={"Content-Type": "application/merge-patch+json"}).get_json()
    assert (stored["unit"], stored["unit_position"], stored["target_value_min"], stored["current_value"]) == (
        "$", "before", "1500000.00", "250000.00")
    shown = page(client, path).one("form", cls="key-result-form")
    assert shown.one("input", name="unit").attrs["value"] == "$"
    assert "selected" in shown.one("option", value="before").attrs


def test_the_edit_form_refuses_a_bad_unit_and_a_bad_target_beside_each(app, client, key_result):
    path = f"/keyresults/{key_result['id']}/edit"
    form = page(client, path).one("form", cls="key-result-form")
    fields = {i.attrs["name"]: i.attrs.get("value", "") for i in form.find_all("input") if "name" in i.attrs}
    response = client.post(path, data={**fields, "type": "positive", "owner_id": "", "unit": "far too long a unit",
                                       "unit_position": "after", "target_value_min": "lots"}, headers=BROWSER)
    assert response.status_code == 400
    doc = parse(response.get_data(as_text=True))
    assert doc.one("span", id="unit-error").text == "Shorten this to at most 12 characters."
    assert doc.one("span", id="target_value_min-error").text == "Write a number such as 60000, 60,000, 60k or 1.5M."
    assert fetch_key_result(client, key_result["id"])["target_value_min"] == "500.00"


def test_a_new_key_result_takes_its_unit_and_typed_numbers(app, client, objective):
    path = f"/keyresults/new?objective_id={objective['id']}"
    response = client.post(path, data={"csrf_token": token(client, path), "name": "Latency", "type": "negative",
                                       "target_value_min": "250ms", "target_value_max": "", "current_value": "1,200 ms",
                                       "confidence": "", "owner_id": "", "unit": "ms", "unit_position": "after"},
                           headers=BROWSER)
    assert response.status_code == 303, response.get_data(as_text=True)[:3000]
    assert sql(app, "SELECT unit, unit_position, target_value_min, current_value FROM key_results WHERE name = ?",
               "Latency") == [("ms", "after", "250.00", "1200.00")]


# --- figures as people read them ------------------------------------------------------------------------


def test_pages_show_figures_with_separators_and_the_unit(client, cycle, dollars):
    doc = page(client, f"/keyresults/{dollars['id']}")
    assert "$42,000 of $60,000 (from $10,000)" in doc.one("p", cls="kr").text
    cells = [row.find_all("td")[1].text for row in doc.one("table", cls="history").find_all("tr")[1:]]
    assert cells == ["$42,000", "$10,000"]
    assert "$42,000 of $60,000 (from $10,000)" in page(client, f"/cycles/{cycle['id']}").text
    assert "$60,000" in doc.one("svg", cls="chart").text  # the target's label


def test_a_key_result_without_a_unit_shows_separators_only(client, objective):
    kr = make_key_result(client, objective["id"], "Users", current_value="1250", target_value_min="20000.50")
    assert "1,250 of 20,000.5 (from 1,250)" in page(client, f"/keyresults/{kr['id']}").one("p", cls="kr").text


# --- a milestone's Done box -----------------------------------------------------------------------------


def test_a_milestone_is_checked_in_with_a_done_box(app, client, objective):
    kr = make_key_result(client, objective["id"], "Ship it", type="milestone", target_value_min=None)
    form = page(client, f"/keyresults/{kr['id']}").one("form", cls="checkin")
    assert form.find_all("input", name="value") == []
    box = form.one("input", name="done")
    assert box.attrs["type"] == "checkbox" and form.find_all("label", **{"for": box.attrs["id"]})
    assert "checked" not in box.attrs  # not done yet
    assert check_in(client, kr, done="1").status_code == 303
    assert fetch_key_result(client, kr["id"])["current_value"] == "1.00"
    assert "checked" in page(client, f"/keyresults/{kr['id']}").one("input", name="done").attrs  # done now
    assert check_in(client, kr).status_code == 303  # left unticked: not done
    assert values(app, kr)[-2:] == ["1.00", "0.00"]
    assert check_in(client, kr, value="7").status_code == 303  # a typed value means nothing to a milestone
    assert values(app, kr)[-1] == "0.00"


# --- the confirm step -----------------------------------------------------------------------------------


def test_a_far_jump_asks_to_be_confirmed_then_saves(app, client, dollars):
    before = values(app, dollars)
    # The span is $50,000 (from $10,000 to $60,000): ten of it is $500,000.
    assert check_in(client, dollars, value="$540,000").status_code == 303  # $498,000 away: saved at once
    response = check_in(client, dollars, value="$6M", comment="a big deal")
    assert response.status_code == 200
    doc = parse(response.get_data(as_text=True))
    form = doc.one("form", cls="checkin")
    warning = form.one("div", cls="confirm")
    assert "$6,000,000" in warning.text and "Nothing was saved" in warning.text
    hidden = {i.attrs["name"]: i.attrs.get("value") for i in form.find_all("input") if i.attrs.get("type") == "hidden"}
    assert hidden["confirmed"] == "6000000.00" and hidden["csrf_token"]
    assert form.one("input", name="value").attrs["value"] == "$6M"
    assert form.one("textarea", name="comment").text == "a big deal"
    assert form.one("button").text == "Save anyway"
    assert values(app, dollars) == [*before, "540000.00"]
    response = client.post(f"/keyresults/{dollars['id']}", data={**hidden, "value": "$6M", "confidence": "",
                                                                  "comment": "a big deal"}, headers=BROWSER)
    assert response.status_code == 303
    assert values(app, dollars) == [*before, "540000.00", "6000000.00"]


def test_confirming_one_value_does_not_save_another(app, client, dollars):
    before = values(app, dollars)
    path = f"/keyresults/{dollars['id']}"
    data = {"csrf_token": token(client, path), "confidence": "", "comment": "", "confirmed": "6000000.00"}
    response = client.post(path, data={**data, "value": "$9M"}, headers=BROWSER)
    assert response.status_code == 200 and "confirm" in parse(response.get_data(as_text=True)).one(
        "form", cls="checkin").one("div", cls="confirm").classes
    for forged in ("", "NaN", "sNaN", "x"):
        assert client.post(path, data={**data, "confirmed": forged, "value": "$9M"}, headers=BROWSER).status_code == 200
    assert values(app, dollars) == before


def test_a_key_result_without_a_span_never_asks(app, client, objective):
    baseline = make_key_result(client, objective["id"], "Measure", type="baseline", target_value_min=None)
    assert check_in(client, baseline, value="1B").status_code == 303
    flat = make_key_result(client, objective["id"], "Stay", current_value="5", target_value_min="5")
    assert check_in(client, flat, value="1B").status_code == 303


# --- Your week -------------------------------------------------------------------------------------------


@pytest.fixture
def eds_week(app, client, objective):
    """Ed owns Revenue ($, from $10,000 to $60,000) and Launch (a milestone) in a cycle without dates (current)."""
    revenue = make_key_result(client, objective["id"], "Revenue", current_value="10000", target_value_min="60000")
    set_unit(client, revenue, "$", "before")
    launch = make_key_result(client, objective["id"], "Launch", type="milestone", target_value_min=None)
    ed = people_page.make_ed(app)
    sql(app, "UPDATE key_results SET owner_id = ?", ed["id"])
    assert people_page.sign_in(client, "ed@example.com").status_code == 303
    return {"revenue": revenue, "launch": launch}


def week_form(doc, key_result):
    return doc.one("li", id=f"kr-{key_result['id']}").one("form")


def test_your_week_takes_typed_numbers_a_done_box_and_confirms_a_far_jump(app, client, eds_week):
    doc = page(client, "/")
    revenue, launch = eds_week["revenue"], eds_week["launch"]
    assert "$10,000 of $60,000" in doc.one("li", id=f"kr-{revenue['id']}").text
    fields = {i.attrs["name"]: i.attrs.get("value", "") for i in week_form(doc, revenue).find_all("input")}
    assert client.post(f"/keyresults/{revenue['id']}", data={**fields, "value": "$60,000"},
                       headers=BROWSER).headers["Location"] == "/"
    launch_form = week_form(doc, launch)
    assert launch_form.find_all("input", name="value") == [] and launch_form.one("input", name="done")
    fields = {i.attrs["name"]: i.attrs.get("value", "") for i in launch_form.find_all("input")
              if i.attrs["name"] != "done"}
    assert client.post(f"/keyresults/{launch['id']}", data={**fields, "done": "1"}, headers=BROWSER).status_code == 303
    assert values(app, launch)[-1] == "1.00" and values(app, revenue)[-1] == "60000.00"
    assert "checked" in week_form(page(client, "/"), launch).one("input", name="done").attrs
    response = client.post(f"/keyresults/{revenue['id']}", data={**{k: v for k, v in fields.items() if k != "value"},
                                                                  "value": "6M"}, headers=BROWSER)
    assert response.status_code == 200
    doc = parse(response.get_data(as_text=True))
    form = week_form(doc, revenue)
    assert "$6,000,000" in form.one("div", cls="confirm").text and form.one("button").text == "Save anyway"
    assert form.one("input", name="value").attrs["value"] == "6M"
    assert week_form(doc, launch).find_all("div", cls="confirm") == []
    hidden = {i.attrs["name"]: i.attrs.get("value", "") for i in form.find_all("input")}
    assert client.post(f"/keyresults/{revenue['id']}", data=hidden, headers=BROWSER).status_code == 303
    assert values(app, revenue)[-1] == "6000000.00"


def test_the_change_history_shows_a_key_results_figures_with_its_unit(client, dollars):
    response = client.patch(f"/v1/keyresults/{dollars['id']}", json={"target_value_min": "120000"},
                            headers={"Content-Type": "application/merge-patch+json"})
    assert response.status_code == 200
    history = page(client, f"/keyresults/{dollars['id']}").text
    assert "target $60,000 → $120,000" in history
    # A check-in's event does not carry the unit: its key result's present one is shown.
    assert "checked in $42,000 (confidence 50%)" in history
    assert "$42,000 (confidence 50%)" in page(client, "/activity").text
