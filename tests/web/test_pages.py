"""The dashboard's read-only pages with Flask's test client: / for a browser (and the JSON index for
everyone else), /cycles/<id> (the alignment tree, its filters) and /keyresults/<id> (history, chart, form).

Pages are parsed with the standard library's html.parser and checked by the ids, classes and words the
design names, never against a whole-page snapshot.
"""
import importlib.metadata
import re
import uuid

import pytest

from helpers import make_cycle, make_key_result, make_objective, make_team, make_user
from html_tree import BROWSER, parse

LINKS = {"openapi": "/v1/openapi.json", "healthz": "/healthz"}


def page(client, path, status=200, **kwargs):
    response = client.get(path, headers=BROWSER, **kwargs)
    body = response.get_data(as_text=True)
    assert response.status_code == status, (response.status_code, body[:3000])
    assert response.mimetype == "text/html", (response.mimetype, body[:500])
    return parse(body)


def words(element):
    """An element's text with whole-number decimals as people write them ("500.00" -> "500")."""
    return re.sub(r"(\d)\.0+\b", r"\1", element.text)


def links_to(element, path):
    """The links to a path (a #fragment or ?query after it allowed)."""
    return [a for a in element.find_all("a") if re.split(r"[#?]", a.attrs.get("href") or "")[0] == path]


def fraction(progress_element):
    """A <progress>'s value as a fraction of its max."""
    value = float(progress_element.attrs["value"])
    return value / float(progress_element.attrs.get("max") or 1)


def own_progress(element):
    """An objective's or a cycle's own <progress>, not its key results' or children's."""
    found = element.find_all("progress", prune=lambda el: bool(el.classes & {"key-results", "children"}))
    assert found, f"no <progress> in {element!r}"
    return found[0]


def assert_progress(progress_element, figure):
    assert figure is not None
    assert abs(fraction(progress_element) - float(figure)) < 0.006, (progress_element.attrs, figure)


# --- data ------------------------------------------------------------------------------------------


def api(client, method, path, **body):
    response = getattr(client, method)(path, json=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def checkin(client, key_result_id, value, confidence=None, **fields):
    body = {"value": value, **fields}
    if confidence is not None:
        body["confidence"] = confidence
    return api(client, "post", f"/v1/keyresults/{key_result_id}/checkins", **body)


def report(client, cycle_id, **query):
    response = client.get(f"/v1/cycles/{cycle_id}/report", query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def report_key_results(node_list):
    for node in node_list:
        yield from node["key_results"]
        yield from report_key_results(node["children"])


@pytest.fixture
def tree(client, runner, clock):
    """A cycle with three objectives (one aligned under another) and a key result of every type.

    Created on 2026-01-01 (the baseline on 2026-02-26, with only its first check-in); every other key
    result but `stale` checked in on 2026-02-26; viewed on 2026-03-01: `stale` is the one stale key
    result, and the others' last check-in was 3 days ago.
    """
    clock.now = "2026-01-01T00:00:00Z"
    ada = make_user(runner, "Ada Lovelace", "ada@example.com")
    grace = make_user(runner, "Grace Hopper", "grace@example.com")
    platform, design = make_team(client, "Platform"), make_team(client, "Design")
    cycle = make_cycle(client, "2026 Q1")
    company = make_objective(client, cycle["id"], "Grow revenue", is_company=True,
                             team_id=platform["id"], assignee_id=ada["id"])
    team = make_objective(client, cycle["id"], "Keep servers calm", team_id=platform["id"],
                          parent_objective_id=company["id"])
    personal = make_objective(client, cycle["id"], "Learn Rust", is_personal=True, assignee_id=grace["id"])
    kr = {
        "positive": make_key_result(client, company["id"], "Reach 500 customers", type="positive",
                                    current_value="100", target_value_min="500", confidence="0.8"),
        "negative": make_key_result(client, company["id"], "Cut churn", type="negative",
                                    current_value="40", target_value_min="5", confidence="0.8"),
        "range": make_key_result(client, team["id"], "Keep load in range", type="range", current_value="0",
                                 target_value_min="1", target_value_max="4", confidence="0.8"),
        "done": make_key_result(client, team["id"], "Ship the status page", type="milestone",
                                current_value="0", target_value_min=None, confidence="0.8"),
        "not_yet": make_key_result(client, team["id"], "Write the runbook", type="milestone",
                                   current_value="0", target_value_min=None, confidence="0.8"),
        "stale": make_key_result(client, personal["id"], "Read the book", type="positive",
                                 current_value="0", target_value_min="10", confidence="0.8"),
    }
    clock.now = "2026-02-26T09:00:00Z"
    # Only its first check-in, but a recent one: no sparkline, not stale.
    kr["baseline"] = make_key_result(client, personal["id"], "Hours of practice", type="baseline",
                                     current_value="17", target_value_min=None, confidence="0.9")
    checkin(client, kr["positive"]["id"], "120", "0.8")
    checkin(client, kr["negative"]["id"], "22", "0.5")   # at risk
    checkin(client, kr["range"]["id"], "3", "0.3")       # off track
    checkin(client, kr["done"]["id"], "1", "0.8")
    checkin(client, kr["not_yet"]["id"], "0", "0.8")
    clock.now = "2026-03-01T09:00:00Z"
    return {
        "cycle": cycle, "users": {"ada": ada, "grace": grace}, "teams": {"platform": platform, "design": design},
        "objectives": {"company": company, "team": team, "personal": personal}, "kr": kr,
    }


# --- / ---------------------------------------------------------------------------------------------


def test_dashboard_lists_cycles_newest_first(client, clock):
    ids = []
    for n, name in enumerate(["Oldest", "Middle", "Newest"]):
        clock.now = f"2026-0{n + 1}-01T00:00:00Z"
        ids.append(make_cycle(client, name)["id"])
    doc = page(client, "/")
    articles = doc.find_all("article", cls="cycle")
    assert len(articles) == 3
    assert [links_to(a, f"/cycles/{i}") != [] for a, i in zip(articles, reversed(ids))] == [True] * 3, \
        "cycles are not newest first, or lack their link"
    assert [name in a.text for a, name in zip(articles, ["Newest", "Middle", "Oldest"])] == [True] * 3


@pytest.mark.slow
def test_dashboard_shows_each_cycles_progress_counts_at_risk_and_stale(client, tree, clock):
    clock.now = "2026-02-27T00:00:00Z"
    other = make_cycle(client, "2025 Q4")
    other_objective = make_objective(client, other["id"], "Tidy up")
    for name, value in (("Close tickets", "25"), ("Close more tickets", "75")):
        key_result = make_key_result(client, other_objective["id"], name, current_value="0", confidence="0.9")
        checkin(client, key_result["id"], value, "0.9")
    make_objective(client, other["id"], "Tidy more")  # no key results: no progress of its own
    clock.now = "2026-03-01T09:00:00Z"

    doc = page(client, "/")
    [rich] = [a for a in doc.find_all("article", cls="cycle") if links_to(a, f"/cycles/{tree['cycle']['id']}")]
    [small] = [a for a in doc.find_all("article", cls="cycle") if links_to(a, f"/cycles/{other['id']}")]

    expected = report(client, tree["cycle"]["id"])
    statuses = [k["status"] for k in report_key_results(expected["objectives"])]
    assert expected["objectives_count"] == 3 and expected["key_results_count"] == 7
    # Two at risk or off track; two with no check-in since they were made, which are not counted at risk; one
    # that has reached its target (done).
    assert sorted(s for s in statuses if s != "on_track") == ["at_risk", "done", "no_update", "no_update",
                                                              "off_track"], statuses
    assert len([k for k in report_key_results(expected["objectives"]) if k["stale"]]) == 1
    assert_progress(rich.one("progress"), expected["progress"])
    text = rich.text
    for phrase in ("2026 Q1", "3 objectives", "7 key results", "2 at risk", "2 with no update yet", "1 stale"):
        assert phrase in text, (phrase, text)

    small_report = report(client, other["id"])
    assert small_report["progress"] == "0.50"  # (0.25 + 0.75) / 2; the objective without key results has none
    assert_progress(small.one("progress"), small_report["progress"])
    assert "2 objectives" in small.text and "2 key results" in small.text
    assert "2 at risk" not in small.text and "1 stale" not in small.text


def test_dashboard_without_cycles_says_how_to_start(client):
    doc = page(client, "/")
    assert doc.find_all("article", cls="cycle") == []
    assert "No cycles yet" in doc.text
    assert doc.find_all("a", href="/cycles/new"), "no link to the new cycle's form"
    assert doc.find_all("a", href="/v1/openapi.json"), "no link to /v1/openapi.json"


def test_every_page_footer_links_the_api_description(client, tree):
    for path in ("/", f"/cycles/{tree['cycle']['id']}", f"/keyresults/{tree['kr']['positive']['id']}"):
        assert page(client, path).find_all("a", href="/v1/openapi.json"), path


@pytest.mark.parametrize("accept", [None, "*/*", "application/json", "application/json, text/html;q=0.9",
                                    "text/html;q=0.5, application/json"])
def test_index_for_api_clients_is_the_json_index_as_before(client, tree, accept):
    headers = {} if accept is None else {"Accept": accept}
    response = client.get("/", headers=headers)
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.get_json() == {
        "name": "okr-service", "version": importlib.metadata.version("okr-service"), "links": LINKS,
    }


def test_index_for_a_browser_is_a_page(client):
    response = client.get("/", headers=BROWSER)
    assert response.status_code == 200 and response.mimetype == "text/html"


@pytest.mark.parametrize("headers", [BROWSER, {}, {"Accept": "application/json"}], ids=["browser", "none", "json"])
def test_index_says_that_it_depends_on_accept(client, headers):
    # One URL, two representations chosen by Accept: a cache must key on it (RFC 9110, 12.5.5), or a
    # browser can be handed the JSON it cached for a script, and curl the page.
    response = client.get("/", headers=headers)
    vary = {part.strip().lower() for part in response.headers.get("Vary", "").split(",")}
    assert "accept" in vary, f"GET / chooses HTML or JSON by Accept but sends Vary: {response.headers.get('Vary')!r}"


# --- /cycles/<id> ----------------------------------------------------------------------------------


def objective_article(doc, objective):
    return doc.one("article", cls="objective", id=f"o-{objective['id']}")


def kr_item(doc, key_result):
    """The cycle page's item of a key result: the one whose link leads to its page."""
    [item] = [li for ul in doc.find_all("ul", cls="key-results") for li in ul.find_all("li")
              if li.find_all("a", href=f"/keyresults/{key_result['id']}")]
    return item


def test_cycle_page_nests_children_inside_their_parent(client, tree):
    doc = page(client, f"/cycles/{tree['cycle']['id']}")
    company = objective_article(doc, tree["objectives"]["company"])
    [children] = company.find_all("details", cls="children")
    assert "open" in children.attrs, "few aligned objectives are shown unfolded"
    assert children.find_all("article", id=f"o-{tree['objectives']['team']['id']}"), "child not in its parent"
    assert not children.find_all("article", id=f"o-{tree['objectives']['personal']['id']}")
    # Each objective once: the child is not also shown as a root.
    assert len(doc.find_all("article", cls="objective")) == 3
    # Each key result inside its own objective's list.
    for name, objective in (("positive", "company"), ("range", "team"), ("baseline", "personal")):
        article = objective_article(doc, tree["objectives"][objective])
        [own_list] = article.find_all("ul", cls="key-results", prune=lambda el: "children" in el.classes)
        assert own_list.find_all("a", href=f"/keyresults/{tree['kr'][name]['id']}"), (name, objective)


def test_cycle_page_shows_badges_team_and_assignee_names_and_progress(client, tree):
    doc = page(client, f"/cycles/{tree['cycle']['id']}")
    expected = report(client, tree["cycle"]["id"])
    company_node = expected["objectives"][0]
    team_node, personal_node = company_node["children"][0], expected["objectives"][1]
    for key, node, badge, names in (
        ("company", company_node, "company", ["Grow revenue", "Platform", "Ada Lovelace"]),
        ("team", team_node, "team", ["Keep servers calm", "Platform"]),
        ("personal", personal_node, "personal", ["Learn Rust", "Grace Hopper"]),
    ):
        article = objective_article(doc, tree["objectives"][key])
        heading = article.find_all("h3", prune=lambda el: "children" in el.classes)[0]
        assert names[0] in heading.text
        badges = article.find_all("span", cls="badge", prune=lambda el: bool(el.classes & {"children", "key-results"}))
        assert [b.text.lower() for b in badges][:1] == [badge], (key, [b.text for b in badges])
        own = article.own_text("children")
        for name in names[1:]:
            assert name in own, (key, name, own)
        assert_progress(own_progress(article), node["progress"])
    assert "Grace Hopper" not in objective_article(doc, tree["objectives"]["company"]).own_text("children")
    assert "Ada Lovelace" not in objective_article(doc, tree["objectives"]["personal"]).own_text("children")


@pytest.mark.parametrize("key, phrase", [
    ("positive", "120 of 500"),
    ("negative", "from 40 down to 5: now 22"),
    ("range", "stay between 1 and 4: now 3"),
    ("done", "done"),
    ("not_yet", "not yet"),
    ("baseline", "now 17 (no target)"),
])
def test_cycle_page_puts_each_key_result_in_words_per_type(client, tree, key, phrase):
    doc = page(client, f"/cycles/{tree['cycle']['id']}")
    item = kr_item(doc, tree["kr"][key])
    assert links_to(item, f"/keyresults/{tree['kr'][key]['id']}"), "no link to the key result's page"
    assert tree["kr"][key]["name"] in item.text
    assert tree["kr"][key]["type"] in item.text
    assert phrase in words(item), (phrase, words(item))
    if key == "not_yet":
        assert not re.search(r"\bdone\b", words(item)), words(item)


def test_cycle_page_key_result_progress_matches_the_report(client, tree):
    doc = page(client, f"/cycles/{tree['cycle']['id']}")
    nodes = {k["id"]: k for k in report_key_results(report(client, tree["cycle"]["id"])["objectives"])}
    for key, key_result in tree["kr"].items():
        item = kr_item(doc, key_result)
        if key == "baseline":
            assert item.find_all("progress") == [], "a baseline has no progress"
        else:
            [bar] = item.find_all("progress")
            assert_progress(bar, nodes[key_result["id"]]["progress"])
    assert nodes[tree["kr"]["negative"]["id"]]["progress"] == "0.51"  # the figures are not all 0 or 1


@pytest.mark.parametrize("key, confidence, status", [
    ("positive", "80% confidence", "on track"),
    ("negative", "50% confidence", "at risk"),
    ("range", "30% confidence", "off track"),
])
def test_cycle_page_shows_confidence_and_status_in_words_and_class(client, tree, key, confidence, status):
    item = kr_item(page(client, f"/cycles/{tree['cycle']['id']}"), tree["kr"][key])
    assert confidence in item.text, item.text
    assert status in item.text, item.text
    for other in {"on track", "at risk", "off track"} - {status}:
        assert other not in item.text, (other, item.text)
    pattern = re.compile(status.replace(" ", "[-_]?"))
    classes = item.all_classes()
    assert any(pattern.fullmatch(c) or pattern.search(c) for c in classes), (status, classes)
    for other in {"on track", "at risk", "off track"} - {status}:
        assert not any(re.search(other.replace(" ", "[-_]?"), c) for c in classes), (other, classes)


def test_cycle_page_marks_stale_key_results_only(client, tree):
    doc = page(client, f"/cycles/{tree['cycle']['id']}")
    for key, key_result in tree["kr"].items():
        stale = bool(re.search(r"\bstale\b", kr_item(doc, key_result).text, re.IGNORECASE))
        assert stale == (key == "stale"), (key, kr_item(doc, key_result).text)


def test_cycle_page_staleness_follows_the_clock(client, tree, clock):
    clock.now = "2026-03-20T09:00:00Z"  # 22 days after the last check-ins: all stale now
    doc = page(client, f"/cycles/{tree['cycle']['id']}")
    for key_result in tree["kr"].values():
        assert re.search(r"\bstale\b", kr_item(doc, key_result).text, re.IGNORECASE), key_result["name"]


def test_cycle_page_shows_the_last_check_in_time(client, tree):
    doc = page(client, f"/cycles/{tree['cycle']['id']}")
    [moment] = kr_item(doc, tree["kr"]["positive"]).find_all("time")
    assert moment.attrs["datetime"] == "2026-02-26T09:00:00Z"  # exact; the words are relative
    assert moment.text == "3 days ago"
    [old] = kr_item(doc, tree["kr"]["stale"]).find_all("time")
    assert old.attrs["datetime"] == "2026-01-01T00:00:00Z" and old.text == "59 days ago"


def test_cycle_page_draws_a_sparkline_only_from_two_check_ins(client, tree):
    doc = page(client, f"/cycles/{tree['cycle']['id']}")
    for key in ("positive", "negative", "range", "done"):  # a first check-in and one more
        assert len(kr_item(doc, tree["kr"][key]).find_all("svg", aria_hidden="true")) == 1, key
    for key in ("baseline", "stale"):  # only the first check-in
        assert kr_item(doc, tree["kr"][key]).find_all("svg") == [], key


def test_cycle_page_filters_by_team(client, tree):
    platform = tree["teams"]["platform"]["id"]
    doc = page(client, f"/cycles/{tree['cycle']['id']}", query_string={"team_id": platform})
    shown = {a.attrs["id"] for a in doc.find_all("article", cls="objective")}
    assert shown == {f"o-{tree['objectives']['company']['id']}", f"o-{tree['objectives']['team']['id']}"}
    form = doc.one("form", cls="filters")
    assert form.attrs.get("method", "").lower() == "get"
    select = form.one("select", name="team_id")
    selected = [o.attrs.get("value") for o in select.find_all("option") if "selected" in o.attrs]
    assert selected == [platform]
    values = [o.attrs.get("value") for o in select.find_all("option")]
    assert "" in values and tree["teams"]["design"]["id"] in values
    everyone = form.one("select", name="assignee_id")
    assert [o.attrs.get("value") for o in everyone.find_all("option") if "selected" in o.attrs] in ([], [""])
    assert any("Filter" in b.text or b.attrs.get("value") == "Filter"
               for b in form.find_all("button") + form.find_all("input", type="submit"))


def test_cycle_page_filters_by_assignee(client, tree):
    grace = tree["users"]["grace"]["id"]
    doc = page(client, f"/cycles/{tree['cycle']['id']}", query_string={"assignee_id": grace})
    shown = {a.attrs["id"] for a in doc.find_all("article", cls="objective")}
    assert shown == {f"o-{tree['objectives']['personal']['id']}"}
    select = doc.one("form", cls="filters").one("select", name="assignee_id")
    assert [o.attrs.get("value") for o in select.find_all("option") if "selected" in o.attrs] == [grace]
    assert {o.attrs.get("value") for o in select.find_all("option")} >= {"", grace, tree["users"]["ada"]["id"]}
    assert "Grace Hopper" in select.text and "Ada Lovelace" in select.text


def test_cycle_page_filters_by_team_and_assignee_together(client, tree):
    doc = page(client, f"/cycles/{tree['cycle']['id']}", query_string={
        "team_id": tree["teams"]["platform"]["id"], "assignee_id": tree["users"]["ada"]["id"]})
    shown = {a.attrs["id"] for a in doc.find_all("article", cls="objective")}
    assert shown == {f"o-{tree['objectives']['company']['id']}"}


def test_cycle_page_empty_filters_show_everything(client, tree):
    doc = page(client, f"/cycles/{tree['cycle']['id']}", query_string={"team_id": "", "assignee_id": ""})
    assert len(doc.find_all("article", cls="objective")) == 3


@pytest.mark.parametrize("query", [{"team_id": "not-an-id"}, {"assignee_id": "12345"},
                                   {"team_id": str(uuid.uuid4()).upper()}])
def test_cycle_page_malformed_filter_is_a_400_page(client, tree, query):
    doc = page(client, f"/cycles/{tree['cycle']['id']}", status=400, query_string=query)
    assert doc.find_all("article", cls="objective") == []
    name = next(iter(query)).replace("_id", "")
    assert name in doc.text.lower() and "id" in doc.text.lower(), doc.text


@pytest.mark.parametrize("cycle_id", [str(uuid.uuid4()), "not-a-cycle"])
def test_unknown_cycle_is_a_404_page(client, cycle_id):
    doc = page(client, f"/cycles/{cycle_id}", status=404)
    assert doc.find_all("html") or doc.find_all("body"), "not an HTML page"
    assert "cycle" in doc.text.lower()


def test_empty_cycle_says_how_to_add_an_objective(client):
    cycle = make_cycle(client, "Empty")
    doc = page(client, f"/cycles/{cycle['id']}")
    assert doc.find_all("article", cls="objective") == []
    assert "No objectives in this cycle yet" in doc.text
    assert doc.find_all("a", href=f"/objectives/new?cycle_id={cycle['id']}"), "no link to the objective form"


# --- /keyresults/<id> ------------------------------------------------------------------------------


@pytest.fixture
def history(client, runner, tree, clock):
    """The positive key result with three check-ins after its first, the last by Ada."""
    key_result = tree["kr"]["positive"]
    clock.now = "2026-02-27T09:00:00Z"
    checkin(client, key_result["id"], "150", "0.75", comment="picking up")
    clock.now = "2026-02-28T09:00:00Z"
    checkin(client, key_result["id"], "180", "0.85", comment="good week", author_id=tree["users"]["ada"]["id"])
    clock.now = "2026-03-01T09:00:00Z"
    return key_result


def test_key_result_page_heading_objective_and_summary(client, tree, history):
    doc = page(client, f"/keyresults/{history['id']}")
    assert "Reach 500 customers" in doc.one("h1").text
    assert links_to(doc, f"/cycles/{tree['cycle']['id']}"), "no link to the objective's cycle"
    assert "Grow revenue" in doc.text
    assert "180 of 500" in words(doc), words(doc)
    assert "85% confidence" in doc.text


def test_key_result_history_is_newest_first_with_headers(client, history):
    table = page(client, f"/keyresults/{history['id']}").one("table", cls="history")
    assert [th.text for th in table.find_all("th")][:5] == ["When", "Value", "Confidence", "Comment", "Author"]
    rows = [tr for tr in table.find_all("tr") if tr.find_all("td")]
    assert len(rows) == 4
    values = [re.sub(r"(\d)\.0+\b", r"\1", row.find_all("td")[1].text) for row in rows]
    assert values == ["180", "150", "120", "100"], values
    assert "good week" in rows[0].text and "picking up" in rows[1].text
    assert "Ada Lovelace" in rows[0].find_all("td")[4].text, "the author is not named"
    assert "Ada Lovelace" not in rows[1].text


@pytest.mark.parametrize("key, lines, bands", [("positive", 1, 0), ("range", 0, 1), ("done", 1, 0),
                                               ("baseline", 0, 0)])
def test_key_result_chart_draws_its_targets(client, tree, key, lines, bands):
    doc = page(client, f"/keyresults/{tree['kr'][key]['id']}")
    chart = doc.one("svg", cls="chart")
    assert chart.attrs.get("role") == "img"
    assert (chart.attrs.get("aria-label") or "").strip(), "the chart has no accessible name"
    assert len(chart.find_all("line", cls="target")) == lines
    assert len(chart.find_all("rect", cls="band")) == bands


def test_key_result_form_is_prefilled_with_the_present_confidence(client, history):
    form = page(client, f"/keyresults/{history['id']}").one("form", cls="checkin")
    assert form.attrs.get("method", "").lower() == "post"
    assert form.one("input", name="value").attrs.get("value", "") == ""
    assert form.one("input", name="confidence").attrs["value"] == "85%"
    assert form.one("textarea", name="comment").text == ""
    token = form.one("input", name="csrf_token")
    assert token.attrs.get("type") == "hidden" and token.attrs.get("value")
    assert any("Record check-in" in b.text for b in form.find_all("button")) or \
        any(i.attrs.get("value") == "Record check-in" for i in form.find_all("input", type="submit"))


@pytest.mark.parametrize("key_result_id", [str(uuid.uuid4()), "not-a-key-result"])
def test_unknown_key_result_is_a_404_page(client, key_result_id):
    doc = page(client, f"/keyresults/{key_result_id}", status=404)
    assert "key result" in doc.text.lower()


def test_sparkline_shows_the_last_12_check_ins(client, tree, clock):
    key_result = tree["kr"]["positive"]
    for n in range(14):  # with its first check-in and the fixture's one: 16 in all
        clock.now = f"2026-02-27T{n:02d}:00:00Z"
        checkin(client, key_result["id"], str(130 + n), "0.8")
    clock.now = "2026-03-01T09:00:00Z"
    [spark] = kr_item(page(client, f"/cycles/{tree['cycle']['id']}"), key_result).find_all("svg")
    [line] = spark.find_all("polyline")
    points = [tuple(map(float, point.split(","))) for point in line.attrs["points"].split()]
    assert len(points) == 12, points
    # Oldest first, left to right, each value higher than the last (up is a smaller y), inside 60 × 16.
    xs, ys = [x for x, _ in points], [y for _, y in points]
    assert xs == sorted(xs) and xs[0] == 0 and xs[-1] == 60, xs
    assert ys == sorted(ys, reverse=True) and len(set(ys)) > 6 and 0 <= min(ys) and max(ys) <= 16, ys


def test_names_are_escaped_not_markup(client, clock):
    cycle = make_cycle(client, "<i>Q1</i>")
    objective = make_objective(client, cycle["id"], "<b>Grow</b> & <script>alert(1)</script>")
    key_result = make_key_result(client, objective["id"], "<em>Reach</em> 500")
    for path in ("/", f"/cycles/{cycle['id']}", f"/keyresults/{key_result['id']}"):
        doc = page(client, path)
        assert all("alert(1)" not in script.text for script in doc.find_all("script")), path
        assert not doc.find_all("b") and not doc.find_all("i") and not doc.find_all("em"), path
    assert "<b>Grow</b> & <script>alert(1)</script>" in page(client, f"/cycles/{cycle['id']}").text


def test_a_big_page_goes_out_gzipped_to_a_client_that_takes_gzip(client, monkeypatch):
    import gzip

    import okr.web.views
    monkeypatch.setattr(okr.web.views, "GZIP_FROM_BYTES", 100)
    cycle = make_cycle(client, name="Gzip me")
    plain = client.get(f"/cycles/{cycle['id']}")
    packed = client.get(f"/cycles/{cycle['id']}", headers={"Accept-Encoding": "gzip, deflate"})
    assert "Content-Encoding" not in plain.headers and "Accept-Encoding" in plain.headers["Vary"]
    assert packed.headers["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed.headers["Vary"]
    assert gzip.decompress(packed.data) == plain.data


def test_a_small_page_and_the_json_index_are_never_gzipped(client):
    assert "Content-Encoding" not in client.get("/login", headers={"Accept-Encoding": "gzip"}).headers
    assert "Content-Encoding" not in client.get("/", headers={"Accept-Encoding": "gzip"}).headers
