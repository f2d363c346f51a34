"""The team pages: /teams (every team, its members and objectives counted), /teams/new, /teams/<id> (its
members, added and removed there, and its objectives), /teams/<id>/edit and /teams/<id>/delete.

A member is added by finding them: the team page's search (?q=, a GET form) lists at most CANDIDATES_SHOWN of the
active people who are not members and whose name or email holds the words (okr.store.search's rule), each with
an Add button; no list of everyone is ever drawn.

The forms' fields are the API's (name, user_id), checked by okr.rules.body_schemas through okr.web.editing.load and
written by okr.store.teams and okr.store.team_members; only editors and admins open the edit pages.
"""
from functools import partial

from flask import redirect, render_template, request, url_for

from ..accounts import access, sessions
from ..db import get_db
from ..errors import Invalid
from ..store import search
from ..progress import cycle_state
from ..rules.body_schemas import group_schema, group_update_schema
from ..store import team_members, teams, users
from . import editing
from .account_pages import after_arg
from .views import bp, now

TEAMS_PER_PAGE = 200
MEMBERS_PER_PAGE = 200
NAMES_SHOWN = 5  # members named on /teams, per team
OBJECTIVES_SHOWN = 100  # objectives listed on a team's page
CANDIDATES_SHOWN = 20  # people a team page's search for new members lists
LABELS = {"name": "the name"}


@bp.get("/teams")
def show_teams():
    """Lists the teams in the order they were made, each with its first members and its counts."""
    db = get_db()
    rows = teams.page(db, after_arg(), TEAMS_PER_PAGE + 1)
    more = rows[TEAMS_PER_PAGE - 1]["seq"] if len(rows) > TEAMS_PER_PAGE else None
    rows = rows[:TEAMS_PER_PAGE]
    names, members, objectives = {}, {}, {}
    if rows:  # three queries for the whole page, however many teams it lists
        span = (rows[0]["seq"], rows[-1]["seq"])
        for row in team_members.first_names(db, span, NAMES_SHOWN):
            names.setdefault(row["team_id"], []).append(row["name"])
            members[row["team_id"]] = row["total"]
        objectives = teams.objective_counts(db, span)
    listed = [{"team": row, "names": names.get(row["id"], []), "members": members.get(row["id"], 0),
               "objectives": objectives.get(row["id"], 0)} for row in rows]
    return render_template("teams.html", teams=listed, more=more)


@bp.route("/teams/new", methods=["GET", "POST"])
@sessions.editors_only
def new_team():
    """Shows the new team form, and creates the team from it."""
    if request.method == "GET":
        return render_template("team-form.html", team=None, form={}, errors={})
    form = editing.typed(("name",))
    try:
        values = editing.load(group_schema, form)
    except Invalid as error:
        return render_template("team-form.html", team=None, form=form, errors=error.fields), 400
    team = teams.create(get_db(), values["name"])
    return redirect(url_for("web.show_team", team_id=team["id"]), 303)


@bp.get("/teams/<team_id>")
def show_team(team_id):
    """Shows a team: its members (editors add and remove them here) and its objectives."""
    return render_team(team_id)


def render_team(team_id, errors=None, q=None):
    """The team's page (a 400 with a refusal); errors: a refused add's sentence (user_id); q: the search's words, else
    the link's, refused beside the search field when they are no query (okr.store.search.query_text)."""
    db = get_db()
    team = teams.get(db, team_id)
    members = team_members.users_page(db, team_id, after_arg(), MEMBERS_PER_PAGE + 1)
    more = members[MEMBERS_PER_PAGE - 1]["member_seq"] if len(members) > MEMBERS_PER_PAGE else None
    today = now().date()
    objectives = teams.objectives_of(db, team_id, today, OBJECTIVES_SHOWN)
    total = len(objectives)
    if total == OBJECTIVES_SHOWN:
        total = teams.objective_count(db, team_id)
    states = [cycle_state(row["starts_on"], row["ends_on"], today) for row in objectives]
    errors = dict(errors or {})
    q = request.args.get("q", "") if q is None else q
    found = None
    if q.strip() and access.may_write(access.current_actor(), "POST"):
        try:
            found = team_members.candidates(db, team_id, search.query_text(q), CANDIDATES_SHOWN + 1)
        except Invalid as refused:
            errors.setdefault("q", refused.fields["q"])
    return render_template("team.html", team=team, members=members[:MEMBERS_PER_PAGE], more=more,
                           objectives=list(zip(objectives, states)), objectives_total=total, q=q,
                           found=None if found is None else found[:CANDIDATES_SHOWN],
                           more_found=found is not None and len(found) > CANDIDATES_SHOWN, shown=CANDIDATES_SHOWN,
                           errors=errors), 400 if errors else 200


@bp.post("/teams/<team_id>/members")
@sessions.editors_only
def add_team_member(team_id):
    """Adds an active user, found by the team page's search, to the team; back to the same search."""
    db = get_db()
    teams.get(db, team_id)
    form = editing.typed(("user_id", "q"))
    chosen = users.find(db, form["user_id"])
    if chosen is None:
        return render_team(team_id, {"user_id": "Find the person by name or email, then choose Add."}, form["q"])
    if not chosen["is_active"]:
        return render_team(team_id, {"user_id": f"{chosen['name']} is deactivated: an admin can "
                                                "reactivate them first."}, form["q"])
    team_members.add(db, team_id, chosen["id"])
    search_again = {"q": form["q"]} if form["q"].strip() and len(form["q"]) <= search.LONGEST_QUERY else {}
    return redirect(url_for("web.show_team", team_id=team_id, **search_again) + "#add-heading", 303)


@bp.post("/teams/<team_id>/members/<user_id>/remove")
@sessions.editors_only
def remove_team_member(team_id, user_id):
    """Removes a member from the team (the person stays, and so do the team's objectives)."""
    team_members.remove(get_db(), team_id, user_id)
    return redirect(url_for("web.show_team", team_id=team_id), 303)


@bp.route("/teams/<team_id>/edit", methods=["GET", "POST"])
@sessions.editors_only
def edit_team(team_id):
    """Shows a team's form, and renames it unless someone renamed it meanwhile."""
    db = get_db()
    stored = teams.get(db, team_id)

    def render(form, errors=None, conflict=None, revision=None, original=None):
        return render_template("team-form.html", team=stored, form=form, errors=errors or {}, conflict=conflict,
                               revision=revision, original=original)

    def save(values):
        teams.rename(db, team_id, values["name"])
        return redirect(url_for("web.show_team", team_id=team_id), 303)

    return editing.edit_page(("name",), {"name": stored["name"]}, stored["revision"], render,
                             partial(editing.load, group_update_schema), save, LABELS)


@bp.route("/teams/<team_id>/delete", methods=["GET", "POST"])
@sessions.editors_only
def delete_team(team_id):
    """Asks before deleting a team (saying which objectives lose it and whose memberships end), and deletes it."""
    db = get_db()
    team = teams.get(db, team_id)
    if request.method == "GET":
        counts = teams.doomed(db, team_id)
        name = team["name"] or "Unnamed team"
        objectives, members = counts["objectives"], counts["members"]
        lose = "will lose its team (it stays" if objectives == 1 else "will lose their team (they stay"
        consequences = [
            objectives and f"{editing.counted(objectives, 'objective')} {lose}, with no team).",
            members and f"{editing.counted(members, 'membership')} will end (the people stay).",
        ]
        return editing.confirm_delete(f"Delete {name}", f"the team “{name}”", consequences,
                                      url_for("web.edit_team", team_id=team_id))
    teams.delete(db, team_id)
    return redirect(url_for("web.show_teams"), 303)
