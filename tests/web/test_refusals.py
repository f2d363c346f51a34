"""Each 403 page names what was refused (webhooks, people, editing) and who may do it, in words decided in one
place (okr.accounts.access.refusal)."""
import pytest

from helpers import user_with_password
from html_tree import parse
from people_page import HTML, PASSWORD, csrf, make_maya, sign_in

pytestmark = pytest.mark.usefixtures("fast_hashing")


def refused(response):
    """The 403 page's sentence."""
    assert response.status_code == 403, response.status_code
    return parse(response.get_data(as_text=True)).one("main").text


@pytest.fixture
def signed_in_as(app, client):
    """Signs the client in as a new person of this role (an admin exists too)."""
    def sign_in_as(role):
        make_maya(app)
        user_with_password(app, PASSWORD, f"A {role}", f"{role}@example.com", role)
        assert sign_in(client, f"{role}@example.com").status_code == 303
        return client
    return sign_in_as


@pytest.mark.parametrize("role", ["viewer", "editor"])
def test_webhooks_refused_name_webhooks(signed_in_as, role):
    client = signed_in_as(role)
    sentence = refused(client.get("/webhooks", headers=HTML))
    assert "Only an admin may manage webhooks" in sentence and f"you are a{'n' if role == 'editor' else ''} {role}" \
        in sentence
    assert "people" not in sentence


def test_a_webhook_posted_by_a_viewer_is_refused_as_webhooks(signed_in_as):
    client = signed_in_as("viewer")
    sentence = refused(client.post("/webhooks", data={"csrf_token": csrf(client, "/"), "url": "https://x.example"}))
    assert "manage webhooks" in sentence


@pytest.mark.parametrize("role", ["viewer", "editor"])
def test_people_refused_name_people(signed_in_as, role):
    sentence = refused(signed_in_as(role).get("/people", headers=HTML))
    assert "Only an admin may manage people" in sentence and "webhooks" not in sentence


def test_editing_refused_names_editing(signed_in_as):
    sentence = refused(signed_in_as("viewer").get("/cycles/new", headers=HTML))
    assert "You are a viewer, who may look but not change anything" in sentence


def test_a_read_only_key_of_an_admin_is_told_its_key_is_read_only(app, client, runner):
    from okr.db import transaction
    from okr.store import keys
    maya = make_maya(app)
    with app.app_context(), transaction() as db:
        credential, secret = keys.create(db, "wallboard", read_only=True, user_id=maya["id"])
    assert client.post("/login", data={"csrf_token": csrf(client), "credential": credential, "secret": secret,
                                       "next": "/"}).status_code == 303
    assert refused(client.get("/webhooks", headers=HTML)).count("read-only API key, which may look but not "
                                                                  "manage webhooks") == 1
