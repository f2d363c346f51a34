"""When two emails are the same user."""
import unicodedata

# A to Z only: full Unicode case folding would make juergen.strasse@ the same user as juergen.straße@ (and
# ſ the same letter as s), so an address at one mailbox could sign in as another's owner.
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# The rule in words, for the messages that refuse an email as another's.
RULE_WORDS = "in Unicode NFC, ignoring the case of the letters A to Z only"


def email_key(email):
    """The form under which two emails are the same user: NFC, then the letters A to Z lowercased, nothing
    else.

    Stored in users.email_key, whose unique index is the database's rule; every
    command, page and sign-in that stores or looks up an email goes through here.
    NFC comes first so that a decomposed letter is the same as its composed form
    (and the Kelvin sign is K). Lowercasing a letter can let it compose with the
    mark after it (W followed by a ring above has no composed capital, w has), hence
    the second pass.
    """
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", email).translate(ASCII_LOWER))


def email_domain(email):
    """The domain of an email under the same rule, without a trailing dot: for allowed-domain lists."""
    return email_key(email).rpartition("@")[2].rstrip(".")
