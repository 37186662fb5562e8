"""The provider protocol: one request shape in, one page shape out, whatever upstream answers it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from brave_search_mcp.models.envelopes import Section, WarningItem
from brave_search_mcp.models.inputs import SearchType

__all__ = ["Provider", "ProviderPage", "SafeSearch", "SearchRequest", "SearchType"]

SafeSearch = Literal["off", "moderate", "strict"]


@dataclass(frozen=True)
class SearchRequest:
    """What every provider gets, already validated by the params layer, so providers only translate it."""

    query: str
    search_type: SearchType
    count: int
    offset: int  # Brave-style page index (0-based): skip offset * count results; asked for images too
    country: str | None = None
    language: str | None = None  # a Brave search_lang code (providers map it to their own)
    safe_search: SafeSearch | None = None  # as the caller asked; None = the provider applies Brave's default
    freshness: str | None = None  # pd/pw/pm/py or "YYYY-MM-DDtoYYYY-MM-DD"
    brave_options: tuple[str, ...] = ()  # Brave-only options the caller set: other providers say they were not sent
    native: Any = field(default=None, compare=False)  # the Brave params layer's own prepared form, for Brave


@dataclass
class ProviderPage:
    """One provider's answer mapped onto our sections, so the envelope does not care who answered."""

    provider: str
    sections: list[Section]
    warnings: list[WarningItem] = field(default_factory=list)
    more_available: bool | None = None
    cached: bool = False
    attempts: int = 1
    # codes of the request's own warnings (Brave's rules) that do not hold for this provider's answer
    superseded: frozenset[str] = frozenset()
    native: Any = None  # what the provider's own client returned (Brave: parsed answer + response), for the envelope


class Provider(Protocol):
    """A search backend: the fallback chain needs nothing more than this."""

    name: str

    def supports(self, search_type: SearchType) -> bool:
        """Whether this provider can serve the search type at all (the chain skips it otherwise)."""
        ...

    async def search(self, request: SearchRequest, *, deadline: float | None = None) -> ProviderPage:
        """Run one search; ``deadline`` is an absolute time on the provider's clock; raise BraveSearchError."""
        ...

    async def aclose(self) -> None:
        """Release connections; the composition root calls it once at shutdown."""
        ...
