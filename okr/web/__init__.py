"""The web dashboard: server-rendered pages over the same reports, progress and store as the API."""
from . import accounts, key_result_pages, objective_pages, sessions, views  # these add their pages to views.bp


def init_app(app):
    sessions.init_app(app)
    app.register_blueprint(views.bp)
