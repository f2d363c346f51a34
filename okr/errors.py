"""The project's own errors: what the store raises, and the API, the pages and the commands each word their way.

None of them knows HTTP: the API answers NotFound with a 404 in the error shape, a page with a
404 page, a command with one `okr:` line.
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


class Busy(Exception):
    """Work that is bounded (big reports and exports) has no free slot: the client should retry after
    retry_after seconds."""

    def __init__(self, what, retry_after):
        super().__init__(f"too many {what} are being built just now: retry in {retry_after} s")
        self.what, self.retry_after = what, retry_after
