"""The web dashboard: server-rendered pages over the same reports, progress and store as the API."""
from ..accounts import sessions, single_sign_on
from . import (account_pages, activity_pages, board_pages, checkin_pages, closing_pages, comment_pages,  # these add
               connection_pages, consent_pages, cycle_pages, inbox_pages, initiative_pages, key_result_pages,  # pages
               objective_pages, oidc_pages,
               retrospective_pages, search_pages, sign_in_pages, source_pages, team_pages, views,  # to views.bp
               webhook_pages)


def init_app(app):
    single_sign_on.init_app(app)
    sessions.init_app(app)
    app.register_blueprint(views.bp)
