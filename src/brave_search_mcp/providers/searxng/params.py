"""Our request → the form SearXNG's ``/search`` takes, with a warning for everything it cannot express (pure).

Facts from a real instance (team notes, searxng-real.md §b, §c, §f): SearXNG reads its own syntax in *every*
token of ``q`` (``!!bang`` sends the browser to another site, ``!name`` picks engines, ``:xx`` a language,
``<N`` a timeout) and has no escape for it; it validates ``language`` and rejects Brave's ``zh-hans``; with
no ``safesearch`` the instance's own default applies.
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

__all__ = ["CATEGORIES", "LANGUAGES", "escape_syntax", "search_form"]

CATEGORIES: Mapping[str, str] = MappingProxyType(
    {"web": "general", "news": "news", "images": "images", "videos": "videos"}
)
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


def _language(request: SearchRequest, warnings: list[WarningItem]) -> str:
    """SearXNG's ``language``: the mapped code, with the country as its region when it has none; else all."""
    country = (request.country or "").strip().upper()
    if not request.language:
        if country and country != "ALL":
            warnings.append(
                WarningItem(
                    code=WarningCode.PARAM_IGNORED,
                    message="SearXNG filters by language, not country; country was not sent (give a language).",
                )
            )
        return "all"  # sent explicitly: otherwise the instance would take it from our Accept-Language
    code = request.language.strip().lower()
    language = LANGUAGES.get(code)
    if language is None:
        warnings.append(
            WarningItem(
                code=WarningCode.INVALID_SEARCH_LANGUAGE,
                message=f"search_language {shown(code)} has no SearXNG equivalent; it was not sent.",
            )
        )
        return "all"
    if "-" not in language and len(country) == 2 and country.isalpha() and country != "ALL":
        language = f"{language}-{country}"  # engines read "en-DE" territory first: results for Germany, in English
    return language


def search_form(request: SearchRequest) -> tuple[dict[str, str], list[WarningItem]]:
    """The form fields of one ``/search`` request (every page but ``pageno``) and what the caller should know."""
    warnings: list[WarningItem] = []
    query, escaped = escape_syntax(request.query)
    if escaped:
        warnings.append(
            WarningItem(
                code=WarningCode.QUERY_ESCAPED,
                message=f"SearXNG reads {', '.join(shown(t) for t in escaped[:5])} as its own syntax (bang, "
                "language or timeout); sent in double quotes so it is searched as text.",
            )
        )
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
                "not sent (only Brave supports them).",
            )
        )
    return form, warnings
