"""A plain `pip install .` carries the whole program: every package, and the dashboard's files."""
import configparser
import fnmatch
import shutil
import subprocess
import sys
import zipfile

import pytest

from helpers import REPO


def setup_options():
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(REPO / "setup.cfg")
    return parser


def test_every_package_is_listed():
    listed = {name.strip() for name in setup_options().get("options", "packages").split(",")}
    found = {".".join(path.parent.relative_to(REPO).parts) for path in (REPO / "okr").rglob("__init__.py")}
    assert found == listed


def test_the_dashboards_templates_and_static_files_are_package_data():
    patterns = [p.strip() for p in setup_options().get("options.package_data", "okr.web").split(",")]
    web = REPO / "okr" / "web"
    files = [path.relative_to(web).as_posix() for folder in ("templates", "static")
             for path in (web / folder).iterdir() if path.is_file()]
    assert files and all(any(fnmatch.fnmatch(name, pattern) for pattern in patterns) for name in files), files


@pytest.mark.slow
def test_the_install_adds_one_top_level_package_and_no_module_named_app(tmp_path):
    # app.py is the checkout's thin entry point; installed, a module named `app` would clash with other projects.
    source = tmp_path / "source"  # a copy, so that the build leaves nothing in the checkout
    shutil.copytree(REPO / "okr", source / "okr", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("app.py", "schema.sql", "setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--quiet",
                            "--wheel-dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("okr_service-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        top_level = next(archive.read(name) for name in names if name.endswith(".dist-info/top_level.txt"))
    assert top_level.decode().split() == ["okr"]
    assert {name.split("/")[0] for name in names if not name.split("/")[0].startswith("okr_service-")} == {"okr"}
    assert "okr/web/templates/base.html" in names and "okr/server/build.py" in names


@pytest.mark.slow
def test_python_dash_m_okr_is_the_program(tmp_path):
    result = subprocess.run([sys.executable, "-m", "okr", "--version"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("okr ") and result.stderr == ""
