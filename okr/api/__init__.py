"""The HTTP API: one blueprint per resource, with the signature check, errors, paging and the OpenAPI document.

HTTP only: the rules live in okr.rules, the writes in okr.store; okr.pipeline runs the signature
check and answers failures through errors.answer.
"""
from . import (checkins, comments, cycles, events, health, initiatives, key_results, me, objectives, openapi, reports,
               search, sources, team_members, teams, users)


def init_app(app):
    for module in (objectives, key_results, checkins, comments, initiatives, reports, cycles, teams, team_members, users,
                   me, events, search, sources, openapi, health):
        app.register_blueprint(module.bp)
