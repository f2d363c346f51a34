"""The People page's CSV of people (issue 39): a file or pasted rows previewed (who is added, who is updated, which
rows are skipped and why), then applied in one transaction, with invitations emailed to those added when email is
set up; the file's limits, every reason a row is skipped, admins only, CSRF."""
import io
import re
import sqlite3
import threading

import pytest
from werkzeug.datastructures import FileStorage
from werkzeug.test import encode_multipart

from html_tree import BROWSER, parse
from okr import create_app
from okr.accounts import people_csv
from okr.db import transaction
from okr.errors import DiskFull
from okr.outbound import smtp
from okr.store import team_members, teams, users
from okr.web.errors import FORM_REFUSED
from people_page import PASSWORD, csrf, make_ed, make_maya, sign_in

pytestmark = pytest.mark.usefixtures("fast_hashing")

HEADER = "name,email,role,teams\n"
BASE_URL = "http://okr.test"


@pytest.fixture
def app(tmp_path, new_database):
    """The app with email set up: what it sends is recorded (sent), to no server."""
    return create_app({"TESTING": True, "DATABASE": new_database(tmp_path / "okr.db"),
                       "SMTP_URL": "smtp://127.0.0.1:25", "MAIL_FROM": "OKR <okr@example.com>",
                       "BASE_URL": BASE_URL})


@pytest.fixture
def sent(monkeypatch):
    """The emails sent (smtp.send replaced), each once the page's emailing thread has run."""
    outbox = []
    monkeypatch.setattr(smtp, "send", lambda settings, message: outbox.append(message))
    return outbox


@pytest.fixture
def admin(app, client):
    """The client, signed in as Maya Lee, an admin; two teams, Platform and Growth, exist."""
    make_maya(app)
    with app.app_context(), transaction() as db:
        for name in ("Platform", "Growth"):
            teams.create(db, name)
    assert sign_in(client, "maya@example.com").status_code == 303
    return client


def mail_sent():
    """Waits for the pages' emailing threads (started once an answer is sent) to end."""
    for thread in threading.enumerate():
        if thread.name.startswith("okr-mail"):
            thread.join(10)


def forty_people():
    """A CSV of 40 people, two of whose rows are bad (rows 12 and 31: a role that is none, an email that is none)."""
    rows = [f"Person {n:02},person{n:02}@example.com,{'viewer' if n % 3 else 'editor'},"
            f"{'Platform' if n % 2 else 'Platform; Growth'}\n" for n in range(1, 41)]
    rows[10] = "Bad Role,badrole@example.com,owner,Platform\n"
    rows[29] = "Bad Email,not an email,editor,\n"
    return HEADER + "".join(rows)


def post_multipart(client, path, fields):
    """Posts fields as multipart/form-data, its body made in memory (Werkzeug's test client would spool a large
    one to a temporary file it never closes)."""
    boundary, body = encode_multipart(fields)
    return client.post(path, data=body, headers=BROWSER, content_type=f"multipart/form-data; boundary={boundary}")


def preview(client, data=None, pasted=None, filename="people.csv"):
    """The answer to the preview form: the file (bytes or text) chosen, or the text pasted."""
    fields = {"csrf_token": csrf(client, "/people")}
    if data is not None:
        fields["file"] = FileStorage(io.BytesIO(data.encode("utf-8") if isinstance(data, str) else data), filename,
                                     content_type="text/csv")
    if pasted is not None:
        fields["csv"] = pasted
    return post_multipart(client, "/people/import", fields)


def apply(client, page):
    """Posts the preview page's Apply form as a browser would: its hidden fields, as multipart."""
    form = parse(page.get_data(as_text=True)).one("form", cls="csv-apply")
    fields = {el.attrs["name"]: el.attrs["value"] for el in form.find_all("input", type="hidden")}
    response = post_multipart(client, form.attrs["action"], fields)
    response.close()  # as a server closes it once sent: the invitations are emailed then
    mail_sent()
    return response


def listed(page, table_id):
    """The rows of one of the preview's tables: (row number, name, email, role, what)."""
    table = parse(page.get_data(as_text=True)).find_all("table", id=table_id)
    return [tuple(td.text for td in tr.find_all("td")) for tr in table[0].find_all("tr") if tr.find_all("td")] \
        if table else []


def stored(app, sql, *params):
    with sqlite3.connect(app.config["DATABASE"]) as db:
        return db.execute(sql, params).fetchall()


def people(app):
    return stored(app, "SELECT name, email, role FROM users ORDER BY seq")


def why(page, number):
    return {row[0]: row[4] for row in listed(page, "skipped")}[number]


# --- preview, then apply --------------------------------------------------------------------------------------


def test_forty_people_with_two_bad_rows_are_previewed_then_added_and_invited(app, admin, sent):
    before = people(app)
    page = preview(admin, forty_people())
    assert page.status_code == 200
    added, skipped = listed(page, "added"), listed(page, "skipped")
    assert len(added) == 38 and added[0] == ("2", "Person 01", "person01@example.com", "viewer", "joins Platform")
    assert added[1][4] == "joins Platform, Growth"
    assert skipped == [("12", "Bad Role", "badrole@example.com", "owner",
                        "its role is “owner”, not admin, editor or viewer"),
                       ("31", "Bad Email", "not an email", "editor", "its email: not a valid email address")]
    assert "Each of the 38 people added gets an invitation by email" in page.get_data(as_text=True)
    assert people(app) == before and sent == []  # the preview writes nothing

    done = apply(admin, page)
    assert done.status_code == 200
    summary = parse(done.get_data(as_text=True)).one("section", cls="notice").text
    assert "38 added, 0 updated, 0 unchanged, 2 skipped." in summary
    assert "Invitations are on their way by email to the 38 people added" in summary
    added_people = people(app)[1:]
    assert len(added_people) == 38 and ("Person 03", "person03@example.com", "editor") in added_people
    assert not {"badrole@example.com", "not an email"} & {email for _, email, _ in added_people}
    assert len(stored(app, "SELECT * FROM team_members")) == 38 + 19  # all in Platform, the even ones in Growth too
    assert sorted(message["To"].addresses[0].addr_spec for message in sent) == \
        sorted(email for _, email, _ in added_people)
    link = re.search(rf"{re.escape(BASE_URL)}(/invitations/\S+)", sent[0].get_content()).group(1)
    assert len(stored(app, "SELECT * FROM invitations")) == 38
    # The changes are recorded as a single add is: each person's user.created, each membership's event.
    assert len(stored(app, "SELECT * FROM events WHERE type = 'user.created'")) == 38 + 1
    assert len(stored(app, "SELECT * FROM events WHERE type = 'team.member_added'")) == 57
    actors = stored(app, "SELECT DISTINCT person_id FROM events WHERE type = 'user.created' AND seq > 3")
    assert actors == [(users_id(app, "maya@example.com"),)]
    admin.post("/logout", data={"csrf_token": csrf(admin, "/")})
    assert "Welcome, " in admin.get(link, headers=BROWSER).get_data(as_text=True)


def users_id(app, email):
    return stored(app, "SELECT id FROM users WHERE email = ?", email)[0][0]


def test_without_email_set_up_nobody_is_invited_and_both_pages_say_so(tmp_path, new_database, sent):
    app = create_app({"TESTING": True, "DATABASE": new_database(tmp_path / "okr.db")})
    make_maya(app)
    client = app.test_client()
    sign_in(client, "maya@example.com")
    page = preview(client, HEADER + "Ann,ann@example.com,editor,\n")
    assert "Email is not set up on this server: nobody is invited." in page.get_data(as_text=True)
    done = apply(client, page)
    assert "nobody was invited" in done.get_data(as_text=True)
    assert people(app)[1:] == [("Ann", "ann@example.com", "editor")]
    assert stored(app, "SELECT * FROM invitations") == [] and sent == []


def test_pasted_rows_are_taken_as_a_file_is(app, admin, sent):
    page = preview(admin, pasted=HEADER.replace("\n", "\r\n") + "Ann Lee,ann@example.com,admin,Growth\r\n")
    assert listed(page, "added") == [("2", "Ann Lee", "ann@example.com", "admin", "joins Growth")]
    apply(admin, page)
    assert people(app)[1:] == [("Ann Lee", "ann@example.com", "admin")]


def test_an_existing_email_updates_the_name_and_role_and_adds_teams(app, admin, sent):
    with app.app_context(), transaction() as db:
        bob = users.create(db, "Bob", "bob@example.com", "viewer")
        platform = db.execute("SELECT id FROM teams WHERE name = 'Platform'").fetchone()[0]
        team_members.add(db, platform, bob["id"])
        users.create(db, "Cy", "cy@example.com", "editor")
    page = preview(admin, HEADER + "Robert Builder,BOB@Example.com,editor,Growth\n"
                   + "Cy,cy@example.com,editor,\n" + "Dee,dee@example.com,viewer,platform\n")
    assert listed(page, "changed") == [("2", "Robert Builder", "BOB@Example.com", "editor",
                                        "name: Bob → Robert Builder; role: viewer → editor; joins Growth")]
    assert listed(page, "added") == [("4", "Dee", "dee@example.com", "viewer", "joins Platform")]
    assert "1 row names a person as they are already" in page.get_data(as_text=True)
    done = apply(admin, page)
    assert "1 added, 1 updated, 1 unchanged, 0 skipped." in done.get_data(as_text=True)
    assert stored(app, "SELECT name, email, role FROM users WHERE id = ?", bob["id"]) == \
        [("Robert Builder", "bob@example.com", "editor")]  # the email stays as stored
    assert sorted(stored(app, "SELECT t.name FROM team_members m JOIN teams t ON t.id = m.team_id "
                              "WHERE m.user_id = ?", bob["id"])) == [("Growth",), ("Platform",)]  # added to, kept
    assert [row[0] for row in stored(app, "SELECT type FROM events WHERE resource_id = ? ORDER BY seq",
                                     bob["id"])] == ["user.created", "user.updated", "user.updated"]
    assert len(sent) == 1 and sent[0]["To"].addresses[0].addr_spec == "dee@example.com"  # only those added


def test_columns_come_in_any_order_and_teams_may_be_left_out(app, admin, sent):
    page = preview(admin, "\ufeffEmail, Role ,NAME\nann@example.com,Viewer,Ann\n".encode("utf-8"))
    assert listed(page, "added") == [("2", "Ann", "ann@example.com", "viewer", "—")]


# --- every reason a row is skipped ----------------------------------------------------------------------------


@pytest.mark.parametrize("row, reason", [
    ("Ann,ann@example.com,owner,", "its role is “owner”, not admin, editor or viewer"),
    ("Ann,ann@example.com,,", "it has no role: admin, editor or viewer"),
    ("Ann,ann@@example,editor,", "its email: not a valid email address"),
    ("Ann\tLee,ann@example.com,editor,", "its name holds a control character, such as a line break or a tab"),
    ("Ann,ann@example.com,editor,Platform\x1b[31m", "its teams holds a control character"),
    ('"Ann\nLee",ann@example.com,editor,', "(a double quote left open?)"),
    ("Ann,ann@example.com,editor,Platform;Nowhere;Elsewhere", "no team is named “Nowhere”, “Elsewhere”"),
    ("Ann,ann@example.com,editor,Twins", "2 teams are named “Twins”: rename one of them"),
    ("A" * 501 + ",ann@example.com,editor,", "its name: longer than maximum length 500"),
    (",ann@example.com,editor,", "its name: must not be empty or only whitespace"),
    ("Lee, Ann,ann@example.com,editor,", "it has 5 cells but the header names 4 columns"),
    ("Gone,gone@example.com,editor,", "gone@example.com is deactivated: reactivate them first"),
    ("Maya,maya@example.com,viewer,", "maya@example.com is the last active admin: make another admin first"),
])
def test_each_bad_row_is_skipped_with_its_reason_and_the_others_go_on(app, admin, sent, row, reason):
    with app.app_context(), transaction() as db:
        users.set_active(db, users.create(db, "Gone", "gone@example.com"), False)
        teams.create(db, "Twins")
        teams.create(db, "twins ")
    page = preview(admin, HEADER + row + "\nZoe,zoe@example.com,editor,\n")
    [skipped] = listed(page, "skipped")
    assert skipped[0] == "2" and reason in skipped[4], skipped
    assert [entry[2] for entry in listed(page, "added")] == ["zoe@example.com"]
    before = people(app)
    apply(admin, page)
    assert people(app) == before + [("Zoe", "zoe@example.com", "editor")]


def test_every_row_of_an_email_in_the_file_twice_is_skipped(app, admin, sent):
    page = preview(admin, HEADER + "Ann,ann@example.com,editor,\nBob,bob@example.com,editor,\n"
                   "Ann again,ANN@example.com,viewer,\n")
    assert [(row[0], row[4]) for row in listed(page, "skipped")] == [("2", "its email is on row 4 too"),
                                                                      ("4", "its email is on row 2 too")]
    assert [row[1] for row in listed(page, "added")] == ["Bob"]


def test_a_demotion_is_refused_only_when_it_would_leave_no_active_admin(app, admin, sent):
    page = preview(admin, HEADER + "Nia,nia@example.com,admin,\nMaya Lee,maya@example.com,editor,\n")
    assert [row[1] for row in listed(page, "added")] == ["Nia"] and listed(page, "skipped") == []
    assert listed(page, "changed")[0][4] == "role: admin → editor"


# --- the file as a whole --------------------------------------------------------------------------------------


@pytest.mark.parametrize("data, message", [
    ("", "The file is empty"),
    ("\n\n", "The file is empty"),
    (b"name,email,role\nJos\xe9,jose@example.com,editor\n", "The file is not UTF-8 text (its byte 20 is not)"),
    ("name,email,role\n".encode("utf-16-le"), "The file holds NUL characters, as a UTF-16 file does"),
    ("ann@example.com,Ann,editor\n", "The first row must be the header"),
    ("name,email,team\n", "The header names a column “team”"),
    ("name,email,role,\n", "Column 4 of the header has no name"),
    ("name,email,role,Email\n", "The header names the column email twice"),
    ("name,email,teams\n", "The header has no column role"),
    ('name,email,role\n"' + "x" * 200_000 + '",a@example.com,editor\n', "Row 2 cannot be read as CSV"),
])
def test_a_file_that_cannot_be_read_is_refused_beside_the_field_and_nothing_written(app, admin, sent, data,
                                                                                     message):
    before = people(app)
    page = preview(admin, data)
    assert page.status_code == 400
    tree = parse(page.get_data(as_text=True))
    assert message in tree.one(id="csv-error").text
    assert tree.one(id="csv-file").attrs["aria-invalid"] == "true"
    assert people(app) == before


def test_nothing_chosen_nor_pasted_is_refused_beside_the_field(app, admin):
    page = preview(admin)
    assert page.status_code == 400
    assert parse(page.get_data(as_text=True)).one(id="csv-error").text == "Choose a CSV file, or paste its rows."


def test_a_file_of_more_than_5000_rows_is_refused(app, admin, sent):
    rows = "".join(f"P{n},p{n}@example.com,viewer,\n" for n in range(people_csv.MAX_ROWS + 1))
    page = preview(admin, HEADER + rows)
    assert page.status_code == 400
    assert "more than 5,000 rows besides its header" in parse(page.get_data(as_text=True)).one(id="csv-error").text
    assert preview(admin, HEADER + rows[:rows.rindex("P")]).status_code == 200  # 5,000 are taken


def test_a_file_of_more_than_1_mb_is_refused_file_pasted_or_applied(app, admin, sent):
    rows = HEADER + "Ann,ann@example.com,editor,\n"
    filler = people_csv.MAX_BYTES - len(rows)  # blank rows of 250 bytes, then one shorter
    large = rows + (" " * 249 + "\n") * (filler // 250) + " " * (filler % 250 - 1) + "\n" + " "
    assert len(large) == people_csv.MAX_BYTES + 1
    for page in (preview(admin, large), preview(admin, pasted=large)):
        assert page.status_code == 400
        assert "The file is larger than 1 MB" in parse(page.get_data(as_text=True)).one(id="csv-error").text
    assert preview(admin, large[:-1]).status_code == 200  # 1,000,000 bytes are taken
    forged = post_multipart(admin, "/people/import/apply", {"csrf_token": csrf(admin, "/people"), "csv": large})
    assert forged.status_code == 400 and "larger than 1 MB" in forged.get_data(as_text=True)
    assert len(people(app)) == 1


def test_apply_checks_the_file_again_and_trusts_nothing_of_the_preview(app, admin, sent):
    page = preview(admin, HEADER + "Ann,ann@example.com,editor,\n")
    with app.app_context(), transaction() as db:  # meanwhile, someone adds Ann
        users.create(db, "Ann Other", "ann@example.com", "viewer")
    done = apply(admin, page)
    assert "0 added, 1 updated" in done.get_data(as_text=True)
    assert people(app)[1:] == [("Ann", "ann@example.com", "editor")] and sent == []
    forged = post_multipart(admin, "/people/import/apply", {"csrf_token": csrf(admin, "/people"),
                                                           "csv": HEADER + "Eve,eve@example.com,owner,\n"})
    assert forged.status_code == 200 and "0 added" in forged.get_data(as_text=True)
    assert len(people(app)) == 2


def test_a_failure_in_the_middle_of_apply_writes_nothing(app, admin, sent, monkeypatch):
    page = preview(admin, forty_people())
    made = []
    create = users.create

    def create_then_fail(db, *args):
        if made:
            raise DiskFull()
        made.append(create(db, *args))
        return made[-1]

    monkeypatch.setattr(users, "create", create_then_fail)
    done = apply(admin, page)
    assert done.status_code == 507 and "Traceback" not in done.get_data(as_text=True)
    assert made and len(people(app)) == 1
    assert stored(app, "SELECT count(*) FROM team_members") == [(0,)]
    assert stored(app, "SELECT count(*) FROM events WHERE type = 'user.created'") == [(1,)]
    assert sent == []


# --- who may ----------------------------------------------------------------------------------------------------


def test_only_admins_may_preview_or_apply(app, client, sent):
    make_maya(app)
    make_ed(app)
    sign_in(client, "ed@example.com")
    token = csrf(client, "/")
    for path in ("/people/import", "/people/import/apply"):
        refused = post_multipart(client, path, {"csrf_token": token, "csv": HEADER + "Eve,eve@example.com,admin,\n"})
        assert refused.status_code == 403, path
    assert len(people(app)) == 2


def test_a_form_without_its_csrf_token_is_refused(app, admin, sent):
    for path in ("/people/import", "/people/import/apply"):
        refused = post_multipart(admin, path, {"csv": HEADER + "Eve,eve@example.com,admin,\n"})
        assert refused.status_code == 400 and FORM_REFUSED[1] in refused.get_data(as_text=True), path
    assert len(people(app)) == 1


def test_the_people_page_offers_the_csv_form_with_its_token(app, admin):
    tree = parse(admin.get("/people", headers=BROWSER).get_data(as_text=True))
    form = tree.one("form", action="/people/import")
    assert form.attrs["enctype"] == "multipart/form-data" and form.attrs["method"] == "post"
    assert form.one("input", name="csrf_token").attrs["value"]
    assert form.one("input", type="file").attrs["name"] == "file" and form.one("textarea").attrs["name"] == "csv"
    assert "At most 5,000 rows and 1 MB" in tree.one(id="csv-hint").text
    assert PASSWORD  # the people page's helpers sign in with it
