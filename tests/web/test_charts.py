"""The charts: the SVG drawing (okr/web/charts.py), the time series it draws (okr/reports/timelines.py) and the
pages that show them (a key result's, an objective's, a cycle's), with Flask's test client."""
import re
from datetime import date
from pathlib import Path

import pytest

from helpers import make_cycle, make_key_result, make_objective
from html_tree import BROWSER, parse
from okr import progress
from okr.db import get_db
from okr.reports import timelines
from okr.store import cycles
from okr.web import charts, wording


def drawn(markup):
    """A chart's markup as a tree, and its <svg>."""
    doc = parse(str(markup))
    return doc, doc.one("svg", cls="chart")


def labels(svg, cls):
    return [el.text for el in svg.find_all("text", cls=cls)]


def value_chart(**fields):
    given = {"points": [(date(2026, 10, 1), "100"), (date(2026, 10, 20), "250")], "first": date(2026, 10, 1),
             "last": date(2026, 12, 29), "kind": "positive", "target_min": "500"}
    given.update(fields)
    return drawn(charts.value_chart(**given))


# --- the drawing ------------------------------------------------------------------------------------------


def test_a_90_day_cycle_is_marked_each_month():
    assert charts.date_ticks(date(2026, 10, 1), date(2026, 12, 29)) == [
        date(2026, 10, 1), date(2026, 11, 1), date(2026, 12, 1)]
    _, svg = value_chart()
    assert labels(svg, "date") == ["1 Oct", "1 Nov", "1 Dec"]


def test_a_14_day_cycle_is_marked_each_week():
    first, last = date(2026, 10, 5), date(2026, 10, 18)
    assert charts.date_ticks(first, last) == [date(2026, 10, 5), date(2026, 10, 12)]
    _, svg = value_chart(points=[(first, "1")], first=first, last=last)
    assert labels(svg, "date") == ["5 Oct", "12 Oct"]


def test_an_axis_across_new_year_says_the_years():
    _, svg = value_chart(first=date(2026, 11, 15), last=date(2027, 2, 10), points=[(date(2026, 11, 20), "1")])
    assert labels(svg, "date") == ["1 Dec 2026", "1 Jan 2027", "1 Feb 2027"]


def test_the_target_is_a_line_and_a_range_a_band():
    _, svg = value_chart()
    assert len(svg.find_all("line", cls="target")) == 1 and not svg.find_all("rect", cls="band")
    assert labels(svg, "target-label") == ["target 500"]
    _, svg = value_chart(kind="range", target_min="1", target_max="4", points=[(date(2026, 10, 1), "3")])
    assert not svg.find_all("line", cls="target")
    band = svg.one("rect", cls="band")
    assert float(band.attrs["height"]) > 1
    assert labels(svg, "target-label") == ["target 1 to 4"]
    _, svg = value_chart(kind="baseline", target_min=None)
    assert not svg.find_all("line", cls="target") and not svg.find_all("rect", cls="band")


def test_the_band_spans_the_range_on_the_value_axis():
    _, svg = value_chart(kind="range", target_min="10", target_max="20",
                         points=[(date(2026, 10, 1), "10"), (date(2026, 10, 2), "20")])
    band = svg.one("rect", cls="band")
    low, high = [float(dot.attrs["cy"]) for dot in svg.find_all("circle", cls="dot")]
    assert float(band.attrs["y"]) == pytest.approx(high, abs=0.11)
    assert float(band.attrs["y"]) + float(band.attrs["height"]) == pytest.approx(low, abs=0.2)


def test_the_expected_line_runs_from_the_start_value_at_the_start_to_the_target_at_the_end():
    first, last = date(2026, 10, 1), date(2026, 12, 29)
    # Points at both ends of the expected line: its ends sit on them.
    _, svg = value_chart(points=[(first, "100"), (last, "500")],
                         expected=((first, "100"), (last, "500")))
    line = svg.one("line", cls="expected")
    start, end = [(float(dot.attrs["cx"]), float(dot.attrs["cy"])) for dot in svg.find_all("circle", cls="dot")]
    assert (float(line.attrs["x1"]), float(line.attrs["y1"])) == start
    assert (float(line.attrs["x2"]), float(line.attrs["y2"])) == end
    assert start[1] > end[1], "the higher value is drawn higher"
    _, svg = value_chart()
    assert not svg.find_all("line", cls="expected")


@pytest.mark.parametrize("today, marked", [(date(2026, 11, 2), True), (date(2026, 10, 1), True),
                                           (date(2026, 12, 29), True), (date(2026, 9, 30), False),
                                           (date(2026, 12, 30), False), (None, False)])
def test_today_is_marked_only_inside_the_cycle(today, marked):
    for _, svg in (value_chart(today=today),
                   drawn(charts.progress_chart([], date(2026, 10, 1), date(2026, 12, 29), today=today))):
        assert len(svg.find_all("line", cls="today")) == (1 if marked else 0)
        assert labels(svg, "today-label") == (["today"] if marked else [])


def test_the_unit_labels_the_value_axis_and_none_is_shown_without_one():
    doc, svg = value_chart(unit="km")
    assert labels(svg, "unit") == ["km"]
    assert [th.text for th in doc.find_all("th", scope="col")] == ["Date", "Value (km)"]
    assert [dot.one("title").text for dot in svg.find_all("circle")][0] == "1 Oct 2026: 100 km"
    doc, svg = value_chart(unit=None)
    assert labels(svg, "unit") == []
    assert [th.text for th in doc.find_all("th", scope="col")] == ["Date", "Value"]


def test_text_from_outside_is_escaped():
    markup = str(charts.value_chart([(date(2026, 10, 1), "1")], date(2026, 10, 1), date(2026, 10, 9), "positive",
                                    "2", unit="<b>€</b>"))
    assert "<b>" not in markup and "&lt;b&gt;€&lt;/b&gt;" in markup


def table_points(doc):
    """The chart's table: (date as written, the other cells) per row."""
    table = doc.one("details", cls="chart-table").one("table")
    return [(tr.one("th").text, [td.text for td in tr.find_all("td")]) for tr in table.one("tbody").find_all("tr")]


def svg_points(svg):
    """The chart's dots as their titles say them: (date, value)."""
    return [tuple(dot.one("title").text.split(": ")) for dot in svg.find_all("circle", cls="dot")]


def test_the_table_holds_the_points_of_the_chart():
    points = [(date(2026, 10, 1), "100.00"), (date(2026, 10, 8), "180.5"), (date(2026, 11, 3), "240")]
    doc, svg = value_chart(points=points)
    rows = table_points(doc)
    assert rows == [("1 Oct 2026", ["100"]), ("8 Oct 2026", ["180.5"]), ("3 Nov 2026", ["240"])]
    assert svg_points(svg) == [(day, value) for day, [value] in rows]
    assert len(svg.one("polyline", cls="line").attrs["points"].split()) == len(rows)
    assert doc.one("details", cls="chart-table").one("summary").text


def test_a_progress_chart_runs_from_0_to_100_percent_against_the_expected_line():
    first, last = date(2026, 10, 1), date(2026, 10, 10)
    points = [(date(2026, 10, 1), None, "0.00"), (date(2026, 10, 2), "0.25", "0.11"),
              (date(2026, 10, 3), "0.5", "0.22")]
    doc, svg = drawn(charts.progress_chart(points, first, last, ((first, "0.00"), (last, "1.00")), date(2026, 10, 3)))
    assert labels(svg, "tick")[:5] == ["0%", "25%", "50%", "75%", "100%"]
    line = svg.one("line", cls="expected")
    zero, full = [el for el in svg.find_all("line", cls="grid")][0], [el for el in svg.find_all("line", cls="grid")][4]
    assert float(line.attrs["y1"]) == float(zero.attrs["y1"]) and float(line.attrs["y2"]) == float(full.attrs["y1"])
    assert float(line.attrs["x1"]) == charts.LEFT and float(line.attrs["x2"]) == charts.WIDTH - charts.RIGHT
    rows = table_points(doc)
    assert rows == [("1 Oct 2026", ["none yet", "0%"]), ("2 Oct 2026", ["25%", "11%"]), ("3 Oct 2026", ["50%", "22%"])]
    assert svg_points(svg) == [(day, cells[0]) for day, cells in rows if cells[0] != "none yet"]


def test_the_status_bar_counts_each_status_given_and_names_an_unknown_one():
    doc = parse(str(charts.status_bar([("on_track", 3), ("at_risk", 0), ("off_track", 1), ("behind", 2)],
                                      wording.STATUS_WORDS)))
    legend = [li.text for li in doc.one("ul", cls="legend").find_all("li")]
    assert legend == ["on track 3", "off track 1", "behind 2"]
    widths = [float(rect.attrs["width"]) for rect in doc.find_all("rect", cls="part")]
    assert widths == pytest.approx([50, 100 / 6, 100 / 3], abs=0.01)
    assert str(charts.status_bar([("on_track", 0)], wording.STATUS_WORDS)) == ""


# --- the time series --------------------------------------------------------------------------------------


def test_values_as_they_stood_each_day():
    checkins = [("2026-10-03T09:00:00Z", "10"), ("2026-10-05T08:00:00Z", "20"), ("2026-10-05T17:00:00Z", "25"),
                ("2026-10-05T23:59:59Z", "24")]
    assert timelines.daily_values(checkins, date(2026, 10, 2), date(2026, 10, 7)) == [
        (date(2026, 10, 2), None),  # the day before the first check-in
        (date(2026, 10, 3), "10"), (date(2026, 10, 4), "10"),
        (date(2026, 10, 5), "24"),  # several on one day: the last wins
        (date(2026, 10, 6), "24"), (date(2026, 10, 7), "24")]


@pytest.fixture
def quarter(client, clock):
    """A cycle from 1 to 10 Oct 2026: objective A with two key results, B (aligned under A) with one, C with a
    baseline only; check-ins on 2, 4 and 4 Oct; viewed on 6 Oct."""
    clock.now = "2026-10-01T08:00:00Z"
    cycle = make_cycle(client, "Ten days")
    assert client.patch(f"/v1/cycles/{cycle['id']}",
                        json={"starts_on": "2026-10-01", "ends_on": "2026-10-10"}).status_code == 200
    a = make_objective(client, cycle["id"], "A")
    b = make_objective(client, cycle["id"], "B", parent_objective_id=a["id"])
    c = make_objective(client, cycle["id"], "C")
    clock.now = "2026-10-02T10:00:00Z"
    sales = make_key_result(client, a["id"], "Sales", current_value="0", target_value_min="100")
    bugs = make_key_result(client, a["id"], "Bugs", type="negative", current_value="50", target_value_min="10")
    ship = make_key_result(client, b["id"], "Ship", type="milestone", current_value="0", target_value_min=None)
    make_key_result(client, c["id"], "Measure", type="baseline", current_value="7", target_value_min=None)
    clock.now = "2026-10-04T09:00:00Z"
    for key_result, value in ((sales, "40"), (bugs, "30"), (ship, "1")):
        assert client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": value}).status_code == 200
    clock.now = "2026-10-04T18:00:00Z"
    assert client.post(f"/v1/keyresults/{sales['id']}/checkins", json={"value": "50"}).status_code == 200
    clock.now = "2026-10-06T12:00:00Z"
    return {"cycle": cycle, "a": a, "b": b, "c": c, "sales": sales}


def test_a_cycles_burn_up_is_the_mean_of_its_objectives_each_day_up_to_today(app, client, quarter):
    with app.test_request_context():
        cycle = cycles.get(get_db(), quarter["cycle"]["id"])
        line = timelines.cycle_progress(get_db(), cycle, date(2026, 10, 6))
    # A: sales 0 of 100 and bugs 50 → 10 start at 0 (mean 0), B: not yet 0; on 4 Oct, A is (0.5 + 0.5) / 2 and B 1.
    assert line["points"] == [(date(2026, 10, 1), None, "0.00"), (date(2026, 10, 2), "0.00", "0.11"),
                              (date(2026, 10, 3), "0.00", "0.22"), (date(2026, 10, 4), "0.75", "0.33"),
                              (date(2026, 10, 5), "0.75", "0.44"), (date(2026, 10, 6), "0.75", "0.56")]
    assert (line["first"], line["last"]) == (date(2026, 10, 1), date(2026, 10, 10))
    assert line["expected"] == ((date(2026, 10, 1), "0.00"), (date(2026, 10, 10), "1.00"))
    report = client.get(f"/v1/cycles/{quarter['cycle']['id']}/report").get_json()
    assert line["points"][-1][1] == report["progress"], "today's point is the report's figure"


@pytest.mark.parametrize("step", [1, 2, 7])
def test_a_streamed_burn_up_is_the_replayed_one(app, client, quarter, monkeypatch, step):
    """A big cycle's burn-up, read objective by objective as the check-ins stream, has the replay's points."""
    monkeypatch.setattr(timelines, "DAILY_UP_TO", 0 if step == 7 else 10**9)
    with app.test_request_context():
        cycle = cycles.get(get_db(), quarter["cycle"]["id"])
        streamed = timelines.cycle_progress_streamed(get_db(), cycle, date(2026, 10, 6), step=step)
        for moment in (date(2026, 10, 6), date(2026, 10, 12)):  # during the cycle and after it
            if step != 2:
                assert timelines.cycle_progress_streamed(get_db(), cycle, moment, step=step) == \
                    timelines.cycle_progress_now(get_db(), cycle, moment)
    assert [value for _, value, _ in streamed["points"]][::-1][0] == "0.75" and streamed["points"][0][1] is None
    assert len(streamed["points"]) == {1: 6, 2: 4, 7: 2}[step]
    assert client.patch(f"/v1/cycles/{quarter['cycle']['id']}", json={"starts_on": None, "ends_on": None}
                        ).status_code == 200  # undated: from its first check-in's day to its last's
    with app.test_request_context():
        cycle = cycles.get(get_db(), quarter["cycle"]["id"])
        if step != 2:
            assert timelines.cycle_progress_streamed(get_db(), cycle, date(2026, 10, 6), step=step) == \
                timelines.cycle_progress_now(get_db(), cycle, date(2026, 10, 6))
        assert timelines.cycle_progress_streamed(get_db(), cycle, date(2026, 10, 6), step=step)["expected"] is None


def test_a_streamed_burn_up_sums_a_tie_exactly(app, client, quarter, monkeypatch):
    """Where the bounds leave a rounding tie between them, the point is summed exactly, in a second read."""
    monkeypatch.setattr(progress, "figure_between", lambda low, high, count: None)
    with app.test_request_context():
        cycle = cycles.get(get_db(), quarter["cycle"]["id"])
        streamed = timelines.cycle_progress_streamed(get_db(), cycle, date(2026, 10, 6), step=1)
    assert [value for _, value, _ in streamed["points"]] == [None, "0.00", "0.00", "0.75", "0.75", "0.75"]


def test_an_objectives_progress_rolls_up_from_its_children_without_key_results(app, client, quarter):
    with app.test_request_context():
        db = get_db()
        nodes = {}
        for key in ("a", "b"):
            from okr.reports import alignment
            nodes[key] = alignment.objective_report(db, quarter[key]["id"], progress.parse_timestamp(
                "2026-10-06T12:00:00Z"))["objective"]
        own = timelines.objective_progress(db, nodes["a"], date(2026, 10, 6), "2026-10-01", "2026-10-10")
        child = timelines.objective_progress(db, nodes["b"], date(2026, 10, 6), "2026-10-01", "2026-10-10")
    assert [value for _, value, _ in own["points"]] == [None, "0.00", "0.00", "0.50", "0.50", "0.50"]
    assert [value for _, value, _ in child["points"]] == [None, "0.00", "0.00", "1.00", "1.00", "1.00"]


def test_without_cycle_dates_the_chart_runs_from_the_first_to_the_last_check_in(app, client, clock):
    clock.now = "2026-10-02T10:00:00Z"
    cycle = make_cycle(client, "Undated")
    objective = make_objective(client, cycle["id"])
    key_result = make_key_result(client, objective["id"], current_value="10", target_value_min="100")
    clock.now = "2026-10-09T10:00:00Z"
    client.post(f"/v1/keyresults/{key_result['id']}/checkins", json={"value": "30"})
    clock.now = "2026-10-20T10:00:00Z"
    with app.test_request_context():
        node = {**key_result, "start_value": "10"}
        line = timelines.key_result_timeline(get_db(), node, None, None)
        burn_up = timelines.cycle_progress(get_db(), cycles.get(get_db(), cycle["id"]), date(2026, 10, 20))
    assert (line["first"], line["last"], line["expected"]) == (date(2026, 10, 2), date(2026, 10, 9), None)
    assert [(day, wording.number(value)) for day, value in line["points"]] == [
        (date(2026, 10, 2), "10"), (date(2026, 10, 9), "30")]
    assert (burn_up["first"], burn_up["last"], burn_up["expected"]) == (date(2026, 10, 2), date(2026, 10, 9), None)
    assert len(burn_up["points"]) == 8 and all(hoped is None for _, _, hoped in burn_up["points"])


# --- the pages --------------------------------------------------------------------------------------------


def page(client, path):
    response = client.get(path, headers=BROWSER)
    assert response.status_code == 200, response.get_data(as_text=True)[:2000]
    return parse(response.get_data(as_text=True))


def test_the_key_result_page_draws_its_values_on_the_cycles_dates(client, quarter):
    doc = page(client, f"/keyresults/{quarter['sales']['id']}")
    svg = doc.one("svg", cls="chart")
    assert labels(svg, "date") == ["1 Oct", "8 Oct"]
    assert labels(svg, "today-label") == ["today"] and svg.find_all("line", cls="expected")
    assert svg_points(svg) == [("2 Oct 2026", "0"), ("4 Oct 2026", "50")]  # 4 Oct's last check-in
    assert table_points(doc) == [("2 Oct 2026", ["0"]), ("4 Oct 2026", ["50"])]
    assert doc.one("details", cls="chart-table").find_all("time")[0].attrs["datetime"] == "2026-10-02"


def test_the_objective_page_draws_its_progress(client, quarter):
    doc = page(client, f"/objectives/{quarter['a']['id']}")
    svg = doc.one("svg", cls="chart")
    assert svg.find_all("line", cls="expected") and labels(svg, "today-label") == ["today"]
    rows = table_points(doc)
    assert rows[0] == ("1 Oct 2026", ["none yet", "0%"]) and rows[-1] == ("6 Oct 2026", ["50%", "56%"])


def test_the_cycle_page_draws_its_burn_up_and_counts_key_results_by_the_reports_status(client, quarter):
    doc = page(client, f"/cycles/{quarter['cycle']['id']}")
    svg = doc.one("section", cls="burn-up").one("svg", cls="chart")
    assert labels(svg, "date")[0] == "1 Oct"
    assert table_points(doc)[-1] == ("6 Oct 2026", ["75%", "56%"])
    report = client.get(f"/v1/cycles/{quarter['cycle']['id']}/report").get_json()
    statuses = {}
    stack = list(report["objectives"])
    while stack:
        node = stack.pop()
        stack += node["children"]
        for key_result in node["key_results"]:
            word = wording.STATUS_WORDS[key_result["status"]]
            statuses[word] = statuses.get(word, 0) + 1
    legend = {li.text.rsplit(" ", 1)[0]: int(li.text.rsplit(" ", 1)[1])
              for li in doc.one("div", cls="status-counts").find_all("li")}
    assert legend == statuses and sum(legend.values()) == 4


def test_a_status_the_rules_add_is_counted_as_the_report_says(client, quarter, monkeypatch):
    """The bar never works a status out itself: whatever the rule says is what it counts."""
    monkeypatch.setattr(progress, "key_result_status", lambda *rule: "off_track")
    doc = page(client, f"/cycles/{quarter['cycle']['id']}")
    assert [li.text for li in doc.one("div", cls="status-counts").find_all("li")] == ["off track 4"]


def test_a_cycle_without_check_ins_or_dates_has_no_chart(client):
    cycle = make_cycle(client, "Empty")
    doc = page(client, f"/cycles/{cycle['id']}")
    assert not doc.find_all("svg", cls="chart") and not doc.find_all("div", cls="status-counts")


def test_a_kept_burn_up_follows_a_new_check_in_and_an_edited_target(client, quarter):
    """The burn-up is kept between views (okr.reports.timelines.KEPT) only while nothing it depends on changes."""
    path = f"/cycles/{quarter['cycle']['id']}"
    assert table_points(page(client, path))[-1] == ("6 Oct 2026", ["75%", "56%"])
    assert table_points(page(client, path))[-1] == ("6 Oct 2026", ["75%", "56%"])  # kept
    sales = quarter["sales"]["id"]
    assert client.post(f"/v1/keyresults/{sales}/checkins", json={"value": "100"}).status_code == 200
    # A: (1 + 0.5) / 2, B: 1 → 0.875, shown as 88% (half to even of 87.5 is 88)
    assert table_points(page(client, path))[-1] == ("6 Oct 2026", ["88%", "56%"])
    assert client.patch(f"/v1/keyresults/{sales}", json={"target_value_min": "200"}).status_code == 200
    # sales now 100 of 200 from 0: A (0.5 + 0.5) / 2 → back to 75 %
    assert table_points(page(client, path))[-1] == ("6 Oct 2026", ["75%", "56%"])


def test_the_stylesheet_colours_every_status_but_no_update_in_the_bar_and_its_legend():
    """No update yet keeps the muted grey every part starts with; each other status has its own colour, done's
    purple included (it was grey too, and read as no update)."""
    style = (Path(charts.__file__).parent / "static" / "style.css").read_text()
    coloured = set(re.findall(r"svg\.status-bar \.(\w+), \.legend \.\1 \.swatch \{ fill: var\(--\w+\)", style))
    assert coloured == set(progress.STATUSES) - {"no_update"}
