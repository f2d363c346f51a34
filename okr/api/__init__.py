"""The HTTP API: one blueprint per resource, with auth, errors, paging, schemas and the OpenAPI document."""
from . import auth, checkins, cycles, errors, health, key_results, objectives, openapi, reports, teams, users


def init_app(app):
    errors.init_app(app)
    auth.init_app(app)
    for module in (objectives, key_results, checkins, reports, cycles, teams, users, openapi, health):
        app.register_blueprint(module.bp)
