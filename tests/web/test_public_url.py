"""The public URL (issue 34): OKR_PUBLIC_URL, else OKR_BASE_URL, is where every link written for people starts (the
People page's invitation link and API example, emails, digests, `okr users invite`, the identity provider's redirect), whatever the
request came in as; two different ones are refused at start."""
import re

import pytest

import helpers
from okr import create_app
from okr.outbound import smtp

PASSWORD = "correct horse battery"
PUBLIC = "https://okr.example.com:8443/okr"
INVITATION = re.compile(r'id="invitation-url" class="link" value="([^"]+)"')


def app_with(new_database, tmp_path, **config):
    return create_app({"TESTING": True, "DATABASE": new_database(tmp_path / "okr.db"), **config})


@pytest.mark.parametrize("config", [{"PUBLIC_URL": PUBLIC}, {"BASE_URL": PUBLIC + "/"},
                                    {"PUBLIC_URL": PUBLIC + "/", "BASE_URL": PUBLIC}])
@pytest.mark.usefixtures("fast_hashing")
def test_the_people_page_s_invitation_link_starts_with_the_public_url(new_database, tmp_path, config):
    # Over plain HTTP, as a TLS-ending proxy that is not trusted (or sends no X-Forwarded-Proto) passes it on.
    app = app_with(new_database, tmp_path, **config)
    maya = helpers.user_with_password(app, PASSWORD)
    client = app.test_client()
    page = client.get("/login", headers={"Accept": "text/html"})
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True)).group(1)
    assert client.post("/login", data={"csrf_token": token, "email": maya["email"], "password": PASSWORD,
                                       "next": "/"}).status_code == 303
    people = client.get("/people", headers={"Accept": "text/html"}).get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', people).group(1)
    invited = client.post(f"/people/{maya['id']}/invitation", data={"csrf_token": token})
    assert invited.status_code == 200
    link = INVITATION.search(invited.get_data(as_text=True)).group(1)
    assert re.fullmatch(re.escape(PUBLIC) + r"/invitations/[A-Za-z0-9_-]{43}", link), link


def test_without_a_public_url_the_invitation_link_is_the_request_s_own(new_database, tmp_path):
    app = app_with(new_database, tmp_path)
    with app.test_request_context("/people", base_url="http://127.0.0.1:8080"):
        from okr import proxies
        assert proxies.link_to("web.show_invitation", token="abc") == "http://127.0.0.1:8080/invitations/abc"


@pytest.mark.parametrize("config", [{"PUBLIC_URL": PUBLIC}, {"BASE_URL": PUBLIC}])
def test_emails_and_digests_start_their_links_with_the_public_url(config):
    # Either setting: before, OKR_PUBLIC_URL alone left the emails' links at http://HOST:PORT.
    settings = {"HOST": "127.0.0.1", "PORT": 8080, "SMTP_URL": "smtp://mail.example.com",
                "MAIL_FROM": "okr@example.com", **config}
    assert smtp.settings(settings).base_url == PUBLIC
    assert smtp.public_base(settings) == PUBLIC  # the weekly emails' and the chat digests'


def test_okr_users_invite_takes_the_public_url(app, runner, clean_env):
    assert runner.invoke(args=["users", "add", "--name", "Ada", "--email", "ada@example.com"]).exit_code == 0
    app.config["PUBLIC_URL"] = PUBLIC + "/"
    result = runner.invoke(args=["users", "invite", "ada@example.com"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1].startswith(PUBLIC + "/invitations/")


@pytest.mark.parametrize("config, words", [
    ({"PUBLIC_URL": "https://okr.example.com", "BASE_URL": "https://mail.example.com"},
     "OKR_PUBLIC_URL (https://okr.example.com) and OKR_BASE_URL (https://mail.example.com) name two addresses"),
    ({"PUBLIC_URL": "okr.example.com"}, "OKR_PUBLIC_URL okr.example.com must start with http:// or https://"),
    ({"BASE_URL": "https://okr.example.com/?a=1"}, "OKR_BASE_URL https://okr.example.com/?a=1 must have no query"),
    ({"PUBLIC_URL": "https://okr.example.com/o%2Fkr"}, "must have a plain path, such as /okr"),
])
def test_a_public_url_that_cannot_work_stops_the_app_at_start(tmp_path, clean_env, config, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        create_app({"DATABASE": tmp_path / "okr.db", **config})
