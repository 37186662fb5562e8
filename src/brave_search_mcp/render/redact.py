"""Key scrubbing of JSON-like values: the last guard that keeps an API key out of every envelope."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def contains(value: Any, secret: str) -> bool:
    """Whether any string in a JSON-like value (keys included) holds ``secret``; iterative, so any depth."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if secret in item:
                return True
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def redact(value: Any, secret: str, replacement: str) -> Any:
    """A copy of a JSON-like value with ``secret`` replaced in every string, keys included; any depth."""

    def scrub(item: Any) -> Any:
        return item.replace(secret, replacement) if isinstance(item, str) else item

    if not isinstance(value, dict | list):
        return scrub(value)
    root: dict[Any, Any] | list[Any] = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in pairs:
            child: Any = item
            if isinstance(item, dict | list):
                child = {} if isinstance(item, dict) else []
                stack.append((item, child))
            else:
                child = scrub(item)
            if isinstance(target, dict):
                target[scrub(key)] = child
            else:
                target.append(child)
    return root
