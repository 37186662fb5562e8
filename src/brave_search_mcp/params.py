"""Turn tool arguments into exactly what Brave accepts, with warnings for anything changed.

CONTRACT STUB — the types and signatures below are fixed; the bodies are being written.
"""

from __future__ import annotations

from dataclasses import dataclass

from .client import Endpoint
from .config import Settings
from .models import SafeSearch, SearchType, WarningItem, WebSearchArgs


@dataclass(frozen=True)
class TypeRules:
    """What one search type's endpoint accepts (reference/brave-api.md §3-4)."""

    search_type: SearchType
    endpoint: Endpoint
    max_count: int
    default_count: int
    has_offset: bool
    safe_search_values: tuple[SafeSearch, ...]
    default_safe_search: SafeSearch
    supported: frozenset[str]  # canonical WebSearchArgs field names this type honours


@dataclass(frozen=True)
class PreparedSearch:
    """A validated, normalized request ready for the client."""

    search_type: SearchType
    endpoint: Endpoint
    params: tuple[tuple[str, str], ...]  # exactly what is sent; repeated keys allowed (goggles)
    query: str  # as sent
    requested: int  # count as sent
    offset: int  # effective page index (0 for images)
    max_lines: int  # effective, clamped
    max_bytes: int  # effective, clamped
    text_decorations: bool  # render Brave's highlights as **bold**
    summary: bool  # a summarizer key was asked for
    debug: bool
    include_raw_payload: bool
    include_request_url: bool
    use_cache: bool
    throttle: bool
    warnings: tuple[WarningItem, ...]


def rules_for(search_type: SearchType) -> TypeRules:
    """The endpoint rules of one search type."""
    raise NotImplementedError


def prepare_search(args: WebSearchArgs, settings: Settings) -> PreparedSearch:
    """Normalize and soft-validate; raise ``InvalidArgument`` only for hard errors."""
    raise NotImplementedError
