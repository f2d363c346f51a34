"""Signing in and out, invitations, the account page and the People page (admins); a team's page is in
okr.web.team_pages.

Who may open which is okr.access's to say, through the guards in okr.web.sessions: the
People page's views are marked with sessions.people_managers_only, the account page's forms, which every role
may send, with sessions.own_account.
"""
import time

from flask import redirect, render_template, request, session, url_for
from marshmallow import ValidationError

from .. import access
from ..db import get_db
from ..errors import Conflict
from ..rules import passwords
from ..rules.ids import MAX_ROW_ID
from ..rules.messages import flatten
from ..rules.schemas import user_schema
from ..store import invitations, keys, sign_ins, users, web_sessions
from . import oidc_pages, sessions, sign_in
from .email_pages import email_invitation, mail_settings
from .errors import PageError
from .views import bp, local_path

PEOPLE_PER_PAGE = 200
ROLE_WORDS = {
    "admin": "reads and changes everything, and manages people",
    "editor": "reads and changes cycles, teams, objectives, key results and check-ins",
    "viewer": "reads everything, changes nothing",
}


@bp.route("/login", methods=["GET", "POST"])
def show_login():
    """Asks for an email and password (or an API key's credential and secret), and opens a session."""
    # `next` is a path within the app ("/cycles/…"); the redirect puts the mount's prefix before it.
    next_path = local_path(request.values.get("next", ""))
    if not sessions.login_required():
        return redirect(request.script_root + next_path, 303)
    shown = {"next": next_path, "email": "", "credential": "", "error": None, "key_error": None,
             "email_set_up": mail_settings() is not None}
    if request.method == "GET":
        # Once, after signing out of a session the identity provider opened: the link to sign out there too.
        return render_template("login.html", **shown, provider_sign_out=session.pop("provider_sign_out", None))
    if "credential" in request.form:
        credential = request.form.get("credential", "").strip()
        try:
            key = sign_in.with_key(credential, request.form.get("secret", "").strip())
        except sign_in.SignInRefused as refusal:
            return render_template("login.html", **{**shown, "credential": credential, "key_error": str(refusal)}), 401
        sessions.log_in(credential=key["credential"])
    else:
        email = request.form.get("email", "").strip()
        try:
            user = sign_in.with_password(email, request.form.get("password", ""))
        except sign_in.SignInRefused as refusal:
            return render_template("login.html", **{**shown, "email": email, "error": str(refusal)}), 401
        sessions.log_in(user_id=user["id"])
    return redirect(request.script_root + next_path, 303)


@bp.post("/logout")
def log_out():
    """Ends the session (and, for one the identity provider opened, offers to sign out there too)."""
    via_provider = session.get("via") == "oidc"
    sessions.log_out()
    if via_provider:
        oidc_pages.signed_out_from_provider_link()
    return redirect(url_for("web.show_login" if sessions.login_required() else "web.show_dashboard"), 303)


@bp.route("/invitations/<token>", methods=["GET", "POST"])
def show_invitation(token):
    """Lets an invited user choose a password, then signs them in."""
    user = sign_in.invited_user(token)
    if request.method == "GET":
        return render_template("invitation.html", user=user, error=None)
    password = request.form.get("password", "")
    problem = passwords.problem(password)
    if problem:
        return render_template("invitation.html", user=user, error=problem), 400
    password_hash = sign_in.new_password_hash(password)  # before the write transaction: it takes a while
    db = get_db()
    user = sign_in.still_invited(db, token)
    users.set_password(db, user, password_hash)
    invitations.use(db, token)
    sessions.log_in(user_id=user["id"])
    return redirect(url_for("web.show_dashboard"), 303)


@bp.get("/account")
def show_account():
    """Shows who is signed in, with forms to change the password and to sign out everywhere."""
    return render_account()


def render_account(errors=None, changed=False):
    db = get_db()
    actor = access.current_actor()
    user = None if actor is None or actor.user_id is None else users.get(db, actor.user_id)
    return render_template(
        "account.html", actor=actor, user=user, role_words=ROLE_WORDS, errors=errors or {}, changed=changed,
        teams=user_teams(db, user["id"]) if user else [], email_set_up=mail_settings() is not None,
        has_keys=bool(user) and keys.user_has_keys(db, user["id"]),
    )


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
    errors = {}
    try:
        sign_in.with_password(user["email"], request.form.get("current_password", ""))
    except sign_in.SignInRefused:
        errors["current_password"] = "This is not your current password."
    new = request.form.get("password", "")
    problem = passwords.problem(new)
    if problem:
        errors["password"] = problem
    if errors:
        return render_account(errors), 400
    password_hash = sign_in.new_password_hash(new)  # before the write transaction: it takes a while
    users.set_password(get_db(), user, password_hash, keep_token=sessions.session_token())
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
    user = signed_in_user()
    web_sessions.end_users(get_db(), user["id"])
    sessions.forget_session()
    return redirect(url_for("web.show_login"), 303)


def user_teams(db, user_id):
    return db.execute(
        """SELECT t.id, t.name FROM team_members m JOIN teams t ON t.id = m.team_id
           WHERE m.user_id = ? ORDER BY t.name, t.seq""", (user_id,)).fetchall()


@bp.get("/people")
@sessions.people_managers_only
def show_people():
    """Lists people with their role, status, teams and whether they have a password."""
    return render_people()


def render_people(invited=None, invitation_url=None, form=None, errors=None, error=None, email_problem=None):
    db = get_db()
    people = db.execute("SELECT * FROM users WHERE seq > ? ORDER BY seq LIMIT ?",
                        (after_arg(), PEOPLE_PER_PAGE + 1)).fetchall()
    more = people[PEOPLE_PER_PAGE - 1]["seq"] if len(people) > PEOPLE_PER_PAGE else None
    people = people[:PEOPLE_PER_PAGE]
    memberships = {}
    if people:
        for row in db.execute(
                """SELECT m.user_id, t.id, t.name FROM team_members m JOIN teams t ON t.id = m.team_id
                   JOIN users u ON u.id = m.user_id WHERE u.seq BETWEEN ? AND ? ORDER BY t.name, t.seq""",
                (people[0]["seq"], people[-1]["seq"])):
            memberships.setdefault(row["user_id"], []).append(row)
    return render_template(
        "people.html", people=people, teams=memberships, more=more, roles=users.ROLES, invited=invited,
        held=sign_ins.held_people(db, people, int(time.time())),
        invitation_url=invitation_url, email_problem=email_problem, form=form or {"name": "", "email": "", "role": "editor"},
        errors=errors or {}, error=error)


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
    token = invitations.create(get_db(), user)
    url = request.host_url.rstrip("/") + url_for("web.show_invitation", token=token)
    return render_people(invited=user, invitation_url=url, email_problem=email_invitation(user, token))


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
    sign_ins.forget_person(db, users.get(db, user_id))
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
