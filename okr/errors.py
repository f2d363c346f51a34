"""The project's own errors: what the store and the database raise, and the API, the pages and the commands each
word their way.

None of them knows HTTP: the API answers NotFound with a 404 in the error shape, a page with a
404 page, a command with one `okr:` line; the pipeline answers DiskFull with a 507 and the other
DatabaseTrouble with a 503 that says when to retry.
"""


class NotFound(LookupError):
    """No row of this resource ("cycle", "key result") has the id asked for."""

    def __init__(self, resource):
        super().__init__(f"{resource} not found")
        self.resource = resource


class Invalid(ValueError):
    """A value breaks a rule the store checks against what is stored: {field: "sentence"}."""

    def __init__(self, fields):
        super().__init__("; ".join(f"{field}: {text}" for field, text in fields.items()))
        self.fields = fields


class Conflict(Exception):
    """The change cannot be made over what is stored now: a unique value taken, say."""


class CycleClosed(Conflict):
    """A change inside a closed cycle (locked until an admin reopens it); cycle is its row when known (the store's
    own check), None when only the database's triggers refused."""

    def __init__(self, cycle=None):
        super().__init__("cycle is closed")
        self.cycle = cycle


class Busy(Exception):
    """Work that is bounded (big reports and exports) has no free slot: the client should retry after
    retry_after seconds."""

    def __init__(self, what, retry_after):
        super().__init__(f"too many {what} are being built just now: retry in {retry_after} s")
        self.what, self.retry_after = what, retry_after


class DatabaseTrouble(Exception):
    """The database cannot do this just now, for a reason a client may wait out or an operator fix; the message says
    which, in words for a client. okr.db turns SQLite's errors into these."""


class DatabaseBusy(DatabaseTrouble):
    """Other writers held the database past the busy timeout: the client may simply retry."""

    def __init__(self):
        super().__init__("database busy, retry shortly")


class DatabaseReadOnly(DatabaseTrouble):
    """The database file is not writable: retrying works once an operator fixes it."""

    def __init__(self):
        super().__init__("the database file is not writable")


class DiskFull(DatabaseTrouble):
    """The disk is full: nothing was written, and retrying will not help until an operator makes room."""

    def __init__(self):
        super().__init__("the disk is full")


class DatabaseUnusable(Exception):
    """The database cannot answer at all (its file missing, empty or broken); the argument says why, for an operator."""
