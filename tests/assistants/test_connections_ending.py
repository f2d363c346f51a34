"""When a person's connected assistants end for good, all at once, personal tokens and OAuth grants alike: a
deactivation and a change of role (on the People page, by the commands, by an import), a new password, signing out
everywhere; reactivating the person or giving the old role back brings none back. Connecting one is on the record
(assistant.connected), its token never."""
import json
import re
import sqlite3

import pytest

from oauth_calls import HTML, PASSWORD, browser_of, connect, csrf, tokens, whoami


def personal_token(browser):
    page = browser.post("/account/assistants", data={"csrf_token": csrf(browser, "/account"), "name": "Claude Desktop",
                                                     "rights": "write", "days": "90"}, headers=HTML)
    return re.search(r'id="new-token" class="link" value="([^"]+)"', page.get_data(as_text=True)).group(1)


def form(browser, path, **fields):
    return browser.post(path, data={"csrf_token": csrf(browser, "/account"), **fields}, headers=HTML)


class Scene:
    """Maya (an editor, signed in in browser) and what changes her: an admin's People page, the commands."""

    def __init__(self, app, runner, tmp_path):
        self.app, self.runner, self.tmp_path = app, runner, tmp_path
        self.admin = browser_of(app, "admin", "ada@example.com")
        self.browser = browser_of(app)
        with sqlite3.connect(app.config["DATABASE"]) as db:
            self.maya = db.execute("SELECT id FROM users WHERE email = 'maya@example.com'").fetchone()[0]

    def people_page(self, what, **fields):
        return form(self.admin, f"/people/{self.maya}/{what}", **fields)

    def command(self, *args):
        assert self.runner.invoke(args=list(args)).exit_code == 0

    def imported(self, **changes):
        """okr import --merge of an export where Maya's record has these changes."""
        path = self.tmp_path / f"export-{changes['role']}.json"
        self.command("export", str(path))
        data = json.loads(path.read_text())
        for record in data["users"]:
            if record["email"] == "maya@example.com":
                record.update(changes)
        path.write_text(json.dumps(data))
        self.command("import", "--merge", str(path))


# How a person's assistants end, and how the person is given back what they had (None: nothing to give back).
ENDINGS = {
    "deactivated on the People page": (lambda scene: scene.people_page("status", is_active="false"),
                                       lambda scene: scene.people_page("status", is_active="true")),
    "made a viewer on the People page": (lambda scene: scene.people_page("role", role="viewer"),
                                         lambda scene: scene.people_page("role", role="editor")),
    "deactivated by the command": (lambda scene: scene.command("users", "deactivate", "maya@example.com"),
                                   lambda scene: scene.command("users", "activate", "maya@example.com")),
    "made a viewer by an import": (lambda scene: scene.imported(role="viewer"),
                                   lambda scene: scene.imported(role="editor")),
    "a new password": (lambda scene: form(scene.browser, "/account/password", current_password=PASSWORD,
                                          password="a brand new password"), None),
    "signed out everywhere": (lambda scene: form(scene.browser, "/account/sign-out-everywhere"), None),
}


@pytest.mark.parametrize("ending", ENDINGS)
def test_every_assistant_of_the_person_ends_for_good(app, client, runner, tmp_path, ending):
    end, give_back = ENDINGS[ending]
    scene = Scene(app, runner, tmp_path)
    personal = personal_token(scene.browser)
    client_id, issued = connect(client, scene.browser)
    answer = end(scene)
    assert answer is None or answer.status_code in (200, 303)
    if give_back is not None:
        give_back(scene)
    for token in (personal, issued["access_token"]):
        assert whoami(client, token).status_code == 401
    refreshed = tokens(client, grant_type="refresh_token", refresh_token=issued["refresh_token"], client_id=client_id)
    assert refreshed.status_code == 400 and refreshed.get_json()["error"] == "invalid_grant"
    with sqlite3.connect(app.config["DATABASE"]) as db:
        assert db.execute("SELECT count(*) FROM assistant_grants").fetchone() == (0,)


def test_another_persons_assistants_stay(app, client):
    browser = browser_of(app)
    other = browser_of(app, "editor", "bob@example.com")
    kept = personal_token(other)
    form(browser, "/account/sign-out-everywhere")
    assert whoami(client, kept).status_code == 200


def test_connecting_an_assistant_is_on_the_record_without_its_token(app, client):
    browser = browser_of(app)
    personal = personal_token(browser)
    client_id, issued = connect(client, browser, rights="read")
    with sqlite3.connect(app.config["DATABASE"]) as db:
        db.row_factory = sqlite3.Row
        events = db.execute("SELECT * FROM events WHERE type = 'assistant.connected' ORDER BY seq").fetchall()
        hashes = [value for row in db.execute("SELECT token_hash, refresh_hash FROM assistant_grants") for value in row]
    assert [json.loads(event["data"])["kind"] for event in events] == ["personal_token", "oauth"]
    for event in events:
        assert json.loads(event["actor"]) == {"type": "user", "id": event["person_id"], "name": "Maya Lee"}
        for secret in [personal, issued["access_token"], issued["refresh_token"], *filter(None, hashes)]:
            assert secret not in event["data"] and secret not in event["actor"]
    feed = browser.get("/activity", headers=HTML).get_data(as_text=True)
    assert "connected the assistant “Claude Desktop” (read and write, with a personal token)" in feed
    assert "connected the assistant “Claude” (read only, signed in by itself)" in feed

