"""A plain `pip install .` carries the whole program: every package, and the dashboard's files."""
import configparser
import fnmatch
from pathlib import Path

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
