"""How a refusal names its fields: marshmallow's nested messages as {field: "text"}."""


def flatten(messages, prefix=""):
    """Turns marshmallow's nested message lists into {field: "text"}."""
    if isinstance(messages, (list, tuple)):
        if all(isinstance(m, str) for m in messages):
            return {prefix or "_body": " ".join(messages)}
        out = {}
        for index, item in enumerate(messages):
            out.update(flatten(item, f"{prefix}.{index}" if prefix else str(index)))
        return out
    if isinstance(messages, dict):
        out = {}
        for key, value in messages.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix or "_body": str(messages)}
