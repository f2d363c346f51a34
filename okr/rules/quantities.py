"""Numbers as people write them and read them, with a key result's unit: "$60,000", "60k", "1.5M", "12 %".

Flask-free, so that the pages, the weekly email and the chat digest share one reading and one way of showing
a figure. typed() reads what a person types into a form's value or target (the API takes the spec's decimals
only); shown() writes a stored decimal for people; unit_problem() is the rule of a unit itself; far_jump()
says when a check-in moves a value so far that the person should confirm it. Everything is Decimal: 1.5M is
1500000 exactly.
"""
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from . import names

UNIT_MAX = 12  # characters, once trimmed
POSITIONS = ("before", "after")
MAX_TYPED = 40  # characters: a 1,000,000-digit number is a typo or an attack, and slow to turn into text
# Multipliers as people write them: k and K for thousand, m and M for million, B and bn for billion.
SCALES = {"k": 3, "K": 3, "m": 6, "M": 6, "b": 9, "B": 9, "bn": 9, "Bn": 9, "BN": 9}
# Digit groups: a comma, a space, a no-break space, a thin space or a narrow no-break space, one kind per number.
GROUP_SEPARATORS = ",\u0020\u00a0\u2009\u202f"
SPACES = "\u0020\u00a0\u2009\u202f"
NUMBER = re.compile(
    r"(?P<sign>[+-]?)"
    r"(?P<whole>[0-9]{1,3}(?:(?P<sep>[" + GROUP_SEPARATORS + r"])[0-9]{3})(?:(?P=sep)[0-9]{3})*|[0-9]*)"
    r"(?:\.(?P<fraction>[0-9]*))?"
    r"(?:[" + SPACES + r"]?(?P<scale>" + "|".join(sorted(SCALES, key=len, reverse=True)) + r"))?")
# A confidence as people write it: "80 %", "80%", "0.8".
PERCENT = re.compile(r"(.*?)\s*%")
CONFIDENCE_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)")
ENTER_A_CONFIDENCE = "Enter a number such as 0.8 or 80 %."
# How far a check-in may move a value, in spans of its key result, before the person is asked to confirm it.
FAR_SPANS = 10


class NotANumber(ValueError):
    """What a person typed is not a number this reads; its text is the sentence to show beside the field."""


def examples(unit=None, position=None):
    """The sentence that says what typed() takes: "Write a number such as 60000, 60,000, 60k or $60,000."."""
    if unit:
        return f"Write a number such as 60000, 60,000, 60k or {shown('60000', unit, position)}."
    return "Write a number such as 60000, 60,000, 60k or 1.5M."


def typed(text, unit=None, position=None):
    """A value or target as a person types it, as a Decimal; NotANumber (with examples()) unless it is one.

    Takes plain decimals ("60000", "-3.5", ".5"), digits in groups of three ("60,000", "60 000", also with a
    no-break or thin space), a multiplier ("60k", "1.5M", "2bn") and the key result's own unit where it
    goes ("$60,000" for a unit before, "12 %", "250ms" for one after; a sign may come first: "-$5"). The
    rules' limits (6 fractional digits, below 10^15) are the caller's to apply to what this returns.
    """
    refusal = NotANumber(examples(unit, position))
    text = text.strip()
    if not text or len(text) > MAX_TYPED:
        raise refusal
    sign = ""
    if unit:
        if position == "before":
            if text[0] in "+-" and text[1:].lstrip(SPACES).startswith(unit):
                sign, text = text[0], text[1:].lstrip(SPACES)
            if text.startswith(unit):
                text = text[len(unit):].lstrip(SPACES)
        elif text.endswith(unit):
            text = text[:-len(unit)].rstrip(SPACES)
    match = NUMBER.fullmatch(text)
    if match is None or not (match["whole"] or match["fraction"]) or (sign and match["sign"]):
        raise refusal
    digits = (match["whole"] or "0").translate({ord(c): None for c in GROUP_SEPARATORS})
    try:
        number = Decimal(f"{sign or match['sign']}{digits}" + (f".{match['fraction']}" if match["fraction"] else ""))
    except InvalidOperation:
        raise refusal from None
    if match["scale"]:
        # Moving the exponent rather than multiplying: a product would round to the context's 28 digits.
        negative, kept, exponent = number.as_tuple()
        number = Decimal((negative, kept, exponent + SCALES[match["scale"]]))
    return number


def typed_confidence(text):
    """A confidence as a person writes it: "80 %", "80%" or "0.8" as the rules' "0.8"; "" as None (keep the
    present one); NotANumber (ENTER_A_CONFIDENCE) for anything else, or outside 0 to 1."""
    text = text.strip()
    if not text:
        return None
    match = PERCENT.fullmatch(text)
    number_text = (match.group(1) if match else text).strip()
    if len(number_text) > MAX_TYPED or not CONFIDENCE_NUMBER.fullmatch(number_text):
        raise NotANumber(ENTER_A_CONFIDENCE)
    number = Decimal(number_text) / (100 if match else 1)
    if not 0 <= number <= 1:
        raise NotANumber(ENTER_A_CONFIDENCE)
    return format(number.normalize(), "f")


@lru_cache(maxsize=4096)
def shown(decimal_text, unit=None, position=None):
    """A stored decimal for people: digits in groups of three, no trailing zeros ("42000.50" as "42,000.5"),
    with the unit where it goes: "$42,000", "12%", "12 ms", "1,250 users"; "" for None.

    Cached, and plain text work for the stored decimals' plain notation: a big cycle's page shows thousands.
    """
    if decimal_text is None:
        return ""
    text = decimal_text if "e" not in decimal_text.lower() else format(Decimal(decimal_text), "f")
    negative = text.startswith("-")
    whole, _, fraction = text.lstrip("+-").partition(".")
    fraction = fraction.rstrip("0")
    figure = f"{int(whole or '0'):,}" + (f".{fraction}" if fraction else "")
    if figure == "0":
        negative = False  # never "-0"
    sign = "-" if negative else ""
    if not unit:
        return sign + figure
    gap = "" if len(unit) == 1 and not unit.isalnum() else " "  # "$5", "12%", but "12 ms", "USD 5"
    if position == "before":
        return f"{sign}{unit}{gap}{figure}"
    return f"{sign}{figure}{gap}{unit}"


def unit_problem(unit):
    """Why a unit as given cannot be one, or None: no control characters, at most UNIT_MAX characters once
    trimmed."""
    problem = names.problem(unit)
    if problem:
        return problem
    if len(unit.strip()) > UNIT_MAX:
        return f"Longer than maximum length {UNIT_MAX}."
    return None


def span(kind, start, low, high):
    """How far a key result's target lies from where it started (|target - start|; a range's max - min), as a
    Decimal; None when it has no target."""
    if kind == "range" and low is not None and high is not None:
        return Decimal(high) - Decimal(low)
    if low is None or start is None:
        return None
    return abs(Decimal(low) - Decimal(start))


def far_jump(kind, start, current, low, high, new):
    """Whether a check-in of new (a Decimal) moves a key result (its type, start value, current value and
    targets, stored decimals) by more than FAR_SPANS of its span: a stray digit or a misplaced point, most
    likely. False when the span is 0 or unknown."""
    width = span(kind, start, low, high)
    if not width:
        return False
    return abs(new - Decimal(current)) > FAR_SPANS * width
