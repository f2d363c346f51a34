"""The serving settings: flags and OKR_* variables reach waitress, and the CPU placement."""
import os
import subprocess
import sys

import pytest

import helpers
from okr.__main__ import parse_options
from okr import create_app
from okr.server.http_server import make_server, waitress_settings
from okr.server.startup import place_on_cpus


@pytest.mark.slow
def test_flags_override_environment_which_overrides_defaults(monkeypatch):
    monkeypatch.setenv("OKR_CONNECTION_LIMIT", "50")
    monkeypatch.setenv("OKR_CHANNEL_TIMEOUT", "7")
    overrides, rest = parse_options(["--channel-timeout", "9", "--threads", "3", "--port", "0"])
    app = create_app(overrides)
    server = make_server(app)
    try:
        assert (server.adj.connection_limit, server.adj.channel_timeout, server.adj.threads) == (50, 9, 3)
        assert server.adj.asyncore_use_poll is True
        assert server.adj.max_request_body_size == waitress_settings(app.config)["max_request_body_size"]
    finally:
        server.close()
        server.task_dispatcher.shutdown()


@pytest.mark.slow
def test_the_defaults_are_the_documented_ones():
    settings = waitress_settings(create_app().config)
    assert (settings["threads"], settings["connection_limit"], settings["channel_timeout"]) == (8, 1000, 30)
    assert create_app().config["CPU"] == "auto"


PLACE = "import os, sys; from okr.server.startup import place_on_cpus; print(place_on_cpus(sys.argv[1])); " \
        "print(sorted(os.sched_getaffinity(0)))"


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")
@pytest.mark.parametrize("setting", ["auto", "all"])
def test_the_process_keeps_to_one_cpu_unless_told_all(setting):
    allowed = sorted(os.sched_getaffinity(0))
    output = subprocess.run([sys.executable, "-c", PLACE, setting], capture_output=True, text=True,
                            check=True, cwd=str(helpers.REPO)).stdout.splitlines()
    if setting == "auto":
        assert output == [f"on CPU {allowed[0]}", str(allowed[:1])]
    else:
        assert output == ["on all CPUs", str(allowed)]


def test_a_cpu_outside_the_allowed_set_is_refused():
    with pytest.raises(ValueError, match="cpu must be auto, all or one of"):
        place_on_cpus("4096")


@pytest.mark.slow
def test_serve_with_a_bad_cpu_ends_with_one_line(tmp_path):
    app_py = os.path.join(str(helpers.REPO), "app.py")
    result = subprocess.run([sys.executable, app_py, "--database", str(tmp_path / "okr.db"), "--port", "0",
                             "--cpu", "many"], capture_output=True, text=True, timeout=30)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == ["okr: cpu must be auto, all or one of "
                                                  + ", ".join(map(str, sorted(os.sched_getaffinity(0))))
                                                  + ", not 'many'"]
    assert not (tmp_path / "okr.db").exists()
