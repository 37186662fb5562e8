"""Brave-like (pydantic-style) validation of the search endpoints' query parameters, and the small readers of them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .errors import field_error as _err
from .vocab import (
    ALLOWED,
    BOOL_PARAMS,
    COUNT_MAX,
    COUNTRIES,
    FRESHNESS_PATTERN,
    MAX_Q_CHARS,
    MAX_Q_WORDS,
    OFFSET_MAX,
    RESULT_FILTERS,
    SAFESEARCH,
    SEARCH_LANGS,
    UI_LANGS,
    UNITS,
)

_FRESHNESS_RE = re.compile(FRESHNESS_PATTERN)
_INT_RE = re.compile(r"^\s*[+-]?\d+\s*$")
_TRUE = frozenset({"true", "1"})
_FALSE = frozenset({"false", "0"})


def truthy(value: str | None, default: bool) -> bool:
    """A boolean parameter as Brave reads it (``true``/``1``), ``default`` when absent."""
    return default if value is None else value.strip().lower() in _TRUE


def fold(query: str) -> str:
    """A query compared as the fake's controls compare it: case-insensitive, whitespace collapsed."""
    return " ".join(query.lower().split())


def folded_in(query: str, queries: Iterable[str]) -> bool:
    """Whether ``query`` is one of ``queries`` once both are folded."""
    return fold(query) in {fold(item) for item in queries}


def parse_filter(value: str | None) -> list[str] | None:
    """``result_filter`` as a list of entries (None when absent)."""
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def validate(
    endpoint: str, params: Iterable[tuple[str, str]]
) -> tuple[dict[str, str], list[str], list[dict[str, Any]]]:
    """The values (the last one wins, as in FastAPI), the goggles and every error of one endpoint's parameters."""
    allowed = ALLOWED[endpoint]
    values: dict[str, str] = {}
    goggles: list[str] = []
    extras: list[dict[str, Any]] = []
    for name, value in params:
        if name not in allowed:
            if not any(e["loc"][1] == name for e in extras):
                extras.append(_err("extra_forbidden", name, "Extra inputs are not permitted", value))
        elif name == "goggles":
            goggles.append(value)
        else:
            values[name] = value
    errors: list[dict[str, Any]] = []
    required = "key" if endpoint == "summarizer" else "q"
    if required not in values:
        errors.append(_err("missing", required, "Field required", None))
    for name in allowed:
        if name == "goggles":
            errors.extend(_check_goggles(goggles))
            continue
        if name not in values:
            continue
        error = _check(endpoint, name, values[name])
        if error is not None:
            errors.append(error)
    return values, goggles, errors + extras


def _check(endpoint: str, name: str, value: str) -> dict[str, Any] | None:
    if name == "q":
        return _check_q(value)
    if name == "key":
        if not value:
            return _err("string_too_short", name, "String should have at least 1 character", value, {"min_length": 1})
        return None
    if name in BOOL_PARAMS:
        if value.strip().lower() in _TRUE | _FALSE:
            return None
        return _err("bool_parsing", name, "Input should be a valid boolean, unable to interpret input", value)
    if name == "count":
        return _check_int(name, value, 1, COUNT_MAX[endpoint])
    if name == "offset":
        return _check_int(name, value, 0, OFFSET_MAX)
    enums = {"search_lang": SEARCH_LANGS, "ui_lang": UI_LANGS, "units": UNITS}
    if name == "country":
        return _check_enum(name, value.upper(), COUNTRIES, value)
    if name in enums:
        return _check_enum(name, value, enums[name], value)
    if name == "safesearch":
        return _check_enum(name, value, SAFESEARCH[endpoint], value)
    if name == "freshness":
        if _FRESHNESS_RE.match(value):
            return None
        msg = f"String should match pattern '{FRESHNESS_PATTERN}'"
        return _err("string_pattern_mismatch", name, msg, value, {"pattern": FRESHNESS_PATTERN})
    if name == "result_filter":
        return _check_filter(value)
    return None  # goggles_id (deprecated, free text)


def _check_q(value: str) -> dict[str, Any] | None:
    if not value.strip():
        return _err("string_too_short", "q", "String should have at least 1 character", value, {"min_length": 1})
    if len(value) > MAX_Q_CHARS:
        msg = f"String should have at most {MAX_Q_CHARS} characters"
        return _err("string_too_long", "q", msg, value, {"max_length": MAX_Q_CHARS})
    if len(value.split()) > MAX_Q_WORDS:
        reason = f"Query should have at most {MAX_Q_WORDS} words"
        return _err("value_error", "q", f"Value error, {reason}", value, {"error": reason})
    return None


def _check_int(name: str, value: str, low: int, high: int) -> dict[str, Any] | None:
    if not _INT_RE.match(value):
        return _err("int_parsing", name, "Input should be a valid integer, unable to parse string as an integer", value)
    number = int(value)
    if number < low:
        return _err("greater_than_equal", name, f"Input should be greater than or equal to {low}", value, {"ge": low})
    if number > high:
        return _err("less_than_equal", name, f"Input should be less than or equal to {high}", value, {"le": high})
    return None


def _enum_text(values: Iterable[str]) -> str:
    quoted = [f"'{v}'" for v in values]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" or {quoted[-1]}"


def _check_enum(name: str, candidate: str, allowed: tuple[str, ...], value: str) -> dict[str, Any] | None:
    if candidate in allowed:
        return None
    expected = _enum_text(allowed)
    return _err("enum", name, f"Input should be {expected}", value, {"expected": expected})


def _check_filter(value: str) -> dict[str, Any] | None:
    entries = parse_filter(value) or []
    bad = [e for e in entries if e not in RESULT_FILTERS]
    if entries and not bad:
        return None
    reason = f"Invalid result_filter value(s): {', '.join(bad) or '(empty)'}; allowed: {', '.join(RESULT_FILTERS)}"
    return _err("value_error", "result_filter", f"Value error, {reason}", value, {"error": reason})


def _check_goggles(goggles: list[str]) -> list[dict[str, Any]]:
    errors = []
    for value in goggles:
        inline = "\n" in value or "$" in value
        if (value.startswith("https://") and len(value) > len("https://")) or inline:
            continue
        reason = "A goggle must be an https URL or an inline goggle definition"
        errors.append(_err("value_error", "goggles", f"Value error, {reason}", value, {"error": reason}))
    return errors
