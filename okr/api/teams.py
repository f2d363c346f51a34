"""Teams: /v1/teams."""
from flask import Blueprint, abort

from ..db import get_db, new_id, utc_now
from ..records import team_json
from .conditional import check_if_match, tagged
from .paging import paginate
from .responses import deleted
from .schemas import group_schema, group_update_schema, load_body

bp = Blueprint("teams", __name__, url_prefix="/v1/teams")


def get_team_or_404(team_id):
    row = get_db().execute("SELECT * FROM teams WHERE id = ?", (team_id,)).fetchone()
    if row is None:
        abort(404, "team not found")
    return row


def get_current_team_or_404(team_id):
    """The team about to be changed, once any If-Match names its present ETag."""
    row = get_team_or_404(team_id)
    check_if_match(team_json(row), row["revision"])
    return row


@bp.post("")
def create_team():
    """Creates a team."""
    body = load_body(group_schema)
    row = get_db().execute(
        "INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?) RETURNING *",
        (new_id(), body["name"], utc_now()),
    ).fetchone()
    return team_json(row)


@bp.get("")
def list_teams():
    """Lists teams in creation order, a page at a time."""
    return paginate("teams", "SELECT * FROM teams WHERE seq > ? ORDER BY seq LIMIT ?", (), team_json)


@bp.get("/<team_id>")
def get_team(team_id):
    """Returns one team."""
    row = get_team_or_404(team_id)
    return tagged(team_json(row), row["revision"])


@bp.post("/<team_id>")
def update_team(team_id):
    """Renames a team."""
    get_current_team_or_404(team_id)
    body = load_body(group_update_schema)
    row = get_db().execute(
        "UPDATE teams SET name = ?, revision = revision + 1 WHERE id = ? RETURNING *", (body["name"], team_id)
    ).fetchone()
    return tagged(team_json(row), row["revision"])


@bp.delete("/<team_id>")
def delete_team(team_id):
    """Deletes a team; its objectives stay, with team_id null."""
    get_current_team_or_404(team_id)
    get_db().execute("DELETE FROM teams WHERE id = ?", (team_id,))
    return deleted()
