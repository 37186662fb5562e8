"""Parameter checks of the newer endpoints (LLM context, local, answers): allowed names, ranges, enums, the query."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testkit.brave.errors import field_error
from testkit.brave.vocab import COUNTRIES, SEARCH_LANGS

Allowed = Mapping[str, tuple[int, int] | None]  # parameter -> its integer range, or None


def _err(kind: str, where: str, name: str, msg: str, value: Any) -> dict[str, Any]:
    return field_error(kind, name, msg, value, where=where)


def number_range(name: str, value: str, low: int, high: int, *, where: str = "query") -> dict[str, Any] | None:
    """The error of an integer outside ``low..high`` (or not an integer), else None."""
    try:
        number = int(value)
    except ValueError:
        return _err("int_parsing", where, name, "Input should be a valid integer", value)
    if number < low:
        return _err("greater_than_equal", where, name, f"Input should be greater than or equal to {low}", value)
    if number > high:
        return _err("less_than_equal", where, name, f"Input should be less than or equal to {high}", value)
    return None


def check_query_params(
    params: list[tuple[str, str]], allowed: Allowed
) -> tuple[dict[str, str], list[str], list[dict[str, Any]]]:
    """The values (the last one wins), the repeated ``ids`` and every error of one request's query."""
    values: dict[str, str] = {}
    ids: list[str] = []
    errors: list[dict[str, Any]] = []
    for name, value in params:
        if name not in allowed:
            errors.append(_err("extra_forbidden", "query", name, "Extra inputs are not permitted", value))
        elif name == "ids":
            ids.append(value)
        else:
            values[name] = value
    for name, bounds in allowed.items():
        if name not in values:
            continue
        problem = _check(name, values[name], bounds)
        if problem is not None:
            errors.append(problem)
    return values, ids, errors


def _check(name: str, value: str, bounds: tuple[int, int] | None) -> dict[str, Any] | None:
    problem = number_range(name, value, *bounds) if bounds else None
    if name == "country" and value.upper() not in COUNTRIES:
        problem = _err("enum", "query", name, "Input should be a supported country", value)
    if name == "search_lang" and value not in SEARCH_LANGS:
        problem = _err("enum", "query", name, "Input should be a supported language", value)
    if name == "context_threshold_mode" and value not in ("strict", "balanced", "lenient", "disabled"):
        problem = _err("enum", "query", name, "Input should be 'strict', 'balanced', 'lenient' or 'disabled'", value)
    if name in ("units",) and value not in ("metric", "imperial"):
        problem = _err("enum", "query", name, "Input should be 'metric' or 'imperial'", value)
    if name in ("latitude", "longitude", "radius"):
        problem = _float(name, value)
    return problem


def _float(name: str, value: str) -> dict[str, Any] | None:
    try:
        number = float(value)
    except ValueError:
        return _err("float_parsing", "query", name, "Input should be a valid number", value)
    limit = {"latitude": 90.0, "longitude": 180.0}.get(name)
    if (limit is not None and abs(number) > limit) or (name == "radius" and number < 0):
        return _err("value_error", "query", name, f"Value error, {name} is out of range", value)
    return None


def q_error(q: str | None, *, required: bool, limits: tuple[int, int] = (400, 50)) -> dict[str, Any] | None:
    """The error of the query ``q`` (missing when required, empty, or over ``limits`` chars / words), else None."""
    if q is None:
        return _err("missing", "query", "q", "Field required", None) if required else None
    if not q.strip():
        return _err("string_too_short", "query", "q", "String should have at least 1 character", q)
    if len(q) > limits[0] or len(q.split()) > limits[1]:
        return _err(
            "string_too_long", "query", "q", f"Query should have at most {limits[0]} chars / {limits[1]} words", q
        )
    return None
