"""The one way the API reads a request body: a JSON object, checked by a schema of okr.rules."""
from decimal import InvalidOperation

from flask import request
from werkzeug.exceptions import BadRequest

from ..rules import strict_json
from ..rules.strict_json import MAX_JSON_DEPTH

# A declared body over this many bytes is a 413 on any path (okr.pipeline); the app's MAX_CONTENT_LENGTH.
MAX_BODY_BYTES = 1 << 20


def read_json_body():
    """The request body as a JSON object, whatever the Content-Type; an empty body is {}.

    Only a body of no bytes at all: whitespace alone is not a JSON text.
    """
    raw = request.get_data(cache=False)
    if not raw:
        return {}
    try:
        data = strict_json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadRequest("request body is not valid UTF-8") from None
    except RecursionError:
        raise BadRequest(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except InvalidOperation:
        raise BadRequest("request body holds a number whose exponent is out of range") from None
    except ValueError as error:
        raise BadRequest(f"request body is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise BadRequest("request body must be a JSON object")
    if strict_json.json_depth(data) > MAX_JSON_DEPTH:
        raise BadRequest(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return data


def load_body(schema):
    """Validates the request body with a schema; raises ValidationError on bad input."""
    return schema.load(read_json_body())


def load_merge_patch(schema, stored):
    """Validates a JSON Merge Patch (RFC 7396) over a stored resource, as schema validates a full update.

    The resources are flat, so the merge is shallow: each member sent replaces the stored one. A null
    is kept rather than removed, so that the schema clears a nullable field and refuses null for any
    other (removing the member would give it the full update's zero value instead).
    """
    return schema.load({**stored, **read_json_body()})
