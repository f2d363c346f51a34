"""The web dashboard: server-rendered pages over the same reports, progress and store as the API."""
from . import accounts, cycle_pages, sessions, team_pages, views  # these add their pages to views.bp


def init_app(app):
    sessions.init_app(app)
    app.register_blueprint(views.bp)
