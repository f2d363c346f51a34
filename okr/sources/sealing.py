"""Sealing connections' secrets: Fernet (AES-128-CBC with HMAC-SHA256) under a key kept outside the database.

The key is OKR_SECRET_KEY when set, else the key file beside the database (DATABASE.key, mode 0600), made on
first use. A database copied or restored where its key is not opens all the same: its connections' secrets
then do not unseal (Unsealable), and those connections need their secret again. Flask-free.
"""
import os

from cryptography.fernet import Fernet, InvalidToken


class Unsealable(Exception):
    """A sealed secret this server's key does not open: the connection needs its secret again."""


class BadKey(ValueError):
    """OKR_SECRET_KEY, or the key file, is not a Fernet key."""


def key_path(database):
    return os.path.realpath(database) + ".key"


def load_key(config, make=True):
    """The server's Fernet key (bytes): OKR_SECRET_KEY, else the key file, made when missing and make is true;
    None when there is none and make is false."""
    given = config.get("SECRET_KEY")
    if given:
        return checked(given.strip().encode("ascii", "replace"), "OKR_SECRET_KEY")
    path = key_path(config["DATABASE"])
    try:
        with open(path, "rb") as file:
            return checked(file.read().strip(), path)
    except FileNotFoundError:
        if not make:
            return None
    key = Fernet.generate_key()
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it meanwhile: theirs is the key
        return load_key(config, make=False)
    with os.fdopen(descriptor, "wb") as file:
        file.write(key + b"\n")
        file.flush()
        os.fsync(file.fileno())
    return key


def checked(key, where):
    try:
        Fernet(key)
    except (ValueError, TypeError):
        raise BadKey(f"{where} is not a Fernet key (44 characters of url-safe base64, as "
                     "cryptography.fernet.Fernet.generate_key() makes one)") from None
    return key


def seal(config, secret):
    """secret (text) sealed under the server's key, as text to store."""
    return Fernet(load_key(config)).encrypt(secret.encode("utf-8")).decode("ascii")


def unseal(config, sealed):
    """The secret a sealed text holds; Unsealable when this server's key does not open it."""
    key = load_key(config, make=False)
    if key is None:
        raise Unsealable("this server has no key for it")
    try:
        return Fernet(key).decrypt(sealed.encode("ascii")).decode("utf-8")
    except (InvalidToken, ValueError, UnicodeError):
        raise Unsealable("this server's key does not open it") from None


def opens(config, sealed):
    """Whether this server's key opens a sealed secret (None opens: there is none)."""
    if sealed is None:
        return True
    try:
        unseal(config, sealed)
    except Unsealable:
        return False
    return True
