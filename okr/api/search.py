"""GET /v1/search: objectives, key results, teams and people across cycles whose names hold a query (the rule and
the order are okr.store.search's), a page at a time."""
from flask import Blueprint

from ..db import get_db
from ..store import search
from .paging import encode_token, page_size, page_token_arg, query_arg

bp = Blueprint("search", __name__, url_prefix="/v1/search")


def result_json(row):
    return {"type": row["kind"], "id": row["id"], "name": row["name"], "cycle_id": row["cycle_id"],
            "objective_id": row["objective_id"]}


@bp.get("")
def search_everything():
    """Lists what matches q: objectives, key results, teams, then people, each in creation order."""
    query = search.query_text(query_arg("q", required=True))
    after = page_token_arg()
    size = page_size()
    rows = search.page(get_db(), query, after, size + 1)
    more = len(rows) > size
    rows = rows[:size]
    return {"next_page_token": encode_token(rows[-1]["position"]) if more else None,
            "results": [result_json(row) for row in rows]}
