"""okr keys and okr auth-header: API keys and signed request headers."""
import click
from flask.cli import AppGroup

from .. import clock
from ..db import transaction
from ..errors import NotFound
from ..rules.request_signature import authorization_header
from ..store import keys, users
from .common import echo_json, read_database, reports_errors, use_database
from .users import columns


keys_cli = AppGroup("keys", help="API keys: create, list, revoke.")


@keys_cli.command("create")
@click.option("--name", required=True, help="What the key is for, e.g. the client's name.")
@click.option("--json", "as_json", is_flag=True, help='Print {"credential": ..., "secret": ...}.')
@click.option("--read-only", is_flag=True, help="The key may only read: GET, HEAD and OPTIONS.")
@click.option("--user", "email", metavar="EMAIL",
              help="The user the key acts as, with their role (their check-ins are theirs); without it, a "
                   "service key.")
@reports_errors
def create_key(name, as_json, read_only, email):
    """Create an API key; its secret is printed now and never again.

    With --user, the key acts as that user: it may do what their role allows
    (and no writes with --read-only), and it is refused while they are
    deactivated. Without it, the key is a service key, which writes like an
    editor but manages no people.
    """
    if not name.strip():
        raise click.ClickException("--name must not be blank")
    use_database()
    with transaction() as db:
        user = None if email is None else key_user(db, email)
        credential, secret = keys.create(db, name, read_only, None if user is None else user["id"])
    if as_json:
        echo_json({"credential": credential, "secret": secret})
    else:
        acts_as = "" if user is None else f"user:       {user['email']} (the key acts as them, with their role)\n"
        click.echo(f"credential: {credential}\nsecret:     {secret}\n{acts_as}"
                   "The secret is shown only this once: store it now.")


def key_user(db, email):
    """The active user with this email, for a key to act as; a one-line refusal otherwise."""
    try:
        user = users.found(db, email)
    except NotFound:
        raise click.ClickException(f"no user with email {email}") from None
    if not user["is_active"]:
        raise click.ClickException(f"{user['email']} is deactivated: reactivate them first "
                                   f"(okr users activate {user['email']})")
    return user


@keys_cli.command("list")
@click.option("--json", "as_json", is_flag=True,
              help='Print one JSON object per key; "user" is the email of the user it acts as, or null for a '
                   'service key.')
@reports_errors
def list_keys(as_json):
    """List API keys (never their secrets), with the user each acts as ("service" for none)."""
    read_database()
    with transaction(write=False) as db:
        rows = keys.listed(db)
    if not rows and not as_json:
        # With --json, one object per key and line: no keys, no lines.
        click.echo("no API keys yet; create one with okr keys create --name NAME")
    width = max((columns(row["user"] or "service") for row in rows), default=0)
    for row in rows:
        if as_json:
            echo_json({**dict(row), "read_only": bool(row["read_only"])})
        else:
            state = f"revoked {row['revoked_at']}" if row["revoked_at"] else "active"
            access = "read-only" if row["read_only"] else "read-write"
            user = row["user"] or "service"
            click.echo(f"{row['credential']}  {row['created_at']}  {state:28}  {access:10}  "
                       f"{user}{' ' * (width - columns(user))}  {row['name']}")


@keys_cli.command("revoke")
@click.argument("credential")
@reports_errors
def revoke_key(credential):
    """Revoke an API key; the next request signed with it is refused."""
    use_database()
    try:
        with transaction() as db:
            revoked_at = keys.revoke(db, credential)
    except NotFound:
        raise click.ClickException(f"no API key with credential {credential}") from None
    click.echo(f"revoked {credential} at {revoked_at}")


@click.command("auth-header")
@click.option("--credential", required=True, envvar="OKR_CREDENTIAL", help="Or set OKR_CREDENTIAL.")
@click.option("--secret", required=True, envvar="OKR_SECRET", help="Or set OKR_SECRET.")
@click.option("--timestamp", help="RFC 3339 UTC time to sign; default: now.")
def auth_header(credential, secret, timestamp):
    """Print a signed Authorization header line, for curl -H."""
    timestamp = timestamp or clock.utc_now()
    click.echo(f"Authorization: {authorization_header(credential, secret, timestamp)}")
