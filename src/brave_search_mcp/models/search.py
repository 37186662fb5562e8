"""The v1 envelope of brave_web_search: sections of results, the call's meta and optional debug data."""

from __future__ import annotations

from brave_search_mcp.models.envelopes import CallMeta, Envelope, Section, ToolEnvelope
from brave_search_mcp.models.inputs import SearchType
from brave_search_mcp.models.sites import SiteFilterMeta


class SearchMeta(CallMeta):
    """Facts about how a search was served."""

    query: str
    search_type: SearchType
    requested: int
    returned: int
    offset: int
    has_more: bool
    cached: bool = False
    attempts: int = 0
    altered_query: str | None = None
    site_filter: SiteFilterMeta | None = None  # sites / exclude_sites: as applied upstream, and what was dropped here


class DebugData(Envelope):
    """Only with ``debug: true``; capped at 64 KiB of raw payload."""

    request_url: str | None = None
    raw_payload: str | None = None
    raw_payload_truncated: bool | None = None
    raw_payload_original_bytes: int | None = None
    cache_bypassed: bool = False
    throttle_bypassed: bool = False


class SearchEnvelope(ToolEnvelope):
    """Success envelope of ``brave_web_search``."""

    summary: str
    sections: list[Section]
    summarizer_key: str | None = None
    meta: SearchMeta
    debug: DebugData | None = None
