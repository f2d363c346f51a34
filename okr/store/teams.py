"""Teams."""
from functools import partial

from .common import count, create_group, deleted_or_missing, fetch, rename_group

get = partial(fetch, "teams", "team")
create = partial(create_group, "teams")
rename = partial(rename_group, "teams", "team")


def delete(db, team_id):
    """Deletes a team; its objectives stay, with team_id null."""
    deleted_or_missing("team", db.execute("DELETE FROM teams WHERE id = ? RETURNING id", (team_id,)))


def doomed(db, team_id):
    """What deleting the team changes: {"objectives": the objectives that lose their team, "members": the
    memberships that end}."""
    return {"objectives": count(db, "SELECT count(*) FROM objectives WHERE team_id = ?", team_id),
            "members": count(db, "SELECT count(*) FROM team_members WHERE team_id = ?", team_id)}
