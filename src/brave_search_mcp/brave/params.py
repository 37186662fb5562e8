"""Turn tool arguments into exactly what Brave accepts, with warnings for anything changed.

Only two problems are hard errors (an empty query and a ``result_filter`` without one valid
entry); everything else is repaired or dropped with a ``WarningItem`` so the agent's call still
returns results and the agent learns what to change. Nothing Brave would reject with a 422 is
ever put into ``PreparedSearch.params`` (reference/brave-api.md §8).

The default ``max_results`` is 10 for every search type, not Brave's 20/50: half a page of
results is usually enough for an agent and costs half the context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from brave_search_mcp.brave.arguments import Collector, bool_text
from brave_search_mcp.brave.facts import (
    DEFAULT_COUNT,
    DEFAULT_SAFE_SEARCH,
    FULL_SAFE_SEARCH,
    IMAGE_SAFE_SEARCH,
    MAX_COUNT,
    MAX_GOGGLES,
    MAX_OFFSET,
    MAX_QUERY_CHARS,
    MAX_QUERY_WORDS,
    MAX_SHOWN_VALUE_CHARS,
    RESULT_FILTERS,
    SEARCH_ENDPOINTS,
    SUPPORTED,
    UI_LANGUAGE_ALIASES,
    UI_LANGUAGES,
    UNITS,
    WEB_FIELDS,
    Endpoint,
    is_goggle,
    valid_freshness,
)
from brave_search_mcp.brave.sites import with_goggles, with_operators
from brave_search_mcp.config import MAX_MAX_BYTES, MAX_MAX_LINES, MIN_MAX_BYTES, MIN_MAX_LINES, Settings
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.errors import InvalidArgument, WarningCode
from brave_search_mcp.models.inputs import SafeSearch, SearchType, WebSearchArgs
from brave_search_mcp.models.sites import AppliedAs, SiteFilter
from brave_search_mcp.render.text import clean_query, format_marks, shown, strip_controls


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
    sections: tuple[str, ...] | None  # the web sections result_filter names (each up to `requested`); None: web first
    debug: bool
    include_raw_payload: bool
    include_request_url: bool
    use_cache: bool
    throttle: bool
    warnings: tuple[WarningItem, ...]
    sites: SiteFilter | None = None  # the caller's site filter (providers compile it their way)
    sites_as: AppliedAs | None = None  # how Brave was told it


def rules_for(search_type: SearchType) -> TypeRules:
    """The endpoint rules of one search type, so validation and the help tool share one truth."""
    if search_type not in SUPPORTED:
        raise InvalidArgument(
            f"search_type must be one of web, news, images, videos; got {shown(search_type)}", field="search_type"
        )
    images = search_type == "images"
    return TypeRules(
        search_type=search_type,
        endpoint=SEARCH_ENDPOINTS[search_type],
        max_count=MAX_COUNT[search_type],
        default_count=DEFAULT_COUNT,
        has_offset=not images,
        safe_search_values=IMAGE_SAFE_SEARCH if images else FULL_SAFE_SEARCH,
        default_safe_search=DEFAULT_SAFE_SEARCH[search_type],
        supported=SUPPORTED[search_type],
    )


def fit_query(query: str) -> str:
    """Cut a clean query at a word boundary so it has at most 400 characters and 50 words."""
    words = query.split(" ")[:MAX_QUERY_WORDS]
    total = sum(len(w) for w in words) + len(words) - 1
    while len(words) > 1 and total > MAX_QUERY_CHARS:
        total -= len(words.pop()) + 1
    text = " ".join(words)
    return text[:MAX_QUERY_CHARS].rstrip()


def _given(args: WebSearchArgs, name: str) -> bool:
    value = getattr(args, name)
    if name == "summary":
        return bool(value)
    return value is not None


def _dedupe(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _prepare_ui_language(value: str, out: Collector) -> None:
    parts = value.strip().replace("_", "-").split("-")
    if len(parts) == 1:
        bare = parts[0].lower()
        if bare in UI_LANGUAGE_ALIASES:
            target = UI_LANGUAGE_ALIASES[bare]
            out.warn(WarningCode.VALUE_NORMALIZED, f"ui_language {shown(value)} was sent as {target}.")
            out.send("ui_lang", target)
            return
    elif len(parts) == 2:
        code = f"{parts[0].lower()}-{parts[1].upper()}"
        if code in UI_LANGUAGES:
            out.send("ui_lang", code)
            return
    out.warn(
        WarningCode.INVALID_UI_LANGUAGE,
        f"ui_language {shown(value)} is not supported by Brave; it was dropped. "
        "Use a market code such as en-US or de-DE (brave_web_search_help lists them).",
    )


def _prepare_safe_search(value: SafeSearch, rules: TypeRules, out: Collector) -> None:
    if value not in rules.safe_search_values:
        out.warn(
            WarningCode.SAFE_SEARCH_ADJUSTED,
            f"safe_search {shown(value)} is not available for {rules.search_type} search; sent as strict.",
        )
        value = "strict"
    out.send("safesearch", value)


def _prepare_freshness(value: str, out: Collector) -> None:
    text = value.strip().lower()
    compact = "".join(text.split())
    if compact != text and valid_freshness(compact):
        out.warn(WarningCode.VALUE_NORMALIZED, f"freshness {shown(value)} was sent as {compact}.")
        text = compact
    if valid_freshness(text):
        out.send("freshness", text)
        return
    out.warn(
        WarningCode.INVALID_FRESHNESS,
        f"freshness {shown(value)} is not valid; it was dropped. Use pd, pw, pm, py or a range of real dates "
        "YYYY-MM-DDtoYYYY-MM-DD (start not after end).",
    )


def _prepare_result_filter(
    values: list[str], summary: bool, out: Collector, others: frozenset[str] = frozenset(), brave: bool = True
) -> tuple[tuple[str, ...] | None, bool]:
    """The sections to show (None: web first, the rest as room allows) and whether "summarizer" asked for a summary.

    The filter is sent, but never with a summary: Brave gives the summarizer key only to a filter naming
    "summarizer", and a filter naming it drops the web results (Brave issue #272). So with a summary no filter
    goes, and the sections named are picked from the whole answer (``results.pick_sections``). ``others``: the
    sections another configured provider has (SearXNG's answers): valid for the call, not sent to Brave; without
    ``brave`` (SearXNG alone) a refusal lists only theirs, the sections that can show."""
    entries = _dedupe(v.strip().lower() for v in values)
    valid = [e for e in entries if e in RESULT_FILTERS]
    elsewhere = [e for e in entries if e not in RESULT_FILTERS and e in others]
    invalid = [e for e in entries if e not in RESULT_FILTERS and e not in others]
    if not valid and not elsewhere:
        known = [*RESULT_FILTERS, *sorted(others - set(RESULT_FILTERS))] if brave or not others else sorted(others)
        raise InvalidArgument(
            f"result_filter has no valid entry (got {', '.join(shown(v) for v in values[:5]) or 'nothing'}); "
            f"use some of: {', '.join(known)}.",
            field="result_filter",
            invalid_values=[strip_controls(v)[:MAX_SHOWN_VALUE_CHARS] for v in values[:20]],
        )
    if invalid:
        out.warn(
            WarningCode.INVALID_RESULT_FILTER,
            f"result_filter entries {', '.join(shown(v) for v in invalid[:5])} are unknown; they were dropped.",
        )
    if elsewhere:
        out.warn(
            WarningCode.INVALID_RESULT_FILTER,
            f"result_filter {', '.join(shown(v) for v in elsewhere[:5])}: Brave has no such section; "
            + ("it shows the others named." if valid else "it shows its usual sections."),
        )
    asked = "summarizer" in valid and not summary
    if asked:
        out.warn(
            WarningCode.VALUE_NORMALIZED,
            'result_filter "summarizer" was sent as summary=1 (a summarizer filter would hide web results).',
        )
    valid = [entry for entry in valid if entry != "summarizer"]
    if valid and not (summary or asked):
        out.send("result_filter", ",".join(valid))
    return tuple(entry for entry in valid if entry != "query") or None, asked


def _prepare_goggles(values: list[str], out: Collector) -> list[str]:
    entries = _dedupe(v.strip() if "\n" not in v else v for v in values)
    kept = [e for e in entries if e and is_goggle(e.strip())]
    rejected = [e for e in entries if not (e and is_goggle(e.strip()))]
    if rejected:
        out.warn(
            WarningCode.INVALID_GOGGLES,
            f"goggles {', '.join(shown(v) for v in rejected[:3])} dropped: only https URLs with a host or inline "
            "definitions (a rule set starting with $ or ! or spanning lines) are accepted.",
        )
    if len(kept) > MAX_GOGGLES:
        extra = kept[MAX_GOGGLES:]
        kept = kept[:MAX_GOGGLES]
        out.warn(
            WarningCode.INVALID_GOGGLES,
            f"goggles: only {MAX_GOGGLES} are allowed; {len(extra)} extra dropped, starting with {shown(extra[0])}.",
        )
    return kept


def _clamp_output(name: str, value: int | None, default: int, lo: int, hi: int, out: Collector) -> int:
    if value is None:
        return default
    if lo <= value <= hi:
        return value
    clamped = min(max(value, lo), hi)
    out.warn(WarningCode.OUTPUT_LIMIT_CLAMPED, f"{name} {value} is outside {lo}-{hi}; used {clamped}.")
    return clamped


def prepare_search(
    args: WebSearchArgs, settings: Settings, *, other_sections: frozenset[str] = frozenset()
) -> PreparedSearch:
    """Normalize and soft-validate; raise ``InvalidArgument`` only for hard errors. ``other_sections``: result_filter
    entries another configured provider answers with (not Brave's, yet valid for the call)."""
    rules = rules_for(args.search_type)
    out = Collector()

    query = clean_query(args.query)
    if not query:
        raise InvalidArgument(
            "query must not be empty (it had only control, zero-width or white-space characters)", field="query"
        )
    marks = format_marks(args.query)
    if marks:
        out.warn(
            WarningCode.VALUE_NORMALIZED,
            f"query held invisible bidi or zero-width characters ({', '.join(marks)}), which can make it read "
            f"otherwise than it searches; they were removed and {shown(query)} was searched.",
        )
    fitted = fit_query(query)
    if fitted != query:
        kept = fitted.split(" ")
        inside = len(kept[-1]) < len(query.split(" ")[len(kept) - 1])  # the cut fell inside a word
        where = (
            f"a word of {len(query.split(' ')[len(kept) - 1])} characters is alone over the limit, so it was cut "
            "inside that word"
            if inside
            else "it was cut at a word boundary"
        )
        out.warn(
            WarningCode.QUERY_TRUNCATED,
            f"query {shown(query)} had {len(query)} characters / {len(query.split())} words; {where}, to "
            f"{len(fitted)} characters / {len(fitted.split())} words (Brave allows {MAX_QUERY_CHARS} / "
            f"{MAX_QUERY_WORDS}).",
        )
    out.send("q", fitted)

    # count
    requested = rules.default_count if args.max_results is None else args.max_results
    if not 1 <= requested <= rules.max_count:
        clamped = min(max(requested, 1), rules.max_count)
        out.warn(
            WarningCode.COUNT_CLAMPED,
            f"max_results {requested} is outside 1-{rules.max_count} for {rules.search_type} search; "
            f"{clamped} were requested.",
        )
        requested = clamped
    out.send("count", str(requested))

    # offset
    offset = 0
    if args.offset is not None:
        if not rules.has_offset:
            out.warn(
                WarningCode.OFFSET_IGNORED,
                f"offset {args.offset} was not sent: {rules.search_type} search has no paging.",
            )
        elif args.offset > MAX_OFFSET:
            out.warn(
                WarningCode.OFFSET_CAPPED,
                f"offset {args.offset} is a page index 0-{MAX_OFFSET}; it was capped at {MAX_OFFSET}.",
            )
            offset = MAX_OFFSET
        else:
            offset = max(args.offset, 0)
    if offset:
        out.send("offset", str(offset))

    summary = bool(args.summary)
    goggles: list[str] = []
    handlers: dict[str, Callable[[], object]] = {
        "country": lambda: out.country(str(args.country)),
        "search_language": lambda: out.language(str(args.search_language)),
        "ui_language": lambda: _prepare_ui_language(str(args.ui_language), out),
        "safe_search": lambda: _prepare_safe_search(args.safe_search or "strict", rules, out),
        "freshness": lambda: _prepare_freshness(str(args.freshness), out),
        "units": lambda: _send_units(args.units, out),
        "spellcheck": lambda: out.send("spellcheck", bool_text(bool(args.spellcheck))),
        "extra_snippets": lambda: out.send("extra_snippets", bool_text(bool(args.extra_snippets))),
        "goggles": lambda: goggles.extend(_prepare_goggles(list(args.goggles or []), out)),
    }
    text_decorations = False
    asked_summary = False
    sections: tuple[str, ...] | None = None
    for name in WEB_FIELDS:
        if name in ("max_results", "offset") or not _given(args, name):
            continue
        if name not in rules.supported:
            value = getattr(args, name)
            shown_value = ",".join(value) if isinstance(value, list) else str(value).lower()
            out.warn(
                WarningCode.PARAM_IGNORED,
                f"{name} {shown(shown_value)} is not supported by {rules.search_type} search; it was not sent.",
            )
            continue
        if name == "text_decorations":
            text_decorations = bool(args.text_decorations)
        elif name == "result_filter":
            if args.result_filter:  # an empty list means no filter, as if not given
                sections, asked_summary = _prepare_result_filter(
                    list(args.result_filter), summary, out, other_sections, "brave" in settings.providers
                )
        elif name != "summary":
            handlers[name]()
    sites = SiteFilter.of(args.sites, args.exclude_sites)
    sites_as: AppliedAs | None = None
    if sites is not None:
        merged = with_goggles(sites, goggles) if "goggles" in rules.supported else None
        if merged is not None:
            goggles, sites_as = merged, "goggle"
        else:  # no goggles here (videos, images) or no slot left: the operators, in the query sent
            out.params[out.params.index(("q", fitted))] = ("q", with_operators(sites, query))
            sites_as = "site: operators"
    for entry in goggles:
        out.send("goggles", entry)
    if "text_decorations" in rules.supported:
        # Brave's default is true; we strip the tags anyway, so asking for none saves bytes.
        out.send("text_decorations", bool_text(text_decorations))
    summary = summary or asked_summary
    if summary and rules.search_type == "web":
        out.send("summary", "1")
    else:
        summary = False

    max_lines = _clamp_output("max_lines", args.max_lines, settings.max_lines, MIN_MAX_LINES, MAX_MAX_LINES, out)
    max_bytes = _clamp_output("max_bytes", args.max_bytes, settings.max_bytes, MIN_MAX_BYTES, MAX_MAX_BYTES, out)

    debug = bool(args.debug)
    controls = {
        "include_raw_payload": args.include_raw_payload,
        "include_request_url": args.include_request_url,
        "disable_cache": args.disable_cache,
        "disable_throttle": args.disable_throttle,
    }
    if not debug and any(controls.values()):
        given = [name for name, on in controls.items() if on]
        verb, pronoun = ("applies", "it was") if len(given) == 1 else ("apply", "they were")
        out.warn(
            WarningCode.DEBUG_OPTION_IGNORED, f"{', '.join(given)} only {verb} with debug: true; {pronoun} ignored."
        )

    return PreparedSearch(
        search_type=rules.search_type,
        endpoint=rules.endpoint,
        params=tuple(out.params),
        query=fitted,
        requested=requested,
        offset=offset,
        max_lines=max_lines,
        max_bytes=max_bytes,
        text_decorations=text_decorations,
        summary=summary,
        sections=sections,
        debug=debug,
        include_raw_payload=debug and args.include_raw_payload,
        include_request_url=debug and args.include_request_url,
        use_cache=not (debug and args.disable_cache),
        throttle=not (debug and args.disable_throttle),
        warnings=tuple(out.warnings),
        sites=sites,
        sites_as=sites_as,
    )


def _send_units(value: str | None, out: Collector) -> None:
    if value in UNITS:
        out.send("units", str(value))
