"""When two emails are the same user."""
import unicodedata


def email_key(email):
    """The form under which two emails are the same user: NFC, then full Unicode case folding.

    Stored in users.email_key, whose unique index is the database's rule; every
    command that stores or looks up an email goes through here. (SQLite's NOCASE
    folds ASCII only.) Folding can leave text out of NFC, hence the second pass.
    """
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", email).casefold())
