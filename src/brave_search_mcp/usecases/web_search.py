"""brave_web_search: web, news, image or video results, from Brave or the provider chain, fitted to a text budget.

The Brave path goes through the one client (cache, throttle, retry) and parses each upstream body once
(``PageMemo``); with more providers configured, the fallback chain serves the request and says when a
backup answered. Results are numbered across sections and cut to ``max_lines``/``max_bytes`` whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from brave_search_mcp._version import __version__
from brave_search_mcp.brave.client import BraveResponse
from brave_search_mcp.brave.facts import SEARCH_ENDPOINTS
from brave_search_mcp.brave.params import PreparedSearch, prepare_search
from brave_search_mcp.brave.results import ParsedAnswer, parse_answer, pick_sections
from brave_search_mcp.config import DEBUG_PAYLOAD_CAP_BYTES
from brave_search_mcp.models.envelopes import DIRECT_ANSWERS, WarningItem
from brave_search_mcp.models.errors import BraveSearchError, NoResults, WarningCode
from brave_search_mcp.models.inputs import WebSearchArgs
from brave_search_mcp.models.search import DebugData, SearchEnvelope, SearchMeta
from brave_search_mcp.models.sites import AppliedAs
from brave_search_mcp.providers.brave import BraveProvider
from brave_search_mcp.providers.chain import FallbackChain
from brave_search_mcp.providers.protocol import Provider
from brave_search_mcp.providers.request import search_request
from brave_search_mcp.ratelimit.info import rate_limit_meta
from brave_search_mcp.render.compact import fit_to_limits
from brave_search_mcp.usecases.contract import Call, CallFacts, CliShape, Ports, ToolSpec
from brave_search_mcp.usecases.page_memo import FitKey, ParseKey


@dataclass
class _Served:
    """A search answer and who served it (``response`` is Brave's, when Brave answered)."""

    parsed: ParsedAnswer
    provider: str
    warnings: list[WarningItem]
    response: BraveResponse | None
    cached_other: bool = False
    attempts_other: int = 0
    superseded: frozenset[str] = frozenset()  # codes of Brave's request warnings that do not hold for this answer
    offset: int | None = None  # the page index another provider served (None: Brave's own)
    request_url: str | None = None  # what another provider was asked
    sites_as: AppliedAs | None = None  # how the site filter reached the upstream that answered
    named: tuple[str, ...] | None = None  # the sections result_filter names, by the rules of who answered

    @property
    def cached(self) -> bool:
        return self.response.cached if self.response is not None else self.cached_other

    @property
    def attempts(self) -> int:
        return self.response.attempts if self.response is not None else self.attempts_other

    @property
    def body_id(self) -> int:  # 0: never memoised (another provider's page is cached by that provider)
        return self.response.body_id if self.response is not None else 0


async def brave_fetch(
    ports: Ports, prepared: PreparedSearch, deadline: float | None
) -> tuple[ParsedAnswer, BraveResponse]:
    """One Brave search through the client, parsed once per upstream body (a cache hit reuses the parse)."""
    response = await ports.client.get(
        prepared.endpoint,
        prepared.params,
        use_cache=prepared.use_cache,
        throttle=prepared.throttle,
        deadline=deadline,
    )
    parse_key = ParseKey(response.body_id, prepared.search_type, prepared.text_decorations)
    parsed = ports.pages.parsed(
        parse_key,
        lambda: parse_answer(prepared.search_type, response.data, text_decorations=prepared.text_decorations),
    )
    return parsed, response


async def _serve(ports: Ports, prepared: PreparedSearch, args: WebSearchArgs, facts: CallFacts) -> _Served:
    """Brave alone, or the provider chain with its fallbacks; which one answered, and how."""
    if ports.chain is None:
        parsed, response = await brave_fetch(ports, prepared, facts.deadline)
        return _Served(parsed, "brave", [], response, sites_as=prepared.sites_as, named=prepared.sections)
    page = await ports.chain.search(search_request(prepared, args), deadline=facts.deadline)
    if page.provider == "brave":
        parsed, response = page.native
        # the chain put its FALLBACK warnings before Brave's own, which the caller adds from ``parsed``
        warnings = page.warnings[: len(page.warnings) - len(parsed.warnings)]
        return _Served(parsed, "brave", warnings, response, sites_as=prepared.sites_as, named=prepared.sections)
    parsed = ParsedAnswer(sections=page.sections, more_available=page.more_available)
    return _Served(
        parsed, page.provider, page.warnings, None, page.cached, page.attempts, page.superseded, page.offset,
        page.request_url, page.sites_as, page.named,
    )  # fmt: skip


async def run(args: WebSearchArgs, ports: Ports, call: Call) -> tuple[SearchEnvelope, str]:
    """Search one index (Brave, or the provider chain with its fallbacks); the envelope and its compact text."""
    facts, trace_id = call.facts, call.trace_id
    started = ports.clock()
    others = ports.chain.result_sections() if ports.chain is not None else frozenset()
    prepared = prepare_search(args, ports.settings, other_sections=others)
    facts.search_type = prepared.search_type
    warnings = list(prepared.warnings)
    sites = prepared.sites
    try:
        served = await _serve(ports, prepared, args, facts)
    except BraveSearchError as exc:
        if ports.chain is not None:  # the provider that failed judged the request by its own rules
            warnings = [w for w in warnings if w.code not in ports.chain.superseded(exc.provider)]
        if sites is not None and isinstance(exc, NoResults):  # say the filter left nothing
            narrowed = sites.no_results(exc.message.rstrip("."), details=exc.details)
            narrowed.provider = exc.provider
            exc = narrowed
        raise exc.for_call(warnings, search_type=prepared.search_type) from exc.__cause__
    parsed, response = served.parsed, served.response
    dropped = 0
    if sites is not None:  # goggles and operators rank and recall: what still lies outside is dropped here
        kept, dropped = sites.keep_sections(parsed.sections)
        parsed = replace(parsed, sections=kept)
    warnings = [w for w in warnings if w.code not in served.superseded]
    facts.provider = served.provider
    facts.cached, facts.attempts = served.cached, served.attempts
    facts.upstream_status = response.status if response is not None else None
    parse_key = ParseKey(served.body_id, prepared.search_type, prepared.text_decorations)
    warnings.extend(served.warnings)
    warnings.extend(parsed.warnings)
    sections, picked = pick_sections(parsed, limit=prepared.requested, named=served.named)
    warnings.extend(picked)
    returned = sum(len(section.results) for section in sections)
    if returned == 0:
        label = "web" if prepared.search_type == "web" else prepared.search_type
        found = f'No {label} results found for "{prepared.query}"'
        details = {"query": prepared.query, "search_type": prepared.search_type}
        error = NoResults(found + ".", details=details) if sites is None else sites.no_results(found, dropped, details)
        if served.named and any(section.results for section in parsed.sections):
            error = _hidden_by_filter(prepared.query, served.named, parsed, error.details)
        error.provider = served.provider
        raise error.for_call(warnings)
    if prepared.summary and not parsed.summarizer_key:
        warnings.append(_warning(WarningCode.SUMMARY_NOT_AVAILABLE, _no_summary(served.provider)))
    results = sum(len(section.results) for section in sections if section.key not in DIRECT_ANSWERS)  # not answers
    has_more = parsed.more_available if parsed.more_available is not None else results >= prepared.requested
    meta = SearchMeta(
        query=prepared.query,
        search_type=prepared.search_type,
        requested=prepared.requested,
        returned=results,
        offset=prepared.offset if served.offset is None else served.offset,
        has_more=has_more,
        provider=served.provider,
        cached=served.cached,
        attempts=served.attempts,
        duration_ms=round((ports.clock() - started) * 1000),
        trace_id=trace_id,
        server_version=__version__,
        altered_query=parsed.altered_query,
        rate_limit=rate_limit_meta(response.rate_limit or ports.client.last_rate_limit) if response else None,
        site_filter=sites.meta(served.sites_as, dropped) if sites is not None else None,
    )
    # The fitted page depends only on these; a cache hit with the same ones reuses it (read-only).
    fit_key = FitKey(
        parse_key,
        prepared.query,
        prepared.offset,
        prepared.requested,
        prepared.max_lines,
        prepared.max_bytes,
        has_more,
        tuple((w.code, w.message) for w in warnings),
        served.named,
        sites,
    )

    def fit() -> tuple[SearchEnvelope, str]:
        # fit_to_limits writes the summary line of what it keeps: none is needed before
        page = SearchEnvelope(
            summary="", sections=sections, summarizer_key=parsed.summarizer_key, meta=meta, warnings=warnings
        )
        return fit_to_limits(page, prepared.max_lines, prepared.max_bytes)

    page, text = ports.pages.fitted(fit_key, fit)
    per_call: dict[str, Any] = {"cached": meta.cached, "attempts": meta.attempts, "trace_id": trace_id}
    per_call |= {"duration_ms": meta.duration_ms, "rate_limit": meta.rate_limit}
    envelope = page.model_copy(update={"meta": page.meta.model_copy(update=per_call), "warnings": list(page.warnings)})
    if prepared.debug:
        envelope.debug = _debug_data(prepared, response, envelope.warnings, served.request_url)
        text += "\n[debug] " + json.dumps(envelope.debug.dump(), ensure_ascii=False)
    return envelope, text


def _debug_data(
    prepared: PreparedSearch, response: BraveResponse | None, warnings: list[WarningItem], other_url: str | None
) -> DebugData:
    url = response.request_url if response is not None else other_url
    debug = DebugData(
        cache_bypassed=not prepared.use_cache,
        throttle_bypassed=not prepared.throttle,
        request_url=url if prepared.include_request_url else None,
    )
    if prepared.include_raw_payload and response is not None:
        raw = response.raw_body or json.dumps(response.data, ensure_ascii=False).encode()
        debug.raw_payload_original_bytes = len(raw)
        debug.raw_payload_truncated = len(raw) > DEBUG_PAYLOAD_CAP_BYTES
        debug.raw_payload = raw[:DEBUG_PAYLOAD_CAP_BYTES].decode("utf-8", errors="ignore")
        if debug.raw_payload_truncated:
            warnings.append(
                _warning(
                    WarningCode.RAW_PAYLOAD_TRUNCATED,
                    f"raw_payload cut from {len(raw)} to {DEBUG_PAYLOAD_CAP_BYTES} bytes.",
                )
            )
    return debug


def provider_chain(ports: Ports, others: Mapping[str, Provider]) -> FallbackChain | None:
    """The fallback chain the settings name (Brave through this use case's own path); None for Brave alone."""
    settings = ports.settings
    if tuple(settings.providers) == ("brave",):  # Brave alone needs no chain, breaker or fallback
        return None

    async def fetch(prepared: Any, deadline: float | None) -> tuple[Any, Any]:
        return await brave_fetch(ports, prepared, deadline)

    named: dict[str, Provider] = {"brave": BraveProvider(fetch), **others}
    missing = [name for name in settings.providers if name not in named]
    if missing:
        raise ValueError(f"providers {missing} were configured but not built")
    shared = ports.client.shared
    return FallbackChain(
        [named[name] for name in settings.providers],
        threshold=settings.breaker_threshold,
        cooldown=settings.breaker_cooldown_seconds,
        clock=ports.clock,
        records=shared.backend.records if shared else None,
        namespace=shared.namespace if shared else "",
    )


def _hidden_by_filter(query: str, named: tuple[str, ...], parsed: ParsedAnswer, details: dict[str, Any]) -> NoResults:
    """NO_RESULTS when result_filter named only sections that came back empty: the search found results, so
    "rephrase the query" would mislead; the agent should name other sections (or none)."""
    others = [section.key for section in parsed.sections if section.results and section.key not in named]
    return NoResults(
        f'No {", ".join(named)} for "{query}" (result_filter); the search found other sections: {", ".join(others)}.',
        details={
            **details,
            "result_filter": list(named),
            "sections_found": others,
            "what_to_do": "Call again without result_filter, or name one of sections_found in it.",
        },
    )


def _warning(code: WarningCode, message: str) -> WarningItem:
    return WarningItem(code=code.value, message=message)


def _no_summary(provider: str) -> str:
    if provider == "brave":
        return "Brave returned no summarizer key."
    return f"{provider} answered this search; summaries come only from Brave (no summarizer key)."


SPEC = ToolSpec(
    name="brave_web_search",
    title="Brave web search",
    description=(
        "Search the web with Brave: search_type web (default), news, images or videos. Returns numbered "
        "results (title, URL, snippet, age); structuredContent holds the v1 envelope. Valid values: "
        "brave_web_search_help."
    ),
    help=(
        "Web, news, image or video results, numbered across sections; pass offset for the next page. max_results "
        "bounds what is shown: web results first, other sections (news, videos, discussions, faq) only as room is "
        "left, or the sections result_filter names, max_results each. Direct answers (an infobox; SearXNG's "
        "answers and suggested searches) are not results: shown above them, unnumbered, whatever max_results "
        "says, within 2 KB (or only where result_filter names them)."
    ),
    guide="current web, news, image or video results (cite result URLs)",
    input_model=WebSearchArgs,
    run=run,
    cli=CliShape(
        "search",
        "search and print compact results",
        positional="query",
        options={
            "search_type": "--type",
            "max_results": "--count",
            "search_language": "--search-lang",
            "ui_language": "--ui-lang",
            "sites": "--site",
            "exclude_sites": "--exclude-site",
        },
        hidden=("debug", "include_raw_payload", "include_request_url", "disable_cache", "disable_throttle"),
        comma_lists=("result_filter", "sites", "exclude_sites"),
        aliases=("web",),
    ),
    library="web_search",
    endpoints=tuple(SEARCH_ENDPOINTS.values()),
)
