"""brave_llm_context: Brave's grounding passages as deduplicated, dated sources inside a character budget.

Brave's ``/res/v1/llm/context`` answers ``{grounding: {generic, poi, map}, sources: {url: {title,
hostname, age}}}``. Agents want the passages, not the JSON: each page becomes a title, URL, age and
its snippets; local recall (``poi``/``map``) becomes places; duplicate pages and passages go; and the
whole text stays inside ``max_chars`` with a warning that says what was cut.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, Field

from brave_search_mcp.brave.arguments import Collector, Params, bool_text
from brave_search_mcp.brave.facts import PARAM_RANGES, Endpoint
from brave_search_mcp.brave.sites import goggle
from brave_search_mcp.clock import Clock
from brave_search_mcp.models.envelopes import Result, WarningItem
from brave_search_mcp.models.errors import NoResults, ParseError, WarningCode
from brave_search_mcp.models.inputs import QueryInput, SiteList, max_results_field, sites_field
from brave_search_mcp.models.llm_context import ContextSource, LlmContextEnvelope, LlmContextMeta
from brave_search_mcp.models.sites import SiteFilter
from brave_search_mcp.render.text import clean_block, clean_text, cut, dedup_key, http_url, plural, site_of
from brave_search_mcp.usecases.contract import Call, CliShape, JsonFetch, Ports, ToolSpec, over_brave_json

DEFAULT_MAX_CHARS = 8_000
MIN_MAX_CHARS = 1_000
MAX_MAX_CHARS = 100_000
SNIPPET_LIMIT = 4_000
TITLE_LIMIT = 200
HEADER_RESERVE = 200  # the summary line
CUT_WARNING_RESERVE = 320  # the CONTEXT_TRUNCATED line
MIN_SNIPPET_PIECE = 120  # a shorter cut-off passage is noise: drop it instead
WARNING_LINE_LIMIT = 300
_NORMAL = re.compile(r"[^0-9a-z]+")

ThresholdMode = Literal["strict", "balanced", "lenient", "disabled"]


class LlmContextArgs(QueryInput):
    """Arguments of ``brave_llm_context``: a query, Brave's budgets, and an optional location."""

    ALIASES: ClassVar[dict[str, tuple[str, ...]]] = {"search_language": ("search_lang",), "max_results": ("count",)}

    query: str = Field(description="What to ground; max 400 chars / 50 words.")
    sites: SiteList = sites_field()
    exclude_sites: SiteList = sites_field(exclude=True)
    max_results: int | None = max_results_field("Search results considered (1-50).")
    maximum_number_of_urls: int | None = Field(None, ge=1, description="Pages in the context (1-50, Brave default 20).")
    maximum_number_of_tokens: int | None = Field(None, ge=1, description="Token budget (1024-32768, default 8192).")
    maximum_number_of_snippets: int | None = Field(None, ge=1, description="Snippets in total (1-100).")
    maximum_number_of_tokens_per_url: int | None = Field(None, ge=1, description="Tokens per page (512-8192).")
    maximum_number_of_snippets_per_url: int | None = Field(None, ge=1, description="Snippets per page (1-100).")
    context_threshold_mode: ThresholdMode | None = Field(None, description="Relevance cut-off (default balanced).")
    country: str | None = Field(None, description="2-letter result country, e.g. US, or ALL.")
    search_language: str | None = Field(None, validation_alias=AliasChoices("search_language", "search_lang"))
    enable_local: bool | None = Field(None, description="Force or skip local recall; default: Brave decides.")
    latitude: float | None = Field(None, ge=-90, le=90, description="Searcher position (with longitude).")
    longitude: float | None = Field(None, ge=-180, le=180)
    city: str | None = None
    state: str | None = Field(None, description="Subdivision code, e.g. CA.")
    state_name: str | None = None
    location_country: str | None = Field(None, description="Searcher's 2-letter country.")
    postal_code: str | None = None
    max_chars: int = Field(DEFAULT_MAX_CHARS, ge=1, description="Text budget in characters (1000-100000).")


def prepare(args: LlmContextArgs) -> tuple[Params, list[WarningItem]]:
    """Brave's query parameters for ``args``, clamped to Brave's true limits, and the warnings that says so."""
    out = Collector()
    out.send("q", out.query("query", args.query))
    out.clamp("max_results", args.max_results, *PARAM_RANGES[Endpoint.LLM_CONTEXT]["count"], param="count")
    for name in (
        "maximum_number_of_urls",
        "maximum_number_of_tokens",
        "maximum_number_of_snippets",
        "maximum_number_of_tokens_per_url",
        "maximum_number_of_snippets_per_url",
    ):
        out.clamp(name, getattr(args, name), *PARAM_RANGES[Endpoint.LLM_CONTEXT][name], param=name)
    if args.context_threshold_mode is not None:
        out.send("context_threshold_mode", args.context_threshold_mode)
    out.country(args.country)
    out.language(args.search_language)
    if args.enable_local is not None:
        out.send("enable_local", bool_text(args.enable_local))
    sites = SiteFilter.of(args.sites, args.exclude_sites)
    if sites is not None:  # the endpoint takes goggles (reference/brave-api.md §3.11)
        out.send("goggles", goggle(sites))
    return out.params, out.warnings


def location_headers(args: LlmContextArgs) -> dict[str, str]:
    """Brave's ``X-Loc-*`` headers for the location fields given (empty when none)."""
    headers: dict[str, str] = {}
    if args.latitude is not None and args.longitude is not None:
        headers["X-Loc-Lat"] = f"{args.latitude:.6g}"
        headers["X-Loc-Long"] = f"{args.longitude:.6g}"
    texts = {
        "X-Loc-City": args.city,
        "X-Loc-State": args.state,
        "X-Loc-State-Name": args.state_name,
        "X-Loc-Country": args.location_country.strip().upper() if args.location_country else None,
        "X-Loc-Postal-Code": args.postal_code,
    }
    for name, value in texts.items():
        text = clean_text(value, limit=100) if value else ""
        if text and text.isascii():  # header values must be ASCII; Brave expects codes and names
            headers[name] = text
    return headers


def _readable(snippet: str) -> str:
    """A JSON-serialized snippet (a table, a POI record) as ``key: value`` text; anything else unchanged."""
    if not snippet.startswith(("{", "[")):
        return snippet
    try:
        value = json.loads(snippet)
    except (ValueError, RecursionError):
        return snippet
    rows = value if isinstance(value, list) else [value]
    lines = [_row(row) for row in rows[:50]]
    return "\n".join(line for line in lines if line) or snippet


def _row(value: Any) -> str:
    if isinstance(value, Mapping):
        parts: list[str] = []
        tables: list[str] = []
        for key, item in list(value.items())[:20]:
            if isinstance(item, list) and item and all(isinstance(row, Mapping) for row in item):
                tables.extend(_row(row) for row in item[:50])  # a table: one line per row
                continue
            text = _row(item)
            if text:
                parts.append(f"{key}: {text}")
        return "\n".join(line for line in ["; ".join(parts), *tables] if line)
    if isinstance(value, list):
        return ", ".join(text for text in (_row(item) for item in value[:20]) if text)
    if value is None or isinstance(value, bool):
        return "" if value is None else ("yes" if value else "no")
    return str(value)


def _age(meta: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(readable age, ISO date) from Brave's ``age`` list [long date, ISO date, relative, ISO time?]."""
    age = meta.get("age")
    if not isinstance(age, list):
        return None, None
    texts = [clean_text(item, limit=60) for item in age]
    iso = texts[1] if len(texts) > 1 and texts[1] else None
    relative = texts[2] if len(texts) > 2 and texts[2] else None
    readable = f"{iso} ({relative})" if iso and relative else (iso or relative or (texts[0] if texts else None))
    return readable or None, iso


@dataclass
class _Page:
    url: str
    title: str
    source: str | None
    age: str | None
    iso: str | None
    snippets: list[str] = field(default_factory=list)
    name: str | None = None  # places only


def _pages(items: Any, sources: Mapping[str, Any], seen_urls: dict[str, _Page], seen_text: set[str]) -> list[_Page]:
    pages: list[_Page] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        url = http_url(item.get("url"))
        if url is None:
            continue
        meta = sources.get(url)
        meta = meta if isinstance(meta, Mapping) else {}
        key = dedup_key(url)
        page = seen_urls.get(key)
        if page is None:
            title = (
                clean_text(item.get("title"), limit=TITLE_LIMIT)
                or clean_text(meta.get("title"), limit=TITLE_LIMIT)
                or site_of(url)
            )
            age, iso = _age(meta)
            host = clean_text(meta.get("hostname"), limit=100) or site_of(url) or None
            page = _Page(url, title, host, age, iso, name=clean_text(item.get("name"), limit=TITLE_LIMIT) or None)
            seen_urls[key] = page
            pages.append(page)
        snippets = item.get("snippets")
        for raw in snippets if isinstance(snippets, list) else []:
            text = clean_block(_readable(raw.strip()) if isinstance(raw, str) else raw, limit=SNIPPET_LIMIT)
            norm = _NORMAL.sub(" ", text.lower()).strip()
            if norm and norm not in seen_text:
                seen_text.add(norm)
                page.snippets.append(text)
    return pages


def _within(items: Any, sites: SiteFilter | None, outside: set[str]) -> Any:
    """The grounding items on the filter's sites (every item without one); the others' URLs go to ``outside``."""
    if sites is None or not isinstance(items, list):
        return items
    kept = []
    for item in items:
        url = http_url(item.get("url")) if isinstance(item, Mapping) else None
        if url is not None and not sites.keeps(url):
            outside.add(dedup_key(url))
            continue
        kept.append(item)
    return kept


@dataclass
class _Budget:
    left: int
    dropped_snippets: int = 0
    dropped_pages: int = 0
    cut_snippets: int = 0
    lines: list[str] = field(default_factory=list)

    def fit(self, head: list[str], snippets: list[str]) -> list[str] | None:
        """Add a page if its head and first passage fit; returns the passages kept (cut to fit), or None."""
        head_cost = sum(len(line) + 1 for line in head)
        if head_cost + min(MIN_SNIPPET_PIECE, sum(len(s) for s in snippets) or 0) + 3 > self.left:
            self.dropped_pages += 1
            self.dropped_snippets += len(snippets)
            return None
        self.left -= head_cost
        self.lines.extend(head)
        kept: list[str] = []
        for index, snippet in enumerate(snippets):
            cost = len(snippet) + 3  # "- " and the line break
            if cost <= self.left:
                kept.append(snippet)
            elif self.left - 3 >= MIN_SNIPPET_PIECE:
                kept.append(cut(snippet, self.left - 3))
                self.cut_snippets += 1
            else:
                self.dropped_snippets += len(snippets) - index
                break
            self.left -= len(kept[-1]) + 3
            self.lines.append("- " + kept[-1])
        self.lines.append("")
        self.left -= 1
        return kept


def _warning_lines(warnings: list[WarningItem]) -> list[str]:
    if not warnings:
        return []
    return ["Warnings:", *(cut(f"- {w.code}: {w.message}", WARNING_LINE_LIMIT) for w in warnings)]


def parse_and_render(
    data: Mapping[str, Any],
    max_chars: int,
    *,
    query: str,
    trace_id: str,
    server_version: str,
    warnings: list[WarningItem] | None = None,
    duration_ms: int = 0,
    sites: SiteFilter | None = None,
) -> tuple[LlmContextEnvelope, str]:
    """Brave's LLM-context JSON as an envelope and a compact text of at most ``max_chars`` characters (only the
    pages and places ``sites`` keeps)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("grounding"), Mapping):
        raise ParseError("Brave's LLM-context answer has no grounding object.")
    grounding: Mapping[str, Any] = data["grounding"]
    raw_sources = data.get("sources")
    sources: Mapping[str, Any] = raw_sources if isinstance(raw_sources, Mapping) else {}
    seen_urls: dict[str, _Page] = {}
    seen_text: set[str] = set()
    poi = grounding.get("poi")
    outside: set[str] = set()  # pages the site filter dropped, before any passage of theirs counts as seen
    places = _pages(_within([poi] if isinstance(poi, Mapping) else [], sites, outside), sources, seen_urls, seen_text)
    places += _pages(_within(grounding.get("map"), sites, outside), sources, seen_urls, seen_text)
    # A page whose every passage repeated an earlier one has nothing left to say.
    generic = _pages(_within(grounding.get("generic"), sites, outside), sources, seen_urls, seen_text)
    pages = [page for page in generic if page.snippets]
    if not pages and not places:
        found = f'Brave found no grounding context for "{cut(query, 100)}"'
        if sites is not None:
            raise sites.no_results(found, len(outside))
        raise NoResults(f"{found}; rephrase or broaden the query.")

    all_warnings = list(warnings or [])
    budget = _Budget(max_chars - HEADER_RESERVE - CUT_WARNING_RESERVE - len("\n".join(_warning_lines(all_warnings))))
    kept_places: list[Result] = []
    if places:
        budget.lines.append("Places:")
        budget.left -= len("Places:") + 1
    for number, place in enumerate(places, 1):
        name = place.name or place.title
        title = f"{name} — {place.title}" if place.name and place.title and place.title != place.name else name
        kept = budget.fit([f"[P{number}] {title}", place.url], place.snippets)
        if kept is None:
            continue
        kept_places.append(
            Result(title=name, url=place.url, snippet=kept[0] if kept else "", extra_snippets=kept[1:] or None,
                   site=place.source, age=place.age)
        )  # fmt: skip
    kept_pages: list[ContextSource] = []
    for page in pages:
        head = [f"[{len(kept_pages) + 1}] {page.title}", page.url]
        facts = " · ".join(part for part in (page.source, page.age) if part)
        if facts:
            head.append(facts)
        kept = budget.fit(head, page.snippets)
        if kept is None:
            continue
        kept_pages.append(
            ContextSource(title=page.title, url=page.url, site=page.source, age=page.age,
                          published_date=page.iso, snippets=kept)
        )  # fmt: skip

    if budget.dropped_snippets or budget.cut_snippets:
        what = []
        if budget.dropped_pages:
            what.append(f"{plural(budget.dropped_pages, 'page')} left out")
        if budget.dropped_snippets:
            what.append(f"{plural(budget.dropped_snippets, 'snippet')} dropped")
        if budget.cut_snippets:
            what.append(f"{plural(budget.cut_snippets, 'snippet')} shortened")
        all_warnings.append(
            WarningItem(
                code=WarningCode.CONTEXT_TRUNCATED.value,
                message=f"To stay within max_chars={max_chars}: {', '.join(what)}. Raise max_chars "
                "(up to 100000) or lower maximum_number_of_tokens to get a smaller, denser context.",
            )
        )
    body = "\n".join(budget.lines).rstrip("\n")
    tail = "\n".join(_warning_lines(all_warnings))
    counted = [plural(len(kept_pages), "source")] if kept_pages or not kept_places else []
    counted += [plural(len(kept_places), "place")] if kept_places else []
    summary = f'{" and ".join(counted)} of grounding context for "{cut(query, 100)}".'
    text = "\n\n".join(part for part in (summary, body, tail) if part)
    meta = LlmContextMeta(
        query=query,
        sources=len(kept_pages),
        places=len(kept_places),
        chars=len(text),
        max_chars=max_chars,
        snippets_dropped=budget.dropped_snippets,
        site_filter=sites.meta("goggle", len(outside)) if sites is not None else None,
        duration_ms=duration_ms,
        trace_id=trace_id,
        server_version=server_version,
    )
    envelope = LlmContextEnvelope(
        summary=summary, sources=kept_pages, places=kept_places, meta=meta, warnings=all_warnings
    )
    return envelope, text


def effective_max_chars(args: LlmContextArgs, warnings: list[WarningItem]) -> int:
    """``args.max_chars`` inside the sane bounds, warning when it was moved."""
    value = min(max(args.max_chars, MIN_MAX_CHARS), MAX_MAX_CHARS)
    if value != args.max_chars:
        warnings.append(
            WarningItem(
                code=WarningCode.OUTPUT_LIMIT_CLAMPED.value,
                message=f"max_chars {args.max_chars} is outside {MIN_MAX_CHARS}-{MAX_MAX_CHARS}; {value} was used.",
            )
        )
    return value


async def fetch_context(
    args: LlmContextArgs,
    fetch: JsonFetch,
    *,
    deadline: float | None,
    trace_id: str,
    server_version: str,
    clock: Clock = time.monotonic,
) -> tuple[LlmContextEnvelope, str]:
    """Fetch Brave's LLM context for ``args`` and return the envelope and its compact text."""
    started = clock()
    params, warnings = prepare(args)
    max_chars = effective_max_chars(args, warnings)
    headers = location_headers(args)
    if headers:
        data = await fetch(Endpoint.LLM_CONTEXT, params, deadline=deadline, headers=headers)
    else:
        data = await fetch(Endpoint.LLM_CONTEXT, params, deadline=deadline)
    if not isinstance(data, Mapping):
        raise ParseError("Brave's LLM-context answer is not a JSON object.")
    return parse_and_render(
        data,
        max_chars,
        query=dict(params)["q"],
        trace_id=trace_id,
        server_version=server_version,
        warnings=warnings,
        duration_ms=max(0, int((clock() - started) * 1000)),
        sites=SiteFilter.of(args.sites, args.exclude_sites),
    )


async def run(args: LlmContextArgs, ports: Ports, call: Call) -> tuple[LlmContextEnvelope, str]:
    """The tool: fetch context through the one client, the plan figures stamped."""
    return await over_brave_json(fetch_context, args, ports, call)


SPEC = ToolSpec(
    name="brave_llm_context",
    title="Brave LLM context",
    description=(
        "Grounding passages for a query: per source title, URL, age and snippets, deduplicated, within max_chars "
        "(default 8000). Location fields add nearby places."
    ),
    help=(
        "Brave's /llm/context grounding. Budgets (maximum_number_of_tokens/urls/snippets, per-URL caps) are clamped "
        "to Brave's ranges with a warning; context_threshold_mode strict|balanced|lenient|disabled. latitude/"
        "longitude, city, state, postal_code travel as X-Loc headers and turn on local recall (places). Output "
        "never exceeds max_chars; CONTEXT_TRUNCATED says what was cut. Needs the Search plan."
    ),
    guide="grounding passages (per source: title, URL, age, snippets) within a character budget",
    input_model=LlmContextArgs,
    run=run,
    cli=CliShape(
        "context",
        "grounding passages for a query (LLM context)",
        positional="query",
        options={"sites": "--site", "exclude_sites": "--exclude-site"},
        comma_lists=("sites", "exclude_sites"),
    ),
    library="llm_context",
    endpoints=(Endpoint.LLM_CONTEXT,),
    needs_brave=True,
)
