"""A self-hosted OKR service: objectives, key results, cycles, teams and users over JSON."""
import os

from flask import Flask

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "schema.sql")


def env_settings():
    """The OKR_* environment variables that are set, as config keys."""
    names = {"OKR_HOST": "HOST", "OKR_PORT": "PORT", "OKR_DATABASE": "DATABASE", "OKR_THREADS": "THREADS"}
    return {key: os.environ[name] for name, key in names.items() if os.environ.get(name)}


def create_app(test_config=None):
    """Builds the app: defaults, then OKR_* environment variables, then test_config."""
    app = Flask(__name__)
    app.config.from_mapping(
        DATABASE="okr.db",
        SCHEMA=SCHEMA_PATH,
        HOST="127.0.0.1",
        PORT=8080,
        THREADS=4,
        BUSY_TIMEOUT_MS=5000,
        PAGE_SIZE=100,
        MAX_PAGE_SIZE=1000,
        MAX_CONTENT_LENGTH=1024 * 1024,
    )
    app.config.from_mapping(env_settings())
    if test_config is not None:
        app.config.from_mapping(test_config)
    app.config["DATABASE"] = os.fspath(app.config["DATABASE"])
    # Keep the spec's field order, and send Unicode as itself rather than \u escapes.
    app.json.sort_keys = False
    app.json.ensure_ascii = False

    from . import auth, commands, cycles, db, errors, key_results, objectives, teams, users

    db.init_app(app)
    errors.init_app(app)
    auth.init_app(app)
    commands.init_app(app)
    for module in (objectives, key_results, cycles, teams, users):
        app.register_blueprint(module.bp)

    @app.get("/healthz")
    def health():
        """Tells a process supervisor that the service answers."""
        return {"status": "ok"}

    return app
