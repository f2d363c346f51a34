"""End to end: `okr serve` on loopback (waitress and its background process) runs a source that was just
attached, on its own, and Sync now answers over HTTP; the failing source's owner is emailed through a real
SMTP server (aiosmtpd)."""
import email
import email.policy
import os
import sqlite3
import time
from contextlib import closing

import pytest
from aiosmtpd.controller import Controller

from helpers import free_port, start_service, stop_process

pytestmark = pytest.mark.slow  # starts a server and an SMTP server


class Inbox:
    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(email.message_from_bytes(envelope.content, policy=email.policy.default))
        return "250 OK"


@pytest.fixture
def inbox():
    recorder, port = Inbox(), free_port()
    controller = Controller(recorder, hostname="127.0.0.1", port=port)
    controller.start()
    recorder.url = f"smtp://127.0.0.1:{port}"
    yield recorder
    controller.stop()


def eventually(check, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    return check()


def test_the_served_background_process_runs_a_new_source_and_a_failing_one_emails_its_owner(tmp_path, inbox):
    metrics = tmp_path / "metrics.db"
    with closing(sqlite3.connect(metrics)) as db:
        db.execute("CREATE TABLE figures (value REAL)")
        db.execute("INSERT INTO figures VALUES (42)")
        db.commit()
    database = tmp_path / "okr.db"
    process, http = start_service(free_port(), "--database", str(database), "--workers", "1",
                                  env={**os.environ, "OKR_SMTP_URL": inbox.url, "OKR_MAIL_FROM": "okr@example.com"})
    try:
        cycle = http.post("/v1/cycles", {"name": "Now"}).json()
        objective = http.post("/v1/objectives", {"name": "o", "cycle_id": cycle["id"], "is_company": False,
                                                 "is_personal": False}).json()
        kr = http.post(f"/v1/objectives/{objective['id']}/keyresults", {"name": "Answers", "type": "baseline"}).json()
        connection = http.post("/v1/connections", {"name": "Warehouse", "kind": "sqlite",
                                                   "address": str(metrics)}).json()
        assert http.request("PUT", f"/v1/keyresults/{kr['id']}/source", {
            "connection_id": connection["id"], "query": "SELECT value FROM figures"}).status == 200

        # Nobody syncs it: the background process runs it, due at once.
        assert eventually(lambda: http.get(f"/v1/keyresults/{kr['id']}").json()["current_value"] == "42.00")
        checkins = http.get(f"/v1/keyresults/{kr['id']}/checkins").json()["checkins"]
        assert [c["value"] for c in checkins] == ["0.00", "42.00"]
        events = http.get("/v1/events?type=checkin.created").json()["events"]
        assert events[-1]["actor"] == {"type": "source", "id": http.get(
            f"/v1/keyresults/{kr['id']}/source").json()["id"], "name": "Warehouse"}

        with closing(sqlite3.connect(metrics)) as db:
            db.execute("DROP TABLE figures")
            db.commit()
        with closing(sqlite3.connect(database)) as db:  # the owner: a person with an email
            db.execute("INSERT INTO users (id, name, email, email_key, is_active, created_at, role) VALUES "
                       "('9b2c4f3e-0000-4000-8000-000000000001', 'Ola', 'ola@example.com', 'ola@example.com', 1, "
                       "'2026-01-01T00:00:00Z', 'editor')")
            db.execute("UPDATE key_results SET owner_id = '9b2c4f3e-0000-4000-8000-000000000001'")
            db.commit()
        for run in range(1, 4):
            failed = http.post(f"/v1/keyresults/{kr['id']}/source/sync").json()
            assert (failed["outcome"], failed["failures"]) == ("failed", run)
        [message] = eventually(lambda: inbox.messages, timeout=10)
        assert message["To"] == "Ola <ola@example.com>"
        assert "no such table: figures" in message.get_content()
        assert http.get(f"/v1/keyresults/{kr['id']}").json()["current_value"] == "42.00"
    finally:
        stop_process(process)
