"""The weekly email and the chat digest show values as the pages do: with thousands separators and the key
result's unit ("$42,000", "1,250 users"), through okr.rules.quantities.shown."""
from contextlib import closing

import pytest

from helpers import make_cycle, make_key_result, make_objective
from okr.outbound import weekly_emails
from okr.store.schema import connect

from mail_helpers import BASE_URL, moment, person, team

pytestmark = pytest.mark.slow  # the mail tests' app starts an SMTP server

NOW = moment("2026-06-15T09:00:00Z")


@pytest.fixture
def figures(app, client, clock):
    """Platform (Ada) owns Revenue ($ before, from $10,000 to $60,000), checked in at $42,000 this week, and
    Users (after), made at 1,250 two weeks ago and not checked in since."""
    clock.now = "2026-06-01T08:00:00Z"
    ada = person(app, "Ada", "ada@example.com")
    platform = team(app, "Platform", ada)
    objective = make_objective(client, make_cycle(client, "Q2")["id"], "Grow", team_id=platform["id"])
    revenue = make_key_result(client, objective["id"], "Revenue", current_value="10000", target_value_min="60000",
                              owner_id=ada["id"])
    users = make_key_result(client, objective["id"], "Users", current_value="1250", target_value_min="2000",
                            owner_id=ada["id"])
    for key_result, unit, position in ((revenue, "$", "before"), (users, "users", "after")):
        response = client.patch(f"/v1/keyresults/{key_result['id']}", json={"unit": unit, "unit_position": position},
                                headers={"Content-Type": "application/merge-patch+json"})
        assert response.status_code == 200, response.get_json()
    clock.now = "2026-06-12T10:00:00Z"
    assert client.post(f"/v1/keyresults/{revenue['id']}/checkins", json={"value": "42000"}).status_code == 200
    return platform


def test_the_reminder_shows_values_with_separators_and_units(app, figures):
    with closing(connect(app.config["DATABASE"], 5000)) as db:
        [entry] = weekly_emails.reminders(db, NOW)
    _, body = weekly_emails.reminder_email(entry, BASE_URL)
    assert "Value 1,250 users, progress" in body
    assert "1250.00" not in body


def test_the_digest_and_the_chat_show_the_weeks_check_ins_with_their_unit(app, figures):
    with closing(connect(app.config["DATABASE"], 5000)) as db:
        digest = weekly_emails.team_digest(db, figures, NOW, BASE_URL)
    text = "\n".join(weekly_emails.digest_lines(digest))
    assert "on Revenue (Grow): $42,000, confidence" in text and "42000.00" not in text
    chat = weekly_emails.digest_slack_message(digest)["blocks"][2]["text"]["text"]
    assert "on Revenue: $42,000" in chat and "42000.00" not in chat
