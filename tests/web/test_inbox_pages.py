"""The inbox's pages (issue 39): mentions shown as links in a comment (escaped), the ambiguity note beside it, the
comment form's Mention field and its suggestions, /inbox with its marking forms (a viewer's too), the unread count
in the header and the account page's email switches."""
import re
import sqlite3
from contextlib import closing

import pytest

from test_accounts import person, sign_in

pytestmark = pytest.mark.usefixtures("fast_hashing")

HTML = {"Accept": "text/html"}


def csrf(client, path):
    return re.search(r'name="csrf_token" value="([^"]+)"', client.get(path, headers=HTML).text).group(1)


def signed_in(app, name, email, role="editor"):
    client = app.test_client()
    user = person(app, name, email, role)
    assert sign_in(client, email).status_code == 303
    return client, user


def comment(client, page, body, mention=""):
    return client.post(f"{page}/comments", data={"csrf_token": csrf(client, page), "body": body,
                                                 "mention": mention})


def stored_notifications(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT person_id, kind, read_at, mail FROM notifications ORDER BY seq").fetchall()


@pytest.fixture
def team(app, objective):
    """Ada and Bob (editors) and Vi (a viewer), each signed in on a client of their own, made after `objective`."""
    return {"ada": signed_in(app, "Ada Lovelace", "ada@example.com"),
            "bob": signed_in(app, "Bob Stone", "bob@example.com"),
            "vi": signed_in(app, "Vi Ewer", "vi@example.com", "viewer")}


def test_a_mention_is_a_link_and_the_rest_stays_escaped(app, team, objective):
    ada, _ = team["ada"]
    page = f"/objectives/{objective['id']}"
    assert comment(ada, page, "<script>x</script> @Bob Stone <b>now</b>").status_code == 303
    body = re.search(r'<p class="comment-body">(.*?)</p>', ada.get(page).text, re.S).group(1)
    assert body == ('&lt;script&gt;x&lt;/script&gt; <a class="mention" href="/search?q=bob@example.com">'
                    '@Bob Stone</a> &lt;b&gt;now&lt;/b&gt;')


def test_a_name_two_people_share_gets_a_note_and_notifies_nobody(app, team, objective):
    ada, _ = team["ada"]
    person(app, "Bob Stone", "bob2@example.com", "editor")
    page = f"/objectives/{objective['id']}"
    comment(ada, page, "@Bob Stone which of you?")
    shown = ada.get(page).text
    assert '<span class="mention-ambiguous">@Bob Stone</span>' in shown
    assert "matches more than one person: write their email instead. Nobody was notified." in shown
    assert stored_notifications(app) == []
    # the suggestions offer the email where a name is shared, the name elsewhere
    suggested = re.findall(r'<option value="([^"]+)">', re.search(r"<datalist.*?</datalist>", shown, re.S).group(0))
    assert {"Ada Lovelace", "bob@example.com", "bob2@example.com", "Vi Ewer"} <= set(suggested)
    assert "Bob Stone" not in suggested


def test_the_mention_field_puts_the_person_picked_at_the_start(app, team, objective):
    ada, _ = team["ada"]
    _, bob = team["bob"]
    assert comment(ada, f"/objectives/{objective['id']}", "please look", mention="Bob Stone").status_code == 303
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        assert db.execute("SELECT body FROM comments").fetchone()[0] == "@Bob Stone please look"
    assert [(row[0], row[1]) for row in stored_notifications(app)] == [(bob["id"], "mentioned")]


def test_the_inbox_shows_the_count_and_marks_one_then_all_read(app, team, objective):
    ada, _ = team["ada"]
    bob, _ = team["bob"]
    page = f"/objectives/{objective['id']}"
    comment(ada, page, "@Bob Stone first")
    comment(ada, page, "@Bob Stone second")
    header = bob.get("/", headers=HTML).text
    assert re.search(r'class="inbox-link">Inbox <span class="badge">2<span class="hidden-label"> unread', header)
    inbox = bob.get("/inbox").text
    assert inbox.index("@Bob Stone second") < inbox.index("@Bob Stone first")  # newest first
    assert "<strong>Ada Lovelace</strong> mentioned you in a comment" in inbox
    first_id = re.findall(r'name="id" value="([^"]+)"', inbox)[-1]
    response = bob.post("/inbox/read", data={"csrf_token": csrf(bob, "/inbox"), "id": first_id})
    assert response.status_code == 303
    assert 'class="badge">1<' in bob.get("/inbox").text
    assert "@Bob Stone first" not in bob.get("/inbox?unread=1").text
    bob.post("/inbox/read", data={"csrf_token": csrf(bob, "/inbox"), "all": "1"})
    assert "Nothing unread" in bob.get("/inbox").text
    assert 'class="inbox-link">Inbox</a>' in bob.get("/inbox").text
    assert ada.get("/inbox").text.count('class="notification') == 0  # her own comments told her nothing


def test_a_mark_without_its_token_is_refused(app, team, objective):
    comment(team["ada"][0], f"/objectives/{objective['id']}", "@Bob Stone hi")
    bob = team["bob"][0]
    assert bob.post("/inbox/read", data={"all": "1"}).status_code == 400
    assert stored_notifications(app)[0][2] is None


def test_a_viewer_reads_and_marks_their_inbox(app, team, objective):
    comment(team["ada"][0], f"/objectives/{objective['id']}", "@Vi Ewer have a look")
    vi = team["vi"][0]
    assert "mentioned you" in vi.get("/inbox").text
    assert vi.post("/inbox/read", data={"csrf_token": csrf(vi, "/inbox"), "all": "1"}).status_code == 303
    assert stored_notifications(app)[0][2] is not None


def test_only_a_person_has_an_inbox(app, client):
    response = client.get("/inbox")  # open mode: nobody signed in
    assert response.status_code == 403 and "Only a person signed in as themselves has an inbox." in response.text


def test_the_account_page_switches_the_emails_mentions_on_by_default(app, team, objective):
    bob, user = team["bob"]
    page = bob.get("/account").text
    assert re.search(r'name="mentioned" value="on" checked', page)
    assert re.search(r'name="commented" value="on">', page)
    response = bob.post("/account/notification-email",
                        data={"csrf_token": csrf(bob, "/account"), "commented": "on"})
    assert response.status_code == 303
    page = bob.get("/account").text
    assert re.search(r'name="mentioned" value="on">', page) and re.search(r'name="commented" value="on" checked',
                                                                          page)
    comment(team["ada"][0], f"/objectives/{objective['id']}", "@Bob Stone no mail for this")
    assert stored_notifications(app) == [(user["id"], "mentioned", None, None)]


def test_a_viewer_switches_their_emails_too(app, team):
    vi, user = team["vi"]
    response = vi.post("/account/notification-email", data={"csrf_token": csrf(vi, "/account")})
    assert response.status_code == 303
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        assert db.execute("SELECT is_on FROM notification_email WHERE person_id = ? AND kind = 'mentioned'",
                          (user["id"],)).fetchone() == (0,)


def test_a_mention_in_a_reflection_is_a_link_on_the_retrospective(app, team, objective, cycle):
    ada, _ = team["ada"]
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:  # as the close-out writes it
        db.execute("UPDATE objectives SET reflection = ? WHERE id = ?",
                   ("<i>Thanks</i> to @Bob Stone", objective["id"]))
    shown = ada.get(f"/cycles/{cycle['id']}/retrospective", headers=HTML).text
    quoted = re.search(r'<blockquote class="reflection"><p>(.*?)</p></blockquote>', shown, re.S).group(1)
    assert quoted == ('&lt;i&gt;Thanks&lt;/i&gt; to <a class="mention" href="/search?q=bob@example.com">'
                      '@Bob Stone</a>')
