"""JSON as the service reads it: exact decimals, no NaN or Infinity, no key given twice, bounded depth."""
import json
from decimal import Decimal

MAX_JSON_DEPTH = 32


def reject_constant(name):
    raise ValueError(f"{name} is not allowed")


def reject_duplicate_keys(pairs):
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("duplicate key in object")
    return obj


def json_depth(value):
    """The nesting depth of parsed JSON, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def loads(text):
    """Parses JSON text with the service's rules: ValueError when it breaks one, RecursionError when nested too
    deep for the parser, decimal.InvalidOperation for a number whose exponent is out of range."""
    return json.loads(text, parse_float=Decimal, parse_int=Decimal, parse_constant=reject_constant,
                      object_pairs_hook=reject_duplicate_keys)
