"""Teams: /v1/teams."""
from flask import Blueprint, abort

from ..db import get_db, new_id, utc_now
from .paging import paginate
from .responses import deleted
from .schemas import group_schema, group_update_schema, load_body

bp = Blueprint("teams", __name__, url_prefix="/v1/teams")


def team_json(row):
    return {"id": row["id"], "name": row["name"], "created_at": row["created_at"]}


def get_team_or_404(team_id):
    row = get_db().execute("SELECT * FROM teams WHERE id = ?", (team_id,)).fetchone()
    if row is None:
        abort(404, "team not found")
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
    return team_json(get_team_or_404(team_id))


@bp.post("/<team_id>")
def update_team(team_id):
    """Renames a team."""
    get_team_or_404(team_id)
    body = load_body(group_update_schema)
    row = get_db().execute(
        "UPDATE teams SET name = ? WHERE id = ? RETURNING *", (body["name"], team_id)
    ).fetchone()
    return team_json(row)


@bp.delete("/<team_id>")
def delete_team(team_id):
    """Deletes a team; its objectives stay, with team_id null."""
    get_team_or_404(team_id)
    get_db().execute("DELETE FROM teams WHERE id = ?", (team_id,))
    return deleted()
