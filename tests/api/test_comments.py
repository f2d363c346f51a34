"""Comments on objectives and key results (issue 24): written, listed a page at a time, changed and deleted by
their author or an admin, gone with what they are on, and each write an event."""
import json
import sqlite3
from contextlib import closing

import pytest

from helpers import TIMESTAMP, UUID4, assert_error, fetch, make_team, signed

COMMENT_FIELDS = {"id", "body", "objective_id", "key_result_id", "author_id", "created_at", "modified_at"}


def comment_on(client, path, body="Looks good", headers=None):
    response = client.post(f"{path}/comments", json={"body": body}, headers=headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def stored_events(app):
    """The comment events as stored: (type, resource_id, parent_id, cycle_id, team_id, data, changes)."""
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        rows = db.execute("""SELECT type, resource_id, parent_id, cycle_id, team_id, data, changes FROM events
                             WHERE type GLOB 'comment.*' ORDER BY seq""").fetchall()
    return [(*row[:5], json.loads(row[5]), json.loads(row[6]) if row[6] else None) for row in rows]


def count_comments(app):
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        return db.execute("SELECT count(*) FROM comments").fetchone()[0]


# --- writing and reading ---------------------------------------------------------------------------------


def test_a_comment_on_an_objective_is_answered_and_kept_as_sent(client, objective):
    body = "Two lines,\n<b>not bold</b> and *not emphasis*  "
    comment = comment_on(client, f"/v1/objectives/{objective['id']}", body)
    assert set(comment) == COMMENT_FIELDS
    assert UUID4.fullmatch(comment["id"]) and TIMESTAMP.fullmatch(comment["created_at"])
    assert comment["body"] == body  # plain text: nothing stripped, escaped or rendered
    assert (comment["objective_id"], comment["key_result_id"], comment["author_id"]) == (objective["id"], None, None)
    assert comment["created_at"] == comment["modified_at"]
    one = client.get(f"/v1/comments/{comment['id']}")
    assert one.get_json() == comment and one.headers["ETag"]


def test_a_comment_on_a_key_result_names_it(client, key_result):
    comment = comment_on(client, f"/v1/keyresults/{key_result['id']}")
    assert (comment["objective_id"], comment["key_result_id"]) == (None, key_result["id"])
    listed = fetch(client, f"/v1/keyresults/{key_result['id']}/comments")
    assert listed == {"next_page_token": None, "comments": [comment]}
    assert fetch(client, f"/v1/objectives/{key_result['objective_id']}/comments")["comments"] == []


@pytest.mark.parametrize("parent", ["objectives", "keyresults"])
def test_comments_are_listed_oldest_first_a_page_at_a_time(client, objective, key_result, parent):
    path = f"/v1/{parent}/{objective['id'] if parent == 'objectives' else key_result['id']}"
    made = [comment_on(client, path, f"comment {n}") for n in range(5)]
    pages, token = [], None
    while True:
        page = fetch(client, f"{path}/comments?page_size=2" + (f"&page_token={token}" if token else ""))
        pages.append(page["comments"])
        token = page["next_page_token"]
        if token is None:
            break
    assert [len(page) for page in pages] == [2, 2, 1]
    assert [c for page in pages for c in page] == made
    assert_error(client.get(f"{path}/comments?page_size=0"), 400, "page_size")
    assert_error(client.get(f"{path}/comments?page_token=!!"), 400, "page_token")


def test_the_body_is_1_to_10000_characters_not_only_whitespace(app, client, objective):
    path = f"/v1/objectives/{objective['id']}/comments"
    assert client.post(path, json={"body": "x" * 10_000}).status_code == 200
    assert client.post(path, json={"body": "é" * 10_000}).status_code == 200  # characters, not bytes
    before = count_comments(app)
    for body in ({"body": "x" * 10_001}, {"body": ""}, {"body": " \n\t"}, {"body": None}, {"body": 5}, {}):
        assert_error(client.post(path, json=body), 400, "body")
    assert_error(client.post(path, data=b"{not json"), 400)
    assert count_comments(app) == before


def test_unknown_parents_and_comments_are_404s(client, objective):
    unknown = "00000000-0000-4000-8000-000000000000"
    for path in (f"/v1/objectives/{unknown}/comments", f"/v1/keyresults/{unknown}/comments"):
        assert_error(client.get(path), 404)
        assert_error(client.post(path, json={"body": "x"}), 404)
        assert_error(client.post(path, json={"body": ""}), 404)  # whatever the body
    assert_error(client.get(f"/v1/objectives/{objective['id']}/comments/x"), 404)
    for method in ("GET", "PATCH", "DELETE"):
        body = assert_error(client.open(f"/v1/comments/{unknown}", method=method, json={"body": "x"}), 404)
        assert body["message"] == "comment not found"


def test_patch_changes_the_body_as_a_merge_patch_and_moves_the_etag(client, objective, clock):
    clock.now = "2026-03-01T10:00:00Z"
    comment = comment_on(client, f"/v1/objectives/{objective['id']}", "first")
    path = f"/v1/comments/{comment['id']}"
    tag = client.get(path).headers["ETag"]
    clock.now = "2026-03-01T11:00:00Z"
    changed = client.patch(path, json={"body": "second"}, headers={"If-Match": tag})
    assert changed.status_code == 200
    assert changed.get_json() == {**comment, "body": "second", "modified_at": "2026-03-01T11:00:00Z"}
    assert changed.headers["ETag"] == client.get(path).headers["ETag"] != tag
    assert_error(client.patch(path, json={"body": "third"}, headers={"If-Match": tag}), 412)
    assert_error(client.delete(path, headers={"If-Match": tag}), 412)
    # what was fetched may be sent back whole: the read-only fields are ignored
    back = client.patch(path, json={**changed.get_json(), "body": "third", "author_id": None, "id": "x"})
    assert back.status_code == 200 and back.get_json()["id"] == comment["id"]
    assert client.patch(path, json={}).get_json()["body"] == "third"  # nothing named, nothing changed
    for body in ({"body": None}, {"body": ""}, {"body": "y" * 10_001}):
        assert_error(client.patch(path, json=body), 400, "body")
    assert fetch(client, path)["body"] == "third"


def test_delete_answers_an_empty_200_and_the_comment_is_gone(client, objective):
    comment = comment_on(client, f"/v1/objectives/{objective['id']}")
    response = client.delete(f"/v1/comments/{comment['id']}")
    assert response.status_code == 200 and response.data == b"" and "Content-Type" not in response.headers
    assert_error(client.get(f"/v1/comments/{comment['id']}"), 404)
    assert fetch(client, f"/v1/objectives/{objective['id']}/comments")["comments"] == []
    assert_error(client.delete(f"/v1/comments/{comment['id']}"), 404)


@pytest.mark.parametrize("gone", ["objective", "key result"])
def test_deleting_the_objective_or_key_result_deletes_its_comments(app, client, objective, key_result, gone):
    on_objective = comment_on(client, f"/v1/objectives/{objective['id']}")
    on_key_result = comment_on(client, f"/v1/keyresults/{key_result['id']}")
    path = f"/v1/objectives/{objective['id']}" if gone == "objective" else f"/v1/keyresults/{key_result['id']}"
    assert client.delete(path).status_code == 200
    assert_error(client.get(f"/v1/comments/{on_key_result['id']}"), 404)
    kept = client.get(f"/v1/comments/{on_objective['id']}").status_code
    assert kept == (404 if gone == "objective" else 200)
    assert count_comments(app) == (0 if gone == "objective" else 1)


def test_commenting_leaves_the_spec_resources_as_they_were(client, objective, key_result):
    before = {path: client.get(path) for path in (f"/v1/objectives/{objective['id']}",
                                                  f"/v1/keyresults/{key_result['id']}")}
    comment_on(client, f"/v1/objectives/{objective['id']}")
    comment_on(client, f"/v1/keyresults/{key_result['id']}")
    for path, answer in before.items():
        after = client.get(path)
        assert after.get_json() == answer.get_json() and "comments" not in after.get_json()
        assert after.headers["ETag"] == answer.headers["ETag"]


# --- events ------------------------------------------------------------------------------------------------


def test_each_write_records_its_event_placed_under_what_it_is_on(app, client, cycle, clock):
    # clock: every write in one second, so an update's event names no change of modified_at
    team = make_team(client)
    objective = client.post("/v1/objectives", json={"name": "o", "cycle_id": cycle["id"], "is_company": False,
                                                    "is_personal": False, "team_id": team["id"]}).get_json()
    key_result = client.post(f"/v1/objectives/{objective['id']}/keyresults",
                             json={"name": "k", "type": "baseline"}).get_json()
    first = comment_on(client, f"/v1/objectives/{objective['id']}", "one")
    second = comment_on(client, f"/v1/keyresults/{key_result['id']}", "two")
    changed = client.patch(f"/v1/comments/{second['id']}", json={"body": "2"}).get_json()
    assert client.delete(f"/v1/comments/{first['id']}").status_code == 200
    place = (cycle["id"], team["id"])
    assert stored_events(app) == [
        ("comment.created", first["id"], objective["id"], *place, first, None),
        ("comment.created", second["id"], key_result["id"], *place, second, None),
        ("comment.updated", second["id"], key_result["id"], *place, changed, {"body": ["two", "2"]}),
        ("comment.deleted", first["id"], objective["id"], *place, first, None),
    ]


def test_a_refused_write_records_no_event(app, client, objective):
    assert_error(client.post(f"/v1/objectives/{objective['id']}/comments", json={"body": ""}), 400)
    comment = comment_on(client, f"/v1/objectives/{objective['id']}")
    assert_error(client.patch(f"/v1/comments/{comment['id']}", json={"body": " "}), 400)
    assert [event[0] for event in stored_events(app)] == ["comment.created"]


# --- who writes, who changes -------------------------------------------------------------------------------


def test_the_author_is_the_keys_user_and_none_for_a_service_key(client, make_person, objective, key):
    editor = make_person("editor")
    mine = comment_on(client, f"/v1/objectives/{objective['id']}", headers=editor.headers())
    assert mine["author_id"] == editor.id
    anonymous = comment_on(client, f"/v1/objectives/{objective['id']}", headers=signed(key))
    assert anonymous["author_id"] is None
    # an author_id sent is not read: nobody writes in another's name
    named = client.post(f"/v1/objectives/{objective['id']}/comments", headers=signed(key),
                        json={"body": "x", "author_id": editor.id})
    assert named.get_json()["author_id"] is None


def test_only_the_author_or_an_admin_changes_a_comment(app, client, make_person, objective, key):
    author, other, admin = make_person("editor"), make_person("editor"), make_person("admin")
    comment = comment_on(client, f"/v1/objectives/{objective['id']}", "mine", headers=author.headers())
    path = f"/v1/comments/{comment['id']}"
    for headers in (other.headers(), signed(key)):
        body = assert_error(client.patch(path, json={"body": "theirs"}, headers=headers), 403)
        assert body["message"] == "only a comment's author or an admin may change or delete it"
        assert_error(client.delete(path, headers=headers), 403)
    assert fetch_signed(client, path, author)["body"] == "mine"
    assert client.patch(path, json={"body": "edited"}, headers=author.headers()).status_code == 200
    assert client.patch(path, json={"body": "moderated"}, headers=admin.headers()).status_code == 200
    assert fetch_signed(client, path, other)["body"] == "moderated"
    assert client.delete(path, headers=admin.headers()).status_code == 200
    assert [event[0] for event in stored_events(app)] == ["comment.created", "comment.updated", "comment.updated",
                                                          "comment.deleted"]


def test_an_author_deletes_their_own_and_a_service_keys_comment_is_an_admins_to_change(client, make_person,
                                                                                     objective, key):
    author, admin = make_person("editor"), make_person("admin")
    comment = comment_on(client, f"/v1/objectives/{objective['id']}", headers=author.headers())
    assert client.delete(f"/v1/comments/{comment['id']}", headers=author.headers()).status_code == 200
    anonymous = comment_on(client, f"/v1/objectives/{objective['id']}", headers=signed(key))
    assert_error(client.patch(f"/v1/comments/{anonymous['id']}", json={"body": "x"}, headers=signed(key)), 403)
    assert client.delete(f"/v1/comments/{anonymous['id']}", headers=admin.headers()).status_code == 200


def fetch_signed(client, path, person):
    response = client.get(path, headers=person.headers())
    assert response.status_code == 200
    return response.get_json()


def test_viewers_and_read_only_keys_read_comments_but_write_none(app, client, make_person, objective):
    admin = make_person("admin")
    comment = comment_on(client, f"/v1/objectives/{objective['id']}", headers=admin.headers())
    viewer, read_only = make_person("viewer"), make_person("admin", read_only=True)
    for person in (viewer, read_only):
        assert fetch_signed(client, f"/v1/objectives/{objective['id']}/comments", person)["comments"] == [comment]
        assert fetch_signed(client, f"/v1/comments/{comment['id']}", person) == comment
        assert_error(client.post(f"/v1/objectives/{objective['id']}/comments", json={"body": "x"},
                                 headers=person.headers()), 403)
        assert_error(client.patch(f"/v1/comments/{comment['id']}", json={"body": "x"}, headers=person.headers()), 403)
        assert_error(client.delete(f"/v1/comments/{comment['id']}", headers=person.headers()), 403)
    assert count_comments(app) == 1
    assert [event[0] for event in stored_events(app)] == ["comment.created"]


def test_while_auth_is_off_anyone_changes_any_comment(client, objective):
    comment = comment_on(client, f"/v1/objectives/{objective['id']}")
    assert client.patch(f"/v1/comments/{comment['id']}", json={"body": "x"}).status_code == 200
    assert client.delete(f"/v1/comments/{comment['id']}").status_code == 200
