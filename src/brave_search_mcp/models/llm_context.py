"""The v1 envelope of brave_llm_context: grounding sources within a character budget."""

from __future__ import annotations

from pydantic import Field

from brave_search_mcp.models.envelopes import CallMeta, Envelope, Result, ToolEnvelope
from brave_search_mcp.models.sites import SiteFilterMeta


class ContextSource(Envelope):
    """One page Brave picked for grounding: what it is, how old, and the passages worth reading."""

    title: str
    url: str
    site: str | None = None  # the site, as a reader names it
    age: str | None = None
    published_date: str | None = None  # ISO date when Brave gave one
    snippets: list[str] = Field(default_factory=list)


class LlmContextMeta(CallMeta):
    """How the grounding was served and how much of it fits the caller's character budget."""

    query: str
    sources: int
    places: int
    chars: int  # characters of the text rendering
    max_chars: int
    snippets_dropped: int = 0
    site_filter: SiteFilterMeta | None = None  # sites / exclude_sites: sent as a goggle, and what was dropped here


class LlmContextEnvelope(ToolEnvelope):
    """Success envelope of ``brave_llm_context``: grounding sources, then places (local recall)."""

    summary: str
    sources: list[ContextSource]
    places: list[Result] = Field(default_factory=list)
    meta: LlmContextMeta
