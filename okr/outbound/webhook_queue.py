"""The deliverer: sends each hook's waiting events, in order, from the server's background process.

It is a job of okr/server/background.py, so there is exactly one per database however many servers serve it,
and it never takes the server's CPU or a worker thread. A dispatcher polls SQLite's data_version (one cheap
read, every few milliseconds) and, when anything was committed, wakes the worker thread of each active hook
whose first waiting event is due, starting one if needed (a hook waiting for a retry is left to sleep). A worker sends its hook's events one at a time in outbox order:
the head blocks the rest, so a hook's events arrive in order, and a slow or dead receiver holds up its own
hook only. A worker keeps its connection to the receiver alive (okr.outbound.webhook_request.post's pool). An event leaves the outbox only after its receiver answered 2xx, acknowledged a batch per short
write transaction (the API must not wait on SQLite's write lock for the deliverer); so after a crash, even
a SIGKILL, whatever was not acknowledged is sent again, with the same webhook-id (the event's id).

A failed attempt (no whole answer within webhook_request.TIMEOUT_SECONDS of connecting, no connection, any
non-2xx, a refused address) is tried again after the retry schedule (OKR_WEBHOOK_RETRY_SCHEDULE), or the
receiver's Retry-After; when the last retry fails, or at once on a 410, the hook is disabled, and its events wait
until `okr webhooks enable` (from the first undelivered one).
Time is read through `clock`, so the tests run the schedule on a fake clock.
"""
import logging
import random
import threading
import time
from contextlib import closing
from datetime import datetime, timezone

from ..store import events, webhooks
from ..store.schema import connect
from . import webhook_request

logger = logging.getLogger("okr")

POLL_SECONDS = 0.005  # how often the dispatcher reads data_version
RESCAN_SECONDS = 1.0  # and looks for work anyway (a retry that fell due, a hook enabled by another process)
BATCH = 1000  # events read from a hook's outbox at once
# Delivered events are acknowledged at least this often: each acknowledgement takes SQLite's write lock, and
# an API writer that finds it taken sleeps (1 ms or more), so they are few; after a crash, what was delivered
# but not yet acknowledged is sent again.
ACK_SECONDS = 1.0
IDLE_WAIT_SECONDS = 60  # the longest a worker waits before it looks at its outbox again
ERROR_PAUSE_SECONDS = 1.0  # after a database error, a worker waits this long and reads its outbox again


def stamp(unix_seconds):
    return datetime.fromtimestamp(unix_seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Deliverer:
    """Delivers hooks' waiting events from the database at `database`, a hook at a time (deliver_due)."""

    def __init__(self, database, busy_timeout_ms=5000, clock=time.time, send=webhook_request.send_event,
                 rand=random.random, stop=None, retry_schedule=webhook_request.RETRY_SCHEDULE):
        self.database, self.busy_timeout_ms, self.retry_schedule = database, busy_timeout_ms, retry_schedule
        self.clock, self.send, self.rand = clock, send, rand
        self.stop = stop or threading.Event()  # once set, no new attempt starts
        self.local = threading.local()

    def connection(self):
        """This thread's connection (a worker keeps one for its life)."""
        if getattr(self.local, "db", None) is None:
            self.local.db = connect(self.database, self.busy_timeout_ms)
        return self.local.db

    def pool(self):
        """This thread's kept-alive connections to receivers."""
        if getattr(self.local, "pool", None) is None:
            self.local.pool = {}
        return self.local.pool

    def close(self):
        webhook_request.close_pool(self.pool())
        db = getattr(self.local, "db", None)
        if db is not None:
            self.local.db = None
            db.close()

    def write(self, change):
        """Runs change(db) in a short write transaction of its own."""
        db = self.connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            change(db)
            db.execute("COMMIT")
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")

    def deliver_due(self, hook_seq):
        """Sends the hook's waiting events that are due, in order, until one fails or none is left; returns
        when the hook next has work (Unix seconds), or None when it has none (or is gone or disabled)."""
        db = self.connection()
        while True:
            hook = webhooks.active_hook(db, hook_seq)
            rows = webhooks.head(db, hook_seq, BATCH) if hook is not None else []
            if not rows:
                return None
            delivered, flushed_at = [], time.monotonic()
            for row in rows:
                if row["id"] is None:  # its event is gone: nothing to send
                    delivered.append((row["outbox_seq"], None, None, None, None))
                    continue
                if self.stop.is_set():
                    self.acknowledge(hook_seq, delivered)
                    return None
                now = self.clock()
                if row["next_attempt_at"] > now:
                    self.acknowledge(hook_seq, delivered)
                    return row["next_attempt_at"]
                body = webhook_request.dumps(events.event_json(row))
                outcome = self.send(hook, row["id"], body, now=self.clock, pool=self.pool())
                if not outcome.ok:
                    self.acknowledge(hook_seq, delivered)
                    return self.failed(hook, row, outcome)
                delivered.append((row["outbox_seq"], row["id"], row["type"], stamp(now), outcome.status))
                if time.monotonic() - flushed_at >= ACK_SECONDS:
                    self.acknowledge(hook_seq, delivered)
                    delivered, flushed_at = [], time.monotonic()
                    if webhooks.active_hook(db, hook_seq) is None:  # removed or disabled meanwhile
                        return None
            self.acknowledge(hook_seq, delivered)

    def acknowledge(self, hook_seq, delivered):
        if delivered:
            self.write(lambda db: webhooks.acknowledge(db, hook_seq, delivered))

    def failed(self, hook, row, outcome):
        """Records a failed attempt of the hook's first waiting event; when it is next due, or None."""
        now = self.clock()
        failures = row["attempts"] + 1
        delay = None if outcome.status == 410 else webhook_request.retry_delay(failures, outcome.retry_after, self.rand,
                                                                        self.retry_schedule)
        if outcome.status == 410:
            reason = "the receiver answered 410 Gone"
        elif delay is None:
            reason = f"delivery failed after {failures} attempts; the last: {outcome.error}"
        next_at = now if delay is None else now + delay

        def change(db):
            webhooks.postpone(db, row["outbox_seq"], failures, next_at)
            webhooks.log_attempts(db, hook["seq"], [(row["id"], row["type"], stamp(now), outcome.status,
                                                     outcome.error)])
            if delay is None:
                webhooks.disable(db, hook["seq"], reason)

        self.write(change)
        if delay is None:
            logger.warning("webhook %s disabled: %s", hook["id"], reason)
            return None
        return next_at


class Dispatcher:
    """Watches the database for work and keeps a worker thread per hook that has some."""

    def __init__(self, deliverer, stop):
        self.deliverer, self.stop = deliverer, stop
        self.workers = {}  # hook seq -> its wake Event, while its worker runs
        self.lock = threading.Lock()

    def run(self):
        with closing(connect(self.deliverer.database, self.deliverer.busy_timeout_ms)) as db:
            seen, rescan_at = None, 0.0
            while not self.stop.is_set():
                try:
                    version = db.execute("PRAGMA data_version").fetchone()[0]
                    if version != seen or time.monotonic() >= rescan_at:
                        seen, rescan_at = version, time.monotonic() + RESCAN_SECONDS
                        for hook_seq in webhooks.hooks_with_work(db, self.deliverer.clock()):
                            self.wake(hook_seq)
                except Exception:  # a busy or broken database: looked at again at the next round
                    logger.exception("the webhook deliverer could not read its outbox")
                    self.stop.wait(ERROR_PAUSE_SECONDS)
                self.stop.wait(POLL_SECONDS)
        for thread in list(threading.enumerate()):
            if thread.name.startswith("okr-webhook-"):
                thread.join(timeout=webhook_request.TIMEOUT_SECONDS + 1)

    def wake(self, hook_seq):
        with self.lock:
            wake = self.workers.get(hook_seq)
            if wake is not None:
                wake.set()
                return
            wake = self.workers[hook_seq] = threading.Event()
        threading.Thread(target=self.work, args=(hook_seq, wake), name=f"okr-webhook-{hook_seq}",
                         daemon=True).start()

    def work(self, hook_seq, wake):
        """A hook's worker: delivers while it has work, waits for its retries, ends when it has none."""
        try:
            while not self.stop.is_set():
                wake.clear()
                try:
                    next_at = self.deliverer.deliver_due(hook_seq)
                except Exception:
                    logger.exception("delivering webhook events failed; trying again")
                    self.deliverer.close()
                    next_at = self.deliverer.clock() + ERROR_PAUSE_SECONDS
                if next_at is None:
                    with self.lock:
                        if not wake.is_set():  # no commit since it looked: the dispatcher will start another
                            del self.workers[hook_seq]
                            return
                    continue
                wake.wait(min(max(next_at - self.deliverer.clock(), 0), IDLE_WAIT_SECONDS))
        finally:
            with self.lock:
                if self.workers.get(hook_seq) is wake:
                    del self.workers[hook_seq]
            self.deliverer.close()


def deliver_webhooks(app, stop):
    """Job of the background process (okr/server/background.py): delivers webhook events until stop is set."""
    deliverer = Deliverer(app.config["DATABASE"], app.config["BUSY_TIMEOUT_MS"], stop=stop,
                          retry_schedule=app.config["WEBHOOK_RETRY_SCHEDULE"])
    Dispatcher(deliverer, stop).run()
