"""What a real SearXNG reads out of a request before any engine runs: its query syntax and its validation.

Written from SearXNG's ``searx/query.py`` and ``webadapter.py`` (commit 9fea412) and from measurements of a
real instance (team notes, searxng-real.md §b, §c, §g): every whitespace-separated token of ``q`` is checked,
anywhere in the query — ``<N`` (digits) is a timeout, ``:xx`` a language, ``!!name`` an external bang (the
instance answers 302 to another site), ``!name`` an engine, shortcut or category (it overrides
``categories=``), ``!!`` alone "feeling lucky" — and a recognised token is removed from what the engines get.
Unrecognised tokens stay in the query. Quotes are not special: a token starting with ``"`` is plain text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote_plus

__all__ = ["ENGINES", "EXTERNAL_BANGS", "SHORTCUTS", "ParsedQuery", "invalid_parameter", "parse_query"]

ENGINES: Mapping[str, tuple[str, ...]] = {
    "general": ("duckduckgo", "bing", "yacy"),
    "news": ("bing news", "yahoo news"),
    "images": ("bing images", "flickr"),
    "videos": ("youtube", "peertube"),
}
SHORTCUTS: Mapping[str, str] = {"ddg": "duckduckgo", "bi": "bing", "ya": "yacy", "yt": "youtube", "fl": "flickr"}
# A few of SearXNG's 13,561 external bangs (searx/data/external_bangs.json): where each sends the query.
EXTERNAL_BANGS: Mapping[str, str] = {
    "g": "https://www.google.com/search?q={}",
    "ddg": "http://duckduckgo.com/?q={}",
    "w": "https://en.wikipedia.org/wiki/Special:Search?search={}",
    "images": "https://duckduckgo.com/?q={}&ia=images&iax=images",
}
# Language names SearXNG also accepts after ":" (a sample of sxng_locales), lower-cased.
_LANGUAGE_NAMES: Mapping[str, str] = {
    "english": "en",
    "french": "fr",
    "deutsch": "de",
    "german": "de",
    "chinese": "zh-TW",
}
VALID_LANGUAGE = re.compile(r"^[a-z]{2,3}(-[a-zA-Z]{2})?$")  # searx.webutils.VALID_LANGUAGE_CODE
TIME_RANGES = ("day", "week", "month", "year")


@dataclass
class ParsedQuery:
    """``q`` as SearXNG understood it: the text the engines get and every token it took as syntax."""

    query: str
    languages: list[str] = field(default_factory=list)
    timeout: float | None = None
    external_bang: str | None = None
    engines: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    lucky: bool = False

    def redirect(self) -> str | None:
        """Where an external bang sends the browser (``Location`` of the 302), or None."""
        if self.external_bang is None:
            return None
        target = EXTERNAL_BANGS[self.external_bang]
        return target.format(quote_plus(self.query)) if self.query else target.split("/search")[0].split("?")[0]


def _engine(name: str) -> tuple[str | None, str | None]:
    """``(engine, category)`` a ``!name`` token selects, as SearXNG's BangParser resolves it."""
    value = name.replace("-", " ").replace("_", " ").lower()
    value = SHORTCUTS.get(value, value)
    for category, engines in ENGINES.items():
        if value in engines:
            return value, category
    return (None, value) if value in ENGINES else (None, None)


def _language(value: str) -> str | None:
    value = value.lower().replace("_", "-")
    if value in _LANGUAGE_NAMES:
        return _LANGUAGE_NAMES[value]
    if VALID_LANGUAGE.match(value) or value == "auto":
        parts = value.split("-")
        return f"{parts[0]}-{parts[1].upper()}" if len(parts) > 1 else value
    return None


def _take(token: str, parsed: ParsedQuery) -> bool:
    """Whether ``token`` is SearXNG syntax; if so, note what it asks for (the parsers' order is SearXNG's)."""
    if token.startswith("<"):
        if token[1:].isdigit():
            number = int(token[1:])
            parsed.timeout = float(number) if number < 100 else number / 1000.0
            return True
        return False
    if token.startswith(":"):
        language = _language(token[1:]) if len(token) > 1 else None
        if language is not None:
            parsed.languages.append(language)
        return language is not None
    if token.startswith("!!") and len(token) > 2:
        if token[2:].lower() in EXTERNAL_BANGS:
            parsed.external_bang = token[2:].lower()
            return True
        return False
    if token == "!!":
        parsed.lucky = True
        return True
    if token.startswith("!") and len(token) > 1:
        engine, category = _engine(token[1:])
        if engine is not None:
            parsed.engines.append(engine)
        elif category is not None:
            parsed.categories.append(category)
        return engine is not None or category is not None
    return False


def parse_query(q: str) -> ParsedQuery:
    """Split ``q`` on whitespace and take out every token SearXNG reads as syntax; the rest, single-spaced."""
    parsed = ParsedQuery(query="")
    kept = [token for token in q.split() if not _take(token, parsed)]
    parsed.query = " ".join(kept)
    return parsed


def invalid_parameter(params: Mapping[str, str]) -> str | None:
    """SearXNG's 400 message for the first parameter it rejects, or None (``q`` is checked by the caller)."""
    pageno = params.get("pageno")
    if pageno is not None and (not pageno.isdigit() or int(pageno) < 1):
        return f"Invalid value {pageno} for parameter pageno"
    safesearch = params.get("safesearch")
    if safesearch == "":
        return "Empty safesearch parameter"
    if safesearch is not None and (not safesearch.isdigit() or int(safesearch) not in (0, 1, 2)):
        return f"Invalid value {safesearch} for parameter safesearch"
    language = params.get("language")
    if language == "":
        return "Empty language parameter"
    if language is not None and language not in ("all", "auto") and not VALID_LANGUAGE.match(language):
        return f"Invalid value {language} for parameter language"
    time_range = params.get("time_range")
    if time_range not in (None, "", "None", *TIME_RANGES):
        return f"Invalid value {time_range} for parameter time_range"
    timeout = params.get("timeout_limit")
    if timeout not in (None, "", "None"):
        try:
            float(timeout)
        except ValueError:
            return f"Invalid value {timeout} for parameter timeout_limit"
    return None
