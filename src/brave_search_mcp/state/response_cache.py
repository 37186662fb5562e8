"""A bounded TTL+LRU cache of good answers with single-flight, so repeated questions cost no quota.

Keys are built from the *normalized* request, so two agent calls that differ only in query case,
whitespace or list order share an entry. Identical concurrent requests share one upstream call:
followers wait for the leader and get its value, or each its own copy of its exception (callers add to the
error they raise: attempts, pages, warnings; one caller's additions never show in another's answer). If the
leader's own caller goes away (cancellation), the followers are not hurt: one of them takes over and fetches.
Errors are never cached. Answers to freshness-filtered requests are kept at most a minute.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast
from urllib.parse import unquote_plus, urlencode

import anyio
from cachetools import TLRUCache

from brave_search_mcp.clock import Clock

V = TypeVar("V")

FRESHNESS_TTL_SECONDS = 60.0
# Parameters whose value is a comma-separated list where order and repeats carry no meaning.
COMMA_LIST_PARAMS: frozenset[str] = frozenset({"result_filter"})
# How many times a follower may take over from cancelled leaders before it fetches on its own.
_MAX_TAKEOVERS = 8


def _normalize_pair(name: str, value: str) -> tuple[str, str]:
    if name == "q":
        return name, " ".join(value.casefold().split())
    if name in COMMA_LIST_PARAMS:
        items = sorted({part.strip() for part in value.split(",") if part.strip()})
        return name, ",".join(items)
    return name, value


def make_key(endpoint: str, params: Sequence[tuple[str, str]]) -> str:
    """Build the cache key of a request so that equivalent requests (case, spacing, list order) share it."""
    pairs = sorted(_normalize_pair(str(name), str(value)) for name, value in params)
    return f"{endpoint}?{urlencode(pairs)}"


def is_freshness_filtered(key: str) -> bool:
    """Whether the request behind ``key`` filters by page age (its answer goes stale fast).

    Reads the names as ``parse_qsl`` does (``+`` and %-escapes decoded) without decoding every value: it runs
    twice on every cache miss.
    """
    _, _, query = key.partition("?")
    for pair in query.split("&"):
        name = pair.partition("=")[0]
        if name == "freshness" or (("%" in name or "+" in name) and unquote_plus(name) == "freshness"):
            return True
    return False


@dataclass(frozen=True)
class _Entry(Generic[V]):
    value: V
    ttl: float


class _Flight(Generic[V]):
    """One upstream call in progress that identical requests may join."""

    __slots__ = ("done", "error", "ok", "value")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.ok = False
        self.value: V | None = None
        self.error: Exception | None = None


def _own_copy(error: Exception) -> Exception:
    """A copy of ``error`` a caller may change freely: its attributes' dicts, lists and sets are copies too (the
    ``details`` and ``warnings`` callers add to); its message, cause and the leader's traceback are kept."""
    clone = type(error).__new__(type(error), *error.args)
    clone.__dict__.update({name: _copied(value) for name, value in vars(error).items()})
    clone.__cause__, clone.__suppress_context__ = error.__cause__, error.__suppress_context__
    return clone.with_traceback(error.__traceback__)


def _copied(value: object) -> object:
    return value.copy() if isinstance(value, dict | list | set) else value


def _entry_expiry(_key: str, entry: _Entry[Any], now: float) -> float:
    return now + entry.ttl


class ResponseCache(Generic[V]):
    """TTL+LRU store of successful answers keyed by ``make_key``, with single-flight fetching."""

    def __init__(self, max_entries: int, ttl: float, *, clock: Clock) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must not be negative, got {max_entries!r}")
        if not ttl >= 0:
            raise ValueError(f"ttl must not be negative, got {ttl!r}")
        self._max_entries = max_entries
        self._ttl = float(ttl)
        self._clock = clock
        self._store: TLRUCache[str, _Entry[V]] | None = None
        if max_entries > 0 and ttl > 0:
            self._store = TLRUCache(maxsize=max_entries, ttu=_entry_expiry, timer=clock)
        self._inflight: dict[str, _Flight[V]] = {}
        self._hits = 0
        self._misses = 0
        self._shared = 0

    @property
    def entries(self) -> int:
        """Live (unexpired) entries stored now."""
        if self._store is None:
            return 0
        self._store.expire()
        return len(self._store)

    def stats(self) -> CacheStats:
        """The figures the status tool shows: size, bounds, and how calls were answered."""
        return CacheStats(self.entries, self._max_entries, self._ttl, self._hits, self._misses, self._shared)

    def clear(self) -> None:
        """Forget every stored entry (in-flight calls are not affected)."""
        if self._store is not None:
            self._store.clear()

    async def get_or_fetch(
        self,
        key: str,
        fetch: Callable[[], Awaitable[V]],
        *,
        ttl: float | None = None,
        bypass: bool = False,
    ) -> tuple[V, bool, bool]:
        """Return ``(value, was_cached_hit, was_shared_inflight)``, fetching at most once for concurrent twins."""
        if bypass:
            return await fetch(), False, False
        for _ in range(_MAX_TAKEOVERS):
            entry = self._lookup(key)
            if entry is not None:
                self._hits += 1
                return entry.value, True, False
            flight = self._inflight.get(key)
            if flight is None:
                return await self._lead(key, fetch, ttl)
            await flight.done.wait()
            if flight.ok:
                self._shared += 1
                return cast("V", flight.value), False, True
            if flight.error is not None:
                raise _own_copy(flight.error)
            # The leader was cancelled: loop, and the first follower to wake takes over.
        self._misses += 1
        value = await fetch()
        self._put(key, value, ttl)
        return value, False, False

    async def _lead(self, key: str, fetch: Callable[[], Awaitable[V]], ttl: float | None) -> tuple[V, bool, bool]:
        flight: _Flight[V] = _Flight()
        self._inflight[key] = flight
        self._misses += 1
        try:
            value = await fetch()
            flight.value = value
            flight.ok = True
            self._put(key, value, ttl)
        except Exception as exc:
            flight.error = _own_copy(exc)  # kept as raised: this caller adds to ``exc`` before the followers wake
            raise
        finally:
            # Anything else (cancellation) leaves ok False and error None: followers take over.
            if self._inflight.get(key) is flight:
                del self._inflight[key]
            flight.done.set()
        return value, False, False

    def _lookup(self, key: str) -> _Entry[V] | None:
        if self._store is None:
            return None
        return self._store.get(key)

    def _put(self, key: str, value: V, ttl: float | None) -> None:
        if self._store is None:
            return
        lifetime = self._ttl if ttl is None else ttl
        if is_freshness_filtered(key):
            lifetime = min(lifetime, FRESHNESS_TTL_SECONDS)
        if lifetime > 0:
            self._store[key] = _Entry(value, lifetime)


@dataclass(frozen=True)
class CacheStats:
    """Cache figures for the status tool."""

    entries: int
    max_entries: int
    ttl_seconds: float
    hits: int
    misses: int
    shared: int  # callers served by another caller's in-flight request
