"""A restore's staged backup, an upgrade's backup being written and a dry run's copy hold every API key's secret:
they live beside the database, and what a killed run leaves is removed by the next run of its kind, and by okr
serve on start, unless a running process still holds it."""
import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, free_port, start_service
from okr.store.scratch import remove_leftovers

KILLED_RUN = """
import os, signal, sys
from okr.store.scratch import scratch_folder
with scratch_folder(sys.argv[1], sys.argv[2]) as folder:
    with open(os.path.join(folder, "copy.db"), "w") as f:
        f.write("every key's secret")
    print(folder, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def killed_run(database, kind):
    """The scratch folder a run of this kind left when SIGKILL stopped it mid-work."""
    process = subprocess.run([sys.executable, "-c", KILLED_RUN, str(database), kind], capture_output=True,
                             text=True, cwd=REPO)
    assert process.returncode == -signal.SIGKILL, process.stderr
    folder = Path(process.stdout.strip())
    assert folder.parent == Path(database).parent and (folder / "copy.db").exists()
    assert folder.stat().st_mode & 0o077 == 0  # private to its owner
    return folder


@pytest.mark.slow
def test_the_next_restore_removes_what_a_killed_restore_left(app, runner, tmp_path):
    database = app.config["DATABASE"]
    leftover = killed_run(database, "restore")
    assert runner.invoke(args=["backup", str(tmp_path / "b.db")]).exit_code == 0
    result = runner.invoke(args=["restore", str(tmp_path / "b.db")])
    assert result.exit_code == 0, result.output
    assert not leftover.exists()
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".okr-")]


@pytest.mark.slow
def test_a_folder_a_running_process_holds_is_kept(app, tmp_path):
    database = app.config["DATABASE"]
    held = tmp_path / ".okr-dry-run-held"
    held.mkdir()
    descriptor = os.open(held, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        unheld = killed_run(database, "dry-run")
        assert remove_leftovers(database) == [unheld.name]
        assert held.exists()
    finally:
        os.close(descriptor)
    assert remove_leftovers(database) == [held.name]


def test_only_scratch_folders_are_removed_never_a_file_or_a_link(app, tmp_path):
    database = app.config["DATABASE"]
    (tmp_path / ".okr-restore-file").write_text("not a folder")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / ".okr-restore-link").symlink_to(elsewhere)
    assert remove_leftovers(database) == []
    assert (tmp_path / ".okr-restore-file").exists() and elsewhere.exists()


@pytest.mark.slow
def test_serve_removes_leftovers_on_start(tmp_path):
    database = tmp_path / "okr.db"
    leftovers = [killed_run(database, kind) for kind in ("restore", "dry-run", "upgrade")]
    process, http = start_service(free_port(), "--database", str(database))
    try:
        assert http.get("/healthz").status == 200
        assert not any(folder.exists() for folder in leftovers)
    finally:
        process.terminate()
        output = process.communicate(timeout=15)[0].decode()
    assert "removed .okr-restore-" in output and "killed" in output


def test_a_cleanup_waits_while_a_run_makes_and_takes_its_folder(app, tmp_path):
    """Made and locked under the folder's lock: a cleanup never finds a new folder made but not yet held."""
    import threading

    from okr.store.scratch import holding

    database = app.config["DATABASE"]
    finished = threading.Event()
    with holding(str(tmp_path)):  # as scratch_folder does between making its folder and locking it
        (tmp_path / ".okr-restore-new").mkdir()
        cleanup = threading.Thread(target=lambda: (remove_leftovers(database), finished.set()), daemon=True)
        cleanup.start()
        assert not finished.wait(0.3), "the cleanup did not wait for the folder's lock"
    cleanup.join(5)
    assert finished.is_set()
