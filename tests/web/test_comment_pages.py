"""Comments on the objective and key result pages (issue 24): the list and the form under each, plain text shown
escaped, refusals beside the field, and edit and delete for the author or an admin only."""
import html
import re
import sqlite3
from contextlib import closing

import pytest

from helpers import fetch
from test_accounts import person, sign_in

pytestmark = pytest.mark.usefixtures("fast_hashing")

HTML = {"Accept": "text/html"}


def csrf(client, path):
    return re.search(r'name="csrf_token" value="([^"]+)"', client.get(path, headers=HTML).text).group(1)


def page_of(kind, thing):
    return f"/objectives/{thing['id']}" if kind == "objective" else f"/keyresults/{thing['id']}"


def comment(client, page, body, token=None):
    """Posts the form under a page; the response."""
    return client.post(f"{page}/comments", data={"csrf_token": token or csrf(client, page), "body": body})


def stored(app):
    """The comments as stored: (id, body, objective_id, key_result_id, author_id), oldest first."""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute(
            "SELECT id, body, objective_id, key_result_id, author_id FROM comments ORDER BY seq").fetchall()


def comments_section(page):
    return re.search(r'<section class="comments".*?</section>', page, re.S).group(0)


def signed_in(app, name, email, role):
    """A client signed in as a new person of this role; with the person's row."""
    client = app.test_client()
    user = person(app, name, email, role)
    assert sign_in(client, email).status_code == 303
    return client, user


@pytest.mark.parametrize("kind", ["objective", "key_result"])
def test_the_form_under_the_page_adds_a_comment_and_goes_back_to_it(app, client, objective, key_result, kind):
    thing = objective if kind == "objective" else key_result
    page = page_of(kind, thing)
    assert 'class="comment-form"' in client.get(page).text and "No comments yet." in client.get(page).text
    response = comment(client, page, "Good progress\r\nkeep going")
    assert response.status_code == 303
    (row,) = stored(app)
    assert response.headers["Location"] == f"{page}#c-{row[0]}"
    assert row[1] == "Good progress\nkeep going"  # a browser's CRLF kept as one line break
    assert (row[2], row[3]) == ((objective["id"], None) if kind == "objective" else (None, key_result["id"]))
    listed = fetch(client, f"/v1/{'objectives' if kind == 'objective' else 'keyresults'}/{thing['id']}/comments")
    assert [c["id"] for c in listed["comments"]] == [row[0]]
    section = comments_section(client.get(page).text)
    assert f'<li class="comment" id="c-{row[0]}">' in section
    assert '<p class="comment-body">Good progress\nkeep going</p>' in section
    assert "Anonymous" in section  # open access writes no author


def test_html_in_a_comment_is_shown_as_text(app, client, objective):
    page = page_of("objective", objective)
    assert comment(client, page, '<script>alert("x")</script> **not bold**').status_code == 303
    shown = client.get(page).text
    assert "<script>alert" not in shown
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; **not bold**" in shown
    assert stored(app)[0][1] == '<script>alert("x")</script> **not bold**'


@pytest.mark.parametrize("body, refusal", [
    ("", "Fill this in."),
    (" \r\n ", "Fill this in."),
    ("x" * 10_001, "Shorten this to at most 10,000 characters."),
])
@pytest.mark.parametrize("kind", ["objective", "key_result"])
def test_an_empty_or_too_long_comment_is_refused_beside_the_field(app, client, objective, key_result, kind, body,
                                                                  refusal):
    page = page_of(kind, objective if kind == "objective" else key_result)
    response = comment(client, page, body)
    assert response.status_code == 400
    section = comments_section(response.text)
    assert f'<span class="error" id="body-error">{refusal}</span>' in section
    assert 'aria-invalid="true"' in section
    if body.strip():
        assert f">{body}</textarea>" in section  # what was typed stays
    assert stored(app) == []


def test_a_comment_on_nothing_is_a_404_page(client, objective):
    token = csrf(client, page_of("objective", objective))
    for page in ("/objectives/nope", "/keyresults/nope"):
        assert comment(client, page, "x", token).status_code == 404
        assert comment(client, page, "", token).status_code == 404


def test_without_the_csrf_token_nothing_is_written(app, client, objective, key_result):
    for page in (page_of("objective", objective), page_of("key_result", key_result)):
        assert client.post(f"{page}/comments", data={"body": "x"}).status_code == 400
        assert client.post(f"{page}/comments", data={"body": "x", "csrf_token": "wrong"}).status_code == 400
    assert comment(client, page_of("objective", objective), "kept").status_code == 303
    (row,) = stored(app)
    assert client.post(f"/comments/{row[0]}/edit", data={"body": "y"}).status_code == 400
    assert client.post(f"/comments/{row[0]}/delete", data={}).status_code == 400
    assert [r[1] for r in stored(app)] == ["kept"]


# --- who comments, who changes ---------------------------------------------------------------------------------


def test_a_signed_in_persons_comment_is_theirs_and_named(app, objective):
    person(app)  # an admin: sign-in is needed from now on
    client, user = signed_in(app, "Eddie Editor", "eddie@example.com", "editor")
    page = page_of("objective", objective)
    assert comment(client, page, "mine").status_code == 303
    assert stored(app)[0][4] == user["id"]
    section = comments_section(client.get(page).text)
    assert '<strong class="comment-author">Eddie Editor</strong>' in section


def edit_form(client, comment_id):
    """What the edit form sends as shown: its hidden fields and body."""
    page = client.get(f"/comments/{comment_id}/edit").text
    form = {name: html.unescape(re.search(rf'name="{name}" value="([^"]*)"', page).group(1))
            for name in ("csrf_token", "revision", "original")}
    form["body"] = html.unescape(re.search(r'<textarea id="body"[^>]*>([^<]*)</textarea>', page).group(1))
    return form


def test_only_the_author_or_an_admin_edits_or_deletes(app, objective):
    admin_client, _ = signed_in(app, "Maya Admin", "maya@example.com", "admin")
    author, _ = signed_in(app, "Eddie Editor", "eddie@example.com", "editor")
    other, _ = signed_in(app, "Olga Other", "olga@example.com", "editor")
    page = page_of("objective", objective)
    assert comment(author, page, "first").status_code == 303
    (row,) = stored(app)
    edit, delete = f"/comments/{row[0]}/edit", f"/comments/{row[0]}/delete"

    # someone else sees it without links, and is refused the forms and their posts
    assert edit not in other.get(page).text and delete not in other.get(page).text
    token = csrf(other, page)
    for path in (edit, delete):
        assert other.get(path).status_code == 403
        assert other.post(path, data={"csrf_token": token, "body": "theirs"}).status_code == 403
    assert stored(app)[0][1] == "first"

    # the author edits, through the form as shown
    assert edit in author.get(page).text and delete in author.get(page).text
    form = edit_form(author, row[0])
    assert form["body"] == "first"
    saved = author.post(edit, data={**form, "body": "second"})
    assert saved.status_code == 303 and saved.headers["Location"] == f"{page}#c-{row[0]}"
    assert stored(app)[0][1] == "second"
    refused = author.post(edit, data={**edit_form(author, row[0]), "body": "  "})
    assert refused.status_code == 400 and '<span class="error" id="body-error">Fill this in.</span>' in refused.text

    # an admin edits anyone's, and deletes after a confirmation
    assert admin_client.post(edit, data={**edit_form(admin_client, row[0]), "body": "moderated"}).status_code == 303
    assert stored(app)[0][1] == "moderated"
    asked = admin_client.get(delete)
    assert asked.status_code == 200 and "Delete this comment?" in asked.text
    assert admin_client.post(delete, data={"csrf_token": csrf(admin_client, page)}).status_code == 303
    assert stored(app) == []
    assert admin_client.get(edit).status_code == 404


def test_an_author_deletes_their_own(app, key_result):
    person(app)
    author, _ = signed_in(app, "Eddie Editor", "eddie@example.com", "editor")
    page = page_of("key_result", key_result)
    assert comment(author, page, "oops").status_code == 303
    (row,) = stored(app)
    done = author.post(f"/comments/{row[0]}/delete", data={"csrf_token": csrf(author, page)})
    assert done.status_code == 303 and done.headers["Location"] == f"{page}#comments"
    assert stored(app) == []


def test_a_save_over_someone_elses_change_is_a_conflict(app, client, objective):
    page = page_of("objective", objective)
    assert comment(client, page, "first").status_code == 303
    (row,) = stored(app)
    mine = edit_form(client, row[0])
    theirs = {**edit_form(client, row[0]), "body": "theirs"}
    assert client.post(f"/comments/{row[0]}/edit", data=theirs).status_code == 303
    conflict = client.post(f"/comments/{row[0]}/edit", data={**mine, "body": "mine"})
    assert conflict.status_code == 409 and "Someone else changed the comment" in conflict.text
    assert stored(app)[0][1] == "theirs"


def test_a_viewer_sees_the_comments_but_no_form(app, objective, key_result):
    admin_client, _ = signed_in(app, "Maya Admin", "maya@example.com", "admin")
    viewer, _ = signed_in(app, "Vi Ewer", "vi@example.com", "viewer")
    for page in (page_of("objective", objective), page_of("key_result", key_result)):
        assert comment(admin_client, page, "for everyone").status_code == 303
        shown = viewer.get(page).text
        section = comments_section(shown)
        assert "for everyone" in section and "Maya Admin" in section
        assert "<form" not in section and "/edit" not in section
        assert comment(viewer, page, "no", csrf(viewer, page)).status_code == 403
    comment_id = stored(app)[0][0]
    assert viewer.get(f"/comments/{comment_id}/edit").status_code == 403
    assert viewer.get(f"/comments/{comment_id}/delete").status_code == 403
    assert len(stored(app)) == 2
