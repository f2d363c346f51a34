"""Numbers as people write them and read them (okr.rules.quantities): the forms' one parser, the one formatter
of the pages, the weekly email and the chat digest, and the far-jump rule of the check-in forms."""
from decimal import Decimal

import pytest
from marshmallow import ValidationError

from okr.rules import quantities
from okr.rules.body_schemas import checkin_schema
from okr.rules.quantities import NotANumber, far_jump, shown, typed

NBSP, THIN, NARROW = "\u00a0", "\u2009", "\u202f"

# (typed, unit, position, the exact Decimal read)
ACCEPTED = [
    ("60000", None, None, "60000"),
    ("60,000", None, None, "60000"),
    ("60 000", None, None, "60000"),
    (f"60{NBSP}000", None, None, "60000"),
    (f"60{THIN}000", None, None, "60000"),
    (f"60{NARROW}000", None, None, "60000"),
    ("1,234,567.89", None, None, "1234567.89"),
    ("1 234 567", None, None, "1234567"),
    ("  42  ", None, None, "42"),
    ("-3.5", None, None, "-3.5"),
    ("+7", None, None, "7"),
    (".5", None, None, "0.5"),
    ("5.", None, None, "5"),
    ("60k", None, None, "60000"),
    ("60K", None, None, "60000"),
    ("60 k", None, None, "60000"),
    ("1.5M", None, None, "1500000"),
    ("1.5m", None, None, "1500000"),
    ("2B", None, None, "2000000000"),
    ("2b", None, None, "2000000000"),
    ("2bn", None, None, "2000000000"),
    ("2.25BN", None, None, "2250000000"),
    ("1,500k", None, None, "1500000"),
    ("-0.5k", None, None, "-500"),
    ("0.000001M", None, None, "1"),
    ("$60,000", "$", "before", "60000"),
    ("$ 60,000", "$", "before", "60000"),
    ("$60k", "$", "before", "60000"),
    ("-$5", "$", "before", "-5"),
    ("$-5", "$", "before", "-5"),
    ("60000", "$", "before", "60000"),
    ("EUR 1.5M", "EUR", "before", "1500000"),
    ("12 %", "%", "after", "12"),
    ("12%", "%", "after", "12"),
    ("250ms", "ms", "after", "250"),
    ("250 ms", "ms", "after", "250"),
    ("1,250 users", "users", "after", "1250"),
    ("5m", "m", "after", "5"),  # the unit is read first: five metres, not five million
    ("1.5M m", "m", "after", "1500000"),
]


@pytest.mark.parametrize("text, unit, position, expected", ACCEPTED)
def test_every_accepted_form_reads_as_its_exact_decimal(text, unit, position, expected):
    number = typed(text, unit, position)
    assert isinstance(number, Decimal)
    assert number == Decimal(expected)


REFUSED = [
    ("", None, None), ("   ", None, None), ("lots", None, None), ("1,2", None, None), ("1,2345", None, None),
    ("12,34,567", None, None), ("1,000 000", None, None), ("60kk", None, None), ("60x", None, None),
    ("1e3", None, None), ("0x10", None, None), ("--5", None, None), ("5-", None, None), ("k", None, None),
    (".", None, None), ("1.2.3", None, None), ("NaN", None, None), ("Infinity", None, None), ("٣", None, None),
    ("$60,000", None, None),  # no unit: a dollar is not this key result's
    ("60,000 €", "$", "before"), ("12 ms", "%", "after"), ("60,000$", "$", "before"), ("%12", "%", "after"),
    ("-$-5", "$", "before"), ("1" * 41, None, None),
]


@pytest.mark.parametrize("text, unit, position", REFUSED)
def test_anything_else_is_refused_with_what_is_taken(text, unit, position):
    with pytest.raises(NotANumber) as refused:
        typed(text, unit, position)
    assert str(refused.value) == quantities.examples(unit, position)


def test_the_refusal_shows_the_key_results_own_unit():
    assert quantities.examples("$", "before") == "Write a number such as 60000, 60,000, 60k or $60,000."
    assert quantities.examples("ms", "after") == "Write a number such as 60000, 60,000, 60k or 60,000 ms."
    assert quantities.examples(None, None) == "Write a number such as 60000, 60,000, 60k or 1.5M."


def test_a_multiplier_is_exact_where_multiplying_would_round():
    # 31 significant digits: a Decimal product in the default context (28 digits) would round them.
    assert typed("1234567890123456789012345678.901k") == Decimal("1234567890123456789012345678901")
    assert format(typed("1.5M"), "f") == "1500000"
    assert format(typed("0.1234567k"), "f") == "123.4567"


def test_the_rules_limits_still_apply_after_the_expansion():
    def loaded(text):
        return checkin_schema.load({"value": format(typed(text), "f")})["value"]
    assert loaded("1.5M") == "1500000.00"
    assert loaded("0.0000005k") == "0.0005"  # 7 digits typed, 4 after the expansion
    with pytest.raises(ValidationError, match="fractional digits"):
        loaded("0.0000001")
    with pytest.raises(ValidationError, match="10\\^15"):
        loaded("1000000B")
    assert loaded("999999.999999B") == "999999999999000.00"


SHOWN = [
    ("42000.00", "$", "before", "$42,000"),
    ("60000.00", "$", "before", "$60,000"),
    ("12.00", "ms", "after", "12 ms"),
    ("1250.00", "users", "after", "1,250 users"),
    ("40.00", "%", "after", "40%"),
    ("-5.50", "$", "before", "-$5.5"),
    ("1234567.125", None, None, "1,234,567.125"),
    ("500.00", None, None, "500"),
    ("12.50", None, None, "12.5"),
    ("0.00", None, None, "0"),
    ("-0.00", None, None, "0"),
    ("999.00", None, None, "999"),
    ("1000.00", "USD", "before", "USD 1,000"),
    ("3.00", "°C", "after", "3 °C"),
]


@pytest.mark.parametrize("stored, unit, position, expected", SHOWN)
def test_a_stored_decimal_is_shown_with_separators_and_its_unit(stored, unit, position, expected):
    assert shown(stored, unit, position) == expected


def test_what_is_shown_reads_back_as_the_same_number():
    for stored, unit, position, _ in SHOWN:
        assert typed(shown(stored, unit, position), unit, position) == Decimal(stored)


def test_nothing_is_shown_for_none():
    assert shown(None, "$", "before") == ""


@pytest.mark.parametrize("kind, start, current, low, high, new, far", [
    ("positive", "0.00", "10.00", "100.00", None, Decimal("1000"), False),  # exactly ten spans: not more
    ("positive", "0.00", "10.00", "100.00", None, Decimal("1011"), True),
    ("positive", "0.00", "10.00", "100.00", None, Decimal("-991"), True),
    ("negative", "50.00", "40.00", "10.00", None, Decimal("500"), True),  # a span of 40
    ("negative", "50.00", "40.00", "10.00", None, Decimal("430"), False),
    ("range", "5.00", "3.00", "1.00", "4.00", Decimal("34"), True),  # a range's span is max - min
    ("range", "500.00", "3.00", "1.00", "4.00", Decimal("33"), False),
    ("positive", "100.00", "100.00", "100.00", None, Decimal("1000000"), False),  # a span of 0: no check
    ("baseline", "0.00", "5.00", None, None, Decimal("1000000"), False),  # no target: no check
    ("milestone", "0.00", "0.00", "1.00", None, Decimal("1"), False),
])
def test_a_check_in_is_far_beyond_ten_spans_of_its_key_result(kind, start, current, low, high, new, far):
    assert far_jump(kind, start, current, low, high, new) is far


def test_a_unit_is_at_most_twelve_characters_without_control_characters():
    assert quantities.unit_problem("twelve chars") is None
    assert quantities.unit_problem("thirteen char") == "Longer than maximum length 12."
    assert quantities.unit_problem("m\ns") is not None
