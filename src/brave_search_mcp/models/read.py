"""The v1 envelope of read_url: one part of a page's main content, where it came from, and how to get the rest."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from brave_search_mcp.models.envelopes import CallMeta, Envelope, ToolEnvelope


class PageHeading(Envelope):
    """One entry of the page's outline: its level and text (pass the text as ``section`` to read just that part)."""

    level: int
    text: str


class ReadMeta(CallMeta):
    """How the page was served: the URL asked for, whether the shared cache answered."""

    provider: str = "web"
    requested_url: str
    cached: bool = False
    attempts: int = 0


class ReadEnvelope(ToolEnvelope):
    """One part of a read page (``content``), within ``max_chars``; ``next_start_char`` when more remains."""

    title: str | None = None
    url: str  # the final URL, after redirects
    site: str | None = None
    published: str | None = None
    content_type: str
    format: Literal["markdown", "text"]
    section: str | None = None
    start_char: int
    end_char: int
    total_chars: int
    next_start_char: int | None = None
    headings: list[PageHeading] = Field(
        default_factory=list
    )  # the page's outline (the text shows it first when the page was cut)
    content: str
    meta: ReadMeta
