"""Reuse of work derived from one upstream body: a cache hit re-parses and re-renders nothing.

Keyed explicitly by the body's identity (``BraveResponse.body_id``) and the options that shape the
result, bounded like the response cache. Values are shared read-only; callers copy what they change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from cachetools import LRUCache

from brave_search_mcp.brave.results import ParsedAnswer
from brave_search_mcp.models.search import SearchEnvelope
from brave_search_mcp.models.sites import SiteFilter

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True)
class ParseKey:
    """What a parsed page depends on: which body, parsed as which search type, with or without highlights."""

    body_id: int
    search_type: str
    decorations: bool


@dataclass(frozen=True)
class FitKey:
    """What a fitted page (envelope + text) depends on beyond its parse."""

    parse: ParseKey
    query: str
    offset: int
    requested: int
    max_lines: int
    max_bytes: int
    has_more: bool
    warnings: tuple[tuple[str, str], ...]
    sections: tuple[str, ...] | None  # the sections result_filter named (one body may serve several: a summary)
    sites: SiteFilter | None = None  # the site filter its results passed


class _Memo(Generic[K, V]):
    """A bounded memo; ``body_id`` 0 (a body that was never cached) is never stored."""

    def __init__(self, max_entries: int) -> None:
        self._entries: LRUCache[K, V] = LRUCache(maxsize=max(1, max_entries))

    def get_or_build(self, key: K, build: Callable[[], V], *, store: bool) -> V:
        found = self._entries.get(key)
        if found is None:
            found = build()
            if store:
                self._entries[key] = found
        return found


class PageMemo:
    """Parsed and fitted pages per upstream body, for cache hits."""

    def __init__(self, max_entries: int) -> None:
        self._parsed: _Memo[ParseKey, ParsedAnswer] = _Memo(max_entries)
        self._fitted: _Memo[FitKey, tuple[SearchEnvelope, str]] = _Memo(max_entries)

    def parsed(self, key: ParseKey, build: Callable[[], ParsedAnswer]) -> ParsedAnswer:
        """The parse of this body with these options, built once."""
        return self._parsed.get_or_build(key, build, store=key.body_id != 0)

    def fitted(self, key: FitKey, build: Callable[[], tuple[SearchEnvelope, str]]) -> tuple[SearchEnvelope, str]:
        """The fitted page of this parse with these limits, built once."""
        return self._fitted.get_or_build(key, build, store=key.parse.body_id != 0)
