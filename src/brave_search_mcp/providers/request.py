"""The provider-neutral request of one web search: what Brave's params layer validated, plus what the caller
asked that only Brave's own rules changed, so each provider applies its own rules to the caller's intent."""

from __future__ import annotations

from brave_search_mcp.brave.facts import MAX_OFFSET
from brave_search_mcp.brave.params import PreparedSearch
from brave_search_mcp.models.inputs import WebSearchArgs
from brave_search_mcp.providers.protocol import SearchRequest

__all__ = ["search_request"]

# Brave parameters a caller may set that no other provider has: (name sent to Brave, name in the tool).
_BRAVE_ONLY: tuple[tuple[str, str], ...] = (
    ("goggles", "goggles"),
    ("result_filter", "result_filter"),
    ("extra_snippets", "extra_snippets"),
    ("units", "units"),
    ("spellcheck", "spellcheck"),
    ("ui_lang", "ui_language"),
)


def search_request(prepared: PreparedSearch, args: WebSearchArgs) -> SearchRequest:
    """The request every provider gets (Brave keeps its own prepared form in ``native``).

    Brave ignores ``offset`` for images and sends image ``moderate`` as ``strict``; another provider gets
    what the caller asked (offset capped to the same 0-9) and decides for itself.
    """
    sent = dict(prepared.params)
    offset = prepared.offset
    if prepared.search_type == "images" and args.offset is not None:
        offset = min(max(args.offset, 0), MAX_OFFSET)
    return SearchRequest(
        query=prepared.query,
        search_type=prepared.search_type,
        count=prepared.requested,
        offset=offset,
        country=sent.get("country"),
        language=sent.get("search_lang"),
        safe_search=args.safe_search,
        freshness=sent.get("freshness"),
        brave_options=tuple(name for param, name in _BRAVE_ONLY if param in sent),
        native=prepared,
    )
