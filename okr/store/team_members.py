"""A team's members: users added to and removed from a team. Deleting either side removes the membership
(the foreign keys cascade)."""
import json

from .. import clock
from ..errors import NotFound
from ..records import membership_json
from . import events, search, teams, users


def add(db, team_id, user_id):
    """The user (its row), now a member of the team (it may have been already); NotFound for either."""
    teams.get(db, team_id)
    user = users.get(db, user_id)
    added = db.execute("INSERT OR IGNORE INTO team_members (team_id, user_id, joined_at) VALUES (?, ?, ?)",
                       (team_id, user_id, clock.utc_now())).rowcount
    if added:
        events.record(db, "team", "member_added", team_id, membership_json(team_id, user), team_id=team_id)
    return user


def remove(db, team_id, user_id):
    """Removes the user from the team; NotFound for an unknown team, or a user who is not a member."""
    teams.get(db, team_id)
    if db.execute("DELETE FROM team_members WHERE team_id = ? AND user_id = ? RETURNING seq",
                  (team_id, user_id)).fetchone() is None:
        raise NotFound("team member")
    events.record(db, "team", "member_removed", team_id, membership_json(team_id, users.get(db, user_id)),
                  team_id=team_id)


def page(db, after, limit, team_id):
    """A page of a team's members' user rows, in the order they joined; a row's seq (its page token) is its
    membership's."""
    return db.execute(
        """SELECT m.seq, u.id, u.name, u.email, u.is_active, u.created_at
           FROM team_members m JOIN users u ON u.id = m.user_id
           WHERE m.team_id = ? AND m.seq > ? ORDER BY m.seq LIMIT ?""", (team_id, after, limit)).fetchall()


def teams_of(db, user_id):
    """The teams (id, name) the user is a member of, by name."""
    return db.execute(
        """SELECT t.id, t.name FROM team_members m JOIN teams t ON t.id = m.team_id
           WHERE m.user_id = ? ORDER BY t.name, t.seq""", (user_id,)).fetchall()


def teams_of_users_between(db, first_seq, last_seq):
    """(user_id, id, name) of every team of the users whose seq is from first_seq to last_seq (a page of people),
    by the team's name."""
    return db.execute(
        """SELECT m.user_id, t.id, t.name FROM team_members m JOIN teams t ON t.id = m.team_id
           JOIN users u ON u.id = m.user_id WHERE u.seq BETWEEN ? AND ? ORDER BY t.name, t.seq""",
        (first_seq, last_seq)).fetchall()


def users_page(db, team_id, after, limit):
    """Up to limit of a team's members as their whole user rows, each with its membership's seq as member_seq
    (the page's position), after the membership whose seq is after, in the order they joined."""
    return db.execute(
        """SELECT m.seq AS member_seq, u.* FROM team_members m JOIN users u ON u.id = m.user_id
           WHERE m.team_id = ? AND m.seq > ? ORDER BY m.seq LIMIT ?""",
        (team_id, after, limit)).fetchall()


def first_names(db, span, shown):
    """The names of the first members (up to shown, in the order they joined) of each team whose seq is within
    span (first, last), each row with the team's count of members: team_id, name, total."""
    return db.execute(
        """SELECT team_id, name, total FROM (
               SELECT m.team_id, u.name, row_number() OVER (PARTITION BY m.team_id ORDER BY m.seq) AS n,
                      count(*) OVER (PARTITION BY m.team_id) AS total
               FROM team_members m JOIN teams t ON t.id = m.team_id JOIN users u ON u.id = m.user_id
               WHERE t.seq BETWEEN ? AND ?)
           WHERE n <= ? ORDER BY team_id, n""", (*span, shown))


def memberships_of(db, user_ids):
    """(user_id, team_id) of every membership of these users (the ids go in as one JSON array, one parameter
    whatever their count)."""
    return db.execute("SELECT user_id, team_id FROM team_members WHERE user_id IN (SELECT value FROM json_each(?))",
                      (json.dumps(list(user_ids)),)).fetchall()


def candidates(db, team_id, query, limit):
    """Up to limit of the active users who are not members of the team and whose name or email holds query
    (okr.store.search's rule: search.query_text's query, matched whatever the case), by name: id, name, email."""
    condition, parameter = search.matcher(db, query)
    return db.execute(
        f"""SELECT id, name, email FROM users WHERE is_active = 1
            AND ({condition.format(column="name")} OR {condition.format(column="email")})
            AND id NOT IN (SELECT user_id FROM team_members WHERE team_id = ?) ORDER BY name, seq LIMIT ?""",
        (parameter, parameter, team_id, limit)).fetchall()
