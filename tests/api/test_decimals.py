"""Decimals: exact, canonical, bounded; through the key result API and okr.rules.fields directly."""
import json
from decimal import Decimal

import pytest
from marshmallow import ValidationError

from helpers import assert_error
from okr.rules.fields import canonical_decimal

DECIMAL_FIELDS = ("confidence", "current_value", "target_value_min", "target_value_max")
VALUE_FIELDS = ("current_value", "target_value_min", "target_value_max")
BIGGEST = "999999999999999.999999"


def body_with(field, value):
    """A valid key result body in which field carries value and the type allows it."""
    body = {"name": "KR", "type": "baseline"}
    if field == "target_value_min":
        body["type"] = "positive"
    elif field == "target_value_max":
        body.update(type="range", target_value_min="-" + BIGGEST)
    body[field] = value
    return body


def post(client, objective, body):
    return client.post(f"/v1/objectives/{objective['id']}/keyresults", json=body)


def post_raw(client, objective, text):
    return client.post(f"/v1/objectives/{objective['id']}/keyresults", data=text,
                       content_type="application/json")


def stored(client, response, field):
    assert response.status_code == 200, response.get_json()
    fetched = client.get(f"/v1/keyresults/{response.get_json()['id']}").get_json()
    assert fetched[field] == response.get_json()[field]
    return fetched[field]


def raw_body(field, number_text):
    """The JSON text of body_with(field, ...) with a raw number literal for field."""
    text = json.dumps(body_with(field, "PLACEHOLDER"))
    return text.replace('"PLACEHOLDER"', number_text)


def nothing_stored(client, objective):
    listed = client.get(f"/v1/objectives/{objective['id']}/keyresults").get_json()
    return listed["keyresults"] == []


# --- normalisation through the API ----------------------------------------------------------

NORMALISED = [
    ("0.5", "0.50"),
    (10000, "10000.00"),
    ("10000", "10000.00"),
    ("1e3", "1000.00"),
    ("1E+3", "1000.00"),
    ("0.125", "0.125"),
    ("0.000001", "0.000001"),
    ("123.456789", "123.456789"),
    ("-1.5", "-1.50"),
    ("-0", "0.00"),
    ("-0.000", "0.00"),
    (0, "0.00"),
    (-42, "-42.00"),
    (BIGGEST, BIGGEST),
    ("-" + BIGGEST, "-" + BIGGEST),
    ("999999999999999", "999999999999999.00"),
]


@pytest.mark.parametrize("field", VALUE_FIELDS)
@pytest.mark.parametrize("value, expected", NORMALISED)
def test_decimal_is_stored_canonically(client, objective, field, value, expected):
    assert stored(client, post(client, objective, body_with(field, value)), field) == expected


RAW_NUMBERS = [
    ("0.1", "0.10"),
    ("0.3", "0.30"),
    ("1e3", "1000.00"),
    ("1.5E+3", "1500.00"),
    ("-0.0", "0.00"),
    ("10000", "10000.00"),
    ("123456789.123456", "123456789.123456"),
    ("12345678901234567890e-6", "12345678901234.56789"),
    ("999999999999999.999999", BIGGEST),
    ("-999999999999999.999999", "-" + BIGGEST),
    ("0.000001", "0.000001"),
]


@pytest.mark.parametrize("field", VALUE_FIELDS)
@pytest.mark.parametrize("number, expected", RAW_NUMBERS)
def test_json_number_is_stored_exactly(client, objective, field, number, expected):
    response = post_raw(client, objective, raw_body(field, number))
    assert stored(client, response, field) == expected


@pytest.mark.parametrize("number, expected", [("0.1", "0.10"), ("0.7", "0.70"), ("1", "1.00"),
                                              ("0.333333", "0.333333")])
def test_json_number_confidence_is_stored_exactly(client, objective, number, expected):
    response = post_raw(client, objective, raw_body("confidence", number))
    assert stored(client, response, "confidence") == expected


def test_update_normalises_decimals_too(client, objective):
    created = post(client, objective, body_with("current_value", "1")).get_json()
    response = client.post(f"/v1/keyresults/{created['id']}", data=(
        '{"name": "KR", "type": "range", "confidence": 0.1, "current_value": "1e3",'
        ' "target_value_min": "-0", "target_value_max": 999999999999999.999999}'))
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert (body["confidence"], body["current_value"], body["target_value_min"],
            body["target_value_max"]) == ("0.10", "1000.00", "0.00", BIGGEST)


# --- rejections through the API -------------------------------------------------------------

REJECTED = [
    "NaN", "nan", "-NaN", "sNaN", "Infinity", "-Infinity", "inf", "Inf",
    "", " ", True, False,
    "1_000", " 1", "1 ", "\t1", "0x10", "0b1", "1,5", "1.2.3", "abc", "1e", "--1", "١٢",
    "0.1234567", "1e-7", "-0.0000001", "999999999999999.9999999",
    "1000000000000000", "-1000000000000000", 10**15, -10**15, 10**30,
    "1e15", "-1E15", "1E+400", "1000000000000000.5",
    [], ["1"], {}, {"value": "1"},
]


@pytest.mark.parametrize("field", DECIMAL_FIELDS)
@pytest.mark.parametrize("value", REJECTED)
def test_invalid_decimal_is_400_naming_the_field(client, objective, field, value):
    assert_error(post(client, objective, body_with(field, value)), 400, field)
    assert nothing_stored(client, objective)


@pytest.mark.parametrize("field", DECIMAL_FIELDS)
@pytest.mark.parametrize("value", ["0.1234567", "1000000000000000", "NaN", True, ""])
def test_invalid_decimal_on_update_is_400_naming_the_field(client, objective, field, value):
    created = post(client, objective, body_with("current_value", "1")).get_json()
    response = client.post(f"/v1/keyresults/{created['id']}", json=body_with(field, value))
    assert_error(response, 400, field)
    assert client.get(f"/v1/keyresults/{created['id']}").get_json() == created


@pytest.mark.parametrize("field", DECIMAL_FIELDS)
@pytest.mark.parametrize("number", [
    "1000000000000000", "-1000000000000000", "1e15", "-1E15", "1e999999",
    "0.1234567", "1e-7", "999999999999999.9999999",
])
def test_out_of_bounds_json_number_is_400_naming_the_field(client, objective, field, number):
    assert_error(post_raw(client, objective, raw_body(field, number)), 400, field)
    assert nothing_stored(client, objective)


@pytest.mark.parametrize("field", DECIMAL_FIELDS)
@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_raw_json_nan_and_infinity_literals_are_400(client, objective, field, literal):
    # Not JSON at all (RFC 8259): rejected while parsing, so no field can be named.
    assert_error(post_raw(client, objective, raw_body(field, literal)), 400)
    assert nothing_stored(client, objective)


@pytest.mark.parametrize("field", ["confidence", "current_value"])
def test_null_is_rejected_for_non_nullable_decimals(client, objective, field):
    assert_error(post(client, objective, body_with(field, None)), 400, field)
    assert nothing_stored(client, objective)


# --- confidence range -----------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    (0, "0.00"), ("0", "0.00"), ("-0", "0.00"), ("0.000001", "0.000001"),
    ("0.5", "0.50"), ("0.999999", "0.999999"), ("1", "1.00"), (1, "1.00"), ("1.000000", "1.00"),
])
def test_confidence_within_zero_and_one_is_accepted(client, objective, value, expected):
    response = post(client, objective, body_with("confidence", value))
    assert stored(client, response, "confidence") == expected


@pytest.mark.parametrize("value", ["-0.01", "-0.000001", "1.01", "1.000001", -1, 2, "10", "1e1"])
def test_confidence_outside_zero_and_one_is_rejected(client, objective, value):
    assert_error(post(client, objective, body_with("confidence", value)), 400, "confidence")
    assert nothing_stored(client, objective)


def test_confidence_range_applies_on_update(client, objective):
    created = post(client, objective, body_with("current_value", "1")).get_json()
    response = client.post(f"/v1/keyresults/{created['id']}",
                           json=body_with("confidence", "1.01"))
    assert_error(response, 400, "confidence")


def test_values_other_than_confidence_may_be_negative_or_above_one(client, objective):
    response = post(client, objective, {
        "name": "KR", "type": "range", "current_value": "-3",
        "target_value_min": "-2", "target_value_max": "5000"})
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert (body["current_value"], body["target_value_min"], body["target_value_max"]) == (
        "-3.00", "-2.00", "5000.00")


# --- okr.rules.fields.canonical_decimal -----------------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    ("0.5", "0.50"),
    (Decimal("0.5"), "0.50"),
    (10000, "10000.00"),
    (Decimal("10000"), "10000.00"),
    ("1e3", "1000.00"),
    (Decimal("1E+3"), "1000.00"),
    ("0.125", "0.125"),
    (Decimal("0.1"), "0.10"),
    ("0.10", "0.10"),
    ("-0", "0.00"),
    (Decimal("-0"), "0.00"),
    (0, "0.00"),
    (-7, "-7.00"),
    ("0.000001", "0.000001"),
    ("-1.5", "-1.50"),
    (BIGGEST, BIGGEST),
    ("-" + BIGGEST, "-" + BIGGEST),
    (Decimal(BIGGEST), BIGGEST),
    (10**15 - 1, "999999999999999.00"),
])
def test_canonical_decimal(value, expected):
    result = canonical_decimal(value)
    assert type(result) is str
    assert result == expected
    assert canonical_decimal(result) == result


@pytest.mark.parametrize("value", [
    "NaN", "Infinity", "-Infinity", "inf", Decimal("NaN"), Decimal("sNaN"), Decimal("Infinity"),
    Decimal("-Infinity"), "", " ", True, False, None, [], {}, ["1"],
    "0.1234567", Decimal("0.1234567"), "1e-7", Decimal("1E-7"),
    10**15, -10**15, Decimal("1E+15"), Decimal("-1E+15"), "1e15", "1E+400", Decimal("1E+400"),
    "1000000000000000", "-1000000000000000", "999999999999999.9999999",
    "1_000", " 1", "1 ", "0x10", "1,5", "abc", "١",
])
def test_canonical_decimal_rejects(value):
    with pytest.raises(ValidationError):
        canonical_decimal(value)


@pytest.mark.parametrize("value", [0.1, 0.5, 1.0, float("nan")])
def test_canonical_decimal_refuses_floats(value):
    # Nothing goes through float: JSON numbers reach it as Decimal, never as float.
    with pytest.raises(ValidationError):
        canonical_decimal(value)


@pytest.mark.parametrize("value", ["1.0000000", "0.0000000", Decimal("-0E-10"), "1000e-9"])
def test_fractional_digits_are_counted_as_written(value):
    # The contract's letter: more than 6 fractional digits is a 400, even when they are zeros.
    with pytest.raises(ValidationError, match="fractional digits"):
        canonical_decimal(value)


@pytest.mark.parametrize("raw", [b'{"x": 1e9999999999999999999}', b'{"current_value": 1e-9999999999999999999}'])
def test_numbers_with_absurd_exponents_are_400_not_500(client, raw):
    assert_error(client.post("/v1/cycles", data=raw), 400)
