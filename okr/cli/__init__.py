"""The admin commands, by topic: serve, users, keys, the database file (init-db, backup, restore), replication's
status, export and import, import from a Simple OKR API, webhooks, metric sources, and demo."""
import functools

from ..store import events
from . import (assistants, database, demo, keys, reminders, replication, import_simpleokr, sources, transfer, users,
               webhooks)

# In the order `okr --help` lists them, after serve.
COMMANDS = (database.init_db_command, users.users_cli, keys.keys_cli, keys.auth_header, webhooks.webhooks_cli,
            sources.sources_cli,
            reminders.reminders_cli, database.backup, database.restore, replication.replication_cli,
            transfer.export_command, transfer.import_command, import_simpleokr.import_simpleokr_command, demo.demo,
            assistants.mcp_command)
# Each command's own help names the options only it takes.
GLOBAL_OPTIONS_EPILOG = "Global options such as --database work here too: see okr --help."


def all_commands(commands, prefix="okr"):
    """(command, its full name) of each command and subcommand."""
    for command in commands:
        name = f"{prefix} {command.name}"
        yield command, name
        yield from all_commands(getattr(command, "commands", {}).values(), name)


def acting_as_system(callback, name):
    """The command's callback, its writes' events by the system actor named as the command ("okr import")."""

    @functools.wraps(callback)
    def run(*args, **kwargs):
        with events.acting_as(events.system(name)):
            return callback(*args, **kwargs)

    return run


for _command, _name in all_commands(COMMANDS):
    _command.epilog = GLOBAL_OPTIONS_EPILOG
    if _command.callback is not None:
        _command.callback = acting_as_system(_command.callback, _name)


def init_app(app):
    """Makes the admin commands the app's own, for `okr COMMAND` and Flask's test runner."""
    app.cli.context_settings["help_option_names"] = ["-h", "--help"]
    for command in COMMANDS:
        app.cli.add_command(command)
