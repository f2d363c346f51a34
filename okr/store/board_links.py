"""Board links: secret URLs that each open one cycle's wallboard and nothing else (okr.web.board_pages).

Only the token's SHA-256 is stored: the full link is shown once, to the admin who makes it. Revoking one
deletes it; deleting its cycle deletes it too.
"""
import secrets

from .. import clock
from ..clock import new_id
from ..errors import NotFound
from .sessions import token_hash

LABEL_MAX = 100


def create(db, cycle_id, label, created_by=None):
    """A new board link to the cycle (its row) and its token, for the URL alone."""
    token = secrets.token_urlsafe(32)
    link_id = new_id()
    db.execute("INSERT INTO board_links (id, cycle_id, token_hash, label, created_by, created_at) "
               "VALUES (?, ?, ?, ?, ?, ?)", (link_id, cycle_id, token_hash(token), label, created_by, clock.utc_now()))
    return link_id, token


def cycle_of(db, token):
    """The id of the cycle a live board link with this token opens, or None."""
    row = db.execute("SELECT cycle_id FROM board_links WHERE token_hash = ?", (token_hash(token),)).fetchone()
    return None if row is None else row["cycle_id"]


def listed(db):
    """Every board link, newest first, with its cycle's name and its maker's (never its token: none is kept)."""
    return db.execute(
        """SELECT b.id, b.label, b.created_at, b.cycle_id, c.name AS cycle_name, u.name AS created_by_name
           FROM board_links b JOIN cycles c ON c.id = b.cycle_id LEFT JOIN users u ON u.id = b.created_by
           ORDER BY b.seq DESC""").fetchall()


def get(db, link_id):
    row = db.execute("SELECT b.id, b.label, c.name AS cycle_name FROM board_links b JOIN cycles c "
                     "ON c.id = b.cycle_id WHERE b.id = ?", (link_id,)).fetchone()
    if row is None:
        raise NotFound("board link")
    return row


def revoke(db, link_id):
    """Deletes the board link: its URL opens nothing from now on."""
    if db.execute("DELETE FROM board_links WHERE id = ?", (link_id,)).rowcount == 0:
        raise NotFound("board link")
