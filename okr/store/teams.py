"""Teams."""
from functools import partial

from ..errors import NotFound
from ..records import team_json
from . import events, visibility
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


def named(db, team_id):
    """The team's id and name, or None."""
    return db.execute("SELECT id, name FROM teams WHERE id = ?", (team_id,)).fetchone()


def chosen(db, team_id):
    """A filter's team as {"id", "name"}: None without one (team_id None), NotFound when there is no such team."""
    if team_id is None:
        return None
    found = named(db, team_id)
    if found is None:
        raise NotFound("team")
    return {"id": found["id"], "name": found["name"]}


def oldest_first(db):
    """Every team's id and name, in the order they were made."""
    return db.execute("SELECT id, name FROM teams ORDER BY seq").fetchall()


def objective_counts(db, span):
    """{team id: how many objectives it has} of the teams whose seq is within span (first, last), those with
    none left out."""
    seen, params = visibility.seeing("o")
    return dict(db.execute(
        f"""SELECT o.team_id, count(*) FROM objectives o JOIN teams t ON t.id = o.team_id
            WHERE t.seq BETWEEN ? AND ? AND {seen} GROUP BY o.team_id""", (*span, *params)).fetchall())


def objectives_of(db, team_id, today, limit):
    """Up to limit of the team's objectives (id, name) with their cycle (cycle_id, cycle_name, starts_on,
    ends_on): those of current cycles first, then of upcoming ones, then of finished ones (by the cycles'
    ISO dates against today, a date), each group by cycle, newest first, then in creation order."""
    day = today.isoformat()
    seen, params = visibility.seeing("o")
    return db.execute(
        f"""SELECT o.id, o.name, c.id AS cycle_id, c.name AS cycle_name, c.starts_on, c.ends_on
            FROM objectives o JOIN cycles c ON c.id = o.cycle_id WHERE o.team_id = ? AND {seen}
            ORDER BY CASE WHEN c.starts_on > ? THEN 1 WHEN c.ends_on < ? THEN 2 ELSE 0 END, c.seq DESC, o.seq
            LIMIT ?""", (team_id, *params, day, day, limit)).fetchall()


def objective_count(db, team_id):
    """How many objectives the team has that the viewer may see."""
    seen, params = visibility.seeing("objectives")
    return count(db, f"SELECT count(*) FROM objectives WHERE team_id = ? AND {seen}", team_id, *params)


# page(db, after, limit): a page of teams, oldest first.
page = partial(keyset_page, "teams")
