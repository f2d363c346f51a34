"""An okr-export file read as it streams by: its shape checked, its records yielded one at a time."""
import codecs
import hashlib
import json
import re
from decimal import Decimal, InvalidOperation

from ..rules.strict_json import reject_constant, reject_duplicate_keys
from .rows import FIELDS, FORMAT, REQUIRED_SECTIONS, SECTIONS, VERSION, Refusal

WHITESPACE = re.compile(r"[ \t\n\r]*")
CHUNK = 1 << 16
MAX_VALUE = 1 << 20  # characters; a valid record is far smaller (a description holds DESCRIPTION_MAX)


class HashingText:
    """A file's text, read in chunks, with the SHA-256 of its bytes so far."""

    def __init__(self, path):
        self.file = open(path, "rb")
        self.digest = hashlib.sha256()
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()

    def read(self):
        data = self.file.read(CHUNK)
        self.digest.update(data)
        try:
            return self.decoder.decode(data, final=not data)
        except UnicodeDecodeError:
            raise Refusal("it is not UTF-8 text") from None

    def close(self):
        self.file.close()


class JsonStream:
    """Reads one JSON text value by value: the top level by hand, each record with json's raw_decode.

    Only the record being read is in memory (and a 64 kB chunk). Numbers that are
    not whole are Decimals, as the API reads them; NaN, Infinity and a key given
    twice are refused.
    """

    def __init__(self, text):
        self.text = text
        self.buffer, self.position, self.lines_before, self.ended = "", 0, 0, False
        self.decoder = json.JSONDecoder(parse_float=Decimal, parse_constant=reject_constant,
                                        object_pairs_hook=reject_duplicate_keys)

    def more(self):
        """Reads the next chunk into the buffer; False at the end of the file."""
        chunk = self.text.read()
        if not chunk:
            self.ended = True
            return False
        self.lines_before += self.buffer.count("\n", 0, self.position)
        self.buffer = self.buffer[self.position:] + chunk
        self.position = 0
        return True

    def peek(self):
        """The next character that is not whitespace ("" at the end), left unread."""
        while True:
            self.position = WHITESPACE.match(self.buffer, self.position).end()
            if self.position < len(self.buffer):
                return self.buffer[self.position]
            if not self.more():
                return ""

    def where(self, position=None):
        position = self.position if position is None else position
        line = self.lines_before + self.buffer.count("\n", 0, position) + 1
        start = self.buffer.rfind("\n", 0, position) + 1
        return f"line {line}" + (f" column {position - start + 1}" if start or line == 1 else "")

    def invalid(self, what, position=None):
        position = self.position if position is None else position
        if self.ended and (not self.buffer[position:].strip() or what.startswith("unterminated string")):
            return Refusal(f"it ends early, at {self.where(position)}: the file is truncated")
        return Refusal(f"it is not valid JSON: {what} at {self.where(position)}")

    def take(self, char, what):
        if self.peek() != char:
            raise self.invalid(f"expected {what}")
        self.position += 1

    def value(self):
        """The next JSON value, whole."""
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buffer, self.position)
            except json.JSONDecodeError as error:
                # Maybe only cut off by the chunk's end: read on, unless no record is that long.
                if self.ended or len(self.buffer) - self.position > MAX_VALUE:
                    raise self.invalid(error.msg[:1].lower() + error.msg[1:], error.pos) from None
                self.more()
                continue
            except ValueError as error:  # NaN, Infinity, a key twice
                raise self.invalid(str(error)) from None
            except InvalidOperation:
                raise self.invalid("a number whose exponent is out of range") from None
            except RecursionError:
                raise self.invalid("nested too deep") from None
            if end == len(self.buffer) and not self.ended and self.more():
                continue  # a number may go on in the next chunk
            self.position = end
            return value

    def members(self):
        """Yields the top-level object's member names; the caller reads each one's value before the next."""
        self.take("{", "an object ({)")
        if self.peek() == "}":
            self.position += 1
        else:
            while True:
                if self.peek() != '"':
                    raise self.invalid("expected a member name")
                key = self.value()
                self.take(":", "':'")
                yield key
                if self.peek() == ",":
                    self.position += 1
                    continue
                self.take("}", "',' or '}'")
                break
        if self.peek() != "":
            raise self.invalid("more after the end of the object")

    def items(self):
        """Yields the values of the array that comes next, one at a time."""
        self.take("[", "an array ([)")
        if self.peek() == "]":
            self.position += 1
            return
        while True:
            yield self.value()
            if self.peek() == ",":
                self.position += 1
                continue
            self.take("]", "',' or ']'")
            return


def records(path, hashes):
    """Yields (section, index, record) of an okr-export file, after checking its format and version.

    Refusal names anything wrong with the file's shape. hashes gets the file's
    SHA-256 once it has been read to the end.
    """
    text = HashingText(path)
    try:
        stream = JsonStream(text)
        if stream.peek() != "{":
            raise Refusal(f"it is not an {FORMAT} file: it does not begin with {{") if stream.peek() \
                else Refusal("it is empty")
        members = stream.members()
        seen = []
        for key in members:
            if not seen:
                if key != "format":
                    raise Refusal(f'it is not an {FORMAT} file: it does not begin with "format": "{FORMAT}"')
                value = stream.value()
                if value != FORMAT:
                    raise Refusal(f'it is not an {FORMAT} file: its format is {json.dumps(value, default=str)}')
            elif len(seen) == 1:
                if key != "version":
                    raise Refusal('"version" must follow "format"')
                version = stream.value()
                if type(version) is not int or version < 1:
                    raise Refusal(f"its version is {json.dumps(version, default=str)}, not a whole number from 1")
                if version > VERSION:
                    raise Refusal(f"it is format version {version}, newer than this okr reads ({VERSION}); "
                                  "import it with a newer okr")
            elif key not in FIELDS:
                raise Refusal(f'unknown section "{key}"; the sections are {", ".join(SECTIONS)}')
            elif key in seen:
                raise Refusal(f'the section "{key}" appears twice')
            elif seen[-1] in FIELDS and SECTIONS.index(key) < SECTIONS.index(seen[-1]):
                raise Refusal(f'the section "{key}" comes after "{seen[-1]}"; the sections go in the order '
                              + ", ".join(SECTIONS))
            else:
                for index, record in enumerate(stream.items()):
                    if not isinstance(record, dict):
                        raise Refusal(f"{key}[{index}]: not an object")
                    yield key, index, record
            seen.append(key)
        missing = [name for name in REQUIRED_SECTIONS if name not in seen]
        if len(seen) < 2 or missing:
            raise Refusal("it has no " + ('"version"' if len(seen) < 2 else f'"{missing[0]}" section'))
        hashes.append(text.digest.hexdigest())
    finally:
        text.close()



def file_digest(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()
