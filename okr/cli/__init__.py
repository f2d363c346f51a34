"""The admin commands, by topic: serve, users, keys, the database file (init-db, backup, restore), export and
import, import from a Simple OKR API, and demo."""
from . import database, demo, keys, simpleokr, transfer, users

# In the order `okr --help` lists them, after serve.
COMMANDS = (database.init_db_command, users.users_cli, keys.keys_cli, keys.auth_header, database.backup,
            database.restore, transfer.export_command, transfer.import_command,
            simpleokr.import_simpleokr_command, demo.demo)
# Each command's own help names the options only it takes.
GLOBAL_OPTIONS_EPILOG = "Global options such as --database work here too: see okr --help."


def all_commands(commands):
    for command in commands:
        yield command
        yield from all_commands(getattr(command, "commands", {}).values())


for _command in all_commands(COMMANDS):
    _command.epilog = GLOBAL_OPTIONS_EPILOG


def init_app(app):
    """Makes the admin commands the app's own, for `okr COMMAND` and Flask's test runner."""
    app.cli.context_settings["help_option_names"] = ["-h", "--help"]
    for command in COMMANDS:
        app.cli.add_command(command)
