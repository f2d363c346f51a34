"""A cycle's retrospective page, /cycles/<id>/retrospective (?team_id= for one team's), which prints on A4, and
its CSV, /cycles/<id>/retrospective.csv. Every figure is okr.reports.retrospective's, as the API gives it."""
import csv
import io

from flask import make_response, render_template

from .. import clock
from ..db import get_db
from ..progress import parse_timestamp
from ..reports import retrospective
from ..rules import percentages
from ..store import cycles, teams
from ..transfer.export import CSV_ENCODING, spreadsheet_text
from . import wording
from .views import bp, csv_file_name, filter_arg

OUTCOME_WORDS = {**wording.OUTCOME_WORDS, "not_scored": "Not scored yet"}


def chosen(cycle_id):
    """The cycle and the team_id argument's team (None without one; a 404 page when there is no such team)."""
    team_id = filter_arg("team_id")
    db = get_db()
    cycle = cycles.get(db, cycle_id)
    return db, cycle, teams.chosen(db, team_id)


@bp.get("/cycles/<cycle_id>/retrospective")
def show_retrospective(cycle_id):
    """Shows a cycle's retrospective, of one team's objectives with ?team_id=."""
    db, cycle, team = chosen(cycle_id)
    retro = retrospective.retrospective_page(db, cycle, parse_timestamp(clock.utc_now()), team)
    return render_template("retrospective.html", cycle=cycle, retro=retro, team=team,
                           teams=teams.pick_list(db), OUTCOME_WORDS=OUTCOME_WORDS, points=percentages.points)


@bp.get("/cycles/<cycle_id>/retrospective.csv")
def download_retrospective_csv(cycle_id):
    """Sends the retrospective's objectives and key results as CSV (retrospective.CSV_COLUMNS)."""
    db, cycle, team = chosen(cycle_id)
    retro = retrospective.retrospective(db, cycle, parse_timestamp(clock.utc_now()), team)
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(retrospective.CSV_COLUMNS)
    for row in retrospective.csv_rows(retro):
        writer.writerow([spreadsheet_text(row.get(column)) if column in retrospective.TEXT_COLUMNS
                         else row.get(column) or "" for column in retrospective.CSV_COLUMNS])
    response = make_response(out.getvalue().encode(CSV_ENCODING))
    response.mimetype = "text/csv"
    response.charset = "utf-8"
    suffix = f"-{team['id']}" if team else ""
    response.headers["Content-Disposition"] = (f'attachment; filename="{csv_file_name(cycle)}-retrospective'
                                               f'{suffix}.csv"')
    return response
