"""Teams."""
from functools import partial

from ..records import team_json
from . import events
from .common import count, create_group, deleted_or_missing, fetch, keyset_page, rename_group

get = partial(fetch, "teams", "team")


def create(db, name):
    """A new team (its row)."""
    row = create_group("teams", db, name)
    events.record(db, "team", "created", row["id"], team_json(row), team_id=row["id"])
    return row


def rename(db, team_id, name):
    """The team renamed (its row; its revision moves on); NotFound when it does not exist."""
    before, row = rename_group("teams", "team", db, team_id, name)
    events.record(db, "team", "updated", team_id, team_json(row), before=team_json(before), team_id=team_id)
    return row


def delete(db, team_id):
    """Deletes a team; its objectives stay, with team_id null."""
    row = deleted_or_missing("team", db.execute("DELETE FROM teams WHERE id = ? RETURNING *", (team_id,)))
    events.record(db, "team", "deleted", team_id, team_json(row), team_id=team_id)


def doomed(db, team_id):
    """What deleting the team changes: {"objectives": the objectives that lose their team, "members": the
    memberships that end}."""
    return {"objectives": count(db, "SELECT count(*) FROM objectives WHERE team_id = ?", team_id),
            "members": count(db, "SELECT count(*) FROM team_members WHERE team_id = ?", team_id)}


def pick_list(db):
    """Every team's id and name, by name: the choices of a page's team filter or select."""
    return db.execute("SELECT id, name FROM teams ORDER BY name, seq").fetchall()


# page(db, after, limit): a page of teams, oldest first.
page = partial(keyset_page, "teams")
