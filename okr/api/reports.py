"""Reports: /v1/cycles/<id>/report (and report.csv) and /v1/objectives/<id>/report, built by okr.reports.alignment;
/v1/cycles/<id>/retrospective and /calibration, built by okr.reports.retrospective; /v1/cycles/<id>/checks, the
quality checks of okr.reports.quality.

A big one (okr/reports/spooled.py) is built within a slot shared by every server process, by okr.reports.streaming into a
file, the same bytes, and sent from it; with no slot free in time the answer is 503 with Retry-After.
"""
from flask import Blueprint, Response

from .. import clock, progress
from ..db import get_db
from ..errors import NotFound
from ..reports import alignment, quality, retrospective, spooled, streaming
from ..store import cycles, objectives, teams
from ..store import reports as report_rows
from ..transfer.export import cycle_csv_bytes, write_cycle_csv
from .paging import uuid_arg

bp = Blueprint("reports", __name__, url_prefix="/v1")


@bp.get("/cycles/<cycle_id>/report")
def report_cycle(cycle_id):
    """Reports a cycle's alignment tree with progress, maybe for one team or assignee."""
    team_id, assignee_id = uuid_arg("team_id"), uuid_arg("assignee_id")
    db = get_db()
    cycle = cycles.get(db, cycle_id)
    now = progress.parse_timestamp(clock.utc_now())
    encode = spooled.compact_json()
    if encode is None or not spooled.is_big(report_rows.cycle_objective_count(db, cycle["id"], team_id,
                                                                               assignee_id)):
        return alignment.cycle_report(db, cycle, now, team_id=team_id, assignee_id=assignee_id)
    return json_file(lambda out: streaming.write_cycle_report(db, cycle, now, out, encode, team_id=team_id,
                                                                  assignee_id=assignee_id))


@bp.get("/objectives/<objective_id>/report")
def report_objective(objective_id):
    """Reports an objective and its aligned descendants, with progress."""
    db = get_db()
    objectives.get(db, objective_id)  # 404 to whoever may not see it
    now = progress.parse_timestamp(clock.utc_now())
    encode = spooled.compact_json()
    if encode is None or not spooled.is_big(report_rows.descendant_count(db, objective_id)):
        report = alignment.objective_report(db, objective_id, now)
        if report is None:
            raise NotFound("objective")
        return report
    return json_file(lambda out: streaming.write_objective_report(db, objective_id, now, out, encode))


def json_file(write):
    """The response of a big report, which write writes to a file (returning False when it is missing)."""
    spool, size, found = spooled.build(lambda out: (write(out), out.write(b"\n"))[0])
    if found is False:
        spool.close()
        raise NotFound("objective")
    return spooled.file_response(spool, size, "application/json")


@bp.get("/cycles/<cycle_id>/report.csv")
def report_cycle_csv(cycle_id):
    """A cycle's key results as CSV: the file okr export --format csv --cycle writes."""
    db = get_db()
    cycle = cycles.get(db, cycle_id)
    now = progress.parse_timestamp(clock.utc_now())
    headers = {"Content-Disposition": f'attachment; filename="cycle-{cycle["id"]}.csv"'}
    if not spooled.is_big(report_rows.cycle_objective_count(db, cycle["id"])):
        return Response(cycle_csv_bytes(db, cycle["id"], now), mimetype="text/csv", headers=headers)
    spool, size, _ = spooled.build(lambda out: write_cycle_csv(db, cycle["id"], now, out), "exports")
    return spooled.file_response(spool, size, "text/csv", headers)


def cycle_and_team(cycle_id):
    """The cycle (404 when missing) and the team_id query argument's team (id and name; None without one, 404 when
    there is no such team)."""
    team_id = uuid_arg("team_id")
    db = get_db()
    cycle = cycles.get(db, cycle_id)
    return db, cycle, teams.chosen(db, team_id)


@bp.get("/cycles/<cycle_id>/retrospective")
def retrospective_cycle(cycle_id):
    """A cycle's retrospective as of its close (or now), maybe of one team's objectives."""
    db, cycle, team = cycle_and_team(cycle_id)
    return retrospective.retrospective(db, cycle, progress.parse_timestamp(clock.utc_now()), team)


@bp.get("/cycles/<cycle_id>/calibration")
def calibration_cycle(cycle_id):
    """A cycle's confidence calibration per owner and per team, maybe of one team's objectives."""
    db, cycle, team = cycle_and_team(cycle_id)
    return retrospective.cycle_calibration(db, cycle, progress.parse_timestamp(clock.utc_now()), team)


@bp.get("/cycles/<cycle_id>/checks")
def check_cycle(cycle_id):
    """Lists what to fix in a cycle's OKRs: the findings of the quality checks, each with its subject and message."""
    db = get_db()
    cycle = cycles.get(db, cycle_id)
    today = progress.parse_timestamp(clock.utc_now()).date()
    return quality.answer(cycle["id"], quality.cycle_checks(db, cycle, today))
