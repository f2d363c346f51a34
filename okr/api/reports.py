"""Reports: /v1/cycles/<id>/report (and report.csv) and /v1/objectives/<id>/report, built by okr.reports."""
from flask import Blueprint, Response

from .. import progress, reports
from ..transfer.export import cycle_csv_bytes
from ..errors import NotFound
from ..db import get_db, utc_now
from ..store import cycles
from .paging import uuid_arg

bp = Blueprint("reports", __name__, url_prefix="/v1")


@bp.get("/cycles/<cycle_id>/report")
def report_cycle(cycle_id):
    """Reports a cycle's alignment tree with progress, maybe for one team or assignee."""
    team_id, assignee_id = uuid_arg("team_id"), uuid_arg("assignee_id")
    cycle = cycles.get(get_db(), cycle_id)
    now = progress.parse_timestamp(utc_now())
    return reports.cycle_report(get_db(), cycle, now, team_id=team_id, assignee_id=assignee_id)


@bp.get("/objectives/<objective_id>/report")
def report_objective(objective_id):
    """Reports an objective and its aligned descendants, with progress."""
    report = reports.objective_report(get_db(), objective_id, progress.parse_timestamp(utc_now()))
    if report is None:
        raise NotFound("objective")
    return report


@bp.get("/cycles/<cycle_id>/report.csv")
def report_cycle_csv(cycle_id):
    """A cycle's key results as CSV: the file okr export --format csv --cycle writes."""
    cycle = cycles.get(get_db(), cycle_id)
    body = cycle_csv_bytes(get_db(), cycle["id"], progress.parse_timestamp(utc_now()))
    return Response(body, mimetype="text/csv",
                    headers={"Content-Disposition": f'attachment; filename="cycle-{cycle["id"]}.csv"'})
