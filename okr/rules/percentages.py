"""Progress and confidence as people read them, "0.88" as "88%": the pages, the weekly emails and the chat
digest all write them with this one function. Knows no Flask."""
from decimal import Decimal
from functools import lru_cache


@lru_cache(maxsize=1024)
def percent(fraction_text):
    """ "0.80" as "80%", "0.125" as "12.5%"; None as "" (a baseline has no progress).

    Cached: a cycle page asks for a few hundred distinct figures thousands of times.
    """
    if fraction_text is None:
        return ""
    text = str(Decimal(fraction_text) * 100)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{'0' if text in ('-0', '', '-') else text}%"


def points(now, before):
    """The change between two progress figures in percentage points: "+15 points", "-10 points", "no change";
    None when either is missing."""
    if now is None or before is None:
        return None
    difference = Decimal(now) - Decimal(before)
    if difference == 0:
        return "no change"
    figure = percent(str(abs(difference)))[:-1]
    return f"{'+' if difference > 0 else '-'}{figure} point{'s' if figure != '1' else ''}"
