"""okr users: add, list, update, import, deactivate and activate users; their roles, invitations and passwords,
and their held sign-ins.

Users are created and changed here (and, once signed in, by an admin on the dashboard), never over the API.
"""
import csv
import sys
import unicodedata
from contextlib import contextmanager

import click
from flask import current_app
from flask.cli import AppGroup
from marshmallow import ValidationError

from ..accounts import passwords, throttle
from ..db import transaction
from ..errors import Conflict, NotFound
from ..outbound import smtp
from ..proxies import checked_url
from ..records import user_json
from ..rules.email_addresses import email_key
from ..rules.messages import flatten
from ..rules.body_schemas import user_schema
from ..store import invitations, users
from .common import echo_json, logger, read_database, reports_errors, use_database


users_cli = AppGroup("users", help="Users: add, list, update, import, deactivate, activate, set-role, invite, "
                                   "set-password, unlock, unlink.")
ROLE_CHOICE = click.Choice(users.ROLES)


def validated_user(name, email, partial=False):
    """The user's fields as add stores them (the email in NFC); with partial, only those given."""
    given = {key: value for key, value in (("name", name), ("email", email)) if value is not None or not partial}
    try:
        return user_schema.load(given, partial=partial)
    except ValidationError as error:
        problems = "; ".join(f"{field}: {text}" for field, text in flatten(error.messages).items())
        raise click.ClickException(problems) from None


@users_cli.command("add")
@click.option("--name", required=True, help="Full name.")
@click.option("--email", required=True, help="Email address; unique regardless of the case of A to Z.")
@click.option("--role", type=ROLE_CHOICE, default="editor", show_default=True,
              help="admin (also manages people), editor (changes OKRs) or viewer (only reads).")
@reports_errors
def add_user(name, email, role):
    """Create a user, without a password, and print it as JSON.

    The JSON is the user as GET /v1/users/:id gives it, which has no role: okr users
    list shows it. okr users invite makes the link to choose a password.
    """
    user = validated_user(name, email)
    use_database()
    with transaction() as db, refusals():
        row = users.create(db, user["name"], user["email"], role)
    echo_json(user_json(row))


def listed_user(row):
    """A user as okr users list --json prints it: as the API gives it, plus its role and whether it has a
    password (never the password's hash)."""
    return {**user_json(row), "role": row["role"], "has_password": row["password_hash"] is not None}


def yes_no(value):
    return "yes" if value else "no"


@users_cli.command("list")
@click.option("--json", "as_json", is_flag=True,
              help='Print one JSON object per user and line: as GET /v1/users/:id gives it, plus "role" '
                   '(admin, editor or viewer) and "has_password" (true or false).')
@reports_errors
def list_users(as_json):
    """List users in creation order, inactive ones included, with their role and
    whether they have a password."""
    read_database()
    with transaction(write=False) as db:
        listed = [listed_user(row) for row in users.listed(db)]
    if as_json:
        for user in listed:
            echo_json(user)
    elif not listed:
        click.echo("no users yet; add one with okr users add --name NAME --email EMAIL")
    else:
        table = [("EMAIL", "NAME", "ROLE", "ACTIVE", "PASSWORD", "CREATED", "ID")] + [
            (user["email"], user["name"], user["role"], yes_no(user["is_active"]), yes_no(user["has_password"]),
             user["created_at"], user["id"])
            for user in listed
        ]
        widths = [max(columns(row[column]) for row in table) for column in range(len(table[0]) - 1)]
        for row in table:
            click.echo("".join(cell + " " * (width - columns(cell) + 2) for cell, width in zip(row, widths)) + row[-1])


def columns(text):
    """The terminal columns text takes: two for a wide character (such as 李), none for a combining one."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


@users_cli.command("update")
@click.argument("email")
@click.option("--name", help="New full name.")
@click.option("--email", "new_email", help="New email address; unique regardless of the case of A to Z.")
@reports_errors
def update_user(email, name, new_email):
    """Change the name or email of the user with EMAIL.

    Prints the user as JSON. The new email must be valid, and no other user's
    (in NFC, regardless of the case of the letters A to Z). A new email voids the
    user's invitation and password reset links (they went to the old address):
    invite them again.
    """
    if name is None and new_email is None:
        raise click.ClickException("nothing to change: pass --name, --email or both")
    # Only what is given is checked: an email stored under older rules may stay as it is.
    changes = validated_user(name, new_email, partial=True)
    use_database()
    with transaction() as db, refusals(email):
        row = users.find_by_email(db, email)
        if row is None:
            raise NotFound("user")
        row = users.update(db, row, changes.get("name", row["name"]), changes.get("email", row["email"]))
    echo_json(user_json(row))


@contextmanager
def refusals(email=None):
    """The store's refusals as one `okr:` line: a taken email, or no user with the email asked for."""
    try:
        yield
    except Conflict as error:
        raise click.ClickException(str(error)) from None
    except NotFound:
        raise click.ClickException(f"no user with email {email}") from None


def set_active(email, active):
    use_database()
    with transaction() as db, refusals(email):
        row = users.set_active(db, users.found(db, email), active)
    echo_json(user_json(row))


@users_cli.command("deactivate")
@click.argument("email")
@reports_errors
def deactivate_user(email):
    """Mark the user with EMAIL inactive; print it as JSON.

    An inactive user cannot sign in: their dashboard sessions end now, their
    invitation and password reset links no longer work (nor after activate),
    and their API keys are refused from the next request. The user stays listed, in okr users
    list and over the API, with is_active false, and may still be an
    objective's assignee. The last active admin cannot be deactivated.
    """
    set_active(email, 0)


@users_cli.command("activate")
@click.argument("email")
@reports_errors
def activate_user(email):
    """Mark the user with EMAIL active again; print it as JSON."""
    set_active(email, 1)


@users_cli.command("set-role")
@click.argument("email")
@click.argument("role", type=ROLE_CHOICE, metavar="ROLE")
@reports_errors
def set_user_role(email, role):
    """Give the user with EMAIL the ROLE admin, editor or viewer.

    An admin also manages people; an editor changes cycles, teams, objectives,
    key results and check-ins; a viewer only reads. The user's sessions and API
    keys act with the new role from their next request. Prints the user as JSON:
    as GET /v1/users/:id gives it, plus "role". The last active admin cannot be
    made an editor or a viewer: make another admin first.
    """
    use_database()
    with transaction() as db, refusals(email):
        row = users.set_role(db, users.found(db, email), role)
    echo_json({**user_json(row), "role": row["role"]})


def invitation_base(base_url):
    """The invitation link's base URL, checked, without a trailing slash: --base-url, else the public URL (as every
    link, okr.outbound.smtp.public_base: OKR_PUBLIC_URL, else OKR_BASE_URL, else this server's --host and --port)."""
    if base_url is not None:
        try:
            return checked_url(base_url, "--base-url")
        except ValueError as error:
            raise click.ClickException(str(error)) from None
    try:
        return smtp.public_base(current_app.config, "pass --base-url (or set OKR_PUBLIC_URL) with the one they use")
    except smtp.MailSettingsError as error:
        raise click.ClickException(str(error)) from None


@users_cli.command("invite")
@click.argument("email")
@click.option("--base-url", envvar="OKR_BASE_URL", metavar="URL",
              help="The address people open the dashboard at, such as https://okr.example.com; http or https, "
                   "no query. Default: the public URL (OKR_PUBLIC_URL or OKR_BASE_URL), else this server's, "
                   "from --host and --port (http://127.0.0.1:8080).")
@click.option("--json", "as_json", is_flag=True, help='Print {"url": LINK} and nothing else.')
@reports_errors
def invite_user(email, base_url, as_json):
    """Make a link for the user with EMAIL to choose a password, and print it.

    The link is URL/invitations/TOKEN: valid for 7 days, it works once, and it
    voids any earlier link of the user's. Only a digest of the token is kept,
    so the link is shown now and never again. With email set up (OKR_SMTP_URL
    and OKR_MAIL_FROM) it is also emailed to the user; without, send it
    yourself. The last line printed is the link. A deactivated user cannot be
    invited.
    """
    try:
        mail_settings = smtp.settings(current_app.config)
    except smtp.MailSettingsError as error:
        raise click.ClickException(str(error)) from None
    base = invitation_base(base_url)
    use_database()
    with transaction() as db, refusals(email):
        user = users.found(db, email)
        if not user["is_active"]:
            raise click.ClickException(f"{user['email']} is deactivated: reactivate them first "
                                       f"(okr users activate {user['email']})")
        token = invitations.create(db, user)
    url = f"{base}/invitations/{token}"
    emailed = mail_settings is not None and email_invitation(mail_settings, user, url)
    if as_json:
        echo_json({"url": url})
    else:
        click.echo(f"invitation for {user['name']} <{user['email']}> to choose a password: valid for "
                   f"{invitations.VALID_FOR.days} days, once (an earlier link of theirs no longer works)"
                   + ("; emailed to them" if emailed else ""))
        click.echo(url)


def email_invitation(mail_settings, user, url):
    """Emails the invitation link; True once sent. A mail server's refusal is a warning on stderr, not a
    failure: the link is printed all the same, to send some other way."""
    message = smtp.message(mail_settings, user["name"], user["email"], "Your invitation to the OKR dashboard",
                           smtp.invitation_text(user["name"], user["email"], url))
    try:
        smtp.send(mail_settings, message)
    except smtp.MailError as error:
        logger.warning("the invitation was not emailed: %s; send the link yourself", error)
        return False
    return True


def stdin_is_terminal():
    return sys.stdin is not None and sys.stdin.isatty()


def read_password():
    """The new password: asked twice, hidden, at a terminal; else standard input's first line, without its
    line ending (none at all: an empty one)."""
    if stdin_is_terminal():
        return click.prompt("New password", hide_input=True, confirmation_prompt="Repeat it", err=True)
    line = sys.stdin.readline() if sys.stdin is not None else ""
    return line.removesuffix("\n").removesuffix("\r")


# The help states the minimum length from its constant, so it is an f-string rather than the docstring.
SET_PASSWORD_HELP = f"""Set the password of the user with EMAIL.

At a terminal it asks for the password twice, without showing it. Otherwise
it reads standard input's first line, without the line ending, for scripts:
printf '%s\\n' "$PASSWORD" | okr users set-password EMAIL. A password has {passwords.MIN_LENGTH}
characters or more, and the 10,000 most common ones are refused. It is
stored as an argon2id hash, never shown nor logged. The user's dashboard
sessions end, and an invitation link of theirs no longer works.
"""


@users_cli.command("set-password", help=SET_PASSWORD_HELP)
@click.argument("email")
@reports_errors
def set_user_password(email):
    use_database()
    with transaction(write=False) as db, refusals(email):
        users.found(db, email)  # before asking for a password
    password = read_password()
    problem = passwords.problem(password)
    if problem:
        raise click.ClickException("password not set: " + problem[:1].lower() + problem[1:].rstrip("."))
    password_hash = passwords.hash_password(password)
    with transaction() as db, refusals(email):
        user = users.found(db, email)
        users.set_password(db, user, password_hash)
    click.echo(f"password set for {user['email']}; their dashboard sessions have ended")


@users_cli.command("unlock")
@click.argument("email")
@reports_errors
def unlock_user(email):
    """Clear the held sign-ins of the user with EMAIL.

    After too many failed sign-ins for one person from one address (10 within
    15 minutes unless OKR_SIGN_IN_FAILURES_PER_ACCOUNT and OKR_SIGN_IN_WINDOW
    say otherwise), their sign-in from there waits (429). This forgets every failed
    sign-in of theirs, from every address (with a password, with one of their
    API keys, and asking for a reset link), so that they may sign in again at
    once. An address that failed too often in all (OKR_SIGN_IN_FAILURES_PER_ADDRESS) stays held for everyone.
    """
    use_database()
    with transaction() as db, refusals(email):
        user = users.found(db, email)
        forgotten = throttle.forget_person(db, user)
    click.echo(f"{user['email']} may sign in again: {forgotten} failed sign-in{'' if forgotten == 1 else 's'} "
               "of theirs forgotten")


@users_cli.command("unlink")
@click.argument("email")
@reports_errors
def unlink_user(email):
    """Forget who the user with EMAIL is at the identity provider.

    A user is linked to the provider's account at their first sign-in there,
    and another account there with the same verified email is then refused
    ("linked to another sign-in"). When the person's own account at the
    provider was made anew, unlink them: their next sign-in with a verified
    email links the account it comes with. The activity feed records it.
    """
    use_database()
    with transaction() as db, refusals(email):
        user = users.found(db, email)
        unlinked = users.unlink(db, user)
    if unlinked is None:
        click.echo(f"{user['email']} is linked to no sign-in with the identity provider; nothing changed")
    else:
        click.echo(f"{user['email']} is no longer linked to a sign-in with the identity provider: their next "
                   "sign-in there links the account it comes with")


COLUMNS = "name,email (in that order)"
# First-row cells that show the row was meant as a header, once normalised: lower
# case, with no spaces, hyphens or underscores.
HEADER_WORDS = {"name", "fullname", "username", "user", "email", "mail", "emailaddress", "address"}
# Problems shown of a file that has many: the line stays readable, and the first ones show the pattern.
PROBLEMS_SHOWN = 10


def header_kind(row):
    """'name,email' for the expected header, 'other' for a row that looks like a different header, else None."""
    cells = [cell.strip().lower() for cell in row]
    if cells == ["name", "email"]:
        return "name,email"
    words = {cell.replace(" ", "").replace("-", "").replace("_", "") for cell in cells}
    # A data row holds an email, and so an @.
    return "other" if words & HEADER_WORDS and not any("@" in cell for cell in cells) else None


def read_user_rows(path):
    """The users of a name,email CSV file (header optional), all validated or none."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    header = header_kind(rows[0]) if rows else None
    if header == "other":
        raise click.ClickException(f"nothing imported: row 1: expected the header name,email (in that order), "
                                   f"or no header; got {','.join(rows[0])}")
    people, problems, seen = [], [], set()
    for number, row in enumerate(rows[1:] if header else rows, start=2 if header else 1):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != 2:
            problems.append(f"row {number}: expected 2 columns, {COLUMNS}; got {len(row)}")
            continue
        try:
            user = validated_user(*row)
        except click.ClickException as error:
            problems.append(f"row {number}: {error.message}")
            continue
        if email_key(user["email"]) in seen:
            problems.append(f"row {number}: {user['email']} appears twice in the file")
        seen.add(email_key(user["email"]))
        people.append(user)
    if problems:
        more = len(problems) - PROBLEMS_SHOWN
        raise click.ClickException("nothing imported: " + "; ".join(problems[:PROBLEMS_SHOWN])
                                   + (f" (and {more} more rows with problems)" if more > 0 else ""))
    return people


@users_cli.command("import")
@click.argument("csv_file", type=click.Path(exists=True, dir_okay=False))
@reports_errors
def import_users(csv_file):
    """Create users from a CSV file of name,email rows.

    The columns are name and email, in that order. A first row name,email is
    taken as the header. Users whose email exists already are skipped; any
    other problem imports nothing.
    """
    people = read_user_rows(csv_file)
    use_database()
    imported = skipped = 0
    with transaction() as db:
        for user in people:
            if users.email_exists(db, user["email"]):
                skipped += 1
            else:
                users.create(db, user["name"], user["email"])
                imported += 1
    echo_json({"imported": imported, "skipped_existing": skipped})
