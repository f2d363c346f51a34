"""An empty page offers its own way to add things, the form's link, not a curl command that answers 401 once
sign-in is on; a viewer, who may add nothing, is told who can."""
import pytest

from helpers import make_cycle, user_with_password
from html_tree import parse
from people_page import HTML, PASSWORD, make_maya, sign_in

pytestmark = pytest.mark.usefixtures("fast_hashing")


def empty_section(client, path):
    response = client.get(path, headers=HTML)
    assert response.status_code == 200
    section = parse(response.get_data(as_text=True)).one("section", cls="empty")
    assert "curl" not in section.text and not section.find_all("pre")
    return section


def hrefs(section):
    return [a.attrs.get("href") for a in section.find_all("a")]


def signed_in(app, client, role):
    make_maya(app)
    if role == "editor":
        user_with_password(app, PASSWORD, "Ed Itor", "ed@example.com", "editor")
    assert sign_in(client, "maya@example.com" if role == "admin" else "ed@example.com").status_code == 303


@pytest.mark.parametrize("role", ["admin", "editor"])
def test_signed_in_the_empty_cycles_page_links_the_form(app, client, role):
    signed_in(app, client, role)
    assert hrefs(empty_section(client, "/cycles")) == ["/cycles/new"]
    assert client.get("/cycles/new", headers=HTML).status_code == 200  # the link opens, signed in


@pytest.mark.parametrize("role", ["admin", "editor"])
def test_signed_in_an_empty_cycle_links_the_objective_form(app, client, role):
    cycle = make_cycle(client, "Q3")  # while the server is open
    signed_in(app, client, role)
    assert hrefs(empty_section(client, f"/cycles/{cycle['id']}")) == [f"/objectives/new?cycle_id={cycle['id']}"]


def test_open_the_empty_cycles_page_links_the_form(client):
    assert hrefs(empty_section(client, "/cycles")) == ["/cycles/new"]


def test_a_viewer_is_told_who_adds(app, client):
    make_maya(app)
    user_with_password(app, PASSWORD, "Vi Ewer", "vi@example.com", "viewer")
    assert sign_in(client, "vi@example.com").status_code == 303
    section = empty_section(client, "/cycles")
    assert hrefs(section) == [] and "An editor or an admin creates the first one" in section.text
