"""The check-in form of /keyresults/<id>: POST records a check-in through the API's own code, 303 back to
the page; bad input is the page again (400) with the message beside the field and the values typed kept;
a missing or foreign CSRF token is refused. Nothing is recorded unless the check-in succeeds.
"""
import re
import uuid

import pytest

from helpers import fetch_key_result
from html_tree import BROWSER, parse

CSRF_WORDS = "expired or did not come from this page"

def html_of(response, status):
    body = response.get_data(as_text=True)
    assert response.status_code == status, (response.status_code, body[:3000])
    assert response.mimetype == "text/html", (response.mimetype, body[:500])
    return parse(body)


# --- data ------------------------------------------------------------------------------------------


@pytest.fixture
def clock_after_making():
    """The key result (100 of 500, confidence 0.8) is made on 2026-01-01; the tests check in from the 2nd on."""
    return "2026-01-02T00:00:00Z"


def checkins(client, key_result_id):
    response = client.get(f"/v1/keyresults/{key_result_id}/checkins", query_string={"page_size": 1000})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["checkins"]


def form_page(client, key_result_id):
    return html_of(client.get(f"/keyresults/{key_result_id}", headers=BROWSER), 200)


def csrf_token(client, key_result_id):
    token = form_page(client, key_result_id).one("form", cls="checkin").one("input", name="csrf_token")
    assert token.attrs.get("value")
    return token.attrs["value"]


def post(client, key_result_id, token=None, **fields):
    data = dict(fields)
    if token is not None:
        data["csrf_token"] = token
    return client.post(f"/keyresults/{key_result_id}", data=data, headers=BROWSER)


def history_rows(doc):
    table = doc.one("table", cls="history")
    return [tr for tr in table.find_all("tr") if tr.find_all("td")]


def plain(text):
    return re.sub(r"(\d)\.0+\b", r"\1", text)


# --- success ---------------------------------------------------------------------------------------


def test_check_in_is_recorded_and_redirects_back_to_the_page(client, key_result, clock):
    token = csrf_token(client, key_result["id"])
    clock.now = "2026-01-03T12:00:00Z"
    response = post(client, key_result["id"], token, value="120", confidence="0.9", comment="A good week")
    assert response.status_code == 303, response.get_data(as_text=True)[:2000]
    assert response.headers["Location"].split("?")[0].endswith(f"/keyresults/{key_result['id']}")

    recorded = checkins(client, key_result["id"])
    assert len(recorded) == 2
    assert {k: recorded[-1][k] for k in ("value", "confidence", "comment", "author_id", "created_at")} == {
        "value": "120.00", "confidence": "0.90", "comment": "A good week", "author_id": None,
        "created_at": "2026-01-03T12:00:00Z"}
    now = fetch_key_result(client, key_result["id"])
    assert (now["current_value"], now["confidence"]) == ("120.00", "0.90")

    doc = form_page(client, key_result["id"])
    first = history_rows(doc)[0]
    assert plain(first.find_all("td")[1].text) == "120" and "A good week" in first.text
    assert "120 of 500" in plain(doc.text)
    # The field shows the confidence as the page says it, and takes it back so.
    assert doc.one("form", cls="checkin").one("input", name="confidence").attrs["value"] == "90%"


def test_check_in_without_confidence_keeps_the_present_one(client, key_result):
    token = csrf_token(client, key_result["id"])
    response = post(client, key_result["id"], token, value="130", confidence="", comment="")
    assert response.status_code == 303, response.get_data(as_text=True)[:2000]
    last = checkins(client, key_result["id"])[-1]
    assert (last["value"], last["confidence"], last["comment"]) == ("130.00", "0.80", None)


# --- bad input -------------------------------------------------------------------------------------


BAD_INPUT = [
    ("value", {"value": "lots", "confidence": "0.7", "comment": "kept words"}),
    ("value", {"value": "", "confidence": "0.7", "comment": "kept words"}),
    ("value", {"value": "1.1234567", "confidence": "0.7", "comment": "kept words"}),
    ("confidence", {"value": "150", "confidence": "1.5", "comment": "kept words"}),
    ("confidence", {"value": "150", "confidence": "-0.1", "comment": "kept words"}),
    ("confidence", {"value": "150", "confidence": "high", "comment": "kept words"}),
    ("comment", {"value": "150", "confidence": "0.7", "comment": "x" * 10_001}),
]


@pytest.mark.parametrize("field, fields", BAD_INPUT,
                         ids=["word", "empty value", "seven decimals", "confidence 1.5", "confidence below 0",
                              "confidence word", "comment 10001"])
def test_bad_input_shows_the_message_by_the_field_keeps_the_values_and_records_nothing(
        client, key_result, field, fields):
    token = csrf_token(client, key_result["id"])
    response = post(client, key_result["id"], token, **fields)
    doc = html_of(response, 400)

    error = doc.one("p", cls="error", id=f"{field}-error")
    assert error.text, "the error names no problem"
    form = doc.one("form", cls="checkin")
    controls = {"value": form.one("input", name="value"), "confidence": form.one("input", name="confidence"),
                "comment": form.one("textarea", name="comment")}
    bad = controls[field]
    assert bad.attrs.get("aria-invalid") == "true"
    assert f"{field}-error" in (bad.attrs.get("aria-describedby") or "").split()
    for name, control in controls.items():
        if name != field:
            assert control.attrs.get("aria-invalid") in (None, "false"), name
    # What was typed is kept (the comment exactly, its newlines and length included).
    assert controls["value"].attrs.get("value", "") == fields["value"]
    assert controls["confidence"].attrs.get("value", "") == fields["confidence"]
    assert controls["comment"].raw_text().strip("\n") == fields["comment"]

    assert len(checkins(client, key_result["id"])) == 1, "a refused check-in was recorded"
    assert fetch_key_result(client, key_result["id"])["current_value"] == "100.00"


def test_a_comment_of_exactly_10000_characters_is_taken(client, key_result):
    token = csrf_token(client, key_result["id"])
    response = post(client, key_result["id"], token, value="150", confidence="0.7", comment="y" * 10_000)
    assert response.status_code == 303
    assert checkins(client, key_result["id"])[-1]["comment"] == "y" * 10_000


def test_bad_input_page_keeps_a_working_form(client, key_result):
    token = csrf_token(client, key_result["id"])
    doc = html_of(post(client, key_result["id"], token, value="lots", confidence="0.7", comment=""), 400)
    again = doc.one("form", cls="checkin").one("input", name="csrf_token").attrs["value"]
    assert post(client, key_result["id"], again, value="150", confidence="0.7").status_code == 303
    assert len(checkins(client, key_result["id"])) == 2


# --- CSRF ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "", "not-the-token", "A" * 43], ids=["missing", "empty", "wrong", "long"])
def test_check_in_without_the_pages_csrf_token_is_refused(client, key_result, token):
    csrf_token(client, key_result["id"])  # the session has its own token: it is not the one sent
    doc = html_of(post(client, key_result["id"], token, value="150", confidence="0.7"), 400)
    assert CSRF_WORDS in doc.text
    assert len(checkins(client, key_result["id"])) == 1
    assert fetch_key_result(client, key_result["id"])["current_value"] == "100.00"


def test_check_in_with_no_session_at_all_is_refused(client, key_result):
    doc = html_of(post(client, key_result["id"], "anything", value="150"), 400)
    assert CSRF_WORDS in doc.text
    assert len(checkins(client, key_result["id"])) == 1


def test_check_in_with_another_browsers_token_is_refused(app, client, key_result):
    other = app.test_client()
    foreign = csrf_token(other, key_result["id"])
    csrf_token(client, key_result["id"])
    doc = html_of(post(client, key_result["id"], foreign, value="150", confidence="0.7"), 400)
    assert CSRF_WORDS in doc.text
    assert len(checkins(client, key_result["id"])) == 1


def test_the_token_stays_valid_for_the_session(client, key_result):
    token = csrf_token(client, key_result["id"])
    for value in ("110", "120"):
        assert post(client, key_result["id"], token, value=value, confidence="0.7").status_code == 303
    assert [c["value"] for c in checkins(client, key_result["id"])] == ["100.00", "110.00", "120.00"]


# --- unknown key result ----------------------------------------------------------------------------


@pytest.mark.parametrize("key_result_id", [str(uuid.uuid4()), "not-a-key-result"])
def test_check_in_on_an_unknown_key_result_is_a_404_page(client, key_result, key_result_id):
    token = csrf_token(client, key_result["id"])
    html_of(post(client, key_result_id, token, value="150", confidence="0.7"), 404)
    assert len(checkins(client, key_result["id"])) == 1


# --- what people type, and what they read back --------------------------------------------------------


@pytest.mark.parametrize("typed", ["80 %", "80%", "0.8", " .8 ", "80.0 %"])
def test_confidence_is_taken_as_the_page_shows_it_or_as_a_fraction(client, key_result, typed):
    token = csrf_token(client, key_result["id"])
    assert post(client, key_result["id"], token, value="150", confidence=typed).status_code == 303
    assert checkins(client, key_result["id"])[-1]["confidence"] == "0.80"


@pytest.mark.parametrize("field, fields, words", [
    ("value", {"value": "lots", "confidence": "0.7"}, "Write a number such as 60000, 60,000, 60k or 1.5M."),
    ("value", {"value": "", "confidence": "0.7"}, "Write a number such as 60000, 60,000, 60k or 1.5M."),
    ("value", {"value": "1.1234567", "confidence": "0.7"}, "Use at most 6 digits after the decimal point."),
    ("confidence", {"value": "150", "confidence": "high"}, "Enter a number such as 0.8 or 80 %."),
    ("confidence", {"value": "150", "confidence": "80"}, "Enter a number such as 0.8 or 80 %."),
    ("confidence", {"value": "150", "confidence": "120 %"}, "Enter a number such as 0.8 or 80 %."),
    ("confidence", {"value": "150", "confidence": "1e-999999999"}, "Enter a number such as 0.8 or 80 %."),
    ("comment", {"value": "150", "confidence": "0.7", "comment": "x" * 10_001},
     "Shorten this to at most 10,000 characters."),
], ids=["word", "empty", "seven decimals", "confidence word", "80 without %", "over 100 %", "exponent",
        "long comment"])
def test_a_refusal_is_worded_for_people_not_in_the_apis_words(client, key_result, field, fields, words):
    token = csrf_token(client, key_result["id"])
    doc = html_of(post(client, key_result["id"], token, **{"comment": "", **fields}), 400)
    said = doc.one("p", cls="error", id=f"{field}-error").text.strip()
    assert said == words
    assert "Not a valid" not in doc.text and "send a string" not in doc.text
