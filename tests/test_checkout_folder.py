"""The tests pass whichever folder they run from, even one where `python app.py` has already made ./okr.db
(the README has a user serve first, in the checkout, and run the tests there afterwards)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import okr
from helpers import ENV_WITHOUT_OKR, REPO, run_okr

pytestmark = pytest.mark.slow  # every test here starts a server, a process or a browser


def test_the_command_line_help_tests_pass_beside_a_users_okr_db(tmp_path):
    folder = tmp_path / "checkout"
    folder.mkdir()
    assert run_okr("init-db", cwd=folder).returncode == 0  # ./okr.db, as `python app.py` leaves it
    before = (folder / "okr.db").read_bytes()
    # The nested run imports the okr this run tests, whatever folder it starts in; one process (-n 0), since
    # this run's workers already share the machine. Only the help tests that run in the folder they are started
    # in: those marked slow start their processes in a folder of their own, and the outer run has run them.
    path = [str(Path(okr.__file__).resolve().parent.parent), *filter(None, [os.environ.get("PYTHONPATH")])]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
         "--basetemp", str(tmp_path / "basetemp"), "-m", "not slow",
         str(REPO / "tests" / "cli" / "test_help.py")],
        cwd=folder, env={**ENV_WITHOUT_OKR, "PYTHONPATH": os.pathsep.join(path)}, capture_output=True, text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout.splitlines()[-1] and " failed" not in result.stdout.splitlines()[-1]
    assert (folder / "okr.db").read_bytes() == before  # and they leave the user's database alone
