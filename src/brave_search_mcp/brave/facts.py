"""Brave Search API facts as data: endpoints, per-endpoint limits, enumerations, plans and error codes.

Pure: no I/O and no imports of the HTTP client, so validation, help, status and the fake upstream
share one truth (reference/brave-api.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from enum import StrEnum
from types import MappingProxyType
from urllib.parse import urlsplit

from brave_search_mcp._version import __version__
from brave_search_mcp.models.inputs import SafeSearch


class Endpoint(StrEnum):
    """Brave API paths (relative to the base URL)."""

    WEB = "/res/v1/web/search"
    NEWS = "/res/v1/news/search"
    IMAGES = "/res/v1/images/search"
    VIDEOS = "/res/v1/videos/search"
    SUMMARIZER = "/res/v1/summarizer/search"
    LOCAL_POIS = "/res/v1/local/pois"
    LOCAL_DESCRIPTIONS = "/res/v1/local/descriptions"
    LLM_CONTEXT = "/res/v1/llm/context"
    PLACE_SEARCH = "/res/v1/local/place_search"
    CHAT = "/res/v1/chat/completions"


SEARCH_ENDPOINTS: dict[str, Endpoint] = {
    "web": Endpoint.WEB,
    "news": Endpoint.NEWS,
    "images": Endpoint.IMAGES,
    "videos": Endpoint.VIDEOS,
}

# Top-level ``type`` of each search endpoint's answer (reference/brave-api.md §2).
ANSWER_TYPES: Mapping[str, str] = MappingProxyType(
    {"web": "search", "news": "news", "videos": "videos", "images": "images"}
)
ENDPOINT_NAMES: dict[Endpoint, str] = {
    Endpoint.WEB: "web",
    Endpoint.NEWS: "news",
    Endpoint.IMAGES: "images",
    Endpoint.VIDEOS: "videos",
    Endpoint.SUMMARIZER: "summarizer",
    Endpoint.LOCAL_POIS: "local_pois",
    Endpoint.LOCAL_DESCRIPTIONS: "local_descriptions",
    Endpoint.LLM_CONTEXT: "llm_context",
    Endpoint.PLACE_SEARCH: "place_search",
    Endpoint.CHAT: "answers",
}

USER_AGENT = f"brave-search-mcp/{__version__} (+https://github.com/brave-search-mcp)"
MESSAGE_CAP_CHARS = 300
DETAIL_VALUE_CAP_CHARS = 200
MAX_VALIDATION_ERRORS = 5
AUTH_CODES: frozenset[str] = frozenset({"SUBSCRIPTION_TOKEN_INVALID", "SUBSCRIPTION_NOT_FOUND"})
PLAN_CODES: frozenset[str] = frozenset({"OPTION_NOT_IN_PLAN", "RESOURCE_NOT_ALLOWED"})
META_DETAIL_FIELDS: tuple[str, ...] = ("plan", "rate_limit", "quota_limit", "quota_current", "component")
# Which Brave plan includes an endpoint, for NOT_IN_PLAN messages (reference/brave-api.md §1).
PLAN_NEEDED: dict[Endpoint, str] = {
    Endpoint.SUMMARIZER: "Pro AI (the legacy summarizer plan)",
    Endpoint.LLM_CONTEXT: "Search",
    Endpoint.LOCAL_POIS: "Search",
    Endpoint.LOCAL_DESCRIPTIONS: "Search",
    Endpoint.PLACE_SEARCH: "Search",
    Endpoint.CHAT: "Answers",
}
BRAVE_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
MISSING_KEY_MESSAGE = (
    "No Brave Search API key is configured: set BRAVE_SEARCH_API_KEY (or BRAVE_API_KEY, "
    "or BRAVE_API_KEY_FILE naming a file that holds the key), or store it in ~/.config/brave-search-mcp/api-key."
)


# Brave's enumerations, in the documented order (reference/brave-api.md §4.1-4.4).
COUNTRIES: tuple[str, ...] = (
    "AR", "AU", "AT", "BE", "BR", "CA", "CL", "DK", "FI", "FR", "DE", "GR", "HK", "IN", "ID", "IT", "JP", "KR",
    "MY", "MX", "NL", "NZ", "NO", "CN", "PL", "PT", "PH", "RU", "SA", "ZA", "ES", "SE", "CH", "TW", "TR", "GB",
    "US", "ALL",
)  # fmt: skip
SEARCH_LANGUAGES: tuple[str, ...] = (
    "ar", "eu", "bn", "bg", "ca", "zh-hans", "zh-hant", "hr", "cs", "da", "nl", "en", "en-gb", "et", "fi", "fr",
    "gl", "de", "el", "gu", "he", "hi", "hu", "is", "it", "ja", "jp", "kn", "ko", "lv", "lt", "ms", "ml", "mr",
    "nb", "pl", "pt-br", "pt-pt", "pa", "ro", "ru", "sr", "sk", "sl", "es", "sv", "ta", "te", "th", "tr", "uk",
    "vi",
)  # fmt: skip
UI_LANGUAGES: tuple[str, ...] = (
    "es-AR", "en-AU", "de-AT", "nl-BE", "fr-BE", "pt-BR", "en-CA", "fr-CA", "es-CL", "da-DK", "fi-FI", "fr-FR",
    "de-DE", "el-GR", "zh-HK", "en-IN", "en-ID", "it-IT", "ja-JP", "ko-KR", "en-MY", "es-MX", "nl-NL", "en-NZ",
    "no-NO", "zh-CN", "pl-PL", "en-PH", "ru-RU", "en-ZA", "es-ES", "sv-SE", "fr-CH", "de-CH", "zh-TW", "tr-TR",
    "en-GB", "en-US", "es-US",
)  # fmt: skip
FRESHNESS_SHORTCUTS: tuple[str, ...] = ("pd", "pw", "pm", "py")
# "query" is always returned by Brave anyway; "summarizer" is never sent (it suppresses web results, see below).
RESULT_FILTERS: tuple[str, ...] = (
    "discussions", "faq", "infobox", "news", "query", "summarizer", "videos", "web", "locations",
)  # fmt: skip
UNITS: tuple[str, ...] = ("metric", "imperial")

MAX_QUERY_CHARS = 400
MAX_QUERY_WORDS = 50
MAX_OFFSET = 9
DEFAULT_COUNT = 10
MAX_GOGGLES = 3
MAX_SHOWN_VALUE_CHARS = 60

# Unambiguous rewrites to Brave's spellings; anything else outside the lists is dropped.
SEARCH_LANGUAGE_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "zh": "zh-hans",
        "zh-cn": "zh-hans",
        "zh-sg": "zh-hans",
        "zh-tw": "zh-hant",
        "zh-hk": "zh-hant",
        "en-us": "en",
        "en-ca": "en",
        "en-au": "en",
        "iw": "he",
    }
)
UI_LANGUAGE_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "en": "en-US",
        "de": "de-DE",
        "fr": "fr-FR",
        "ja": "ja-JP",
        "es": "es-ES",
        "it": "it-IT",
        "nl": "nl-NL",
        "pt": "pt-BR",
        "ru": "ru-RU",
        "zh": "zh-CN",
        "ko": "ko-KR",
        "pl": "pl-PL",
        "sv": "sv-SE",
        "da": "da-DK",
        "fi": "fi-FI",
        "tr": "tr-TR",
        "el": "el-GR",
        "no": "no-NO",
        "nb": "no-NO",
    }
)
COUNTRY_ALIASES: Mapping[str, str] = MappingProxyType({"UK": "GB"})

WEB_FIELDS: tuple[str, ...] = (
    "max_results",
    "offset",
    "country",
    "search_language",
    "ui_language",
    "safe_search",
    "freshness",
    "units",
    "spellcheck",
    "extra_snippets",
    "text_decorations",
    "result_filter",
    "goggles",
    "summary",
)
SUPPORTED: dict[str, frozenset[str]] = {
    "web": frozenset(WEB_FIELDS),
    "news": frozenset(
        {
            "country",
            "search_language",
            "ui_language",
            "safe_search",
            "freshness",
            "spellcheck",
            "extra_snippets",
            "goggles",
            "offset",
            "max_results",
        }
    ),
    "videos": frozenset(
        {"country", "search_language", "ui_language", "safe_search", "freshness", "spellcheck", "offset", "max_results"}
    ),
    "images": frozenset({"country", "search_language", "safe_search", "spellcheck", "max_results"}),
}
# Brave's true ranges (low, high) of the budget parameters: LLM context §3.11, Answers research §3.12.
PARAM_RANGES: dict[Endpoint, dict[str, tuple[int, int]]] = {
    Endpoint.LLM_CONTEXT: {
        "count": (1, 50),
        "maximum_number_of_urls": (1, 50),
        "maximum_number_of_tokens": (1024, 32768),
        "maximum_number_of_snippets": (1, 100),
        "maximum_number_of_tokens_per_url": (512, 8192),
        "maximum_number_of_snippets_per_url": (1, 100),
    },
    Endpoint.CHAT: {
        "research_maximum_number_of_tokens_per_query": (1024, 16384),
        "research_maximum_number_of_queries": (1, 50),
        "research_maximum_number_of_iterations": (1, 5),
        "research_maximum_number_of_seconds": (1, 300),
        "research_maximum_number_of_results_per_query": (1, 60),
    },
}
MAX_COUNT: dict[str, int] = {"web": 20, "news": 50, "videos": 50, "images": 200}
DEFAULT_SAFE_SEARCH: dict[str, SafeSearch] = {
    "web": "moderate",
    "news": "strict",
    "videos": "moderate",
    "images": "strict",
}
FULL_SAFE_SEARCH: tuple[SafeSearch, ...] = ("off", "moderate", "strict")
IMAGE_SAFE_SEARCH: tuple[SafeSearch, ...] = ("off", "strict")

DATE_RANGE = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})to([0-9]{4}-[0-9]{2}-[0-9]{2})")


def valid_freshness(value: str) -> bool:
    """Whether Brave accepts ``value`` as freshness: a shortcut or a real, ordered date range."""
    if value in FRESHNESS_SHORTCUTS:
        return True
    match = DATE_RANGE.fullmatch(value)
    if match is None:
        return False
    try:
        start, end = date.fromisoformat(match.group(1)), date.fromisoformat(match.group(2))
    except ValueError:
        return False
    return start <= end


def is_goggle(entry: str) -> bool:
    """Whether a goggle is acceptable: an https URL with a host, or an inline rule set."""
    if "\n" in entry or entry.startswith(("$", "!")):
        return True
    if any(ch.isspace() for ch in entry):
        return False
    try:
        parts = urlsplit(entry)
    except ValueError:
        return False
    return parts.scheme == "https" and bool(parts.hostname)
