"""The v1 envelopes of read_url: one part of a page's main content, where it came from, and how to get the rest;
with ``urls``, one section per page (its part, or its own error) within one shared budget."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from brave_search_mcp.models.envelopes import CallMeta, Envelope, ErrorBody, ToolEnvelope, WarningItem


class PageHeading(Envelope):
    """One entry of the page's outline: its level and text (pass the text as ``section`` to read just that part)."""

    level: int
    text: str


class PageLink(Envelope):
    """One of the page's links (asked for with ``links``): its text and absolute URL."""

    text: str
    url: str


class PagePart(Envelope):
    """One part of a read page (``content``), within its budget; ``next_start_char`` when more remains."""

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
    rendered: bool = False  # drawn in a headless browser first (the static HTML was an app shell)
    headings: list[PageHeading] = Field(
        default_factory=list
    )  # the page's outline (the text shows it first when the page was cut)
    content: str
    links: list[PageLink] | None = None  # only when asked for, capped (``links_total`` counts them all)
    links_total: int | None = None


class ReadMeta(CallMeta):
    """How the page was served: the URL asked for, whether the shared cache answered."""

    provider: str = "web"
    requested_url: str
    cached: bool = False
    attempts: int = 0


class ReadEnvelope(ToolEnvelope, PagePart):
    """read_url with ``url``: one part of the page."""

    meta: ReadMeta


class PageSection(PagePart):
    """One page of a several-page read that answered: its part, how it was served, its own warnings."""

    requested_url: str
    cached: bool = False
    warnings: list[WarningItem] = Field(default_factory=list)


class PageFailure(Envelope):
    """One page of a several-page read that failed: the URL asked for and its error (the others still answer)."""

    requested_url: str
    error: ErrorBody


class ReadPagesMeta(CallMeta):
    """How a several-page read went: the budget shared, pages read and failed, requests made."""

    provider: str = "web"
    max_chars: int
    read: int
    failed: int
    cached: int = 0  # pages the shared cache answered
    attempts: int = 0


class ReadPagesEnvelope(ToolEnvelope):
    """read_url with ``urls``: one section per URL, in the order asked, within one ``max_chars`` budget."""

    pages: list[PageSection | PageFailure]
    meta: ReadPagesMeta
