"""The admin commands, by topic: serve, users, keys, and the database file (init-db, backup, restore)."""
from . import database, keys, users


def init_app(app):
    """Makes the admin commands the app's own, for `okr COMMAND` and Flask's test runner."""
    for command in (database.init_db_command, users.users_cli, keys.keys_cli, keys.auth_header,
                    database.backup, database.restore):
        app.cli.add_command(command)
