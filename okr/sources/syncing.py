"""Turning a source's readings into check-ins with their evidence: Sync now and the schedule (sync), Test
(preview), filling a history back (fill), Recompute (recompute), and what a failure does (back-off, the owner's
email, the source stopping, the key_result.source_failed event).

Flask-free: the pages, the API, the commands and the background process each hand in their Transactions, an
object with reading() and writing() context managers that yield a database connection inside a transaction.
A source is read outside any transaction (it may take its whole deadline), between a short read and a short
write. Nothing is written dated before the key result's cycle starts or after it ends, nor in a closed cycle.
"""
import hashlib
import logging
import os
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from decimal import ROUND_HALF_EVEN, Decimal

from marshmallow import ValidationError

from .. import clock
from ..errors import Conflict, Invalid, NotFound
from ..outbound import smtp
from ..rules.fields import MAX_FRACTION_DIGITS, canonical_decimal
from ..store import checkins, connections, events, notifications, sources, users
from ..store.schema import OwnTransactions
from . import reading, sealing
from .reading import SourceFailed

logger = logging.getLogger("okr")

JITTER = 0.1  # a schedule's waits are ±10 %, so that sources added together do not run together
NEEDS_SECRET = "the connection needs its secret again (this server's key does not open the one it had)"
STEPS = {"daily": 1, "weekly": 7}


def parse_time(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def rfc3339(moment):
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def end_of_day(day):
    """The last second of a date (a datetime.date), in UTC: a day's as_of."""
    return datetime(day.year, day.month, day.day, 23, 59, 59, tzinfo=timezone.utc)


def connection_of(row):
    """What okr.sources.reading needs of a connection, from a connections or sources row."""
    return {"kind": row["kind"], "address": row["address"], "headers": row["headers"],
            "inside_network": row["inside_network"]}


def connection_problem(config, kind, address, headers):
    """Why an admin's connection cannot be saved (a sentence), or None: the reader's rules for its kind, and never
    this service's own database (or a file beside it) as an SQLite source."""
    problem = reading.connection_problem(kind, address, headers)
    if problem or kind != "sqlite":
        return problem
    own = os.path.realpath(config["DATABASE"])
    given = os.path.realpath(address)
    if given == own or given.startswith(own + "-") or given.startswith(own + "."):
        return "that is this service's own database: a source reads another system's"
    return None


def secret_of(config, sealed):
    """A connection's secret in clear (None: it has none); SourceFailed when this server's key does not open it."""
    if sealed is None:
        return None
    try:
        return sealing.unseal(config, sealed)
    except sealing.Unsealable:
        raise SourceFailed(NEEDS_SECRET) from None


def value_text(value):
    """A number read as the decimal text a check-in keeps (rounded to the fraction digits a value may have);
    SourceFailed for one no key result can hold."""
    try:
        return canonical_decimal(Decimal(value).quantize(Decimal(1).scaleb(-MAX_FRACTION_DIGITS),
                                                         rounding=ROUND_HALF_EVEN))
    except (ValidationError, ArithmeticError):
        raise SourceFailed(f"the value {value} is too large for a key result") from None


def not_running(row, moment):
    """Why a source's key result takes no value dated moment (a datetime), in words; None when it does."""
    if row["closed_at"]:
        return "its cycle is closed"
    if row["starts_on"] and rfc3339(moment) < row["starts_on"] + "T00:00:00Z":
        return "its cycle has not begun"
    if row["ends_on"] and rfc3339(moment) > row["ends_on"] + "T23:59:59Z":
        return "its cycle has ended"
    return None


def evidence_of(reading_done, read_at):
    """The evidence row's values of a Reading, read at read_at (RFC 3339)."""
    return {"request": reading_done.request, "replay": reading_done.replay,
            "as_of": None if reading_done.as_of is None else rfc3339(reading_done.as_of), "read_at": read_at,
            "sha256": hashlib.sha256(reading_done.answer).hexdigest(), "answer": reading_done.answer,
            "answer_size": len(reading_done.answer)}


def actor_of(row):
    """Who the activity feed and webhooks name for a source's writes: the source, by its connection's name."""
    return {"type": "source", "id": row["id"], "name": row["connection_name"]}


def every_seconds(row, rand=random.random):
    return row["every_minutes"] * 60 * (1 + JITTER * (2 * rand() - 1))


def retry_seconds(config, failures, rand=random.random):
    schedule = config["SOURCE_RETRY_SCHEDULE"]
    return schedule[min(failures, len(schedule)) - 1] * (1 + JITTER * (2 * rand() - 1))


def checked_query(connection, query, path):
    """Invalid, beside each field, unless the reader takes query and path for the connection's kind."""
    problems = reading.source_problem(connection["kind"], query, path)
    if problems:
        raise Invalid(problems)


def read_now(config, connection, query, path, as_of):
    """Reads query (and path) through a connection (a connections or sources row) for the moment as_of, outside
    any transaction; a Reading, or SourceFailed."""
    return reading.read(connection_of(connection), secret_of(config, connection["sealed_secret"]),
                        {"query": query, "path": path}, as_of, timeout=config["SOURCE_TIMEOUT"])


# Of an answer, what a Test shows (the evidence keeps more).
EXCERPT_BYTES = 2000


def trial(config, connection, query, path):
    """Test: what a source would write now, without writing, and what it read, as the API answers it: ok, error
    (why it read nothing), value, request (as run), sha256, answer_size, answer_excerpt."""
    try:
        found = read_now(config, connection, query, path, parse_time(clock.utc_now()))
        value = value_text(found.value)
    except SourceFailed as failure:
        return {"ok": False, "error": str(failure), "value": None, "request": None, "sha256": None,
                "answer_size": None, "answer_excerpt": None}
    return {"ok": True, "error": None, "value": value, "request": found.request,
            "sha256": hashlib.sha256(found.answer).hexdigest(), "answer_size": len(found.answer),
            "answer_excerpt": found.answer[:EXCERPT_BYTES].decode("utf-8", "replace")}


def run_result(outcome, **values):
    """A run's answer, with every field (None where it does not apply), as the API documents it."""
    return {"outcome": outcome, "reason": None, "value": None, "checkin_id": None, "error": None, "failures": None,
            "state": None, **values}


def sync(config, transactions, source_id, mailer=None):
    """Runs a source once (Sync now, or the schedule): reads it and, when the value changed, writes it as a
    check-in with its evidence; a failure counts (back-off, email, stop). A dict: outcome (written, unchanged,
    failed, idle), and value, checkin_id, error, failures, state as they apply."""
    with transactions.reading() as db:
        row = sources.get(db, source_id)
    now = clock.utc_now()
    idle = not_running(row, parse_time(now))
    if idle:
        with transactions.writing() as db:
            sources.postpone(db, row, rfc3339(parse_time(now) + timedelta(seconds=every_seconds(row))))
        return run_result("idle", reason=idle)
    try:
        found = read_now(config, row, row["query"], row["path"], parse_time(now))
        value = value_text(found.value)
    except SourceFailed as failure:
        return count_failure(config, transactions, row, str(failure), mailer)
    read_at = clock.utc_now()
    with transactions.writing() as db:
        now_row = sources.of_key_result(db, row["key_result_id"])
        if not same_source(row, now_row):
            raise Conflict("the key result's source changed while it was read: nothing was written; run it again")
        written = write_value(db, now_row, value, evidence_of(found, read_at))
        sources.succeeded(db, now_row, read_at,
                          rfc3339(parse_time(read_at) + timedelta(seconds=every_seconds(now_row))))
    if written is None:
        return run_result("unchanged", value=value, failures=0, state="active")
    return run_result("written", value=value, checkin_id=written["id"], failures=0, state="active")


def same_source(row, now_row):
    """Whether the source read (row) is still the key result's as it was (now_row): a source changed meanwhile
    (another connection or query) writes nothing from the old one's reading."""
    return now_row is not None and all(row[name] == now_row[name] for name in ("id", "connection_seq", "query", "path"))


def write_value(db, row, value, evidence):
    """Writes value (decimal text) as the source's check-in with its evidence, when it differs from the key
    result's current value; the check-in, or None when unchanged. Keeps the confidence people gave last."""
    if Decimal(value) == Decimal(row["current_value"]):
        return None
    with events.acting_as(actor_of(row)):
        checkin = checkins.check_in(db, row["key_result_id"], value)
    sources.keep_evidence(db, checkins.newest_seq(db, row["key_result_seq"]), row["connection_seq"],
                          row["connection_name"], evidence)
    return checkin


def count_failure(config, transactions, row, error, mailer=None):
    """A run that read nothing: the last good value stays; the source backs off, stops after
    SOURCE_STOP_AFTER failures in a row; a key_result.source_failed event; the owner's email after
    SOURCE_MAIL_AFTER."""
    now = clock.utc_now()
    with transactions.writing() as db:
        current = sources.of_key_result(db, row["key_result_id"])
        if current is None or current["id"] != row["id"]:
            raise NotFound("source")
        failures = current["failures"] + 1
        retry = rfc3339(parse_time(now) + timedelta(seconds=retry_seconds(config, failures)))
        failures, state = sources.failed(db, current, now, error, retry, config["SOURCE_STOP_AFTER"])
        since = current["failing_since"] or now
        data = {"key_result_id": current["key_result_id"], "source_id": current["id"],
                "connection": current["connection_name"], "error": error, "failures": failures, "state": state,
                "failing_since": since, "value": current["current_value"]}
        with events.acting_as(actor_of(current)):
            events.record(db, "key_result", "source_failed", current["key_result_id"], data,
                          parent_id=current["objective_id"], cycle_id=current["cycle_id"],
                          team_id=current["team_id"])
        if failures == 1:  # the source starts failing: its owner's inbox says so once, until it reads again
            notifications.notify(db, "source_failed", [who["id"] for who in [owner_of(db, current)] if who],
                                 key_result_id=current["key_result_id"])
        recipient = owner_of(db, current) if failures == config["SOURCE_MAIL_AFTER"] else None
    if recipient is not None:
        (mailer or send_failure_mail)(config, recipient, {**current, "failing_since": since}, error, failures)
    return run_result("failed", error=error, failures=failures, state=state)


def owner_of(db, row):
    """Who hears of a failing source: the key result's owner, else whoever attached the source; an active user
    with an email (a users row), or None."""
    for user_id in (row["owner_id"], row["created_by"]):
        if user_id:
            user = users.find(db, user_id)
            if user is not None and user["is_active"] and user["email"]:
                return user
    return None


def failure_text(row, error, failures, stop_after, link):
    return (f"The key result “{row['key_result_name']}” reads its value from “{row['connection_name']}”, which "
            f"has failed {failures} times in a row since {row['failing_since']}:\n\n  {error}\n\nThe key result "
            f"keeps its last value, {row['current_value']}, and the source keeps trying, less and less often; it "
            f"stops after {stop_after} failures in a row.\n\nTo fix it or start it again:\n\n{link}\n")


def send_failure_mail(config, user, row, error, failures):
    """Emails a failing source's owner (after commit); a mail server's failure is logged, never raised."""
    try:
        mail_settings = smtp.settings(config)
    except smtp.MailSettingsError as problem:
        logger.warning("a failing source's email not sent: %s", problem)
        return
    if mail_settings is None:
        logger.info("a failing source's email not sent: email is not set up")
        return
    link = f"{mail_settings.base_url}/keyresults/{row['key_result_id']}/edit"
    text = failure_text(row, error, failures, config["SOURCE_STOP_AFTER"], link)
    message = smtp.message(mail_settings, user["name"], user["email"],
                           f"The source of “{row['key_result_name']}” is failing", text)
    try:
        smtp.send(mail_settings, message)
    except smtp.MailError as problem:
        logger.warning("a failing source's email to user %s not sent: %s", user["id"], problem)


def fill_moments(row, first, last, step, today):
    """The moments a fill-back reads (end of each day, or of each step-th day) from first to last (dates; None:
    the cycle's start, yesterday), never before the cycle's start nor the key result's starting check-in, never
    after its end nor yesterday. Invalid when there are none, or the cycle has no start."""
    if step not in STEPS:
        raise Invalid({"step": "Must be daily or weekly."})
    if not row["starts_on"]:
        raise Invalid({"from": "The key result's cycle has no start date: give the cycle one to fill back."})
    cycle_start = datetime.strptime(row["starts_on"], "%Y-%m-%d").date()
    earliest = max(cycle_start, first or cycle_start)
    latest = today - timedelta(days=1)
    if row["ends_on"]:
        latest = min(latest, datetime.strptime(row["ends_on"], "%Y-%m-%d").date())
    if last is not None:
        latest = min(latest, last)
    days = []
    day = earliest
    while day <= latest:
        days.append(day)
        day += timedelta(days=STEPS[step])
    return [end_of_day(day) for day in days]


def fill(config, transactions, source_id, first=None, last=None, step="daily"):
    """Fills a key result's history back from its source: one value per day (or week) from first (the cycle's
    start) to last (yesterday), each dated its day with its evidence, written when it differs from the value in
    effect then, all in one transaction. A dict: outcome (filled, failed), written (how many), read (how many)."""
    with transactions.reading() as db:
        row = sources.get(db, source_id)
        started = checkins.starting_date(db, row["key_result_seq"])
    if row["closed_at"]:
        raise Conflict("the key result's cycle is closed: reopen it to fill its history")
    if not reading.takes_as_of(row["kind"], row["query"]):
        raise Invalid({"query": "This source reads only the present: its query takes no {as_of} (:as_of in SQL), "
                                "so it cannot fill a history back."})
    today = parse_time(clock.utc_now()).date()
    moments = [moment for moment in fill_moments(row, first, last, step, today)
               if started is None or rfc3339(moment) >= started]
    if not moments:
        raise Invalid({"from": "There is no day to fill: from the cycle's start (and the key result's first "
                               "check-in) to yesterday, within the cycle."})
    try:
        readings = reading.read_series(connection_of(row), secret_of(config, row["sealed_secret"]),
                                       {"query": row["query"], "path": row["path"]}, moments,
                                       timeout=config["SOURCE_TIMEOUT"])
        values = [value_text(found.value) for found in readings]
    except SourceFailed as failure:
        return {"outcome": "failed", "error": str(failure), "written": 0, "read": 0}
    read_at = clock.utc_now()
    written = 0
    with transactions.writing() as db:
        now_row = sources.of_key_result(db, row["key_result_id"])
        if not same_source(row, now_row):
            raise Conflict("the key result's source changed while it was read: nothing was written; run it again")
        with events.acting_as(actor_of(now_row)):
            for found, value in zip(readings, values):
                moment = rfc3339(found.as_of)
                before, _ = checkins.in_effect(db, now_row["key_result_seq"], moment)
                if before is not None and Decimal(before) == Decimal(value):
                    continue
                checkins.record_dated(db, now_row["key_result_id"], value, moment)
                sources.keep_evidence(db, checkins.newest_seq(db, now_row["key_result_seq"]),
                                      now_row["connection_seq"], now_row["connection_name"],
                                      evidence_of(found, read_at))
                written += 1
        checkins.resequence(db, now_row["key_result_seq"])
    return {"outcome": "filled", "error": None, "written": written, "read": len(readings)}


def recompute(config, transactions, checkin_id):
    """Runs a source-written check-in's request again, as it was run, and says whether the answer still matches:
    {matches (same SHA-256), value_matches, value (now), value_then, sha256 (now), sha256_then, read_at,
    read_at_then, error (why it read nothing now, else None)}. Conflict when its connection is gone."""
    with transactions.reading() as db:
        kept = sources.evidence_of(db, checkin_id)
        connection = connections.by_seq(db, kept["connection_seq"]) if kept["connection_seq"] else None
    if connection is None:
        raise Conflict("the connection this value was read through is gone: it cannot be run again")
    then = {"checkin_id": checkin_id, "value_then": kept["value"], "sha256_then": kept["sha256"],
            "read_at_then": kept["read_at"]}
    try:
        again = reading.replay(connection_of(connection), secret_of(config, connection["sealed_secret"]),
                               kept["replay"], timeout=config["SOURCE_TIMEOUT"])
        value = value_text(again.value)
    except SourceFailed as failure:
        return {**then, "matches": False, "value_matches": False, "value": None, "sha256": None, "read_at": None,
                "error": str(failure)}
    digest = hashlib.sha256(again.answer).hexdigest()
    return {**then, "matches": digest == kept["sha256"], "value_matches": Decimal(value) == Decimal(kept["value"]),
            "value": value, "sha256": digest, "read_at": clock.utc_now(), "error": None}


SOURCE_NICENESS = 10


def yield_the_cpu():
    """Gives this thread the CPU only when nothing else wants it (Linux's SCHED_IDLE, set per thread), else the
    lowest priority but one (nice 10): sources syncing by the hundred never delay people's requests."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return
    except (AttributeError, OSError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), SOURCE_NICENESS)
    except (AttributeError, OSError):
        pass


class Scheduler:
    """Runs the sources that are due, each in a thread of a pool as soon as it is due: a slow or failing source
    holds one thread until its deadline and never another source's run. Each thread keeps a connection of its
    own to the database between runs (opening one costs more than a run's writes); close() closes them."""

    def __init__(self, config, workers=32):
        self.config = config
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="okr-source",
                                       initializer=yield_the_cpu)
        self.running = set()
        self.lock = threading.Lock()
        self.kept = threading.local()
        self.opened = []

    def transactions(self):
        """This thread's Transactions, opened at its first use."""
        own = getattr(self.kept, "transactions", None)
        if own is None:
            own = OwnTransactions(self.config["DATABASE"], self.config["BUSY_TIMEOUT_MS"], any_thread=True)
            self.kept.transactions = own
            with self.lock:
                self.opened.append(own)
        return own

    def tick(self, limit=1000):
        """Starts every due source not already running (up to limit); how many it started."""
        with self.transactions().reading() as db:
            due = [row["id"] for row in sources.due(db, clock.utc_now(), limit)]
        started = 0
        for source_id in due:
            with self.lock:
                if source_id in self.running:
                    continue
                self.running.add(source_id)
            self.pool.submit(self.run, source_id)
            started += 1
        return started

    def run(self, source_id):
        try:
            sync(self.config, self.transactions(), source_id)
        except (NotFound, Conflict):
            pass  # removed or changed meanwhile: the changed one is due at once
        except Exception:
            logger.exception("source %s: its run failed", source_id)
        finally:
            with self.lock:
                self.running.discard(source_id)

    def close(self, wait=True):
        """Stops the pool; once its runs have ended (wait), closes the connections."""
        self.pool.shutdown(wait=wait, cancel_futures=True)
        if wait:
            with self.lock:
                opened, self.opened = self.opened, []
            for own in opened:
                own.db.close()


POLL_SECONDS = 5  # one indexed query: a source saved now runs within seconds


def sync_sources_job(app, stop):
    """The background process's job: every POLL_SECONDS, starts the sources that are due."""
    scheduler = Scheduler(app.config)
    try:
        while not stop.is_set():
            try:
                scheduler.tick()
            except Exception:  # a busy or broken database: tried again at the next round
                logger.exception("starting the sources that are due failed")
            stop.wait(POLL_SECONDS)
    finally:
        scheduler.close(wait=False)
