"""A person's name: any text but control characters. A name goes where a line break does harm: into an
email's To header (which refuses one, so the email was never sent), into one-line lists, CSV cells and logs.

The rule is okr.rules.fields.PersonName's, which every way a person is named loads through (the People page,
okr users add, update and import, okr import); one_line is for a name stored before the rule, which okr.outbound.smtp
still addresses.
"""
import re

# C0 controls (a tab and a line feed among them), DEL, C1 controls (NEL among them), and the Unicode line
# and paragraph separators, which Python's str.splitlines() and some mail readers take as line breaks.
# Format characters stay: zero-width joiners and non-joiners are part of names in many scripts (and emoji).
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
PROBLEM = "Must not contain control characters, such as a line break or a tab."


def problem(name):
    """PROBLEM when the name holds a control character, else None."""
    return PROBLEM if CONTROL.search(name) else None


def one_line(name):
    """The name with each run of control characters made one space: how a name stored before the rule is
    written where it must stay on one line."""
    return CONTROL.sub(" ", name).strip()
