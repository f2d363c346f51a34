"""okr mcp: the MCP server over stdio, for an AI assistant on this machine."""
import click
from flask import current_app

from ..accounts import assistant_grants
from ..assistants import local
from ..db import transaction
from .common import reports_errors, use_database


@click.command("mcp")
@click.option("--as", "email", required=True, metavar="EMAIL",
              help="The person the assistant acts for, with their role (a viewer's assistant only reads).")
@click.option("--read-only", is_flag=True, help="The assistant only reads, whatever the person's role.")
@reports_errors
def mcp_command(email, read_only):
    """Serve MCP on stdin and stdout for an AI assistant (Claude Desktop, an IDE).

    The assistant acts as the person EMAIL names, with their rights: every
    change it makes is theirs on the activity feed, "via" the assistant's
    name. Put this command in the assistant's configuration; it runs until
    the assistant closes it.
    """
    use_database()
    with transaction(write=False) as db:
        try:
            grant = assistant_grants.grant_for_person(db, email)
        except assistant_grants.GrantRefused as refused:
            raise click.ClickException(str(refused)) from None
    if read_only:
        grant = grant.read_only_copy()
    local.serve_stdio(current_app._get_current_object(), grant)
