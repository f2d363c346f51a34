"""The weekly team digest: each team's objectives' progress this week against last, the week's check-ins with
their comments, what went off track; as email to its members, and as a Slack message (issue 24)."""
from contextlib import closing

import pytest

from helpers import make_cycle, make_key_result, make_objective
from okr.outbound import weekly_emails
from okr.store.schema import connect

from mail_helpers import BASE_URL, moment, person, team

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser

NOW = moment("2026-06-15T09:00:00Z")


@pytest.fixture
def world(app, client, clock):
    """Team Platform (Ada, Bob; Quiet turned weekly emails off) has "Grow revenue" with two key results made
    two weeks ago; this week Ada checked in on one (with a comment) and the other went off track."""
    clock.now = "2026-06-01T08:00:00Z"
    ada, bob = person(app, "Ada", "ada@example.com"), person(app, "Bob", "bob@example.com")
    quiet = person(app, "Quiet", "quiet@example.com", weekly_email=False)
    loner = person(app, "Loner", "loner@example.com")
    platform = team(app, "Platform", ada, bob, quiet)
    team(app, "Empty", loner)  # no objectives: no digest
    cycle = make_cycle(client, "Q2")
    objective = make_objective(client, cycle["id"], "Grow revenue", team_id=platform["id"])
    customers = make_key_result(client, objective["id"], "Reach 500 customers", current_value="100",
                                target_value_min="500", confidence="0.8")
    launch = make_key_result(client, objective["id"], "Launch", type="milestone", target_value_min="1.00",
                             confidence="0.8")
    clock.now = "2026-06-12T10:00:00Z"
    for key_result, body in ((customers, {"value": "300", "confidence": "0.8", "comment": "Big week.\nTwo deals.",
                                          "author_id": ada["id"]}),
                             (launch, {"value": "0", "confidence": "0.2"})):
        assert client.post(f"/v1/keyresults/{key_result['id']}/checkins", json=body).status_code == 200
    return platform, objective, customers, launch


def digest_of(app, platform):
    with closing(connect(app.config["DATABASE"], 5000)) as db:
        return weekly_emails.team_digest(db, platform, NOW, BASE_URL)


def test_the_digest_has_progress_now_and_a_week_ago(app, world):
    platform, objective, customers, launch = world
    digest = digest_of(app, platform)
    # A week ago: 100 of 500 from 100 (0.00) and the launch not done; now 300: (300-100)/(500-100) = 0.50, mean 0.25.
    assert digest["objectives"] == [{"id": objective["id"], "name": "Grow revenue", "cycle": "Q2",
                                     "progress": "0.25", "new": False, "progress_week_ago": "0.00"}]
    # The week's two check-ins, not the values the key results were made with; the launch's has no author.
    assert [(c["key_result_name"], c["value"], c["author_name"], c["comment"]) for c in digest["checkins"]] == [
        ("Reach 500 customers", "300.00", "Ada", "Big week.\nTwo deals."), ("Launch", "0.00", None, None)]
    assert digest["off_track"] == [{"id": launch["id"], "name": "Launch", "objective_name": "Grow revenue",
                                    "confidence": "0.20", "was": "no_update"}]


def test_nothing_new_in_a_quiet_week(app, world):
    platform = world[0]
    with closing(connect(app.config["DATABASE"], 5000)) as db:
        later = weekly_emails.team_digest(db, platform, moment("2026-06-29T09:00:00Z"))
    assert later["checkins"] == [] and later["off_track"] == []
    assert later["objectives"][0]["progress"] == later["objectives"][0]["progress_week_ago"] == "0.25"
    text = "\n".join(weekly_emails.digest_lines(later))
    assert "No check-ins this week." in text and "Nothing went off track." in text and "no change" in text


def test_each_member_with_weekly_emails_on_gets_the_digest(app, world, smtp_server, settings):
    result = weekly_emails.send_round(app.config, settings, NOW, "2026-W25")
    assert result.complete
    assert sorted(email.person["name"] for email in result.sent if email.kind == "digest") == ["Ada", "Bob"]
    [message] = smtp_server.to("bob@example.com")
    assert message["Subject"] == "Weekly digest: Platform"
    body = message.get_content().replace("\r\n", "\n")
    assert "Grow revenue (Q2): 25% (0%, +25 points)" in body
    assert "2026-06-12 Ada on Reach 500 customers (Grow revenue): 300, confidence 80%\n  Big week.\n  Two deals." in body
    assert "someone on Launch" in body
    assert "Went off track:\n- Launch (Grow revenue): confidence 20%" in body
    assert f"{BASE_URL}/objectives/{world[1]['id']}" in body
    assert not smtp_server.to("quiet@example.com") and not smtp_server.to("loner@example.com")


def test_the_slack_message_is_an_incoming_webhook_body(app, world):
    platform, objective, _, _ = world
    message = weekly_emails.digest_slack_message(digest_of(app, platform))
    assert set(message) == {"text", "blocks"} and message["text"].startswith("Platform: the week to 2026-06-15")
    assert "1 objectives, 2 check-ins, 1 went off track" in message["text"]
    header, *sections = message["blocks"]
    assert header == {"type": "header", "text": {"type": "plain_text", "text": "Platform: the week to 2026-06-15"}}
    assert [block["type"] for block in sections] == ["section"] * 3
    assert all(block["text"]["type"] == "mrkdwn" and len(block["text"]["text"]) <= 3000 for block in sections)
    assert f"<{BASE_URL}/objectives/{objective['id']}|Grow revenue>: 25% (+25 points)" in sections[0]["text"]["text"]
    assert "Big week." in sections[1]["text"]["text"] and "Launch" in sections[2]["text"]["text"]


def test_the_slack_message_escapes_what_slack_would_read_as_markup(app, world):
    digest = {**digest_of(app, world[0]), "base_url": None}
    digest["objectives"][0]["name"] = "<!channel> & co"
    text = weekly_emails.digest_slack_message(digest)["blocks"][1]["text"]["text"]
    assert "&lt;!channel&gt; &amp; co" in text and "<!channel>" not in text
