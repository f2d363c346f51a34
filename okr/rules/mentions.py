"""Mentions in a comment or a reflection: `@` followed by a person's full name as shown (spaces included,
any case) or their email. Flask-free and SQL-free: the caller passes the people (id, name, email) and gets
back who is mentioned, which names are ambiguous (two people share them: nobody is notified for them), and
the text cut into pieces a page can render escaped, each mention a piece of its own.

The longest match wins: with "Sam" and "Sam Lee" both people, "@Sam Lee" is Sam Lee. A name must end at a
word boundary ("@Samuel" is not "Sam"). An email is matched under okr.rules.email_addresses' rule.
"""
import unicodedata
from collections import namedtuple

from .email_addresses import email_key

Person = namedtuple("Person", "id name email")
# kind: "text", "person" (person_id set) or "ambiguous" (two or more people share the name).
Piece = namedtuple("Piece", "kind text person_id")
Found = namedtuple("Found", "person_ids ambiguous pieces")



def _is_word(char):
    """A letter, a digit, a combining mark or a connector (such as _): what may not follow a name."""
    category = unicodedata.category(char)
    return category[0] in "LNM" or category == "Pc"


def _fold(text):
    return unicodedata.normalize("NFC", text).casefold()


def _ends_word(text, end):
    """True when nothing word-like follows text[:end]."""
    return end >= len(text) or not _is_word(text[end])


def ambiguity_note(name):
    """The sentence shown beside a comment whose mention of name matched two or more people."""
    return f"“@{name}” matches more than one person: write their email instead."


def find(text, people):
    """The mentions in text among people (Person tuples or (id, name, email)): a Found."""
    people = [Person(*p) for p in people]
    by_name, by_email = {}, {}
    for person in people:
        if person.name and person.name.strip():
            by_name.setdefault(_fold(person.name.strip()), []).append(person)
        if person.email:
            by_email.setdefault(email_key(person.email), []).append(person)
    # Longest first, so a full name beats a shorter one it starts with.
    keys = sorted(by_name, key=len, reverse=True)
    person_ids, ambiguous, pieces = [], [], []
    plain_start = i = 0
    while i < len(text):
        if text[i] != "@" or (i > 0 and _is_word(text[i - 1])):
            i += 1
            continue
        match = _match(text, i + 1, keys, by_name, by_email)
        if match is None:
            i += 1
            continue
        end, matched = match
        if plain_start < i:
            pieces.append(Piece("text", text[plain_start:i], None))
        written = text[i + 1:end]
        if len(matched) == 1:
            pieces.append(Piece("person", "@" + written, matched[0].id))
            if matched[0].id not in person_ids:
                person_ids.append(matched[0].id)
        else:
            pieces.append(Piece("ambiguous", "@" + written, None))
            if written not in ambiguous:
                ambiguous.append(written)
        i = plain_start = end
    if plain_start < len(text):
        pieces.append(Piece("text", text[plain_start:], None))
    return Found(person_ids, ambiguous, pieces)


def _match(text, start, keys, by_name, by_email):
    """(end, people) for the mention starting at text[start], or None."""
    # An email: the run of non-space characters, less trailing punctuation.
    end = start
    while end < len(text) and not text[end].isspace():
        end += 1
    candidate = text[start:end]
    while candidate and candidate[-1] in ".,;:!?)]}\"'”’":
        candidate = candidate[:-1]
    if "@" in candidate and email_key(candidate) in by_email:
        return start + len(candidate), by_email[email_key(candidate)]
    rest = _fold(text[start:start + 600])
    for key in keys:
        if rest.startswith(key):
            # Casefolding can change a text's length (ß is ss); only a match of the same length is trusted.
            length = len(key)
            if _fold(text[start:start + length]) == key and _ends_word(text, start + length):
                return start + length, by_name[key]
    return None


def suggestions(people):
    """What a page suggests after `@` for each person (Person tuples or (id, name, email)), in the order given: their
    name, or their email where two or more people share the name (a name alone would mention nobody)."""
    people = [Person(*p) for p in people]
    counts = {}
    for person in people:
        counts[_fold((person.name or "").strip())] = counts.get(_fold((person.name or "").strip()), 0) + 1
    return [person.email if counts[_fold((person.name or "").strip())] > 1 or not (person.name or "").strip()
            else person.name.strip() for person in people]
