"""Soft rules for Brave parameters: values are collected with a warning for every change, in call order."""

from __future__ import annotations

from brave_search_mcp.brave.facts import (
    COUNTRIES,
    COUNTRY_ALIASES,
    MAX_QUERY_CHARS,
    MAX_QUERY_WORDS,
    SEARCH_LANGUAGE_ALIASES,
    SEARCH_LANGUAGES,
)
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.errors import WarningCode
from brave_search_mcp.render.text import shown, strip_controls

Params = list[tuple[str, str]]


class Collector:
    """Params and warnings in call order, so both come out stable and every change is said."""

    def __init__(self) -> None:
        self.params: Params = []
        self.warnings: list[WarningItem] = []

    def warn(self, code: WarningCode, message: str) -> None:
        """Record a soft problem."""
        self.warnings.append(WarningItem(code=code.value, message=message))

    def send(self, key: str, value: str) -> None:
        """Record one query parameter."""
        self.params.append((key, value))

    def query(self, name: str, raw: str, *, max_chars: int = MAX_QUERY_CHARS, max_words: int = MAX_QUERY_WORDS) -> str:
        """A query Brave accepts: whitespace folded, cut at a word boundary to its limits (with a warning)."""
        clean = " ".join(strip_controls(raw).split())
        words = clean.split(" ")[:max_words]
        while len(words) > 1 and len(" ".join(words)) > max_chars:
            words.pop()
        fitted = " ".join(words)[:max_chars].rstrip()
        if fitted != clean:
            self.warn(
                WarningCode.QUERY_TRUNCATED,
                f"{name} had {len(clean)} characters / {len(clean.split())} words; it was cut to {len(fitted)} "
                f"characters (Brave allows {max_chars} / {max_words} words).",
            )
        return fitted

    def clamp(self, name: str, value: int | None, low: int, high: int, *, param: str | None = None) -> int | None:
        """Clamp an optional integer to Brave's range, warning when it moved; send it under ``param``."""
        if value is None:
            return None
        clamped = min(max(value, low), high)
        if clamped != value:
            self.warn(WarningCode.COUNT_CLAMPED, f"{name} {value} is outside Brave's {low}-{high}; {clamped} was sent.")
        if param is not None:
            self.send(param, str(clamped))
        return clamped

    def country(self, value: str | None, *, param: str = "country", lower: bool = False) -> str | None:
        """Brave's country code for ``value`` (aliases rewritten), or None and a warning when Brave has none."""
        if value is None:
            return None
        code = value.strip().upper()
        code = COUNTRY_ALIASES.get(code, code)
        if code not in COUNTRIES:
            self.warn(
                WarningCode.INVALID_COUNTRY,
                f"country {shown(value)} is not supported by Brave; it was dropped (use e.g. US, DE or ALL).",
            )
            return None
        sent = code.lower() if lower else code
        self.send(param, sent)
        return sent

    def language(self, value: str | None, *, param: str = "search_lang") -> str | None:
        """Brave's search language for ``value`` (aliases rewritten), or None and a warning."""
        if value is None:
            return None
        code = value.strip().lower().replace("_", "-")
        if code in SEARCH_LANGUAGE_ALIASES:
            self.warn(
                WarningCode.VALUE_NORMALIZED, f"language {shown(value)} was sent as {SEARCH_LANGUAGE_ALIASES[code]}."
            )
            code = SEARCH_LANGUAGE_ALIASES[code]
        if code not in SEARCH_LANGUAGES:
            self.warn(
                WarningCode.INVALID_SEARCH_LANGUAGE,
                f"language {shown(value)} is not supported by Brave; it was dropped (use e.g. en, de, zh-hans).",
            )
            return None
        self.send(param, code)
        return code


def bool_text(value: bool) -> str:
    """Brave's spelling of a boolean query value."""
    return "true" if value else "false"
