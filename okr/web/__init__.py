"""The web dashboard: server-rendered pages over the same reports, progress and store as the API."""
from . import accounts, sessions, views  # accounts adds its pages to views.bp


def init_app(app):
    sessions.init_app(app)
    app.register_blueprint(views.bp)
