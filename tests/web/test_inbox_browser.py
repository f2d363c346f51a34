"""Mentions and the inbox in a real browser (Debian's Chromium, through Playwright): Ada picks Bob in the comment
form's Mention field (its suggestions) and comments; Bob's header counts one unread, his inbox shows the mention and
passes axe at 375 px, its link opens the comment, marking it read clears the count; his email arrives through an SMTP server
on loopback as the background process sends it. Skipped like tests/web/test_browser.py's tests without Chromium."""
import email
import email.policy

import pytest
from aiosmtpd.controller import Controller

from helpers import HttpClient, free_port, served_in_thread, user_with_password
from okr.outbound import notification_mail, smtp

try:  # tests/web is on sys.path (no __init__.py); as a package, the sibling modules
    import test_browser
    import test_edit_browser
    import test_people_browser
except ImportError:
    from . import test_browser, test_edit_browser, test_people_browser

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fast_hashing")]  # a server, a browser, an SMTP server

chromium, page_of = test_edit_browser.chromium, test_edit_browser.page_of
PASSWORD = "correct horse battery staple"


class Kept:
    """An SMTP handler that keeps what it is sent."""

    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(email.message_from_bytes(envelope.content, policy=email.policy.default))
        return "250 OK"


@pytest.fixture
def mailbox(app):
    kept, port = Kept(), free_port()
    controller = Controller(kept, hostname="127.0.0.1", port=port)
    controller.start()
    app.config.update(SMTP_URL=f"smtp://127.0.0.1:{port}", MAIL_FROM="okr@example.com",
                      BASE_URL="http://localhost:8080")
    yield kept
    controller.stop()


def test_a_mention_reaches_the_inbox_with_its_count_and_the_email(app, chromium, mailbox):
    with served_in_thread(app) as served:
        api = HttpClient(f"127.0.0.1:{served.port}")
        cycle = api.post("/v1/cycles", {"name": "2026 Q4"}).ok()
        objective = api.post("/v1/objectives", {"name": "Launch in Europe", "cycle_id": cycle["id"],
                                                "is_company": False, "is_personal": False}).ok()
        user_with_password(app, PASSWORD, "Ada Lovelace", "ada@example.com", "editor")
        user_with_password(app, PASSWORD, "Bob Stone", "bob@example.com", "viewer")

        ada = page_of(chromium)
        test_people_browser.sign_in(ada, served.url, "ada@example.com", PASSWORD)
        ada.goto(f"{served.url}/objectives/{objective['id']}")
        suggested = ada.locator("datalist#mention-people option").evaluate_all("o => o.map(x => x.value)")
        assert "Bob Stone" in suggested
        ada.get_by_label("Mention someone").fill("Bob Stone")
        ada.get_by_label("Add a comment").fill("can you check <the> numbers?")
        with ada.expect_navigation():
            ada.get_by_role("button", name="Comment", exact=True).click()
        assert ada.locator("a.mention").inner_text() == "@Bob Stone"
        assert "Inbox" == ada.locator("a.inbox-link").inner_text()  # her own comment told her nothing

        context = chromium.new_context(viewport={"width": 375, "height": 800}, bypass_csp=True)  # axe's script
        context.set_default_timeout(test_edit_browser.WAIT_MS)
        bob = context.new_page()  # on a phone
        test_people_browser.sign_in(bob, served.url, "bob@example.com", PASSWORD)
        assert bob.locator("a.inbox-link .badge").inner_text().startswith("1")
        bob.locator("a.inbox-link").click()
        item = bob.locator("ol.inbox li.unread")
        assert "Ada Lovelace mentioned you in a comment" in item.inner_text()
        assert "@Bob Stone can you check <the> numbers?" in item.inner_text()
        problems = test_browser.check_accessibility(bob, "inbox")
        assert bob.evaluate("document.documentElement.scrollWidth") <= 375
        with bob.expect_navigation():
            item.get_by_role("button", name="Mark read").click()
        assert bob.locator("ol.inbox li.unread").count() == 0
        assert bob.locator("a.inbox-link .badge").count() == 0
        bob.get_by_role("link", name="Launch in Europe").click()
        assert bob.url.endswith(f"/objectives/{objective['id']}#c-" + bob.url.rsplit("#c-", 1)[-1])
        assert bob.locator("li.comment:target a.mention").inner_text() == "@Bob Stone"

    assert notification_mail.send_due(app.config, smtp.settings(app.config)) == 1  # the background job's round
    [message] = mailbox.messages
    assert message["To"] == "Bob Stone <bob@example.com>"
    assert message["Subject"] == "Ada Lovelace mentioned you in a comment on “Launch in Europe”"
    assert problems == [], "\n".join(problems)
