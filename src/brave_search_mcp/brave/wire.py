"""Brave's wire format read without I/O: rate-limit headers, Retry-After, error bodies, typed error mapping.

Pure functions of (status, headers, body), so the HTTP client, the fake upstream's tests and the
retry policy agree on one reading of what Brave said.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from brave_search_mcp.brave.facts import (
    AUTH_CODES,
    BRAVE_CODE,
    DETAIL_VALUE_CAP_CHARS,
    ENDPOINT_NAMES,
    MAX_VALIDATION_ERRORS,
    META_DETAIL_FIELDS,
    PLAN_CODES,
    PLAN_NEEDED,
    Endpoint,
)
from brave_search_mcp.models import errors
from brave_search_mcp.ratelimit.info import RateLimitInfo
from brave_search_mcp.ratelimit.plan import MAX_MONTH_REQUESTS, MAX_RATE
from brave_search_mcp.upstream.retry import MONTH_SECONDS, RETRY_STATUSES, parse_retry_after

# Makes upstream text fit for a message (key scrubbed, cleaned, capped to the given length).
Safe = Callable[..., str]


# What Brave's rate-limit figures can be (reference/brave-api.md §7): a plan of 1 to 10,000 requests a second, at
# most that many a second for a month, resets within a month. Anything else came from a broken proxy or edge.
MIN_PLAN_RATE = 1.0
RANGES: dict[str, tuple[float, float]] = {
    "per_second": (MIN_PLAN_RATE, MAX_RATE),
    "remaining_second": (0.0, MAX_RATE),
    "limit_month": (0.0, MAX_MONTH_REQUESTS),  # 0: unlimited
    "remaining_month": (0.0, MAX_MONTH_REQUESTS),
    "reset_seconds": (0.0, MONTH_SECONDS),
    "reset_month_seconds": (0.0, MONTH_SECONDS),
}
SHOWN_CHARS = 60  # of a rejected header value, in the warning


def _numbers(raw: str | None, name: str, ignored: list[str]) -> list[float | None]:
    """Split a comma list of numbers; unreadable entries (NaN, infinities, negatives, words) become None and the
    header is named in ``ignored``."""
    if raw is None:
        return []
    values: list[float | None] = []
    for part in raw.split(","):
        try:
            number: float | None = float(part.strip())
        except ValueError:
            number = None
        if number is None or not math.isfinite(number) or number < 0:
            number = None
        values.append(number)
    if None in values:
        ignored.append(f"{name}: {raw[:SHOWN_CHARS]!r}")
    return values


def _policy(raw: str | None, ignored: list[str]) -> list[tuple[float | None, float | None]]:
    """Parse ``X-RateLimit-Policy`` (``1;w=1, 15000;w=2592000``) into (limit, window seconds) pairs; a window that
    is not a positive number of seconds within a month is None."""
    if raw is None:
        return []
    entries: list[tuple[float | None, float | None]] = []
    bad: list[str] = []
    for part in raw.split(","):
        pieces = [piece.strip() for piece in part.split(";")]
        limit = _numbers(pieces[0], "X-RateLimit-Policy", bad)[0] if pieces[0] else None
        window: float | None = None
        for piece in pieces[1:]:
            name, _, value = piece.partition("=")
            if name.strip().lower() == "w":
                window = _numbers(value, "X-RateLimit-Policy", bad)[0]
                if window is not None and not 0 < window <= MONTH_SECONDS:
                    bad.append("window")
                    window = None
        entries.append((limit, window))
    if bad:
        ignored.append(f"X-RateLimit-Policy: {raw[:SHOWN_CHARS]!r}")
    return entries


def _at(values: Sequence[float | None], index: int | None) -> float | None:
    if index is None or not 0 <= index < len(values):
        return None
    return values[index]


def _in_range(figures: dict[str, float | None], ignored: list[str]) -> dict[str, float | None]:
    """Each figure within what a plan can have (``RANGES``); else None, and named in ``ignored``."""
    kept: dict[str, float | None] = {}
    for name, value in figures.items():
        low, high = RANGES[name]
        if value is not None and not low <= value <= high:
            ignored.append(f"{name}={value:g}")
            value = None
        kept[name] = value
    return kept


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def parse_rate_limit(headers: Mapping[str, str], now: float) -> RateLimitInfo | None:
    """Read Brave's X-RateLimit-* headers (first window per second, second per month); None when absent. A figure
    that is unreadable or outside what any plan has is left out and named in ``ignored`` (as is an unreadable or
    month-long ``Retry-After``), so no broken proxy can teach the limiter a plan of ``1e308``/s."""
    ignored: list[str] = []
    limits = _numbers(headers.get("x-ratelimit-limit"), "X-RateLimit-Limit", ignored)
    policy = _policy(headers.get("x-ratelimit-policy"), ignored)
    remaining = _numbers(headers.get("x-ratelimit-remaining"), "X-RateLimit-Remaining", ignored)
    resets = _numbers(headers.get("x-ratelimit-reset"), "X-RateLimit-Reset", ignored)
    if not (limits or policy or remaining or resets):
        return None
    second_index: int | None = 0
    month_index: int | None = 1
    per_second: float | None
    if policy:
        windows = [window for _, window in policy]
        second_index = windows.index(1.0) if 1.0 in windows else None
        month_index = next(
            (i for i, window in enumerate(windows) if i != second_index and window is not None and window > 1), None
        )
        per_second = policy[second_index][0] if second_index is not None else None
        if per_second is None and second_index is not None:
            per_second = _at(limits, second_index)
        limit_month = policy[month_index][0] if month_index is not None else None
        if limit_month is None:
            limit_month = _at(limits, month_index)
    else:
        per_second = _at(limits, 0)
        limit_month = _at(limits, 1)
    retry_after = headers.get("retry-after")
    if retry_after is not None and parse_retry_after(retry_after, headers.get("date")) is None:
        ignored.append(f"Retry-After: {retry_after[:SHOWN_CHARS]!r}")
    figures = _in_range(
        {
            "per_second": per_second,
            "remaining_second": _at(remaining, second_index),
            "limit_month": limit_month,
            "remaining_month": _at(remaining, month_index),
            "reset_seconds": _at(resets, second_index),
            "reset_month_seconds": _at(resets, month_index),
        },
        ignored,
    )
    return RateLimitInfo(
        per_second=figures["per_second"],
        remaining_second=_int(figures["remaining_second"]),
        limit_month=_int(figures["limit_month"]),
        remaining_month=_int(figures["remaining_month"]),
        reset_seconds=figures["reset_seconds"],
        reset_month_seconds=figures["reset_month_seconds"],
        observed_at=now,
        ignored=tuple(ignored),
    )


def brave_error(body: bytes) -> dict[str, Any] | None:
    """Brave's error object from an error body (``error`` or the doc-example ``errors`` list), if any."""
    if not body.strip():
        return None
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(document, dict):
        return None
    error = document.get("error")
    if isinstance(error, dict):
        return error
    listed = document.get("errors")
    if isinstance(listed, list) and listed and isinstance(listed[0], dict):
        return listed[0]
    return None


def map_error(
    endpoint: Endpoint,
    status: int,
    reason: str,
    headers: Mapping[str, str],
    body: bytes,
    info: RateLimitInfo | None,
    safe: Safe,
) -> errors.BraveSearchError:
    """Turn a non-2xx answer into the typed error an agent can act on."""
    error = brave_error(body)
    code = error.get("code") if error is not None else None
    # Brave's codes look like RATE_LIMITED; anything else (a proxy's text, an echoed token) is not kept.
    code = code if isinstance(code, str) and BRAVE_CODE.fullmatch(code) else None
    raw_detail = error.get("detail") if error is not None else None
    detail = safe(raw_detail) if isinstance(raw_detail, str) else ""
    meta = error.get("meta") if error is not None else None
    meta = meta if isinstance(meta, dict) else {}
    details: dict[str, Any] = {}
    for name in META_DETAIL_FIELDS:
        value = meta.get(name)
        if isinstance(value, bool | int | float):
            details[name] = value
        elif isinstance(value, str) and value:
            details[name] = safe(value, DETAIL_VALUE_CAP_CHARS)
    retry_after = parse_retry_after(headers.get("retry-after"), headers.get("date"))
    reason = reason or "error"
    said = detail or f"HTTP {status} {reason}"
    common: dict[str, Any] = {"status": status, "brave_code": code, "details": details}

    if status == 401 or code in AUTH_CODES:
        return errors.AuthFailed(safe(f"Brave rejected the API key: {said}"), **common)
    if code in PLAN_CODES:
        return errors.NotInPlan(_plan_message(endpoint, said, details, safe), **common)
    if status == 429:
        if code == "QUOTA_LIMITED":
            if retry_after is None and info is not None and info.remaining_month == 0:
                retry_after = info.reset_month_seconds  # the monthly window's own reset
            return errors.QuotaExceeded(
                safe(f"Brave's monthly quota for this key is used up: {said}"),
                retry_after=retry_after,
                **common,
            )
        if code in (None, "RATE_LIMITED"):
            if retry_after is None and info is not None:
                retry_after = info.reset_seconds
            return errors.RateLimited(
                safe(f"Brave's per-second rate limit was hit: {said}"), retry_after=retry_after, **common
            )
        return errors.UpstreamError(
            safe(f"Brave refused the request (HTTP 429 {code}): {said}"), retryable=False, **common
        )
    if status == 402 and code == "USAGE_LIMIT_EXCEEDED":
        return errors.QuotaExceeded(safe(f"Brave's usage limit for this key is reached: {said}"), **common)
    if status == 422 and code == "VALIDATION":
        return _validation(said, meta, common, safe)
    if status == 403 and error is None:
        return errors.UpstreamError(
            "HTTP 403 without a Brave error body: usually a proxy or web application firewall in front of "
            "Brave refused the request, not Brave itself.",
            retryable=False,
            **common,
        )
    if error is None and body.strip():
        said = f"HTTP {status} {reason} (the body was not Brave's error JSON)"
    return errors.UpstreamError(
        safe(f"Brave answered with an error: {said}"),
        retryable=status in RETRY_STATUSES,
        retry_after=retry_after,
        **common,
    )


def _plan_message(endpoint: Endpoint, said: str, details: dict[str, Any], safe: Safe) -> str:
    plan = details.get("plan")
    needed = PLAN_NEEDED.get(endpoint)
    text = f"Brave says this is not in the key's plan: {said}"
    if plan:
        text += f" Your plan: {plan}."
    if needed:
        details["plan_needed"] = needed
        text += f" The {ENDPOINT_NAMES[endpoint]} endpoint needs Brave's {needed} plan."
    else:
        text += " An option in this request needs a higher Brave plan; drop it or upgrade."
    return safe(text)


def _validation(said: str, meta: dict[str, Any], common: dict[str, Any], safe: Safe) -> errors.UpstreamValidation:
    problems: list[dict[str, Any]] = []
    raw_errors = meta.get("errors")
    for item in raw_errors[:MAX_VALIDATION_ERRORS] if isinstance(raw_errors, list) else []:
        if not isinstance(item, dict):
            continue
        loc = item.get("loc")
        name = loc[-1] if isinstance(loc, list) and loc else None
        problem: dict[str, Any] = {
            "field": safe(str(name), DETAIL_VALUE_CAP_CHARS) if name is not None else None,
            "message": safe(str(item.get("msg", "")), DETAIL_VALUE_CAP_CHARS),
        }
        if item.get("input") is not None:
            problem["input"] = safe(str(item["input"]), DETAIL_VALUE_CAP_CHARS)
        problems.append(problem)
    common["details"]["errors"] = problems
    text = f"Brave rejected a parameter: {said}"
    if problems:
        text += " (" + "; ".join(f"{p['field'] or '?'}: {p['message']}" for p in problems[:3]) + ")"
    return errors.UpstreamValidation(safe(text), **common)
