"""Brave's documented vocabulary for the search endpoints (reference/brave-api.md §3-4): the one copy in the fake.

Written from Brave's documentation, not imported from ``brave_search_mcp.brave.facts``: a fake that read the
product's lists would agree with the product's mistakes.
"""

from __future__ import annotations

from collections.abc import Mapping

COUNTRIES: tuple[str, ...] = (
    "AR", "AU", "AT", "BE", "BR", "CA", "CL", "DK", "FI", "FR", "DE", "GR", "HK", "IN", "ID", "IT", "JP", "KR",
    "MY", "MX", "NL", "NZ", "NO", "CN", "PL", "PT", "PH", "RU", "SA", "ZA", "ES", "SE", "CH", "TW", "TR", "GB",
    "US", "ALL",
)  # fmt: skip
SEARCH_LANGS: tuple[str, ...] = (
    "ar", "eu", "bn", "bg", "ca", "zh-hans", "zh-hant", "hr", "cs", "da", "nl", "en", "en-gb", "et", "fi", "fr",
    "gl", "de", "el", "gu", "he", "hi", "hu", "is", "it", "ja", "jp", "kn", "ko", "lv", "lt", "ms", "ml", "mr",
    "nb", "pl", "pt-br", "pt-pt", "pa", "ro", "ru", "sr", "sk", "sl", "es", "sv", "ta", "te", "th", "tr", "uk",
    "vi",
)  # fmt: skip
UI_LANGS: tuple[str, ...] = (
    "es-AR", "en-AU", "de-AT", "nl-BE", "fr-BE", "pt-BR", "en-CA", "fr-CA", "es-CL", "da-DK", "fi-FI", "fr-FR",
    "de-DE", "el-GR", "zh-HK", "en-IN", "en-ID", "it-IT", "ja-JP", "ko-KR", "en-MY", "es-MX", "nl-NL", "en-NZ",
    "no-NO", "zh-CN", "pl-PL", "en-PH", "ru-RU", "en-ZA", "es-ES", "sv-SE", "fr-CH", "de-CH", "zh-TW", "tr-TR",
    "en-GB", "en-US", "es-US",
)  # fmt: skip
RESULT_FILTERS = ("discussions", "faq", "infobox", "news", "query", "summarizer", "videos", "web", "locations")

# Parameters each endpoint documents (§3); anything else is rejected (strict fake).
ALLOWED: Mapping[str, tuple[str, ...]] = {
    "web": (
        "q", "country", "search_lang", "ui_lang", "count", "offset", "safesearch", "freshness", "text_decorations",
        "spellcheck", "result_filter", "goggles_id", "goggles", "units", "extra_snippets", "summary",
        "enable_rich_callback", "include_fetch_metadata", "operators",
    ),
    "news": (
        "q", "country", "search_lang", "ui_lang", "count", "offset", "safesearch", "freshness", "spellcheck",
        "extra_snippets", "goggles", "include_fetch_metadata", "operators",
    ),
    "videos": (
        "q", "country", "search_lang", "ui_lang", "count", "offset", "safesearch", "freshness", "spellcheck",
        "include_fetch_metadata", "operators",
    ),
    "images": ("q", "country", "search_lang", "count", "safesearch", "spellcheck"),
    "summarizer": ("key", "entity_info", "inline_references"),
}  # fmt: skip
BOOL_PARAMS = frozenset(
    {
        "text_decorations", "spellcheck", "extra_snippets", "summary", "enable_rich_callback",
        "include_fetch_metadata", "operators", "entity_info", "inline_references",
    }
)  # fmt: skip
COUNT_MAX: Mapping[str, int] = {"web": 20, "news": 50, "videos": 50, "images": 200}
COUNT_DEFAULT: Mapping[str, int] = {"web": 20, "news": 20, "videos": 20, "images": 50}
SAFESEARCH: Mapping[str, tuple[str, ...]] = {
    "web": ("off", "moderate", "strict"),
    "news": ("off", "moderate", "strict"),
    "videos": ("off", "moderate", "strict"),
    "images": ("off", "strict"),
}
UNITS = ("metric", "imperial")
FRESHNESS_PATTERN = r"^(pd|pw|pm|py|\d{4}-\d{2}-\d{2}to\d{4}-\d{2}-\d{2})$"
MAX_Q_CHARS = 400
MAX_Q_WORDS = 50
OFFSET_MAX = 9
