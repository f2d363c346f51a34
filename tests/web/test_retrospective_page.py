"""A cycle's retrospective page (/cycles/<id>/retrospective, ?team_id=) and its CSV: what the API's retrospective
holds, in words, linked from the cycle page."""
import csv
import io

from helpers import make_cycle, make_objective
from html_tree import BROWSER, parse


def page(client, path):
    response = client.get(path, headers=BROWSER)
    assert response.status_code == 200, response.data[:500]
    return parse(response.get_data(as_text=True))


def test_the_cycle_page_links_to_its_retrospective(client, cycle):
    tree = page(client, f"/cycles/{cycle['id']}")
    assert [a.text for a in tree.find_all("a", href=f"/cycles/{cycle['id']}/retrospective")] == ["Retrospective"]


def test_the_page_shows_scores_movers_what_went_off_track_and_the_calibration(client, worked_example):
    tree = page(client, f"/cycles/{worked_example['cycle']}/retrospective")
    assert tree.one("h1").text == "Retrospective: Q4"
    assert not tree.find_all(cls="not-closed")
    grow, ship = tree.find_all("article", cls="retro-objective")
    assert "Partly achieved · score 0.55 · progress 55%" in grow.one("p", cls="meta").text
    assert [row.one("th").text for row in grow.find_all("tr")[1:]] == ["Signups", "Churn"]
    assert "0.50 not achieved" in ship.text  # Bob's own score, not the progress of 100%
    movers = tree.one("div", cls="movers")
    assert [li.one("a").text for li in movers.find_all("li")] == ["Launch", "Signups", "Churn"]
    assert "0% → 100% (+100 points)" in movers.find_all("li")[0].text
    off = tree.one("section", aria_labelledby="off-track")
    assert "Churn : off track since the check-in of 10 Dec 2026" in off.text
    tables = [t for t in tree.find_all("table") if "Calibration" in t.one("caption").text]
    ada = [[cell.text for cell in row.children if hasattr(cell, "tag")] for row in tables[0].find_all("tr")][1]
    assert ada[:5] == ["Ada Lovelace", "2", "4", "0.30", "0.30"]
    assert "Churn : 80% confident on 10 Dec 2026, scored 0.30" in ada[5]
    assert [row.one("th").text for row in tables[1].find_all("tr")[1:]] == ["Blue", "Red"]


def test_an_open_cycle_says_its_figures_are_as_of_now(client, cycle, key_result):
    tree = page(client, f"/cycles/{cycle['id']}/retrospective")
    assert tree.one(cls="not-closed").text == "This cycle is not closed yet; figures are as of now."


def test_one_team_s_page_and_its_csv(client, worked_example):
    cycle, red = worked_example["cycle"], worked_example["red"]
    tree = page(client, f"/cycles/{cycle}/retrospective?team_id={red}")
    assert tree.one("h1").text == "Retrospective: Q4 · Red"
    assert [a.one("h3").text for a in tree.find_all("article", cls="retro-objective")] == ["Grow"]
    assert "selected" in tree.one("option", value=red).attrs
    assert [a.attrs["href"] for a in tree.find_all("a") if "download" in a.attrs] == [
        f"/cycles/{cycle}/retrospective.csv?team_id={red}"]
    rows = list(csv.reader(io.StringIO(client.get(f"/cycles/{cycle}/retrospective.csv?team_id={red}")
                                       .get_data(as_text=True).lstrip("\ufeff"))))
    assert [row[0] for row in rows] == ["kind", "objective", "key_result", "key_result"]


def test_the_csv_has_a_row_per_objective_and_key_result(client, worked_example):
    response = client.get(f"/cycles/{worked_example['cycle']}/retrospective.csv")
    assert response.headers["Content-Type"] == "text/csv; charset=utf-8"
    assert response.headers["Content-Disposition"] == 'attachment; filename="Q4-retrospective.csv"'
    assert response.data.startswith("\ufeff".encode())
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True).lstrip("\ufeff"))))
    assert list(rows[0]) == ["kind", "objective_id", "objective", "team", "key_result_id", "key_result", "owner",
                             "outcome", "score", "progress_at_start", "progress_at_close", "final_score", "achieved",
                             "reflection"]
    assert [(r["kind"], r["objective"], r["key_result"], r["outcome"], r["score"], r["progress_at_start"],
             r["progress_at_close"], r["final_score"], r["achieved"]) for r in rows] == [
        ("objective", "Grow", "", "partly_achieved", "0.55", "", "0.55", "", ""),
        ("key_result", "Grow", "Signups", "", "0.80", "0.00", "0.80", "0.80", "true"),
        ("key_result", "Grow", "Churn", "", "0.30", "0.00", "0.30", "0.30", "false"),
        ("objective", "Ship", "", "achieved", "1.00", "", "1.00", "", ""),
        ("key_result", "Ship", "Launch", "", "0.50", "0.00", "1.00", "0.50", "false")]


def test_free_text_in_the_csv_cannot_be_a_formula(client):
    cycle = make_cycle(client)
    make_objective(client, cycle["id"], "=SUM(A1)")
    rows = list(csv.reader(io.StringIO(client.get(f"/cycles/{cycle['id']}/retrospective.csv")
                                       .get_data(as_text=True))))
    assert rows[1][2] == "'=SUM(A1)"


def test_bad_and_unknown_teams_and_cycles_are_refused_with_a_page(client, cycle):
    for path in ("retrospective", "retrospective.csv"):
        bad = client.get(f"/cycles/{cycle['id']}/{path}?team_id=red", headers=BROWSER)
        assert bad.status_code == 400 and b"not a valid id" in bad.data
        unknown = client.get(f"/cycles/{cycle['id']}/{path}?team_id=00000000-0000-4000-8000-000000000000",
                             headers=BROWSER)
        assert unknown.status_code == 404 and b"No such team" in unknown.data
        assert client.get(f"/cycles/00000000-0000-4000-8000-000000000000/{path}", headers=BROWSER).status_code == 404
