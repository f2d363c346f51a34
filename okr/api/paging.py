"""Keyset pagination on the row sequence, shared by every list."""
import base64
import binascii

from flask import current_app, request
from marshmallow import ValidationError

from ..db import get_db
from ..rules.ids import MAX_ROW_ID, UUID_RE

BOOLEANS = ("true", "false")
# A list's rows per page when page_size is absent, and the most it may ask for (the OpenAPI document says both).
PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


def encode_token(seq):
    return base64.urlsafe_b64encode(str(seq).encode("ascii")).decode("ascii")


def decode_token(token):
    """The row id a page token stands for; padding may be left off."""
    try:
        text = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
        digits = text.decode("ascii")
    except (binascii.Error, ValueError):
        raise ValidationError({"page_token": "Not a valid page token."}) from None
    if not digits.isdigit() or not digits.isascii():
        raise ValidationError({"page_token": "Not a valid page token."})
    digits = digits.lstrip("0") or "0"
    # Past every row id SQLite can hold: an empty last page, not an error.
    return MAX_ROW_ID if len(digits) > 19 else min(int(digits), MAX_ROW_ID)


def query_arg(name, required=False):
    """One query argument, or None when absent; repeating it is an error.

    A required argument given empty counts as missing.
    """
    values = request.args.getlist(name)
    if len(values) > 1:
        raise ValidationError({name: "Given more than once."})
    value = values[0] if values else None
    if required and not value:
        raise ValidationError({name: "Missing required query argument."})
    return value


def uuid_arg(name, words=()):
    """An optional lowercase UUID query argument (or one of words), or None when absent."""
    value = query_arg(name)
    if value is None or value in words or UUID_RE.fullmatch(value):
        return value
    also = "".join(f" or {word!r}" for word in words)
    raise ValidationError({name: f"Must be a lowercase UUID{also}."})


def choice_arg(name, choices):
    """An optional query argument that must be one of choices, or None when absent."""
    value = query_arg(name)
    if value is None or value in choices:
        return value
    raise ValidationError({name: f"Must be one of: {', '.join(choices)}."})


def bool_arg(name):
    """An optional query argument spelled true or false, as a bool, or None when absent."""
    value = choice_arg(name, BOOLEANS)
    return None if value is None else value == "true"


def page_size():
    text = query_arg("page_size")
    if text is None:
        return current_app.config["PAGE_SIZE"]
    limit = current_app.config["MAX_PAGE_SIZE"]
    # The length check keeps int() away from absurdly long digit strings.
    if text.isascii() and text.isdigit() and len(text) <= 6 and 1 <= int(text) <= limit:
        return int(text)
    raise ValidationError({"page_size": f"Must be an integer from 1 to {limit}."})


def page_token_arg():
    """The row seq the page_token query argument stands for; 0 when there is none."""
    token = query_arg("page_token")
    return decode_token(token) if token else 0


def paginate(name, fetch, to_json):
    """A page of the list name: fetch(db, after, limit) is the store's function that reads it, up to limit
    rows after the row whose seq the page token names, in seq order.

    Fetches one row more than the page holds, so next_page_token is null
    exactly when no further rows exist.
    """
    after = page_token_arg()
    size = page_size()
    rows = fetch(get_db(), after, size + 1)
    has_more = len(rows) > size
    rows = rows[:size]
    return {
        "next_page_token": encode_token(rows[-1]["seq"]) if has_more else None,
        name: [to_json(row) for row in rows],
    }
