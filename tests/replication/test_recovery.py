"""A server you can lose: writes from several clients, the server's whole process group killed, the database
and its WAL deleted, and `okr restore --from-replica` brings back every write acknowledged more than 2 seconds
before the kill (docs/operations.md gives the recovery point measured here)."""
import time

import pytest

from replicas import (S3_ENV, kill_group, lose_database, recovery_point, restore, start_replicating, stored_cycle_names,
                      write_then_lose)

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser

# An acknowledged write older than this at the kill must be in the replica.
PROMISED_SECONDS = 2.0


def lose_and_restore(tmp_path, url, options=(), env=None):
    process, http = start_replicating(tmp_path, "--replicate", url, *options, env=env)
    acknowledged, killed = write_then_lose(process, http.port)
    database = tmp_path / "okr.db"
    lose_database(database)
    report = restore(tmp_path, url, *options, env=env)
    stored = stored_cycle_names(database)
    assert report["cycles"] == len(stored)
    too_old_to_lose = [name for name, at in acknowledged if killed - at > PROMISED_SECONDS]
    assert len(too_old_to_lose) >= 1000
    assert [name for name in too_old_to_lose if name not in stored] == []
    window, missing = recovery_point(acknowledged, stored, killed)
    # Read by whoever measures the recovery point for the docs (pytest -s).
    print(f"\n{url.split(':')[0]}: {len(acknowledged)} acknowledged writes, {missing} lost, the oldest of them "
          f"acknowledged {window:.2f} s before the kill")
    return stored


def test_every_write_older_than_two_seconds_comes_back_from_a_file_replica(tmp_path, litestream):
    url = f"file://{tmp_path / 'replica'}"
    first = lose_and_restore(tmp_path, url)
    # The restored database replicates again, to the same replica: lost once more, it comes back again.
    process, http = start_replicating(tmp_path, "--replicate", url)
    http.post("/v1/cycles", {"name": "after the restore"}, headers={"Content-Type": "application/json"}).ok()
    time.sleep(PROMISED_SECONDS + 0.1)
    kill_group(process)
    lose_database(tmp_path / "okr.db")
    restore(tmp_path, url)
    assert stored_cycle_names(tmp_path / "okr.db") == first | {"after the restore"}


def test_every_write_older_than_two_seconds_comes_back_from_an_s3_replica(tmp_path, litestream, s3):
    lose_and_restore(tmp_path, "s3://okr/team/okr.db", ("--replicate-endpoint", s3.endpoint), env=S3_ENV)
