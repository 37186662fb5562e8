"""Soft rules for Brave parameters: values are collected with a warning for every change, in call order."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from brave_search_mcp.brave.facts import (
    COUNTRIES,
    COUNTRY_ALIASES,
    MAX_QUERY_CHARS,
    MAX_QUERY_WORDS,
    SEARCH_LANGUAGE_ALIASES,
    SEARCH_LANGUAGES,
)
from brave_search_mcp.models.envelopes import WarningItem
from brave_search_mcp.models.errors import InvalidArgument, WarningCode
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
        """A query Brave accepts: whitespace folded, cut at a word boundary to its limits (with a warning); one
        with nothing else (only control or white-space characters) is refused, never sent empty."""
        clean = " ".join(strip_controls(raw).split())
        if not clean:
            raise InvalidArgument(
                f"{name} must not be empty (it had only control, zero-width or white-space characters)", field=name
            )
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

    def code(self, rule: CodeRule, value: str | None, *, field: str | None = None, param: str | None = None,
             lower: bool = False) -> str | None:  # fmt: skip
        """Brave's code for ``value`` (an unambiguous alias rewritten, said in a warning), or None and a warning
        naming the field when Brave has none; sent under ``param`` (the rule's own by default)."""
        if value is None:
            return None
        name = field or rule.field
        code = rule.normalize(value)
        if code in rule.aliases:
            self.warn(WarningCode.VALUE_NORMALIZED, f"{name} {shown(value)} was sent as {rule.aliases[code]}.")
            code = rule.aliases[code]
        if code not in rule.allowed:
            self.warn(rule.invalid, f"{name} {shown(value)} is not supported by Brave; it was dropped. {rule.advice}")
            return None
        sent = code.lower() if lower else code
        self.send(param or rule.param, sent)
        return sent

    def country(self, value: str | None, *, param: str = "country", lower: bool = False) -> str | None:
        """Brave's country code for ``value``, or None and INVALID_COUNTRY."""
        return self.code(COUNTRY, value, param=param, lower=lower)

    def language(self, value: str | None, *, field: str = "search_language", param: str = "search_lang") -> str | None:
        """Brave's search language for ``value``, or None and INVALID_SEARCH_LANGUAGE."""
        return self.code(SEARCH_LANGUAGE, value, field=field, param=param)


@dataclass(frozen=True)
class CodeRule:
    """How one enumerated code parameter is checked: its spelling, aliases, Brave's list and what to say."""

    field: str
    param: str
    normalize: Callable[[str], str]
    aliases: Mapping[str, str]
    allowed: tuple[str, ...]
    invalid: WarningCode
    advice: str


COUNTRY = CodeRule(
    "country",
    "country",
    lambda value: value.strip().upper(),
    COUNTRY_ALIASES,
    COUNTRIES,
    WarningCode.INVALID_COUNTRY,
    "Use a 2-letter code such as US or DE, ALL for worldwide, or see brave_web_search_help for the list.",
)
SEARCH_LANGUAGE = CodeRule(
    "search_language",
    "search_lang",
    lambda value: value.strip().lower().replace("_", "-"),
    SEARCH_LANGUAGE_ALIASES,
    SEARCH_LANGUAGES,
    WarningCode.INVALID_SEARCH_LANGUAGE,
    "Use a code such as en, de, zh-hans or pt-br (brave_web_search_help lists them).",
)


def bool_text(value: bool) -> str:
    """Brave's spelling of a boolean query value."""
    return "true" if value else "false"
