"""What a killed run leaves in the shared temporary folder, the single-file executable's unpacked program (_MEI…)
and Litestream's folder, is removed by the next start: only folders of this user that hold okr's marker and that
no process holds (okr/store/scratch.py, okr/server/single_file.py, okr/server/replication.py). The executable
itself, killed, is in tests/test_binary.py."""
import fcntl
import os
import signal
import sys

import pytest

from okr.server import litestream, replication, single_file
from okr.store import scratch


def marked(parent, name, marker=single_file.MARKER):
    folder = parent / name
    folder.mkdir()
    (folder / marker).write_bytes(b"")
    (folder / "libpython3.11.so.1.0").write_bytes(b"\0" * 1024)
    return folder


def held_elsewhere(folder):
    """Whether another process (another open file) could take the folder's lock: False while someone holds it."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)


def test_only_marked_unheld_folders_of_ours_are_removed(tmp_path):
    gone = marked(tmp_path, "_MEI0000abcdXXXXXX")
    running = marked(tmp_path, "_MEI0000beefYYYYYY")
    unmarked = tmp_path / "_MEI0000cafeZZZZZZ"  # another PyInstaller program's, or one being unpacked
    unmarked.mkdir()
    other_prefix = marked(tmp_path, "okr-litestream-abc")
    link = tmp_path / "_MEIlink"
    link.symlink_to(gone, target_is_directory=True)
    (tmp_path / "_MEIfile").write_bytes(b"")
    holder = os.open(running, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        removed = scratch.remove_marked_leftovers(tmp_path, ("_MEI",), single_file.MARKER)
    finally:
        os.close(holder)
    assert removed == [gone.name]
    assert sorted(os.listdir(tmp_path)) == sorted(
        [running.name, unmarked.name, other_prefix.name, "_MEIlink", "_MEIfile"])


def test_another_users_folder_is_left_alone(tmp_path, monkeypatch):
    marked(tmp_path, "_MEI0000abcdXXXXXX")
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(tmp_path).st_uid + 1)
    assert scratch.remove_marked_leftovers(tmp_path, ("_MEI",), single_file.MARKER) == []
    assert os.listdir(tmp_path) == ["_MEI0000abcdXXXXXX"]


def test_a_missing_temporary_folder_removes_nothing(tmp_path):
    assert scratch.remove_marked_leftovers(tmp_path / "gone", ("_MEI",), single_file.MARKER) == []


@pytest.fixture
def unpacked(tmp_path, monkeypatch):
    """This process as the single-file executable's child, unpacked into tmp_path/_MEI… by a launcher that is its
    parent; the signal Linux is asked for, and the signals sent, recorded instead."""
    folder = tmp_path / f"_MEI{os.getppid():08x}AbCdEf"
    folder.mkdir()
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(folder), raising=False)
    asked, sent = [], []
    monkeypatch.setattr(single_file, "parent_death_signal", asked.append)
    monkeypatch.setattr(os, "kill", lambda pid, number: sent.append((pid, number)))
    monkeypatch.setattr(single_file, "removed_at_start", [])
    yield folder, asked, sent
    for descriptor in single_file.holding:
        os.close(descriptor)
    single_file.holding.clear()


def test_the_executable_holds_its_folder_follows_its_launcher_and_removes_the_folders_of_runs_that_are_gone(
        unpacked, tmp_path):
    folder, asked, sent = unpacked
    gone = marked(tmp_path, "_MEI00000001GoNe00")
    single_file.at_start()
    assert asked == [signal.SIGTERM] and sent == []
    assert (folder / single_file.MARKER).is_file() and held_elsewhere(folder)
    assert not gone.exists() and single_file.removed_at_start == [gone.name]


def test_a_launcher_gone_before_it_was_followed_ends_the_run(unpacked, monkeypatch):
    folder, asked, sent = unpacked
    launcher = os.getppid()
    monkeypatch.setattr(os, "getppid", lambda: 1)  # reparented: the launcher died first
    single_file.follow_launcher(launcher)
    assert asked == [signal.SIGTERM] and sent == [(os.getpid(), signal.SIGTERM)]


def test_the_launchers_pid_is_in_its_folders_name():
    assert single_file.launcher_pid("/tmp/_MEI0001e240q1w2e3") == 123456


def test_outside_the_executable_nothing_is_held_nor_removed(tmp_path, monkeypatch):
    monkeypatch.delattr(sys, "frozen", raising=False)
    gone = marked(tmp_path, "_MEI00000001GoNe00")
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path / "_MEI0000000aXXXXXX"), raising=False)
    single_file.at_start()
    assert gone.exists() and single_file.holding == []


def test_litestreams_folder_is_held_and_marked_while_the_server_lives(tmp_path, monkeypatch):
    monkeypatch.setattr(replication.tempfile, "tempdir", str(tmp_path))
    replicator = replication.Replicator("/bin/false", tmp_path / "okr.db",
                                        litestream.replica(f"file://{tmp_path / 'replica'}"), 5000)
    folder = replicator.folder
    assert os.path.basename(folder).startswith(replication.FOLDER_PREFIX)
    assert os.path.isfile(os.path.join(folder, replication.FOLDER_MARKER)) and held_elsewhere(folder)
    assert scratch.remove_marked_leftovers(tmp_path, (replication.FOLDER_PREFIX,), replication.FOLDER_MARKER) == []
    replicator.stop()
    assert not os.path.exists(folder)


def test_serving_with_replication_removes_litestreams_folder_left_by_a_killed_server(app, tmp_path, monkeypatch):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(replication.tempfile, "tempdir", str(temporary))
    gone = marked(temporary, "okr-litestream-gone", replication.FOLDER_MARKER)
    started = []
    monkeypatch.setattr(replication.Replicator, "start", lambda self: started.append(self))
    monkeypatch.setattr(litestream, "usable_litestream", lambda: "/bin/false")
    # What a server keeps for its life, put back after the test.
    monkeypatch.setattr(replication, "hold_replication_lock", lambda database: True)
    monkeypatch.setattr(replication.atexit, "register", lambda function: None)
    monkeypatch.setattr(replication.schema, "wal_autocheckpoint", replication.schema.wal_autocheckpoint)
    app.config["REPLICATE"] = f"file://{tmp_path / 'replica'}"
    replicator = replication.start_replication(app)
    try:
        assert started == [replicator] and not gone.exists()
        assert os.listdir(temporary) == [os.path.basename(replicator.folder)]
    finally:
        replicator.stop()
