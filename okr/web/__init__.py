"""The web dashboard: server-rendered pages over the same reports, progress and store as the API."""
from . import (accounts, activity_pages, comment_pages, cycle_pages, key_result_pages, objective_pages,  # these add
               oidc_pages, sessions, team_pages, views, webhook_pages)  # their pages to views.bp


def init_app(app):
    oidc_pages.init_app(app)
    sessions.init_app(app)
    app.register_blueprint(views.bp)
