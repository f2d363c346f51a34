"""okr import-simpleokr: a Simple OKR API's users, teams, cycles, objectives and key results, into the database.

The work is okr/transfer/from_simpleokr.py's; this is the command line: options, the progress
on stderr (a bar on a terminal, plain lines otherwise), and the report on stdout.
"""
import json
import re
import sys
import urllib.parse

import click
from flask import current_app
from flask.cli import with_appcontext

from ..transfer import from_simpleokr
from ..transfer.api_client import Client
from ..transfer.rows import PLURAL
from .common import existing_database, reports_errors, use_database

BAR = 24


class Progress:
    """Shows how far a run is on stderr: a bar redrawn in place on a terminal, a line per step otherwise."""

    def __init__(self, stream, base_url):
        self.stream, self.base_url = stream, base_url
        self.terminal = stream.isatty()
        self.rows = dict.fromkeys(from_simpleokr.RESOURCES, 0)
        self.position = self.total = None
        self.drawn = False

    def __call__(self, stage, **event):
        if stage == "page":
            self.rows[event["resource"]] += event["rows"]
            if self.terminal:
                self.draw()
        elif stage == "cycle":
            self.position, self.total = event["position"], event["total"]
            if self.terminal:
                self.draw()
            else:
                self.line(f"cycle {self.position} of {self.total} (read so far: {self.so_far()})")
        elif stage == "writing":
            if not self.terminal:
                self.line(f"writing {PLURAL[event['resource']]}: {event['rows']} read")
        elif not self.terminal:
            self.line(f"reading {PLURAL[stage]} from {self.base_url}")

    def so_far(self):
        return ", ".join(f"{count} {PLURAL[name]}" for name, count in self.rows.items())

    def draw(self):
        if self.total:
            filled = BAR * (self.position - 1) // self.total
            bar = f"[{'#' * filled}{'-' * (BAR - filled)}] cycle {self.position}/{self.total} "
        else:
            bar = ""
        self.stream.write(f"\r\033[Kokr: {bar}{self.so_far()}")
        self.stream.flush()
        self.drawn = True

    def line(self, text):
        self.stream.write(f"okr: {text}\n")
        self.stream.flush()

    def done(self):
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.drawn = False


# C0 and C1 controls and DEL: from the source, they could move the cursor, rewrite the title, clear the screen.
TERMINAL_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def json_shown(text):
    """JSON for the terminal: json.dumps escapes C0 controls, not DEL or the C1 range (a lone CSI is one)."""
    return re.sub(r"[\x7f-\x9f]", lambda match: f"\\u{ord(match.group()):04x}", text)


def shown(text):
    """Text from the source as the terminal may print it: every control character escaped (ESC as \\x1b)."""
    return TERMINAL_CONTROLS.sub(lambda match: f"\\x{ord(match.group()):02x}", str(text))


def report_text(result):
    """The counts as a table, then each failed row's id and reason, their text from the source escaped."""
    lines = [f"{'':12}{'created':>9}{'updated':>9}{'unchanged':>11}{'failed':>8}"]
    for name, counts in result.counts.items():
        lines.append(f"{PLURAL[name]:12}" + "".join(f"{counts[outcome]:>{width}}" for outcome, width in
                                                  zip(from_simpleokr.OUTCOMES, (9, 9, 11, 8))))
    if result.dry_run:
        for name, row_id, fields in result.updates:
            lines.append(f"would update {from_simpleokr.SINGULAR[name]} {shown(row_id)}: {shown(', '.join(fields))}")
    if result.failures:
        lines.append("not imported:")
        lines += [f"  {from_simpleokr.SINGULAR[name]} {shown(row_id)}: {shown(reason)}"
                  for name, row_id, reason in result.failures]
    lines.append("dry run: nothing was written" if result.dry_run else
                 "rows here that the source does not have are kept: nothing is deleted")
    return "\n".join(lines)


def source_url(base_url):
    """The service's root: a URL given with its /v1 is taken too."""
    parts = urllib.parse.urlsplit(base_url)
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[:-3]
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


# The help states the cap on pages from its constant, so it is an f-string rather than the docstring.
HELP = f"""Import users, teams, cycles, objectives and key results from a Simple OKR API (this service's own,
or any that speaks it), keeping their ids, fields and times.

Requests are signed with the source's API key (Simple OKR's S1-HMAC-SHA256);
give --credential and --secret, or set OKR_CREDENTIAL and OKR_SECRET so the
secret is not typed on the command line; give neither for a source without
keys. The source is not trusted: an answer over --max-answer-mb, or not
whole within --request-deadline, stops the run; a redirect is not followed;
a list is read for at most {from_simpleokr.MAX_PAGES:,} pages; text from the source is printed
with its control characters escaped, and a name holding one (tab and
newline aside) is refused as a row. Every row is checked as the API checks a request; a row that fails
(or refers to one that did) is reported with its id and why, and the others
are imported. Running it again updates what changed and adds what is new;
rows here that the source does not have are kept, never deleted. Alignment,
teams and assignees are kept whatever order the source lists them in, and
each new key result starts its history with a check-in of its value.

Prints, per resource, how many rows were created, updated, unchanged and
failed, then the failed rows. Exits non-zero when a row failed or the
source stopped answering (what was read by then is imported whole: run
it again to finish).
"""


@click.command("import-simpleokr", short_help="Copy in a Simple OKR API's data, by id; again to update.", help=HELP)
@click.option("--base-url", required=True, metavar="URL",
              help="The source's address, e.g. https://okr.example.com (its /v1 may be included).")
@click.option("--credential", envvar="OKR_CREDENTIAL", metavar="C",
              help="The source's API key credential; or set OKR_CREDENTIAL.")
@click.option("--secret", envvar="OKR_SECRET", metavar="S",
              help="Its secret; or set OKR_SECRET, which keeps it off the command line.")
@click.option("--dry-run", is_flag=True, help="Read everything and report what would change; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--max-answer-mb", type=click.IntRange(1, 4096), default=64, show_default=True,
              help="Refuse an answer from the source larger than this many MiB.")
@click.option("--request-deadline", type=click.IntRange(1, 3600), default=120, show_default=True, metavar="SECONDS",
              help="Give up on a request the source has not answered whole within this many seconds.")
@with_appcontext
@reports_errors
def import_simpleokr_command(base_url, credential, secret, dry_run, as_json, max_answer_mb, request_deadline):
    if (credential is None) != (secret is None):
        raise click.ClickException("give both --credential and --secret (or OKR_CREDENTIAL and OKR_SECRET), "
                                   "or neither for a source without API keys")
    base_url = source_url(base_url)
    try:
        client = Client(base_url, credential, secret, timeout=(10.0, 60.0), max_answer_bytes=max_answer_mb << 20,
                        deadline=request_deadline)
    except ValueError as error:
        raise click.ClickException(f"--base-url: {error}") from None
    if dry_run:
        database = existing_database()  # a dry run does not even bring the schema up to date
    else:
        use_database()
        database = current_app.config["DATABASE"]
    progress = Progress(sys.stderr, base_url)
    try:
        with client:
            result = from_simpleokr.import_simpleokr(
                str(database), client, dry_run=dry_run, busy_timeout_ms=current_app.config["BUSY_TIMEOUT_MS"],
                schema=current_app.config["SCHEMA"], progress=progress)
        problem = None
    except from_simpleokr.SourceError as error:
        result, problem = error.result, str(error)
    finally:
        progress.done()
    touched = result is not None and any(any(counts.values()) for counts in result.counts.values())
    if result is not None and (result.complete or touched):
        click.echo(json_shown(json.dumps(result.as_json(), ensure_ascii=False)) if as_json else report_text(result))
    if problem:
        raise click.ClickException(shown(problem) + ("; what was read before is imported whole: run it again to finish"
                                              if not dry_run and touched else ""))
    if result.failures:
        count = len(result.failures)
        raise click.ClickException(f"{count} row{'s' if count > 1 else ''} "
                                   f"{'would not be' if dry_run else 'could not be'} imported (listed above)")
