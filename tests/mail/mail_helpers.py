"""What the email tests share besides fixtures (tests/mail/conftest.py): the links' base, the reminders' clock,
people and teams made through the store, and waiting for the pages' emails."""
import threading
from datetime import datetime, timezone

from okr.db import transaction
from okr.store import team_members, teams, users

# On loopback: the tests make their data over the API in open mode, which a public address would end
# (okr/accounts/access.py).
BASE_URL = "http://localhost:8080"


def person(app, name, email, role="editor", weekly_email=True):
    """A user made through the store; its row as a dict."""
    with app.app_context(), transaction() as db:
        user = users.create(db, name, email, role)
        if not weekly_email:
            users.set_weekly_email(db, user, False)
        return dict(db.execute("SELECT * FROM users WHERE id = ?", (user["id"],)).fetchone())


def team(app, name, *members):
    with app.app_context(), transaction() as db:
        row = teams.create(db, name)
        for member in members:
            team_members.add(db, row["id"], member["id"])
        return dict(row)


def moment(stamp):
    """An RFC 3339 UTC time as an aware datetime."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(timezone.utc)


REMINDERS_MADE = "2026-06-01T08:00:00Z"  # a Monday
NOW = moment("2026-06-15T09:00:00Z")  # two weeks later, a Monday at 09:00 UTC
WEEK = "2026-W25"


def mail_sent():
    """Waits for the pages' emailing threads (okr.accounts.password_links, started once an answer is sent) to end."""
    for thread in threading.enumerate():
        if thread.name.startswith("okr-mail"):
            thread.join(10)
