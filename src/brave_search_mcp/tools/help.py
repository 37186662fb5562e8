"""The help tool's content, generated from the models, rules and error codes so it cannot drift."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from brave_search_mcp.brave import facts as brave_api
from brave_search_mcp.brave import params as rules
from brave_search_mcp.config import MAX_MAX_BYTES, MAX_MAX_LINES, MIN_MAX_BYTES, MIN_MAX_LINES, Settings
from brave_search_mcp.models.envelopes import API_VERSION
from brave_search_mcp.models.errors import WARNING_ADVICE, ErrorCode, WarningCode, advice_for, default_retryable
from brave_search_mcp.models.inputs import HelpArgs, HelpTopic
from brave_search_mcp.providers.request import BRAVE_ONLY
from brave_search_mcp.providers.searxng.params import CATEGORIES, LANGUAGES, MAX_QUERY_CHARS, SECTIONS
from brave_search_mcp.usecases import answer, llm_context, local_search, read_url, summarize, web_search
from brave_search_mcp.usecases.contract import Call, CliShape, Ports, ToolSpec


@dataclass(frozen=True)
class ToolDoc:
    """What help needs of one tool; the registry hands these in, so help never imports it."""

    name: str
    input_model: type[BaseModel]
    help: str


# Where a parameter's valid values live, for the ones whose lists are too long for the schema.
_VALUE_LISTS: dict[str, tuple[str, ...]] = {
    "country": brave_api.COUNTRIES,
    "search_language": brave_api.SEARCH_LANGUAGES,
    "ui_language": brave_api.UI_LANGUAGES,
    "result_filter": brave_api.RESULT_FILTERS,
}

NAME = "brave_web_search_help"  # this tool's name; every other example names its tool by its slice's spec
# (the status tool's slice imports this module, so its one example names it as written: a test checks it)
EXAMPLES: list[dict[str, Any]] = [
    {"tool": web_search.SPEC.name, "why": "plain web search", "arguments": {"query": "python asyncio timeout"}},
    {
        "tool": web_search.SPEC.name,
        "why": "recent news in German",
        "arguments": {"query": "Bundestag", "search_type": "news", "country": "DE", "freshness": "pw"},
    },
    {
        "tool": web_search.SPEC.name,
        "why": "only docs.rs results via an inline goggle, second page",
        "arguments": {"query": "tokio select", "goggles": ["$discard\n$site=docs.rs"], "offset": 1},
    },
    {
        "tool": web_search.SPEC.name,
        "why": "only from the Python docs and the PEPs",
        "arguments": {"query": "asyncio taskgroup", "sites": ["docs.python.org", "peps.python.org"]},
    },
    {
        "tool": web_search.SPEC.name,
        "why": "images, many at once",
        "arguments": {"query": "aurora borealis", "search_type": "images", "max_results": 50},
    },
    {
        "tool": web_search.SPEC.name,
        "why": "date range and only web + discussions sections",
        "arguments": {
            "query": "rust 2024 edition",
            "freshness": "2025-01-01to2025-06-30",
            "result_filter": ["web", "discussions"],
        },
    },
    {
        "tool": web_search.SPEC.name,
        "why": "search and get a summarizer key",
        "arguments": {"query": "what is MCP", "summary": True},
    },
    {
        "tool": summarize.SPEC.name,
        "why": "summarize a key from the search above",
        "arguments": {"key": "<summarizer_key>"},
    },
    {
        "tool": summarize.SPEC.name,
        "why": "search and summarize in one call, with citations",
        "arguments": {"query": "how does HTTP/3 differ from HTTP/2", "inline_references": True},
    },
    {
        "tool": llm_context.SPEC.name,
        "why": "grounding passages to cite, within 4000 characters",
        "arguments": {"query": "tokio select cancellation safety", "max_chars": 4000},
    },
    {
        "tool": llm_context.SPEC.name,
        "why": "grounding passages from anywhere but one site",
        "arguments": {"query": "python asyncio cancellation", "exclude_sites": ["medium.com"]},
    },
    {
        "tool": local_search.SPEC.name,
        "why": "places near a location",
        "arguments": {"query": "coffee", "location": "berlin germany", "max_results": 5},
    },
    {
        "tool": answer.SPEC.name,
        "why": "a cited AI answer (Brave's Answers plan)",
        "arguments": {"question": "what changed in python 3.13?"},
    },
    {
        "tool": read_url.SPEC.name,
        "why": "read a result's page, 4000 characters at a time",
        "arguments": {"url": "https://docs.python.org/3/whatsnew/3.13.html", "max_chars": 4000},
    },
    {
        "tool": read_url.SPEC.name,
        "why": "the next part of that page, as plain text",
        "arguments": {"url": "https://docs.python.org/3/whatsnew/3.13.html", "start_char": 4000, "format": "text"},
    },
    {
        "tool": read_url.SPEC.name,
        "why": "two results at once, sharing one character budget",
        "arguments": {
            "urls": ["https://docs.python.org/3/library/asyncio-task.html", "https://peps.python.org/pep-0654/"]
        },
    },
    {
        "tool": read_url.SPEC.name,
        "why": "a docs page and its in-site links, to walk the docs",
        "arguments": {"url": "https://docs.python.org/3/library/asyncio.html", "links": "same_site"},
    },
    {
        "tool": "brave_web_search_status",
        "why": "check key, limits and reachability",
        "arguments": {"probe_connectivity": True},
    },
    {"tool": NAME, "why": "just the error codes", "arguments": {"topic": "errors"}},
]


# SearXNG alone (BRAVE_SEARCH_PROVIDERS=searxng): Brave's options (the ones SearXNG lacks, hidden), limits and words
# do not apply. What the web search parameters and the warnings mean there, where Brave's wording would mislead.
_BRAVE_ONLY_OPTIONS = frozenset({*BRAVE_ONLY, "summary", "text_decorations"})
_BRAVE_EXAMPLE_OPTIONS = _BRAVE_ONLY_OPTIONS | {"result_filter"}  # its example names Brave's discussions section
_SEARXNG_WORDS: dict[str, str] = {
    "query": f'Search text; "phrase" and site: work with most engines. At most {MAX_QUERY_CHARS} characters.',
    "search_type": "Which SearXNG category to search: web (general), news, images or videos.",
    "country": "2-letter region, e.g. US or DE, used with search_language (SearXNG filters by language).",
    "search_language": "e.g. en, de, zh-hans, pt-BR: SearXNG's language (a region in it wins over country).",
    "offset": "Page index 0-9 (not a result index), images too.",
    "safe_search": "off, moderate or strict, for every search type.",
    "freshness": "pd, pw, pm or py (SearXNG has no custom date ranges).",
    "result_filter": f"Web only: the sections to show, max_results each: {', '.join(SECTIONS)} (what SearXNG has).",
}
_SEARXNG_VALUES: dict[str, Sequence[str]] = {"country": (), "search_language": (*LANGUAGES,), "result_filter": SECTIONS}
_EITHER_VALUES = {"result_filter": tuple(dict.fromkeys((*brave_api.RESULT_FILTERS, *SECTIONS)))}  # Brave, SearXNG
_SEARXNG_WARNINGS: dict[WarningCode, str] = {
    WarningCode.QUERY_TRUNCATED: f"The query was cut to {MAX_QUERY_CHARS} characters, what SearXNG's engines take.",
    WarningCode.INVALID_COUNTRY: "The country is not a 2-letter code; it was not used.",
    WarningCode.INVALID_SEARCH_LANGUAGE: "The search language has no SearXNG equivalent; it was not sent.",
    WarningCode.VALUE_NORMALIZED: "A value was rewritten to its usual spelling.",
    WarningCode.INVALID_RESULT_FILTER: "result_filter named sections SearXNG lacks; the message says what was shown.",
}
# Codes only Brave's key, plan, summaries or Brave-only options give rise to: not listed with SearXNG alone.
_BRAVE_CODES = frozenset(
    {
        ErrorCode.MISSING_API_KEY,
        ErrorCode.NOT_IN_PLAN,
        ErrorCode.QUOTA_EXCEEDED,
        ErrorCode.SUMMARY_UNAVAILABLE,
        WarningCode.INVALID_UI_LANGUAGE,
        WarningCode.INVALID_GOGGLES,
        WarningCode.QUERY_ALTERED,
        WarningCode.SUMMARY_NOT_AVAILABLE,
    }
)


def searxng_only(settings: Settings) -> bool:
    """Whether SearXNG is the only provider: help then speaks of it, not of Brave."""
    return "brave" not in settings.providers


def _type_name(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        names = [_type_name(s) for s in schema["anyOf"] if s.get("type") != "null"]
        return " | ".join(names) if names else "null"
    if "enum" in schema:
        return "enum"
    if schema.get("type") == "array":
        return f"list[{_type_name(schema.get('items', {}))}]"
    return str(schema.get("type", "any"))


def _aliases(field: FieldInfo, name: str) -> list[str]:
    choices = getattr(field.validation_alias, "choices", None) or []
    return [c for c in choices if isinstance(c, str) and c != name]


def describe_model(model: type[BaseModel], providers: Sequence[str] = ("brave",)) -> list[dict[str, Any]]:
    """Each parameter's type, default, range, values and aliases as ``providers`` accept it: what an agent may send."""
    schema = model.model_json_schema()
    props: dict[str, Any] = schema.get("properties", {})
    entries: list[dict[str, Any]] = []
    searxng = "brave" not in providers and "search_type" in model.model_fields  # the web search's parameters
    lists = {**_VALUE_LISTS, **(_SEARXNG_VALUES if searxng else _EITHER_VALUES if "searxng" in providers else {})}
    for name, field in model.model_fields.items():
        if searxng and name in _BRAVE_ONLY_OPTIONS:
            continue
        prop = props.get(name, {})
        entry: dict[str, Any] = {"name": name, "type": _type_name(prop), "required": field.is_required()}
        if not field.is_required():
            entry["default"] = field.get_default(call_default_factory=True)
        description = _SEARXNG_WORDS.get(name, field.description) if searxng else field.description
        if description:
            entry["description"] = description
        values = _enum_values(prop) or list(lists.get(name, ()))
        if values:
            entry["values"] = values
        for bound in ("minimum", "maximum", "exclusiveMinimum"):
            value = prop.get(bound, _first_in_any_of(prop, bound))
            if value is not None:
                entry[bound] = value
        aliases = _aliases(field, name)
        if aliases:
            entry["aliases"] = aliases
        entries.append(entry)
    return entries


def _first_in_any_of(prop: dict[str, Any], key: str) -> Any:
    for option in prop.get("anyOf", []):
        if key in option:
            return option[key]
    return None


def _enum_values(prop: dict[str, Any]) -> list[Any]:
    if "enum" in prop:
        return list(prop["enum"])
    for option in prop.get("anyOf", []):
        if "enum" in option:
            return list(option["enum"])
    return []


def search_type_rules(*, searxng: bool = False) -> dict[str, dict[str, Any]]:
    """Per search type: counts, offset, safe_search values and which parameters apply (``searxng``: SearXNG's
    category, which pages images too and knows moderate for them)."""
    out: dict[str, dict[str, Any]] = {}
    for search_type in ("web", "news", "images", "videos"):
        rule = rules.rules_for(search_type)
        if searxng:
            out[search_type] = {
                "searxng_category": CATEGORIES[search_type],
                "max_results": {"min": 1, "max": rule.max_count, "default": rule.default_count},
                "offset": {"min": 0, "max": brave_api.MAX_OFFSET},
                "safe_search": {"values": ["off", "moderate", "strict"], "default": rule.default_safe_search},
                "parameters": sorted((rule.supported | {"offset"}) - _BRAVE_ONLY_OPTIONS),
            }
            continue
        out[search_type] = {
            "endpoint": rule.endpoint.value,
            "max_results": {"min": 1, "max": rule.max_count, "default": rule.default_count},
            "offset": {"min": 0, "max": brave_api.MAX_OFFSET} if rule.has_offset else None,
            "safe_search": {"values": list(rule.safe_search_values), "brave_default": rule.default_safe_search},
            "parameters": sorted(rule.supported),
        }
    return out


def limits(settings: Settings) -> dict[str, Any]:
    """Limits in force: Brave's (or SearXNG's, when it is the only provider), the output clamps, and this server's
    rate and cache settings."""
    searxng = searxng_only(settings)
    found: dict[str, Any] = {
        "query": {"max_chars": brave_api.MAX_QUERY_CHARS, "max_words": brave_api.MAX_QUERY_WORDS},
        "offset": {"min": 0, "max": brave_api.MAX_OFFSET, "meaning": "page index (skips offset * max_results)"},
        "max_results": {k: v["max_results"] for k, v in search_type_rules(searxng=searxng).items()},
        "output": {
            "max_lines": {"min": MIN_MAX_LINES, "max": MAX_MAX_LINES, "default": settings.max_lines},
            "max_bytes": {"min": MIN_MAX_BYTES, "max": MAX_MAX_BYTES, "default": settings.max_bytes},
        },
        "freshness": {"shortcuts": list(brave_api.FRESHNESS_SHORTCUTS), "range": "YYYY-MM-DDtoYYYY-MM-DD"},
        "rate": {
            "requests_per_second": settings.rate_limit or "adaptive (starts at 1, follows the plan Brave reports)",
            "burst": settings.burst or "adaptive",
            "retries": settings.retries,
        },
        "cache": {
            "ttl_seconds": settings.cache_ttl_seconds,
            "freshness_ttl_seconds": min(60.0, settings.cache_ttl_seconds),
            "max_entries": settings.cache_size,
        },
        "deadlines": {
            "call_seconds": settings.call_deadline_seconds,
            "attempt_seconds": settings.timeout_seconds,
            "summarizer_seconds": settings.summarizer_deadline_seconds,
        },
        "providers": list(settings.providers),
        "ui": _ui(settings),
    }
    if searxng:  # SearXNG's own: no word limit, no date ranges, its pace, its time per call
        found["query"] = {"max_chars": MAX_QUERY_CHARS}
        found["freshness"] = {"shortcuts": list(brave_api.FRESHNESS_SHORTCUTS)}
        found["rate"] = {
            "requests_per_second": "2 until the instance's bot limiter answers 429, then the pace it allows"
        }
        found["deadlines"] = {
            "call_seconds": settings.call_deadline_seconds,
            "searxng_seconds": settings.searxng_timeout_seconds,
        }
    return found


def _ui(settings: Settings) -> dict[str, Any]:
    """The MCP Apps widgets: served only with --ui (the UI code is not even imported without it)."""
    if not settings.ui:
        return {"enabled": False, "how": "start with --ui or BRAVE_SEARCH_UI=1 to serve widgets to MCP Apps hosts"}
    from brave_search_mcp import ui

    return {
        "enabled": True,
        "widgets": [{"uri": w.uri, "tools": list(w.tools), "bytes": w.size_bytes} for w in ui.widgets()],
    }


def error_catalogue(*, searxng: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Every error and warning code with what the agent should do about it (``searxng``: in SearXNG's words)."""
    retryable_by_code = default_retryable()
    provider = "searxng" if searxng else "brave"
    meanings = {**WARNING_ADVICE, **_SEARXNG_WARNINGS} if searxng else WARNING_ADVICE
    return {
        "error_codes": [
            {
                "code": code.value,
                "retryable": retryable_by_code.get(code, False),
                "what_to_do": advice_for(code, provider),
            }
            for code in ErrorCode
            if not (searxng and code in _BRAVE_CODES)
        ],
        # not "warnings": in an envelope that key means this call's own soft problems
        "warning_codes": [
            {"code": code.value, "meaning": meanings[code]}
            for code in WarningCode
            if not (searxng and code in _BRAVE_CODES)
        ],
    }


def build_help(topic: HelpTopic, settings: Settings, tools: Sequence[ToolDoc]) -> dict[str, Any]:
    """The structured help document for one topic (or all), covering the enabled ``tools`` only."""
    doc: dict[str, Any] = {"api_version": API_VERSION, "topic": topic}
    names = {tool.name for tool in tools}
    searxng = searxng_only(settings)
    if topic in ("params", "all"):
        doc["tools"] = {tool.name: tool.help for tool in tools}
        doc["parameters"] = {tool.name: describe_model(tool.input_model, settings.providers) for tool in tools}
        doc["search_types"] = search_type_rules(searxng=searxng)
    if topic in ("examples", "all"):
        doc["examples"] = [
            example
            for example in EXAMPLES
            if example["tool"] in names and not (searxng and _BRAVE_EXAMPLE_OPTIONS & set(example["arguments"]))
        ]
    if topic in ("limits", "all"):
        doc["limits"] = limits(settings)
    if topic in ("errors", "all"):
        doc.update(error_catalogue(searxng=searxng))
    return doc


def render_help_text(doc: dict[str, Any]) -> str:
    """Compact text of the help document: one line per parameter, example or code."""
    lines: list[str] = [f"brave-search help ({doc['topic']})"]
    for tool, entries in doc.get("parameters", {}).items():
        lines.append(f"## {tool}")
        if doc.get("tools", {}).get(tool):
            lines.append(doc["tools"][tool])
        for e in entries:
            bits = [e["type"], "required" if e["required"] else f"default {e.get('default')!r}"]
            bits.extend(f"{key[:3]} {e[key]}" for key in ("minimum", "maximum") if key in e)
            if "aliases" in e:
                bits.append("alias " + "/".join(e["aliases"]))
            line = f"- {e['name']} ({', '.join(bits)})"
            if e.get("description"):
                line += f": {e['description']}"
            if e.get("values"):
                line += f" Values: {' '.join(str(v) for v in e['values'])}"
            lines.append(line)
    for name, rule in doc.get("search_types", {}).items():
        offset = "offset 0-9" if rule["offset"] else "no offset"
        safe = "/".join(rule["safe_search"]["values"])
        lines.append(
            f"- search_type {name}: max_results 1-{rule['max_results']['max']} "
            f"(default {rule['max_results']['default']}), {offset}, safe_search {safe}; "
            f"params: {', '.join(rule['parameters'])}"
        )
    if "examples" in doc:
        lines.append("## examples")
        lines.extend(f"- {ex['tool']} ({ex['why']}): {_json(ex['arguments'])}" for ex in doc["examples"])
    if "limits" in doc:
        lines.append("## limits")
        lines.extend(f"- {key}: {_json(value)}" for key, value in doc["limits"].items())
    if "error_codes" in doc:
        lines.append("## error codes")
        lines.extend(
            f"- {e['code']} ({'retryable' if e['retryable'] else 'not retryable'}): {e['what_to_do']}"
            for e in doc["error_codes"]
        )
        lines.append("## warning codes")
        lines.extend(f"- {w['code']}: {w['meaning']}" for w in doc["warning_codes"])
    return "\n".join(lines)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def run(args: HelpArgs, ports: Ports, call: Call) -> tuple[dict[str, Any], str]:
    """The tool: the reference over the enabled tools."""
    doc = build_help(args.topic, ports.settings, [ToolDoc(t.name, t.input_model, t.help) for t in call.tools])
    return doc, render_help_text(doc)


SPEC = ToolSpec(
    name=NAME,
    title="Brave search help",
    description=(
        "Parameter reference (countries, languages, ranges), ready-to-send examples, limits in force, and "
        "every error and warning code with what to do."
    ),
    help="This reference: parameters of every enabled tool, examples, limits and codes.",
    guide="valid parameter values, limits and error codes",
    input_model=HelpArgs,
    run=run,
    cli=CliShape(
        "tool-help", "parameter reference, examples, limits, error codes", positional="topic", optional_positional=True
    ),
    library="help",
)
