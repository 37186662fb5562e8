"""The Redis backend's key names, in one place: every script is handed the keys it touches (``KEYS``), never builds
one, and the keys of one script share a hash slot, so a Redis Cluster runs them.

Two hash tags: ``{brave-search-mcp:state}`` for the limiter's numbers and the month's counts (a booking reads a
count and the server's epoch together), ``{brave-search-mcp:cache}`` for the cached values, their leases and the
cache's bookkeeping (a store evicts by a least-recently-used order over all of them). A record is one key, read and
written alone: it keeps its old name. Versions before the hash tags kept the rest under ``brave-search-mcp:`` (see
docs/http.md for moving a month's count over).
"""

from __future__ import annotations

STATE = "{brave-search-mcp:state}:"
CACHE = "{brave-search-mcp:cache}:"
EPOCH_KEY = f"{STATE}epoch"  # the server's random id (``Store.epoch``)
# The cache's bookkeeping: last use and expiry of each entry (sorted sets), its size (a hash), the bytes in all.
CACHE_KEYS = tuple(f"{CACHE}{name}" for name in ("used", "expires", "sizes", "bytes"))
CACHE_VALUE_PREFIX = f"{CACHE}value:"


def plan_key(name: str) -> str:
    """One upstream family's stored plan (a hash)."""
    return f"{STATE}plan:{name}"


def starts_key(name: str) -> str:
    """One upstream family's recent starts (a sorted set)."""
    return f"{STATE}starts:{name}"


def count_key(counter: str) -> str:
    """A monthly request count."""
    return f"{STATE}count:{counter}"


def merged_key(token: str) -> str:
    """The marker of an outage batch already added (``owed``)."""
    return f"{STATE}merged:{token}"


def restored_key(counter: str) -> str:
    """The base already put back into a counter of a server that lost it (``owed``)."""
    return f"{STATE}restored:{counter}"


def peers_key() -> str:
    """The processes that reserve starts here, each scored by its last beat (a sorted set; ``redis_peers``)."""
    return f"{STATE}peers"


def once_key(token: str) -> str:
    """The reply of a script call already run (``redis_scripts.once``): a retried call returns it, never runs twice."""
    return f"{STATE}once:{token}"


def cache_key(member: str) -> str:
    """A cached value."""
    return f"{CACHE_VALUE_PREFIX}{member}"


def lease_key(member: str) -> str:
    """The single-flight lease of a cached value."""
    return f"{CACHE}lease:{member}"


def flight_end_key(member: str, owner: str) -> str:
    """The list the owner of a cached value's fetch pushes to once it is stored (``redis_flights``): in the cache's
    slot, beside the lease that names the owner."""
    return f"{CACHE}done:{owner}:{member}"


def record_key(key: str) -> str:
    """A small JSON record (one key, in any slot)."""
    return f"brave-search-mcp:rec:{key}"
