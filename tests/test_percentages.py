"""Progress and confidence read the same in the weekly emails, the chat digest and the pages: "88%", not "0.88"
(okr.rules.percentages, which the pages' wording shares)."""
from okr.outbound import weekly_emails
from okr.rules import percentages
from okr.web import wording

KEY_RESULT = {"id": "k1", "name": "Reach 500 customers", "objective_name": "Grow revenue", "cycle": {"name": "Q2"},
              "current_value": "440.00", "progress": "0.88", "confidence": "0.70",
              "unit": None, "unit_position": None, "last_checkin_at": "2026-06-01T08:00:00Z"}
DIGEST = {"team": {"name": "Platform"}, "since": "2026-06-08", "week_ending": "2026-06-15", "base_url": None,
          "objectives": [{"id": "o1", "name": "Grow revenue", "cycle": "Q2", "progress": "0.88", "new": False,
                          "progress_week_ago": "0.73"}],
          "checkins": [{"created_at": "2026-06-12T10:00:00Z", "author_name": "Ada", "key_result_name": "Reach",
                        "objective_name": "Grow revenue", "value": "440.00", "confidence": "0.70", "comment": None,
                        "unit": None, "unit_position": None}],
          "more_checkins": False,
          "off_track": [{"id": "k2", "name": "Launch", "objective_name": "Grow revenue", "confidence": "0.20"}]}


def test_a_fraction_reads_as_a_percentage():
    assert [percentages.percent(f) for f in ("0.88", "0.70", "1.00", "0.00", "0.125", None)] == [
        "88%", "70%", "100%", "0%", "12.5%", ""]


def test_a_change_reads_in_percentage_points():
    assert percentages.points("0.88", "0.73") == "+15 points"
    assert percentages.points("0.50", "0.60") == "-10 points"
    assert percentages.points("0.51", "0.50") == "+1 point"
    assert percentages.points("0.50", "0.50") == "no change" and percentages.points(None, "0.50") is None


def test_the_pages_use_the_same_function():
    assert wording.percent is percentages.percent


def test_the_reminder_writes_progress_and_confidence_as_the_pages_do():
    _, body = weekly_emails.reminder_email({"person": {"name": "Olive"}, "key_results": [KEY_RESULT]}, None)
    assert "progress 88%, confidence 70%;" in body and "0.88" not in body and "0.70" not in body


def test_the_digest_email_writes_them_as_the_pages_do():
    text = "\n".join(weekly_emails.digest_lines(DIGEST))
    assert "- Grow revenue (Q2): 88% (73%, +15 points)" in text
    assert "Ada on Reach (Grow revenue): 440, confidence 70%" in text
    assert "- Launch (Grow revenue): confidence 20%," in text
    assert "0.88" not in text and "0.70" not in text


def test_the_chat_digest_writes_them_as_the_pages_do():
    message = weekly_emails.digest_slack_message(DIGEST)
    objectives, _, off_track = (block["text"]["text"] for block in message["blocks"][1:])
    assert "• Grow revenue: 88% (+15 points)" in objectives
    assert "• Launch (Grow revenue): confidence 20%" in off_track
