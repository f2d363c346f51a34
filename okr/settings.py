"""Every setting, once: its name (the app.config key), type, default, environment variable, flag and one line of
help. create_app takes its defaults and the OKR_* variables from here, `okr` its flags and their help, and
docs/operations.md's table of settings is checked against it (tests/test_settings.py).

A value is parsed once, when the app is built, whichever way it came (a flag, an OKR_* variable or
create_app's dictionary): the rest of the code reads typed values. One the setting cannot take is a
ValueError of one line that names the setting, which `okr` prints as `okr: ...`. Checks that need more
than the value (a CPU this machine has, a replica URL, email or identity provider settings that go
together) stay where the value is used.
"""
import base64
import os
from dataclasses import dataclass

ON_OFF_WORDS = {"1": True, "on": True, "true": True, "yes": True,
                "0": False, "off": False, "false": False, "no": False}


def switch(value, setting):
    """An on/off setting as a bool: a flag gives a bool, an OKR_* variable a word such as 1, on, 0 or off;
    ValueError naming the setting for a word that is neither."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word not in ON_OFF_WORDS:
        raise ValueError(f"{setting} must be on or off (1 or 0), not {value!r}")
    return ON_OFF_WORDS[word]


def whole_number(value):
    """value as an int when it is one (an int, or digits), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text) if text.isascii() and text.isdigit() else None


def number(value):
    """value as a finite float when it is a number (an int, a float, or its text), else None."""
    if isinstance(value, bool):
        return None
    try:
        seconds = float(value if isinstance(value, (int, float)) else str(value).strip())
    except ValueError:
        return None
    return seconds if seconds == seconds and abs(seconds) != float("inf") else None


def shown_number(value):
    return f"{value:g}" if isinstance(value, float) else str(value)


# --- the types: parse(value, label) gives the typed value or a ValueError; show(value) the value as written ----


class Integer:
    """A whole number from low to high (no upper bound when high is None)."""

    def __init__(self, low, high=None, what="an integer"):
        self.low, self.high, self.what = low, high, what

    def span(self):
        return f"from {self.low} to {self.high}" if self.high is not None else f"of {self.low} or more"

    def parse(self, value, label):
        parsed = whole_number(value)
        if parsed is None or parsed < self.low or (self.high is not None and parsed > self.high):
            raise ValueError(f"{label} must be {self.what} {self.span()}, not {str(value)!r}")
        return parsed

    def show(self, value):
        return str(value)


class AutoOrInteger(Integer):
    """auto, or a whole number from low to high."""

    def parse(self, value, label):
        if str(value).strip().lower() == "auto":
            return "auto"
        parsed = whole_number(value)
        if parsed is None or not self.low <= parsed <= self.high:
            raise ValueError(f"{label} must be auto or an integer from {self.low} to {self.high}, not {str(value)!r}")
        return parsed


class Seconds:
    """A number of seconds, decimals allowed (0.5), from low to high."""

    def __init__(self, low, high):
        self.low, self.high = low, high

    def parse(self, value, label):
        seconds = number(value)
        if seconds is None or not self.low <= seconds <= self.high:
            raise ValueError(f"{label} must be a number of seconds from {self.low} to {self.high}, not {str(value)!r}")
        return seconds

    def show(self, value):
        return shown_number(value)


class SecondsList:
    """Numbers of seconds, each from low to high, separated by commas: one at least."""

    def __init__(self, low, high):
        self.low, self.high = low, high

    def parse(self, value, label):
        entries = value.split(",") if isinstance(value, str) else list(value)
        parsed = tuple(number(entry) for entry in entries)
        if not parsed or any(seconds is None or not self.low <= seconds <= self.high for seconds in parsed):
            raise ValueError(f"{label} must be numbers of seconds from {self.low} to {self.high} separated by "
                             f"commas, such as 5,300,1800, not {str(value)!r}")
        return tuple(int(seconds) if seconds.is_integer() else seconds for seconds in parsed)

    def show(self, value):
        return ",".join(map(shown_number, value))


class OnOff:
    """On or off: a flag's bool, or a word (1, on, true, yes; 0, off, false, no)."""

    def parse(self, value, label):
        return switch(value, label)

    def show(self, value):
        return "on" if value else "off"


class Text:
    """Text as given; the module that uses it checks it (a URL, an email address, a time zone...)."""

    def parse(self, value, label):
        return value if isinstance(value, str) else str(value)

    def show(self, value):
        return value


class FernetKey(Text):
    """A Fernet key: 32 bytes in url-safe base64 (44 characters)."""

    def parse(self, value, label):
        text = str(value).strip()
        try:
            raw = base64.urlsafe_b64decode(text.encode("ascii"))
        except (ValueError, UnicodeError):
            raw = b""
        if len(raw) != 32 or len(text) != 44:
            # Never the value: even a mistyped key is most of a key.
            raise ValueError(f"{label} must be a Fernet key, 44 characters of url-safe base64 (32 bytes) as "
                             "cryptography.fernet.Fernet.generate_key() makes one")
        return text


class Path(Text):
    """A file's path (text, or an os.PathLike)."""

    def parse(self, value, label):
        return os.fspath(value)

    def show(self, value):
        return value if os.path.dirname(value) else "./" + value


class Entries:
    """A list: a flag repeated, or an OKR_* variable's entries separated by commas (blank ones left out)."""

    def parse(self, value, label):
        if isinstance(value, str):
            return tuple(entry for entry in value.split(",") if entry.strip())
        return tuple(value)

    def show(self, value):
        return ",".join(value)


class HostNames(Entries):
    """Host names, as the Host header is compared with them: lowercase, without a final dot."""

    def parse(self, value, label):
        names = (str(entry).strip().lower().rstrip(".") for entry in super().parse(value, label))
        return frozenset(name for name in names if name)

    def show(self, value):
        return ",".join(sorted(value))


@dataclass(frozen=True)
class Setting:
    name: str  # the app.config key
    type: object
    default: object  # typed; None: not set
    env: str
    flag: str | None  # with its metavar ("--threads N"); "--[no-]NAME" is a pair of on/off flags
    help: str
    group: str  # the heading it comes under in `okr serve --help`; "Options" for the global flags
    called: str | None = None  # what an error calls it, when not as below

    @property
    def label(self):
        """What an error calls the setting: after its flag when it has one, else its variable."""
        return self.called or (self.name.lower() if self.flag else self.env)

    def parse(self, value):
        """value as this setting's type; None stands for the default."""
        return self.default if value is None else self.type.parse(value, self.label)

    def shown_default(self):
        """The default as written on a command line or in an OKR_* variable; None when there is none."""
        if self.default is None or self.default in ((), frozenset()):
            return None
        return self.type.show(self.default)

    def flags(self):
        """[(option, const)]: const is what an on/off flag sets, None for a flag that takes a value."""
        if self.flag is None:
            return []
        option = self.flag.split()[0]
        if not isinstance(self.type, OnOff):
            return [(option, None)]
        if option.startswith("--[no-]"):
            return [("--" + option[7:], True), ("--no-" + option[7:], False)]
        return [(option, not option.startswith("--no-"))]

    def metavar(self):
        """The flag's metavar ("N" of "--threads N"), or None."""
        return (self.flag or "").partition(" ")[2] or None


def setting(name, type, default, help, group, flag=None, called=None):
    return Setting(name, type, default, "OKR_" + name, flag, help, group, called)


GLOBAL = "Options"
SERVING = "Processes and connections"
LOGGING = "Logging, cookies and hosts"
ACTIVITY = "Activity and replication"
REPORTS = "Big reports and exports"
EMAIL = "Email"
WEBHOOKS = "Webhooks"
OIDC = "Sign-in by OpenID Connect"
SIGN_IN = "Sign-in throttle and sessions"
SOURCES = "Metric sources"

DAY = 86_400
AUTO_WORKERS_MOST = 8  # --workers auto: one per CPU the server may use, at most this many

SETTINGS = (
    setting("DATABASE", Path(), "okr.db", "the SQLite file", GLOBAL, "--database FILE"),
    setting("HOST", Text(), "127.0.0.1", "address to listen on", GLOBAL, "--host ADDRESS"),
    setting("PORT", Integer(0, 65535), 8080, "port to listen on", GLOBAL, "--port N"),
    setting("ALLOW_ANONYMOUS", OnOff(), False, "serve beyond loopback while no API key exists", GLOBAL,
            "--allow-anonymous"),
    setting("UPGRADE_BACKUP", OnOff(), True, "a backup beside the database before its schema is upgraded", GLOBAL,
            "--no-backup", called="OKR_UPGRADE_BACKUP"),

    setting("WORKERS", AutoOrInteger(1, 64), "auto", f"worker processes; auto: per CPU, at most {AUTO_WORKERS_MOST}",
            SERVING, "--workers auto|N"),
    setting("THREADS", Integer(1, 256), 8, "threads per worker", SERVING, "--threads N"),
    setting("CPU", Text(), "auto", "where workers run", SERVING, "--cpu auto|all|N"),
    setting("CONNECTION_LIMIT", Integer(1, 100_000), 1000, "connections at most", SERVING, "--connection-limit N"),
    setting("CHANNEL_TIMEOUT", Integer(1, DAY), 30, "idle seconds, at most", SERVING, "--channel-timeout S"),
    setting("CONNECTIONS_PER_ADDRESS", Integer(0, 100_000), 64, "per client address; 0: no cap", SERVING,
            "--connections-per-address N"),
    setting("HEAD_TIMEOUT", Integer(1, DAY), 10, "seconds a client has to send a request's head", SERVING),
    setting("UNREAD_TIMEOUT", Integer(1, DAY), 5, "seconds an answer may wait for its client to read", SERVING),
    setting("BUSY_TIMEOUT_MS", Integer(0, 600_000), 5000, "milliseconds a write waits for the one before it",
            SERVING),

    setting("ACCESS_LOG", OnOff(), True, "a line per request", LOGGING, "--[no-]access-log",
            called="access log"),
    setting("SECURE_COOKIES", OnOff(), False, "cookies: HTTPS only", LOGGING, "--secure-cookies",
            called="secure cookies"),
    setting("ALLOWED_HOSTS", HostNames(), frozenset(), "a host name to serve; repeat", LOGGING,
            "--allowed-host NAME"),
    setting("TRUSTED_PROXIES", Entries(), (), "a proxy whose X-Forwarded-* headers count "
            "(address or CIDR; repeat)", LOGGING, "--trusted-proxies IP"),
    setting("PUBLIC_URL", Text(), None, "https://HOST/PATH people reach: links "
            "start with it; served under its path", LOGGING, "--public-url URL"),

    setting("EVENT_RETENTION_DAYS", Integer(1, 100_000), 400, "days events are kept", ACTIVITY,
            "--event-retention-days N"),
    setting("REPLICATE", Text(), None, "the replica: file:///DIR or s3://BUCKET/DIR", ACTIVITY, "--replicate URL"),
    setting("REPLICATE_ENDPOINT", Text(), None, "an S3-compatible store", ACTIVITY, "--replicate-endpoint URL"),
    setting("REPLICATE_MAX_LAG", Integer(1, DAY, what="a number of seconds"), 60,
            "seconds behind, then /healthz: 503", ACTIVITY, "--replicate-max-lag S",
            called="replicate-max-lag"),

    setting("REPORT_SLOTS", Integer(1, 1000), 2, "big reports and exports built at once, by all processes",
            REPORTS),
    setting("REPORT_WAIT", Seconds(0, 3600), 10, "seconds a big report waits for a slot, then 503", REPORTS),
    setting("BIG_REPORT_OBJECTIVES", Integer(0), 2000, "objectives from which a report is big", REPORTS),

    setting("SMTP_URL", Text(), None, "the mail server: smtp://HOST[:PORT] (STARTTLS) or smtps://", EMAIL),
    setting("SMTP_PASSWORD", Text(), None, "the mail server's password, when not in the URL", EMAIL),
    setting("SMTP_TIMEOUT", Seconds(0.1, 3600), 30, "seconds to wait for the mail server", EMAIL),
    setting("MAIL_FROM", Text(), None, "the address emails come from", EMAIL),
    setting("BASE_URL", Text(), None, "the older name of OKR_PUBLIC_URL", EMAIL),
    setting("TIMEZONE", Text(), "UTC", "the time zone of the weekly emails", EMAIL),
    setting("WEEKLY_MAIL", Text(), "monday 09:00", "when the weekly reminders and digests go", EMAIL),

    setting("WEBHOOK_RETRY_SCHEDULE", SecondsList(0, DAY), (5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600,
                                                           10 * 3600),
            "seconds before each retry of a failed webhook delivery (each ±10 %); then the hook is disabled",
            WEBHOOKS),

    setting("OIDC_ISSUER", Text(), None, "the provider's issuer URL", OIDC, "--oidc-issuer URL"),
    setting("OIDC_CLIENT_ID", Text(), None, "this service's client id", OIDC, "--oidc-client-id ID"),
    # No flag: every user's `ps` shows flags.
    setting("OIDC_CLIENT_SECRET", Text(), None, "this service's client secret", OIDC),
    setting("OIDC_NAME", Text(), "your company account", "the sign-in button's words", OIDC, "--oidc-name TEXT"),
    setting("OIDC_CREATE_USERS", Text(), None, "viewer|editor: add new people", OIDC, "--oidc-create-users R"),
    setting("OIDC_ALLOWED_DOMAINS", Entries(), (), "accept emails at this domain only; repeat", OIDC,
            "--oidc-allowed-domain D"),
    setting("PASSWORD_SIGN_IN", OnOff(), True, "password sign-in", OIDC, "--no-password-sign-in",
            called="OKR_PASSWORD_SIGN_IN"),

    setting("SIGN_IN_WINDOW", Integer(1, DAY), 15 * 60, "seconds over which failed sign-ins are counted",
            SIGN_IN),
    setting("SIGN_IN_FAILURES_PER_ACCOUNT", Integer(1, 100_000), 10,
            "failures for one account from one address that hold its sign-in there", SIGN_IN),
    setting("SIGN_IN_FAILURES_PER_ADDRESS", Integer(1, 100_000), 100,
            "failures from one address that hold every sign-in from it", SIGN_IN),
    setting("SESSION_HOURS", Integer(1, 24 * 366), 12, "hours a dashboard session lasts", SIGN_IN),
    setting("READ_ONLY_KEY_SESSION_DAYS", Integer(1, 3660), 30, "days a read-only API key's session lasts",
            SIGN_IN),

    # No flag: every user's `ps` shows flags.
    setting("SECRET_KEY", FernetKey(), None, "the key that seals connections' secrets (a Fernet key); unset: the key "
            "file DATABASE.key, made on first use", SOURCES),
    setting("SOURCE_TIMEOUT", Seconds(1, 600), 30, "seconds a source's read may take, connect to last byte",
            SOURCES),
    setting("SOURCE_RETRY_SCHEDULE", SecondsList(60, 7 * DAY), (5 * 60, 30 * 60, 6 * 3600),
            "seconds before each retry of a failing source (each ±10 %); the last repeats", SOURCES),
    setting("SOURCE_STOP_AFTER", Integer(1, 10_000), 20, "failures in a row after which a source stops", SOURCES),
    setting("SOURCE_MAIL_AFTER", Integer(1, 10_000), 3, "failures in a row after which the owner is emailed",
            SOURCES),
)

BY_NAME = {entry.name: entry for entry in SETTINGS}


def defaults():
    """{name: default} of every setting."""
    return {entry.name: entry.default for entry in SETTINGS}


def default(name):
    return BY_NAME[name].default


def typed(values):
    """values with each setting's value parsed (ValueError for one it cannot take); other keys as they are."""
    return {key: BY_NAME[key].parse(value) if key in BY_NAME else value for key, value in values.items()}


def from_environment(environ=None, skip=()):
    """{name: typed value} of the settings whose OKR_* variable is set (to more than nothing), but those in skip
    (given another way, which wins); ValueError of one line for a value a setting cannot take."""
    environ = os.environ if environ is None else environ
    return {entry.name: entry.parse(environ[entry.env]) for entry in SETTINGS
            if entry.name not in skip and environ.get(entry.env)}


def set_in_environment(name, environ=None):
    environ = os.environ if environ is None else environ
    return bool(environ.get(BY_NAME[name].env))


def add_flags(parser):
    """Adds every setting's flag to an argparse parser; each gives its value (text, a list, or an on/off flag's
    bool) under the setting's name in lowercase, or None when not given."""
    for entry in SETTINGS:
        for option, const in entry.flags():
            if const is not None:
                parser.add_argument(option, dest=entry.name.lower(), action="store_const", const=const, default=None)
            elif isinstance(entry.type, Entries):
                parser.add_argument(option, dest=entry.name.lower(), action="append", default=None,
                                    metavar=entry.metavar())
            else:
                parser.add_argument(option, dest=entry.name.lower(), metavar=entry.metavar())
