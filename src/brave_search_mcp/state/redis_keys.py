"""The Redis backend's key names, in one place: the scripts take every key they touch from here (through KEYS)."""

from __future__ import annotations

PREFIX = "brave-search-mcp:"
EPOCH_KEY = f"{PREFIX}epoch"  # the server's random id (``Store.epoch``)
# The cache's bookkeeping: last use and expiry of each entry (sorted sets), its size (a hash), the bytes in all.
CACHE_KEYS = tuple(f"{PREFIX}{name}" for name in ("cache-used", "cache-expires", "cache-sizes", "cache-bytes"))
CACHE_VALUE_PREFIX = f"{PREFIX}cache:"


def plan_key(name: str) -> str:
    """One upstream family's stored plan (a hash)."""
    return f"{PREFIX}plan:{name}"


def starts_key(name: str) -> str:
    """One upstream family's recent starts (a sorted set)."""
    return f"{PREFIX}starts:{name}"


def count_key(counter: str) -> str:
    """A monthly request count."""
    return f"{PREFIX}count:{counter}"


def merged_key(token: str) -> str:
    """The marker of an outage batch already added (``owed``)."""
    return f"{PREFIX}merged:{token}"


def restored_key(counter: str) -> str:
    """The base already put back into a counter of a server that lost it (``owed``)."""
    return f"{PREFIX}restored:{counter}"


def cache_key(member: str) -> str:
    """A cached value."""
    return f"{CACHE_VALUE_PREFIX}{member}"


def lease_key(member: str) -> str:
    """The single-flight lease of a cached value."""
    return f"{PREFIX}lease:{member}"


def record_key(key: str) -> str:
    """A small JSON record."""
    return f"{PREFIX}rec:{key}"
