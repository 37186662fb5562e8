"""The provider protocol: one request shape in, one page shape out, whatever upstream answers it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from brave_search_mcp.models.envelopes import Section, WarningItem
from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.models.sites import AppliedAs, SiteFilter

__all__ = ["Provider", "ProviderPage", "SafeSearch", "SearchRequest", "SearchType", "SearchTypeFailure"]

SafeSearch = Literal["off", "moderate", "strict"]


class SearchTypeFailure(Exception):
    """Marks a failure of one search type only (say, a metasearch instance whose web engines are blocked while its
    news engines answer): the fallback chain pauses that search type of the provider, not the whole provider."""


@dataclass(frozen=True)
class SearchRequest:
    """What every provider gets, already validated by the params layer, so providers only translate it."""

    query: str  # the caller's, cleaned but not cut to Brave's limits (Brave's own form is in ``native``)
    search_type: SearchType
    count: int
    offset: int  # Brave-style page index (0-based): skip offset * count results; asked for images too
    country: str | None = None
    language: str | None = None  # a Brave search_lang code (providers map it to their own)
    safe_search: SafeSearch | None = None  # as the caller asked; None = the provider applies Brave's default
    freshness: str | None = None  # pd/pw/pm/py or "YYYY-MM-DDtoYYYY-MM-DD"
    brave_options: tuple[str, ...] = ()  # Brave-only options the caller set: other providers say they were not sent
    result_filter: tuple[str, ...] | None = None  # the sections the caller named (web), as given: each provider judges
    # what the caller gave where Brave's rules dropped it (a country or language Brave lacks): others judge it
    asked_country: str | None = None
    asked_language: str | None = None
    use_cache: bool = True  # False: debug's disable_cache, every provider asks its upstream afresh
    sites: SiteFilter | None = None  # results only from / never from these sites (each provider compiles it)
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
    offset: int | None = None  # the page index this provider served, where Brave's rules would have used another
    request_url: str | None = None  # what was asked, for debug output (no credential in it)
    sites_as: AppliedAs | None = None  # how the request's site filter reached the upstream
    named: tuple[str, ...] | None = None  # the sections result_filter names that this provider has (None: all)
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
