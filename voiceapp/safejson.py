"""JSON from clients, with a bound on nesting.

`json.loads` recurses once per level, so a few kilobytes of ``[[[[…`` raise
`RecursionError` deep inside whatever called it, and code that walks the result
recursively can fail the same way later. `loads` turns both into one
`JSONInputError` with a message a client can act on, and rejects anything nested
deeper than `MAX_DEPTH`, which no legitimate request to this product needs."""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 32


class JSONInputError(ValueError):
    """The text is not JSON, or is nested too deep."""


def depth(value: Any) -> int:
    """How deeply `value` nests lists and objects (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        stack.extend((child, level) for child in children if isinstance(child, (dict, list)))
    return deepest


def check_depth(value: Any, max_depth: int = MAX_DEPTH) -> None:
    if depth(value) > max_depth:
        raise JSONInputError(f"JSON is nested more than {max_depth} levels deep.")


def loads(raw: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """Parse `raw`, or raise `JSONInputError` saying what is wrong with it."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise JSONInputError(f"JSON is nested more than {max_depth} levels deep.") from None
    except (ValueError, TypeError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise JSONInputError(f"Not valid JSON: {exc}") from None
    check_depth(value, max_depth)
    return value
