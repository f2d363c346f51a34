"""The Search page, /search?q= (okr/web/search_pages.py), and the search form in every page's header: results
grouped by kind, each a link to its page, with its cycle (and a key result's objective); a next page; no result;
a refused query beside the field; signed-out people sent to sign in."""
import pytest

from helpers import make_cycle, make_key_result, make_objective, make_team, make_user, user_with_password
from html_tree import BROWSER, parse
from people_page import sign_in

pytestmark = pytest.mark.usefixtures("fast_hashing")


def page(client, query=None, **arguments):
    response = client.get("/search", query_string={**({} if query is None else {"q": query}), **arguments},
                          headers=BROWSER)
    return response, parse(response.get_data(as_text=True))


@pytest.fixture
def company(client, runner):
    spring, summer = make_cycle(client, "Spring"), make_cycle(client, "Summer")
    made = {"spring": spring, "summer": summer}
    made["team"] = make_team(client, "Launch crew")
    made["objective"] = make_objective(client, spring["id"], "Launch in Europe")
    made["other"] = make_objective(client, summer["id"], "Relaunch the app")
    made["key_result"] = make_key_result(client, made["objective"]["id"], "Launch 3 countries")
    made["person"] = make_user(runner, "Lana Launcher", "lana@example.com")
    return made


def test_results_come_grouped_by_kind_each_linked_with_its_cycle(client, company):
    response, tree = page(client, "LAUNCH")
    assert response.status_code == 200
    sections = tree.find_all("section", cls="search-results")
    assert [section.one("h2").text for section in sections] == ["Objectives", "Key results", "Teams", "People"]
    objectives, key_results, teams, people = sections
    assert [li.text for li in objectives.find_all("li")] == ["Launch in Europe · Spring", "Relaunch the app · Summer"]
    assert [a.attrs["href"] for a in objectives.find_all("a")] == [f"/objectives/{company['objective']['id']}",
                                                                   f"/objectives/{company['other']['id']}"]
    assert [li.text for li in key_results.find_all("li")] == ["Launch 3 countries of Launch in Europe · Spring"]
    assert [a.attrs["href"] for a in key_results.find_all("a")] == [f"/keyresults/{company['key_result']['id']}",
                                                                    f"/objectives/{company['objective']['id']}"]
    assert [a.attrs["href"] for a in teams.find_all("a")] == [f"/teams/{company['team']['id']}"]
    assert [a.attrs["href"] for a in people.find_all("a")] == [f"/activity?person_id={company['person']['id']}"]
    assert people.text == "People Lana Launcher"  # no email shown
    assert tree.one("input", id="search-page-q").attrs["value"] == "LAUNCH"
    assert not tree.find_all("a", string="Next page") and "Next page" not in tree.text
    for link in [a.attrs["href"] for section in sections for a in section.find_all("a")]:
        assert client.get(link, headers=BROWSER).status_code == 200, link


def test_each_link_opens_the_found_page(client, company):
    _, tree = page(client, "lana@")
    (link,) = tree.one("section", cls="search-results").find_all("a")
    assert "Lana Launcher" in client.get(link.attrs["href"], headers=BROWSER).get_data(as_text=True)


def test_the_pages_together_hold_every_result_once(client, monkeypatch, company):
    monkeypatch.setattr("okr.web.search_pages.RESULTS_PER_PAGE", 2)
    names, link, pages = [], "/search?q=launch", 0
    for pages in range(1, 6):
        tree = parse(client.get(link, headers=BROWSER).get_data(as_text=True))
        names += [li.find_all("a")[0].text for li in tree.find_all("li")
                  if li.parent.parent.tag == "section"]
        nexts = [a.attrs["href"] for a in tree.find_all("a") if a.text == "Next page"]
        if not nexts:
            break
        link = nexts[0]
    assert names == ["Launch in Europe", "Relaunch the app", "Launch 3 countries", "Launch crew", "Lana Launcher"]
    assert pages == 3  # 5 results, 2 a page


def test_no_result_says_so(client, company):
    response, tree = page(client, "  zebra ")
    assert response.status_code == 200
    assert not tree.find_all("section", cls="search-results")
    assert "Nothing found" in tree.one("section", cls="empty").text
    assert "“zebra”" in tree.one("section", cls="empty").text


def test_an_empty_query_shows_just_the_form(client, company):
    for query in (None, "", "   "):
        response, tree = page(client, query)
        assert response.status_code == 200
        assert tree.one("form", cls="search-page").attrs["method"] == "get"
        assert not tree.find_all("section")


def test_a_query_over_200_characters_is_refused_beside_the_field(client, company):
    response, tree = page(client, "x" * 201)
    assert response.status_code == 400
    field = tree.one("input", id="search-page-q")
    assert field.attrs["aria-invalid"] == "true"
    assert "200" in tree.one("p", id="search-page-error").text
    assert page(client, " " + "x" * 200 + " ")[0].status_code == 200


def test_a_bad_page_link_is_a_400_page(client, company):
    response, _ = page(client, "launch", after="nope")
    assert response.status_code == 400


@pytest.mark.parametrize("path", ["/", "/cycles", "/teams", "/activity", "/search", "/search?q=launch"])
def test_every_page_s_header_has_the_search_form(client, company, path):
    tree = parse(client.get(path, headers=BROWSER).get_data(as_text=True))
    form = tree.one("header").one("form", role="search")
    assert (form.attrs["method"], form.attrs["action"]) == ("get", "/search")
    field = form.one("input", name="q")
    assert form.one("label", **{"for": field.attrs["id"]}).text == "Search"


def test_the_header_form_finds_what_the_page_finds(client, company):
    _, tree = page(client, "europe")
    assert tree.one("header").one("input", name="q").attrs["value"] == "europe"
    assert [a.text for a in tree.one("section", cls="search-results").find_all("a")] == ["Launch in Europe"]


def test_signed_out_people_are_sent_to_sign_in_and_any_role_searches(app, client, company):
    user_with_password(app, "correct horse battery", "Vi Ewer", "vi@example.com", "viewer")
    response = client.get("/search?q=launch", headers=BROWSER)
    assert response.status_code in (302, 303)
    assert "/login" in response.headers["Location"]
    assert sign_in(client, "vi@example.com").status_code == 303
    response, tree = page(client, "launch")
    assert response.status_code == 200
    assert len(tree.find_all("section", cls="search-results")) == 4
