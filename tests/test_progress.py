"""The progress rules of okr/progress.py: per type, roll-ups, rounding, status and staleness."""
import ast
from datetime import date, datetime, timezone
from fractions import Fraction
from pathlib import Path

import pytest

from okr import progress
from okr.progress import figure, is_stale, key_result_progress, mean, status


@pytest.mark.parametrize("kind, start, current, low, high, expected", [
    ("positive", "100.00", "120.00", "500.00", None, Fraction(1, 20)),
    ("positive", "0.00", "250.00", "500.00", None, Fraction(1, 2)),
    ("positive", "0.00", "-5.00", "500.00", None, Fraction(0)),        # clamped below
    ("positive", "0.00", "900.00", "500.00", None, Fraction(1)),       # clamped above
    ("positive", "500.00", "500.00", "500.00", None, Fraction(1)),     # start = target, reached
    ("positive", "500.00", "499.99", "500.00", None, Fraction(0)),     # start = target, not yet
    ("negative", "10.00", "7.00", "4.00", None, Fraction(1, 2)),
    ("negative", "10.00", "12.00", "4.00", None, Fraction(0)),
    ("negative", "10.00", "1.00", "4.00", None, Fraction(1)),
    ("negative", "4.00", "3.00", "4.00", None, Fraction(1)),
    ("negative", "4.00", "4.01", "4.00", None, Fraction(0)),
    ("range", "0.00", "1.00", "1.00", "4.00", Fraction(1)),
    ("range", "0.00", "4.00", "1.00", "4.00", Fraction(1)),
    ("range", "0.00", "4.000001", "1.00", "4.00", Fraction(0)),
    ("range", "0.00", "0.99", "1.00", "4.00", Fraction(0)),
    ("milestone", "0.00", "1.00", "1.00", None, Fraction(1)),
    ("milestone", "0.00", "0.999999", "1.00", None, Fraction(0)),
    ("baseline", "3.00", "5.00", None, None, None),
])
def test_progress_per_type(kind, start, current, low, high, expected):
    assert key_result_progress(kind, start, current, low, high) == expected


def test_progress_is_exact_not_float():
    third = key_result_progress("positive", "0.00", "0.1", "0.3", None)
    assert third == Fraction(1, 3)
    assert isinstance(third, Fraction)


def test_baselines_are_left_out_of_every_average():
    assert mean([Fraction(1), None, Fraction(0)]) == Fraction(1, 2)
    assert mean([None, None]) is None
    assert mean([]) is None


@pytest.mark.parametrize("value, shown", [
    (Fraction(2, 3), "0.67"),
    (Fraction(1, 8), "0.12"),      # 0.125: half to even, down
    (Fraction(3, 8), "0.38"),      # 0.375: half to even, up
    (Fraction(1), "1.00"),
    (Fraction(0), "0.00"),
    (None, None),
])
def test_only_the_final_figure_is_rounded_half_to_even(value, shown):
    assert figure(value) == shown


def test_rounding_happens_once_at_the_end():
    # Two objectives at 0.005 and 0.007: exactly, their mean 0.006 shows as "0.01"; rounding each
    # first ("0.00" and "0.01") would give a mean of 0.005 and show "0.00".
    assert figure(mean([Fraction(5, 1000), Fraction(7, 1000)])) == "0.01"


@pytest.mark.parametrize("confidence, expected", [
    ("1.00", "on_track"), ("0.70", "on_track"), ("0.699999", "at_risk"),
    ("0.40", "at_risk"), ("0.399999", "off_track"), ("0.00", "off_track"),
])
def test_status_from_confidence(confidence, expected):
    assert status(confidence) == expected


def test_stale_after_more_than_fourteen_days():
    now = datetime(2026, 11, 23, 12, 0, 0, tzinfo=timezone.utc)
    assert not is_stale("2026-11-09T12:00:00Z", now)   # exactly 14 days
    assert is_stale("2026-11-09T11:59:59Z", now)


def test_the_module_imports_no_flask_and_no_sql():
    tree = ast.parse(Path(progress.__file__).read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not imported & {"flask", "werkzeug", "sqlite3", "marshmallow"}, imported


@pytest.mark.parametrize("last", [
    "2026-11-09T12:00:00Z", "2026-11-09T11:59:59Z", "2026-11-23T12:00:00Z", "2025-01-01T00:00:00Z",
    "2026-11-09T11:59:59.500Z", "2026-11-09T13:59:59+02:00",
])
def test_the_many_timestamps_test_agrees_with_is_stale(last):
    now = datetime(2026, 11, 23, 12, 0, 0, tzinfo=timezone.utc)
    assert progress.stale_test(now)(last) == is_stale(last, now)


def test_mean_sums_exactly():
    thirds = [Fraction(1, 3)] * 3 + [Fraction(2, 7), None]
    assert mean(thirds) == (Fraction(1) + Fraction(2, 7)) / 4


@pytest.mark.parametrize("values", [
    [Fraction(1, 8)],                                   # an exact tie: half to even, down
    [Fraction(3, 8), None],                             # an exact tie: half to even, up
    [Fraction(1, 3), Fraction(2, 3), Fraction(1, 200)],
    [Fraction(2, 3), Fraction(1, 300)],                 # 0.335 exactly, from two inexact thirds
    [Fraction(1), Fraction(0), Fraction(5, 1000), Fraction(7, 1000)],
    [None],
    [],
])
def test_mean_figure_is_the_figure_of_the_exact_mean(values):
    assert progress.mean_figure(values) == figure(mean(values))


def test_mean_figure_agrees_with_the_exact_mean_on_many_random_cases():
    import random
    rng = random.Random(11)
    for _ in range(2000):
        values = [rng.choice([None, Fraction(rng.randint(0, 200), 200),
                              Fraction(rng.randint(0, 10**6), rng.randint(10**6, 10**7))])
                  for _ in range(rng.randint(1, 9))]
        assert progress.mean_figure(values) == figure(mean(values)), values


def test_mean_figure_of_many_unlike_fractions_does_not_sum_them_exactly(monkeypatch):
    # 10,000 objectives' progress: an exact sum's denominator runs to tens of thousands of bits.
    rng = __import__("random").Random(5)
    values = [Fraction(rng.randint(0, 10**6), rng.randint(10**6, 10**7)) for _ in range(10_000)]
    monkeypatch.setattr(progress, "mean", lambda values: pytest.fail("summed exactly"))
    assert progress.mean_figure(values) in {f"0.{n:02d}" for n in range(100)}


# --- how much of a cycle has gone by ------------------------------------------------------------------------


@pytest.mark.parametrize("today, expected", [
    ("2026-09-30", Fraction(0)),  # before the start
    ("2026-10-01", Fraction(0)),  # its first day
    ("2026-10-11", Fraction(10, 90)),
    ("2026-11-15", Fraction(1, 2)),
    ("2026-12-30", Fraction(1)),  # its last day
    ("2027-01-05", Fraction(1)),  # after the end
])
def test_elapsed_is_the_days_gone_over_the_days_of_the_cycle_clamped(today, expected):
    assert progress.elapsed("2026-10-01", "2026-12-30", date.fromisoformat(today)) == expected


@pytest.mark.parametrize("today, expected", [("2026-10-04", 0), ("2026-10-05", 1), ("2026-10-06", 1)])
def test_a_one_day_cycle_is_not_begun_before_its_day_and_gone_from_it(today, expected):
    assert progress.elapsed("2026-10-05", "2026-10-05", date.fromisoformat(today)) == expected


@pytest.mark.parametrize("starts_on, ends_on", [(None, "2026-12-30"), ("2026-10-01", None), (None, None)])
def test_a_cycle_without_both_dates_has_no_elapsed_fraction(starts_on, ends_on):
    assert progress.elapsed(starts_on, ends_on, date(2026, 11, 1)) is None


# --- status from pace and confidence ------------------------------------------------------------------------

# A 90-day cycle; halfway through it on 2026-11-15.
STARTS, ENDS, HALFWAY = "2026-10-01", "2026-12-30", date(2026, 11, 15)


def pace_on(today, kind="positive", current="0.00", start="0.00", low="1.00", high=None):
    """(pace status, status) of a confident key result that had an update, in the 90-day cycle on today."""
    exact = key_result_progress(kind, start, current, low, high)
    expected = progress.elapsed(STARTS, ENDS, today)
    ended = progress.cycle_state(STARTS, ENDS, today) == "finished"
    return (progress.pace_status(kind, exact, expected),
            progress.key_result_status("0.90", True, kind, exact, expected, ended))


@pytest.mark.parametrize("current, expected", [
    ("0.40", "on_track"),   # the shortfall exactly 0.10
    ("0.39", "at_risk"),    # just past it
    ("0.25", "at_risk"),    # exactly 0.25
    ("0.24", "off_track"),  # just past it
    ("0.90", "on_track"),   # ahead of pace
])
def test_pace_status_at_each_threshold(current, expected):
    assert pace_on(HALFWAY, current=current) == (expected, expected)


def test_the_shortfall_is_exact_not_rounded():
    # 0.4 of 100 short by a hair: the shortfall is just past 0.10
    assert pace_on(HALFWAY, current="39.999999", low="100.00") == ("at_risk", "at_risk")


def test_before_the_start_nothing_is_expected_so_every_pace_is_on_track():
    assert pace_on(date(2026, 9, 1)) == ("on_track", "on_track")


def test_after_the_end_everything_is_expected():
    assert pace_on(date(2027, 1, 5), current="0.70") == ("off_track", "off_track")
    assert pace_on(date(2027, 1, 5), current="0.80") == ("at_risk", "at_risk")
    assert pace_on(date(2027, 1, 5), current="0.90") == ("on_track", "on_track")


@pytest.mark.parametrize("confidence, expected", [("0.90", "on_track"), ("0.50", "at_risk"), ("0.10", "off_track")])
def test_without_both_dates_the_status_is_the_confidences(confidence, expected):
    exact = Fraction(0)  # far behind any pace, but no pace is known
    assert progress.pace_status("positive", exact, None) is None
    assert progress.key_result_status(confidence, True, "positive", exact, None, False) == expected


def test_a_baseline_has_no_pace_and_takes_the_confidences_status():
    assert progress.pace_status("baseline", None, Fraction(1)) is None
    assert progress.key_result_status("0.50", True, "baseline", None, Fraction(1), True) == "at_risk"


@pytest.mark.parametrize("confidence, pace_current, expected", [
    ("0.90", "0.20", "off_track"),  # confident but far behind: the pace's
    ("0.30", "0.90", "off_track"),  # ahead but unsure: the confidence's
    ("0.50", "0.40", "at_risk"),
    ("0.90", "0.45", "on_track"),
])
def test_the_status_is_the_worse_of_pace_and_confidence(confidence, pace_current, expected):
    exact = key_result_progress("positive", "0.00", pace_current, "1.00", None)
    assert progress.key_result_status(confidence, True, "positive", exact, Fraction(1, 2), False) == expected


@pytest.mark.parametrize("kind, start, current, low", [
    ("milestone", "0.00", "1.00", "1.00"),
    ("positive", "0.00", "120.00", "100.00"),  # past a positive target
    ("negative", "10.00", "4.00", "4.00"),     # down to a negative target
])
def test_done_at_full_progress_whatever_the_confidence_or_the_date(kind, start, current, low):
    exact = key_result_progress(kind, start, current, low, None)
    assert progress.key_result_status("0.10", True, kind, exact, Fraction(1, 2), False) == "done"
    assert progress.key_result_status("0.10", True, kind, exact, None, False) == "done"
    assert progress.key_result_status("0.10", True, kind, Fraction(99, 100), None, False) == "off_track"


@pytest.mark.parametrize("today, current, expected", [
    (HALFWAY, "2.00", ("on_track", "on_track")),     # inside the band before the end: on track, never done
    (HALFWAY, "5.00", ("off_track", "off_track")),   # outside it
    (date(2026, 12, 30), "2.00", ("on_track", "on_track")),  # its last day: not yet ended
    (date(2027, 1, 1), "2.00", ("on_track", "done")),  # ended inside the band
    (date(2027, 1, 1), "0.50", ("off_track", "off_track")),
])
def test_a_range_is_on_track_in_its_band_and_done_only_once_its_cycle_ended(today, current, expected):
    assert pace_on(today, kind="range", current=current, low="1.00", high="4.00") == expected


def test_no_update_until_a_checkin_since_creation_but_done_first():
    far_behind = Fraction(0)
    assert progress.key_result_status("0.90", False, "positive", far_behind, Fraction(1, 2), False) == "no_update"
    assert progress.key_result_status("0.90", False, "milestone", Fraction(1), Fraction(1, 2), False) == "done"


def test_statuses_are_ordered_worst_first_once():
    assert progress.STATUSES == ("off_track", "at_risk", "no_update", "on_track", "done")
    assert progress.worst(["done", "on_track", None, "no_update"]) == "no_update"
    assert progress.worst([None]) is None


@pytest.mark.parametrize("key_results, children, expected", [
    (["on_track", "at_risk", "done"], ["off_track"], "at_risk"),  # its own key results, not its children
    (["done", "done"], ["off_track"], "done"),                     # done only when all are
    (["done", "on_track"], [], "on_track"),
    ([], ["on_track", "off_track", None], "off_track"),            # none of its own: its children's worst
    ([], ["done", "done"], "done"),
    ([], [], None),
    ([], [None], None),
])
def test_an_objectives_status(key_results, children, expected):
    assert progress.objective_status(key_results, children) == expected


def test_status_counts_name_every_status_zeros_included():
    assert progress.status_counts(["done", "at_risk", "done"]) == {
        "off_track": 0, "at_risk": 1, "no_update": 0, "on_track": 0, "done": 2}
    assert list(progress.status_counts([])) == list(progress.STATUSES)
