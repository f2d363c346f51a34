"""The fixed limits (the constants a person, a client or an operator can run into, not settings) are stated once,
in docs/operations.md's Limits table: each row's figure is its constant's value, every constant has its row, and
a figure the rest of the documentation gives for a limit is that value too."""
import re
from collections import namedtuple
from datetime import timedelta

import pytest

import helpers
from okr import settings
from okr.accounts import identity_provider, oauth_server, passwords, people_csv, single_sign_on
from okr.api import auth, bodies, paging
from okr.outbound import webhook_request, weekly_emails
from okr.reports import activity, review
from okr.rules import body_schemas, fields, strict_json, webhook_receivers
from okr.server import connections, http_server, litestream, request_log, workers
from okr.sources import sql_queries, values
from okr.store import events, initiatives, invitations, password_resets, webhooks
from okr.transfer import from_simpleokr, rows
from okr.reports import your_week
from okr.web import account_pages, comment_pages, forms, objective_pages, team_pages, views

OPERATIONS = helpers.REPO / "docs" / "operations.md"
DOCUMENTS = [helpers.REPO / "README.md", *sorted((helpers.REPO / "docs").glob("*.md"))]

# A limit bounds from above (at most), from below (at least), or is what is taken when nothing is asked for.
AT_MOST, AT_LEAST, BY_DEFAULT = "at most", "at least", "by default"
Limit = namedtuple("Limit", "kind value side words nouns")
CHARACTERS = ("characters",)


def count(value, side, *words, of):
    """A count of things (of: the nouns that may follow its figure, "characters")."""
    return Limit("count", value, side, words, of)


def size(value, side, *words):
    return Limit("bytes", value, side, words, ())


def duration(value, side, *words):
    return Limit("seconds", value.total_seconds() if isinstance(value, timedelta) else value, side, words, ())


# Each row of the table, by its first cell: its constant as a count, a size in bytes or a duration in seconds; its
# side; the words that name its subject in a sentence (of two that overlap, the longer wins); and for a count, the
# nouns that may follow its figure.
LIMITS = {
    "rows in a page of an API list, when `page_size` is absent":
        count(paging.PAGE_SIZE, BY_DEFAULT, "page_size", of=("rows",)),
    "`page_size` of an API list": count(paging.MAX_PAGE_SIZE, AT_MOST, "page_size", "page size", of=("rows",)),
    "a page of the events feed (`GET /v1/events`), in stored JSON":
        size(events.PAGE_BYTES, AT_MOST, "stored JSON", "events weigh", "page of events"),
    "a request's declared body, on any path": size(bodies.MAX_BODY_BYTES, AT_MOST, "body", "bodies"),
    "a request's body, as `okr serve` reads it": size(http_server.BODY_LIMIT, AT_MOST, "waitress"),
    "nesting of a JSON body": count(strict_json.MAX_JSON_DEPTH, AT_MOST, "nesting", "nested", of=("levels",)),
    "a name: a user's, an objective's, a key result's":
        count(body_schemas.NAME_MAX, AT_MOST, "name", "names", of=CHARACTERS),
    "a cycle's or a team's name":
        count(body_schemas.GROUP_NAME_MAX, AT_MOST, "team's name", "cycle's name", "team name", "cycle name",
              of=CHARACTERS),
    "an objective's description, a check-in's comment":
        count(body_schemas.DESCRIPTION_MAX, AT_MOST, "description", of=CHARACTERS),
    "a comment's body": count(body_schemas.COMMENT_MAX, AT_MOST, "comment", "comments", of=CHARACTERS),
    "initiatives under a key result":
        count(initiatives.MAX_PER_KEY_RESULT, AT_MOST, "initiatives", of=("initiatives",)),
    "an initiative's link": count(fields.LINK_MAX, AT_MOST, "link", "links", of=CHARACTERS),
    "a decimal's fractional digits":
        count(fields.MAX_FRACTION_DIGITS, AT_MOST, "fractional digits", "decimal point", of=("fractional", "digits")),
    "a decimal's absolute value": count(10 ** fields.MAX_INTEGER_DIGITS, AT_MOST, "absolute value", of=()),
    "a signed request's timestamp, either side of the server's clock":
        duration(auth.MAX_CLOCK_SKEW, AT_MOST, "timestamp", "server's clock"),
    "an id an event names (the feed's `resource_id`; an imported event's ids)":
        count(events.MAX_ID_LENGTH, AT_MOST, "resource_id", "ids", of=CHARACTERS),
    "a password, at least": count(passwords.MIN_LENGTH, AT_LEAST, "password", "passwords", of=CHARACTERS),
    "a password, at most": count(passwords.MAX_LENGTH, AT_MOST, "password", "passwords", of=CHARACTERS),
    "an invitation link": duration(invitations.VALID_FOR, AT_MOST, "invitation"),
    "passwords hashed at once, by each server process":
        count(passwords.HASHING_AT_ONCE, AT_MOST, "hashes", "hashed", of=("passwords", "at")),
    "a password-reset link": duration(password_resets.VALID_FOR, AT_MOST, "reset link", "password reset"),
    "a sign-in through the identity provider, from leaving to coming back":
        duration(single_sign_on.PENDING_SECONDS, AT_MOST, "identity provider"),
    "an answer from the identity provider (discovery, keys, token, user info)":
        duration(identity_provider.TIMEOUT, AT_MOST, "provider cannot be reached", "do not answer"),
    "a number typed in a form": count(forms.MAX_TYPED, AT_MOST, "typed number", "number typed", of=CHARACTERS),
    "people on a page of `/people`":
        count(account_pages.PEOPLE_PER_PAGE, AT_MOST, "people per page", "/people", of=("people",)),
    "a CSV of people on the People page, in bytes": size(people_csv.MAX_BYTES, AT_MOST, "CSV", "file of more than"),
    "a CSV of people on the People page, in rows besides its header":
        count(people_csv.MAX_ROWS, AT_MOST, "CSV", "file of more than", of=("rows",)),
    "rows listed in each part of a CSV's preview (added, updated, skipped)":
        count(account_pages.CSV_ROWS_SHOWN, AT_MOST, "preview", "its first", of=("rows",)),
    "people a team page's search for new members lists":
        count(team_pages.CANDIDATES_SHOWN, AT_MOST, "Add a member", "search", of=("people",)),
    "teams on a page of `/teams`": count(team_pages.TEAMS_PER_PAGE, AT_MOST, "teams per page", "/teams", of=("teams",)),
    "members named beside each team on `/teams`":
        count(team_pages.NAMES_SHOWN, AT_MOST, "members named", of=("members", "names")),
    "members on a team's page, per page":
        count(team_pages.MEMBERS_PER_PAGE, AT_MOST, "members per page", of=("members",)),
    "objectives on a team's page": count(team_pages.OBJECTIVES_SHOWN, AT_MOST, "team's page", of=("objectives",)),
    "cycles on a page of `/cycles`":
        count(views.CYCLES_PER_PAGE, AT_MOST, "cycles per page", "/cycles", of=("cycles",)),
    "check-ins in a key result's sparkline (the cycle page)":
        count(views.SPARK_POINTS, AT_MOST, "sparkline", of=("values",)),
    "top objectives on a page of a cycle's review (`/cycles/<id>`)":
        count(review.PER_PAGE, AT_MOST, "top objectives a page", "Next 50", of=("top", "objectives")),
    "the words of a cycle page's *Name contains* filter":
        count(views.WORDS_MAX, AT_MOST, "Name contains", "words over", of=CHARACTERS),
    "check-ins in a key result's history":
        count(views.HISTORY_ROWS, AT_MOST, "its history", "check-in history", of=("check-ins",)),
    "findings listed in a cycle page's *Quality* panel":
        count(views.QUALITY_SHOWN, AT_MOST, "Quality panel", of=("findings",)),
    "comments under an objective or a key result":
        count(comment_pages.SHOWN, AT_MOST, "comments shown", "latest comments", of=("comments",)),
    "parent objectives offered on an objective's form":
        count(objective_pages.PARENT_CHOICES, AT_MOST, "parent choice", "parent objectives", "present parent",
              of=("objectives", "are")),
    "a team's objectives on *Your week*":
        count(your_week.TEAM_OBJECTIVES_SHOWN, AT_MOST, "Your week", "objectives of their teams", of=("objectives",)),
    "changes on a page of `/activity`":
        count(activity.PER_PAGE, AT_MOST, "/activity", "Activity page", of=("changes",)),
    "changes at the end of an objective's or a key result's page":
        count(activity.HISTORY_SHOWN, AT_MOST, "changes", of=("changes",)),
    "changes with *All changes* (`?history=all`)":
        count(activity.HISTORY_MOST, AT_MOST, "All changes", of=("changes",)),
    "check-ins, and key results gone off track, in a team's weekly digest":
        count(weekly_emails.DIGEST_ITEMS_SHOWN, AT_MOST, "digest", of=("check-ins", "items")),
    "a webhook's URL": count(webhook_receivers.MAX_URL_LENGTH, AT_MOST, "URL", of=CHARACTERS),
    "event patterns of one webhook": count(webhooks.MAX_PATTERNS, AT_MOST, "patterns", of=("patterns",)),
    "a webhook delivery, from connecting to the answer's last byte":
        duration(webhook_request.TIMEOUT_SECONDS, AT_MOST, "delivery", "2xx"),
    "a receiver's `Retry-After`, honoured up to":
        duration(webhook_request.MAX_RETRY_AFTER, AT_MOST, "receiver's `Retry-After`", "an HTTP date"),
    "attempts kept in a webhook's delivery log": count(webhooks.KEPT_ATTEMPTS, AT_MOST, "attempts", of=("attempts",)),
    "OAuth clients that no person has allowed yet, kept at once":
        count(oauth_server.MOST_UNUSED_CLIENTS, AT_MOST, "never authorized", "allowed yet", of=("clients", "such")),
    "redirect URIs of an OAuth client": count(oauth_server.MAX_REDIRECT_URIS, AT_MOST, "redirect URIs", of=("URIs",)),
    "an OAuth client's redirect URI":
        count(oauth_server.MAX_REDIRECT_LENGTH, AT_MOST, "redirect URI", of=CHARACTERS),
    "a failed answer's body kept in the delivery log": size(webhook_request.ERROR_BODY_BYTES, AT_MOST, "answer's body"),
    "a metric source's answer (HTTP JSON, CSV, Prometheus)":
        size(values.ANSWER_BYTES, AT_MOST, "answer of more than", "answer is larger than"),
    "a metric source's SQL statement (PostgreSQL, SQLite)":
        duration(sql_queries.STATEMENT_SECONDS, AT_MOST, "statement runs", "query runs"),
    "worker processes with `--workers auto`":
        count(settings.AUTO_WORKERS_MOST, AT_MOST, "worker process", "per CPU", of=("workers", "processes")),
    "a stopping worker's requests in flight": duration(workers.DRAIN_SECONDS, AT_MOST, "requests being served"),
    "a request body's rate, on average": size(connections.BODY_MIN_RATE, AT_LEAST, "body's rate"),
    "a request body's first seconds, before its rate counts": duration(connections.BODY_GRACE, AT_MOST, "body's rate"),
    "access-log lines waiting for a stalled reader":
        count(request_log.AccessLog.QUEUE_LIMIT, AT_MOST, "log's reader", of=("lines",)),
    "Litestream's last shipment when the server stops":
        duration(litestream.SHUTDOWN_SYNC_SECONDS, AT_MOST, "ships what is left"),
    "a key's secret in a data package, at least": count(rows.MIN_SECRET_LENGTH, AT_LEAST, "secret", of=CHARACTERS),
    "pages read from one Simple OKR list":
        count(from_simpleokr.MAX_PAGES, AT_MOST, "list is read", "pages of a list", of=("pages",)),
}

# --- figures ---------------------------------------------------------------------------------------------------

NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?|10\^\d+)"
BYTES = {"bytes": 1, "byte": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
         "kB": 1000, "KB": 1000, "MB": 10 ** 6, "GB": 10 ** 9}
SECONDS = {"s": 1, "second": 1, "seconds": 1, "minute": 60, "minutes": 60, "hour": 3600, "hours": 3600,
           "day": 86_400, "days": 86_400, "week": 604_800, "weeks": 604_800}
UNIT = "|".join(sorted(map(re.escape, [*BYTES, *SECONDS]), key=len, reverse=True))
# A figure as written: a number and its unit, if any ("1,000", "10^15", "1 MiB", "1 KiB/s", "15 s", "5-second"),
# or a duration of one ("a day", "an hour").
FIGURE = rf"(?:{NUMBER})(?:[ -]?(?:{UNIT})(?![\w-]))?(?:/s\b)?|\ban? (?:{'|'.join(SECONDS)})\b"


def number(text):
    """(kind, value) of a figure as written: a count, bytes (a rate per second too) or seconds."""
    match = re.fullmatch(rf"(an?|{NUMBER})(?:[ -]?({UNIT}))?(?:/s)?", text.strip())
    if match is None:
        raise ValueError(f"not a figure: {text!r}")
    written, unit = match.groups()
    if written in ("a", "an"):
        value = 1
    elif "^" in written:
        base, power = written.split("^")
        value = int(base) ** int(power)
    else:
        value = float(written.replace(",", ""))
    if unit in BYTES:
        return "bytes", value * BYTES[unit]
    if unit in SECONDS:
        return "seconds", value * SECONDS[unit]
    return "count", value


# --- the table -------------------------------------------------------------------------------------------------


def limits_section(text):
    return text.split("\n## Limits\n", 1)[1].split("\n## ", 1)[0]


def table_rows(text):
    """{first cell: second cell} of the Limits table."""
    cells = [[cell.strip() for cell in line.strip().strip("|").split("|")]
             for line in limits_section(text).splitlines() if line.startswith("|")]
    return {row[0]: row[1] for row in cells[2:]}


def figure_of(cell):
    """(kind, value) of a Limit cell: "1,000 at most" is 1,000, "below 10^15" is 10^15, "50 each" is 50."""
    match = re.fullmatch(rf"(?:below )?({FIGURE})(?: [a-z]+)?(?: at most| each)?", cell)
    assert match, f"not a figure: {cell!r}"
    return number(match.group(1))


def test_every_row_of_the_table_names_a_constant_and_every_constant_has_a_row():
    assert set(table_rows(OPERATIONS.read_text())) == set(LIMITS)


@pytest.mark.parametrize("label", list(LIMITS))
def test_each_rows_figure_is_its_constant(label):
    limit = LIMITS[label]
    assert figure_of(table_rows(OPERATIONS.read_text())[label]) == (limit.kind, limit.value)


@pytest.mark.parametrize("text, figure", [
    ("1,000", ("count", 1000)), ("10^15", ("count", 10 ** 15)), ("1 MiB", ("bytes", 1 << 20)),
    ("16 MiB", ("bytes", 16 << 20)), ("1 KiB/s", ("bytes", 1024)), ("200 bytes", ("bytes", 200)),
    ("15 s", ("seconds", 15)), ("a day", ("seconds", 86_400)), ("an hour", ("seconds", 3600)),
    ("10 minutes", ("seconds", 600)), ("7 days", ("seconds", 604_800)), ("5-second", ("seconds", 5)),
])
def test_a_figure_reads_as_its_kind_and_value(text, figure):
    assert number(text) == figure


def test_a_row_whose_figure_is_not_its_constant_is_found():
    label = "nesting of a JSON body"
    text = OPERATIONS.read_text().replace(f"| {label} | 32 levels |", f"| {label} | 64 levels |")
    assert figure_of(table_rows(text)[label]) == ("count", 64) != ("count", LIMITS[label].value)


# --- the figures the prose gives -------------------------------------------------------------------------------

# The words just before a figure that make it a limit's, by the side they bound from ...
BEFORE = {AT_MOST: ("at most", "up to", "over", "longer than", "more than", "past", "maximum", "below", "under",
                    "within", "last", "latest", "valid for", "valid"),
          AT_LEAST: ("at least", "fewer than", "shorter than", "minimum"),
          BY_DEFAULT: ("default", "defaults to")}
# ... and just after it, past the noun it counts ("12 characters or more", "50 to a page").
AFTER = {AT_MOST: ("at most", "or fewer", "or less", "to a page", "per page"),
         AT_LEAST: ("or more",), BY_DEFAULT: ("when it is absent", "by default")}
SIDES = list(BEFORE)
NOT_A_LIMIT = r"(?!\d)(?!\s?(?:×|%|x\b))"  # a ratio or a share, never the start of a longer number
NOUN = r"(?: (?P<noun{index}>[a-z-]+))?"
CUED = re.compile("|".join(
    [rf"\b(?:{'|'.join(map(re.escape, words))}) (?P<before{index}>{FIGURE}){NOT_A_LIMIT}{NOUN.format(index=index)}"
     for index, words in enumerate(BEFORE.values())]
    + [rf"(?<![\w.,])(?P<after{index}>{FIGURE}){NOUN.format(index=index + 3)} (?:{'|'.join(map(re.escape, words))})\b"
       for index, words in enumerate(AFTER.values())]))
NOUNS = {noun for limit in LIMITS.values() for noun in limit.nouns}
# A figure that a setting's name follows is the setting's ("64 from one address (`--connections-per-address`"):
# tests/test_settings.py checks those against the settings' defaults.
A_SETTINGS = re.compile(r"[^.;`]{0,60}\(`(?:OKR_|--)")
NEAR = 120  # characters between a figure and the words naming its subject, at most


def prose(text):
    """The text without code blocks or the Limits table, a link as its words."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", re.sub(r"```.*?```", " ", text, flags=re.S))
    return text.replace(limits_section(text), " ") if "\n## Limits\n" in text else text


def sentences(text):
    """Each sentence on one line: a paragraph, an item of a list, a table's cell, a heading split at its stops."""
    blocks = re.split(r"\n\s*\n|\n(?=\s*(?:[-*] |\||#))|\s\|\s", prose(text))
    return [sentence for block in blocks
            for sentence in re.split(r"(?<=[.!?;])\s+(?=[A-Z*`(\[])", " ".join(block.split()))]


def mentions(sentence):
    """(start, end, label) of each subject named in sentence; of two that overlap, only the longer."""
    found = [(match.start(), match.end(), label) for label, limit in LIMITS.items() for word in limit.words
             for match in re.finditer(rf"(?<![\w/-]){re.escape(word)}(?![\w-])", sentence, flags=re.I)]
    return [(start, end, label) for start, end, label in found
            if not any(s <= start and end <= e and e - s > end - start for s, e, _ in found)]


def fits(limit, kind, side, noun):
    """Whether a figure of this kind, side and noun (the word after it) can be the limit's."""
    return (limit.kind == kind and limit.side == side
            and (kind != "count" or noun not in NOUNS or noun in limit.nouns))


def figures_given(text):
    """(label, figure as written, sentence) of each figure the prose gives for a limit: a figure just after a cue
    ("at most", "up to", "over", "past", "default", ...) or just before one ("or more"), of the limit's kind, side
    and noun, in a sentence that names the limit's subject within NEAR characters of it; when several limits
    qualify, the one named nearest."""
    given = []
    for sentence in sentences(text):
        named = mentions(sentence)
        for match in CUED.finditer(sentence) if named else ():
            group = next(name for name, value in match.groupdict().items() if value and not name.startswith("noun"))
            index = int(group[-1]) + (3 if group.startswith("after") else 0)
            written, side, noun = match.group(group), SIDES[index % 3], match.group(f"noun{index}")
            if A_SETTINGS.match(sentence, match.end(group)):
                continue
            kind, value = number(written)
            if kind == "count" and value != int(value):  # a share or a ratio ("under 0.40"), not a count
                continue
            distances = [(max(start - match.end(group), match.start(group) - end, 0), label)
                         for start, end, label in named if fits(LIMITS[label], kind, side, noun)]
            nearest = min(distances, default=(NEAR + 1, None))
            if nearest[0] <= NEAR:
                given.append((nearest[1], written, sentence))
    return given


def wrong(given):
    return [(label, written, sentence[:200]) for label, written, sentence in given
            if number(written)[1] != LIMITS[label].value]


def test_every_figure_the_docs_give_for_a_limit_is_its_constant():
    given = [found for path in DOCUMENTS for found in figures_given(path.read_text())]
    assert len(given) >= 3  # the cues still match how the docs are written (most link to the table instead)
    assert wrong(given) == []


@pytest.mark.parametrize("text, label, written", [
    ("A page holds `page_size` rows: 100 when it is absent, at most 2000.", "`page_size` of an API list", "2000"),
    ("Names are up to 400 characters, not only spaces.", "a name: a user's, an objective's, a key result's",
     "400"),
    ("A team's name is up to 500 characters.", "a cycle's or a team's name", "500"),
    ("**Success** is any 2xx within 20 seconds.", "a webhook delivery, from connecting to the answer's last byte",
     "20 seconds"),
    ("Any request that declares a body over 2 MiB gets the JSON 413.", "a request's declared body, on any path",
     "2 MiB"),
    ("Passwords have 10 characters or more.", "a password, at least", "10"),
    ("The invitation link (valid 3 days, once) opens a page.", "an invitation link", "3 days"),
    ("A reset link, valid for [2 hours](operations.md#limits).", "a password-reset link", "2 hours"),
])
def test_a_figure_that_is_not_the_constant_is_found(text, label, written):
    assert [(found, figure) for found, figure, _ in wrong(figures_given(text))] == [(label, written)]


@pytest.mark.parametrize("text", [
    "Deleting a cycle of 100,000 objectives takes a few seconds.",  # no cue
    "```\ncurl $API/cycles?page_size=5000\n```",  # code
    "A team's name is up to 200 characters, and any other name up to 500.",  # each to its own subject
    "At most 32 from one address (`--connections-per-address`).",  # a setting's
    "A name is checked. It then waits up to 10 seconds.",  # another sentence
    "A key result went off track (confidence under 0.40) after a comment.",  # a share, not a count
    "Its comments' authors get 2.5 × the report.",  # a ratio
])
def test_figures_about_something_else_are_left_alone(text):
    assert wrong(figures_given(text)) == []
