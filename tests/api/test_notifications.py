"""The inbox through the API (issue 39): GET /v1/me/notifications and POST /v1/me/notifications/read, and what
writes a notification: a mention in a comment (made or edited) or a reflection, a comment on what one answers for,
one's key result changed by someone else; never one's own action, an ambiguous name, or what one may not see."""
import sqlite3
from contextlib import closing

import pytest

from helpers import assert_error, signed
from okr.api.paging import encode_token


def inbox(client, person, **query):
    response = client.get("/v1/me/notifications", query_string=query, headers=person.headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def kinds(client, person):
    return [(n["kind"], n["comment_body"]) for n in inbox(client, person)["notifications"]]


def comment(client, person, path, body):
    response = client.post(f"{path}/comments", json={"body": body}, headers=person.headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def mark(client, person, body):
    return client.post("/v1/me/notifications/read", json=body, headers=person.headers())


@pytest.fixture
def people(make_person, objective):
    """Ada (an editor), Bob (an editor) and Vi (a viewer), made after `objective` (so nobody's)."""
    return {"ada": make_person("editor", name="Ada Lovelace", email="ada@example.com"),
            "bob": make_person("editor", name="Bob Stone", email="bob@example.com"),
            "vi": make_person("viewer", name="Vi Ewer", email="vi@example.com")}


def test_a_mention_notifies_the_person_named_with_who_and_what(client, people, objective):
    ada, bob = people["ada"], people["bob"]
    made = comment(client, ada, f"/v1/objectives/{objective['id']}", "Over to you, @bob stone.")
    page = inbox(client, bob)
    assert page["next_page_token"] is None
    [note] = page["notifications"]
    assert note["kind"] == "mentioned" and note["read_at"] is None
    assert (note["actor_id"], note["actor_name"]) == (ada.id, "Ada Lovelace")
    assert (note["objective_id"], note["objective_name"]) == (objective["id"], objective["name"])
    assert (note["comment_id"], note["comment_body"]) == (made["id"], "Over to you, @bob stone.")
    assert inbox(client, ada)["notifications"] == []  # the author is told nothing


def test_an_email_mentions_too_and_names_are_read_as_they_are_now(client, people, objective):
    comment(client, people["ada"], f"/v1/objectives/{objective['id']}", "cc @BOB@example.com")
    client.patch(f"/v1/objectives/{objective['id']}", json={"name": "Renamed"}, headers=people["ada"].headers())
    [note] = inbox(client, people["bob"])["notifications"]
    assert note["objective_name"] == "Renamed"


def test_mentioning_yourself_notifies_nobody(client, people, objective):
    comment(client, people["ada"], f"/v1/objectives/{objective['id']}", "note to @Ada Lovelace: do it")
    assert inbox(client, people["ada"])["notifications"] == []


def test_an_ambiguous_name_notifies_nobody_but_an_email_does(client, make_person, people, objective):
    twin = make_person("editor", name="Bob Stone", email="bob2@example.com")
    comment(client, people["ada"], f"/v1/objectives/{objective['id']}", "@Bob Stone, which one?")
    assert inbox(client, people["bob"])["notifications"] == inbox(client, twin)["notifications"] == []
    comment(client, people["ada"], f"/v1/objectives/{objective['id']}", "@bob2@example.com you")
    assert [n["kind"] for n in inbox(client, twin)["notifications"]] == ["mentioned"]
    assert inbox(client, people["bob"])["notifications"] == []


def test_an_edit_notifies_only_the_newly_mentioned(client, people, objective):
    ada, bob, vi = people["ada"], people["bob"], people["vi"]
    made = comment(client, ada, f"/v1/objectives/{objective['id']}", "@Bob Stone look")
    response = client.patch(f"/v1/comments/{made['id']}", json={"body": "@Bob Stone and @Vi Ewer look"},
                            headers=ada.headers())
    assert response.status_code == 200
    assert len(inbox(client, bob)["notifications"]) == 1
    assert [n["kind"] for n in inbox(client, vi)["notifications"]] == ["mentioned"]


def test_a_deleted_comment_takes_its_mention_out_of_the_inbox(client, people, objective):
    made = comment(client, people["ada"], f"/v1/objectives/{objective['id']}", "@Bob Stone see")
    assert len(inbox(client, people["bob"])["notifications"]) == 1
    assert client.delete(f"/v1/comments/{made['id']}", headers=people["ada"].headers()).status_code == 200
    assert inbox(client, people["bob"])["notifications"] == []


def test_a_comment_tells_the_assignee_and_the_owner_but_never_the_author(client, people, cycle):
    ada, bob = people["ada"], people["bob"]
    objective = client.post("/v1/objectives", headers=ada.headers(), json={
        "name": "Ship", "cycle_id": cycle["id"], "is_company": False, "is_personal": False,
        "assignee_id": bob.id}).get_json()
    comment(client, ada, f"/v1/objectives/{objective['id']}", "How is it going?")
    assert kinds(client, bob) == [("commented", "How is it going?")]
    kr = client.post(f"/v1/objectives/{objective['id']}/keyresults", headers=bob.headers(), json={
        "name": "Reach", "type": "positive", "target_value_min": "10", "owner_id": ada.id}).get_json()
    comment(client, bob, f"/v1/keyresults/{kr['id']}", "Yours, @Ada Lovelace")
    # mentioned and owner: one notification, the mention
    assert [n["kind"] for n in inbox(client, ada)["notifications"]][:1] == ["mentioned"]
    comment(client, bob, f"/v1/objectives/{objective['id']}", "my own objective")
    assert len(inbox(client, bob)["notifications"]) == 1


def test_a_key_result_changed_by_someone_else_tells_its_owner(client, people, objective, key):
    ada, bob = people["ada"], people["bob"]
    kr = client.post(f"/v1/objectives/{objective['id']}/keyresults", headers=signed(key), json={
        "name": "Reach", "type": "positive", "target_value_min": "10", "owner_id": ada.id}).get_json()
    assert inbox(client, ada)["notifications"] == []  # made, not changed
    assert client.post(f"/v1/keyresults/{kr['id']}/checkins", json={"value": "2"},
                       headers=signed(key)).status_code == 200  # a service key is someone else
    assert [(n["kind"], n["actor_id"]) for n in inbox(client, ada)["notifications"]] == [("changed", None)]
    assert mark(client, ada, {"all": True}).status_code == 200
    assert client.post(f"/v1/keyresults/{kr['id']}/checkins", json={"value": "3"},
                       headers=ada.headers()).status_code == 200
    assert inbox(client, ada, unread="true")["notifications"] == []  # her own check-in
    assert client.post(f"/v1/keyresults/{kr['id']}/checkins", json={"value": "4"},
                       headers=bob.headers()).status_code == 200
    assert client.patch(f"/v1/keyresults/{kr['id']}", json={"name": "Reach more"},
                        headers=bob.headers()).status_code == 200
    notes = inbox(client, ada, unread="true")["notifications"]
    assert [(n["kind"], n["actor_id"], n["key_result_name"]) for n in notes] == [
        ("changed", bob.id, "Reach more"), ("changed", bob.id, "Reach more")]
    assert notes[0]["objective_id"] == objective["id"]


def test_a_reflection_mention_notifies(client, people, objective):
    response = client.patch(f"/v1/objectives/{objective['id']}", headers=people["ada"].headers(),
                            json={"reflection": "Thanks to @Bob Stone it went well"})
    assert response.status_code == 200, response.get_json()
    [note] = inbox(client, people["bob"])["notifications"]
    assert (note["kind"], note["objective_id"], note["comment_id"]) == ("mentioned", objective["id"], None)


def test_an_inactive_person_is_never_notified(app, client, runner, people, objective):
    assert runner.invoke(args=["users", "deactivate", "bob@example.com"]).exit_code == 0
    comment(client, people["ada"], f"/v1/objectives/{objective['id']}", "@Bob Stone?")
    with closing(sqlite3.connect(app.config["DATABASE"])) as db:
        assert db.execute("SELECT count(*) FROM notifications").fetchone()[0] == 0


def test_a_hidden_objective_never_notifies_and_leaves_the_inbox_while_hidden(client, people, cycle):
    ada, bob = people["ada"], people["bob"]
    made = client.post("/v1/objectives", headers=ada.headers(), json={
        "name": "Secret", "cycle_id": cycle["id"], "is_company": False, "is_personal": False}).get_json()
    assert client.patch(f"/v1/objectives/{made['id']}", json={"visibility": "private"},
                        headers=ada.headers()).status_code == 200
    comment(client, ada, f"/v1/objectives/{made['id']}", "@Bob Stone can you see this?")
    assert inbox(client, bob)["notifications"] == []
    assert client.patch(f"/v1/objectives/{made['id']}", json={"visibility": "everyone"},
                        headers=ada.headers()).status_code == 200
    comment(client, ada, f"/v1/objectives/{made['id']}", "@Bob Stone now?")
    assert len(inbox(client, bob)["notifications"]) == 1
    assert client.patch(f"/v1/objectives/{made['id']}", json={"visibility": "private"},
                        headers=ada.headers()).status_code == 200
    assert inbox(client, bob)["notifications"] == []


def test_an_admin_sees_everything_so_is_told_of_a_private_objective(client, make_person, people, cycle):
    ada, admin = people["ada"], make_person("admin", name="Ann Admin", email="ann@example.com")
    made = client.post("/v1/objectives", headers=ada.headers(), json={
        "name": "Secret", "cycle_id": cycle["id"], "is_company": False, "is_personal": False}).get_json()
    assert client.patch(f"/v1/objectives/{made['id']}", json={"visibility": "private"},
                        headers=ada.headers()).status_code == 200
    comment(client, ada, f"/v1/objectives/{made['id']}", "@Ann Admin and @Bob Stone")
    assert [n["objective_name"] for n in inbox(client, admin)["notifications"]] == ["Secret"]
    assert inbox(client, people["bob"])["notifications"] == []


# --- reading and marking ------------------------------------------------------------------------------------


def test_pages_go_newest_first_and_unread_filters(client, people, objective):
    for number in range(3):
        comment(client, people["ada"], f"/v1/objectives/{objective['id']}", f"@Bob Stone {number}")
    bob = people["bob"]
    first = inbox(client, bob, page_size=2)
    assert [n["comment_body"] for n in first["notifications"]] == ["@Bob Stone 2", "@Bob Stone 1"]
    rest = inbox(client, bob, page_size=2, page_token=first["next_page_token"])
    assert [n["comment_body"] for n in rest["notifications"]] == ["@Bob Stone 0"]
    assert rest["next_page_token"] is None
    newest = first["notifications"][0]["id"]
    answer = mark(client, bob, {"ids": [newest, "not-an-id"]})
    assert answer.status_code == 200 and answer.get_json() == {"marked": 1, "unread": 2}
    assert [n["comment_body"] for n in inbox(client, bob, unread="true")["notifications"]] == [
        "@Bob Stone 1", "@Bob Stone 0"]
    assert inbox(client, bob)["notifications"][0]["read_at"] is not None
    assert mark(client, bob, {"all": True}).get_json() == {"marked": 2, "unread": 0}
    assert mark(client, bob, {"all": True}).get_json() == {"marked": 0, "unread": 0}


def test_nobody_marks_another_s_notifications(client, people, objective):
    comment(client, people["ada"], f"/v1/objectives/{objective['id']}", "@Bob Stone hi")
    [note] = inbox(client, people["bob"])["notifications"]
    assert mark(client, people["ada"], {"ids": [note["id"]]}).get_json() == {"marked": 0, "unread": 0}
    assert inbox(client, people["bob"], unread="true")["notifications"] == [note]


def test_a_viewer_reads_and_marks_their_own(client, people, objective):
    comment(client, people["ada"], f"/v1/objectives/{objective['id']}", "@Vi Ewer FYI")
    vi = people["vi"]
    assert len(inbox(client, vi)["notifications"]) == 1
    answer = mark(client, vi, {"all": True})
    assert answer.status_code == 200 and answer.get_json() == {"marked": 1, "unread": 0}
    # still a viewer everywhere else
    assert_error(client.post(f"/v1/objectives/{objective['id']}/comments", json={"body": "x"},
                             headers=vi.headers()), 403)


def test_a_read_only_key_reads_but_does_not_mark(client, make_person, objective):
    reader = make_person("editor", read_only=True)
    assert inbox(client, reader) == {"next_page_token": None, "notifications": []}
    assert_error(mark(client, reader, {"all": True}), 403)


def test_a_service_key_has_no_inbox(client, people, key):
    for response in (client.get("/v1/me/notifications", headers=signed(key)),
                     client.post("/v1/me/notifications/read", json={"all": True}, headers=signed(key))):
        assert_error(response, 403)
        assert "service key" in response.get_json()["message"]


@pytest.mark.parametrize("body", [{"ids": []}, {"ids": "x"}, {"ids": [1]}, {"ids": ["x" * 101]},
                                  {"ids": ["a"] * 1001}, {"all": "yes"}, {"all": 1}, [], "all"])
def test_a_bad_body_is_a_contract_error(client, people, body):
    assert_error(mark(client, people["bob"], body), 400)


def test_all_wins_over_ids_and_neither_marks_none(client, people, objective):
    for number in range(2):
        comment(client, people["ada"], f"/v1/objectives/{objective['id']}", f"@Bob Stone {number}")
    bob = people["bob"]
    assert mark(client, bob, {}).get_json() == {"marked": 0, "unread": 2}
    assert mark(client, bob, {"all": False}).get_json() == {"marked": 0, "unread": 2}
    assert mark(client, bob, {"all": True, "ids": ["unknown"]}).get_json() == {"marked": 2, "unread": 0}


@pytest.mark.parametrize("query", [{"unread": "yes"}, {"page_size": "0"}, {"page_token": "!"}])
def test_a_bad_query_is_a_contract_error(client, people, query):
    assert_error(client.get("/v1/me/notifications", query_string=query, headers=people["bob"].headers()), 400)


def test_a_token_past_every_row_is_an_empty_page(client, people):
    assert inbox(client, people["bob"], page_token=encode_token(1)) == {"next_page_token": None,
                                                                        "notifications": []}
