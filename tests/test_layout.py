"""The package's layout, as docs/development.md describes it: every module named there once, in its package's
list; a small root; no two modules whose names differ only by a prefix or a suffix."""
import itertools
import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "okr"
# The app factory, the pipeline, errors, the Flask-free rules and the like; everything else lives in a package.
MOST_ROOT_MODULES = 10
# A module's pages are NAME_pages beside the module NAME in another package: the one suffix that is a convention.
PAGE_SUFFIX = "_pages"


def modules():
    return sorted(path.relative_to(REPO).as_posix() for path in PACKAGE.rglob("*.py"))


def layout():
    """docs/development.md's Layout section: {"okr/x.py" or "okr/pkg/x.py": its line}, read from its lists."""
    text = (REPO / "docs" / "development.md").read_text()
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    named, folder = {}, None
    for line in section.splitlines():
        top = re.match(r"- `([^`]+)`", line)
        nested = re.match(r"  - `([^`]+)`", line)
        if top:
            folder = top.group(1) if top.group(1).endswith("/") else None
            if not folder:
                named.setdefault(top.group(1), []).append(line)
        elif nested and folder:
            named.setdefault(folder + nested.group(1), []).append(line)
    return named


def test_the_layout_names_every_module_once_and_nothing_that_is_gone():
    named = layout()
    listed = {path for path in named if path.startswith("okr/") and path.endswith(".py")}
    assert "app.py" in named
    assert sorted(set(modules()) - listed) == [], "modules the Layout of docs/development.md does not name"
    assert sorted(listed - set(modules())) == [], "the Layout names modules that do not exist"
    assert [path for path, lines in named.items() if len(lines) > 1] == []


def test_the_root_of_the_package_holds_few_modules():
    root = [path.name for path in PACKAGE.glob("*.py")]
    assert len(root) <= MOST_ROOT_MODULES, sorted(root)


def near_twins(names):
    """Pairs of names of which one is the other with something added before or after it, or which differ only in
    their last few letters (delivery and deliverer)."""
    def twins(one, other):
        if len(one) >= 3 and (other.startswith(one) or other.endswith(one)):
            return True
        same = len(os.path.commonprefix([one, other]))
        return same >= 4 and max(len(one), len(other)) - same <= 3
    return sorted((one, other) for one, other in itertools.combinations(sorted(set(names)), 2)
                  if twins(one, other) or twins(other, one))


def test_no_two_modules_differ_only_by_a_prefix_or_a_suffix():
    names = {Path(path).stem for path in modules()} - {"__init__", "__main__"}
    twins = [(one, other) for one, other in near_twins(names)
             if PAGE_SUFFIX not in (one.removeprefix(other), other.removeprefix(one))]
    assert twins == []


def test_near_twins_are_found():
    assert near_twins(["delivery", "deliverer", "sign_in", "sign_ins", "sessions", "web_sessions", "cycles",
                       "checkins", "me", "messages"]) == [("deliverer", "delivery"), ("sessions", "web_sessions"), ("sign_in", "sign_ins")]
