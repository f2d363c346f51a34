"""A team's members: /v1/teams/<team_id>/members. Written through okr.store.team_members only."""
from flask import Blueprint

from ..db import get_db
from ..records import user_json
from ..store import team_members, teams
from .paging import paginate
from .responses import deleted

bp = Blueprint("members", __name__, url_prefix="/v1/teams/<team_id>/members")

# The members' user rows in the order they joined; the page tokens are team_members.seq.
MEMBERS = """SELECT m.seq, u.id, u.name, u.email, u.is_active, u.created_at
    FROM team_members m JOIN users u ON u.id = m.user_id
    WHERE m.team_id = ? AND m.seq > ? ORDER BY m.seq LIMIT ?"""


@bp.get("")
def list_members(team_id):
    """Lists a team's members in the order they joined, a page at a time."""
    teams.get(get_db(), team_id)
    return paginate("users", MEMBERS, (team_id,), user_json)


@bp.put("/<user_id>")
def add_member(team_id, user_id):
    """Makes a user a member of a team (already one: nothing changes)."""
    return user_json(team_members.add(get_db(), team_id, user_id))


@bp.delete("/<user_id>")
def remove_member(team_id, user_id):
    """Takes a user out of a team."""
    team_members.remove(get_db(), team_id, user_id)
    return deleted()
