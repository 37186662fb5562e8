"""The v1 envelope of brave_local_search: places, and which path found them."""

from __future__ import annotations

from typing import Literal

from brave_search_mcp.models.envelopes import CallMeta, Section, ToolEnvelope

LocalPath = Literal["place_search", "web_locations", "web_fallback"]


class LocalMeta(CallMeta):
    """How the places were found: which path, for what, and how many."""

    query: str
    path: LocalPath
    location: str | None = None
    requested: int
    returned: int


class LocalEnvelope(ToolEnvelope):
    """Success envelope of ``brave_local_search``: a "places" section, or "web" when it fell back."""

    summary: str
    sections: list[Section]
    meta: LocalMeta
