"""Comments on an objective or a key result: written, rewritten and deleted, each with its event placed under
what it is on (parent_id, and that one's cycle and team). Who may change one is okr.accounts.access's rule."""
from .. import clock
from ..clock import new_id
from ..errors import NotFound
from ..records import comment_json
from . import events, notifications, visibility
from .common import keyset_page

# A comment with where its events go: parent_id (its objective or key result), and that one's cycle and team
# (a key result's team is its objective's).
PLACED = """
SELECT c.*, coalesce(c.objective_id, c.key_result_id) AS parent_id,
       coalesce(o.cycle_id, k.cycle_id) AS cycle_id, coalesce(o.team_id, ko.team_id) AS team_id,
       coalesce(c.objective_id, k.objective_id) AS owning_objective_id
FROM comments c
LEFT JOIN objectives o ON o.id = c.objective_id
LEFT JOIN key_results k ON k.id = c.key_result_id
LEFT JOIN objectives ko ON ko.id = k.objective_id
WHERE c.id = ?"""


def get(db, comment_id):
    """The comment with this id, with parent_id, cycle_id and team_id; NotFound when there is none."""
    row = db.execute(PLACED, (comment_id,)).fetchone()
    if row is None:
        raise NotFound("comment")
    visibility.require(db, row["owning_objective_id"], "comment")
    return row


def record(db, action, row, place, before=None):
    events.record(db, "comment", action, row["id"], comment_json(row), before=before, parent_id=place["parent_id"],
                  cycle_id=place["cycle_id"], team_id=place["team_id"])


# Where a new comment's events go, by what it is on: (the parent's SQL, the comments column that names it).
PARENTS = {
    "objective": ("SELECT id, cycle_id, team_id, id AS objective_id FROM objectives WHERE id = ?", "objective_id"),
    "key_result": ("""SELECT k.id, k.cycle_id, o.team_id, k.objective_id FROM key_results k JOIN objectives o ON o.id = k.objective_id
                      WHERE k.id = ?""", "key_result_id"),
}


def parent(db, kind, parent_id):
    """The objective or key result (kind) a comment is on, as {"id", "cycle_id", "team_id"}; NotFound."""
    sql, _ = PARENTS[kind]
    row = db.execute(sql, (parent_id,)).fetchone()
    if row is None:
        raise NotFound(kind.replace("_", " "))
    visibility.require(db, row["objective_id"], kind.replace("_", " "))
    return row


def create(db, kind, parent_id, body, author_id):
    """A new comment on the objective or key result (kind) with parent_id, by author_id (None: a service key,
    open access); NotFound when that one does not exist."""
    on = parent(db, kind, parent_id)
    now = clock.utc_now()
    row = {"id": new_id(), "body": body, "objective_id": None, "key_result_id": None, "author_id": author_id,
           "created_at": now, "modified_at": now, "revision": 0}  # revision: the column's default
    row[PARENTS[kind][1]] = on["id"]
    db.execute(
        """INSERT INTO comments (id, objective_id, key_result_id, author_id, body, created_at, modified_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)""",
        (row["id"], row["objective_id"], row["key_result_id"], author_id, body, now, now),
    )
    record(db, "created", row, {"parent_id": on["id"], "cycle_id": on["cycle_id"], "team_id": on["team_id"]})
    tell(db, row, notifications.mentioned(db, body).person_ids, responsible(db, kind, on["id"]))
    return row


def responsible(db, kind, parent_id):
    """Who hears of a comment on what they answer for: an objective's assignee, a key result's owner."""
    sql = ("SELECT assignee_id FROM objectives WHERE id = ?" if kind == "objective"
           else "SELECT owner_id FROM key_results WHERE id = ?")
    row = db.execute(sql, (parent_id,)).fetchone()
    return [] if row is None or row[0] is None else [row[0]]


def tell(db, row, mentioned, others=()):
    """The notifications of a comment (its row): a mention to each person of mentioned, a comment to each of others
    not mentioned."""
    where = {"objective_id": row["objective_id"], "key_result_id": row["key_result_id"], "comment_id": row["id"]}
    notifications.notify(db, "mentioned", mentioned, **where)
    notifications.notify(db, "commented", [person for person in others if person not in mentioned], **where)


def update(db, stored, body):
    """The stored comment (get's row) with a new body; its revision moves on."""
    row = db.execute(
        """UPDATE comments SET body = ?, modified_at = ?, revision = revision + 1 WHERE id = ? RETURNING *""",
        (body, clock.utc_now(), stored["id"]),
    ).fetchone()
    if row is None:
        raise NotFound("comment")
    record(db, "updated", row, stored, before=comment_json(stored))
    tell(db, row, notifications.mentioned(db, body, before=stored["body"]).person_ids)
    return row


def delete(db, stored):
    """Deletes the stored comment (get's row)."""
    if db.execute("DELETE FROM comments WHERE id = ?", (stored["id"],)).rowcount == 0:
        raise NotFound("comment")
    record(db, "deleted", stored, stored)


def page(db, after, limit, column, parent_id):
    """A page of the comments on one objective or key result (column: objective_id or key_result_id), oldest
    first."""
    return keyset_page("comments", db, after, limit, {column: parent_id})


def latest(db, column, parent_id, limit):
    """Up to limit of the comments on one objective or key result (column: objective_id or key_result_id), the
    newest first, each with its author's name as author_name."""
    return db.execute(
        f"""SELECT c.*, u.name AS author_name FROM comments c LEFT JOIN users u ON u.id = c.author_id
            WHERE c.{column} = ? ORDER BY c.seq DESC LIMIT ?""",
        (parent_id, limit)).fetchall()
