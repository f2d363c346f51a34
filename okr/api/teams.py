"""Teams: /v1/teams."""
from flask import Blueprint

from ..db import get_db
from ..records import team_json
from ..rules.body_schemas import group_schema, group_update_schema
from ..store import teams
from .bodies import load_body
from .conditional import current, tagged
from .paging import paginate
from .responses import deleted

bp = Blueprint("teams", __name__, url_prefix="/v1/teams")


@bp.post("")
def create_team():
    """Creates a team."""
    body = load_body(group_schema)
    row = teams.create(get_db(), body["name"])
    return tagged(team_json(row), row["revision"])


@bp.get("")
def list_teams():
    """Lists teams in creation order, a page at a time."""
    return paginate("teams", teams.page, team_json)


@bp.get("/<team_id>")
def get_team(team_id):
    """Returns one team."""
    row = teams.get(get_db(), team_id)
    return tagged(team_json(row), row["revision"])


@bp.post("/<team_id>")
def update_team(team_id):
    """Renames a team."""
    current(teams.get(get_db(), team_id), team_json)
    body = load_body(group_update_schema)
    row = teams.rename(get_db(), team_id, body["name"])
    return tagged(team_json(row), row["revision"])


@bp.delete("/<team_id>")
def delete_team(team_id):
    """Deletes a team; its objectives stay, with team_id null."""
    current(teams.get(get_db(), team_id), team_json)
    teams.delete(get_db(), team_id)
    return deleted()
