"""Brave JSON to sections, and envelopes to the compact text the model reads, within byte/line bounds.

CONTRACT STUB — the types and signatures below are fixed; the bodies are being written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .models import ErrorEnvelope, SearchEnvelope, SearchType, Section, WarningItem


@dataclass
class ParsedAnswer:
    """Sections extracted from one Brave answer, before truncation."""

    sections: list[Section]
    warnings: list[WarningItem] = field(default_factory=list)
    altered_query: str | None = None
    more_available: bool | None = None
    summarizer_key: str | None = None


def parse_answer(search_type: SearchType, data: Mapping[str, Any], *, text_decorations: bool = False) -> ParsedAnswer:
    """Extract clean, deduplicated sections; raise ``ParseError`` if ``data`` is not Brave's shape."""
    raise NotImplementedError


def summary_line(envelope: SearchEnvelope) -> str:
    """One sentence: how many results of what, for which query, and whether more exist."""
    raise NotImplementedError


def fit_to_limits(envelope: SearchEnvelope, max_lines: int, max_bytes: int) -> tuple[SearchEnvelope, str]:
    """Render the text; drop whole trailing results until it fits; keep structured and text in agreement."""
    raise NotImplementedError


def render_error_text(envelope: ErrorEnvelope) -> str:
    """One readable paragraph: code, message, what to do."""
    raise NotImplementedError
