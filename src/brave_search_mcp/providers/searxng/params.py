"""Our request → the form SearXNG's ``/search`` takes, with a warning for everything it cannot express (pure).

Facts from a real instance (team notes, searxng-real.md §b, §c, §f): SearXNG reads its own syntax in *every*
token of ``q`` (``!!bang`` sends the browser to another site, ``!name`` picks engines, ``:xx`` a language,
``<N`` a timeout) and has no escape for it; it validates ``language`` and rejects Brave's ``zh-hans``; with
no ``safesearch`` the instance's own default applies. Brave's rules (400 characters / 50 words, its country and
language lists) are not SearXNG's: the caller's query, country and language are judged here by SearXNG's own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from brave_search_mcp.brave.facts import DEFAULT_SAFE_SEARCH
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.errors import WarningCode
from brave_search_mcp.providers.protocol import SearchRequest
from brave_search_mcp.render.text import shown

__all__ = ["CATEGORIES", "LANGUAGES", "SECTIONS", "escape_syntax", "named_sections", "search_form"]

CATEGORIES: Mapping[str, str] = MappingProxyType(
    {"web": "general", "news": "news", "images": "images", "videos": "videos"}
)
# The sections a SearXNG web search answers with (``results.window_page``), which result_filter may name.
SECTIONS: tuple[str, ...] = ("web", "infobox", "answers", "suggestions")
# Brave's entries that name no section to show ("query") or ask for a summary ("summarizer", said elsewhere).
_NOT_SECTIONS = frozenset({"query", "summarizer"})
TIME_RANGES: Mapping[str, str] = MappingProxyType({"pd": "day", "pw": "week", "pm": "month", "py": "year"})
SAFESEARCH: Mapping[str, str] = MappingProxyType({"off": "0", "moderate": "1", "strict": "2"})

# Brave search_lang → SearXNG language, verified on a real instance (searxng-real.md §c): every value is
# accepted and resolved by most engines; the raw Brave codes differ only for these six (zh-hans/zh-hant →
# 400, jp reaches no engine as a language, and regions are upper-cased).
_SAME_IN_SEARXNG = (
    "ar", "eu", "bn", "bg", "ca", "hr", "cs", "da", "nl", "en", "et", "fi", "fr", "gl", "de", "el", "gu", "he",
    "hi", "hu", "is", "it", "ja", "kn", "ko", "lv", "lt", "ms", "ml", "mr", "nb", "pl", "pa", "ro", "ru", "sr",
    "sk", "sl", "es", "sv", "ta", "te", "th", "tr", "uk", "vi",
)  # fmt: skip
LANGUAGES: Mapping[str, str] = MappingProxyType(
    {
        **{code: code for code in _SAME_IN_SEARXNG},
        "zh-hans": "zh-CN",
        "zh-hant": "zh-TW",
        "jp": "ja",
        "en-gb": "en-GB",
        "pt-br": "pt-BR",
        "pt-pt": "pt-PT",
    }
)

# SearXNG itself takes a query of any length, but hands it to its engines in their URLs (about 2 KB at most on
# the big ones): a longer query would fail every engine, which would count against the search type's breaker.
MAX_QUERY_CHARS = 2000
# SearXNG's own check of ``language`` (searx/webutils.py VALID_LANGUAGE_CODE), lower-cased: xx, xxx, xx-yy.
_LOCALE = re.compile(r"[a-z]{2,3}(?:-[a-z]{2})?")

# Tokens SearXNG's query parser may take as syntax (searx/query.py), whatever engines the instance has:
# "<" + digits (timeout), ":" + a language code or name, "!!" alone or "!!name" (external bang), "!name".
_SYNTAX = re.compile(r"<\d+|:[^\W\d]+(?:[-_][^\W\d]+)*|!.+")


def escape_syntax(query: str) -> tuple[str, list[str]]:
    """Put every token SearXNG would read as syntax in double quotes, so the engines get it as text.

    Quotes are the one form SearXNG leaves alone that still reaches the engines as the same word (a quoted
    word is that exact word); a token that already holds a quote is never parsed. Inside a quoted phrase
    the added quotes split the phrase around the token, which engines then read as three exact parts.
    """
    escaped: list[str] = []
    tokens = query.split()
    for index, token in enumerate(tokens):
        if '"' not in token and _SYNTAX.fullmatch(token):
            tokens[index] = f'"{token}"'
            escaped.append(token)
    return " ".join(tokens), escaped


def _warn(warnings: list[WarningItem], code: WarningCode, message: str) -> None:
    warnings.append(WarningItem(code=code, message=message))


def _country(request: SearchRequest, warnings: list[WarningItem]) -> str:
    """The region the caller asked for (``""`` for none or worldwide): any two letters, SearXNG's engines judge."""
    asked = (request.country or request.asked_country or "").strip()
    country = asked.upper()
    if country == "ALL" or not country:
        return ""
    if len(country) != 2 or not country.isalpha():
        _warn(warnings, WarningCode.INVALID_COUNTRY, f"country {shown(asked)} is not a 2-letter code; it was not used.")
        return ""
    return country


def _language(request: SearchRequest, warnings: list[WarningItem]) -> str:
    """SearXNG's ``language``: the mapped code, with the country as its region when it has none; else all."""
    country = _country(request, warnings)
    asked = (request.language or request.asked_language or "").strip()
    if not asked:
        if country:
            _warn(
                warnings,
                WarningCode.PARAM_IGNORED,
                "SearXNG filters by language, not country; country was not sent (give a language).",
            )
        return "all"  # sent explicitly: otherwise the instance would take it from our Accept-Language
    code = asked.lower().replace("_", "-")
    language = LANGUAGES.get(code)
    if language is None and _LOCALE.fullmatch(code):
        head, _, region = code.partition("-")
        language = f"{head}-{region.upper()}" if region else head
    if language is None:
        _warn(
            warnings,
            WarningCode.INVALID_SEARCH_LANGUAGE,
            f"search_language {shown(asked)} has no SearXNG equivalent (a code such as en, de, zh-hans or pt-BR); "
            "it was not sent.",
        )
        return "all"
    region = language.partition("-")[2]
    if region and country and country != region:
        _warn(
            warnings,
            WarningCode.PARAM_IGNORED,
            f"SearXNG takes the region from the language: search_language {shown(asked)} is {language} there, so "
            f"country {country} was not used (give a language without a region, such as en, to use it).",
        )
    elif not region and country:
        language = f"{language}-{country}"  # engines read "en-DE" territory first: results for Germany, in English
    return language


def _query(raw: str, warnings: list[WarningItem], room: int = 0) -> str:
    """The query within what SearXNG's engines take, less ``room`` for the site terms (cut at a word boundary,
    said in a warning)."""
    limit = MAX_QUERY_CHARS - room
    if len(raw) <= limit:
        return raw
    cut = raw[: limit + 1]
    cut = (cut.rsplit(" ", 1)[0] if " " in cut else cut[:limit]).rstrip()
    terms = f", {room} of them left for the site terms" if room else ""
    _warn(
        warnings,
        WarningCode.QUERY_TRUNCATED,
        f"query had {len(raw)} characters; SearXNG hands it to its engines in their URLs, so it was cut to "
        f"{len(cut)} characters / {len(cut.split())} words (at most {MAX_QUERY_CHARS}{terms}).",
    )
    return cut


def search_form(request: SearchRequest) -> tuple[dict[str, str], list[WarningItem]]:
    """The form fields of one ``/search`` request (every page but ``pageno``) and what the caller should know."""
    warnings: list[WarningItem] = []
    # The site filter as engines' terms (site:a OR site:b -site:c), after the caller's text: SearXNG passes them on.
    terms = request.sites.operators() if request.sites is not None else ""
    query, escaped = escape_syntax(_query(request.query, warnings, len(terms) + 1 if terms else 0))
    if escaped:
        warnings.append(
            WarningItem(
                code=WarningCode.QUERY_ESCAPED,
                message=f"SearXNG reads {', '.join(shown(t) for t in escaped[:5])} as its own syntax (bang, "
                "language or timeout); sent in double quotes so it is searched as text.",
            )
        )
    query = f"{query} {terms}" if terms else query
    form = {"q": query, "format": "json", "categories": CATEGORIES[request.search_type]}
    form["language"] = _language(request, warnings)
    # Always sent, with Brave's default for the type when none was asked (else the instance's default applies).
    form["safesearch"] = SAFESEARCH[request.safe_search or DEFAULT_SAFE_SEARCH[request.search_type]]
    if request.freshness:
        time_range = TIME_RANGES.get(request.freshness)
        if time_range:
            form["time_range"] = time_range
        else:
            warnings.append(
                WarningItem(
                    code=WarningCode.PARAM_IGNORED,
                    message="SearXNG has no custom date ranges; searched without a time limit (use pd, pw, pm or py).",
                )
            )
    if request.brave_options:
        names = ", ".join(request.brave_options)
        warnings.append(
            WarningItem(
                code=WarningCode.PARAM_IGNORED,
                message=f"SearXNG has no {names}; {'it was' if len(request.brave_options) == 1 else 'they were'} "
                "not sent.",
            )
        )
    return form, warnings


def named_sections(request: SearchRequest, warnings: list[WarningItem]) -> tuple[str, ...] | None:
    """The sections of SearXNG's answer that result_filter names (None: no filter, or none SearXNG has: all are
    shown): SearXNG judges the filter by its own sections, and says which entries it has none for (not "not sent")."""
    if not request.result_filter:
        return None
    have = tuple(entry for entry in request.result_filter if entry in SECTIONS)
    lacking = [e for e in request.result_filter if e not in SECTIONS and e not in _NOT_SECTIONS]
    if lacking:
        shown_ = ", ".join(shown(entry) for entry in lacking[:5])
        what = f"shown: {', '.join(have)}" if have else "every section it has is shown"
        _warn(
            warnings,
            WarningCode.INVALID_RESULT_FILTER,
            f"result_filter {shown_}: SearXNG's answers have no such section; {what} (it has {', '.join(SECTIONS)}).",
        )
    return have or None
