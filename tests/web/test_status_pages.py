"""Statuses on the pages come from the report (status from pace and confidence): the cycle page's objectives
show theirs, a done key result reads "done" with its own class, and a key result's page says how much progress
is expected by now."""
from helpers import make_key_result, make_objective
from html_tree import parse


def dated_cycle(client):
    response = client.post("/v1/cycles", json={"name": "Q4", "starts_on": "2026-10-01", "ends_on": "2026-12-30"})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def checkin(client, key_result_id, value):
    response = client.post(f"/v1/keyresults/{key_result_id}/checkins", json={"value": value, "confidence": "0.9"})
    assert response.status_code == 200, response.get_json()


def page(client, path):
    response = client.get(path)
    assert response.status_code == 200
    return parse(response.get_data(as_text=True))


def test_the_cycle_page_shows_each_objectives_status_and_done_key_results(client, clock):
    clock.now = "2026-10-01T09:00:00Z"
    cycle = dated_cycle(client)
    shipped = make_objective(client, cycle["id"], "Ship")
    late = make_objective(client, cycle["id"], "Late")
    milestone = make_key_result(client, shipped["id"], "Launch", type="milestone", current_value="0",
                                target_value_min="1", confidence="0.9")
    behind = make_key_result(client, late["id"], "Reach", current_value="0", target_value_min="100",
                             confidence="0.9")
    clock.now = "2026-11-15T12:00:00Z"  # halfway
    checkin(client, milestone["id"], "1")
    checkin(client, behind["id"], "20")  # 0.30 short of the pace, though confident
    tree = page(client, f"/cycles/{cycle['id']}")
    status_of = {}
    for article in tree.find_all("article", cls="objective"):  # its group row: the status in words, its colour
        group = article.one("div", cls="g")
        status_of[group.one("h3").find_all("a")[0].text] = (article.classes, group.one("span", cls="status").text)
    assert status_of == {"Ship": ({"objective", "done"}, "done"), "Late": ({"objective", "off_track"}, "off track")}
    rows = [item for listing in tree.find_all("ul", cls="key-results") for item in listing.find_all("li")]
    items = {item.one("a").text: item for item in rows if item.classes & {"done", "off_track"}}
    assert items["Launch"].classes == {"done"} and items["Launch"].one("span", cls="status").text == "done"
    assert items["Reach"].one("span", cls="status").text == "off track"
    key_result = page(client, f"/keyresults/{behind['id']}").one("p", cls="kr")
    assert "off_track" in key_result.classes
    assert "50% expected by now" in key_result.text


def test_an_undated_cycle_expects_nothing_on_a_key_results_page(client, clock):
    cycle = client.post("/v1/cycles", json={"name": "Open"}).get_json()
    kr = make_key_result(client, make_objective(client, cycle["id"])["id"], "Reach", current_value="0",
                         target_value_min="100", confidence="0.9")
    checkin(client, kr["id"], "20")
    key_result = page(client, f"/keyresults/{kr['id']}").one("p", cls="kr")
    assert "expected" not in key_result.text and "on_track" in key_result.classes
