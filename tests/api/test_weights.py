"""Key results' weights: an objective's progress is the weighted mean of its key results' (weights of 1 give the
plain mean exactly), set by PATCH and the edit page, kept by the spec's POST update, never shown by the spec's GET,
and weighed alike by every report: the JSON and streamed reports, the review page's figures, the charts, the
retrospective and the CSV."""
import csv
import io
import json
from datetime import date
from fractions import Fraction

import pytest

from helpers import fetch, make_key_result, make_objective
from okr import progress
from okr.db import get_db
from okr.reports import alignment, review, streaming, timelines
from okr.store import cycles

MERGE_PATCH = "application/merge-patch+json"


def patch(client, key_result_id, body):
    return client.patch(f"/v1/keyresults/{key_result_id}", json=body, headers={"Content-Type": MERGE_PATCH})


def set_weight(client, key_result_id, weight):
    response = patch(client, key_result_id, {"weight": weight})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


@pytest.fixture
def weighed(client, cycle):
    """An objective with a key result not started (weight 3) and one done (weight 1), and a second objective whose
    one key result is half way (weight 1): ids."""
    grow = make_objective(client, cycle["id"], "Grow")["id"]
    slow = make_key_result(client, grow, "Signups", target_value_min="100")["id"]
    done = make_key_result(client, grow, "Launch", type="milestone", target_value_min=None, current_value="1")["id"]
    keep = make_objective(client, cycle["id"], "Keep")["id"]
    half = make_key_result(client, keep, "Retention", target_value_min="10", current_value="0")["id"]
    client.post(f"/v1/keyresults/{half}", json={"name": "Retention", "type": "positive", "target_value_min": "10",
                                                  "current_value": "5"})
    set_weight(client, slow, 3)
    return {"cycle": cycle["id"], "grow": grow, "keep": keep, "slow": slow, "done": done, "half": half}


def test_the_weighted_mean_is_the_plain_mean_with_weights_of_one():
    values = [Fraction(1, 3), None, Fraction(2, 7), Fraction(1)]
    assert progress.mean(values, [1, 1, 1, 1]) == progress.mean(values) == (Fraction(1, 3) + Fraction(2, 7) + 1) / 3
    assert progress.mean([Fraction(0), Fraction(1)], [3, 1]) == Fraction(1, 4)
    assert progress.mean([Fraction(0), Fraction(1)], [0, 1]) == Fraction(1)  # weight 0: left out
    assert progress.mean([Fraction(1, 2), Fraction(1)], [0, 0]) is None  # nothing counts: no progress


def test_patch_sets_the_weight_and_the_objective_progress_follows(client, weighed):
    report = fetch(client, f"/v1/cycles/{weighed['cycle']}/report")
    grow = next(o for o in report["objectives"] if o["id"] == weighed["grow"])
    assert grow["progress"] == "0.25"  # (0 × 3 + 1 × 1) / 4, where the plain mean is 0.50
    assert [k["weight"] for k in grow["key_results"]] == [3, 1]
    assert report["progress"] == "0.38"  # the mean of the objectives' 0.25 and 0.50 (0.375, half to even)
    set_weight(client, weighed["slow"], 1)
    assert fetch(client, f"/v1/objectives/{weighed['grow']}/report")["objective"]["progress"] == "0.50"
    set_weight(client, weighed["slow"], 0)
    assert fetch(client, f"/v1/objectives/{weighed['grow']}/report")["objective"]["progress"] == "1.00"
    set_weight(client, weighed["done"], 0)
    objective = fetch(client, f"/v1/objectives/{weighed['grow']}/report")["objective"]
    assert (objective["progress"], objective["progress_from"]) == (None, None)


def test_the_spec_post_keeps_the_weight_and_the_spec_get_does_not_show_it(client, weighed):
    path = f"/v1/keyresults/{weighed['slow']}"
    assert "weight" not in fetch(client, path)
    answer = client.post(path, json={"name": "Signups", "type": "positive", "target_value_min": "100"})
    assert answer.status_code == 200 and "weight" not in answer.get_json()
    assert patch(client, weighed["slow"], {}).get_json()["weight"] == 3
    assert "weight" not in fetch(client, f"/v1/objectives/{weighed['grow']}/keyresults")["keyresults"][0]


def test_a_new_key_result_may_be_given_a_weight_and_has_1_without(client, objective):
    weighed = make_key_result(client, objective["id"], "Heavy", weight=7)
    assert "weight" not in weighed
    assert patch(client, weighed["id"], {}).get_json()["weight"] == 7
    assert patch(client, make_key_result(client, objective["id"])["id"], {}).get_json()["weight"] == 1


@pytest.mark.parametrize("weight", [-1, 101, 1.5, "2", True, None, 1000.0])
def test_a_bad_weight_is_refused_and_nothing_changes(client, weighed, weight):
    before = patch(client, weighed["slow"], {}).get_json()
    response = patch(client, weighed["slow"], {"weight": weight})
    assert response.status_code == 400
    body = response.get_json()
    assert "weight" in json.dumps(body)
    after = patch(client, weighed["slow"], {}).get_json()
    assert {k: v for k, v in after.items() if k != "modified_at"} == \
        {k: v for k, v in before.items() if k != "modified_at"}
    created = client.post(f"/v1/objectives/{weighed['grow']}/keyresults",
                          json={"name": "x", "type": "milestone", "weight": weight})
    assert created.status_code == 400 and "weight" in json.dumps(created.get_json())


def test_every_report_weighs_alike(app, client, weighed):
    """The JSON report, the streamed report, the review page's figures, the cycle summary, the charts' last
    point and the retrospective give the same weighted figures."""
    with app.test_request_context():
        db = get_db()
        cycle = cycles.get(db, weighed["cycle"])
        now = progress.parse_timestamp(fetch(client, f"/v1/cycles/{weighed['cycle']}")["created_at"]).replace(
            year=2030)
        tree = alignment.cycle_report(db, cycle, now)
        out = io.BytesIO()
        streaming.write_cycle_report(db, cycle, now, out, lambda value: json.dumps(value, separators=(",", ":")))
        streamed = json.loads(out.getvalue())
        figures = review.figures_now(db, cycle, now)
        summary = streaming.cycle_summary(db, cycle, now)
        line = timelines.cycle_progress_now(db, cycle, now.date())
        retrospective = fetch(client, f"/v1/cycles/{weighed['cycle']}/retrospective")
    assert tree["progress"] == streamed["progress"] == figures["progress"] == summary["progress"] == "0.38"
    assert retrospective["progress"] == "0.38"
    assert [o["progress"] for o in streamed["objectives"]] == [o["progress"] for o in tree["objectives"]] == [
        "0.25", "0.50"]
    assert line["points"][-1][1] == "0.38"


def test_the_charts_weigh_each_key_result_at_every_point(app, client, weighed):
    with app.test_request_context():
        db = get_db()
        node = alignment.objective_report(db, weighed["grow"], progress.parse_timestamp("2030-01-01T00:00:00Z"))
        line = timelines.objective_progress(db, node["objective"], date(2030, 1, 1))
        points = timelines.points_figures(db, weighed["cycle"], ["2030-01-01"])
    assert line["points"][-1][1] == "0.25"
    assert points == ["0.38"]


def test_the_csv_report_has_each_key_results_weight(client, weighed):
    text = client.get(f"/v1/cycles/{weighed['cycle']}/report.csv").get_data(as_text=True).lstrip("\ufeff")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {row["key_result_id"]: row["weight"] for row in rows} == {
        weighed["slow"]: "3", weighed["done"]: "1", weighed["half"]: "1"}
