"""The provider-neutral request of one web search: what Brave's params layer validated, plus what the caller
asked that only Brave's own rules changed, so each provider applies its own rules to the caller's intent."""

from __future__ import annotations

from brave_search_mcp.brave.facts import MAX_OFFSET
from brave_search_mcp.brave.params import PreparedSearch
from brave_search_mcp.models.inputs import WebSearchArgs
from brave_search_mcp.providers.protocol import SearchRequest
from brave_search_mcp.render.text import clean_query

__all__ = ["BRAVE_ONLY", "search_request"]

# Brave parameters a caller may set that no other provider has (their names in the tool).
BRAVE_ONLY = ("goggles", "extra_snippets", "units", "spellcheck", "ui_language")


def search_request(prepared: PreparedSearch, args: WebSearchArgs) -> SearchRequest:
    """The request every provider gets (Brave keeps its own prepared form in ``native``).

    Brave's own limits and lists shape only Brave's request: another provider gets the caller's whole query
    (cleaned, not cut to Brave's 400 characters / 50 words), the country and language Brave dropped, the offset
    the caller asked for images (capped to the same 0-9), what the caller asked of safe search, and the names of
    the Brave-only options the caller set; it decides for itself.
    """
    sent = dict(prepared.params)
    offset = prepared.offset
    if prepared.search_type == "images" and args.offset is not None:
        offset = min(max(args.offset, 0), MAX_OFFSET)
    country, language = sent.get("country"), sent.get("search_lang")
    named = None
    if prepared.search_type == "web" and args.result_filter:  # Brave's rules: web only; each provider judges entries
        named = tuple(dict.fromkeys(entry.strip().lower() for entry in args.result_filter if entry.strip())) or None
    return SearchRequest(
        query=clean_query(args.query),
        search_type=prepared.search_type,
        count=prepared.requested,
        offset=offset,
        country=country,
        language=language,
        safe_search=args.safe_search,
        freshness=sent.get("freshness"),
        brave_options=tuple(name for name in BRAVE_ONLY if getattr(args, name) not in (None, [])),
        result_filter=named,
        asked_country=args.country if country is None else None,
        asked_language=args.search_language if language is None else None,
        use_cache=prepared.use_cache,
        sites=prepared.sites,
        native=prepared,
    )
