"""On/off settings: a flag gives a bool, an OKR_* environment variable a word such as 1, on, 0 or off."""

WORDS = {"1": True, "on": True, "true": True, "yes": True, "0": False, "off": False, "false": False, "no": False}


def switch(value, setting):
    """The setting as a bool; ValueError naming the setting for a word that is neither on nor off."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word not in WORDS:
        raise ValueError(f"{setting} must be on or off (1 or 0), not {value!r}")
    return WORDS[word]
