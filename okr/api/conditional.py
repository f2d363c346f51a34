"""ETags on single resources, and the If-Match / If-None-Match preconditions.

An ETag is a digest of the row's revision (which every update bumps) and of the
JSON the GET answers, so it changes on every update, even two in one second,
and whenever the representation changes without an update of its own (a
deleted team empties an objective's team_id).
"""
import hashlib

from flask import current_app, request
from werkzeug.exceptions import PreconditionFailed


def tagged(data, revision, tag_of=None):
    """A JSON response for one resource, with its ETag; for a GET, 304 when If-None-Match names it.

    tag_of, when given, is the resource as a GET answers it, whose ETag this response carries (a PATCH answers
    more fields than the spec's GET, and its ETag must be the one a GET would give for If-Match to follow it).
    """
    response = current_app.json.response(data)
    tag = entity_tag(response.get_data(), revision) if tag_of is None else current_tag(tag_of, revision)
    response.set_etag(tag)
    if request.method in ("GET", "HEAD") and request.if_none_match.contains_weak(tag):
        response.status_code = 304
        response.set_data(b"")
        del response.headers["Content-Type"]
        del response.headers["Content-Length"]
    return response


def entity_tag(body, revision):
    return hashlib.blake2b(body, digest_size=12, key=str(revision).encode("ascii")).hexdigest()


def current_tag(data, revision):
    """The ETag that a GET of this resource answers now."""
    return entity_tag(current_app.json.response(data).get_data(), revision)


def check_if_match(data, revision):
    """412 unless If-Match, when given, names the resource's present ETag (or is *)."""
    if "If-Match" in request.headers and not request.if_match.contains(current_tag(data, revision)):
        raise PreconditionFailed("the resource has changed since that ETag: fetch it again (If-Match)")


def current(row, to_json):
    """The stored row about to be changed, once any If-Match names its present ETag."""
    check_if_match(to_json(row), row["revision"])
    return row
