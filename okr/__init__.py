"""A self-hosted OKR service: objectives, key results, cycles, teams and users over JSON."""
import os
import sys

from flask import Flask
from werkzeug.routing import Rule

from . import proxies


def schema_path():
    """schema.sql beside the package in a checkout, or where a plain pip install puts it."""
    checkout = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "schema.sql")
    installed = os.path.join(sys.prefix, "share", "okr", "schema.sql")
    return checkout if os.path.exists(checkout) or not os.path.exists(installed) else installed


def env_settings():
    """The OKR_* environment variables that are set, as config keys."""
    names = ("HOST", "PORT", "DATABASE", "WORKERS", "THREADS", "CPU", "CONNECTION_LIMIT", "CHANNEL_TIMEOUT",
             "CONNECTIONS_PER_ADDRESS", "HEAD_TIMEOUT", "UNREAD_TIMEOUT", "ACCESS_LOG",
             "SECURE_COOKIES", "EVENT_RETENTION_DAYS", "BASE_URL", "SMTP_URL", "SMTP_PASSWORD", "SMTP_TIMEOUT",
             "MAIL_FROM", "TIMEZONE", "WEEKLY_MAIL", "REPLICATE", "REPLICATE_ENDPOINT", "REPLICATE_MAX_LAG",
             "REPORT_SLOTS", "REPORT_WAIT", "BIG_REPORT_OBJECTIVES",
             # Sign-in with an identity provider (okr/accounts/identity_provider.py, docs/sign-in.md).
             "OIDC_ISSUER", "OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET", "OIDC_NAME", "PUBLIC_URL", "OIDC_CREATE_USERS",
             "OIDC_ALLOWED_DOMAINS", "PASSWORD_SIGN_IN")
    settings = {key: os.environ["OKR_" + key] for key in names if os.environ.get("OKR_" + key)}
    if os.environ.get("OKR_ALLOWED_HOSTS"):
        settings["ALLOWED_HOSTS"] = [name for name in os.environ["OKR_ALLOWED_HOSTS"].split(",") if name.strip()]
    if os.environ.get("OKR_TRUSTED_PROXIES"):
        settings["TRUSTED_PROXIES"] = [entry for entry in os.environ["OKR_TRUSTED_PROXIES"].split(",") if entry.strip()]
    return settings


def sync_once(ensure_sync):
    """Flask's ensure_sync, asked once per function: Flask asks for every hook and view of every request,
    and its inspect of each function was 7 % of a signed GET's time (docs/design.md, Worker processes)."""
    checked = {}

    def ensure(func):
        try:
            return checked[func]
        except KeyError:
            checked[func] = sync = ensure_sync(func)
            return sync
        except TypeError:  # an unhashable callable
            return ensure_sync(func)

    return ensure


class LazyRule(Rule):
    """A URL rule whose URL builders are compiled the first time url_for needs them.

    Werkzeug compiles two builders per rule, through ast, as the rule is added: most of what building the app
    costs (docs/design.md, Building the app), paid by every `okr` command and every test, for builders that a
    request to the API never uses. Werkzeug without _compile_builder would simply build them all up front.
    """

    def _compile_builder(self, append_unknown=True):
        compile_now = super()._compile_builder
        compiled = []

        def build(rule, *args, **kwargs):
            if not compiled:  # two threads may both compile; either result is the same function
                compiled.append(compile_now(append_unknown).__get__(rule, None))
            return compiled[0](*args, **kwargs)

        return build


def create_app(test_config=None):
    """Builds the app: defaults, then OKR_* environment variables, then test_config."""
    app = Flask(__name__, static_folder=None)
    app.url_rule_class = LazyRule
    app.ensure_sync = sync_once(app.ensure_sync)
    # //v1/cycles is not a redirect to /v1/cycles but an unknown path.
    app.url_map.merge_slashes = False
    app.config.from_mapping(
        DATABASE="okr.db",
        SCHEMA=schema_path(),
        HOST="127.0.0.1",
        PORT=8080,
        # Serving settings (okr/server/); docs/operations.md says why.
        # auto: one worker process per CPU the server may use, at most 8 (okr/server/workers.py).
        WORKERS="auto",
        THREADS=8,
        CPU="auto",
        CONNECTION_LIMIT=1000,
        CHANNEL_TIMEOUT=30,
        # Per-client limits (okr/server/connections.py): connections from one address (0: no cap), seconds
        # to send a request's head, seconds an answer may wait with its client not reading.
        CONNECTIONS_PER_ADDRESS=64,
        HEAD_TIMEOUT=10,
        UNREAD_TIMEOUT=5,
        # Events older than this many days are pruned by the server (okr/server/background.py).
        EVENT_RETENTION_DAYS=400,
        # One line per request in the server's log; `okr serve` adds it, never the app itself.
        ACCESS_LOG=True,
        BUSY_TIMEOUT_MS=5000,
        # Big reports and exports (okr/bounded.py, docs/design.md): at most REPORT_SLOTS built at once by all
        # the server's processes together; a request waits up to REPORT_WAIT seconds for a slot, then answers 503.
        # Reports of fewer than BIG_REPORT_OBJECTIVES objectives are built in memory and never wait.
        REPORT_SLOTS=2,
        REPORT_WAIT=10,
        BIG_REPORT_OBJECTIVES=2000,
        PAGE_SIZE=100,
        MAX_PAGE_SIZE=1000,
        MAX_CONTENT_LENGTH=1024 * 1024,
        API_VERSION="1.0.0",
        # Host names served besides loopback and IP addresses (--allowed-host): okr/pipeline.py says why.
        ALLOWED_HOSTS=[],
        # The reverse proxies whose X-Forwarded-For, -Host and -Proto are believed (--trusted-proxies: addresses
        # or networks): okr/proxies.py says how.
        TRUSTED_PROXIES=[],
        # The dashboard's session cookie is sent over HTTPS only: for a server behind TLS.
        SECURE_COOKIES=False,
        # Email (okr/mail.py, docs/email.md): off until SMTP_URL and MAIL_FROM are set. BASE_URL is the address
        # links in emails point to (default http://HOST:PORT); the weekly reminders and digest go out at
        # WEEKLY_MAIL ("monday 09:00") in TIMEZONE (okr/weekly.py).
        BASE_URL=None,
        SMTP_URL=None,
        SMTP_PASSWORD=None,
        SMTP_TIMEOUT=30,
        MAIL_FROM=None,
        TIMEZONE="UTC",
        WEEKLY_MAIL="monday 09:00",
        # Continuous replication with Litestream (okr/server/replication.py, docs/operations.md): the replica's URL
        # (file:///path or s3://bucket/path), an S3-compatible store's endpoint, and how many seconds the
        # replica may fall behind before /healthz answers 503.
        REPLICATE=None,
        REPLICATE_ENDPOINT=None,
        REPLICATE_MAX_LAG=60,
        # The stylesheet's cache life; its URL changes with its content.
        SEND_FILE_MAX_AGE_DEFAULT=86400,
        # Sign-in with an identity provider over OpenID Connect (okr/accounts/identity_provider.py, docs/sign-in.md): on once
        # OIDC_ISSUER is set; the redirect URI is PUBLIC_URL (else BASE_URL) + /login/oidc/callback.
        # OIDC_CREATE_USERS (viewer or editor) adds an unknown person; OIDC_ALLOWED_DOMAINS (comma-separated)
        # limits the emails taken. PASSWORD_SIGN_IN off hides and refuses the password form.
        OIDC_ISSUER=None,
        OIDC_CLIENT_ID=None,
        OIDC_CLIENT_SECRET=None,
        OIDC_NAME="your company account",
        PUBLIC_URL=None,
        OIDC_CREATE_USERS=None,
        OIDC_ALLOWED_DOMAINS=None,
        PASSWORD_SIGN_IN=True,
    )
    app.config.from_mapping(env_settings())
    if test_config is not None:
        app.config.from_mapping(test_config)
    app.config["DATABASE"] = os.fspath(app.config["DATABASE"])
    app.config["ALLOWED_HOSTS"] = frozenset(name.strip().lower().rstrip(".") for name in app.config["ALLOWED_HOSTS"])
    proxies.install(app)
    # For commands that need an app of their own on another file (okr demo builds its database so).
    app.extensions["okr.create_app"] = create_app
    # Keep the spec's field order, and send Unicode as itself rather than \u escapes.
    app.json.sort_keys = False
    app.json.ensure_ascii = False

    from . import api, cli, db, pipeline, web

    # The pipeline first: its after-request hooks then run last, on every answer, a failed commit's too.
    pipeline.init_app(app)
    db.init_app(app, pipeline.request_writes)
    api.init_app(app)
    web.init_app(app)
    cli.init_app(app)
    return app
