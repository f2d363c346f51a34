"""What an okr-export file carries besides the rows of format 2: comments, each person's weekly-email choice and
identity-provider link; and what never goes in a file, said by the docs and by okr import's report."""
import re
import sqlite3
from contextlib import closing

import pytest

from okr import transfer
from okr.clock import new_id
from okr.db import transaction
from okr.store import comments, password_resets, users
from okr.store import webhooks as webhook_store
from helpers import REPO
from test_transfer import (data_part, export, exported, invoke, new_app, ok, previous_release, refused_unchanged,
                           seed, stored, with_commands, write_json)

ISSUER = "https://id.example.com/realms/acme"
COMMENT_FIELDS = ["id", "objective_id", "key_result_id", "author_id", "body", "created_at", "modified_at", "revision"]


@pytest.fixture
def app(app):
    return with_commands(app)


def annotate(app, clock, ids):
    """Comments on an objective and a key result (by Ada, by Émile, by nobody; one edited, one deleted), Émile's
    weekly email turned off, and Ada linked to the identity provider. Returns the comments' ids, oldest first."""
    made = []
    with app.app_context():
        clock.now = "2026-01-21T09:00:00Z"
        with transaction() as db:
            made.append(comments.create(db, "objective", ids["child"], "Support hired two people.\nOn track.",
                                        ids["ada"])["id"])
            made.append(comments.create(db, "key_result", ids["key_results"]["positive"], "«macros» <b>help</b>",
                                        ids["emile"])["id"])
            made.append(comments.create(db, "objective", ids["parent"], "=1+1", None)["id"])
            gone = comments.create(db, "objective", ids["parent"], "soon gone", ids["ada"])
        clock.now = "2026-01-22T10:30:00Z"
        with transaction() as db:
            comments.update(db, comments.get(db, made[0]), "Support hired three people.")
            comments.delete(db, comments.get(db, gone["id"]))
            users.set_weekly_email(db, users.get(db, ids["emile"]), False)
            users.set_oidc_subject(db, users.get(db, ids["ada"]), ISSUER, "ada-0001")
    return made


@pytest.fixture
def annotated(app, clock):
    ids = seed(app, clock)
    return {**ids, "comments": annotate(app, clock, ids)}


def comment_rows(app):
    return stored(app, f"SELECT {', '.join(COMMENT_FIELDS)} FROM comments ORDER BY seq")


def people(app):
    return stored(app, "SELECT id, weekly_email, oidc_issuer, oidc_subject FROM users ORDER BY seq")


# --- the round trip ------------------------------------------------------------------------------------


def test_comments_settings_and_provider_links_go_out_and_come_back(app, annotated, tmp_path):
    data = exported(app, tmp_path)
    assert data["version"] == 7
    assert list(data)[-2:] == ["comments", "initiatives"]
    assert [list(record) for record in data["comments"]] == [COMMENT_FIELDS] * 3
    edited = data["comments"][0]
    assert (edited["body"], edited["revision"], edited["created_at"], edited["modified_at"]) == (
        "Support hired three people.", 1, "2026-01-21T09:00:00Z", "2026-01-22T10:30:00Z")
    assert (edited["objective_id"], edited["key_result_id"], edited["author_id"]) == (
        annotated["child"], None, annotated["ada"])
    on_key_result = data["comments"][1]
    assert (on_key_result["objective_id"], on_key_result["key_result_id"]) == (
        None, annotated["key_results"]["positive"])
    assert data["comments"][2]["author_id"] is None
    settings = {u["id"]: (u["weekly_email"], u["oidc_issuer"], u["oidc_subject"]) for u in data["users"]}
    assert settings == {annotated["ada"]: (True, ISSUER, "ada-0001"), annotated["emile"]: (False, None, None),
                        annotated["lee"]: (True, None, None)}

    target = new_app(tmp_path / "target.db")
    assert ok(invoke(target, "import", tmp_path / "all.json"))["comments"] == 3
    assert comment_rows(target) == comment_rows(app)
    assert people(target) == people(app)
    # what people see of them: the same answers, with the same ETags
    source, copy = app.test_client(), target.test_client()
    for path in (f"/v1/objectives/{annotated['child']}/comments", f"/v1/objectives/{annotated['parent']}/comments",
                 f"/v1/keyresults/{annotated['key_results']['positive']}/comments",
                 f"/v1/comments/{annotated['comments'][0]}"):
        a, b = source.get(path), copy.get(path)
        assert (a.status_code, a.get_json(), a.headers.get("ETag")) == (
            b.status_code, b.get_json(), b.headers.get("ETag")), path
    # and the feed's "commented on ..." events name comments that exist
    listed = {row[0] for row in stored(target, "SELECT resource_id FROM events WHERE type = 'comment.created'")}
    assert set(annotated["comments"]) <= listed
    export(target, tmp_path / "again.json")
    assert data_part(tmp_path / "again.json") == data_part(tmp_path / "all.json")


def test_files_of_version_1_and_2_still_import_with_everyone_on_the_weekly_email(app, annotated, tmp_path):
    data = exported(app, tmp_path)
    version_2 = {**data, "version": 2,
                 "users": [{field: value for field, value in user.items()
                            if field not in ("weekly_email", "oidc_issuer", "oidc_subject")} for user in data["users"]]}
    del version_2["comments"]
    for name, content in (("v1.json", previous_release(version_2)), ("v2.json", version_2)):
        target = new_app(tmp_path / f"{name}.db")
        imported = ok(invoke(target, "import", write_json(tmp_path / name, content)))
        assert imported["users"] == 3 and imported["comments"] == 0
        assert {row[1:] for row in people(target)} == {(1, None, None)}  # the defaults of a new user


def test_a_merge_of_a_version_2_file_keeps_the_stored_settings_and_links(app, annotated, tmp_path):
    data = exported(app, tmp_path)
    before = people(app)
    data["version"] = 2
    del data["comments"]
    for user in data["users"]:
        for field in ("weekly_email", "oidc_issuer", "oidc_subject"):
            del user[field]
    data["users"][1]["name"] = "Émile Édouard Zola"
    result = ok(invoke(app, "import", "--merge", write_json(tmp_path / "v2.json", data)))
    assert result["users"] == {"added": 0, "updated": 1, "unchanged": 2}
    assert people(app) == before
    assert len(comment_rows(app)) == 3


# --- merging ---------------------------------------------------------------------------------------------


def test_a_merge_matches_comments_by_id(app, annotated, tmp_path, clock):
    data = exported(app, tmp_path)
    data["comments"][1].update(body="edited elsewhere", modified_at="2026-02-01T00:00:00Z", revision=3)
    added = {**data["comments"][0], "id": new_id(), "body": "a new one", "revision": 0}
    data["comments"].append(added)
    with app.app_context(), transaction() as db:
        comments.delete(db, comments.get(db, annotated["comments"][2]))  # deleted here: the file brings it back
    result = ok(invoke(app, "import", "--merge", write_json(tmp_path / "merged.json", data)))
    assert result["comments"] == {"added": 2, "updated": 1, "unchanged": 1}
    rows = {row[0]: row for row in comment_rows(app)}
    assert rows[annotated["comments"][1]][4:] == ("edited elsewhere", "2026-01-21T09:00:00Z",
                                                  "2026-02-01T00:00:00Z", 3)
    assert rows[added["id"]][4] == "a new one"
    assert annotated["comments"][2] in rows


def test_a_merge_takes_the_weekly_email_choice_without_moving_the_users_revision(app, annotated, tmp_path):
    data = exported(app, tmp_path)
    data["users"][1]["weekly_email"] = True
    etag = app.test_client().get(f"/v1/users/{annotated['emile']}").headers["ETag"]
    result = ok(invoke(app, "import", "--merge", write_json(tmp_path / "merged.json", data)))
    assert result["users"] == {"added": 0, "updated": 1, "unchanged": 2}
    assert stored(app, "SELECT weekly_email FROM users WHERE id = ?", annotated["emile"]) == [(1,)]
    # a private preference, as the account page's switch: no API field shows it, so no ETag moves
    assert app.test_client().get(f"/v1/users/{annotated['emile']}").headers["ETag"] == etag


def test_a_merge_links_an_unlinked_person_but_never_replaces_or_removes_a_link(app, annotated, tmp_path):
    data = exported(app, tmp_path)
    data["users"][0].update(oidc_issuer="https://evil.example.com", oidc_subject="attacker")  # Ada: linked
    data["users"][2].update(oidc_issuer=ISSUER, oidc_subject="lee-0003")  # Lee: not yet
    ok(invoke(app, "import", "--merge", write_json(tmp_path / "merged.json", data)))
    links = {row[0]: row[2:] for row in people(app)}
    assert links[annotated["ada"]] == (ISSUER, "ada-0001")
    assert links[annotated["lee"]] == (ISSUER, "lee-0003")
    data["users"][0].update(oidc_issuer=None, oidc_subject=None)
    ok(invoke(app, "import", "--merge", write_json(tmp_path / "unlinked.json", data)))
    assert {row[0]: row[2:] for row in people(app)}[annotated["ada"]] == (ISSUER, "ada-0001")


# --- refusals ----------------------------------------------------------------------------------------------

MISSING = "deadbeef-0000-4000-8000-00000000dead"


def change(section, index, **fields):
    def apply(data):
        data[section][index].update(fields)
    return apply


def comment_twice(data):
    data["comments"].append(dict(data["comments"][0]))


def link_twice(data):
    data["users"][1].update(oidc_issuer=data["users"][0]["oidc_issuer"], oidc_subject=data["users"][0]["oidc_subject"])


CONTENT_REFUSALS = {
    "comment on a missing objective": (change("comments", 0, objective_id=MISSING),
                                       f"comments[0]: objective_id {MISSING} does not exist: no objective in the file"),
    "comment on a missing key result": (change("comments", 1, key_result_id=MISSING),
                                        f"comments[1]: key_result_id {MISSING} does not exist: no key result"),
    "comment by nobody there": (change("comments", 1, author_id=MISSING),
                                f"comments[1]: author_id {MISSING} does not exist: no user"),
    "comment on both": (lambda data: data["comments"][0].update(key_result_id=data["comments"][1]["key_result_id"]),
                        "comments[0]: objective_id: A comment is on an objective or a key result, not both"),
    "comment on nothing": (change("comments", 0, objective_id=None),
                           "comments[0]: objective_id: A comment is on an objective or a key result"),
    "blank comment": (change("comments", 2, body=" \n"), "comments[2]: body: Must not be empty"),
    "long comment": (change("comments", 2, body="x" * 10_001), "comments[2]: body: Longer than maximum length 10000"),
    "comment id twice": (comment_twice, "comments[3]: id "),
    "comment time": (change("comments", 0, modified_at="yesterday"), "comments[0]: modified_at: must be an RFC 3339"),
    "weekly email as a number": (change("users", 0, weekly_email=1), "users[0]: weekly_email: Not a valid boolean"),
    "issuer without subject": (change("users", 1, oidc_issuer=ISSUER),
                               "users[1]: oidc_subject: Given with oidc_issuer, or neither"),
    "subject without issuer": (change("users", 0, oidc_issuer=None),
                               "users[0]: oidc_issuer: Given with oidc_subject, or neither"),
    "one link for two people": (link_twice, "users[1]: the identity provider's oidc_subject ada-0001 is users[0]'s"),
}


@pytest.mark.parametrize("case", CONTENT_REFUSALS)
@pytest.mark.parametrize("merge", [False, True], ids=["empty", "merge"])
def test_a_bad_comment_or_setting_is_refused_naming_its_place_with_nothing_imported(app, annotated, tmp_path, case,
                                                                                      merge):
    alter, problem = CONTENT_REFUSALS[case]
    data = exported(app, tmp_path)
    alter(data)
    target = app if merge else new_app(tmp_path / "target.db")
    line = refused_unchanged(target, "import", *(["--merge"] if merge else []), write_json(tmp_path / "bad.json", data))
    assert problem in line, line


def test_a_merge_refuses_a_provider_link_another_person_has(app, annotated, tmp_path):
    data = exported(app, tmp_path)
    # The file unlinks Ada and gives her link to someone new; a merge never removes a link, so she keeps it.
    data["users"][0].update(oidc_issuer=None, oidc_subject=None)
    data["users"].append({**data["users"][2], "id": new_id(), "email": "someone@example.com",
                          "oidc_issuer": ISSUER, "oidc_subject": "ada-0001"})
    line = refused_unchanged(app, "import", "--merge", write_json(tmp_path / "clash.json", data))
    assert (f"users[3]: the identity provider's oidc_subject ada-0001 belongs to another user in the database "
            f"({annotated['ada']})") in line


# --- what never goes in a file ---------------------------------------------------------------------------


def schema_columns():
    """{table: [column, ...]} of okr's own schema."""
    with closing(sqlite3.connect(":memory:")) as db:
        db.executescript((REPO / "schema.sql").read_text(encoding="utf-8"))
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                                 "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return {table: [row[1] for row in db.execute(f"PRAGMA table_info({table})")] for table in tables}


def test_every_table_and_column_is_exported_or_left_out_with_a_reason(app):
    """A table or column added to the schema is either in the file or in transfer.LEFT_OUT (then in the docs): never
    lost by an export without anyone deciding it."""
    unaccounted = []
    for table, columns in schema_columns().items():
        if table in transfer.LEFT_OUT:
            continue
        for column in columns:
            if column == "seq":  # the order of the section
                continue
            if (column not in transfer.FIELDS.get(table, ()) and f"{table}.{column}" not in transfer.LEFT_OUT
                    and f"{table}.{column}" not in transfer.DERIVED_COLUMNS):
                unaccounted.append(f"{table}.{column}")
    assert unaccounted == []
    docs = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    section = docs[docs.index("**Never exported"):docs.index("**Files of earlier releases**")]
    for what, why in transfer.LEFT_OUT.values():
        assert why and what in section, what


def test_import_says_what_never_comes_with_a_file(app, annotated, tmp_path):
    export(app, tmp_path / "all.json")
    target = new_app(tmp_path / "target.db")
    report = ok(invoke(target, "import", tmp_path / "all.json"))
    assert report["never_in_the_file"] == sorted({what for what, _ in transfer.LEFT_OUT.values()})
    assert "passwords" in report["never_in_the_file"] and "webhooks" in report["never_in_the_file"]


def test_no_secret_is_exported_even_with_the_keys(app, annotated, tmp_path):
    """Password resets and webhooks' secrets join the password hashes, invitations and sessions that stay out."""
    with app.app_context(), transaction() as db:
        reset = password_resets.create(db, users.get(db, annotated["emile"]))
        hook = webhook_store.add(db, "https://hooks.example.com/okr", ["*"])
        users.set_password(db, users.get(db, annotated["lee"]), "$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA")
    export(app, tmp_path / "keys.json", "--include-keys")
    text = (tmp_path / "keys.json").read_text(encoding="utf-8")
    secrets = [reset, hook["secret"], "argon2id", "hooks.example.com"]
    secrets += [value for (value,) in stored(app, "SELECT token_hash FROM password_resets UNION ALL "
                                                  "SELECT value FROM web_secrets")]
    assert [secret for secret in secrets if secret in text] == []
    assert not re.search(r'"(password_hash|token_hash|secret)"', data_part(tmp_path / "keys.json").split(
        '"api_keys"')[0])


# --- key results' units (format 4) ------------------------------------------------------------------------


@pytest.fixture
def seeded(app, clock):
    return seed(app, clock)


def test_key_results_units_go_out_and_come_back(app, seeded, tmp_path):
    positive = seeded["key_results"]["positive"]
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.execute("UPDATE key_results SET unit = '$', unit_position = 'before' WHERE id = ?", (positive,))
    data = exported(app, tmp_path)
    assert data["version"] == 7
    [record] = [k for k in data["key_results"] if k["id"] == positive]
    assert list(record)[-6:-3] == ["owner_id", "unit", "unit_position"]
    assert (record["unit"], record["unit_position"]) == ("$", "before")
    assert all(k["unit"] is None and k["unit_position"] is None for k in data["key_results"] if k["id"] != positive)
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "all.json"))
    assert stored(target, "SELECT id, unit, unit_position FROM key_results WHERE unit IS NOT NULL") == [
        (positive, "$", "before")]
    # A file of format 3 has no units: its key results come in without one, and a merge keeps a stored one.
    old = {**data, "version": 3, "key_results": [{k: v for k, v in record.items() if k not in ("unit", "unit_position")}
                                                 for record in data["key_results"]]}
    ok(invoke(target, "import", "--merge", write_json(tmp_path / "v3.json", old)))
    assert stored(target, "SELECT unit, unit_position FROM key_results WHERE id = ?", positive) == [("$", "before")]


def test_key_results_weights_go_out_and_come_back(app, seeded, tmp_path):
    positive = seeded["key_results"]["positive"]
    with closing(sqlite3.connect(app.config["DATABASE"])) as db, db:
        db.execute("UPDATE key_results SET weight = 3 WHERE id = ?", (positive,))
    data = exported(app, tmp_path)
    assert {k["id"]: k["weight"] for k in data["key_results"]}[positive] == 3
    assert all(k["weight"] == 1 for k in data["key_results"] if k["id"] != positive)
    target = new_app(tmp_path / "target.db")
    ok(invoke(target, "import", tmp_path / "all.json"))
    assert stored(target, "SELECT id, weight FROM key_results WHERE weight <> 1") == [(positive, 3)]
    # A file of format 5 has no weights: a merge keeps a stored one, and a new key result gets 1.
    old = {**data, "version": 5, "key_results": [{k: v for k, v in record.items() if k != "weight"}
                                                 for record in data["key_results"]]}
    ok(invoke(target, "import", "--merge", write_json(tmp_path / "v5.json", old)))
    assert stored(target, "SELECT weight FROM key_results WHERE id = ?", positive) == [(3,)]
    fresh = new_app(tmp_path / "fresh.db")
    ok(invoke(fresh, "import", tmp_path / "v5.json"))
    assert stored(fresh, "SELECT DISTINCT weight FROM key_results") == [(1,)]


@pytest.mark.parametrize("weight", [-1, 101, 1.5, "2", True])
def test_a_bad_weight_in_a_file_is_refused(app, seeded, tmp_path, weight):
    data = exported(app, tmp_path)
    data["key_results"][0]["weight"] = weight
    target = new_app(tmp_path / "target.db")
    line = refused_unchanged(target, "import", write_json(tmp_path / "bad.json", data))
    assert "key_results[0]: weight: Must be" in line


@pytest.mark.parametrize("unit, position, problem", [
    ("thirteen char", "after", "unit: Longer than maximum length 12."),
    ("$", "left", 'unit_position: Must be "before" or "after" (or null).'),
    ("m\ts", "after", "unit: Must not contain control characters"),
])
def test_a_bad_unit_in_a_file_is_refused(app, seeded, tmp_path, unit, position, problem):
    data = exported(app, tmp_path)
    data["key_results"][0].update(unit=unit, unit_position=position)
    target = new_app(tmp_path / "target.db")
    line = refused_unchanged(target, "import", write_json(tmp_path / "bad.json", data))
    assert "key_results[0]: " in line and problem in line
