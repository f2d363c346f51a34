"""A team's members: /v1/teams/<team_id>/members. Written through okr.store.team_members only."""
from functools import partial

from flask import Blueprint

from ..db import get_db
from ..records import user_json
from ..store import team_members, teams
from .conditional import tagged
from .paging import paginate
from .responses import deleted

bp = Blueprint("members", __name__, url_prefix="/v1/teams/<team_id>/members")

@bp.get("")
def list_members(team_id):
    """Lists a team's members in the order they joined, a page at a time."""
    teams.get(get_db(), team_id)
    return paginate("users", partial(team_members.page, team_id=team_id), user_json)


@bp.put("/<user_id>")
def add_member(team_id, user_id):
    """Makes a user a member of a team (already one: nothing changes); answers the user, with its ETag."""
    user = team_members.add(get_db(), team_id, user_id)
    return tagged(user_json(user), user["revision"])


@bp.delete("/<user_id>")
def remove_member(team_id, user_id):
    """Takes a user out of a team."""
    team_members.remove(get_db(), team_id, user_id)
    return deleted()
