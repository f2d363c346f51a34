"""okr serve --workers N: N processes serving one listening socket, under a supervisor.

The supervisor (the process `okr serve` started as) binds the socket before anything else, then forks
the workers, each of which makes its own waitress server on that socket (its own threads, its own loop,
its own SQLite connections) and, where CPU placement is on, keeps to a CPU of its own. Every worker
waits in poll(2) on the one socket and the kernel hands each new connection to one of them.

The supervisor serves nothing: it restarts a worker that dies (logging why, waiting longer each time
one dies young, so that a crash loop does not spin), and on SIGTERM or SIGINT stops them all: each
closes its copy of the socket, finishes the requests it holds (DRAIN_SECONDS at most) and ends; the
supervisor then ends the background process (okr/server/background.py, forked once, by the supervisor)
and exits 0. It holds the serving lock, which its workers inherit. A worker dies with its supervisor,
SIGKILL included (PR_SET_PDEATHSIG).

docs/design.md says why the socket is bound before the fork and how writers in several processes wait
for each other (okr/db.py).
"""
import atexit
import ctypes
import logging
import mmap
import os
import signal
import socket
import sys
import threading
import time

from waitress import wasyncore
from waitress.adjustments import Adjustments

from .. import db, settings
from .connections import AddressCounts

logger = logging.getLogger("okr")

# The default: one worker per CPU the process may use, at most this many; and the most --workers takes.
DEFAULT_MAX = settings.AUTO_WORKERS_MOST
MOST = settings.BY_NAME["WORKERS"].type.high
# How long a stopping worker lets the requests it holds run.
DRAIN_SECONDS = 30
# A worker that dies younger than this is restarted after a delay, doubled each time, up to RESTART_DELAY_MAX.
YOUNG_SECONDS = 10
RESTART_DELAY_FIRST = 0.1
RESTART_DELAY_MAX = 10
PR_SET_PDEATHSIG = 1
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def allowed_cpus():
    """The CPUs this process may run on, in order."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def worker_count(setting):
    """The WORKERS setting as a count: auto is one per allowed CPU, at most DEFAULT_MAX."""
    value = str(setting).strip().lower()
    if value == "auto":
        return min(DEFAULT_MAX, len(allowed_cpus()))
    if not value.isdigit() or not 1 <= int(value) <= MOST:
        raise ValueError(f"workers must be auto or an integer from 1 to {MOST}, not {str(setting)!r}")
    return int(value)


def worker_cpus(setting, count):
    """The CPUs each of count workers keeps to (None: no pinning), and a phrase saying where.

    auto: worker i on the i-th allowed CPU, round the list again when there are more workers than CPUs;
    a CPU number: every worker on it; all: wherever the scheduler puts them.
    """
    setting = str(setting).strip().lower()
    if setting == "all" or not hasattr(os, "sched_setaffinity"):
        return [None] * count, "on all CPUs"
    allowed = allowed_cpus()
    if setting == "auto":
        cpus = [allowed[i % len(allowed)] for i in range(count)]
    elif setting.isdigit() and int(setting) in allowed:
        cpus = [int(setting)] * count
    else:
        raise ValueError(f"cpu must be auto, all or one of {', '.join(map(str, allowed))}, not {setting!r}")
    shown = sorted(set(cpus))
    return cpus, f"on CPU{'s' if len(shown) > 1 else ''} {', '.join(map(str, shown))}"


def bind_sockets(config):
    """The listening sockets waitress would open for HOST and PORT, bound and listening."""
    adjustments = Adjustments(host=config["HOST"], port=config["PORT"])
    sockets = []
    try:
        for family, kind, protocol, address in adjustments.listen:
            listener = socket.socket(family, kind, protocol)
            sockets.append(listener)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as waitress does
            if family == socket.AF_INET6:
                listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            listener.bind(address)
            listener.listen(adjustments.backlog)
    except BaseException:
        for listener in sockets:
            listener.close()
        raise
    return sockets


def listening_lines(sockets):
    """waitress's own "listening on" lines, for the sockets the workers serve."""
    for listener in sockets:
        host, port = socket.getnameinfo(listener.getsockname(), socket.NI_NUMERICHOST | socket.NI_NUMERICSERV)
        host = f"[{host}]" if ":" in host else host
        logging.getLogger("waitress").info("listening on http://%s:%s", host, port)


# Held around each fork of a worker and each start of a program (Litestream): a worker forked while
# subprocess.Popen waits for its program's exec would keep Popen's status pipe open, and Popen, in the thread
# that supervises Litestream, would wait as long as the worker lives.
STARTING_CHILDREN = threading.Lock()


# --- a worker ------------------------------------------------------------------------------------------------


class PipeReader(wasyncore.file_dispatcher):
    """The read end of a pipe in a worker's loop: a byte written to it wakes the loop."""

    def __init__(self, descriptor, map):
        wasyncore.file_dispatcher.__init__(self, descriptor, map=map)

    def writable(self):
        return False

    def handle_read(self):
        """Empties the pipe; whether there was anything in it."""
        try:
            os.read(self._fileno, 512)
        except BlockingIOError:
            return False
        return True

    def handle_close(self):
        pass  # never closed but at the end, with the loop's other channels


class Wakeup(PipeReader):
    """A stop signal writes to this pipe, and the loop ends."""

    def handle_read(self):
        if super().handle_read():
            raise wasyncore.ExitNow("stop")  # waitress's loop lets this through


def idle(channel):
    """Whether a connection holds no request: none waiting, none being received, nothing left to send."""
    return not channel.requests and channel.request is None and not channel.total_outbufs_len


def drain(server, seconds=DRAIN_SECONDS):
    """Stops accepting, and lets the requests the worker holds end, seconds at most; closes every connection."""
    wasyncore.dispatcher.close(server)  # the listening socket only; the server's trigger stays
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for channel in list(server.active_channels.values()):
            if idle(channel):
                channel.handle_close()
        if not server.active_channels:
            break
        wasyncore.loop(timeout=0.05, map=server._map, use_poll=True, count=1)
    else:
        logger.warning("worker %d: %d connection(s) still busy after %d s; closing them", os.getpid(),
                       len(server.active_channels), seconds)
    server.task_dispatcher.shutdown(timeout=1)
    wasyncore.close_all(server._map)


class Nudge(PipeReader):
    """A worker's own pipe: another worker writes to it to have it look at the counts again."""


class Balance:
    """Shares new connections out evenly: a worker with more open connections than another leaves the socket to it.

    Every worker waits on the one socket, and whichever runs first takes a new connection: under load, the
    worker on the freer CPU took nearly all of them, and the other CPU stood half idle (docs/design.md,
    Worker processes). So each worker
    writes its count of open connections, and the time, into memory shared by all (one row per worker), and
    watches the socket only while no live worker has fewer. A worker that stops watching wakes the others
    (a byte in each one's pipe) so that they look again: one that stopped earlier, while this one had fewer,
    would otherwise sleep on and leave the socket to nobody. A worker whose time is older than STALE_SECONDS
    (stopped, or stuck) is left out, so that it never holds the others back for long.
    """

    STALE_SECONDS = 2.5

    def __init__(self, count):
        self.count = count
        self.memory = mmap.mmap(-1, 16 * count)  # anonymous and shared: inherited by every worker forked after
        self.rows = memoryview(self.memory).cast("d")
        self.pipes = [os.pipe() for _ in range(count)]
        for read_end, write_end in self.pipes:
            os.set_blocking(read_end, False)
            os.set_blocking(write_end, False)

    def nudge(self, but):
        """Wakes every worker but worker number but, to look at the counts again."""
        for number, (_, write_end) in enumerate(self.pipes):
            if number != but:
                try:
                    os.write(write_end, b"x")
                except OSError:
                    pass  # the pipe is full: that worker has a wake-up waiting already

    def clear(self, number):
        """Leaves worker number out (it ended, or stopped accepting), and has the others look again."""
        self.rows[2 * number] = self.rows[2 * number + 1] = 0.0
        self.nudge(number)

    def watch(self, server, number):
        """Makes server (worker number's) accept only while no live worker has fewer connections."""
        rows, others = self.rows, [index for index in range(self.count) if index != number]
        readable = server.readable
        watching = [True]
        Nudge(self.pipes[number][0], server._map)

        def balanced():
            accepting = readable()  # waitress's own: its maintenance, and its connection limit
            mine, now = len(server.active_channels), time.monotonic()
            rows[2 * number], rows[2 * number + 1] = mine, now
            fewer = any(rows[2 * other] < mine and now - rows[2 * other + 1] < self.STALE_SECONDS
                        for other in others)
            if fewer and watching[0]:
                self.nudge(number)  # one of them is to watch now
            watching[0] = not fewer
            return accepting and not fewer

        server.readable = balanced


def die_with_parent(signal_number):
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal_number)
    except (OSError, AttributeError):
        pass


def serve_worker(app, sockets, cpu, make_server, balance, number, address_counts=None):
    """A worker's life: its own waitress server on the shared sockets, until a stop signal; then a drain."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    stops = []

    def stop(signum, frame):
        stops.append(signum)
        try:
            os.write(write_end, b"x")  # no lock here: the handler may run while the loop holds any
        except OSError:
            pass

    for stop_signal in STOP_SIGNALS:
        signal.signal(stop_signal, stop)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    unblock_stop_signals()
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    db.after_fork(app, across_processes=True)
    if address_counts is not None:
        address_counts.use_row(number)  # the per-address cap counts over every worker (okr/server/connections.py)
    server = make_server(app, sockets=sockets, address_counts=address_counts)
    if balance is not None:
        balance.watch(server, number)
    Wakeup(read_end, server._map)
    while not stops:
        try:
            wasyncore.loop(timeout=server.adj.asyncore_loop_timeout, map=server._map, use_poll=True)
        except wasyncore.ExitNow:
            pass
    if balance is not None:
        balance.clear(number)  # no longer accepting: the others must not wait for it
    drain(server)


def start_worker(app, sockets, cpu, make_server, balance=None, number=0, address_counts=None):
    """Forks a worker; returns its pid (in the supervisor; the worker never returns)."""
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    with STARTING_CHILDREN:
        pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        atexit._clear()  # the supervisor's exit work (ending the background process) is not a worker's
        die_with_parent(signal.SIGKILL)
        if os.getppid() == parent:
            serve_worker(app, sockets, cpu, make_server, balance, number, address_counts)
            status = 0
    except BaseException:
        logger.exception("worker %d failed", os.getpid())
    finally:
        try:
            atexit._run_exitfuncs()  # the access log's last lines
            logging.shutdown()
        finally:
            os._exit(status)


# --- the supervisor ------------------------------------------------------------------------------------------


def why_ended(status):
    """A worker's wait status in words."""
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"was killed by signal {name}"
    return f"ended with exit code {code}"


class Slot:
    """One worker's place: its pid, when it started, and how long its next restart waits."""

    def __init__(self, number, cpu):
        self.number, self.cpu = number, cpu
        self.pid = None
        self.started = 0.0
        self.delay = 0.0
        self.restart_at = 0.0


def block_stop_signals():
    """Blocks the signals the supervisor takes (stop signals, SIGCHLD) in the calling thread, the main one, before
    the server starts any other: every thread inherits its mask, so none can take a SIGTERM meant for the
    supervisor, whose default action would end the whole process at once, workers undrained and Litestream's last
    sync skipped. A process started from here unblocks them (unblock_stop_signals)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, (*STOP_SIGNALS, signal.SIGCHLD))


def unblock_stop_signals():
    """In a process the server starts: the stop signals and SIGCHLD as a new program expects them, unblocked."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (*STOP_SIGNALS, signal.SIGCHLD))


def supervise(app, sockets, cpus, make_server):
    """Runs the workers until SIGTERM or SIGINT; returns the exit status. Call with no other thread running."""
    slots = [Slot(number, cpu) for number, cpu in enumerate(cpus, 1)]
    balance = Balance(len(slots))
    address_counts = AddressCounts(processes=len(slots))
    watched = (*STOP_SIGNALS, signal.SIGCHLD)
    # Taken synchronously with sigtimedwait below, never in a handler; workers unblock them.
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    stopping, deadline = False, None
    try:
        while True:
            now = time.monotonic()
            for slot in slots:
                if slot.pid is None and not stopping and now >= slot.restart_at:
                    balance.clear(slot.number - 1)
                    address_counts.reset_row(slot.number - 1)  # a dead worker's connections are gone
                    slot.pid = start_worker(app, sockets, slot.cpu, make_server, balance, slot.number - 1,
                                            address_counts)
                    slot.started = now
            for slot in slots:
                if slot.pid is None:
                    continue
                pid, status = os.waitpid(slot.pid, os.WNOHANG)
                if not pid:
                    continue
                slot.pid = None
                balance.clear(slot.number - 1)  # no longer counted: the others accept meanwhile
                if stopping:
                    continue
                lived = time.monotonic() - slot.started
                slot.delay = (0.0 if lived >= YOUNG_SECONDS
                              else min(RESTART_DELAY_MAX, max(RESTART_DELAY_FIRST, slot.delay * 2)))
                slot.restart_at = time.monotonic() + slot.delay
                logger.warning("worker %d (pid %d) %s after %.1f s; starting another%s", slot.number, pid,
                               why_ended(status), lived, f" in {slot.delay:.1f} s" if slot.delay else "")
            if stopping and all(slot.pid is None for slot in slots):
                return 0
            if stopping and time.monotonic() > deadline:
                signal_all(slots, signal.SIGKILL)
            waiting = [slot.restart_at - time.monotonic() for slot in slots if slot.pid is None and not stopping]
            timeout = max(0.01, min([1.0, *waiting]))
            received = signal.sigtimedwait(watched, timeout)
            if received is None or received.si_signo == signal.SIGCHLD:
                continue
            if not stopping:
                stopping = True
                deadline = time.monotonic() + DRAIN_SECONDS + 5
                logger.info("stopping (%s): letting the requests being served end, %d s at most",
                            signal.Signals(received.si_signo).name, DRAIN_SECONDS)
                for listener in sockets:
                    listener.close()
                signal_all(slots, signal.SIGTERM)
            else:
                # A second Ctrl-C: no more waiting.
                signal_all(slots, signal.SIGKILL)
    finally:
        if any(slot.pid is not None for slot in slots):
            signal_all(slots, signal.SIGKILL)
            for slot in slots:
                if slot.pid is not None:
                    os.waitpid(slot.pid, 0)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)


def signal_all(slots, number):
    for slot in slots:
        if slot.pid is not None:
            try:
                os.kill(slot.pid, number)
            except ProcessLookupError:
                pass
