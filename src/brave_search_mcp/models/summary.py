"""The v1 envelope of brave_summarizer: a cited summary and its references."""

from __future__ import annotations

from typing import Any

from pydantic import (
    Field,
)

from brave_search_mcp.models.envelopes import CallMeta, Envelope, ToolEnvelope


class Reference(Envelope):
    """A numbered source cited by a summary."""

    number: int
    url: str
    title: str | None = None


class SummaryMeta(CallMeta):
    """Facts about how a summary was made."""

    query: str | None = None
    polls: int = 0


class SummaryEnvelope(ToolEnvelope):
    """Success envelope of ``brave_summarizer``."""

    summary_text: str
    title: str | None = None
    references: list[Reference] = Field(default_factory=list)
    followups: list[str] = Field(default_factory=list)
    enrichments: dict[str, Any] | None = None
    entities_infos: dict[str, Any] | None = None
    meta: SummaryMeta
