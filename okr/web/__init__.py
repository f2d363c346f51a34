"""The web dashboard: server-rendered pages over the same reports, progress and store as the API."""
from . import sessions, views


def init_app(app):
    sessions.init_app(app)
    app.register_blueprint(views.bp)
