"""Someone signed out, once sign-in is needed, sees no navigation but the way to sign in: on the login page,
the password pages and the error pages (no Cycles, Activity, People or Webhooks they could not open)."""
import pytest

from html_tree import parse
from people_page import HTML, make_maya, sign_in

pytestmark = pytest.mark.usefixtures("fast_hashing")

ADMIN_LINKS = ("/cycles", "/activity", "/people", "/webhooks", "/teams")


def links(response):
    doc = parse(response.get_data(as_text=True))
    return [a.attrs.get("href", "").split("?")[0] for a in doc.one("header").find_all("a")] + [
        a.attrs.get("href", "").split("?")[0] for a in doc.one("main").find_all("a")]


@pytest.mark.parametrize("path, status", [("/login", 200), ("/nope", 404), ("/password-reset", 200)])
def test_a_signed_out_page_offers_only_signing_in(app, client, path, status):
    make_maya(app)  # sign-in is needed from now on
    response = client.get(path, headers=HTML)
    assert response.status_code == status
    shown = links(response)
    assert not [href for href in shown if href in ADMIN_LINKS or href == "/"], shown
    if path != "/login":
        assert "/login" in shown


def test_signed_in_the_same_error_page_has_the_navigation(app, client):
    make_maya(app)
    assert sign_in(client, "maya@example.com").status_code == 303
    shown = links(client.get("/nope", headers=HTML))
    assert all(href in shown for href in ADMIN_LINKS) and "/login" not in shown


def test_a_viewer_on_the_login_page_is_not_shown_the_admins_links(app, client):
    from helpers import user_with_password
    from people_page import PASSWORD
    make_maya(app)
    user_with_password(app, PASSWORD, "Vi Ewer", "vi@example.com", "viewer")
    assert sign_in(client, "vi@example.com").status_code == 303
    shown = links(client.get("/login", headers=HTML))
    assert "/people" not in shown and "/webhooks" not in shown and "/cycles" in shown


def test_an_open_server_shows_its_navigation(client):
    shown = links(client.get("/nope", headers=HTML))
    assert all(href in shown for href in ADMIN_LINKS)
