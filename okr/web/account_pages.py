"""The account page (/account: who is signed in, their password, their weekly emails, signing out everywhere) and
the People page (/people, admins'); signing in and out is okr.web.sign_in_pages, a team's page okr.web.team_pages.

Who may open which is okr.accounts.access's to say, through the guards in okr.accounts.sessions: the
People page's views are marked with sessions.people_managers_only, the account page's forms, which every role
may send, with sessions.own_account.
"""
import time

from flask import make_response, redirect, render_template, request, url_for
from marshmallow import ValidationError

from .. import proxies
from ..accounts import access, assistant_grants, password_links, people_csv, sessions, sign_in, throttle
from ..db import get_db
from ..errors import Conflict, Invalid, NotFound
from ..rules.ids import MAX_ROW_ID
from ..rules.messages import flatten
from ..rules.body_schemas import user_schema
from ..store import keys, team_members, users
from .errors import PageError
from .views import bp

PEOPLE_PER_PAGE = 200
CSV_ROWS_SHOWN = 200  # rows listed in each part of a CSV's preview and result (added, changed, skipped...)
ROLE_WORDS = {
    "admin": "reads and changes everything, and manages people",
    "editor": "reads and changes cycles, teams, objectives, key results and check-ins",
    "viewer": "reads everything, changes nothing",
}


@bp.get("/account")
def show_account():
    """Shows who is signed in, with forms to change the password and to sign out everywhere."""
    return render_account()


def render_account(errors=None, changed=False, new_token=None, assistant_form=None):
    db = get_db()
    actor = access.current_actor()
    user = None if actor is None or actor.user_id is None else users.get(db, actor.user_id)
    everyone = actor is not None and actor.role == "admin"
    return render_template(
        "account.html", actor=actor, user=user, role_words=ROLE_WORDS, errors=errors or {}, changed=changed,
        teams=team_members.teams_of(db, user["id"]) if user else [],
        email_set_up=password_links.mail_settings() is not None,
        has_keys=bool(user) and keys.user_has_keys(db, user["id"]),
        assistants=assistant_grants.connected(db, None if everyone else user["id"]) if user else [],
        everyone=everyone, new_token=new_token, token_days=assistant_grants.PERSONAL_TOKEN_DAYS,
        assistant_form=assistant_form or {"name": "", "rights": "read", "days": "90"},
        mcp_url=proxies.service_root() + "/mcp",
    )


@bp.post("/account/assistants")
@sessions.own_account
def connect_assistant():
    """Makes a personal token for an assistant of the signed-in person's, shown on the page this once."""
    user = signed_in_user()
    form = {name: request.form.get(name, "").strip() for name in ("name", "rights", "days")}
    errors = {}
    if form["rights"] not in ("read", "write"):
        errors["rights"] = "Choose read only, or read and write."
    if not (form["days"].isascii() and form["days"].isdigit() and int(form["days"]) in
            assistant_grants.PERSONAL_TOKEN_DAYS):
        errors["days"] = "Choose 30, 90 or 365 days."
    if not errors:
        try:
            token = assistant_grants.make_personal_token(
                get_db(), user, form["name"], form["rights"] == "read" or access.current_actor().read_only,
                int(form["days"]))
        except Invalid as invalid:
            errors = invalid.fields
    if errors:
        return render_account(errors, assistant_form=form), 400
    response = make_response(render_account(new_token={"token": token, "name": form["name"]}))
    response.headers["Cache-Control"] = "no-store"  # the token is on this page once, and in no cache
    return response


@bp.post("/account/assistants/<grant_id>/disconnect")
@sessions.own_account
def disconnect_assistant(grant_id):
    """Disconnects an assistant: its token ends at once (a person's own; an admin's, anyone's)."""
    signed_in_user()
    try:
        assistant_grants.disconnect(get_db(), grant_id, access.current_actor())
    except NotFound:
        raise PageError(404, "Not found", "That assistant is not connected (any more).") from None
    return redirect(url_for("web.show_account") + "#assistants-heading", 303)


def signed_in_user():
    """The signed-in person's row, read outside any transaction (a password change hashes after it); a 403 page
    for a service key's session or an open server."""
    actor = access.current_actor()
    if actor is None or actor.user_id is None:
        raise PageError(403, "No account", "Only a person signed in as themselves has an account to change.")
    return users.get(sign_in.reads(), actor.user_id)


@bp.post("/account/password")
@sessions.own_account
def change_password():
    """Changes the signed-in person's password; their other sessions end."""
    user = signed_in_user()
    errors = sign_in.change_password(user, request.form.get("current_password", ""), request.form.get("password", ""))
    if errors:
        return render_account(errors), 400
    return render_account(changed=True)


@bp.post("/account/weekly-email")
@sessions.own_account
def set_weekly_email():
    """Turns the signed-in person's weekly emails (check-in reminders and team digest) on or off."""
    user = signed_in_user()
    choice = request.form.get("weekly_email", "")
    if choice not in ("on", "off"):
        return render_account({"weekly_email": "Choose on or off."}), 400
    users.set_weekly_email(get_db(), user, choice == "on")
    return redirect(url_for("web.show_account") + "#weekly-heading", 303)


@bp.post("/account/sign-out-everywhere")
@sessions.own_account
def log_out_everywhere():
    """Ends every session of the signed-in person, this one included."""
    sign_in.sign_out_everywhere(signed_in_user())
    return redirect(url_for("web.show_login"), 303)


@bp.get("/people")
@sessions.people_managers_only
def show_people():
    """Lists people with their role, status, teams and whether they have a password."""
    return render_people()


def render_people(invited=None, invitation_url=None, form=None, errors=None, error=None, email_problem=None,
                  imported=None, pasted=""):
    db = get_db()
    people = users.page(db, after_arg(), PEOPLE_PER_PAGE + 1)
    more = people[PEOPLE_PER_PAGE - 1]["seq"] if len(people) > PEOPLE_PER_PAGE else None
    people = people[:PEOPLE_PER_PAGE]
    memberships = {}
    if people:
        for row in team_members.teams_of_users_between(db, people[0]["seq"], people[-1]["seq"]):
            memberships.setdefault(row["user_id"], []).append(row)
    return render_template(
        "people.html", people=people, teams=memberships, more=more, roles=users.ROLES, invited=invited,
        held=throttle.held_people(db, people, int(time.time())),
        invitation_url=invitation_url, email_problem=email_problem, form=form or {"name": "", "email": "", "role": "editor"},
        errors=errors or {}, error=error, imported=imported, pasted=pasted, shown=CSV_ROWS_SHOWN,
        csv_limits={"bytes": people_csv.MAX_BYTES, "rows": people_csv.MAX_ROWS},
        email_set_up=password_links.mail_settings() is not None)


def after_arg():
    """The list position a page link's `after` names (0 for the first page); a 400 page when it is none."""
    after = request.args.get("after", "")
    if after and not (after.isascii() and after.isdigit() and len(after) <= 19):
        raise PageError(400, "Bad page link", "The link's 'after' is not a position in the list.")
    return min(int(after or 0), MAX_ROW_ID)


def chosen_role():
    role = request.form.get("role", "")
    if role not in users.ROLES:
        raise PageError(400, "Not saved", "Choose the role admin, editor or viewer.")
    return role


@bp.post("/people")
@sessions.people_managers_only
def add_person():
    """Adds a person with a role, and shows their invitation link (emailed to them when email is set up)."""
    form = {name: request.form.get(name, "").strip() for name in ("name", "email")}
    form["role"] = chosen_role()
    try:
        fields = user_schema.load({"name": form["name"], "email": form["email"]})
        user = users.create(get_db(), fields["name"], fields["email"], form["role"])
    except ValidationError as error:
        return render_people(form=form, errors=flatten(error.messages)), 400
    except Conflict:
        return render_people(form=form, errors={"email": "Someone already has this email."}), 400
    return render_invitation(user)


@bp.post("/people/<user_id>/invitation")
@sessions.people_managers_only
def invite_person(user_id):
    """Makes a new invitation link for a person (voiding the earlier one) and shows it."""
    user = users.get(get_db(), user_id)
    if not user["is_active"]:
        raise PageError(400, "Not invited", f"{user['name']} is deactivated: reactivate them first.")
    return render_invitation(user)


def render_invitation(user):
    """The People page with a new invitation's link, also emailed to the person when email is set up."""
    token = password_links.invite(user)
    url = proxies.link_to("web.show_invitation", token=token)
    return render_people(invited=user, invitation_url=url, email_problem=password_links.email_invitation(user, token))


@bp.post("/people/<user_id>/role")
@sessions.people_managers_only
def change_role(user_id):
    """Gives a person another role (never the last active admin)."""
    db = get_db()
    try:
        users.set_role(db, users.get(db, user_id), chosen_role())
    except Conflict as error:
        return render_people(error=f"Not changed: {error}."), 409
    return redirect(url_for("web.show_people") + f"#u-{user_id}", 303)


@bp.post("/people/<user_id>/unlock")
@sessions.people_managers_only
def unlock_person(user_id):
    """Forgets a person's failed sign-ins, from every address, so that nothing holds their sign-in."""
    db = get_db()
    throttle.forget_person(db, users.get(db, user_id))
    return redirect(url_for("web.show_people") + f"#u-{user_id}", 303)


@bp.post("/people/<user_id>/unlink")
@sessions.people_managers_only
def unlink_person(user_id):
    """Forgets who a person is at the identity provider: their next sign-in there links the account it comes
    with."""
    db = get_db()
    users.unlink(db, users.get(db, user_id))
    return redirect(url_for("web.show_people") + f"#u-{user_id}", 303)


@bp.post("/people/<user_id>/status")
@sessions.people_managers_only
def change_status(user_id):
    """Deactivates a person (their sessions end, their keys are refused) or reactivates them."""
    active = request.form.get("is_active", "")
    if active not in ("true", "false"):
        raise PageError(400, "Not saved", "Choose to deactivate or to reactivate.")
    db = get_db()
    try:
        users.set_active(db, users.get(db, user_id), active == "true")
    except Conflict as error:
        return render_people(error=f"Not changed: {error}."), 409
    return redirect(url_for("web.show_people") + f"#u-{user_id}", 303)


def uploaded_csv():
    """The People page's CSV: the file chosen, else the text pasted; Refused when neither was sent."""
    upload = request.files.get("file")
    if upload is not None and upload.filename:
        return upload.stream.read(people_csv.MAX_BYTES + 1)  # one byte past the limit says it is passed
    pasted = request.form.get("csv", "")
    if pasted.strip():
        return pasted
    raise people_csv.Refused("Choose a CSV file, or paste its rows.")


def pasted_back():
    """The pasted text, to show again beside a refusal (not a file's, nor one too large to show)."""
    pasted = request.form.get("csv", "")
    return pasted if len(pasted) <= people_csv.MAX_BYTES else ""


@bp.post("/people/import")
@sessions.people_managers_only
def preview_people():
    """Shows what a CSV of people (a file, or pasted rows) would add, update and skip, and why; writes nothing."""
    try:
        text, rows = people_csv.read(uploaded_csv())  # before the database: the file is read outside any lock
    except people_csv.Refused as refused:
        return render_people(errors={"csv": str(refused)}, pasted=pasted_back()), 400
    planned = people_csv.plan(get_db(), text, rows)
    return render_template("people-import.html", plan=planned, shown=CSV_ROWS_SHOWN,
                           email_set_up=password_links.mail_settings() is not None)


@bp.post("/people/import/apply")
@sessions.people_managers_only
def apply_people():
    """Applies a previewed CSV of people, checked again, in one transaction; emails those added an invitation."""
    try:
        text, rows = people_csv.read(request.form.get("csv", ""))
    except people_csv.Refused as refused:
        return render_people(errors={"csv": str(refused)}), 400
    db = get_db()
    planned = people_csv.plan(db, text, rows)
    email_set_up = password_links.mail_settings() is not None
    invited = people_csv.apply(db, planned, invite=email_set_up)
    if invited:
        password_links.email_invitations_later(invited)
    return render_people(imported=planned)
